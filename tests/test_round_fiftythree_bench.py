"""Round fifty-three of probes (prober B: bench, page, files on disk): the page's
instance range counted on the experiment's own instances, ``--dtype`` names that collide,
an empty compressed store, a plain file beside a compressed ``--store``, the queue's
upper-case store names, ``[experiments]`` as one table, column names with blanks at an
edge, the "list beside tables" fix for keys that take no list, a hub id's long owner, and
dangling links and link loops on an output's way."""

from __future__ import annotations

import lzma
import os

import pytest

from .conftest import invoke_in


def _said(result) -> str:
    return " ".join(result.output.split())


def _grid(folder, model, name: str = "g.toml", body: str = "", rows: int = 2, extra: str = ""):
    """``folder/name``: random on a d.tsv of ``rows`` rows."""
    lines = "".join(f"movie number {i}\t{i % 2}\n" for i in range(rows))
    (folder / "d.tsv").write_text("sentence\tlabel\n" + lines)
    (folder / name).write_text(
        f'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n{body}'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "d.tsv"\n{extra}'
    )
    return folder / name


# ------------------------------------------------------------------ 1
def test_the_page_counts_the_experiments_own_instances(tmp_path, tiny_classifier):
    from normxlogit.bench import ResultStore, load_config, run_bench
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    config = load_config(
        _grid(
            tmp_path,
            tiny_classifier,
            rows=6,
            extra=f'[[experiments]]\nname = "small"\nmodel = "{tiny_classifier}"\n'
            'dataset = "d.tsv"\nlimit = 3\n',
        )
    )
    with ResultStore(tmp_path / "g.sqlite") as store:
        run_bench(config, store, limit=4)
    browser = BenchBrowser([BenchEntry.parse(f"{tmp_path / 'g.toml'}={tmp_path / 'g.sqlite'}")])
    name = config.experiments[0].name
    with pytest.raises(InvalidInputError) as caught:
        browser.explanation(0, name, "random", 5)
    message = str(caught.value)
    assert "not computed yet" in message and "without --limit" in message, message
    assert "instances run" not in message, message
    with pytest.raises(InvalidInputError) as caught:
        browser.explanation(0, name, "random", 6)
    assert "its instances run 0 to 5" in str(caught.value), caught.value
    # an experiment with limit = 3 sharing the cell: its range is its own
    with pytest.raises(InvalidInputError) as caught:
        browser.explanation(0, "small", "random", 3)
    assert "its instances run 0 to 2" in str(caught.value), caught.value
    assert browser.explanation(0, "small", "random", 2)["instance"] == 2
    # the advised run computes it
    with ResultStore(tmp_path / "g.sqlite") as store:
        run_bench(config, store)
    assert browser.explanation(0, name, "random", 5)["instance"] == 5


# ------------------------------------------------------------------ 2
def test_dtype_names_that_collide_still_name_the_precision_stored(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config

    path = _grid(
        tmp_path,
        tiny_classifier,
        extra=f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
        'dtype = "float64"\n',
    )
    moved = load_config(path).with_dtype("bfloat16").experiments
    names = [e.name for e in moved]
    assert len(set(names)) == 2, names
    assert all(e.model.endswith("@bfloat16") for e in moved)
    assert all(n.startswith(e.model + ":") for n, e in zip(names, moved, strict=True)), names
    assert names[1] == names[0] + "#2", names
    run = invoke_in(tmp_path, "bench", "run", "g.toml", "--dtype", "bfloat16", "--limit", "1")
    assert run.exit_code == 0, run.output
    assert "@float64" not in run.output and "@bfloat16:d.tsv" in _said(run), run.output


# ------------------------------------------------------------------ 3
@pytest.mark.parametrize("suffix", [".xz", ".gz"], ids=["xz", "gz"])
def test_an_empty_compressed_store_is_advised_another_store(tmp_path, tiny_classifier, suffix):
    from normxlogit.common.errors import NormXLogitError
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    _grid(tmp_path, tiny_classifier)
    name = f"empty.sqlite{suffix}"
    (tmp_path / name).write_bytes(b"")
    wanted = (
        f"{name} is an empty file, not a results store: pass another --store (a run "
        "writes a plain .sqlite, e.g. --store empty.sqlite)"
    )
    for command in ("status", "run", "report"):
        result = invoke_in(tmp_path, "bench", command, "g.toml", "--store", name)
        assert result.exit_code != 0 and wanted in _said(result), (command, result.output)
        assert "to fill it" not in _said(result), result.output
    with pytest.raises(NormXLogitError) as caught:
        browser = BenchBrowser([BenchEntry.parse(f"{tmp_path / 'g.toml'}={tmp_path / name}")])
        browser.check()
    # serve has no --store (round 55)
    said = "is an empty file, not a results store: name another store as --bench CONFIG=STORE"
    assert said in str(caught.value), caught.value
    # the advice works
    run = invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "empty.sqlite")
    assert run.exit_code == 0, run.output


# ------------------------------------------------------------------ 4
def test_a_file_beside_a_compressed_store_holding_no_store_is_said_so(tmp_path, tiny_classifier):
    from normxlogit.bench import ResultStore
    from normxlogit.bench.archive import compress_store

    _grid(tmp_path, tiny_classifier)
    with ResultStore(tmp_path / "made.sqlite"):
        pass
    compress_store(tmp_path / "made.sqlite", tmp_path / "k4.sqlite.xz")
    (tmp_path / "k4.sqlite").write_text("txt\n")
    run = invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "k4.sqlite.xz")
    said = _said(run)
    assert run.exit_code != 0 and "k4.sqlite beside it is not a results store" in said, said
    assert "merge into that store" not in said, said
    assert "--into plain-k4.sqlite" in said, said
    merged = invoke_in(tmp_path, "bench", "merge", "k4.sqlite.xz", "--into", "plain-k4.sqlite")
    assert merged.exit_code == 0, merged.output
    # an empty file beside it holds no results to add to: a free name (round 56)
    (tmp_path / "k4.sqlite").write_bytes(b"")
    run = invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "k4.sqlite.xz")
    said = _said(run)
    assert "k4.sqlite beside it is an empty file" in said, said
    assert "merge into that store" not in said and "--into plain-2-k4.sqlite" in said, said


# ------------------------------------------------------------------ 5
def test_an_upper_case_queue_store_is_advised_the_name_the_queue_takes(
    tmp_path, tiny_classifier, monkeypatch
):
    from normxlogit.bench import ResultStore
    from normxlogit.bench.queue import load_queue
    from normxlogit.common.errors import InvalidFileError

    with ResultStore(tmp_path / "made.sqlite"):
        pass
    (tmp_path / "real2.SQLITE.XZ").write_bytes(
        lzma.compress((tmp_path / "made.sqlite").read_bytes())
    )
    _grid(tmp_path, tiny_classifier, "grid.toml")
    queue = tmp_path / "q.toml"

    def write(store: str) -> None:
        queue.write_text(
            f'deadline = 120\n[[entries]]\nname = "a"\nconfig = "grid.toml"\nstore = "{store}"\n'
        )

    write("real2.SQLITE.XZ")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidFileError) as caught:
        load_queue(queue)
    message = str(caught.value)
    assert f"rename it to {tmp_path / 'real2.sqlite.xz'}," in message, message
    assert message.endswith('write store = "real2.sqlite.xz"'), message
    (tmp_path / "real2.SQLITE.XZ").rename(tmp_path / "real2.sqlite.xz")
    write("real2.sqlite.xz")
    load_queue(queue)


# ------------------------------------------------------------------ 6
def test_experiments_as_one_table_is_said_to_be_one(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config
    from normxlogit.common.errors import InvalidInputError

    text = (
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[experiments]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
    )
    _grid(tmp_path, tiny_classifier)
    (tmp_path / "r6.toml").write_text(text)
    with pytest.raises(InvalidInputError) as caught:
        load_config(tmp_path / "r6.toml")
    message = str(caught.value)
    assert "experiments is one table ([experiments]); write each experiment as an " in message
    assert "[[experiments]] table (double brackets)" in message, message
    (tmp_path / "r6.toml").write_text(text.replace("[experiments]", "[[experiments]]"))
    assert load_config(tmp_path / "r6.toml").experiments


# ------------------------------------------------------------------ 7
@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("s1.csv", "sentence, label\nok fine, 1\nbad, 0\n", "rename ' label' to 'label'"),
        ("c11.tsv", " sentence\tlabel\nok fine\t1\nbad\t0\n", "rename ' sentence' to 'sentence'"),
        ("c12.tsv", "sentence \tlabel\nok fine\t1\nbad\t0\n", "rename 'sentence ' to 'sentence'"),
    ],
    ids=["csv-label", "tsv-text-start", "tsv-text-end"],
)
def test_a_column_name_with_a_blank_at_an_edge_is_named(
    tmp_path, tiny_classifier, name, text, said
):
    (tmp_path / name).write_text(text)
    (tmp_path / "c.toml").write_text(
        'seeds = [0]\nmetrics = ["suff_acc"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "{name}"\n'
    )
    run = invoke_in(tmp_path, "bench", "run", "c.toml", "--store", "c.sqlite")
    message = _said(run)
    assert run.exit_code != 0, run.output
    assert f"column names have no blanks around them: {said}" in message, message
    if "text" in name or name.startswith("c1"):
        assert "found ' sentence'" in message or "found 'sentence '" in message, message
    fixed = ",".join(c.strip() for c in text.splitlines()[0].split(",")) if "," in text else None
    if fixed is not None:  # the advice works
        (tmp_path / name).write_text(text.replace(text.splitlines()[0], fixed))
        run = invoke_in(tmp_path, "bench", "run", "c.toml", "--store", "c.sqlite")
        assert run.exit_code == 0, run.output


# ------------------------------------------------------------------ 8
@pytest.mark.parametrize(
    ("text", "said", "fixed"),
    [
        (
            "protocol = []\n[[protocol]]\nsamples = 2\n",
            "protocol is a table: write it once as [protocol] (or protocol = { ... })",
            "[protocol]\nsamples = 2\n",
        ),
        (
            'metrics = ["comp_cd"]\n[[metrics]]\nname = "x"\n',
            "give them all in the list",
            None,
        ),
    ],
    ids=["protocol-table", "metrics-list"],
)
def test_the_list_is_advised_only_for_keys_that_are_lists(
    tmp_path, tiny_classifier, text, said, fixed
):
    from normxlogit.bench import load_config
    from normxlogit.common.errors import InvalidFileError

    _grid(tmp_path, tiny_classifier)
    head = 'seeds = [0]\nmethods = ["random"]\n' + (
        "" if "metrics" in text else 'metrics = ["comp_cd"]\n'
    )
    tail = f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
    (tmp_path / "l.toml").write_text(head + text + tail)
    with pytest.raises(InvalidFileError) as caught:
        load_config(tmp_path / "l.toml")
    assert said in " ".join(str(caught.value).split()), caught.value
    if fixed is not None:
        (tmp_path / "l.toml").write_text(head + fixed + tail)
        assert load_config(tmp_path / "l.toml").experiments


def test_a_string_key_beside_tables_is_advised_its_string(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config
    from normxlogit.common.errors import InvalidFileError

    (tmp_path / "l.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = ["d.tsv"]\n'
        "[[experiments.dataset]]\nx = 1\n"
    )
    with pytest.raises(InvalidFileError) as caught:
        load_config(tmp_path / "l.toml")
    message = str(caught.value)
    assert 'is a string: write it once, as dataset = "..."' in message, message
    assert "give them all in the list" not in message, message


# ------------------------------------------------------------------ noted
def test_a_hub_id_with_a_long_owner_names_the_owner(tmp_path):
    from normxlogit.bench.config import _refuse_invalid_hub_id
    from normxlogit.common.errors import InvalidInputError

    with pytest.raises(InvalidInputError) as caught:
        _refuse_invalid_hub_id("o" * 97 + "/m", "experiment 1")
    message = str(caught.value)
    assert "its owner is 97 characters long, and a hub id's owner is at most 96" in message
    assert "the name at most 96" not in message, message


def test_a_dangling_link_above_the_report_folder_is_named(tmp_path, tiny_classifier):
    _grid(tmp_path, tiny_classifier)
    assert invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "s.sqlite").exit_code == 0
    os.symlink("nowhere", tmp_path / "dl")
    report = invoke_in(
        tmp_path, "bench", "report", "g.toml", "--store", "s.sqlite", "--output", "dl/sub"
    )
    said = _said(report)
    assert report.exit_code != 0, report.output
    assert "dl is a link to nowhere (its target nowhere does not exist)" in said, said
    assert "File exists" not in said, said
    (tmp_path / "nowhere").mkdir()  # the advised mkdir -p works
    report = invoke_in(
        tmp_path, "bench", "report", "g.toml", "--store", "s.sqlite", "--output", "dl/sub"
    )
    assert report.exit_code == 0, report.output


def test_a_link_loop_as_the_report_folder_is_said_to_be_one(tmp_path, tiny_classifier):
    _grid(tmp_path, tiny_classifier)
    assert invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "s.sqlite").exit_code == 0
    os.symlink("loopb", tmp_path / "loopa")
    os.symlink("loopa", tmp_path / "loopb")
    for output in ("loopa", "loopa/sub"):
        report = invoke_in(
            tmp_path, "bench", "report", "g.toml", "--store", "s.sqlite", "--output", output
        )
        said = _said(report)
        assert report.exit_code != 0 and "is a link loop" in said, said
        assert "link to nowhere" not in said and "mkdir" not in said, said
