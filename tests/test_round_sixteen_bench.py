"""Round sixteen of new-user probes, P01 to P11: the time table per experiment, the
``[[tables]]`` and ``[[plots]]`` entries checked at load, merge's sources checked before
any is merged, the GPU scripts' options, and outputs that name an input file."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench import slot as slot_module
from normxlogit.bench.estimate import main as estimate_main
from normxlogit.bench.plots import plot_time
from normxlogit.bench.queue import limit_notes, load_queue
from normxlogit.bench.report import time_table
from normxlogit.bench.results import timings_by_experiment
from normxlogit.bench.slot import main as slot_main
from normxlogit.common.errors import InvalidInputError, OutputPathError
from normxlogit.common.outputs import refuse_input_as_output, same_file

from .conftest import invoke_in

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow.", "Bright."]


def _data(folder: Path, name: str = "d", rows: int = 4) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text(
        "".join(json.dumps({"text": t, "label": i % 3}) + "\n" for i, t in enumerate(TEXTS[:rows]))
    )
    return path


def _config(folder: Path, model: Path, extra: str = "", name: str = "grid", **limits) -> Path:
    """One experiment (comp_cd, suff_acc) on ``model``, then ``extra`` TOML."""
    data = _data(folder)
    own = "".join(f"{key} = {value}\n" for key, value in limits.items())
    path = folder / f"{name}.toml"
    path.write_text(
        'title = "t"\nmetrics = ["comp_cd", "suff_acc"]\nmethods = ["normxlogit", "random"]\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\n{own}{extra}'
    )
    return path


# ------------------------------------------------------------------ P01
def test_the_time_table_and_plot_keep_two_models_apart(tmp_path, tiny_classifier):
    """P01: two experiments (two models on one data set) were averaged in one row per
    method."""
    other = tmp_path / "other-model"
    shutil.copytree(tiny_classifier, other)  # another model path: another model's cells
    data = _data(tmp_path, rows=4)
    path = tmp_path / "two.toml"
    path.write_text(
        'title = "t"\nmetrics = ["comp_cd"]\nmethods = ["normxlogit", "random"]\n'
        f'[[experiments]]\nname = "a"\nmodel = "{tiny_classifier}"\ndataset = "{data}"\n'
        f'[[experiments]]\nname = "b"\nmodel = "{other}"\ndataset = "{data}"\nlimit = 3\n'
    )
    config = load_config(path)
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(config, store)
        timings = store.timings()
    groups = timings_by_experiment(config, timings)
    assert [(name, len(rows)) for name, rows in groups] == [("a", 8), ("b", 6)]
    table = time_table(config, timings)
    assert "| experiment | method |" in table
    assert table.count("| a |") == 2 and table.count("| b |") == 2
    assert table.count("| 4 |") == 2 and table.count("| 3 |") == 2 and "| 7 |" not in table
    assert plot_time(config, timings, tmp_path / "t.png")
    # one experiment: the table keeps its one-row-per-method layout
    single = load_config(_config(tmp_path, tiny_classifier))
    assert "| experiment |" not in (time_table(single, timings) or "")


# ------------------------------------------------------------------ P02, P03
@pytest.mark.parametrize("section", ["tables", "plots"])
def test_a_repeated_table_or_plot_name_is_refused(tmp_path, tiny_classifier, section):
    entry = f'[[{section}]]\nname = "fig"\nmetric = "comp_cd"\n'
    path = _config(tmp_path, tiny_classifier, entry + entry.replace("comp_cd", "suff_acc"))
    kind = section[:-1]
    with pytest.raises(InvalidInputError, match=f"{kind} 2 name 'fig' is {kind} 1's too"):
        load_config(path)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("sub/fig2", "without folders, e.g. 'sub-fig2'"),
        ("../escaped", "without folders, e.g. 'escaped'"),
        ("a\\\\b", "without folders"),
        ("", "name is empty"),
        ("  ", "name is empty"),
        ("..", "without folders"),
        (".hidden", "starts with a dot"),
        (" fig", "with spaces around it"),
    ],
)
@pytest.mark.parametrize("section", ["tables", "plots"])
def test_a_table_or_plot_name_that_is_no_file_name_is_refused(
    tmp_path, tiny_classifier, section, name, says
):
    extra = f'[[{section}]]\nname = "{name}"\nmetric = "comp_cd"\n'
    path = _config(tmp_path, tiny_classifier, extra)
    with pytest.raises(InvalidInputError, match=f"{section[:-1]} 1 name") as caught:
        load_config(path)
    assert says in str(caught.value)


def test_plain_names_and_the_defaults_are_taken(tmp_path, tiny_classifier):
    extra = (
        '[[tables]]\nmetric = "comp_cd"\n[[tables]]\nmetric = "suff_acc"\n'
        '[[plots]]\nname = "fig 2.b"\nmetric = "comp_cd"\n[[plots]]\nkind = "time"\n'
    )
    config = load_config(_config(tmp_path, tiny_classifier, extra))
    assert [t.name for t in config.tables] == ["table1", "table2"]
    assert [p.name for p in config.plots] == ["fig 2.b", "plot2"]


# ------------------------------------------------------------------ P04, P05
@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ('[[tables]]\nmetric = "evidence_ap"\n', "table 1 metric 'evidence_ap' is computed by"),
        (
            '[[plots]]\nkind = "summary"\nmetric = "evidence_ap"\n',
            "plot 1 metric 'evidence_ap' is computed by no experiment",
        ),
        ('[[tables]]\nmetric = { d = "deletion" }\n', "table 1 metric 'deletion'"),
    ],
)
def test_a_table_or_plot_of_a_metric_nothing_computes_is_refused(
    tmp_path, tiny_classifier, extra, says
):
    with pytest.raises(InvalidInputError) as caught:
        load_config(_config(tmp_path, tiny_classifier, extra))
    assert says in str(caught.value)
    assert "its metrics: comp_cd, suff_acc" in str(caught.value)


def test_a_layers_plot_of_a_metric_without_layers_is_refused(tmp_path, tiny_classifier):
    extra = '[[plots]]\nkind = "layers"\nmetric = "comp_cd"\n'
    with pytest.raises(InvalidInputError) as caught:
        load_config(_config(tmp_path, tiny_classifier, extra))
    said = str(caught.value)
    assert "plot 1 kind = layers needs a per-layer metric" in said
    assert "evidence_dot" in said and "comp_cd has no layers: use kind = curve" in said


# ------------------------------------------------------------------ P06, P07
def test_merge_checks_every_source_before_merging_any(tmp_path, tiny_classifier):
    config = load_config(_config(tmp_path, tiny_classifier, limit=1))
    with ResultStore(tmp_path / "good.sqlite") as store:
        run_bench(config, store)
    shutil.copyfile(tmp_path / "good.sqlite", tmp_path / "later.sqlite")
    (tmp_path / "bad.sqlite").write_bytes(b"cut short in transfer")
    for into in ("t.sqlite", "t.sqlite.xz"):
        result = invoke_in(
            tmp_path, "bench", "merge", "good.sqlite", "bad.sqlite", "later.sqlite", "--into", into
        )
        assert result.exit_code == 2 and "merged good.sqlite" not in result.output
        assert "source bad.sqlite is not a normxlogit results store" in result.output
        assert not (tmp_path / into).exists()


def test_a_compressed_store_merged_into_itself_is_refused(tmp_path):
    ResultStore(tmp_path / "s.sqlite").close()
    result = invoke_in(tmp_path, "bench", "merge", "s.sqlite", "--into", "s.sqlite.xz")
    assert result.exit_code == 0
    before = (tmp_path / "s.sqlite.xz").read_bytes()
    for spelling in ("s.sqlite.xz", "./s.sqlite.xz"):
        result = invoke_in(tmp_path, "bench", "merge", spelling, "--into", "s.sqlite.xz")
        assert result.exit_code == 2
        assert "is the store being merged into; name another" in result.output
    assert (tmp_path / "s.sqlite.xz").read_bytes() == before


# ------------------------------------------------------------------ P08
@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--deadline", "0"], "--deadline 0: must be a number of seconds above 0"),
        (["--deadline", "-5"], "--deadline -5: must be"),
        (["--deadline", "nan"], "--deadline nan: must be"),
        (["--deadline", "inf"], "--deadline inf: must be"),
        (["--deadline", "20"], "--deadline 20: a slot needs at least 65 s"),
        (["--max-tokens-per-batch", "-1"], "--max-tokens-per-batch -1: must be at least 1"),
        (["--tokens-per-forward", "0"], "--tokens-per-forward 0: must be at least 1"),
        (["--rows-per-forward", "-3"], "--rows-per-forward -3: must be at least 1"),
    ],
)
def test_slot_run_refuses_a_bad_option_before_receiving(tmp_path, capsys, option, says):
    out = tmp_path / "out"
    code = slot_main(["run", str(tmp_path / "no-part"), "--out", str(out), *option])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {says}") and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_slot_whose_every_entry_failed_exits_non_zero_with_the_reason(
    tmp_path, capsys, monkeypatch
):
    out = tmp_path / "out"

    def entries(manifest, root, env, args, clock, home, logfile, tokens):
        logfile.write("error: --max-tokens-per-batch is too small\n")
        return [{"entry": "sst2", "state": "stopped (2)", "seconds": 1.0, "added": {"x": 0}}]

    monkeypatch.setattr(slot_module, "receive", lambda part, home: {"deadline": 100})
    for name in ("assemble", "install", "environment", "check_torch"):
        monkeypatch.setattr(slot_module, name, lambda *a, **k: "")
    monkeypatch.setattr(slot_module, "export", lambda *a: [])
    monkeypatch.setattr(slot_module, "run_queue", entries)
    args = ["run", "p", "--out", str(out), "--no-calibrate", "--home", str(tmp_path)]
    assert slot_main(args) == 3
    err = capsys.readouterr().err
    assert "error: no entry of the slot ran (sst2: stopped (2))" in err
    assert "the last refusal: error: --max-tokens-per-batch is too small" in err
    report = json.loads((out / "slot-report.json").read_text())
    assert report["deadline"] == 100  # the queue's, since --deadline was not given

    def progress(*args):
        return [{"entry": "sst2", "state": "stopped (-15)", "seconds": 9.0, "added": {"x": 3}}]

    monkeypatch.setattr(slot_module, "run_queue", progress)
    again = tmp_path / "again"  # a slot refuses an --out holding an earlier one's report
    assert slot_main([*args[:2], "--out", str(again), *args[4:]]) == 0


# ------------------------------------------------------------------ P09
def test_evaluate_and_explain_refuse_to_write_over_their_input(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("text,label\ngood,1\nbad,0\n")
    for spelling in ("d.csv", "./d.csv", str(data)):
        result = invoke_in(tmp_path, "evaluate", "d.csv", "-m", "no-model", "-o", spelling)
        assert result.exit_code == 2
        assert "is the data file; write the table to another file" in result.output
    (tmp_path / "link.csv").symlink_to(data)
    result = invoke_in(tmp_path, "evaluate", "d.csv", "-m", "no-model", "-o", "link.csv")
    assert result.exit_code == 2 and "is the data file" in result.output
    texts = tmp_path / "t.html"
    texts.write_text("good movie\nbad movie\n")
    result = invoke_in(tmp_path, "explain", "-m", "no-model", "-i", "t.html", "-o", "./t.html")
    assert result.exit_code == 2
    assert "t.html is the --input file; write the result to another file" in (result.output)
    assert data.read_text() == "text,label\ngood,1\nbad,0\n"
    assert texts.read_text() == "good movie\nbad movie\n"


def test_same_file_sees_links_and_spellings(tmp_path):
    one = tmp_path / "a.txt"
    one.write_text("x")
    (tmp_path / "hard.txt").hardlink_to(one)
    assert same_file(one, tmp_path / "." / "a.txt") and same_file(one, tmp_path / "hard.txt")
    assert not same_file(one, tmp_path / "b.txt")
    with pytest.raises(OutputPathError, match="--output .* is the data file; fix it"):
        refuse_input_as_output(one, tmp_path / "hard.txt", "--output", "the data file", "fix it")


# ------------------------------------------------------------------ P10, P11
@pytest.mark.parametrize("seconds", ["600", "700", "1e9"])
def test_estimate_refuses_a_slot_longer_than_a_device_command(tmp_path, capsys, seconds):
    assert estimate_main(["--slot-seconds", seconds, "--queue", str(tmp_path / "q.toml")]) == 2
    err = capsys.readouterr().err
    assert "is not under a device command's limit of 600 s" in err
    assert not math.isnan(float(seconds))


def test_a_queue_limit_above_an_experiments_own_gets_a_note(tmp_path, tiny_classifier):
    _config(tmp_path, tiny_classifier, limit=2)
    path = tmp_path / "queue.toml"
    entry = '[[entries]]\nname = "first"\nconfig = "grid.toml"\nstore = "s.sqlite.xz"\n'
    path.write_text(entry + "limit = 9\n")
    (note,) = limit_notes(load_queue(path))
    assert note.startswith("note: entry first: limit = 9 is above limit = 2 of experiment")
    assert "in grid.toml, which stays: 2 instances" in note
    path.write_text(entry + "limit = 2\n")
    assert limit_notes(load_queue(path)) == []
    path.write_text(entry)
    assert limit_notes(load_queue(path)) == []
