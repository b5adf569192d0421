"""The resumable results store: whole units only, kill and resume, concurrent runs, merge,
export."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

import numpy as np
import pandas as pd
import pytest

from normxlogit.bench import ResultStore, load_config, plan, run_bench
from normxlogit.bench.results import export_frame
from normxlogit.common.errors import InvalidFileError

from .helpers import CLI, stored, table_counts, write_config


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


# ------------------------------------------------------------------------- export


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


def test_a_store_opened_while_another_connection_switches_it_waits(tmp_path):
    """A rollback-journal store (a decompressed copy, a store from ``xz -d``) opened by
    several page requests at once: SQLite answers "database is locked" at once, without its
    busy timeout, to the one whose switch to the write-ahead log meets another's lock."""
    import threading

    path = tmp_path / "plain.sqlite"
    ResultStore(path).close()
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA journal_mode=DELETE")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # what another opener's switch holds for a moment
    opened = []

    def open_store():
        try:
            with ResultStore(path, create=False) as store:
                opened.append(store._conn.execute("PRAGMA journal_mode").fetchone()[0])
        except Exception as error:  # noqa: BLE001 - asserted below
            opened.append(error)

    thread = threading.Thread(target=open_store)
    thread.start()
    time.sleep(0.3)
    holder.execute("COMMIT")
    holder.close()
    thread.join()
    assert opened == ["wal"]
