"""Plausibility with ``FERRET_PLAUSIBILITY`` equals ferret 0.4.2's own evaluators.

``data/ferret_plausibility_reference.json`` holds 51 synthetic cases and what ferret's
``Tokenf1_``, ``TokenIOU_`` and ``AUPRC_PlausibilityEvaluation`` returned for them, run in
an environment of its own by ``scripts/ferret_plausibility_reference.py``. The default
protocol differs from ferret's where the docs say it does; those differences are asserted
too.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import normxlogit
from normxlogit.common.errors import NormXLogitWarning
from normxlogit.evaluation.plausibility import FERRET_PLAUSIBILITY, rationale_k
from normxlogit.evaluation.registry import metric_class

from ..conftest import explainable

REFERENCE = json.loads(
    (Path(__file__).parent / "data" / "ferret_plausibility_reference.json").read_text()
)
CASES = {case["name"]: case for case in REFERENCE["cases"]}
METRICS = ("token_f1", "token_iou", "auprc")


def ferret_protocol(case: dict) -> normxlogit.Protocol:
    """ferret's settings for one case: its k and its ``only_pos``."""
    settings = {**FERRET_PLAUSIBILITY, "only_positive": case["only_pos"]}
    return normxlogit.Protocol(top_k=case["top_k_rationale"], **settings)


def ours(case: dict, protocol: normxlogit.Protocol) -> dict[str, float]:
    """The three metrics' values for one case (ferret's first and last token dropped as
    ferret's ``remove_first_last`` does; the end-to-end test leaves that to the model)."""
    scores, rationale = np.array(case["scores"]), np.array(case["rationale"], dtype=float)
    if case["remove_first_last"]:
        scores, rationale = scores[1:-1], rationale[1:-1]
    return {name: metric_class(name)().value(protocol, scores, rationale) for name in METRICS}


def test_the_reference_says_how_it_was_made():
    assert REFERENCE["versions"]["ferret-xai"] == "0.4.2"
    assert len(CASES) == 54 >= 30
    assert REFERENCE["benchmark_k"]["default"] == 5


def same_numpy_order(case: dict) -> None:
    """Skip a case whose equal scores this machine's numpy orders otherwise than the
    reference's did: ferret's order of ties is numpy's, which numpy does not define."""
    if np.array(case["scores"]).argsort().tolist() != case["argsort"]:
        pytest.skip("numpy here orders these equal scores otherwise than where ferret ran")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_ferret_setting_equals_ferrets_output(name):
    case = CASES[name]
    same_numpy_order(case)
    got = ours(case, ferret_protocol(case))
    for metric, expected in case["ferret"].items():
        if isinstance(expected, str):  # ferret raised (only_pos=False with k >= 2)
            assert not case["only_pos"] and case["top_k_rationale"] >= 2, expected
            continue
        assert got[metric] == pytest.approx(expected, abs=1e-9), metric


def test_every_kind_of_case_is_compared():
    compared = sum(isinstance(v, float) for case in CASES.values() for v in case["ferret"].values())
    assert compared == 154  # 54 x 3, less F1 and IOU of the 4 cases where ferret raised
    kinds = {name.rsplit("-", 1)[0] for name in CASES}
    for kind in ("signed", "ties", "ties-long", "ties-first", "all-negative", "empty-rationale"):
        assert kind in kinds


def test_the_default_differs_from_ferret_where_the_docs_say():
    default = normxlogit.Protocol()
    # signed scores: ferret drops the chosen tokens scoring <= 0, the default keeps them
    three = CASES["three-positive"]
    assert three["ferret"]["token_f1"] == pytest.approx(0.75)
    assert ours(three, default)["token_f1"] == 1.0  # the top 5 are the rationale
    assert ours(three, replace(default, only_positive=True))["token_f1"] == pytest.approx(0.75)
    # ties: the default chooses the earlier token, ferret as numpy's argsort leaves them
    differ = []
    for name, case in CASES.items():
        if (
            name.startswith("ties")
            and np.array(case["scores"]).argsort().tolist() == case["argsort"]
        ):
            earlier = ours(case, replace(ferret_protocol(case), ties="earlier"))["token_f1"]
            if earlier != pytest.approx(case["ferret"]["token_f1"], abs=1e-9):
                differ.append(name)
    assert len(differ) >= 3, differ
    # an empty rationale: NaN (left out) by default, ferret's 0, 0 and 0.5 with "score"
    empty = CASES["empty-rationale-0"]
    assert all(np.isnan(v) for v in ours(empty, default).values())
    assert ours(empty, ferret_protocol(empty)) == {"token_f1": 0, "token_iou": 0, "auprc": 0.5}


def test_without_ties_the_default_is_ferrets_only_pos_false():
    """Where ferret's ``only_pos=False`` runs (k = 1) and for AUPRC always."""
    for name, case in CASES.items():
        if case["only_pos"] or not name.startswith("signed-all"):
            continue
        got = ours(case, normxlogit.Protocol(top_k=case["top_k_rationale"]))
        for metric, expected in case["ferret"].items():
            if not isinstance(expected, str):
                assert got[metric] == pytest.approx(expected, abs=1e-9), (name, metric)


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if n.startswith("cls-sep")])
def test_end_to_end_special_tokens_as_ferret_drops_first_and_last(name):
    """Through ``normxlogit.evaluate`` on a tiny BERT: [CLS] and [SEP] are left out as
    ferret's ``remove_first_last`` leaves them out."""
    case = CASES[name]
    same_numpy_order(case)  # float32 scores below: the same order of equal values
    model = explainable("bert", "classification")
    made = model.explain(" ".join(case["tokens"][1:-1]))
    assert made.tokens == case["tokens"]
    item = replace(made, scores=np.array(case["scores"], dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NormXLogitWarning)  # cls-sep-5: an empty rationale
        result = normxlogit.evaluate(
            model,
            {"m": [item]},
            list(METRICS),
            evidence=[case["rationale"]],
            protocol=ferret_protocol(case),
        )
    values = dict(zip(result.frame["metric"], result.frame["value"], strict=True))
    for metric, expected in case["ferret"].items():
        assert values[metric] == pytest.approx(expected, abs=1e-6), metric  # float32 scores


def test_an_empty_rationale_is_one_rule_for_every_metric_with_a_warning():
    model = explainable("bert", "classification")
    texts = ["a gripping film", "a dull film", "the film never lets go"]
    made = [model.explain(text) for text in texts]
    rationales = [
        [0, 0, 1, 0, 0],  # "gripping"
        [1, 0, 0, 0, 1],  # only [CLS] and [SEP]: empty once they are left out
        [0] * 7,  # nothing marked
    ]
    with pytest.warns(NormXLogitWarning, match=r"2 of 3 texts have an empty rationale \(1 of"):
        skipped = normxlogit.evaluate(model, {"m": made}, list(METRICS), evidence=rationales)
    frame = skipped.frame
    assert frame[frame["instance"] > 0]["value"].isna().all()  # every metric: NaN
    assert frame[frame["instance"] == 0]["value"].notna().all()
    only = frame[frame["instance"] == 0].set_index("metric")["value"]
    means = skipped.summary().frame.loc["m"]
    assert means.to_dict() == pytest.approx(only.to_dict())  # the mean of the one text left
    scored_protocol = normxlogit.Protocol(empty_rationale="score")
    with pytest.warns(NormXLogitWarning, match="scored as ferret does"):
        scored = normxlogit.evaluate(
            model, {"m": made}, list(METRICS), evidence=rationales, protocol=scored_protocol
        )
    rest = scored.frame[scored.frame["instance"] > 0]
    assert dict(zip(rest["metric"], rest["value"], strict=False)) == {
        "token_f1": 0.0,
        "token_iou": 0.0,
        "auprc": 0.5,
    }


def test_a_constant_explanation_is_flagged():
    model = explainable("bert", "classification")
    made = model.explain("the film never lets go")
    flat = replace(made, scores=np.zeros(len(made.tokens), dtype=np.float32))
    rationale = [0, 0, 1, 1, 0, 0, 0]
    with pytest.warns(NormXLogitWarning, match=r"constant explanations \('flat' on 1 text\)"):
        result = normxlogit.evaluate(model, {"flat": [flat]}, list(METRICS), evidence=[rationale])
    values = dict(zip(result.frame["metric"], result.frame["value"], strict=True))
    # the first five of five text tokens: all of them; AUPRC (1 + 2/5) / 2
    assert values["token_f1"] == pytest.approx(2 * (2 / 5) / (1 + 2 / 5))
    assert values["auprc"] == pytest.approx((1 + 2 / 5) / 2)


def test_the_settings_are_checked_and_keyed_only_when_changed():
    from normxlogit.bench.config import _protocol
    from normxlogit.common.errors import InvalidInputError

    for bad in ({"ties": "first"}, {"empty_rationale": "zero"}, {"only_positive": "maybe"}):
        with pytest.raises(InvalidInputError):
            normxlogit.Protocol(**bad)
        with pytest.raises(InvalidInputError):
            _protocol(bad, "protocol")
    assert _protocol(dict(FERRET_PLAUSIBILITY), "protocol") == FERRET_PLAUSIBILITY
    assert normxlogit.Protocol().with_options(only_positive="true").only_positive is True


def test_rationale_k_is_the_mean_rationale_length_in_tokens():
    model = explainable("bert", "classification")
    texts = ["a gripping film", "the film never lets go"]
    assert rationale_k(model, texts, [[1], [0, 1, 2, 3]]) == 3  # (1 + 4) / 2 = 2.5, half up
    assert rationale_k(model, texts, [[], []]) == 1
    with pytest.raises(normxlogit.InvalidInputError, match="1 rationales for 2 texts"):
        rationale_k(model, texts, [[1]])
    with pytest.raises(normxlogit.InvalidInputError, match="not a whole number"):
        rationale_k(model, texts, [[1.5], [0]])
