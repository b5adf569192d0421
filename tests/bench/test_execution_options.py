"""Execution options (IG's internal batch, rows or tokens per pass) stay out of the stored
cells' keys: a run with other passes fills the same cells, and stores written while they
were part of the keys resolve to the cells they belong to."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from normxlogit.bench import ResultStore, load_config, plan, run_bench
from normxlogit.bench.results import status_frame
from normxlogit.bench.spec import canonical
from normxlogit.common.errors import InvalidInputError, OutputPathError

from .helpers import run_cli, stored, table_counts, write_config

IG = (
    '[{name = "integrated_gradients", label = "IG", '
    "options = {steps = 2, internal_batch_size = 8}}]"
)
METHOD_TABLES = ("explanations", "evaluations", "skipped")


def ig_grid(folder: Path, model: Path, methods: str = IG) -> Path:
    return write_config(folder, model, methods=methods, metrics='["comp_cd"]', limit=3)


def outdated(key: str) -> str:
    """``key`` as normxlogit wrote it while execution options were part of it."""
    identity = json.loads(key)
    return canonical({**identity, "options": {**identity["options"], "internal_batch_size": 8}})


def method_keys(path: Path) -> set[str]:
    """The method keys a store holds, read with SQL of its own (as the GPU packer does)."""
    with sqlite3.connect(path) as conn:
        union = " UNION ".join(f"SELECT method FROM {table}" for table in METHOD_TABLES)
        return {row[0] for row in conn.execute(union)}


def write_outdated_keys(path: Path, key: str) -> None:
    with sqlite3.connect(path) as conn:
        for table in METHOD_TABLES:
            conn.execute(f"UPDATE {table} SET method=? WHERE method=?", (outdated(key), key))


def add_outdated_copies(path: Path, key: str) -> None:
    """Every result of ``key`` stored a second time under its outdated key."""
    columns = "model, dataset, instance, ?, seed, metric, protocol, seconds"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO explanations SELECT model, dataset, instance, ?, seed, tokens, "
            "seconds, batch, payload FROM explanations WHERE method=?",
            (outdated(key), key),
        )
        for (evaluation,) in conn.execute("SELECT id FROM evaluations WHERE method=?", (key,)):
            copy = conn.execute(
                "INSERT INTO evaluations (model, dataset, instance, method, seed, metric, "
                f"protocol, seconds) SELECT {columns} FROM evaluations WHERE id=?",
                (outdated(key), evaluation),
            ).lastrowid
            conn.execute(
                "INSERT INTO metric_values SELECT ?, axis, x, value, gold FROM metric_values "
                "WHERE evaluation=?",
                (copy, evaluation),
            )


@pytest.fixture(scope="module")
def filled(tmp_path_factory, sentiment_model) -> tuple[Path, Path, str]:
    """A config with pi-Soft's internal batch for IG, a store it filled, and IG's key."""
    folder = tmp_path_factory.mktemp("filled")
    config_path = ig_grid(folder, sentiment_model)
    config = load_config(config_path)
    with ResultStore(folder / "results.sqlite") as store:
        run_bench(config, store)
    return config_path, folder / "results.sqlite", config.experiments[0].methods[0].key


def copy_of(store: Path, folder: Path, name: str = "copy.sqlite") -> Path:
    target = folder / name
    target.write_bytes(store.read_bytes())
    return target


def test_the_key_of_a_method_leaves_its_internal_batch_out(filled):
    _, store, key = filled
    assert "internal_batch_size" not in key and '"steps":2' in key
    assert method_keys(store) == {key}


def test_a_store_with_execution_options_in_its_keys_resolves_to_the_cells(tmp_path, filled):
    config_path, store, key = filled
    old = copy_of(store, tmp_path)
    write_outdated_keys(old, key)
    assert method_keys(old) == {outdated(key)}
    with ResultStore(old, create=False) as results:  # bench status opens it so
        frame = status_frame(load_config(config_path), results)
    assert frame[["done", "state"]].values.tolist() == [[3, "done"]]
    assert method_keys(old) == {key}  # moved for good, for SQL of its own too
    assert table_counts(old) == table_counts(store)
    pd.testing.assert_frame_equal(stored(old), stored(store))
    with ResultStore(old) as results:
        (cell,) = plan(load_config(config_path), results)
    assert cell.done == 3 and not cell.units


def test_a_result_held_under_both_keys_is_kept_once(tmp_path, filled):
    _, store, key = filled
    both = copy_of(store, tmp_path)
    add_outdated_copies(both, key)
    with sqlite3.connect(both) as conn:  # read as it is: opening it would move the keys
        assert conn.execute("SELECT COUNT(*) FROM explanations").fetchone()[0] == 2 * 3
    ResultStore(both).close()
    assert method_keys(both) == {key}
    assert table_counts(both) == table_counts(store)
    pd.testing.assert_frame_equal(stored(both), stored(store))


def test_two_processes_opening_an_outdated_store_together_both_succeed(tmp_path, filled):
    _, store, key = filled
    old = copy_of(store, tmp_path)
    write_outdated_keys(old, key)
    opening = f"from normxlogit.bench import ResultStore; ResultStore({str(old)!r}).close()"
    processes = [
        subprocess.Popen([sys.executable, "-c", opening], stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
    assert method_keys(old) == {key}
    assert table_counts(old) == table_counts(store)


def test_merging_a_store_with_outdated_keys_adds_nothing_twice(tmp_path, filled):
    config_path, store, key = filled
    old = copy_of(store, tmp_path, "old.sqlite")
    write_outdated_keys(old, key)
    with ResultStore(copy_of(store, tmp_path, "main.sqlite")) as main:
        added = main.merge_from(old)
    assert added == dict.fromkeys(added, 0)
    assert method_keys(old) == {outdated(key)}  # a merge source is read as it is
    with ResultStore(tmp_path / "fresh.sqlite") as fresh:
        fresh.merge_from(old)
        (cell,) = plan(load_config(config_path), fresh)
    assert cell.done == 3 and not cell.units
    assert method_keys(tmp_path / "fresh.sqlite") == {key}


def test_an_outdated_store_that_cannot_be_written_is_one_error(tmp_path, filled, monkeypatch):
    import normxlogit.bench.store as store_module

    _, store, key = filled
    old = copy_of(store, tmp_path)
    write_outdated_keys(old, key)

    def read_only(conn, renamed):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(store_module, "_rename_method_keys", read_only)
    with pytest.raises(OutputPathError, match="method keys of an earlier normxlogit") as caught:
        ResultStore(old, create=False)
    assert "\n" not in str(caught.value)
    assert method_keys(old) == {outdated(key)}


def test_a_run_with_other_execution_options_fills_the_same_cells(tmp_path, filled):
    """The runner hands a run's execution options to the method (its explanations record
    them), and the cells are the config's: a run with other passes computes nothing."""
    config_path, store, key = filled
    config = load_config(config_path)
    with ResultStore(tmp_path / "three.sqlite") as results:
        run_bench(config.with_execution({"internal_batch_size": "3"}), results)
        payload = results.explanations(plan(config, results)[0].key, [0])[0]
        assert payload["settings"]["internal_batch_size"] == 3
        tokens = {"integrated_gradients.internal_batch_size": "none", "tokens_per_pass": "64"}
        assert run_bench(config.with_execution(tokens), results).units == 0
    assert method_keys(tmp_path / "three.sqlite") == {key}
    three, eight = stored(tmp_path / "three.sqlite"), stored(store)
    pd.testing.assert_frame_equal(three.drop(columns="value"), eight.drop(columns="value"))
    pd.testing.assert_series_equal(three["value"], eight["value"], rtol=1e-5, atol=1e-6)


def test_execution_options_a_grid_lacks_are_refused_in_one_line(filled):
    config = load_config(filled[0])
    for settings, pattern in (
        ({"steps": "4"}, "'steps' is no execution option.*integrated_gradients.tokens_per_pass"),
        ({"value_zeroing.batch_size": "4"}, "no execution option"),
        ({"internal_batch_size": "0"}, "internal_batch_size=0 must be at least 1"),
        ({"tokens_per_pass": "0"}, "tokens_per_pass=0 must be at least 1"),
    ):
        with pytest.raises(InvalidInputError, match=pattern) as caught:
            config.with_execution(settings)
        assert "\n" not in str(caught.value)
    assert config.with_execution({}) is config


def test_methods_differing_only_in_execution_options_are_refused(tmp_path, sentiment_model):
    methods = IG.replace(
        "}}]",
        '}}, {name = "integrated_gradients", label = "IG-32", '
        "options = {steps = 2, internal_batch_size = 32}}]",
    )
    with pytest.raises(InvalidInputError, match="methods IG and IG-32 compute the same results"):
        load_config(ig_grid(tmp_path, sentiment_model, methods))


def test_cli_run_takes_execution_options(tmp_path, filled):
    config_path, store, _ = filled
    copy = copy_of(store, tmp_path)
    ran = run_cli(
        "bench",
        str(config_path),
        "--store",
        str(copy),
        "--execution-option",
        "internal_batch_size=4",
    )
    assert ran.returncode == 0, ran.stderr
    assert "stored 0 unit(s)" in ran.stderr
    wrong = run_cli("bench", str(config_path), "--store", str(copy), "--execution-option", "steps")
    assert wrong.returncode == 2 and "write [METHOD.]OPTION=VALUE" in wrong.stderr
    assert "Traceback" not in wrong.stderr
