"""Generation experiments in a grid: the model writes once, each method explains the
continuation step by step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from normxlogit.bench import ResultStore, load_config, plan, run_bench
from normxlogit.bench.results import experiment_results, export_frame
from normxlogit.common.errors import InvalidInputError

from .helpers import write_config


@pytest.fixture(scope="module")
def decoder_model(tmp_path_factory) -> Path:
    from ..conftest import saved_tiny

    return saved_tiny(tmp_path_factory.mktemp("tiny-decoder"), "llama", "causal_lm")


def write_generation_config(folder: Path, model: Path, **values) -> Path:
    settings = {"max_new_tokens": 6, "evaluate_every": 5, "methods": ["normxlogit", "random"]}
    settings.update(values)
    methods = ", ".join(f'"{name}"' for name in settings["methods"])
    path = folder / "generation.toml"
    path.write_text(
        f"""title = "tiny generation grid"
seeds = [0]
metrics = ["pi_soft_nc"]
methods = [{methods}]
chunk_size = 2

[protocol]
samples = 2
pis = [0.25, 0.75]

[[experiments]]
model = "{model}"
dataset = "tellmewhy"
split = "reagent"
limit = 3
max_new_tokens = {settings["max_new_tokens"]}
evaluate_every = {settings["evaluate_every"]}
"""
    )
    return path


def test_a_generation_experiment_writes_once_and_explains_it_step_by_step(tmp_path, decoder_model):
    config = load_config(write_generation_config(tmp_path, decoder_model))
    (experiment,) = config.experiments
    assert experiment.generation and experiment.max_new_tokens == 6
    store_path = tmp_path / "results.sqlite"
    with ResultStore(store_path) as store:
        run_bench(config, store)
        generated = store.generations(experiment.model, experiment.dataset.key, 6)
        assert sorted(generated) == [0, 1, 2] and all(1 <= len(g) <= 6 for g in generated.values())
        counts = store.counts()
        assert counts["generations"] == 3 and counts["explanations"] == 6
        assert counts["metric_values"] == 0 and counts["step_values"] > 0
        # every method explained the continuation the model wrote
        key = plan(config, store, with_units=False)[1].key
        for instance, payload in store.explanations(key, [0, 1, 2]).items():
            assert payload["kind"] == "generation"
            assert payload["input_ids"][payload["prompt_length"] :] == generated[instance]
        assert run_bench(config, store).units == 0  # nothing twice
        values = export_frame(store)
        (results,) = experiment_results(config, store)
        summary = results.summary()
    steps = {i: list(range(0, len(g), 5)) for i, g in generated.items()}
    assert len(values) == 2 * 2 * sum(len(s) for s in steps.values())  # methods x pis x steps
    assert set(values["step"]) == {s for v in steps.values() for s in v}
    assert list(summary.index) == ["normxlogit", "random"]
    assert np.isfinite(summary["pi_soft_nc"]).all()
    # which steps are scored is a setting of the metric: explanations stay, values are new
    config = load_config(write_generation_config(tmp_path, decoder_model, evaluate_every=2))
    with ResultStore(store_path) as store:
        before = store.counts()
        report = run_bench(config, store)
        after = store.counts()
    assert report.units == 4 and after["explanations"] == before["explanations"]
    assert after["generations"] == 3
    # another length writes (and explains) anew
    config = load_config(write_generation_config(tmp_path, decoder_model, max_new_tokens=4))
    with ResultStore(store_path) as store:
        run_bench(config, store)
        assert store.counts()["generations"] == 6


def test_a_generation_experiment_refuses_label_metrics(tmp_path, decoder_model):
    path = write_generation_config(tmp_path, decoder_model)
    path.write_text(path.read_text().replace('metrics = ["pi_soft_nc"]', 'metrics = ["comp_acc"]'))
    with pytest.raises(InvalidInputError, match="needs gold labels or evidence"):
        load_config(path)
    text = write_config(tmp_path, decoder_model).read_text() + "max_new_tokens = 4\n"
    (tmp_path / "grid.toml").write_text(text)
    with pytest.raises(InvalidInputError, match="apply to generation data sets"):
        load_config(tmp_path / "grid.toml")


def test_generate_writes_only_the_continuations_a_deadline_run_then_explains(
    tmp_path, decoder_model
):
    from normxlogit.bench.runner import Deadline

    from .helpers import run_cli

    path = write_generation_config(tmp_path, decoder_model)
    store_path = tmp_path / "results.sqlite"
    config = load_config(path)
    with ResultStore(store_path) as store, pytest.raises(InvalidInputError, match="first"):
        run_bench(config, store, deadline=Deadline(3600))  # a deadline run never generates
    written = run_cli("bench", "generate", str(path), "--store", str(store_path))
    assert written.returncode == 0, written.stderr
    assert "(3 stored;" in " ".join(written.stderr.split())
    with ResultStore(store_path) as store:
        assert store.counts()["generations"] == 3 and store.counts()["explanations"] == 0
        report = run_bench(config, store, deadline=Deadline(3600))
        assert report.units > 0 and store.counts()["generations"] == 3
    none = write_config(tmp_path, decoder_model)  # a grid with no generation experiment
    refused = run_cli("bench", "generate", str(none), "--store", str(tmp_path / "n.sqlite"))
    assert refused.returncode != 0
    assert "no generation experiment" in " ".join(refused.stderr.split())


def _values(store: ResultStore):
    """The stored metric values in one order, to compare two stores."""
    keys = ["instance", "method", "metric", "step", "x"]
    return export_frame(store).sort_values(keys).reset_index(drop=True)


def _payloads(store: ResultStore, config) -> dict:
    """Every stored explanation payload of the grid, by (method key, instance)."""
    return {
        (cell.key.method, instance): payload
        for cell in plan(config, store, with_units=False)
        for instance, payload in store.explanations(cell.key, [0, 1, 2]).items()
    }


def test_the_bench_explains_only_the_scored_steps_and_scores_as_before(
    tmp_path, decoder_model, monkeypatch
):
    """The metrics score every ``evaluate_every``-th step, so only those steps are
    explained: the values equal explaining every step; payloads of every step (stored
    before) are still read; another ``evaluate_every`` explains the missing steps again."""
    from normxlogit.bench import work

    settings = dict(max_new_tokens=12, methods=["gradient_x_input", "normxlogit"])
    config = load_config(write_generation_config(tmp_path, decoder_model, **settings))
    every_path, scored_path = tmp_path / "every.sqlite", tmp_path / "scored.sqlite"
    with monkeypatch.context() as patched:  # the bench as it was: every step explained
        patched.setattr(work, "_scored_steps", lambda unit, instances: None)
        with ResultStore(every_path) as store:
            run_bench(config, store)
            every, every_payloads = _values(store), _payloads(store, config)
    with ResultStore(scored_path) as store:
        run_bench(config, store)
        scored, payloads = _values(store), _payloads(store, config)
        generated = store.generations(
            config.experiments[0].model, config.experiments[0].dataset.key, 12
        )
    assert len(scored) == len(every) > 0 and set(scored["step"]) <= {0, 5, 10}
    np.testing.assert_allclose(scored["value"], every["value"], rtol=1e-6, atol=1e-6)
    assert payloads.keys() == every_payloads.keys()
    for (method, instance), payload in payloads.items():
        steps = len(generated[instance])
        wanted = list(range(0, steps, 5))
        assert payload.get("explained_steps", list(range(steps))) == wanted
        assert "explained_steps" not in every_payloads[(method, instance)]
    # another evaluate_every: payloads of every step serve as they are, the others are
    # explained again at the steps they lack (replacing the stored ones)
    again = load_config(
        write_generation_config(tmp_path, decoder_model, evaluate_every=2, **settings)
    )
    results = {}
    for path in (every_path, scored_path):
        with ResultStore(path) as store:
            before = store.counts()["explanations"]
            assert run_bench(again, store).units > 0
            assert store.counts()["explanations"] == before
            results[path] = _values(store), _payloads(store, again)
    assert results[every_path][1] == every_payloads
    for (_, instance), payload in results[scored_path][1].items():
        steps = len(generated[instance])
        wanted = set(range(0, steps, 2)) | set(range(0, steps, 5))
        assert set(payload.get("explained_steps", range(steps))) == wanted
    (left, _), (right, _) = results.values()
    assert len(left) == len(right) and set(right["step"]) > {0, 2, 4}
    np.testing.assert_allclose(left["value"], right["value"], rtol=1e-6, atol=1e-6)
