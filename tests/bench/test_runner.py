"""Planning and running a grid: only what is missing is computed, engines (local, Ray),
sizes, threads and timings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import transformers as T

from normxlogit.bench import ResultStore, load_config, plan, run_bench
from normxlogit.bench.engines import LocalEngine
from normxlogit.bench.report import time_table
from normxlogit.bench.results import status_frame
from normxlogit.common.errors import InvalidInputError

from ..conftest import SMALL, fresh_tokenizer, tokenizer
from .helpers import stored, table_counts, write_config


def test_tiny_grid_end_to_end_then_nothing_twice(tmp_path, sentiment_model):
    config = load_config(write_config(tmp_path, sentiment_model))
    with ResultStore(tmp_path / "results.sqlite") as store:
        report = run_bench(config, store)
        assert report.units == 3 + 3 + 1  # 8 texts in chunks of 3, twice; grad_ellm: N/A
        assert "grad_ellm" in " ".join(report.skipped)
        counts = store.counts()
        assert counts["explanations"] == 16
        assert counts["evaluations"] == 16 * 3
        again = run_bench(config, store)
        assert again.units == 0 and store.counts() == {**counts, "runs": 2}
        frame = status_frame(config, store)
    assert list(frame["state"]) == ["done", "done", "N/A"]
    values = stored(tmp_path / "results.sqlite")
    assert set(values["method"]) == {"normxlogit", "random"}
    assert set(values["split"]) == {"dev"}
    # comp_cd: 9 ratios; suff_acc: 9 ratios with the gold label; pi_soft_nc: 3 pis
    per_instance = values.groupby(["method", "metric"]).size() / 8
    assert per_instance.to_dict() == {
        (m, metric): n
        for m in ("normxlogit", "random")
        for metric, n in (("comp_cd", 9), ("pi_soft_nc", 3), ("suff_acc", 9))
    }
    gold = values[values["metric"] == "suff_acc"]["gold"]
    assert set(gold.dropna()) <= {0.0, 1.0}


def test_changing_a_setting_recomputes_only_what_it_changes(tmp_path, sentiment_model):
    path = write_config(tmp_path, sentiment_model, methods='["normxlogit"]')
    store_path = tmp_path / "results.sqlite"
    with ResultStore(store_path) as store:
        run_bench(load_config(path), store)
        before = store.counts()
        # pi-Soft reads `samples`; comprehensiveness and sufficiency do not
        path.write_text(path.read_text().replace("samples = 2", "samples = 3"))
        report = run_bench(load_config(path), store)
        after = store.counts()
    assert report.units == 3
    assert after["explanations"] == before["explanations"]  # explanations reused
    assert after["evaluations"] - before["evaluations"] == 8  # pi_soft_nc only
    # a method option is another method: explained and scored anew
    path.write_text(
        path.read_text().replace(
            'methods = ["normxlogit"]',
            'methods = ["normxlogit", {name = "normxlogit", label = "nx-word", '
            'options = {embedding = "word"}}]',
        )
    )
    config = load_config(path)
    with ResultStore(store_path) as store:
        (cell_a, cell_b) = plan(config, store)
        assert not cell_a.units and cell_b.done == 0 and len(cell_b.units) == 3


def test_larger_limit_computes_only_the_new_instances(tmp_path, sentiment_model):
    store_path = tmp_path / "results.sqlite"
    with ResultStore(store_path) as store:
        run_bench(load_config(write_config(tmp_path, sentiment_model, limit=4)), store)
        report = run_bench(load_config(write_config(tmp_path, sentiment_model, limit=6)), store)
        assert report.units == 2  # normxlogit and random: instances 4 and 5
        assert store.counts()["explanations"] == 12


def test_a_metric_that_means_nothing_for_the_model_stops_before_any_explaining(tmp_path):
    """A regressor has no class probabilities: comp_cd in its experiment is a config
    mistake, named before the first explanation is computed (and nothing is stored)."""
    torch.manual_seed(0)
    config = T.BertConfig(vocab_size=len(tokenizer()), num_labels=1, **SMALL)
    config.problem_type = "regression"
    folder = tmp_path / "regressor"
    T.BertForSequenceClassification(config).eval().save_pretrained(folder)
    fresh_tokenizer().save_pretrained(folder)
    grid = load_config(write_config(tmp_path, folder, methods='["normxlogit"]', limit=2))
    store_path = tmp_path / "r.sqlite"
    with (
        ResultStore(store_path) as store,
        pytest.raises(InvalidInputError, match=r"comp_cd needs class probabilities.*take it out"),
    ):
        run_bench(grid, store)
    assert table_counts(store_path)["explanations"] == 0


# ----------------------------------------------------------------- engines and sizes


def test_batch_size_and_device_change_speed_not_values(tmp_path, sentiment_model):
    path = write_config(tmp_path, sentiment_model, methods='["normxlogit"]', limit=5)
    config = load_config(path)
    with ResultStore(tmp_path / "one.sqlite") as store:
        run_bench(config.with_sizes(1, rows_per_forward=3), store, LocalEngine(device="cpu"))
        assert list(store.runs()["engine"]) == ["local (cpu)"]
    with ResultStore(tmp_path / "five.sqlite") as store:
        run_bench(config.with_sizes(batch_size=5), store)
    one, five = stored(tmp_path / "one.sqlite"), stored(tmp_path / "five.sqlite")
    pd.testing.assert_frame_equal(one.drop(columns="value"), five.drop(columns="value"))
    # pi-Soft divides by the clean perturbation effect, which float rounding can move a
    # little on this random tiny model; the hard metrics agree to rounding
    soft = one["metric"].str.startswith("pi_soft").to_numpy()
    np.testing.assert_allclose(one["value"][~soft], five["value"][~soft], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(one["value"][soft], five["value"][soft], atol=2e-3)


def test_the_local_engine_runs_with_the_threads_it_is_given(tmp_path, sentiment_model):
    """--threads sets torch's CPU threads for the run's units, and puts them back after."""
    config = load_config(write_config(tmp_path, sentiment_model, methods='["random"]', limit=2))
    engine = LocalEngine(threads=1)
    seen: list[int] = []
    run_unit = engine.worker.run

    def recording(unit):
        seen.append(torch.get_num_threads())
        return run_unit(unit)

    engine.worker.run = recording
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with ResultStore(tmp_path / "r.sqlite") as store:
            assert run_bench(config, store, engine).units == 1
        assert seen == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_ray_engine_stores_exactly_what_the_local_engine_stores(tmp_path, sentiment_model):
    ray = pytest.importorskip("ray", reason="Ray is the optional extra normxlogit[ray]")
    from normxlogit.bench.ray_engine import RayEngine

    config = load_config(write_config(tmp_path, sentiment_model, limit=6))
    with ResultStore(tmp_path / "local.sqlite") as store:
        run_bench(config, store, LocalEngine())
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with ResultStore(tmp_path / "ray.sqlite") as store:
            report = run_bench(config, store, RayEngine(workers=2))
    finally:
        ray.shutdown()
    assert report.units > 0
    local, remote = stored(tmp_path / "local.sqlite"), stored(tmp_path / "ray.sqlite")
    assert table_counts(tmp_path / "ray.sqlite") == {
        **table_counts(tmp_path / "local.sqlite"),
        "runs": 1,
    }
    pd.testing.assert_frame_equal(
        remote.drop(columns="value"), local.drop(columns="value"), check_dtype=False
    )
    np.testing.assert_allclose(remote["value"], local["value"], rtol=1e-5, atol=1e-6)
    with ResultStore(tmp_path / "ray.sqlite") as store:
        skipped = store.skipped_cells()
    assert list(skipped["reason"]) == ["grad_ellm explains decoder-only models"]


@pytest.mark.parametrize("batch_size", [1, 2])
def test_each_batch_stores_its_own_explain_time(tmp_path, sentiment_model, batch_size):
    """An efficiency grid (one text per batch) stores each text's own time, not its
    unit's mean, so the time table bins texts by their length; a larger batch's texts
    share its time."""
    path = write_config(
        tmp_path, sentiment_model, f"batch_size = {batch_size}", metrics="[]", chunk_size=4
    )
    config = load_config(path)
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_bench(config, store)
        timings = store.timings()
    table = time_table(config, timings)
    for method, rows in timings.groupby("method"):
        # the table's "all" column: the mean over every instance (pi-Soft's table 6)
        label = next(m.display for m in config.experiments[0].methods if m.key == method)
        mean, std = rows["seconds"].mean(), rows["seconds"].std(ddof=0)
        assert f"| {label} | " in table and f"{mean:.3f} ± {std:.3f} | 8 |" in table
        assert (rows["batch"] == batch_size).all()
        # one batch, one time, shared by its texts (batches group texts by length, so
        # not necessarily neighbours); every batch timed on its own, never a unit's
        # (chunk_size texts') mean
        assert sorted(rows["seconds"].value_counts()) == [batch_size] * (8 // batch_size)
