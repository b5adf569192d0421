"""Generation experiments in a grid: the model writes once, each method explains the
continuation step by step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from normxlogit.bench import ResultStore, load_config, plan, run_bench
from normxlogit.bench.results import experiment_results, export_frame
from normxlogit.common.errors import InvalidInputError

from ..conftest import fresh_tokenizer
from .helpers import write_config


@pytest.fixture(scope="module")
def decoder_model(tmp_path_factory) -> Path:
    from ..conftest import build_model

    folder = tmp_path_factory.mktemp("tiny-decoder")
    build_model("llama", "causal_lm").save_pretrained(folder)
    fresh_tokenizer().save_pretrained(folder)
    return folder


def write_generation_config(folder: Path, model: Path, **values) -> Path:
    settings = {"max_new_tokens": 6, "evaluate_every": 5, **values}
    path = folder / "generation.toml"
    path.write_text(
        f"""title = "tiny generation grid"
seeds = [0]
metrics = ["pi_soft_nc"]
methods = ["normxlogit", "random"]
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
