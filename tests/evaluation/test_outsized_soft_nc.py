"""Soft-NC divides by the all-zero input's change: where that is small (just above
MIN_BASELINE_EFFECT) a text's value is many times 1 and can carry a mean. Kept as
computed (it is the metric's definition), and said in one warning naming the texts."""

from __future__ import annotations

import warnings

import pytest

import normxlogit
from normxlogit.evaluation import soft

from ..conftest import explainable

TEXTS = ["the cat sat on the mat", "a dog ran in the park today"]


def _said(metric: str) -> tuple[list[str], object]:
    model = explainable("bert", "classification")
    explanations = model.explain(TEXTS, "logat")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = normxlogit.evaluate(
            model, explanations, [metric], protocol=normxlogit.Protocol(samples=2)
        )
    return [str(w.message) for w in caught if "times the all-zero" in str(w.message)], result


@pytest.mark.parametrize("metric", ["soft_nc", "pi_soft_nc"])
def test_texts_past_the_bound_are_named_once_with_their_largest_value(monkeypatch, metric):
    monkeypatch.setattr(soft, "OUTSIZED_NC", -1.0)  # every text is past it
    said, result = _said(metric)
    assert len(said) == 1, said
    assert f"{metric}: 2 of 2 texts reach more than -1 times" in said[0]
    assert "text 0" in said[0] and "text 1" in said[0]
    assert result.frame["value"].notna().all()  # kept as computed


def test_soft_ns_and_ordinary_values_say_nothing():
    said, _ = _said("soft_nc")
    assert not said
    said, _ = _said("soft_ns")
    assert not said
