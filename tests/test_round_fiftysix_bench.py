"""Round fifty-six of probes (prober B: bench, page, files on disk): a tar archive's
extraction advice looks at every member it holds, a store's schema version that is no
whole number refused in one line, a refused SQLite file left without -wal/-shm files, the
queue's store-by-content advice only for a results store, and a link at the plain name
beside a compressed store named, a free name advised."""

from __future__ import annotations

import gzip
import io
import lzma
import os
import sqlite3
import subprocess
import tarfile
from pathlib import Path

import pytest

from .bench.helpers import run_cli
from .test_round_fiftyfive_bench import _queue_refusal, _said
from .test_round_fiftyfive_stores import _stored_grid


@pytest.fixture
def stored(tmp_path, tiny_classifier):
    """A folder with g.toml and its store g.sqlite from a real run."""
    _stored_grid(tmp_path, tiny_classifier)
    return tmp_path


def _store_as_three_ways(name: str) -> list[tuple[str, ...]]:
    """``name`` given as a store to read, a merge source and a merge target."""
    return [
        ("bench", "status", "g.toml", "--store", name),
        ("bench", "merge", name, "--into", "n.sqlite"),
        ("bench", "merge", "g.sqlite", "--into", name),
    ]


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# ------------------------------------------------------------------ 1
def _tar(folder: Path, name: str, members: list[tuple[str, Path | None]]) -> None:
    """``folder/name``: a gzip tar archive of ``members`` (arcname, file; None: a folder)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        for arcname, source in members:
            if source is None:
                info = tarfile.TarInfo(arcname)
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                archive.addfile(info)
            else:
                archive.add(source, arcname=arcname)
    (folder / name).write_bytes(gzip.compress(raw.getvalue()))


def _advised_extraction(said: str) -> str:
    start = said.index("extract it (") + len("extract it (")
    return said[start : said.index(", which gives", start)]


@pytest.mark.parametrize(
    "layout",
    ["folder-first", "later-member"],
    ids=["folder-first", "later-member"],
)
def test_a_tar_archive_with_any_member_there_is_extracted_into_a_new_folder(stored, layout):
    other = stored / "other"
    other.mkdir()
    (other / "g.sqlite").write_bytes((stored / "g.sqlite").read_bytes())
    (other / "new.sqlite").write_bytes((stored / "g.sqlite").read_bytes())
    if layout == "folder-first":  # tar czf a.sqlite.gz -C other .
        members = [("./", None), ("./g.sqlite", other / "g.sqlite")]
    else:  # tar czf a.sqlite.gz -C other new.sqlite g.sqlite
        members = [("new.sqlite", other / "new.sqlite"), ("g.sqlite", other / "g.sqlite")]
    _tar(stored, "a.sqlite.gz", members)
    (stored / "g.sqlite").write_text("my other store\n")  # what the extraction must keep
    ran = run_cli("bench", "export", "--store", "a.sqlite.gz", "-o", "o.csv", cwd=stored)
    said = _said(ran)
    assert ran.returncode != 0, said
    assert "(mkdir a-unpacked && tar xzf a.sqlite.gz -C a-unpacked, which gives" in said, said
    # the advised extraction overwrites nothing, and gives a store that reads
    command = _advised_extraction(said)
    subprocess.run(command, shell=True, cwd=stored, check=True)
    assert (stored / "g.sqlite").read_text() == "my other store\n"
    ran = run_cli("bench", "status", "g.toml", "--store", "a-unpacked/g.sqlite", cwd=stored)
    assert ran.returncode == 0, _said(ran)


def test_a_tar_archive_whose_members_are_all_new_is_extracted_in_place(stored):
    other = stored / "other"
    other.mkdir()
    (other / "new.sqlite").write_bytes((stored / "g.sqlite").read_bytes())
    _tar(stored, "a.sqlite.gz", [("./", None), ("./new.sqlite", other / "new.sqlite")])
    ran = run_cli("bench", "export", "--store", "a.sqlite.gz", "-o", "o.csv", cwd=stored)
    said = _said(ran)
    assert "extract it (tar xzf a.sqlite.gz, which gives new.sqlite)" in said, said


# ------------------------------------------------------------------ 2
def _odd_version(path: Path, value) -> None:
    conn = sqlite3.connect(path)
    conn.execute("create table meta(key text primary key, value text)")
    conn.execute("insert into meta values ('schema_version', ?)", (value,))
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    ("value", "shown"), [("abc", "'abc'"), (None, "NULL")], ids=["text", "null"]
)
@pytest.mark.parametrize(
    "args",
    _store_as_three_ways("v.sqlite"),
    ids=["status", "source", "into"],
)
def test_a_schema_version_that_is_no_number_is_refused_in_one_line(stored, value, shown, args):
    _odd_version(stored / "v.sqlite", value)
    ran = run_cli(*args, cwd=stored)
    said = _said(ran)
    assert ran.returncode != 0, said
    assert "Traceback" not in said and "ValueError" not in said, said
    assert (
        f"v.sqlite is not a normxlogit results store (schema version {shown}, this "
        "normxlogit reads 1)" in said
    ), said
    assert not (stored / "n.sqlite").exists()


# ------------------------------------------------------------------ 3
def _wal_file(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("pragma journal_mode=wal")
    conn.execute("create table foo(x)")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("kind", ["other-tables", "part-store"], ids=["other-tables", "part"])
@pytest.mark.parametrize(
    "args",
    _store_as_three_ways("w.sqlite"),
    ids=["status", "source", "into"],
)
def test_a_refused_sqlite_file_leaves_its_folder_as_it_was(stored, kind, args):
    if kind == "other-tables":
        _wal_file(stored / "w.sqlite")
    else:  # a copy of a store (a write-ahead-log file) with a table dropped
        (stored / "w.sqlite").write_bytes((stored / "g.sqlite").read_bytes())
        conn = sqlite3.connect(stored / "w.sqlite")
        conn.execute("drop table evaluations")
        conn.commit()
        conn.close()
    assert not (stored / "w.sqlite-wal").exists()
    before = _listing(stored)
    ran = run_cli(*args, cwd=stored)
    said = _said(ran)
    assert ran.returncode != 0, said
    assert "w.sqlite is not a normxlogit results store" in said, said
    assert _listing(stored) == before


def test_a_store_is_still_read_where_its_write_ahead_log_is_there(stored):
    conn = sqlite3.connect(stored / "g.sqlite")  # an open connection: the run's, say
    conn.execute("pragma journal_mode=wal")
    conn.execute("select count(*) from meta").fetchone()
    try:
        ran = run_cli("bench", "status", "g.toml", "--store", "g.sqlite", cwd=stored)
        assert ran.returncode == 0, _said(ran)
    finally:
        conn.close()


# ------------------------------------------------------------------ 4
@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("o.sqlite.xz", "other-tables", "it is a plain SQLite file; it holds other tables"),
        ("o.sqlite", "other-tables", "it is a plain SQLite file; it holds other tables"),
        ("t.sqlite.gz", "text", "it is gzip-compressed; its gzip data is no SQLite file"),
        ("t.sqlite.xz", "text", "it is gzip-compressed; its gzip data is no SQLite file"),
    ],
    ids=["plain-as-xz", "plain", "gz-text", "gz-text-as-xz"],
)
def test_a_queue_store_holding_no_results_store_is_not_advised_a_merge(
    stored, monkeypatch, name, content, why
):
    monkeypatch.chdir(stored)
    if content == "other-tables":
        _wal_file(stored / name)
    else:
        (stored / name).write_bytes(gzip.compress(b"hello\n"))
    (stored / "q.toml").write_text("")  # written by _queue_refusal
    before = _listing(stored)
    message = _queue_refusal(stored, name)
    assert f"store = {name!r} holds no results store ({why})" in message, message
    assert "bench merge" not in message, message
    assert message.endswith("name another store, or move this file away"), message
    before.pop("q.toml")
    after = _listing(stored)
    after.pop("q.toml")
    assert after == before


# ------------------------------------------------------------------ 5
@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("p.sqlite", "p.sqlite beside it is a link loop (its target p.sqlite leads back"),
        ("nowhere", "p.sqlite beside it is a link to nowhere (its target nowhere does not"),
        (None, "p.sqlite beside it is an empty file"),
    ],
    ids=["loop", "dangling", "empty"],
)
def test_a_link_or_empty_file_beside_a_compressed_store_is_named_and_a_free_name_advised(
    stored, target, said
):
    (stored / "p.sqlite.xz").write_bytes(lzma.compress((stored / "g.sqlite").read_bytes()))
    if target is None:
        (stored / "p.sqlite").write_bytes(b"")
    else:
        os.symlink(target, stored / "p.sqlite")
    ran = run_cli("bench", "run", "g.toml", "--store", "p.sqlite.xz", cwd=stored)
    message = _said(ran)
    assert ran.returncode != 0, message
    assert said in message, message
    assert "(normxlogit bench merge p.sqlite.xz --into plain-p.sqlite)" in message, message
    assert "--into p.sqlite)" not in message, message
    # the page's "not computed yet" advice is the same plan
    from normxlogit.bench.store import unpack_plan

    plan = unpack_plan(stored / "p.sqlite.xz")
    assert plan.fresh == stored / "plain-p.sqlite" and plan.beside is not None
    assert plan.beside != "a results store"
    # the advised unpack works
    ran = run_cli("bench", "merge", "p.sqlite.xz", "--into", "plain-p.sqlite", cwd=stored)
    assert ran.returncode == 0, _said(ran)
    ran = run_cli("bench", "status", "g.toml", "--store", "plain-p.sqlite", cwd=stored)
    assert ran.returncode == 0, _said(ran)


def test_a_results_store_beside_a_compressed_store_is_still_merged_into(stored):
    (stored / "p.sqlite.xz").write_bytes(lzma.compress((stored / "g.sqlite").read_bytes()))
    (stored / "p.sqlite").write_bytes((stored / "g.sqlite").read_bytes())
    ran = run_cli("bench", "run", "g.toml", "--store", "p.sqlite.xz", cwd=stored)
    message = _said(ran)
    assert "p.sqlite exists beside it: merge into that store" in message, message
