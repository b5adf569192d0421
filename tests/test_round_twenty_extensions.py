"""Round twenty of new-user probes, probe b: registered extensions in other shapes. A
hook written as a staticmethod (P01), a plain function where the base has a classmethod
(P02), hook results the library used blindly (P03, P04), settings JSON cannot write
(P05), a metric's x that evaluate and ``EvaluationResult.load`` judged apart (P06), rows
that leave a method out (P07), a stale code fingerprint after re-registering (P08) and
one class under two names (P09). Tiny models; the registries are restored after each
test that registers."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import ClassVar

import pytest

import normxlogit
from normxlogit.common.code_identity import code_fingerprint
from normxlogit.common.errors import InvalidFileError, InvalidInputError, NormXLogitWarning
from normxlogit.evaluation import EvaluationResult, Metric, MetricInfo, register_metric
from normxlogit.methods import AttributionMethod, register_method
from normxlogit.methods.logit import NormXLogit
from normxlogit.methods.segment_methods import LeaveOneOut

from .conftest import sharp_model

TEXT = "The film was good. The acting was bad. I left early."
SHORT = ["Good fun here.", "A dull film."]


@pytest.fixture(scope="module")
def model():
    return sharp_model()


@pytest.fixture(scope="module")
def made(model):
    return {
        "random": model.explain(SHORT, "random"),
        "normxlogit": model.explain(SHORT, "normxlogit"),
    }


def _method(name: str, base: type = LeaveOneOut, **hooks) -> type:
    """A registered method of the user's derived from ``base``, with ``hooks``."""
    cls = type(name, (base,), {"name": name, "description": "probe", **hooks})
    return register_method(dataclass(cls), replace=True)


def _metric(name: str, xs=(None,), axis: str | None = None, **hooks) -> type:
    """A registered metric of the user's scoring 0.5 at each of ``xs``, with ``hooks``."""

    def rows(self, ctx):
        return [
            dict(instance=i, method=m, x=x, value=0.5)
            for i in ctx.instances
            for m in ctx.methods
            for x in xs
        ]

    info = MetricInfo(name, "probe", True, (0, 1), axis, "mean")
    cls = type(name.title().replace("_", ""), (Metric,), {"info": info, "rows": rows, **hooks})
    return register_metric(cls, replace=True)


def _boom(*args):
    raise ValueError("static boom")


def _failure(kind: str, name: str, hook: str) -> str:
    return f"the registered {kind} {name!r} failed (ValueError: static boom); fix its {hook}"


# ----------------------------------------------------------------------------------- P01
def test_a_staticmethod_hook_of_a_method_is_guarded(model, registries):
    """P01: a hook written as a @staticmethod was never guarded: a raw ValueError."""
    _method("static_plan", plan=staticmethod(_boom))
    _method("static_settings", NormXLogit, settings=staticmethod(_boom))
    with pytest.raises(InvalidInputError) as caught:
        model.explain(TEXT, "static_plan", segments="sentences")
    assert str(caught.value) == _failure("method", "static_plan", "plan()")
    with pytest.raises(InvalidInputError) as caught:
        model.explain(TEXT, "static_settings")
    assert str(caught.value) == _failure("method", "static_settings", "settings()")


def test_a_static_refusal_that_fails_greys_the_metric_out_and_models_still_load(
    model, made, registries
):
    """P01: a metric whose static refusal() raised stopped every model on the page from
    loading ("internal error"), and evaluate gave a raw ValueError."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from normxlogit.serve import build_app

    from .serve.test_serve_api import finished as _finished

    _metric("refusal_static", refusal=staticmethod(_boom), finish=staticmethod(_boom))
    said = _failure("metric", "refusal_static", "refusal()")
    with TestClient(build_app(loaded={"tiny": model}, builtins=False)) as client:
        job = _finished(client, client.post("/api/models/tiny/load").json())
        assert job["state"] == "done", job
        assert job["result"]["unavailable"]["refusal_static"] == said
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, made, ["refusal_static"])
    assert str(caught.value) == said


# ----------------------------------------------------------------------------------- P02
def test_a_plain_function_where_the_base_has_a_classmethod_is_refused_at_registration(
    registries,
):
    """P02: explanation_refusal() without @classmethod made the guard itself fail
    (AttributeError: 'list' object has no attribute 'info'), hiding the mistake."""

    def explanation_refusal(self, methods):
        return None

    with pytest.raises(InvalidInputError) as caught:
        _metric("exrefusal_plain", explanation_refusal=explanation_refusal)
    assert str(caught.value) == (
        "metric 'exrefusal_plain': define explanation_refusal as a @classmethod, as Metric "
        "does (it is called on the class)"
    )
    assert "exrefusal_plain" not in normxlogit.evaluation.list_metrics()


def test_a_guard_called_with_a_stranger_names_the_registered_class(made, model, registries):
    """P02: the guard read the name off its first argument, whatever it was; called on the
    class with another first argument, it names the class it was registered with."""

    def rows(self, ctx):
        raise ValueError("static boom")

    cls = _metric("odd_call", rows=rows)
    with pytest.raises(InvalidInputError) as caught:
        cls.rows(["not the metric"], None)  # what a missing @classmethod would pass
    assert str(caught.value) == _failure("metric", "odd_call", "rows()")


# ----------------------------------------------------------------------------------- P03
@pytest.mark.parametrize(
    ("hooks", "expected"),
    [
        (
            {"for_task": lambda self, kind: None},
            "method 'odd_result': for_task() returned None; it returns a SegmentMethod",
        ),
        (
            {"for_task": lambda self, kind: NormXLogit()},
            "method 'odd_result': for_task() returned NormXLogit NormXLogit(",
        ),
        (
            {"excess_draws": lambda self, count: 5},
            "method 'odd_result': excess_draws() returned int 5; it returns None, or a string",
        ),
        (
            {"settings": lambda self: ["x"]},
            "method 'odd_result': settings() returned list ['x']; it returns a dict",
        ),
    ],
)
def test_a_methods_hook_returning_the_wrong_kind_is_refused_naming_it(
    model, registries, hooks, expected
):
    """P03, P04: for_task(), settings() or excess_draws() returning the wrong kind failed
    in the library's own lines, or became the whole message ("5")."""
    _method("odd_result", **hooks)
    with pytest.raises(InvalidInputError) as caught:
        model.explain(TEXT, "odd_result", segments="sentences")
    assert str(caught.value).startswith(expected)


@pytest.mark.parametrize(
    ("hooks", "expected"),
    [
        (
            {"planned_rows": lambda self, protocol, methods, texts: [1, 2]},
            "metric 'odd_metric': planned_rows() returned list [1, 2]; it returns a dict",
        ),
        (
            {"refusal": classmethod(lambda cls, model: True)},
            "metric 'odd_metric': refusal() returned bool True; it returns None, or a string",
        ),
        (
            {"explanation_refusal": classmethod(lambda cls, methods: 5)},
            "metric 'odd_metric': explanation_refusal() returned int 5; it returns None, or a",
        ),
    ],
)
def test_a_metrics_hook_returning_the_wrong_kind_is_refused_naming_it(
    model, made, registries, hooks, expected
):
    """P03, P04: planned_rows() returning a list failed in progress.py; refusal() returning
    True was refused with the message "True"."""
    _metric("odd_metric", **hooks)
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, made, ["odd_metric"])
    assert str(caught.value).startswith(expected)


# ----------------------------------------------------------------------------------- P05
def test_settings_json_cannot_write_are_refused_when_explaining(model, registries):
    """P05: a set in settings() was explained, and only save() failed, with json's
    TypeError naming neither the method nor the key."""
    settings = {"embedding": "output", "norm": "layer", "tags": {1, 2}}
    _method("settings_set", NormXLogit, settings=lambda self: settings)
    with pytest.raises(InvalidInputError) as caught:
        model.explain("Good fun.", "settings_set")
    assert str(caught.value).startswith(
        "method 'settings_set': settings()['tags'] is set {1, 2}, which JSON cannot write"
    )


# ----------------------------------------------------------------------------------- P06
def test_a_registered_curve_with_fractional_x_loads_back(model, made, registries, tmp_path):
    """P06: fractional x on an axis without a built-in grid was saved, then refused on load
    (the loader demanded whole numbers)."""
    _metric("rows_frac", xs=(0.0, 0.5), axis="fraction removed")
    path = normxlogit.evaluate(model, made, ["rows_frac"]).save(tmp_path / "r.json")
    loaded = EvaluationResult.load(path)
    assert sorted(set(loaded.frame["x"])) == [0.0, 0.5]
    assert loaded.summary().loc["random", "rows_frac"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("xs", "expected"),
    [
        ((0.0, float("inf")), "has x that is inf; give a finite number, or None"),
        ((0.0, float("nan")), "has x that is nan, but earlier rows of rows_x have numbers"),
        ((None, 0.5), "has x that is 0.5, but earlier rows of rows_x have None"),
    ],
)
def test_x_that_is_not_finite_or_mixes_null_and_numbers_is_refused(
    model, made, registries, xs, expected
):
    """P06: x of inf or NaN became a curve point, and x mixing null and numbers was
    evaluated but could not be loaded back."""
    _metric("rows_x", xs=xs, axis="fraction removed")
    with pytest.raises(InvalidInputError, match="metric 'rows_x': row 1 of its rows") as caught:
        normxlogit.evaluate(model, made, ["rows_x"])
    assert expected in str(caught.value)


def test_the_loader_refuses_x_mixing_null_and_numbers(model, made, registries, tmp_path):
    """P06: the loader applies evaluate's rule (a shared helper)."""
    _metric("rows_x", xs=(0.0, 0.5), axis="fraction removed")
    path = normxlogit.evaluate(model, made, ["rows_x"]).save(tmp_path / "r.json")
    data = json.loads(path.read_text())
    data["rows"][0]["x"] = None
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError) as caught:
        EvaluationResult.load(path)
    assert "'x' is 0.5, but earlier rows of rows_x have None" in str(caught.value)


# ----------------------------------------------------------------------------------- P07
def test_a_metric_leaving_a_method_out_is_warned_once(model, made, registries):
    """P07: rows() leaving a method out (or giving no rows) made a summary without it,
    without a word."""

    def rows(self, ctx):
        return [dict(instance=i, method="random", x=None, value=0.5) for i in ctx.instances]

    _metric("rows_missing", rows=rows)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        normxlogit.evaluate(model, made, ["rows_missing"], batch_size=1)
    said = [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]
    assert said == [
        "metric 'rows_missing' gave no rows for ['normxlogit']; rows() returns one row per "
        "instance and method, so the summary leaves them out"
    ]


# ----------------------------------------------------------------------------------- P08
def test_re_registering_a_changed_class_gives_a_new_fingerprint(registries):
    """P08: the fingerprint was cached per class object: a class attribute changed and the
    class registered again kept the old one, so a bench store would reuse stale results."""
    cls = _method("fingerprinted")
    before = code_fingerprint(cls)
    cls.replacement = "[X]"
    register_method(cls, replace=True)
    assert code_fingerprint(cls) != before


# ----------------------------------------------------------------------------------- P09
def test_one_class_under_a_second_name_is_refused(registries):
    """P09: a class registered as two_a, renamed and registered again, was listed under
    both names, and an explanation asked for as two_a was labelled two_b."""

    @register_method(replace=True)
    @dataclass
    class Two(AttributionMethod):
        name: ClassVar[str] = "two_a"
        description: ClassVar[str] = "probe"

        def attribute(self, model, forward, targets, layers):
            raise NotImplementedError

    Two.name = "two_b"
    with pytest.raises(InvalidInputError) as caught:
        register_method(Two)
    assert str(caught.value) == (
        "class test_one_class_under_a_second_name_is_refused.<locals>.Two is already "
        "registered as method 'two_a'; subclass it to register it as 'two_b' too"
    )
    assert "two_b" not in normxlogit.list_methods()
