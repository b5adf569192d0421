"""``normxlogit bench``: configs, the resumable store, engines, status, export, report."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import transformers as T

from normxlogit.bench import ResultStore, load_config, plan, run_bench
from normxlogit.bench.engines import LocalEngine
from normxlogit.bench.report import build_table, time_table, write_report
from normxlogit.bench.results import experiment_results, export_frame, status_frame
from normxlogit.common.errors import (
    InvalidFileError,
    InvalidInputError,
    StaleResultsError,
    UnknownMethodError,
    UnknownModelError,
)

from .conftest import SHARED_DATA, SMALL, fresh_tokenizer, tokenizer

CLI = [sys.executable, "-m", "normxlogit"]


@pytest.fixture(scope="module")
def sentiment_model(tmp_path_factory) -> Path:
    """A saved tiny BERT with SST-2's labels (negative, positive)."""
    return _save_tiny(tmp_path_factory.mktemp("tiny-sentiment"), seed=0)


def write_config(folder: Path, model: Path, body: str = "", **values) -> Path:
    """A grid of ``model`` on SST-2 dev; ``values`` replace the defaults below."""
    settings = {
        "metrics": '["comp_cd", "suff_acc", "pi_soft_nc"]',
        "methods": '["normxlogit", "random", "grad_ellm"]',
        "limit": 8,
        "chunk_size": 3,
        **values,
    }
    path = folder / "grid.toml"
    path.write_text(
        f"""title = "tiny grid"
seeds = [0]
metrics = {settings["metrics"]}
methods = {settings["methods"]}
chunk_size = {settings["chunk_size"]}

[protocol]
samples = 2
pis = [0.25, 0.5, 0.75]

[[experiments]]
model = "{model}"
dataset = "sst2"
split = "dev"
limit = {settings["limit"]}
{body}"""
    )
    return path


def stored(path: Path) -> pd.DataFrame:
    """Every metric value in a store, sorted by its full key."""
    with ResultStore(path, create=False) as store:
        frame = export_frame(store)
    keys = ["model", "dataset", "instance", "method", "seed", "metric", "protocol", "x"]
    return frame.sort_values(keys).reset_index(drop=True)


def table_counts(path: Path) -> dict[str, int]:
    with ResultStore(path, create=False) as store:
        return store.counts()


# ----------------------------------------------------------------------------- config
def test_config_reads_methods_metrics_and_experiments(tmp_path, sentiment_model):
    config = load_config(write_config(tmp_path, sentiment_model))
    (experiment,) = config.experiments
    assert experiment.model == str(sentiment_model)
    assert experiment.dataset.name == "sst2" and experiment.dataset.limit == 8
    assert [m.name for m in experiment.methods] == ["normxlogit", "random", "grad_ellm"]
    assert experiment.metrics == ("comp_cd", "suff_acc", "pi_soft_nc")
    assert experiment.protocol == {"samples": 2, "pis": [0.25, 0.5, 0.75]}
    assert config.default_store == tmp_path / "grid.sqlite"
    assert (experiment.batch_size, experiment.rows_per_forward) == (16, 64)  # defaults
    sized = write_config(tmp_path, sentiment_model, body="rows_per_forward = 256\n")
    assert load_config(sized).experiments[0].rows_per_forward == 256
    resized = load_config(sized).with_sizes(batch_size=64)
    assert (resized.experiments[0].batch_size, resized.experiments[0].rows_per_forward) == (
        64,
        256,
    )


@pytest.mark.parametrize(
    ("change", "error", "pattern"),
    [
        ({"methods": '["normxlogit", "saliencyy"]'}, UnknownMethodError, "saliencyy"),
        ({"metrics": '["comp_cdd"]'}, InvalidInputError, "comp_cdd"),
        ({"limit": 0}, InvalidInputError, "limit.*at least 1"),
        (
            {"methods": '[{name = "integrated_gradients", options = {stepz = 3}}]'},
            InvalidInputError,
            "stepz.*accepts",
        ),
        ({"body": "colour = 1\n"}, InvalidInputError, "unknown key.*colour"),
        (
            {"body": '[[tables]]\nmetric = "comp_cd"\nstandard_error = "yes"\n'},
            InvalidInputError,
            "standard_error must be true or false",
        ),
    ],
)
def test_config_mistakes_are_refused_with_the_fix(
    tmp_path, sentiment_model, change, error, pattern
):
    body = change.pop("body", "")
    path = write_config(tmp_path, sentiment_model, body, **change)
    with pytest.raises(error, match=pattern):
        load_config(path)


def test_config_model_that_cannot_be_found(tmp_path):
    path = write_config(tmp_path, Path("minilm-sst3"))
    with pytest.raises(UnknownModelError, match="minilm-sst3.*neither a built-in.*minilm-sst2"):
        load_config(path)
    # a relative folder is found next to the config, wherever the command runs
    (tmp_path / "models" / "mine").mkdir(parents=True)
    config = load_config(write_config(tmp_path, Path("models/mine")))
    assert config.experiments[0].model == str(tmp_path / "models" / "mine")


def test_config_protocol_mistakes(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[protocol]\nsamplez = 3\n[[experiments]]\nmodel = "m"\ndataset = "sst2"\n')
    with pytest.raises(InvalidInputError, match="samplez"):
        load_config(path)
    path.write_text("[[experiments]\n")
    with pytest.raises(InvalidFileError, match="not valid TOML"):
        load_config(path)
    with pytest.raises(InvalidFileError, match="does not exist"):
        load_config(tmp_path / "missing.toml")


# ----------------------------------------------------------------------- local engine
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


def test_report_renders_tables_and_figures_from_the_store(tmp_path, sentiment_model):
    config = load_config(write_config(tmp_path, sentiment_model))
    store_path = tmp_path / "results.sqlite"
    with ResultStore(store_path) as store:
        run_bench(config, store)
        written = write_report(config, store, tmp_path / "report")
        results = experiment_results(config, store)
    names = {path.name for path in written}
    assert {"report.md", "table-comp_cd.tex", "curve-comp_cd.png", "time-vs-length.png"} <= names
    for path in written:
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| grad_ellm | N/A |" in markdown
    assert "**" in markdown
    latex = (tmp_path / "report" / "table-comp_cd.tex").read_text()
    assert "\\textbf{" in latex and "\\underline{" in latex and "\\toprule" in latex
    # the table's numbers are the evaluation's own summary of the stored values
    summary = results[0].summary()
    table = build_table(config.tables[0] if config.tables else _comp_cd_table(), results)
    index = table.columns.index(("sst2", str(sentiment_model), "comp_cd"))
    assert table.values[("normxlogit", index)] == pytest.approx(
        summary.loc["normxlogit", "comp_cd"]
    )
    frame = stored(store_path)
    mine = frame[(frame["method"] == "normxlogit") & (frame["metric"] == "comp_cd")]
    assert summary.loc["normxlogit", "comp_cd"] == pytest.approx(mine["value"].mean())
    assert "Seconds per instance" in markdown  # the default figures include time
    curves_only = load_config(
        write_config(tmp_path, sentiment_model, body='[[plots]]\nmetric = "comp_cd"\n')
    )
    with ResultStore(store_path) as store:
        written = write_report(curves_only, store, tmp_path / "curves")
    assert {path.name for path in written} == {"report.md", "plot1.png"} | {
        p.name for p in written if p.suffix == ".tex"
    }
    assert "Seconds per instance" not in (tmp_path / "curves" / "report.md").read_text()


def _comp_cd_table():
    from normxlogit.bench.spec import TableSpec

    return TableSpec(title="comp_cd", metric="comp_cd")


def test_store_refuses_other_files(tmp_path):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
    with pytest.raises(InvalidFileError, match="not a normxlogit results store"):
        ResultStore(other)
    text = tmp_path / "notes.sqlite"
    text.write_text("hello, not a database at all" * 100)
    with pytest.raises(InvalidFileError, match="not a normxlogit results store"):
        ResultStore(text)
    with pytest.raises(InvalidFileError, match="no results store"):
        ResultStore(tmp_path / "absent.sqlite", create=False)


def test_a_failed_unit_leaves_no_partial_rows(tmp_path, sentiment_model):
    """The store is written a unit at a time: an error inside a unit's write keeps none of it."""
    config = load_config(write_config(tmp_path, sentiment_model, methods='["normxlogit"]'))
    store_path = tmp_path / "results.sqlite"

    class FailingStore(ResultStore):
        writes = 0

        def add_unit(self, cell, explanations, evaluations, fingerprint=None):
            FailingStore.writes += 1
            if FailingStore.writes == 2:  # fail half-way through the second unit's write
                with self.transaction() as conn:
                    conn.execute(
                        "INSERT INTO explanations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (cell.model, cell.dataset, 999, cell.method, cell.seed, 1, 0.0, 1, "{}"),
                    )
                    raise RuntimeError("disk full")
            super().add_unit(cell, explanations, evaluations, fingerprint)

    with FailingStore(store_path) as store, pytest.raises(RuntimeError, match="disk full"):
        run_bench(config, store)
    counts = table_counts(store_path)
    assert counts["explanations"] == 3 and counts["evaluations"] == 9  # the first unit only
    with ResultStore(store_path) as store:
        run_bench(config, store)
    assert table_counts(store_path)["explanations"] == 8


# ----------------------------------------------------------------------- kill and resume
def test_sigkill_mid_run_then_resume_equals_an_uninterrupted_run(tmp_path, sentiment_model):
    """SIGKILL the CLI part-way; the store has whole units only, and finishing the run
    gives exactly the rows of a run that was never interrupted."""
    config_path = write_config(
        tmp_path,
        sentiment_model,
        methods='["normxlogit", "random"]',
        metrics='["comp_cd", "pi_soft_nc"]',
        limit=40,
        chunk_size=2,
    )
    config_path.write_text(config_path.read_text().replace("samples = 2", "samples = 6"))
    killed_store = tmp_path / "killed.sqlite"
    command = [*CLI, "bench", str(config_path), "--store", str(killed_store)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    done = 0
    while time.time() < deadline and process.poll() is None:
        if killed_store.exists():
            try:
                with sqlite3.connect(killed_store, timeout=1) as conn:
                    done = conn.execute("SELECT COUNT(*) FROM explanations").fetchone()[0]
            except sqlite3.OperationalError:
                done = 0
            if done >= 6:
                break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    partial = table_counts(killed_store)
    assert 6 <= partial["explanations"] < 80
    assert partial["explanations"] % 2 == 0  # whole units of two texts
    assert partial["evaluations"] == 2 * partial["explanations"]  # each with both metrics

    resumed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    with ResultStore(tmp_path / "whole.sqlite") as store:
        run_bench(load_config(config_path), store)
    whole, finished = stored(tmp_path / "whole.sqlite"), stored(killed_store)
    assert table_counts(killed_store)["explanations"] == 80
    keys = ["model", "instance", "method", "seed", "metric", "protocol", "x"]
    assert not finished.duplicated(keys).any()
    assert len(finished) == len(whole)
    pd.testing.assert_frame_equal(
        finished.drop(columns="value"), whole.drop(columns="value"), check_dtype=False
    )
    np.testing.assert_allclose(finished["value"], whole["value"], rtol=1e-5, atol=1e-6)


def test_two_runs_on_one_store_both_finish_with_every_row_once(tmp_path, sentiment_model):
    """Two ``bench run`` processes started together on one store: both exit 0, each skips
    what the other stored first, and the store equals one run's."""
    config_path = write_config(
        tmp_path,
        sentiment_model,
        methods='["normxlogit", "random"]',
        metrics='["comp_cd", "pi_soft_nc"]',
        limit=16,
        chunk_size=2,
    )
    shared = tmp_path / "shared.sqlite"
    command = [*CLI, "bench", str(config_path), "--store", str(shared)]
    runs = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for process in runs:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        assert "Traceback" not in stderr
    with ResultStore(tmp_path / "alone.sqlite") as store:
        run_bench(load_config(config_path), store)
    together, alone = stored(shared), stored(tmp_path / "alone.sqlite")
    keys = ["model", "instance", "method", "seed", "metric", "protocol", "x"]
    assert not together.duplicated(keys).any()
    assert table_counts(shared)["explanations"] == 32
    pd.testing.assert_frame_equal(
        together.drop(columns="value"), alone.drop(columns="value"), check_dtype=False
    )
    np.testing.assert_allclose(together["value"], alone["value"], rtol=1e-5, atol=1e-6)


def test_store_units_written_twice_keep_the_first(tmp_path):
    """The race itself, without timing: a unit stored again (another process finished it
    between this one's plan and its write) adds nothing and raises nothing."""
    from normxlogit.bench.store import CellKey, StoredEvaluation, StoredExplanation

    cell = CellKey("m", "d", "random", 0)
    explanation = StoredExplanation(0, {"scores": [1, 2, 3]}, 3, 0.1, 1)
    evaluation = StoredEvaluation(0, "comp_cd", "{}", 0.2, [("ratio", 0.1, 0.5, None)])
    with ResultStore(tmp_path / "s.sqlite") as store:
        store.add_unit(cell, [explanation], [evaluation])
        store.add_unit(cell, [explanation], [evaluation])
        assert store.counts()["explanations"] == 1
        assert store.counts()["evaluations"] == 1


def test_a_store_that_cannot_take_writes_is_one_error_naming_it(tmp_path):
    from normxlogit.bench.store import CellKey, StoredEvaluation, StoredExplanation
    from normxlogit.common.errors import OutputPathError

    cell = CellKey("m", "d", "random", 0)
    explanation = StoredExplanation(0, {"scores": [1, 2, 3]}, 3, 0.1, 1)
    evaluation = StoredEvaluation(0, "comp_cd", "{}", 0.2, [("ratio", 0.1, 0.5, None)])
    with ResultStore(tmp_path / "s.sqlite") as store:
        store._conn.execute("PRAGMA query_only=ON")  # what a read-only file answers
        with pytest.raises(OutputPathError, match=r"cannot write the store .*s\.sqlite"):
            store.add_unit(cell, [explanation], [evaluation])


# --------------------------------------------------------------------------- the CLI
def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_cli_run_status_export_report(tmp_path, sentiment_model):
    config = write_config(tmp_path, sentiment_model, limit=4)
    ran = run_cli("bench", str(config))
    assert ran.returncode == 0, ran.stderr
    assert "N/A" in ran.stderr and (tmp_path / "grid.sqlite").is_file()
    status = run_cli("bench", "status", str(config))
    assert status.returncode == 0 and "8 of 8 instances done" in status.stdout
    status = run_cli("bench", "status", str(config), "--limit", "2")  # as a run with it counts
    assert status.returncode == 0 and "4 of 4 instances done" in status.stdout
    status = run_cli("bench", "status", str(config), "--limit", "0")
    assert status.returncode != 0 and "--limit 0: must be at least 1" in status.stderr
    exported = run_cli("bench", "export", "--store", str(tmp_path / "grid.sqlite"))
    assert exported.returncode == 0
    lines = exported.stdout.strip().splitlines()
    assert lines[0].startswith("model,dataset,split,instance,method")
    assert len(lines) - 1 == 2 * 4 * (9 + 9 + 3)
    parquet = tmp_path / "values.parquet"
    run_cli(
        "bench",
        "export",
        "--store",
        str(tmp_path / "grid.sqlite"),
        "-f",
        "parquet",
        "-o",
        str(parquet),
    )
    assert len(pd.read_parquet(parquet)) == len(lines) - 1
    report = run_cli("bench", "report", str(config))
    assert report.returncode == 0, report.stderr
    assert "±: the standard error" not in (tmp_path / "grid-report" / "report.md").read_text()
    report = run_cli("bench", "report", str(config), "--standard-error")
    assert report.returncode == 0, report.stderr
    assert (
        "±: the standard error over the instances"
        in (tmp_path / "grid-report" / "report.md").read_text()
    )
    report = run_cli("bench", "report", str(config), "--versus", "random")
    assert report.returncode == 0, report.stderr
    assert "each method minus random, paired over instances" in report.stdout
    report = run_cli("bench", "report", str(config), "--versus", "Random")
    assert report.returncode != 0 and "--versus 'Random' is no method" in report.stderr
    assert "Traceback" not in report.stderr


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["bench", "missing.toml"], "does not exist"),
        (["bench", "status", "grid.toml"], "no results store"),
        (["bench", "export", "--store", "absent.sqlite"], "no results store"),
        (["bench", "export", "--store", "x.sqlite", "-f", "parquet"], "--output"),
        (["bench", "grid.toml", "--limit", "0"], "at least 1"),
        (["bench", "grid.toml", "--store", "nowhere/x.sqlite"], "does not exist"),
        (["bench", "grid.toml", "--engine", "spark"], "unknown engine"),
        (["bench", "grid.toml", "--experiment", "nope"], "no experiment named nope"),
        (["bench", "grid.toml", "--method", "nope"], "no method shown as nope"),
        (["bench", "grid.toml", "--batch-size", "0"], "at least 1"),
        (["bench", "grid.toml", "--rows-per-forward", "0"], "at least 1"),
        (["bench", "grid.toml", "--threads", "0"], "--threads 0: must be at least 1"),
        (["bench", "grid.toml", "--device", "tpu9"], "no torch device"),
        (["bench", "grid.toml", "--engine", "ray", "--device", "cpu"], "local engine"),
        (["bench", "merge", "absent.sqlite", "--into", "x.sqlite"], "no results store"),
    ],
)
def test_cli_mistakes_are_one_line_and_exit_2(tmp_path, sentiment_model, args, pattern):
    write_config(tmp_path, sentiment_model)
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert pattern in " ".join(result.stderr.split())
    assert not (tmp_path / "grid.sqlite").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cli_refuses_a_gpu_this_machine_lacks(tmp_path, sentiment_model):
    write_config(tmp_path, sentiment_model)
    result = run_cli("bench", "grid.toml", "--device", "cuda", cwd=tmp_path)
    assert result.returncode == 2 and "no CUDA GPU" in result.stderr
    assert not (tmp_path / "grid.sqlite").exists()


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


def test_only_named_experiments_run(tmp_path, sentiment_model):
    body = f"""
[[experiments]]
name = "second"
model = "{sentiment_model}"
dataset = "sst2"
split = "dev"
limit = 3
"""
    config = load_config(write_config(tmp_path, sentiment_model, body=body, methods='["random"]'))
    assert [e.name for e in config.experiments][1] == "second"
    chosen = config.only(["second"])
    assert [e.name for e in chosen.experiments] == ["second"]
    with pytest.raises(InvalidInputError, match="its experiments: .*second"):
        config.only(["third"])


def test_only_named_methods_run(tmp_path, sentiment_model):
    methods = '[{ name = "random" }, { name = "l2_norm", label = "L2" }]'
    config = load_config(write_config(tmp_path, sentiment_model, methods=methods))
    chosen = config.only_methods(["L2"])
    assert [[m.display for m in e.methods] for e in chosen.experiments] == [["L2"]]
    with ResultStore(tmp_path / "results.sqlite") as store:
        run_bench(chosen, store)
    methods = set(stored(tmp_path / "results.sqlite")["method"])
    assert len(methods) == 1 and "l2_norm" in next(iter(methods))
    with pytest.raises(InvalidInputError, match="its methods: random, L2"):
        config.only_methods(["l2_norm"])


# ------------------------------------------------------- results of other weights or data
def _save_tiny(folder: Path, seed: int) -> Path:
    torch.manual_seed(seed)
    config = T.BertConfig(
        vocab_size=len(tokenizer()),
        num_labels=2,
        id2label={0: "negative", 1: "positive"},
        label2id={"negative": 0, "positive": 1},
        **SMALL,
    )
    T.BertForSequenceClassification(config).eval().save_pretrained(folder)
    fresh_tokenizer().save_pretrained(folder)
    return folder


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


def test_a_model_whose_weights_changed_is_refused_not_mixed(tmp_path):
    """Results are keyed by the model's name; new weights under the old name (a retrained
    adapter, an overwritten folder) must not be scored together with the old results."""
    model = _save_tiny(tmp_path / "model", seed=0)
    store_path = tmp_path / "results.sqlite"
    with ResultStore(store_path) as store:
        run_bench(load_config(write_config(tmp_path, model, methods='["random"]', limit=2)), store)
        fingerprint = store.model_fingerprint(str(model))
    assert fingerprint is not None and len(fingerprint) == 32
    _save_tiny(model, seed=0)  # saved again, the same weights: the same model
    larger = load_config(write_config(tmp_path, model, methods='["random"]', limit=3))
    with ResultStore(store_path) as store:
        assert run_bench(larger, store).units == 1
    _save_tiny(model, seed=1)  # other weights under the same path
    before = table_counts(store_path)
    largest = load_config(write_config(tmp_path, model, methods='["random"]', limit=4))
    with (
        ResultStore(store_path) as store,
        pytest.raises(StaleResultsError, match=r"weights, task or tokenizer changed.*--store"),
    ):
        run_bench(largest, store)
    results = ("explanations", "evaluations", "metric_values", "skipped")
    assert {k: table_counts(store_path)[k] for k in results} == {k: before[k] for k in results}
    with ResultStore(tmp_path / "new.sqlite") as store:  # what the message advises
        assert run_bench(largest, store).units == 2
        assert store.model_fingerprint(str(model)) != fingerprint


def test_a_data_file_that_changed_is_refused_not_mixed(tmp_path, sentiment_model):
    data = tmp_path / "sst2.tsv"
    original = (SHARED_DATA / "sst2" / "dev.tsv").read_text().splitlines(keepends=True)[:6]
    data.write_text("".join(original))
    body = f'path = "{data}"'
    config = write_config(tmp_path, sentiment_model, body, methods='["random"]', limit=4)
    store_path = tmp_path / "results.sqlite"
    with ResultStore(store_path) as store:
        run_bench(load_config(config), store)
    before = table_counts(store_path)
    sentence, label = original[2].rstrip("\n").split("\t")  # instance 1
    for changed in (
        f"an entirely different sentence .\t{label}\n",
        f"{sentence}\t{1 - int(label)}\n",
    ):
        data.write_text("".join([*original[:2], changed, *original[3:]]))
        with (
            ResultStore(store_path) as store,
            pytest.raises(StaleResultsError, match=r"instance 1 another text or label.*changed"),
        ):
            run_bench(load_config(config), store)
        assert table_counts(store_path) == before
    data.write_text("".join(original))  # the data the store was filled from: nothing to do
    with ResultStore(store_path) as store:
        assert run_bench(load_config(config), store).units == 0


def test_status_only_reads_the_store_a_run_may_be_writing(tmp_path, sentiment_model):
    data = tmp_path / "sst2.tsv"
    original = (SHARED_DATA / "sst2" / "dev.tsv").read_text().splitlines(keepends=True)[:7]
    data.write_text("".join(original))
    body = f'path = "{data}"'
    config = load_config(write_config(tmp_path, sentiment_model, body, methods='["random"]'))
    store_path = tmp_path / "results.sqlite"
    with ResultStore(store_path) as store:
        run_bench(config, store, limit=2)
    before = table_counts(store_path)
    writer = sqlite3.connect(store_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a run in the middle of storing a unit
    try:
        with ResultStore(store_path, create=False) as store:
            store._conn.execute("PRAGMA busy_timeout=1000")  # a write would fail, not wait
            frame = status_frame(config, store)
            assert frame[["done", "total"]].values.tolist() == [[2, 6]]
            sentence, label = original[2].rstrip("\n").split("\t")  # instance 1
            data.write_text("".join([*original[:2], f"changed .\t{label}\n", *original[3:]]))
            with pytest.raises(StaleResultsError, match=r"instance 1 another text or label"):
                status_frame(config, store)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert table_counts(store_path) == before  # the 4 instances beyond the run: not recorded


def test_merge_refuses_results_of_another_model_under_the_same_name(tmp_path):
    model = _save_tiny(tmp_path / "model", seed=0)
    config = load_config(write_config(tmp_path, model, methods='["random"]', limit=2))
    with ResultStore(tmp_path / "a.sqlite") as store:
        run_bench(config, store)
    _save_tiny(model, seed=1)
    with ResultStore(tmp_path / "b.sqlite") as store:
        run_bench(config, store)
    before = table_counts(tmp_path / "a.sqlite")
    with (
        ResultStore(tmp_path / "a.sqlite") as store,
        pytest.raises(StaleResultsError, match="model changed between the runs"),
    ):
        store.merge_from(tmp_path / "b.sqlite")
    assert table_counts(tmp_path / "a.sqlite") == before


def test_fingerprint_is_of_the_weights_not_the_object(sentiment_model):
    import normxlogit
    from normxlogit.bench.fingerprint import model_fingerprint

    first, second = normxlogit.load(str(sentiment_model)), normxlogit.load(str(sentiment_model))
    assert model_fingerprint(first) == model_fingerprint(second)
    with torch.no_grad():
        next(second.model.parameters()).view(-1)[0] += 1e-6
    assert model_fingerprint(first) != model_fingerprint(second)


# ------------------------------------------------------------------------- merge
def test_merging_stores_from_two_machines_equals_one_run(tmp_path, sentiment_model):
    """Two stores that overlap (instances 0-3 in both) join into what one run stores."""
    methods = '["normxlogit", "random", "grad_ellm"]'
    small = load_config(write_config(tmp_path, sentiment_model, methods=methods, limit=4))
    large = load_config(write_config(tmp_path, sentiment_model, methods=methods, limit=6))
    for name, config in (("a", small), ("b", large), ("whole", large)):
        with ResultStore(tmp_path / f"{name}.sqlite") as store:
            run_bench(config, store)
    with ResultStore(tmp_path / "a.sqlite") as store:
        added = store.merge_from(tmp_path / "b.sqlite")
        assert added["explanations"] == 2 * 2  # instances 4 and 5 of two methods
        assert store.merge_from(tmp_path / "b.sqlite") == dict.fromkeys(added, 0)
        assert not plan(large, store)[0].units  # nothing left to compute
    merged, whole = stored(tmp_path / "a.sqlite"), stored(tmp_path / "whole.sqlite")
    pd.testing.assert_frame_equal(merged, whole)
    counts = table_counts(tmp_path / "a.sqlite")
    assert {k: v for k, v in counts.items() if k != "runs"} == {
        k: v for k, v in table_counts(tmp_path / "whole.sqlite").items() if k != "runs"
    }
    assert counts["runs"] == 2


def test_merge_refuses_stores_of_other_data_and_writes_nothing(tmp_path, sentiment_model):
    config = load_config(write_config(tmp_path, sentiment_model, methods='["random"]', limit=3))
    for name in ("a", "b"):
        with ResultStore(tmp_path / f"{name}.sqlite") as store:
            run_bench(config, store)
    with sqlite3.connect(tmp_path / "b.sqlite") as conn:
        conn.execute("UPDATE instances SET text = '\"another text\"' WHERE instance = 1")
    before = table_counts(tmp_path / "a.sqlite")
    with (
        ResultStore(tmp_path / "a.sqlite") as store,
        pytest.raises(InvalidFileError, match="another text or label for instance 1"),
    ):
        store.merge_from(tmp_path / "b.sqlite")
    assert table_counts(tmp_path / "a.sqlite") == before
    with (
        ResultStore(tmp_path / "a.sqlite") as store,
        pytest.raises(InvalidFileError, match="being merged into"),
    ):
        store.merge_from(tmp_path / "a.sqlite")


def test_cli_merge(tmp_path, sentiment_model):
    config = load_config(write_config(tmp_path, sentiment_model, methods='["random"]', limit=3))
    with ResultStore(tmp_path / "gpu.sqlite") as store:
        run_bench(config, store)
    result = run_cli("bench", "merge", "gpu.sqlite", "--into", "main.sqlite", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "added 3 instances, 3 explanations" in " ".join(result.stderr.split())
    pd.testing.assert_frame_equal(stored(tmp_path / "main.sqlite"), stored(tmp_path / "gpu.sqlite"))


# --------------------------------------------------------------------------- Ray
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


def test_export_keeps_every_point_and_options(tmp_path, sentiment_model):
    config = load_config(
        write_config(
            tmp_path,
            sentiment_model,
            methods='[{name = "integrated_gradients", label = "IG", options = {steps = 4}}]',
            metrics='["comp_cd"]',
            limit=2,
        )
    )
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_bench(config, store)
        frame = export_frame(store)
    assert set(frame["method"]) == {"integrated_gradients"}
    assert json.loads(frame["method_options"].iloc[0]) == {"steps": 4}
    assert sorted(frame["x"].unique()) == pytest.approx([0.1 * k for k in range(1, 10)])
    assert os.path.basename(frame["dataset"].iloc[0]) == "sst2"


# ------------------------------------------------------------------ configs and layouts
EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


@pytest.mark.parametrize("path", sorted(EXPERIMENTS.glob("*.toml")), ids=lambda p: p.stem)
def test_every_committed_experiment_config_reads(path):
    config = load_config(path)
    assert config.experiments and config.title
    for table in config.tables:
        assert table.metric


def test_pisoft_layout_datasets_in_rows_methods_in_columns_with_average(tmp_path, sentiment_model):
    """pi-Soft's tables: datasets down, methods across, an Avg row; ranks along a row."""
    from normxlogit.bench.spec import TableSpec

    config = load_config(write_config(tmp_path, sentiment_model, limit=3))
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_bench(config, store)
        results = experiment_results(config, store)
    layout = dict(title="pi", metric="pi_soft_nc", rows="dataset", groups="none", columns="method")
    table = build_table(TableSpec(**layout, average=True), results)
    assert table.rows == ["sst2", "Avg"]
    assert [column for _, column, _ in table.columns] == ["normxlogit", "random", "grad_ellm"]
    assert table.values[("sst2", 2)] == "N/A"
    ranks = table.ranks()
    assert sorted(ranks[("sst2", i)] for i in (0, 1)) == [1, 2]
    markdown = table.to_markdown()
    assert markdown.splitlines()[2].startswith("| dataset | normxlogit (pi_soft_nc ↑)")
    assert "| Avg |" in markdown
    # a paper's number for the nearest setting goes beside ours, keyed by dataset here
    spec = TableSpec(**layout, paper={"sst2": {"random": 0.549}}, paper_note="LLaMA-3.1-8B")
    table = build_table(spec, results)
    ours = table.values[("sst2", 1)]
    assert f"{ours:.3f}** (0.549)" in table.to_markdown() or f"{ours:.3f}</u> (0.549)" in (
        table.to_markdown()
    )
    assert "nearest setting: LLaMA-3.1-8B" in table.to_markdown()
    assert "{\\scriptsize (0.549)}" in table.to_latex()


def test_a_table_shows_each_numbers_standard_error_over_instances(tmp_path, sentiment_model):
    from normxlogit.bench.spec import TableSpec

    config = load_config(write_config(tmp_path, sentiment_model, limit=4))
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_bench(config, store)
        results = experiment_results(config, store)
        values = export_frame(store)
    layout = dict(title="pi", metric="pi_soft_nc", rows="dataset", groups="none", columns="method")
    table = build_table(TableSpec(**layout, standard_error=True), results)
    # by hand from the stored values: each review's AUC over pi, then std / sqrt(n)
    mine = values[(values["method"] == "random") & (values["metric"] == "pi_soft_nc")]
    trapezoid = getattr(np, "trapezoid", None) or np.trapz
    areas = [
        trapezoid(rows.sort_values("x")["value"], rows.sort_values("x")["x"])
        for _, rows in mine.groupby("instance")
    ]
    # a review whose metric is undefined (NaN at every pi) counts in neither number
    areas = np.array([area for area in areas if np.isfinite(area)])
    assert len(areas) >= 2
    error = np.std(areas, ddof=1) / np.sqrt(len(areas))
    assert table.values[("sst2", 1)] == pytest.approx(np.mean(areas))
    assert table.errors[("sst2", 1)] == pytest.approx(error)
    markdown = table.to_markdown()
    assert f"{np.mean(areas):.3f}" in markdown and f"± {error:.3f}" in markdown
    assert "±: the standard error over the instances." in markdown
    assert "| N/A |" in markdown  # grad_ellm does not apply: no spread either
    assert "$\\pm$" in table.to_latex()
    cells = table.to_dict()["rows"][0]["cells"]
    assert cells[1]["standard_error"] == pytest.approx(table.errors[("sst2", 1)])
    assert cells[2]["standard_error"] is None
    assert "±" not in build_table(TableSpec(**layout), results).to_markdown()


def test_a_report_compares_every_method_with_one_instance_by_instance(tmp_path, sentiment_model):
    from normxlogit.bench.report import paired_table

    config = load_config(write_config(tmp_path, sentiment_model, limit=4))
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_bench(config, store)
        (result,) = experiment_results(config, store)
        values = export_frame(store)
        with pytest.raises(InvalidInputError, match="--versus 'nope' is no method of this"):
            write_report(config, store, tmp_path / "none", versus="nope")
        assert not (tmp_path / "none").exists()  # refused before anything is written
        written = write_report(config, store, tmp_path / "report", versus="random")
    # by hand: each review's comp_cd AOPC, normxlogit minus random, on the same reviews
    aopc = (
        values[values["metric"] == "comp_cd"]
        .groupby(["method", "instance"])["value"]
        .mean()
        .unstack("method")
    )
    differences = (aopc["normxlogit"] - aopc["random"]).dropna().to_numpy()
    error = differences.std(ddof=1) / np.sqrt(len(differences))
    paired = result.paired_differences("random").set_index(["method", "metric"])
    assert paired.loc[("normxlogit", "comp_cd"), "difference"] == pytest.approx(differences.mean())
    assert paired.loc[("normxlogit", "comp_cd"), "standard_error"] == pytest.approx(error)
    markdown = written[0].read_text()
    assert "each method minus random, paired over instances" in markdown
    assert f"| normxlogit | {differences.mean():.3f} ± {error:.3f}" in markdown
    assert "a paired t-test tells it from zero" in markdown
    assert "| grad_ellm |" not in paired_table(result, "random")  # N/A: nothing to pair


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


def test_cells_of_an_unfinished_run_are_marked(tmp_path, sentiment_model):
    """A table made while a run is still going says which numbers cover part of the data."""
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_bench(load_config(write_config(tmp_path, sentiment_model, limit=4)), store)
        bigger = load_config(write_config(tmp_path, sentiment_model, limit=8))
        plan(bigger, store)  # what a run that was killed would have planned (and recorded)
        table = build_table(_comp_cd_table(), experiment_results(bigger, store))
    assert set(table.partial.values()) == {(4, 8)}
    markdown = table.to_markdown()
    assert "†" in markdown
    # the note names each partial cell by its row and its column, as the header spells it
    column = table.columns[0][0] + " · " + table.columns[0][1]
    assert f"normxlogit / {column} 4/8" in markdown and f"random / {column} 4/8" in markdown


def test_a_method_keeps_its_colour_in_every_panel():
    from normxlogit.bench.plots import method_colours

    colours = method_colours(["Random", "IG", "DecompX", "IG", "NormXLogit"])
    assert list(colours) == ["Random", "IG", "DecompX", "NormXLogit"]
    assert len(set(colours.values())) == 4
    # a panel without DecompX (N/A there) still draws NormXLogit in NormXLogit's colour
    assert (
        method_colours(["Random", "IG", "DecompX", "NormXLogit"])["NormXLogit"]
        == colours["NormXLogit"]
    )


# ---------------------------------------------------------------- generation experiments
@pytest.fixture(scope="module")
def decoder_model(tmp_path_factory) -> Path:
    from .conftest import build_model

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


def test_summary_and_distribution_figures(tmp_path, sentiment_model):
    path = write_config(tmp_path, sentiment_model, methods='["normxlogit", "random"]', limit=4)
    path.write_text(
        path.read_text()
        + """
[[plots]]
kind = "summary"
metric = "pi_soft_nc"
name = "sweep"

[[plots]]
kind = "distribution"
name = "values"
"""
    )
    config = load_config(path)
    with ResultStore(tmp_path / "results.sqlite") as store:
        run_bench(config, store)
        from normxlogit.bench.report import attribution_values

        values = attribution_values(config, store)
        written = write_report(config, store, tmp_path / "report")
    (experiment,) = values
    assert set(values[experiment]) == {"normxlogit", "random"}
    for scores in values[experiment].values():
        assert len(scores) > 0 and min(scores) == 0.0 and max(scores) == 1.0
    names = {p.name for p in written}
    assert {"sweep.png", "values.png"} <= names
    from PIL import Image

    for name in ("sweep.png", "values.png"):
        assert Image.open(tmp_path / "report" / name).size[0] > 300


def test_common_compares_started_methods_on_the_same_instances(tmp_path, sentiment_model):
    both = '["normxlogit", "random"]'
    with ResultStore(tmp_path / "results.sqlite") as store:
        run_bench(
            load_config(write_config(tmp_path, sentiment_model, methods=both, limit=2)), store
        )
        one = write_config(tmp_path, sentiment_model, methods='["normxlogit"]', limit=5)
        run_bench(load_config(one), store)
        config = load_config(
            write_config(tmp_path, sentiment_model, methods='["normxlogit", "random", "lime"]')
        )
        (results,) = experiment_results(config, store)
        shared = results.common()
        written = write_report(config, store, tmp_path / "report", common=True)
    assert results.done("normxlogit", "comp_cd") == 5 and results.done("random", "comp_cd") == 2
    assert sorted(shared.frame["instance"].unique()) == [0, 1]  # lime not started: left out
    assert shared.total == 2
    assert "same instances" in written[0].read_text()
