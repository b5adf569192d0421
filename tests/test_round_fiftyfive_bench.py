"""Round fifty-five of probes (prober B: bench, page, files on disk): a ``.tar.gz`` store
advised a free name, a tar archive inside gzip said to be one (``tar xzf``), empty
compressed merge sources and serve stores named as such, the page's unpack advice as
``bench run``'s, and the GPU queue's store advice ending in a store that keeps its
results."""

from __future__ import annotations

import gzip
import io
import lzma
import tarfile
from pathlib import Path

import pytest

from .bench.helpers import run_cli
from .test_round_fiftyfour_bench import _grid


def _said(ran) -> str:
    return " ".join((ran.stdout + ran.stderr).split())


@pytest.fixture
def stored(tmp_path, tiny_classifier):
    """A folder with g.toml and its store g.sqlite from a real run."""
    _grid(tmp_path, tiny_classifier)
    ran = run_cli("bench", "run", "g.toml", cwd=tmp_path)
    assert ran.returncode == 0, _said(ran)
    return tmp_path


def _tar(folder, name: str, member: str = "g.sqlite", packing: str = "gz") -> None:
    """``folder/name``: a tar archive of ``folder/member``, compressed."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        archive.add(folder / member, arcname=member)
    pack = gzip.compress if packing == "gz" else lzma.compress
    (folder / name).write_bytes(pack(raw.getvalue()))


# ------------------------------------------------------------------ 1
@pytest.mark.parametrize(
    "args",
    [
        ("bench", "status", "g.toml", "--store", "g.tar.gz"),
        ("bench", "run", "g.toml", "--store", "g.tar.gz"),
    ],
    ids=["status", "run"],
)
def test_a_tar_gz_store_is_advised_a_free_name(stored, args):
    (stored / "g.tar.gz").write_bytes(gzip.compress((stored / "g.sqlite").read_bytes()))
    notes = gzip.compress(b"notes\n")
    (stored / "g.sqlite.gz").write_bytes(notes)  # an unrelated file under the advised name
    ran = run_cli(*args, cwd=stored)
    said = _said(ran)
    assert ran.returncode != 0, said
    assert "name it g-2.sqlite.gz (g.sqlite.gz is another file)" in said, said
    assert "name it g.sqlite.gz" not in said, said
    assert (stored / "g.sqlite.gz").read_bytes() == notes
    # the advised name reads
    (stored / "g.tar.gz").rename(stored / "g-2.sqlite.gz")
    ran = run_cli("bench", "status", "g.toml", "--store", "g-2.sqlite.gz", cwd=stored)
    assert ran.returncode == 0, _said(ran)


def test_a_tar_gz_store_is_advised_its_own_name_where_free(stored):
    (stored / "g.tar.gz").write_bytes(gzip.compress((stored / "g.sqlite").read_bytes()))
    ran = run_cli("bench", "status", "g.toml", "--store", "g.tar.gz", cwd=stored)
    assert ran.returncode != 0 and "; name it g.sqlite.gz" in _said(ran), _said(ran)


# ------------------------------------------------------------------ 2
@pytest.mark.parametrize(
    ("name", "packing", "args"),
    [
        ("g.tar.gz", "gz", ("bench", "status", "g.toml", "--store", "g.tar.gz")),
        ("g.tgz", "gz", ("bench", "export", "--store", "g.tgz", "-o", "v.csv")),
        ("g.tar.gz", "gz", ("bench", "run", "g.toml", "--store", "g.tar.gz")),
        ("g.sqlite.gz", "gz", ("bench", "status", "g.toml", "--store", "g.sqlite.gz")),
        ("g.sqlite.gz", "gz", ("bench", "merge", "g.sqlite.gz", "--into", "m.sqlite")),
        ("g.sqlite.xz", "xz", ("bench", "report", "g.toml", "--store", "g.sqlite.xz")),
        ("g.sqlite.gz", "gz", ("bench", "run", "g.toml")),
    ],
    ids=["status-tar-gz", "export-tgz", "run-tar-gz", "status-named", "merge", "xz", "beside"],
)
def test_a_tar_archive_is_said_to_be_one_and_extracted(stored, name, packing, args):
    _tar(stored, name, packing=packing)
    (stored / "g.sqlite").rename(stored / "kept.sqlite")
    ran = run_cli(*args, cwd=stored)
    said = _said(ran)
    assert ran.returncode != 0, said
    flag = "xzf" if packing == "gz" else "xJf"
    assert f"{name} is a tar archive ({packing.replace('gz', 'gzip')}-compressed)" in said, said
    assert f"extract it (tar {flag} {name}, which gives g.sqlite)" in said, said
    assert "rename" not in said and "name it" not in said, said
    # the advised extraction gives the store
    with tarfile.open(stored / name) as archive:
        archive.extractall(stored, filter="data")
    ran = run_cli("bench", "status", "g.toml", "--store", "g.sqlite", cwd=stored)
    assert ran.returncode == 0, _said(ran)


def test_a_tar_archive_whose_file_is_there_is_extracted_into_a_new_folder(stored):
    _tar(stored, "g.tar.gz")
    ran = run_cli("bench", "status", "g.toml", "--store", "g.tar.gz", cwd=stored)
    said = _said(ran)
    assert ran.returncode != 0, said
    assert (
        "extract it (mkdir g-unpacked && tar xzf g.tar.gz -C g-unpacked, which gives "
        "g-unpacked/g.sqlite)" in said
    ), said


def test_a_gzip_store_that_is_no_tar_is_still_read(stored):
    (stored / "g.sqlite.gz").write_bytes(gzip.compress((stored / "g.sqlite").read_bytes()))
    ran = run_cli("bench", "status", "g.toml", "--store", "g.sqlite.gz", cwd=stored)
    assert ran.returncode == 0, _said(ran)


# ------------------------------------------------------------------ 4
@pytest.mark.parametrize(
    "args",
    [
        ("bench", "merge", "e.sqlite.xz", "--into", "m.sqlite"),
        ("bench", "merge", "g.sqlite", "e.sqlite.gz", "--into", "m.sqlite"),
    ],
    ids=["xz", "gz-second"],
)
def test_an_empty_compressed_merge_source_is_named_a_source(stored, args):
    (stored / "e.sqlite.xz").write_bytes(b"")
    (stored / "e.sqlite.gz").write_bytes(b"")
    ran = run_cli(*args, cwd=stored)
    said = _said(ran)
    assert ran.returncode != 0, said
    assert "is an empty file, not a results store: pass another source" in said, said
    assert f"source {args[-3]} is an empty file" in said, said
    assert "--store" not in said, said
    assert not (stored / "m.sqlite").exists()


def test_an_empty_compressed_store_on_the_page_names_bench(stored):
    from normxlogit.common.errors import NormXLogitError
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    (stored / "e.sqlite.xz").write_bytes(b"")
    browser = BenchBrowser([BenchEntry.parse(f"{stored / 'g.toml'}={stored / 'e.sqlite.xz'}")])
    with pytest.raises(NormXLogitError) as caught:
        browser.check()  # as serve checks its stores at start
    message = str(caught.value)
    assert "\n" not in message
    assert "name another store as --bench CONFIG=STORE" in message, message
    assert "--store" not in message, message


# ------------------------------------------------------------------ 5
@pytest.mark.parametrize("beside", ["text", "store"], ids=["text", "store"])
def test_the_pages_unpack_advice_looks_at_the_file_beside(
    tmp_path, tiny_classifier, monkeypatch, beside
):
    from normxlogit.bench import ResultStore, load_config, run_bench
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    _grid(tmp_path, tiny_classifier, rows=3)
    config = load_config(tmp_path / "g.toml")
    with ResultStore(tmp_path / "run.sqlite") as store:
        run_bench(config, store, limit=2)
    packed = lzma.compress((tmp_path / "run.sqlite").read_bytes())
    (tmp_path / "s.sqlite.xz").write_bytes(packed)
    if beside == "text":
        (tmp_path / "s.sqlite").write_text("my notes\n")
    else:
        (tmp_path / "run.sqlite").rename(tmp_path / "s.sqlite")
    monkeypatch.chdir(tmp_path)
    browser = BenchBrowser([BenchEntry.parse("g.toml=s.sqlite.xz")])
    with pytest.raises(InvalidInputError) as caught:
        browser.explanation(0, config.experiments[0].name, "random", 2)
    message = " ".join(str(caught.value).split())
    assert "bench merge s.sqlite.xz --into plain-s.sqlite`" in message, message
    assert "serve --bench g.toml=plain-s.sqlite" in message, message
    if beside == "text":
        assert "s.sqlite beside it is not a results store" in message, message
        assert "--into s.sqlite`" not in message, message
        assert (tmp_path / "s.sqlite").read_text() == "my notes\n"
    else:
        assert "s.sqlite exists beside it" in message, message
        assert "adds its results to those there" in message, message
    # the advised unpack works
    ran = run_cli("bench", "merge", "s.sqlite.xz", "--into", "plain-s.sqlite", cwd=tmp_path)
    assert ran.returncode == 0, _said(ran)


# ------------------------------------------------------------------ 6
def _queue_refusal(folder, store: str) -> str:
    from normxlogit.bench.queue import load_queue
    from normxlogit.common.errors import InvalidFileError

    queue = folder / "q.toml"
    queue.write_text(
        f'deadline = 540\n[[entries]]\nname = "one"\nconfig = "g.toml"\nstore = "{store}"\n'
    )
    with pytest.raises(InvalidFileError) as caught:
        load_queue(Path("q.toml"))  # from the queue's folder: names as the user gives them
    message = " ".join(str(caught.value).split())
    assert message.startswith("q.toml, entry 1 (one)"), message
    return message


def _queue_takes(folder, store: str) -> None:
    from normxlogit.bench.queue import load_queue

    (folder / "q.toml").write_text(
        f'deadline = 540\n[[entries]]\nname = "one"\nconfig = "g.toml"\nstore = "{store}"\n'
    )
    load_queue(Path("q.toml"))


def _instances(path) -> int:
    from normxlogit.bench.archive import readable_store
    from normxlogit.bench.store import ResultStore

    with readable_store(path) as plain, ResultStore(plain, create=False) as store:
        return store.counts()["explanations"]


@pytest.mark.parametrize("name", [".SQLITE.xz", ".sqlite.xz"], ids=["upper", "lower"])
def test_a_queue_store_that_is_only_the_suffix_is_advised_a_name(stored, monkeypatch, name):
    monkeypatch.chdir(stored)
    (stored / name).write_bytes(lzma.compress((stored / "g.sqlite").read_bytes()))
    message = _queue_refusal(stored, name)
    assert "rename it to results.sqlite.xz" in message, message
    assert message.endswith('write store = "results.sqlite.xz"'), message
    assert ".sqlite-2.xz" not in message, message
    (stored / name).rename(stored / "results.sqlite.xz")
    _queue_takes(stored, "results.sqlite.xz")


@pytest.mark.parametrize(
    ("name", "packing", "renamed", "target"),
    [
        ("b.sqlite.xz", "plain", "b.sqlite", "b.sqlite.xz"),
        ("a.SQLITE.xz", "plain", "a.sqlite", "a.sqlite.xz"),
        ("c.sqlite.xz", "gz", "c.sqlite.gz", "c.sqlite.xz"),
        ("a.SQLITE.xz", "gz", "a.sqlite.gz", "a.sqlite.xz"),
        ("b.sqlite", "plain", None, "b.sqlite.xz"),
        ("e.sqlite.gz", "gz", None, "e.sqlite.xz"),
    ],
    ids=["plain-as-xz", "plain-as-upper", "gz-as-xz", "gz-as-upper", "plain", "gz"],
)
def test_a_queue_store_in_another_form_is_advised_into_one_that_keeps_its_results(
    stored, monkeypatch, name, packing, renamed, target
):
    monkeypatch.chdir(stored)
    raw = (stored / "g.sqlite").read_bytes()
    (stored / name).write_bytes(raw if packing == "plain" else gzip.compress(raw))
    kept = _instances(stored / "g.sqlite")
    assert kept
    message = _queue_refusal(stored, name)
    if renamed is not None:
        assert f"rename it to {renamed}, then" in message, message
    merge = f"normxlogit bench merge {renamed or name} --into {target}"
    assert merge in message, message
    assert message.endswith(f'write store = "{target}"'), message
    assert "would refuse" not in message, message
    # the advised rename and merge keep the results, under a name the queue takes
    if renamed is not None:
        (stored / name).rename(stored / renamed)
    ran = run_cli("bench", "merge", renamed or name, "--into", target, cwd=stored)
    assert ran.returncode == 0, _said(ran)
    _queue_takes(stored, target)
    assert _instances(stored / target) == kept


def test_a_queue_store_in_xz_is_still_taken(stored, monkeypatch):
    monkeypatch.chdir(stored)
    (stored / "s.sqlite.xz").write_bytes(lzma.compress((stored / "g.sqlite").read_bytes()))
    _queue_takes(stored, "s.sqlite.xz")
