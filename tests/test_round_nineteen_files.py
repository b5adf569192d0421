"""Round nineteen of new-user probes, probe b: a registered extension failing in a hook
other than ``attribute()``/``rows()`` (a segment method's ``plan()``/``combine()``,
``settings()``, ``attention_reader()``, a metric's ``finish()``, ``planned_rows()``,
``explanation_refusal()``, ``refusal()``: P01, P03, P04, P05), NaN from ``combine()`` or
``token_maps()`` said as ``attribute()``'s is (P02), ``read_examples`` on a folder or a
device (P06), and a generation's probability differences and an explanation's
diagnostics checked on load (P07). Tiny models; the registries are restored after each
test that registers."""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.common.code_identity import _fingerprint, code_fingerprint
from normxlogit.common.errors import InvalidFileError, InvalidInputError, NormXLogitWarning
from normxlogit.data import read_examples
from normxlogit.evaluation import Metric, MetricInfo, register_metric
from normxlogit.explanations.explanation import Explanation
from normxlogit.explanations.generation import GenerationExplanation
from normxlogit.methods import AttributionMethod, register_method
from normxlogit.methods.segment_methods import LeaveOneOut, SegmentPlan

from .conftest import explainable, sharp_model

TEXT = "The film was good. The acting was bad. I left early."
SHORT = ["Good fun here.", "A dull film."]


@pytest.fixture(scope="module")
def model():
    return sharp_model()


def _segment_method(name: str, **hooks):
    """A registered LeaveOneOut of the user's with ``hooks`` (plan, combine) of its own."""
    cls = type(name, (LeaveOneOut,), {"name": name, "description": "probe", **hooks})
    return register_method(dataclass(cls), replace=True)


def _raising(message: str):
    def hook(self, *args, **kwargs):
        raise ValueError(message)

    return hook


def _said(caught) -> set[str]:
    return {str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)}


def _failure(kind: str, name: str, error: str, hook: str) -> str:
    return f"the registered {kind} {name!r} failed (ValueError: {error}); fix its {hook}"


# ----------------------------------------------------------------------------------- P01
def test_a_segment_methods_own_plan_or_combine_failure_is_named(model, registries):
    """P01: a registered segment method raising in plan() or combine() gave a raw
    ValueError; a wrong combine() or plan() failed inside numpy or the library's indexing.
    Guarding the hooks leaves the class's code fingerprint as it was."""
    cls = type("PlanBoom", (LeaveOneOut,), {"name": "plan_boom", "description": "probe"})
    cls.plan = _raising("plan boom")
    cls = dataclass(cls)
    before = code_fingerprint(cls)
    register_method(cls, replace=True)
    _fingerprint.cache_clear()
    assert code_fingerprint(cls) == before
    assert cls.plan.__wrapped__.__name__ == "hook"
    with pytest.raises(InvalidInputError) as caught:
        model.explain(TEXT, "plan_boom", segments="sentences")
    assert str(caught.value) == _failure("method", "plan_boom", "plan boom", "plan()")
    assert isinstance(caught.value.__cause__, ValueError)
    _segment_method("combine_boom", combine=_raising("combine boom"))
    with pytest.raises(InvalidInputError, match=r"^the registered method 'combine_boom' fail"):
        model.explain(TEXT, "combine_boom", segments="sentences")

    def short(self, plan, values, tokens=1):
        return np.zeros((1, values.shape[1]))

    def listed(self, plan, values, tokens=1):
        return [[0.0]] * plan.masks.shape[1]

    def empty(self, count):
        return SegmentPlan(np.zeros((0, count), dtype=bool))

    _segment_method("combine_short", combine=short)
    _segment_method("combine_list", combine=listed)
    _segment_method("plan_empty", plan=empty)
    with pytest.raises(InvalidInputError) as caught:
        model.explain(TEXT, "combine_short", segments="sentences")
    assert str(caught.value).startswith(
        "method 'combine_short': combine() returned an array of shape [1, 1] (float64); it "
        "returns a NumPy array of scores [segments, targets] = [3, 1]"
    )
    with pytest.raises(InvalidInputError, match=r"'combine_list': combine\(\) returned list"):
        model.explain(TEXT, "combine_list", segments="sentences")
    with pytest.raises(InvalidInputError, match=r"'plan_empty': plan\(3\) returned masks that"):
        model.explain(TEXT, "plan_empty", segments="sentences")


# ----------------------------------------------------------------------------------- P02
def test_nan_from_combine_or_token_maps_is_warned_about(model, registries):
    """P02: NaN segment scores of a registered combine() (read as "past truncation"), or
    NaN token maps of a row-reading method in a generation, were made without a word."""

    def nan(self, plan, values, tokens=1):
        return np.full((plan.masks.shape[1], values.shape[1]), np.nan)

    _segment_method("combine_nan", combine=nan)

    @dataclass
    class MapsNan(AttributionMethod):
        name: ClassVar[str] = "maps_nan"
        description: ClassVar[str] = "NaN token maps"
        reads_rows: ClassVar[bool] = True

        def attribute(self, model, forward, targets, layers):
            texts, tokens = forward.batch.input_ids.shape
            return torch.zeros(texts, len(layers.indices), tokens, targets.columns.shape[1])

        def token_maps(self, model, forward, layers):
            texts, tokens = forward.batch.input_ids.shape
            return torch.full((texts, len(layers.indices), tokens, tokens), float("nan"))

    register_method(MapsNan, replace=True)
    decoder = explainable("llama", "causal_lm")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.explain(SHORT, "combine_nan", segments=[["Good"], ["A dull"]])
    assert _said(caught) == {
        "the registered method 'combine_nan' gave NaN or infinite scores, which rank no "
        "tokens (evaluate refuses its explanations); fix its combine(), or explain without it"
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        decoder.explain("the cat sat", "maps_nan", generate=True, max_new_tokens=2)
    said = [s for s in _said(caught) if "'maps_nan' gave NaN" in s]
    assert len(said) == 1 and "fix its token_maps()" in said[0]


# ----------------------------------------------------------------------------------- P03
def _probe_metric(name: str, **hooks):
    """A registered metric of the user's scoring 0.5 everywhere, with ``hooks``."""

    def rows(self, ctx):
        return [
            dict(instance=i, method=m, x=None, value=0.5)
            for i in ctx.instances
            for m in ctx.methods
        ]

    info = MetricInfo(name, "probe", True, (0, 1), None, "mean")
    cls = type(name.title().replace("_", ""), (Metric,), {"info": info, "rows": rows, **hooks})
    return register_metric(cls, replace=True)


def test_a_metrics_own_finish_planned_rows_or_explanation_refusal_failure_is_named(
    model, registries
):
    """P03: only rows() was guarded; finish(), planned_rows() and explanation_refusal()
    raising gave a raw traceback (the page: "internal error")."""
    _probe_metric("finish_boom", finish=_raising("finish boom"))
    _probe_metric("planned_boom", planned_rows=_raising("planned boom"))
    _probe_metric("refusing_boom", explanation_refusal=classmethod(_raising("refusing boom")))
    made = model.explain(SHORT, "random")
    for name, hook in [
        ("finish_boom", "finish()"),
        ("planned_boom", "planned_rows()"),
        ("refusing_boom", "explanation_refusal()"),
    ]:
        with pytest.raises(InvalidInputError) as caught:
            normxlogit.evaluate(model, made, [name])
        assert str(caught.value) == _failure("metric", name, name.replace("_", " "), hook)


# ----------------------------------------------------------------------------------- P04
def test_a_metric_whose_refusal_fails_is_greyed_out_and_models_still_load(model, registries):
    """P04: one registered metric whose refusal() raised stopped every model on the page
    from loading, "internal error" naming no metric; evaluate gave a raw ValueError."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from normxlogit.serve import build_app

    from .serve.test_serve_api import finished as _finished

    _probe_metric("refusal_boom", refusal=classmethod(_raising("refusal boom")))
    said = _failure("metric", "refusal_boom", "refusal boom", "refusal()")
    with TestClient(build_app(loaded={"tiny": model}, builtins=False)) as client:
        job = _finished(client, client.post("/api/models/tiny/load").json())
        assert job["state"] == "done", job
        assert job["result"]["unavailable"]["refusal_boom"] == said
        assert "comp_cd" not in job["result"]["unavailable"]
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, model.explain(SHORT, "random"), ["refusal_boom"])
    assert str(caught.value) == said


# ----------------------------------------------------------------------------------- P05
def test_a_methods_own_settings_or_attention_reader_failure_is_named(model, registries):
    """P05: settings() or attention_reader() raising gave a raw ValueError, as it did for
    an instance of a class never registered."""

    @dataclass
    class Scores(AttributionMethod):
        name: ClassVar[str] = "settings_boom"
        description: ClassVar[str] = "raises in settings()"

        def attribute(self, model, forward, targets, layers):
            texts, tokens = forward.batch.input_ids.shape
            return torch.rand(texts, len(layers.indices), tokens, targets.columns.shape[1])

        def settings(self):
            raise ValueError("settings boom")

    @dataclass
    class Reader(Scores):
        name: ClassVar[str] = "reader_boom"

        def settings(self):
            return {}

        def attention_reader(self, layers, rows=None):
            raise ValueError("reader boom")

    @dataclass
    class Unregistered(Scores):
        name: ClassVar[str] = "unregistered"

    register_method(Scores, replace=True)
    register_method(Reader, replace=True)
    for method, error, hook in [
        ("settings_boom", "settings boom", "settings()"),
        ("reader_boom", "reader boom", "attention_reader()"),
        (Unregistered(), "settings boom", "settings()"),
    ]:
        with pytest.raises(InvalidInputError) as caught:
            model.explain(SHORT, method)
        name = method if isinstance(method, str) else "unregistered"
        assert str(caught.value) == _failure("method", name, error, hook)


# ----------------------------------------------------------------------------------- P06
def test_read_examples_names_a_folder_or_a_device(tmp_path, monkeypatch):
    """P06: a folder or /dev/null was "not found", with $NORMXLOGIT_DATA as the fix."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInputError) as caught:
        read_examples(".")
    assert str(caught.value).startswith("data file . is a folder, not a data file; pass the")
    assert "NORMXLOGIT_DATA" not in str(caught.value)
    with pytest.raises(InvalidInputError, match="/dev/null is a device, not a regular file"):
        read_examples("/dev/null")
    with pytest.raises(InvalidInputError, match=r"missing\.csv does not exist; pass the path"):
        read_examples("missing.csv")


# ----------------------------------------------------------------------------------- P07
@pytest.fixture(scope="module")
def saved_generation(tmp_path_factory):
    """A generation explained against a contrast, saved: its dict."""
    decoder = explainable("llama", "causal_lm")
    made = decoder.explain("the cat sat", continuation=" on the", contrast=" in a")
    return json.loads(made.to_json())


@pytest.mark.parametrize(
    ("key", "value"),
    [("same_prefix_prob_diff", 7.0), ("same_prefix_prob_diff", 1e39), ("contrast_prob_diff", -5.0)],
)
def test_a_probability_difference_outside_minus_one_to_one_is_refused(
    saved_generation, tmp_path, key, value
):
    """P07: differences of two probabilities of 7.0, 1e39 or -5.0 loaded and were shown
    as Δp."""
    data = json.loads(json.dumps(saved_generation))
    data["step_scores"][key][0] = value
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError) as caught:
        GenerationExplanation.load(path)
    assert f"step_scores.{key}[0] is {value!r}" in str(caught.value)
    assert "differences of two probabilities, numbers from -1 to 1" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (True, "'diagnostics.target_probability' holds true/false; diagnostics are numbers"),
        ("x", "'diagnostics.target_probability' holds a string; diagnostics are numbers"),
        ([1.5], "diagnostics.target_probability[0] is 1.5"),
    ],
)
def test_diagnostics_that_are_no_numbers_or_no_probabilities_are_refused(
    model, tmp_path, value, said
):
    """P07: diagnostics of true or "x" loaded (scores refuse them since round 18)."""
    data = json.loads(model.explain(SHORT[0]).to_json())
    data["diagnostics"] = {"target_probability": value}
    path = tmp_path / "e.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match="^" + re.escape(f"{path}: {said}")):
        Explanation.load(path)
