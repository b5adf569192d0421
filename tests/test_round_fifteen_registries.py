"""Round fifteen of new-user probes, the extension points: a registered method's result and
metadata (P06, P07, P08), and register_metric / MetricInfo (P09, P10). Each test is one
failure that round found, with tiny models; both registries are restored after each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import normxlogit
from normxlogit import explain_and_evaluate
from normxlogit.cli.app import app
from normxlogit.common.errors import InvalidInputError, NormXLogitWarning
from normxlogit.evaluation import Metric, MetricInfo, list_metrics, register_metric
from normxlogit.evaluation.hard import CompCD
from normxlogit.evaluation.registry import metric_class
from normxlogit.methods import Attribution, AttributionMethod, list_methods, register_method
from normxlogit.serve import build_app

from .conftest import build_model, fresh_tokenizer, sharp_model

TEXTS = ["Good fun.", "Bad film, really."]


@pytest.fixture(scope="module")
def model():
    return sharp_model()


def returning(name, make):
    """A registered method whose ``attribute`` returns ``make(B, L, T, K)``."""

    @dataclass
    class Made(AttributionMethod):
        description: ClassVar[str] = "a probe of what a method returns"

        def attribute(self, model, forward, targets, layers):
            B, T = forward.batch.input_ids.shape
            return make(B, len(layers.indices), T, targets.columns.shape[1])

    Made.name = name
    return register_method(Made)


# ------------------------------------------------------------------ P06: what a method returns


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda B, L, T, K: torch.ones(B, L, T + 3, K), r"\[2, 1, \d+, 1\].*tokens for"),
        (lambda B, L, T, K: torch.ones(B, L, T - 2, K), r"tokens for"),
        (lambda B, L, T, K: torch.ones(B + 2, L, T, K), r"4 texts for 2"),
        (lambda B, L, T, K: torch.ones(B, L, T, 7), r"7 targets for 1"),
        (lambda B, L, T, K: torch.ones(B, 5, T, K), r"5 layers for 1"),
        (lambda B, L, T, K: torch.ones(B, T, K), r"shape \[2, \d+, 1\]"),
        (lambda B, L, T, K: torch.tensor(1.0), r"shape \[\]"),
    ],
    ids=["more-tokens", "fewer-tokens", "more-rows", "more-targets", "more-layers", "3d", "0d"],
)
def test_scores_of_another_shape_are_refused_not_cut_to_fit(registries, model, make, words):
    """P06: extra tokens, rows, targets or layers were cut silently (another text's or
    target's scores shown); fewer tokens or a 0-d tensor raised IndexError."""
    returning("mine", make)
    with pytest.raises(InvalidInputError, match=r"method 'mine'.*\[texts, layers, tokens, targets"):
        model.explain(TEXTS, method="mine")
    with pytest.raises(InvalidInputError, match=words):
        model.explain(TEXTS, method="mine")


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda B, L, T, K: np.ones((B, L, T, K), np.float32), "NumPy array.*torch.from_numpy"),
        (lambda B, L, T, K: torch.ones(B, L, T, K).tolist(), "returned list"),
        (lambda B, L, T, K: None, "returned NoneType None"),
        (lambda B, L, T, K: (row for row in torch.ones(B, L, T, K)), "returned generator"),
        (lambda B, L, T, K: Attribution(np.ones((B, L, T, K))), "NumPy array"),
    ],
    ids=["numpy", "list", "none", "generator", "attribution-of-numpy"],
)
def test_scores_that_are_no_tensor_are_refused_in_one_line(registries, model, make, words):
    """P06: a NumPy array, a list, None or a generator raised AttributeError or TypeError
    from explaining/texts.py. The contract (AttributionMethod's docstring) is a tensor."""
    returning("mine", make)
    with pytest.raises(InvalidInputError, match=f"method 'mine'.*{words}") as caught:
        model.explain(TEXTS, method="mine")
    assert "\n" not in str(caught.value)


def test_scores_that_hold_a_gradient_are_detached(registries, model):
    """P06: a tensor that requires grad (natural for a gradient method) raised RuntimeError
    (Can't call numpy() on Tensor that requires grad); its numbers are the scores."""
    returning("graded", lambda B, L, T, K: torch.full((B, L, T, K), 2.0, requires_grad=True))
    made = model.explain(TEXTS, method="graded")
    assert all(np.all(e.scores == 2.0) for e in made)


def test_diagnostics_of_another_shape_are_refused(registries, model):
    """Diagnostics are [texts, targets]: another shape is refused, not read row by row."""
    returning("diag", lambda B, L, T, K: Attribution(torch.ones(B, L, T, K), {"d": torch.ones(3)}))
    with pytest.raises(InvalidInputError, match=r"diagnostic 'd' is \[3\].*\[texts, targets\]"):
        model.explain(TEXTS, method="diag")
    returning(
        "diag_ok",
        lambda B, L, T, K: Attribution(
            torch.ones(B, L, T, K), {"d": torch.ones(B, K, requires_grad=True)}
        ),
    )
    assert [e.diagnostics["d"] for e in model.explain(TEXTS, method="diag_ok")] == [[1.0], [1.0]]


def test_a_generations_scores_are_checked_too(registries):
    """P06 on the generation path (one pass per step's prefix): a shape cut to fit there too."""
    decoder = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()))

    @dataclass
    class LongPrefix(AttributionMethod):
        name: ClassVar[str] = "long_prefix"
        description: ClassVar[str] = "one token too many"

        def attribute(self, model, forward, targets, layers):
            B, T = forward.batch.input_ids.shape
            return torch.ones(B, len(layers.indices), T + 1, targets.columns.shape[1])

    register_method(LongPrefix)
    with pytest.raises(InvalidInputError, match="method 'long_prefix'.*tokens for"):
        decoder.explain("the cat sat", method="long_prefix", generate=True, max_new_tokens=2)


# ------------------------------------------------------ P07, P08: what a method class holds


def test_a_method_without_a_description_is_refused_and_listings_stay_whole(registries):
    """P07: a method without description was registered; /api/info then answered 500 for
    every model and `normxlogit methods` crashed."""

    @dataclass
    class NoDescription(AttributionMethod):
        name: ClassVar[str] = "no_description"

        def attribute(self, model, forward, targets, layers):
            return torch.ones(1)

    with pytest.raises(InvalidInputError, match="needs a class with a description.*none"):
        register_method(NoDescription)
    for blank in ("", "  ", 5):
        NoDescription.description = blank
        with pytest.raises(InvalidInputError, match="description"):
            register_method(NoDescription)
    assert "no_description" not in list_methods()
    client = TestClient(build_app([], loaded={"tiny": sharp_model()}, builtins=False))
    assert client.get("/api/info").status_code == 200
    assert CliRunner().invoke(app, ["methods"]).exit_code == 0


def test_a_flag_that_is_no_bool_is_refused(registries):
    """P07: other metadata the page and `normxlogit methods` read."""

    @dataclass
    class Flagged(AttributionMethod):
        name: ClassVar[str] = "flagged"
        description: ClassVar[str] = "a flag given as text"
        per_label: ClassVar[bool] = "yes"  # type: ignore[assignment]

        def attribute(self, model, forward, targets, layers):
            return torch.ones(1)

    with pytest.raises(InvalidInputError, match="per_label is str 'yes'; it is True or False"):
        register_method(Flagged)


def test_an_abstract_method_or_one_that_needs_arguments_is_refused(registries):
    """P08: both were registered; explain then raised Python's TypeError."""

    @dataclass
    class Abstract(AttributionMethod):
        name: ClassVar[str] = "abstract_one"
        description: ClassVar[str] = "no attribute method"

    class NeedsArg(AttributionMethod):
        name: ClassVar[str] = "needs_arg"
        description: ClassVar[str] = "__init__ takes an argument"

        def __init__(self, k):
            self.k = k

        def attribute(self, model, forward, targets, layers):
            return torch.ones(1)

    @dataclass
    class FieldWithoutDefault(NeedsArg):
        name: ClassVar[str] = "field_without_default"
        k: int

    with pytest.raises(InvalidInputError, match=r"'abstract_one' does not implement attribute\(\)"):
        register_method(Abstract)
    for cls in (NeedsArg, FieldWithoutDefault):
        with pytest.raises(InvalidInputError, match="cannot be built without k.*with a default"):
            register_method(cls)
    assert not {"abstract_one", "needs_arg", "field_without_default"} & set(list_methods())


# --------------------------------------------------------------- P09: register_metric


def constant(name, value=0.5, **fields):
    """A metric class that scores every explanation ``value``."""

    class Constant(Metric):
        info = MetricInfo(
            name,
            "a constant",
            fields.pop("higher", True),
            fields.pop("value_range", (0, 1)),
            None,
            "mean",
            **fields,
        )

        def rows(self, ctx):
            return [
                ctx.row(m, b, None, value)
                for m in range(len(ctx.methods))
                for b in range(len(ctx.instances))
            ]

    return Constant


@pytest.mark.parametrize("name", ["", "  ", " sp ", "m\u200b", "m\u00a0x"])
def test_a_blank_padded_or_invisible_metric_name_is_refused(registries, name):
    """P09: '', ' sp ' and 'm\\u200b' were registered."""
    with pytest.raises(InvalidInputError, match="name"):
        register_metric(constant(name))
    assert name not in list_metrics()


def test_a_metric_name_that_is_no_string_is_refused(registries):
    """P09: the int 5 was registered as a metric's name."""
    with pytest.raises(InvalidInputError, match="named by a string.*int 5"):
        register_metric(constant(5))


def test_a_registered_metric_is_replaced_only_when_asked(registries, model):
    """P09: a metric named comp_cd silently replaced the built-in, and evaluate reported
    its 0.123 as comprehensiveness."""
    with pytest.raises(InvalidInputError, match="'comp_cd' is already registered.*replace=True"):
        register_metric(constant("comp_cd", 0.123))
    assert metric_class("comp_cd") is CompCD
    register_metric(constant("mine"))
    with pytest.raises(InvalidInputError, match="already registered"):
        register_metric(constant("mine"))
    replacement = register_metric(replace=True)(constant("comp_cd", 0.123))
    assert metric_class("comp_cd") is replacement
    made = explain_and_evaluate(model, TEXTS[:1], methods="random", metrics="comp_cd")
    assert made.result.summary().loc["random", "comp_cd"] == pytest.approx(0.123)


def test_a_class_without_info_or_not_a_metric_is_refused_in_one_line(registries):
    """P09: a class without info and a non-class raised AttributeError."""

    class NoInfo(Metric):
        def rows(self, ctx):
            return []

    class Abstract(Metric):
        info = MetricInfo("abstract_metric", "no rows", True, (0, 1), None, "mean")

    before = list_metrics()
    with pytest.raises(InvalidInputError, match="needs a class with info = MetricInfo"):
        register_metric(NoInfo)
    with pytest.raises(InvalidInputError, match=r"does not implement rows\(\)"):
        register_metric(Abstract)
    for wrong in (5, "comp_cd", object, CompCD.info):
        with pytest.raises(InvalidInputError, match="subclass of Metric"):
            register_metric(wrong)
    assert list_metrics() == before


# ------------------------------------------------------------------ P10: MetricInfo


@pytest.mark.parametrize(
    "fields, words",
    [
        (dict(summary="median"), "summary is str 'median'; one of: aopc, auc, mean, last"),
        (dict(higher_is_better="yes"), "higher_is_better is str 'yes'; True, False, or None"),
        (dict(higher_is_better=1), "higher_is_better is int 1"),
        (dict(axis=""), "axis is str ''"),
        (dict(axis=3), "axis is int 3"),
        (dict(value_range=(0,)), r"value_range is tuple \(0,\); give \(low, high\)"),
        (dict(value_range=(0, "1")), "value_range"),
        (dict(value_range=(float("nan"), 1)), "value_range"),
        (dict(value_range=(1, 0)), "empty"),
        (dict(across_instances="median"), "across_instances is str 'median'"),
        (dict(evidence="words"), "evidence is str 'words'; one of: tokens, segments"),
        (dict(needs_labels="no"), "needs_labels is str 'no'; True or False"),
        (dict(description=None), "description is NoneType None"),
    ],
)
def test_metric_info_fields_are_checked_when_it_is_made(fields, words):
    """P10: summary='median' raised KeyError in the summary table after the whole
    evaluation; higher_is_better='yes' broke `normxlogit metrics` for every metric."""
    settings = dict(
        name="probe",
        description="a probe",
        higher_is_better=True,
        value_range=(0, 1),
        axis=None,
        summary="mean",
    )
    with pytest.raises(InvalidInputError, match=words):
        MetricInfo(**{**settings, **fields})


def test_metric_info_takes_a_list_range_and_numpy_numbers():
    info = MetricInfo("probe", "a probe", None, [np.float32(0), np.inf], "k", "aopc")
    assert info.value_range == (0, np.inf) and isinstance(info.value_range, tuple)


def test_a_value_outside_the_declared_range_is_warned_about(registries, model):
    """P10: a metric declaring (0, 1) reported 7.0 without a word (the guide: ranges are
    true bounds). One warning per metric, the values kept: a run's work is never lost."""
    register_metric(constant("out_of_range", 7.0))
    with pytest.warns(
        NormXLogitWarning,
        match=r"'out_of_range': 2 value\(s\) outside its declared range, the first for "
        r"method 'random' on text 0 is 7, outside its range",
    ) as caught:
        made = explain_and_evaluate(model, TEXTS[:2], methods="random", metrics="out_of_range")
    assert sum("declared range" in str(w.message) for w in caught) == 1
    assert made.result.frame["value"].tolist() == [7.0, 7.0]

    class NotANumber(Metric):
        info = MetricInfo("not_a_number", "text for a value", True, (0, 1), None, "mean")

        def rows(self, ctx):
            return [
                {"instance": i, "method": "random", "x": None, "value": "high"}
                for i in ctx.instances
            ]

    register_metric(NotANumber)
    with pytest.raises(InvalidInputError, match="is str 'high', not a number"):
        explain_and_evaluate(model, TEXTS[:1], methods="random", metrics="not_a_number")
    # rounding past a bound, and NaN (no value), are reported as they are
    register_metric(constant("rounded", 1 + 1e-12))
    register_metric(constant("missing", float("nan")))
    made = explain_and_evaluate(model, TEXTS[:1], methods="random", metrics=["rounded", "missing"])
    summary = made.result.summary()
    assert summary.loc["random", "rounded"] == pytest.approx(1.0)
    assert np.isnan(summary.loc["random", "missing"])


def test_metrics_listing_works_with_a_registered_metric(registries):
    register_metric(constant("listed", higher=None, value_range=(0, np.inf)))
    result = CliRunner().invoke(app, ["metrics"])
    assert result.exit_code == 0 and "listed" in result.output
