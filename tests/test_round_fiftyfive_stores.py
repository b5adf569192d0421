"""Round fifty-five of probes (prober B: bench, page, files on disk): a file refused as no
store is left as it was (no switch to the write-ahead log), every key that takes one
value is advised one value beside [[tables]] of it, a link loop as the default store is
named before an unpack into it, and a link through a folder link to nowhere is advised a
``mkdir -p`` that works."""

from __future__ import annotations

import hashlib
import lzma
import os
import sqlite3

import pytest

from .conftest import invoke_in
from .test_round_fiftyfour_bench import _grid


def _said(result) -> str:
    return " ".join(result.output.split())


def _stored_grid(folder, model) -> None:
    """g.toml and its store g.sqlite, from a real run."""
    _grid(folder, model)
    result = invoke_in(folder, "bench", "run", "g.toml")
    assert result.exit_code == 0, result.output


def _digest(path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _journal_mode(path) -> str:
    connection = sqlite3.connect(path)
    try:
        return connection.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        connection.close()


# ------------------------------------------------------------------ 3
def _other_database(path, schema_version: str | None = None) -> None:
    """An SQLite file of someone else's tables (or, with ``schema_version``, a store of
    another normxlogit's schema) in the rollback-journal mode SQLite starts with."""
    connection = sqlite3.connect(path)
    if schema_version is None:
        connection.execute("CREATE TABLE t (x)")
        connection.execute("INSERT INTO t VALUES (1)")
    else:
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        connection.execute("INSERT INTO meta VALUES ('schema_version', ?)", (schema_version,))
    connection.commit()
    connection.close()


@pytest.mark.parametrize(
    "args",
    [
        ("bench", "status", "g.toml", "--store", "other.sqlite"),
        ("bench", "report", "g.toml", "--store", "other.sqlite", "--output", "rep"),
        ("bench", "export", "--store", "other.sqlite", "-o", "v.csv"),
        ("bench", "merge", "other.sqlite", "--into", "m.sqlite"),
        ("bench", "merge", "g.sqlite", "--into", "other.sqlite"),
        ("bench", "run", "g.toml", "--store", "other.sqlite"),
    ],
    ids=["status", "report", "export", "merge-source", "merge-into", "run"],
)
@pytest.mark.parametrize("version", [None, "0", "1"], ids=["tables", "schema", "meta-only"])
def test_a_refused_sqlite_file_is_left_unchanged(tmp_path, tiny_classifier, args, version):
    """Other tables, another schema's store, or a meta table and no other (this schema's
    version): refused, and the file left as it was."""
    _stored_grid(tmp_path, tiny_classifier)
    other = tmp_path / "other.sqlite"
    _other_database(other, version)
    before = _digest(other)
    result = invoke_in(tmp_path, *args)
    said = _said(result)
    assert result.exit_code != 0, said
    assert "not a normxlogit results store" in said, said
    assert _digest(other) == before, said
    assert _journal_mode(other) == "delete"
    assert not (tmp_path / "other.sqlite-wal").exists()


def test_the_sqlite_file_beside_a_compressed_run_store_is_left_unchanged(tmp_path, tiny_classifier):
    _stored_grid(tmp_path, tiny_classifier)
    (tmp_path / "h.sqlite.xz").write_bytes(lzma.compress((tmp_path / "g.sqlite").read_bytes()))
    _other_database(tmp_path / "h.sqlite")
    before = _digest(tmp_path / "h.sqlite")
    result = invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "h.sqlite.xz")
    said = _said(result)
    assert result.exit_code != 0 and "h.sqlite beside it is not a results store" in said, said
    assert _digest(tmp_path / "h.sqlite") == before
    assert _journal_mode(tmp_path / "h.sqlite") == "delete"


def test_the_page_and_the_api_leave_a_refused_sqlite_file_unchanged(
    tmp_path, tiny_classifier, monkeypatch
):
    from normxlogit.bench import ResultStore
    from normxlogit.common.errors import NormXLogitError
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    _stored_grid(tmp_path, tiny_classifier)
    other = tmp_path / "other.sqlite"
    _other_database(other)
    before = _digest(other)
    monkeypatch.chdir(tmp_path)
    for create in (False, True):
        with pytest.raises(NormXLogitError, match="not a normxlogit results store"):
            ResultStore(other, create=create)
    with pytest.raises(NormXLogitError, match="not a normxlogit results store"):
        BenchBrowser([BenchEntry.parse("g.toml=other.sqlite")])
    assert _digest(other) == before
    assert _journal_mode(other) == "delete"


def test_a_store_is_still_opened_and_written(tmp_path, tiny_classifier):
    """Guard: a store (a rollback-journal copy, as ``xz -d`` gives) still opens, in the
    write-ahead log, and a run adds to it."""
    from normxlogit.bench import ResultStore

    _stored_grid(tmp_path, tiny_classifier)
    connection = sqlite3.connect(tmp_path / "g.sqlite")
    connection.execute("PRAGMA journal_mode=DELETE")
    connection.close()
    with ResultStore(tmp_path / "g.sqlite", create=False) as store:
        assert store.counts()["explanations"] == 2
    assert _journal_mode(tmp_path / "g.sqlite") == "wal"
    result = invoke_in(tmp_path, "bench", "status", "g.toml")
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------ 7
def _sections():
    """(section, key) for every key a config takes one value of, from the config's schema."""
    from normxlogit.bench.config import (
        CONFIG_KEYS,
        EXPERIMENT_KEYS,
        METHOD_KEYS,
        PLOT_KEYS,
        TABLE_KEYS,
        TOP_KEYS,
        one_value_keys,
    )

    keys = one_value_keys(CONFIG_KEYS)
    sections = {
        "top": TOP_KEYS,
        "experiments": EXPERIMENT_KEYS,
        "methods": METHOD_KEYS,
        "tables": TABLE_KEYS,
        "plots": PLOT_KEYS,
    }
    return sorted((section, key) for section, have in sections.items() for key in keys & have)


_ONE_VALUE = _sections()


def _config_text(
    model, section: str, text: str, method: str = "gradient_x_input", top: str = ""
) -> str:
    """A config with ``text`` in ``section`` (a method that takes a preset), ``top``
    before it all."""
    parts = {name: "" for name in ("top", "methods", "experiments", "tables", "plots")}
    parts[section] = text
    parts["top"] = top + parts["top"]
    return (
        'seeds = [0]\nmetrics = ["comp_cd"]\n'
        + parts["top"]
        + f'[[methods]]\nname = "{method}"\n'
        + parts["methods"]
        + f'[[experiments]]\nmodel = "{model}"\ndataset = "d.tsv"\n'
        + parts["experiments"]
        + '[[tables]]\nmetric = "comp_cd"\n'
        + parts["tables"]
        + '[[plots]]\nmetric = "comp_cd"\n'
        + parts["plots"]
    )


#: keys a classifier's experiment refuses whatever their value (they set generation)
_GENERATION_ONLY = {"max_new_tokens", "evaluate_every"}


@pytest.mark.parametrize(
    ("section", "key"), _ONE_VALUE, ids=[f"{section}-{key}" for section, key in _ONE_VALUE]
)
def test_every_one_value_key_beside_tables_is_advised_one_value(
    tmp_path, tiny_classifier, section, key
):
    from normxlogit.bench import load_config
    from normxlogit.bench.config import one_value_example
    from normxlogit.common.errors import InvalidFileError, NormXLogitError

    _grid(tmp_path, tiny_classifier)
    dotted = key if section == "top" else f"{section}.{key}"
    example = one_value_example(key)
    broken = f"{key} = [{example.split(' = ', 1)[1]}]\n[[{dotted}]]\nx = 1\n"
    (tmp_path / "c.toml").write_text(_config_text(tiny_classifier, section, broken))
    with pytest.raises(InvalidFileError) as caught:
        load_config(tmp_path / "c.toml")
    message = " ".join(str(caught.value).split())
    assert f"takes one value: write it once, as {example}" in message, message
    assert "give them all in the list" not in message, message
    assert " = ..." not in example, example  # every one-value key has an example
    # the advised fix is taken (with what the key goes with: segments, a layered method)
    top = 'segments = "sentences"\n' if key == "segment_reduce" else ""
    method = "l2_norm" if key == "layer" else "gradient_x_input"
    fixed = _config_text(tiny_classifier, section, f"{example}\n", method, top)
    (tmp_path / "c.toml").write_text(fixed)
    if key in _GENERATION_ONLY:
        with pytest.raises(NormXLogitError, match="generat"):
            load_config(tmp_path / "c.toml")
        return
    load_config(tmp_path / "c.toml")


def test_a_queue_deadline_beside_tables_is_advised_one_value(tmp_path, tiny_classifier):
    from normxlogit.bench.queue import load_queue
    from normxlogit.common.errors import InvalidFileError

    _grid(tmp_path, tiny_classifier)
    entry = '[[entries]]\nname = "one"\nconfig = "g.toml"\nstore = "g.sqlite.xz"\n'
    (tmp_path / "q.toml").write_text('title = "q"\ndeadline = [540]\n[[deadline]]\nx = 1\n')
    with pytest.raises(InvalidFileError) as caught:
        load_queue(tmp_path / "q.toml")
    message = str(caught.value)
    assert "takes one value: write it once, as deadline = 540" in message, message
    assert "the config" not in message, message
    (tmp_path / "q.toml").write_text(f'title = "q"\ndeadline = 540\n{entry}')
    assert load_queue(tmp_path / "q.toml").deadline == 540
    # a key a queue does not have is named as the queue's
    (tmp_path / "q.toml").write_text('title = "q"\nnotes = [1]\n[[notes]]\nx = 1\n')
    with pytest.raises(InvalidFileError) as caught:
        load_queue(tmp_path / "q.toml")
    assert "no table the queue has" in str(caught.value), caught.value


# ------------------------------------------------------------------ 8
@pytest.mark.parametrize("packed", [True, False], ids=["xz-beside", "alone"])
def test_a_link_loop_as_the_default_store_is_named_first(tmp_path, tiny_classifier, packed):
    _stored_grid(tmp_path, tiny_classifier)
    store = tmp_path / "g.sqlite"
    if packed:
        (tmp_path / "g.sqlite.xz").write_bytes(lzma.compress(store.read_bytes()))
    store.unlink()
    os.symlink("lp", store)
    os.symlink("g.sqlite", tmp_path / "lp")
    result = invoke_in(tmp_path, "bench", "run", "g.toml")
    said = _said(result)
    assert result.exit_code != 0, said
    assert "the config's default store g.sqlite is a link loop" in said, said
    assert "rm g.sqlite" in said, said
    # the advice works: the link removed, the unpack named next (or a run starts afresh)
    store.unlink()
    if packed:
        assert "bench merge g.sqlite.xz --into g.sqlite" in said, said
        merged = invoke_in(tmp_path, "bench", "merge", "g.sqlite.xz", "--into", "g.sqlite")
        assert merged.exit_code == 0, merged.output
    result = invoke_in(tmp_path, "bench", "run", "g.toml")
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------ 9
@pytest.mark.parametrize(
    "args",
    [
        ("bench", "export", "--store", "g.sqlite", "-o", "out/v.csv"),
        ("bench", "merge", "g.sqlite", "--into", "out/m.sqlite"),
        ("bench", "run", "g.toml", "--store", "out/s.sqlite"),
    ],
    ids=["export", "merge-into", "run-store"],
)
def test_a_link_through_a_folder_link_to_nowhere_is_advised_a_mkdir_that_works(
    tmp_path, tiny_classifier, args
):
    _stored_grid(tmp_path, tiny_classifier)
    os.symlink("nowhere", tmp_path / "dd")
    os.symlink("dd/x", tmp_path / "out")
    result = invoke_in(tmp_path, *args)
    said = _said(result)
    assert result.exit_code != 0, said
    assert "mkdir -p nowhere/x" in said, said
    assert "mkdir -p dd/x" not in said, said
    (tmp_path / "nowhere" / "x").mkdir(parents=True)  # the advised mkdir -p
    result = invoke_in(tmp_path, *args)
    assert result.exit_code == 0, result.output
