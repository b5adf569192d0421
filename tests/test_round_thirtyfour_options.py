"""Round thirty-four, method options:

- P01: ReAGent's ``num_probes`` and ``max_probe_steps`` have declared upper bounds,
  refused in one line before any work (``get_method``, ``explain --option``, bench).
- P02: ContextCite refuses draws that are all the same subset (``keep`` near 0 or 1),
  and warns where some segments never vary across the ablations (their scores of 0
  measure nothing).
- P03: the sanity n/a warnings count text x target pairs where a text has several
  targets; a generation's evaluation counts steps, not texts.
- P04: a malformed ``id:N`` baseline says what comes after ``id:``.
- Noted: ``explain --option METHOD.NAME=VALUE`` for the explained method, as evaluate
  and sanity take it.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import normxlogit
from normxlogit.bench import load_config
from normxlogit.common.errors import InvalidInputError, InvalidOptionError, NormXLogitWarning
from normxlogit.methods.segment_methods import ContextCite

from .bench.helpers import write_config
from .conftest import explainable, invoke_in, saved_tiny

TEXT = "a good movie that I liked a lot"
SEGMENTED = ["A good movie.", " It has great acting.", " The plot is thin.", " I liked it."]


def _said(result) -> str:
    return " ".join(result.output.split())


def _recorded(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]


# P01 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"num_probes": 2_000_000_000}, "num_probes=2000000000 is too large: at most 1000"),
        ({"num_probes": 1001}, "num_probes=1001 is too large: at most 1000"),
        ({"max_probe_steps": 10_001}, "max_probe_steps=10001 is too large: at most 10000"),
        ({"max_probe_steps": 0}, "max_probe_steps=0 must be at least 1"),
    ],
)
def test_reagent_counts_past_their_bounds_are_refused_when_built(options, expected):
    with pytest.raises(InvalidOptionError, match=expected):
        normxlogit.get_method("reagent", **options)


def test_reagent_counts_at_their_bounds_are_accepted():
    built = normxlogit.get_method("reagent", num_probes=1000, max_probe_steps=10_000)
    assert (built.num_probes, built.max_probe_steps) == (1000, 10_000)


def test_explain_refuses_too_many_probes_in_one_line(tmp_path, tiny_classifier):
    # just past the bound, one step of a uniform sampler: were it not refused, the run
    # would be short (the probe's 2e9 asked the allocator for 16 GB)
    args = ["-m", str(tiny_classifier), TEXT, "--method", "reagent"]
    options = ["sampler=uniform", "max_probe_steps=1", "num_probes=1001"]
    result = invoke_in(tmp_path, "explain", *args, *(f"--option={o}" for o in options))
    said = _said(result)
    assert result.exit_code == 2, said
    assert "option num_probes=1001 is too large: at most 1000" in said
    assert "Traceback" not in said and "RuntimeError" not in said


def test_bench_status_refuses_too_many_probes(tmp_path):
    model = saved_tiny(tmp_path / "tiny", "bert", "classification")
    methods = '[{name = "reagent", options = {num_probes = 5000}}]'
    with pytest.raises(InvalidInputError, match="num_probes=5000 is too large"):
        load_config(write_config(tmp_path, model, methods=methods))


# P02 ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def classifier():
    return explainable("bert", "classification")


@pytest.mark.parametrize("keep", [1e-9, 0.999999999])
def test_contextcite_draws_all_alike_are_refused(classifier, keep):
    with pytest.raises(InvalidInputError) as caught:
        classifier.explain(
            "".join(SEGMENTED), method="contextcite", segments="sentences", keep=keep
        )
    said = str(caught.value)
    assert f"the same subset in all 64 ablations of 4 segments (keep={keep}" in said
    assert "give keep nearer 0.5" in said


def test_contextcite_draws_all_alike_are_refused_for_one_of_several_texts(classifier):
    # 2 ablations of one segment at keep=0.5, seed 1: both draws drop it
    method = ContextCite(ablations=2, seed=1)
    assert not method.plan(1).masks.any() and method.plan(2).masks.any()
    texts = ["A good movie. It has great acting.", "One sentence only."]
    with pytest.raises(InvalidInputError, match=r"^text 1: contextcite draws the same subset"):
        classifier.explain(texts, method=method, segments="sentences")


def test_contextcite_segments_that_never_vary_are_warned_about(classifier):
    text = "".join(SEGMENTED)
    said = _recorded(
        lambda: classifier.explain(text, method="contextcite", segments="sentences", keep=0.001)
    )
    unvaried = [m for m in said if "in all 64 ablations" in m]
    assert len(unvaried) == 1, said
    assert unvaried[0].startswith("contextcite keeps or drops 3 of 4 segments")
    assert "keep=0.001" in unvaried[0] and "give keep nearer 0.5" in unvaried[0]


def test_contextcite_at_its_default_keep_says_nothing(classifier):
    text = "".join(SEGMENTED)
    said = _recorded(lambda: classifier.explain(text, method="contextcite", segments="sentences"))
    assert not [m for m in said if "ablations" in m], said


def test_contextcite_plan_is_unchanged_by_the_cache():
    method = ContextCite(ablations=5, seed=3)
    plan = method.plan(4)
    plan.masks[:] = True  # a caller's edit does not reach the cached draws
    again = method.plan(4).masks
    expected = np.stack(
        [np.random.RandomState(3 + i).choice([False, True], size=4, p=[0.5, 0.5]) for i in range(5)]
    )
    np.testing.assert_array_equal(again, expected)


# P03 ------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["two", "all"])
def test_sanity_n_a_warning_counts_text_target_pairs(classifier, target):
    from normxlogit.sanity import parameter_randomization

    labels = list(classifier.task.labels)
    if target != "all":
        target = labels[:2]
    pairs = 2 * (len(labels) if target == "all" else 2)
    said = _recorded(
        lambda: parameter_randomization(
            classifier, ["a good movie", "a bad film"], ["gradient_x_input"], target=target
        )
    )
    undefined = [m for m in said if "top-k overlap is n/a" in m]
    assert len(undefined) == 1, said
    assert f"n/a for {pairs} of {pairs} text x target pairs" in undefined[0]


def test_sanity_n_a_warning_says_texts_for_one_target(classifier):
    from normxlogit.sanity import parameter_randomization

    said = _recorded(
        lambda: parameter_randomization(
            classifier, ["a good movie", "a bad film"], ["gradient_x_input"]
        )
    )
    assert any("n/a for 2 of 2 texts" in m for m in said), said


def test_generation_evaluation_counts_steps():
    from normxlogit.evaluation.generations import evaluate_generations

    model = explainable("llama", "causal_lm")
    made = model.explain("a good movie", continuation=[5, 6, 7], method="gradient_x_input")
    said = _recorded(lambda: evaluate_generations(model, [made], ["comp_cd"], steps=[0, 1]))
    ratios = [m for m in said if "have ratios k" in m]
    assert len(ratios) == 1, said
    assert ratios[0].startswith("2 of 2 steps have ratios k"), ratios[0]
    assert "comp_cd at k=0.1 (2 steps)" in ratios[0]


# P04 ------------------------------------------------------------------------------


@pytest.mark.parametrize("baseline", ["id:-1", "id:abc", "id:", "id:1.5"])
def test_a_malformed_id_baseline_says_what_follows_id(classifier, baseline):
    size = classifier.model.get_input_embeddings().weight.shape[0]
    expected = (
        f"baseline='{baseline}': after id: give a token id, a whole number from 0 to {size - 1}"
    )
    with pytest.raises(InvalidInputError) as caught:
        classifier.explain(TEXT, method="integrated_gradients", baseline=baseline, steps=2)
    assert str(caught.value).startswith(expected)


# noted: explain --option METHOD.NAME ------------------------------------------------


def _explain(tmp_path, model, method: str, *options: str):
    args = ["-m", str(model), TEXT, "--method", method, "--format", "json"]
    for option in options:
        args += ["--option", option]
    return invoke_in(tmp_path, "explain", *args)


def test_explain_takes_the_explained_methods_dotted_option(tmp_path, tiny_classifier):
    option = "integrated_gradients.steps=3"
    result = _explain(tmp_path, tiny_classifier, "integrated-gradients", option)
    assert result.exit_code == 0, _said(result)
    assert json.loads(result.output)["settings"]["steps"] == 3


def test_explains_dotted_option_is_its_own_and_both_spellings_must_agree():
    from normxlogit.cli.explain import own_options

    given = {"steps": "7", "integrated_gradients.steps": "7", "baseline": "pad"}
    assert own_options(given, "integrated_gradients") == {"steps": "7", "baseline": "pad"}
    with pytest.raises(InvalidOptionError, match="give it once"):  # explain has one method
        own_options({"steps": "5", "integrated_gradients.steps": "7"}, "integrated_gradients")
    assert own_options({"Integrated-Gradients.steps": "7"}, "integrated_gradients") == {
        "steps": "7"
    }


def test_explain_refuses_another_methods_dotted_option(tmp_path, tiny_classifier):
    result = _explain(tmp_path, tiny_classifier, "integrated_gradients", "lime.samples=5")
    said = _said(result)
    assert result.exit_code == 2, said
    assert (
        "--option lime.samples: 'lime' is not the method explained (--method "
        "integrated_gradients)" in said
    )
