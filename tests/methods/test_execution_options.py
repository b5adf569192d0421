"""Execution options (rows, tokens or samples per pass) change how the work is cut, never
the scores beyond float rounding: that is what lets the bench key results without them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from normxlogit.bench.spec import MethodSpec
from normxlogit.methods import get_method, list_methods, method_class
from normxlogit.methods.base import method_execution_options

from ..conftest import explainable

TEXTS = [
    "dull",
    "a gripping film that never lets go of you until the very end",
    "it is a charming and often affecting journey",
]

#: for every method with execution options: option values that cut its work differently
VARIANTS = {
    "integrated_gradients": [
        {"internal_batch_size": 8},
        {"internal_batch_size": 32},
        {"internal_batch_size": None, "tokens_per_pass": 40},
        {"internal_batch_size": None, "tokens_per_pass": None},
    ],
    "value_zeroing": [{"batch_size": 1}, {"batch_size": 5}, {"batch_size": 64}],
    "lime": [{"batch_size": 1}, {"batch_size": 7}, {"batch_size": 64}],
}
#: result options that keep each method quick on a tiny model
QUICK = {"integrated_gradients": {"steps": 16}, "lime": {"samples": 40}}


def scores(model, name: str, preset: str | None = None, **options) -> list[np.ndarray]:
    method = get_method(name, preset=preset, **QUICK.get(name, {}), **options)
    return [np.asarray(e.scores) for e in model.explain(TEXTS, method=method, target="all")]


def assert_same_scores(first: list[np.ndarray], second: list[np.ndarray]) -> None:
    for a, b in zip(first, second, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_every_execution_option_is_an_option_and_has_variants_here():
    for name in list_methods():
        declared = method_execution_options(name)
        fields = {f.name for f in dataclasses.fields(method_class(name))}
        assert declared <= fields, f"{name}: {sorted(declared - fields)} are not options"
        if declared:
            assert name in VARIANTS, f"{name}: add its execution options to VARIANTS"
            assert declared == {o for variant in VARIANTS[name] for o in variant}


def test_unknown_names_have_no_execution_options():
    assert method_execution_options("no_such_method") == frozenset()
    assert method_execution_options("integrated-gradients") == {
        "internal_batch_size",
        "tokens_per_pass",
    }


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_execution_options_leave_the_scores_alone(name):
    model = explainable("bert", "classification")
    first, *others = VARIANTS[name]
    expected = scores(model, name, **first)
    for variant in others:
        assert_same_scores(scores(model, name, **variant), expected)


@pytest.mark.parametrize("family", ["bert", "llama"])
def test_pi_soft_integrated_gradients_whatever_its_internal_batch(family):
    """The pi-Soft preset's IG (Inseq's internal batch of 8) gives the same attributions
    with 32 rows per pass, or passes bounded by tokens instead."""
    model = explainable(family, "classification")
    name = "integrated_gradients"
    inseq = scores(model, name, preset="pi-soft")
    assert_same_scores(scores(model, name, preset="pi-soft", internal_batch_size=32), inseq)
    bounded = {"internal_batch_size": None, "tokens_per_pass": 64}
    assert_same_scores(scores(model, name, preset="pi-soft", **bounded), inseq)


def test_method_keys_leave_execution_options_out():
    plain = MethodSpec("integrated_gradients", {"steps": 16, "reduce": "l2"}, label="IG")
    batched = MethodSpec(
        "integrated_gradients",
        {"steps": 16, "reduce": "l2", "internal_batch_size": 8, "tokens_per_pass": 512},
        label="IG (8 rows)",
    )
    assert plain.key == batched.key
    assert '"steps":16' in batched.key and "internal_batch_size" not in batched.key
    assert MethodSpec("integrated_gradients", {"steps": 32}).key != plain.key
    zeroing = MethodSpec("value_zeroing", {"rollout": False})
    assert MethodSpec("value_zeroing", {"rollout": False, "batch_size": 8}).key == zeroing.key
    # batch_size is LIME's execution option too, but a result option of no other method
    assert MethodSpec("lime", {"batch_size": 8}).key == MethodSpec("lime").key
