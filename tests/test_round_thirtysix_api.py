"""Round thirty-six, Python API (probe a):

- P01: token evidence given as words (or "0"/"1" strings) is refused in one line that
  says what evidence is and where words go (``evidence_words=``), not numpy's ValueError.
- P03: ``evaluate_generations(steps=...)`` says which generations have none of the steps
  (left out of the means).
- P04: a numpy bool is taken for a bool method option, protocol setting and sanity
  ``absolute``.
- P05: evidence_ap / evidence_dot warn about texts whose evidence marks every token read.
- Noted: the plausibility warnings name only the plausibility metrics evaluated.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError, NormXLogitWarning
from normxlogit.evaluation import Protocol
from normxlogit.generation import evaluate_generations
from normxlogit.sanity.definition import sanity_definition

from .conftest import explainable

TEXTS = ["a good movie", "the plot is thin"]


@pytest.fixture(scope="module")
def bert():
    return explainable("bert", "classification")


@pytest.fixture(scope="module")
def explained(bert):
    return normxlogit.explain(bert, TEXTS, "random")


def _messages(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]


def _evaluate(model, explanations, metrics, **kwargs) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # as a user sees them: the same words once
        result = normxlogit.evaluate(model, explanations, metrics, **kwargs)
    return result, _messages(caught)


# ------------------------------------------------------------------------------ P01
@pytest.mark.parametrize("metric", ["token_f1", "auprc", "evidence_ap", "evidence_dot"])
@pytest.mark.parametrize("evidence", [[["good"], ["thin"]], ["good", "thin"]])
def test_evidence_words_are_refused_naming_evidence_words(bert, explained, metric, evidence):
    with pytest.raises(InvalidInputError, match=r"holds text \('good'\).*evidence_words="):
        normxlogit.evaluate(bert, explained, [metric], evidence=evidence)


def test_evidence_digit_strings_are_refused_not_converted(bert, explained):
    evidence = [["0", "1", "0", "0", "0"], ["0", "0", "0", "0", "1", "0"]]
    with pytest.raises(InvalidInputError, match="give the numbers 0 and 1, not text"):
        normxlogit.evaluate(bert, explained, ["token_f1"], evidence=evidence)
    as_array = [np.array(row) for row in evidence]  # numpy strings too
    with pytest.raises(InvalidInputError, match="give the numbers 0 and 1, not text"):
        normxlogit.evaluate(bert, explained, ["auprc"], evidence=as_array)


def test_evidence_of_objects_is_refused_in_one_line(bert, explained):
    with pytest.raises(InvalidInputError, match="must be a list of 0/1 numbers"):
        normxlogit.evaluate(bert, explained, ["token_f1"], evidence=[[{}], [{}]])


def test_numeric_evidence_is_still_read(bert, explained):
    evidence = [[0, 0, 1, 0, 0], np.array([0, 0, 0, 0, 1, 0])]
    result, _ = _evaluate(bert, explained, ["token_f1"], evidence=evidence)
    assert len(result.frame) == 2


# ------------------------------------------------------------------------------ P03
@pytest.fixture(scope="module")
def decoder():
    return explainable("llama", "causal_lm")


def test_a_generation_without_the_steps_asked_for_is_said(decoder):
    generations = normxlogit.explain(
        decoder, ["the film was a", "a plot"], "random", continuation=[[2143] * 5, [2143] * 4]
    )
    assert [g.steps for g in generations] == [5, 4]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate_generations(decoder, generations, ["comp_cd"], steps=[4])
    said = _messages(caught)
    assert (
        "1 of 2 generations has none of steps [4] (generation 1 has 4 steps): left out of "
        "the means" in said
    )
    assert set(result.frame["instance"]) == {0}
    with warnings.catch_warnings(record=True) as caught:  # every generation has step 3
        warnings.simplefilter("always")
        evaluate_generations(decoder, generations, ["comp_cd"], steps=[3])
    assert not [m for m in _messages(caught) if "has none of steps" in m]


# ------------------------------------------------------------------------------ P04
@pytest.mark.parametrize(
    ("method", "options", "setting"),
    [
        ("random", {"equal": np.True_}, ("equal", True)),
        ("value_zeroing", {"rollout": np.False_}, ("rollout", False)),
        ("random", {"equal": pd.DataFrame({"equal": [True]}).iloc[0]["equal"]}, ("equal", True)),
    ],
)
def test_a_numpy_bool_is_a_bool_option(bert, method, options, setting):
    explanation = normxlogit.explain(bert, "a good movie", method, **options)
    name, value = setting
    assert explanation.settings[name] is value


def test_a_numpy_bool_is_a_bool_protocol_setting_and_sanity_flag():
    assert Protocol(only_positive=np.True_).only_positive is True
    assert Protocol(sanity_absolute=np.bool_(True)).sanity_absolute is True
    assert sanity_definition(absolute=np.True_).absolute is True
    with pytest.raises(InvalidInputError, match="absolute="):
        sanity_definition(absolute="false")


# ------------------------------------------------------------------------------ P05
@pytest.mark.parametrize(
    ("metric", "said"),
    [
        ("evidence_ap", "any explanation scores 1 on them, so they cannot tell methods apart"),
        (
            "evidence_dot",
            "evidence_dot is the sum of all the scores on them (1 under "
            "Protocol(dot_product='softmax')), whatever they rank: it measures no alignment "
            "there",
        ),
    ],
)
def test_evidence_marking_every_token_is_said(bert, metric, said):
    explained = {
        method: normxlogit.explain(bert, TEXTS, method) for method in ("gradient_x_input", "random")
    }
    full = [np.ones(len(item.tokens)) for item in explained["random"]]
    result, messages = _evaluate(bert, explained, [metric], evidence=full)
    expected = f"2 of 2 texts have evidence that marks every token {metric} reads: {said}"
    assert [m for m in messages if "marks every token" in m] == [expected]
    if metric == "evidence_ap":
        assert (result.frame["value"] == 1.0).all()
    partial = [np.eye(len(item.tokens))[1] for item in explained["random"]]
    _, messages = _evaluate(bert, explained, [metric], evidence=partial)
    assert not [m for m in messages if "marks every token" in m]


# ---------------------------------------------------------------------- Noted: names
def _tokens(item) -> int:
    return len(item.tokens)


def test_plausibility_warnings_name_only_the_metrics_evaluated(bert):
    explained = normxlogit.explain(bert, TEXTS, "random", equal=True)
    items = list(explained)
    empty = [np.zeros(_tokens(item)) for item in items]
    _, said = _evaluate(bert, explained, ["auprc"], evidence=empty)
    joined = " | ".join(said)
    assert "they are left out of auprc (n/a)" in joined
    assert "scores them as ferret does (auprc 0.5)" in joined
    assert "token_f1" not in joined and "token_iou" not in joined

    content = [np.eye(_tokens(item))[2] for item in items]
    _, said = _evaluate(bert, explained, ["auprc"], evidence=content)
    constant = [m for m in said if m.startswith("constant explanations")]
    assert constant and "token_f1" not in constant[0]
    assert "plausibility scores them: auprc is (1 + the rationale's share" in constant[0]

    _, said = _evaluate(bert, explained, ["token_f1"], evidence=content)
    few = [m for m in said if "or fewer tokens" in m]
    assert few and "token_f1 is the same for every explanation" in few[0]
    constant = [m for m in said if m.startswith("constant explanations")]
    assert constant and "token_f1 chooses by the tie order alone" in constant[0]
    assert "auprc" not in constant[0]

    full = [np.ones(_tokens(item)) for item in items]
    _, said = _evaluate(bert, explained, ["auprc", "token_iou"], evidence=full)
    every = [m for m in said if "marks every token the plausibility" in m]
    assert len(every) == 1  # the same words from both metrics: shown once
    assert "(auprc 1; token_iou by how many tokens are chosen" in every[0]

    _, said = _evaluate(
        bert,
        explained,
        ["token_f1", "token_iou", "auprc"],
        evidence=empty,
        protocol=Protocol(empty_rationale="score"),
    )
    scored = [m for m in said if "empty rationale" in m]
    assert len(scored) == 1
    assert "scored as ferret does (token_f1 0, token_iou 0, auprc 0.5)" in scored[0]
