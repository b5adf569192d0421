"""Round fifty-four of probes (prober B: bench, page, files on disk): link loops on an
output's way, the page's "not computed yet" run naming the config as given, the "list
beside tables" fix for keys that take one value, and a chain of links to nowhere."""

from __future__ import annotations

import os

import pytest

from .bench.helpers import config_refusal
from .conftest import invoke_in


def _said(result) -> str:
    return " ".join(result.output.split())


def _grid(folder, model, name: str = "g.toml", rows: int = 2):
    """``folder/name``: random on a d.tsv of ``rows`` rows."""
    lines = "".join(f"movie number {i}\t{i % 2}\n" for i in range(rows))
    (folder / "d.tsv").write_text("sentence\tlabel\n" + lines)
    (folder / name).write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "d.tsv"\n'
    )
    return folder / name


# ------------------------------------------------------------------ 1
def _refused_beside_links(tmp_path, model, links: dict[str, str], args) -> str:
    """What ``args`` say, refused, after a stored run with ``links`` (name -> target) made."""
    _grid(tmp_path, model)
    assert invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "s.sqlite").exit_code == 0
    for name, target in links.items():
        os.symlink(target, tmp_path / name)
    result = invoke_in(tmp_path, *args)
    said = _said(result)
    assert result.exit_code != 0, said
    return said


@pytest.mark.parametrize(
    "args",
    [
        ("bench", "export", "--store", "s.sqlite", "-o", "la/x.csv"),
        ("bench", "merge", "s.sqlite", "--into", "la/m.sqlite"),
        ("bench", "run", "g.toml", "--store", "la"),
    ],
    ids=["export", "merge-into", "run-store"],
)
def test_a_link_loop_on_an_outputs_way_is_one_line(tmp_path, tiny_classifier, args):
    said = _refused_beside_links(tmp_path, tiny_classifier, {"la": "lb", "lb": "la"}, args)
    assert "Traceback" not in said and "RuntimeError" not in said, said
    assert "link loop" in said, said


# ------------------------------------------------------------------ 2
@pytest.mark.parametrize("packed", [False, True], ids=["plain", "xz"])
def test_the_pages_computing_run_names_the_config_as_given(
    tmp_path, tiny_classifier, monkeypatch, packed
):
    import lzma

    from normxlogit.bench import ResultStore, load_config, run_bench
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    sub = tmp_path / "sub"
    sub.mkdir()
    _grid(tmp_path, tiny_classifier)  # another g.toml where serve starts
    _grid(sub, tiny_classifier, rows=4)
    (sub / "d.tsv").rename(sub / "e.tsv")
    (sub / "g.toml").write_text((sub / "g.toml").read_text().replace("d.tsv", "e.tsv"))
    config = load_config(sub / "g.toml")
    with ResultStore(sub / "s.sqlite") as store:
        run_bench(config, store, limit=2)
    store = "sub/s.sqlite"
    if packed:
        (sub / "s.sqlite.xz").write_bytes(lzma.compress((sub / "s.sqlite").read_bytes()))
        (sub / "s.sqlite").unlink()
        store = "sub/s.sqlite.xz"
    monkeypatch.chdir(tmp_path)
    browser = BenchBrowser([BenchEntry.parse(f"sub/g.toml={store}")])
    with pytest.raises(InvalidInputError) as caught:
        browser.explanation(0, config.experiments[0].name, "random", 3)
    message = str(caught.value)
    if not packed:
        assert "run `normxlogit bench run sub/g.toml --store sub/s.sqlite`" in message, message
        # the advised run computes it
        result = invoke_in(tmp_path, "bench", "run", "sub/g.toml", "--store", "sub/s.sqlite")
        assert result.exit_code == 0, result.output
        assert browser.explanation(0, config.experiments[0].name, "random", 3)["instance"] == 3
    else:
        assert "bench merge sub/s.sqlite.xz --into sub/s.sqlite" in message, message
        assert "bench run sub/g.toml --store sub/s.sqlite`" in message, message
        assert "--store sub/s.sqlite.xz`" not in message, message


# ------------------------------------------------------------------ 6
@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '[[methods]]\nname = "gradient_x_input"\ntarget = []\n[[methods.target]]\nx = 1\n',
            'is a string: write it once, as target = "..."',
        ),
        (
            '[[methods]]\nname = "gradient_x_input"\nlayer = []\n[[methods.layer]]\nx = 1\n',
            "takes one value: write it once, as layer = 0",
        ),
    ],
    ids=["target", "layer"],
)
def test_a_one_value_key_beside_tables_is_advised_one_value(tmp_path, tiny_classifier, text, said):
    from normxlogit.bench import load_config
    from normxlogit.common.errors import InvalidFileError

    _grid(tmp_path, tiny_classifier)
    (tmp_path / "l.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\n'
        + text
        + f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
    )
    with pytest.raises(InvalidFileError) as caught:
        load_config(tmp_path / "l.toml")
    message = " ".join(str(caught.value).split())
    assert said in message, message
    assert "give them all in the list" not in message, message


def test_an_experiment_limit_beside_tables_is_advised_one_value(tmp_path, tiny_classifier):
    _grid(tmp_path, tiny_classifier)
    (tmp_path / "l.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\nlimit = []\n'
        "[[experiments.limit]]\nx = 1\n"
    )
    config_refusal(tmp_path / "l.toml", "takes one value: write it once, as limit = 100")


# ------------------------------------------------------------------ 8
@pytest.mark.parametrize(
    "args",
    [
        ("bench", "report", "g.toml", "--store", "s.sqlite", "--output", "dl2/sub"),
        ("bench", "export", "--store", "s.sqlite", "-o", "dl2/x.csv"),
    ],
    ids=["report", "export"],
)
def test_a_link_to_a_dangling_link_names_the_chains_end(tmp_path, tiny_classifier, args):
    said = _refused_beside_links(tmp_path, tiny_classifier, {"dl": "nowhere", "dl2": "dl"}, args)
    assert "its target dl is itself a link to nowhere (nowhere)" in said, said
    assert "mkdir -p nowhere" in said and "mkdir -p dl" not in said, said
    (tmp_path / "nowhere").mkdir()  # the advised mkdir -p works
    assert invoke_in(tmp_path, *args).exit_code == 0


# ------------------------------------------------------------------ 4
@pytest.mark.parametrize("beside", ["other-tables", "damaged"], ids=["other-tables", "damaged"])
def test_an_sqlite_file_beside_a_compressed_store_that_is_no_store_is_said_so(
    tmp_path, tiny_classifier, beside
):
    import sqlite3

    from normxlogit.bench.archive import compress_store

    _grid(tmp_path, tiny_classifier)
    assert invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "s.sqlite").exit_code == 0
    compress_store(tmp_path / "s.sqlite", tmp_path / "a.sqlite.xz")
    if beside == "other-tables":
        with sqlite3.connect(tmp_path / "a.sqlite") as connection:
            connection.execute("create table t(x)")
    else:
        (tmp_path / "a.sqlite").write_bytes((tmp_path / "s.sqlite").read_bytes()[:5000])
    run = invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "a.sqlite.xz")
    said = _said(run)
    assert run.exit_code != 0 and "a.sqlite beside it is not a results store" in said, said
    assert "merge into that store" not in said, said
    merged = invoke_in(tmp_path, "bench", "merge", "a.sqlite.xz", "--into", "plain-a.sqlite")
    assert merged.exit_code == 0, merged.output


# ------------------------------------------------------------------ 5
@pytest.mark.parametrize(
    ("name", "packing"), [("m1.SQLITE.xz", "xz"), ("m3.SQLITE.gz", "gz")], ids=["xz", "gz"]
)
def test_a_queue_store_with_an_upper_case_sqlite_keeps_its_results(
    tmp_path, tiny_classifier, monkeypatch, name, packing
):
    import gzip
    import lzma

    from normxlogit.bench import ResultStore
    from normxlogit.bench.queue import load_queue
    from normxlogit.common.errors import InvalidFileError

    with ResultStore(tmp_path / "made.sqlite"):
        pass
    pack = lzma.compress if packing == "xz" else gzip.compress
    (tmp_path / name).write_bytes(pack((tmp_path / "made.sqlite").read_bytes()))
    _grid(tmp_path, tiny_classifier, "grid.toml")
    queue = tmp_path / "q.toml"

    def write(store: str) -> None:
        queue.write_text(
            f'deadline = 120\n[[entries]]\nname = "a"\nconfig = "grid.toml"\nstore = "{store}"\n'
        )

    write(name)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidFileError) as caught:
        load_queue(queue)
    message = " ".join(str(caught.value).split())
    lower = name.replace("SQLITE", "sqlite")
    assert f"rename it to {tmp_path / lower}" in message, message
    assert "would refuse" not in message, message
    assert message.endswith(f'write store = "{lower[:-3]}.xz"'), message
    (tmp_path / name).rename(tmp_path / lower)
    if packing == "gz":
        assert "recompress it as xz" in message, message
        merged = invoke_in(tmp_path, "bench", "merge", lower, "--into", lower[:-3] + ".xz")
        assert merged.exit_code == 0, merged.output
    write(lower[:-3] + ".xz")
    load_queue(queue)


# ------------------------------------------------------------------ 7
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("bench", "merge", "x.tgz", "--into", "m.sqlite"),
            "source x.tgz is an empty file, not a results store: pass another source "
            "(a store a run wrote, e.g. x.sqlite)",
        ),
        (
            ("bench", "merge", "s.sqlite", "--into", "x.sqlite.bz2"),
            "name another --into (a merge writes .sqlite, e.g. --into x.sqlite)",
        ),
    ],
    ids=["source", "into"],
)
def test_an_empty_file_in_a_merge_names_the_argument(tmp_path, tiny_classifier, args, said):
    _grid(tmp_path, tiny_classifier)
    assert invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "s.sqlite").exit_code == 0
    (tmp_path / "x.tgz").write_bytes(b"")
    (tmp_path / "x.sqlite.bz2").write_bytes(b"")
    result = invoke_in(tmp_path, *args)
    text = _said(result)
    assert result.exit_code != 0 and said in text, text
    assert "--store" not in text, text


@pytest.mark.parametrize("name", ["e.sqlite.xz", "f.sqlite.gz"], ids=["xz", "gz"])
def test_an_empty_compressed_into_is_filled(tmp_path, tiny_classifier, name):
    _grid(tmp_path, tiny_classifier)
    assert invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "s.sqlite").exit_code == 0
    (tmp_path / name).write_bytes(b"")
    merged = invoke_in(tmp_path, "bench", "merge", "s.sqlite", "--into", name)
    assert merged.exit_code == 0, merged.output
    status = invoke_in(tmp_path, "bench", "status", "g.toml", "--store", name)
    assert status.exit_code == 0, status.output


# ------------------------------------------------------------------ noted
@pytest.mark.parametrize(
    ("name", "plain"),
    [("x.tgz", "x.sqlite"), (".sqlite.gz", "results.sqlite"), ("x.tar.gz", "x.sqlite")],
    ids=["tgz", "suffix-only", "tar-gz"],
)
def test_the_plain_store_name_drops_archive_suffixes(name, plain):
    from pathlib import Path

    from normxlogit.bench.archive import plain_store_name

    assert plain_store_name(Path("em") / name) == Path("em") / plain


# ------------------------------------------------------------------ 3
@pytest.mark.parametrize("picked", [False, True], ids=["all", "experiment"])
def test_a_dtype_runs_limit_note_names_the_experiment_as_the_config_does(
    tmp_path, tiny_classifier, picked
):
    _grid(tmp_path, tiny_classifier, rows=4)
    experiment = f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
    (tmp_path / "dt3.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        + experiment
        + 'dtype = "float64"\n'
        + experiment
        + experiment
        + 'dtype = "float16"\nlimit = 2\n'
    )
    own = f"{tiny_classifier}@float16:d.tsv"
    extra = ("--experiment", own) if picked else ()
    args = ("bench", "run", "dt3.toml", "--store", "s.sqlite", "--dtype", "float32")
    result = invoke_in(tmp_path, *args, "--limit", "3", *extra)
    said = _said(result)
    assert f"limit = 2 of experiment {own!r} in dt3.toml" in said, said
    assert "@float32" not in said.partition("note:")[2].partition("in dt3.toml")[0], said
