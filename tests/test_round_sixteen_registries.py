"""Round sixteen of new-user probes (issue 41), the extension points: what a registered
metric's ``rows()`` returns (P01, P02), the bench's keys for methods and metrics that are
not built in (P03), one label word (P04), a MetricInfo range with no number in it (P05),
the bench command line on a registered name (P06) and a diagnostic's key (P07). Tiny
models; both registries are restored after each test."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import normxlogit
from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.runner import protocol_keys
from normxlogit.bench.spec import MethodSpec
from normxlogit.cli.app import app
from normxlogit.common.code_identity import code_fingerprint
from normxlogit.common.errors import InvalidInputError, UnknownMethodError
from normxlogit.evaluation import Metric, MetricInfo, register_metric
from normxlogit.methods import Attribution, AttributionMethod, register_method

from .bench.helpers import _save_tiny, write_config
from .conftest import prompted_llama, sharp_model
from .registered import ramp_method

TEXTS = ["Good fun.", "Bad film, really.", "A long and dull film overall."]


@pytest.fixture(scope="module")
def model():
    return sharp_model()


@pytest.fixture(scope="module")
def explained(model):
    return normxlogit.explain(model, TEXTS, method="random")


def metric_of(name, make_rows, value_range=(0.0, 1.0)):
    """A registered metric whose ``rows(ctx)`` returns ``make_rows(ctx)``."""

    class Made(Metric):
        info: ClassVar[MetricInfo] = MetricInfo(name, "a probe", True, value_range, None, "mean")

        def rows(self, ctx):
            return make_rows(ctx)

    return register_metric(Made, replace=True)


def _one_line(caught) -> str:
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def each(ctx, **row):
    """One row per method x text of the chunk, ``row`` added to it."""
    return [{"instance": i, "method": m, **row} for m in ctx.methods for i in ctx.instances]


# P01 / P02: a metric's rows are checked where evaluate takes them


@pytest.mark.parametrize(
    ("make_rows", "expected"),
    [
        (lambda ctx: None, "rows() returned NoneType None; it returns an iterable of dicts"),
        (lambda ctx: {"instance": 0}, "rows() returned dict"),
        (lambda ctx: [(i, "random", 0.5) for i in ctx.instances], "is no dict"),
        (
            lambda ctx: [{"method": m, "value": 0.5} for m in ctx.methods],
            "has no 'instance'",
        ),
        (
            lambda ctx: [{**r, "instance": str(r["instance"])} for r in each(ctx, value=0.5)],
            "has instance str '",
        ),
        (
            lambda ctx: [{**r, "instance": float(r["instance"])} for r in each(ctx, value=0.5)],
            "has instance float",
        ),
        (
            lambda ctx: [{**r, "instance": r["instance"] + 10} for r in each(ctx, value=0.5)],
            "use the ids in ctx.instances",
        ),
        (
            lambda ctx: [{**r, "instance": -1} for r in each(ctx, value=0.5)],
            "has instance -1, not one of this chunk's texts",
        ),
        (lambda ctx: [{"instance": i, "value": 0.5} for i in ctx.instances], "has no 'method'"),
        (
            lambda ctx: [{**r, "method": "zzz"} for r in each(ctx, value=0.5)],
            "has method str 'zzz', not one of the explained methods (ctx.methods ['random'])",
        ),
        (
            lambda ctx: each(ctx, score=0.5),
            "has no 'value' (its keys: instance, method, score); put the metric's number under",
        ),
        (lambda ctx: each(ctx, x="a", value=0.5), "has x (the curve point) that is str 'a'"),
        (lambda ctx: each(ctx, gold="pos", value=0.5), "has gold (the gold value) that is str"),
        (
            lambda ctx: each(ctx, value=0.5) + each(ctx, value=1.0),
            "repeats row 0: the same instance",
        ),
    ],
)
def test_p01_p02_a_metric_row_that_is_wrong_is_refused_naming_metric_and_row(
    registries, model, explained, make_rows, expected
):
    metric_of("probe_rows", make_rows)
    with pytest.raises(InvalidInputError, match="metric 'probe_rows': ") as caught:
        normxlogit.evaluate(model, explained, metrics=["probe_rows"])
    assert expected in _one_line(caught)


def test_p02_a_position_in_the_chunk_is_refused_not_filed_under_another_text(
    registries, model, explained
):
    metric_of(
        "local",
        lambda ctx: [
            {"instance": j, "method": m, "value": 0.5}
            for m in ctx.methods
            for j, _ in enumerate(ctx.instances)
        ],
    )
    with pytest.raises(InvalidInputError, match="use the ids in ctx.instances") as caught:
        normxlogit.evaluate(model, explained, metrics=["local"], batch_size=1)
    assert "not a position in the chunk" in _one_line(caught)


def test_p01_p02_good_rows_pass_numpy_numbers_and_curves_included(registries, model, explained):
    metric_of(
        "curve",
        lambda ctx: [
            {"instance": np.int64(i), "method": m, "x": x, "value": np.float32(0.25)}
            for m in ctx.methods
            for i in ctx.instances
            for x in (0.1, 0.2)  # a curve's rows all have x (round 20: mixed is refused)
        ],
    )
    result = normxlogit.evaluate(model, explained, metrics=["curve", "comp_cd"], batch_size=2)
    rows = result.frame[result.frame["metric"] == "curve"]
    assert sorted(set(rows["instance"])) == [0, 1, 2] and len(rows) == 6
    assert result.summary().loc["random", "curve"] == pytest.approx(0.25)


# P03: the bench keys a method or metric that is not built in by its code


def _ramp(step: float):
    return ramp_method("ramp", step)


def _constant(value):
    class Constant(Metric):
        info: ClassVar[MetricInfo] = MetricInfo("constant", "a probe", True, (0, 1), None, "mean")

        def rows(self, ctx):
            return each(ctx, value=value)

    return register_metric(Constant, replace=True)


def _constant_changed(value):
    class Constant(Metric):
        info: ClassVar[MetricInfo] = MetricInfo("constant", "a probe", True, (0, 1), None, "mean")

        def rows(self, ctx):
            return each(ctx, value=1.0 - value)  # another computation under the same name

    return register_metric(Constant, replace=True)


def test_p03_a_changed_custom_method_or_metric_is_computed_again_an_unchanged_one_reused(
    registries, tmp_path
):
    model_path = _save_tiny(tmp_path / "tiny", seed=0)
    config_path = write_config(
        tmp_path, model_path, metrics='["comp_cd", "constant"]', methods='["ramp"]', limit=2
    )
    _ramp(1.0)
    _constant(0.25)
    with ResultStore(tmp_path / "results.sqlite") as store:
        assert run_bench(load_config(config_path), store).units == 1
        _ramp(1.0)  # the same class made again: same code, nothing recomputed
        _constant(0.25)
        assert run_bench(load_config(config_path), store).units == 0
        _constant_changed(0.25)  # another metric under the same name: it alone again
        assert run_bench(load_config(config_path), store).units == 1
        assert store.counts()["explanations"] == 2  # the explanations reused
        _ramp(-5.0)  # the same source closing over another step: explained again
        assert run_bench(load_config(config_path), store).units == 1
        assert store.counts()["explanations"] == 4


def test_p03_a_class_without_source_is_keyed_by_its_code_and_closure():
    def made(value):
        return type("Made", (Metric,), {"rows": lambda self, ctx: [value]})

    assert code_fingerprint(made(0.25)) == code_fingerprint(made(0.25))
    assert code_fingerprint(made(0.25)) != code_fingerprint(made(0.75))


def test_p03_built_in_keys_do_not_change(tmp_path):
    assert json.loads(MethodSpec("normxlogit").key) == {"name": "normxlogit", "options": {}}
    config = load_config(write_config(tmp_path, tmp_path, methods='["normxlogit"]'))
    for key in protocol_keys(config.experiments[0]).values():
        assert "code" not in json.loads(key)


# P04: one label word


@pytest.mark.parametrize("words", [{"neg": " bad"}, [" bad"], (" bad",)])
def test_p04_one_label_word_is_refused(words):
    with pytest.raises(InvalidInputError, match="label_words names one label") as caught:
        prompted_llama(words)
    assert "give two or more" in _one_line(caught)


# P05: a range with no number in it


@pytest.mark.parametrize("value_range", [(np.inf, np.inf), (-np.inf, -np.inf), (1.0, 0.0)])
def test_p05_a_range_holding_no_number_is_refused(value_range):
    with pytest.raises(InvalidInputError, match="MetricInfo of metric 'r': value_range"):
        MetricInfo("r", "d", True, value_range, None, "mean")


@pytest.mark.parametrize("value_range", [(0.0, 0.0), (-np.inf, np.inf), (0.0, np.inf)])
def test_p05_a_range_with_a_number_is_kept(value_range):
    assert MetricInfo("r", "d", True, value_range, None, "mean").value_range == value_range


# P06: the bench command line on a name only Python registers


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [("methods", '["mine_not_built_in"]', "method"), ("metrics", '["mym"]', "metric")],
)
def test_p06_the_bench_command_line_says_it_knows_built_ins_only(tmp_path, field, value, kind):
    config = write_config(tmp_path, tmp_path, **{field: value})
    result = CliRunner().invoke(app, ["bench", "status", str(config)])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert f"unknown {kind}" in message
    assert f"The command line knows the built-in {kind}s only (normxlogit {kind}s" in message
    assert "normxlogit.bench.run_bench(config, store)" in message


def test_p06_the_python_error_type_is_kept(tmp_path):
    with pytest.raises(UnknownMethodError):
        load_config(write_config(tmp_path, tmp_path, methods='["mine_not_built_in"]'))


# P07: a diagnostic's key


def test_p07_a_diagnostic_under_a_non_string_key_is_named_by_its_key(registries, model):
    @dataclass
    class Keyed(AttributionMethod):
        name: ClassVar[str] = "keyed"
        description: ClassVar[str] = "a diagnostic under an int"

        def attribute(self, model, forward, targets, layers):
            B, T = forward.batch.input_ids.shape
            K = targets.columns.shape[1]
            return Attribution(torch.rand(B, len(layers.indices), T, K), {5: torch.zeros(B, K)})

    register_method(Keyed)
    with pytest.raises(InvalidInputError, match="a diagnostic is named int 5") as caught:
        normxlogit.explain(model, TEXTS[0], method="keyed")
    assert "name each diagnostic by a string" in _one_line(caught)
