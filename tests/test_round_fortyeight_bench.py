"""Round forty-eight of probes (prober B: bench, page, files on disk): the page's figures
drawn at once from threads, a config's name with a blank or an invisible character at its
edge, a store's name with an invisible character, a misnamed zstd store's advice, gold
labels mixing indices and names, and the noted items (an index the model lacks, a folder
as ``path``, a rate too small to mean anything, the page's gold label, the merge advice)."""

from __future__ import annotations

import lzma
import shutil
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from normxlogit.common.errors import InvalidInputError

from .conftest import invoke_in

ZWSP = "\u200b"


def _said(result) -> str:
    return " ".join(result.output.split())


def _sqlite(path: Path) -> Path:
    with sqlite3.connect(path) as connection:
        connection.execute("create table t (x)")
    return path


@pytest.fixture(scope="module")
def bench_site(tmp_path_factory, tiny_classifier) -> Path:
    """A finished tiny grid (a data file of label indices) with two time plots."""
    from normxlogit.bench import ResultStore, load_config, run_bench

    folder = tmp_path_factory.mktemp("bench-site")
    (folder / "d.tsv").write_text("sentence\tlabel\ngood movie\t2\nbad film\t0\nok\t1\n")
    (folder / "g.toml").write_text(
        'title = "t"\nseeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        "[protocol]\nratios = [0.5]\n"
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
        '[[plots]]\nkind = "time"\nname = "time-a"\n'
        '[[plots]]\nkind = "time"\nname = "time-b"\n'
    )
    with ResultStore(folder / "g.sqlite") as store:
        run_bench(load_config(folder / "g.toml"), store)
    return folder


def _browser(site: Path):
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    return BenchBrowser([BenchEntry.parse(f"{site / 'g.toml'}={site / 'g.sqlite'}")])


# ------------------------------------------------------------------ 1
def test_b01_two_time_plots_asked_at_once_from_threads_are_both_drawn(bench_site):
    """matplotlib's mathtext (the log axis' ticks) is not thread-safe: two time plots
    drawn at once in the page's worker threads failed with a 500."""
    browser = _browser(bench_site)
    drawn: list[bytes] = []
    failed: list[BaseException] = []
    barrier = threading.Barrier(4)

    def draw(name: str) -> None:
        barrier.wait()
        try:
            drawn.append(browser.plot(0, name))
        except BaseException as error:  # noqa: BLE001 - the test reports it
            failed.append(error)

    for _ in range(2):
        threads = [threading.Thread(target=draw, args=(n,)) for n in ["time-a", "time-b"] * 2]
        [t.start() for t in threads]
        [t.join() for t in threads]
    assert not failed, failed
    assert len(drawn) == 8 and all(png.startswith(b"\x89PNG") for png in drawn)


def test_b01_a_figure_is_drawn_holding_the_drawing_lock(bench_site, monkeypatch):
    """No other thread draws while one does (checked inside the drawing)."""
    from normxlogit.bench import plots
    from normxlogit.common.figures import DRAWING

    real = plots.plot_time
    others: list[bool] = []

    def watched(*args, **kwargs):
        seen = []
        thread = threading.Thread(target=lambda: seen.append(DRAWING.acquire(blocking=False)))
        thread.start()
        thread.join()
        others.append(seen[0])
        if seen[0]:
            DRAWING.release()
        return real(*args, **kwargs)

    monkeypatch.setattr(plots, "plot_time", watched)
    assert _browser(bench_site).plot(0, "time-a").startswith(b"\x89PNG")
    assert others == [False]


# ------------------------------------------------------------------ 2
@pytest.mark.parametrize("name", [" g.toml", f"{ZWSP}h.toml"])
def test_b02_a_config_name_with_an_unseen_edge_is_named_as_the_config(
    tmp_path, tiny_classifier, name
):
    """The default store (and report folder) named after the config kept the blank: the
    refusal named --store / --output, which the user never gave."""
    (tmp_path / "d.tsv").write_text("sentence\tlabel\ngood\t1\n")
    (tmp_path / name).write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
    )
    (tmp_path / "g.toml").write_text("")
    said = _said(invoke_in(tmp_path, "bench", "run", name))
    assert said.startswith(f"error: config {name!r}: its name begins with"), said
    assert "--store '" not in said and "pass --store NAME.sqlite" in said, said
    if name == " g.toml":
        assert "g.toml exists: run that if it is the config meant" in said, said
        report = _said(invoke_in(tmp_path, "bench", "report", name))
        assert report.startswith(f"error: config {name!r}"), report
        assert "default report folder would be ' g-report'" in report, report
        assert "--output '" not in report and "pass --output FOLDER" in report, report
    else:
        assert "U+200B (ZERO WIDTH SPACE)" in said and "rename the config to h.toml" in said


# ------------------------------------------------------------------ 3
def test_b03_an_invisible_character_at_a_store_names_edge_is_named(tmp_path):
    from normxlogit.bench.archive import missing_store
    from normxlogit.common.input_paths import blank_edge_hint, shown_name

    _sqlite(tmp_path / "keep.sqlite")
    odd = tmp_path / f"keep.sqlite{ZWSP}"
    said = missing_store(odd)
    assert f"no results store at {str(odd)!r}" in said and "\\u200b" in said, said
    assert "ends in U+200B (ZERO WIDTH SPACE) after its suffix" in said, said
    assert f"{tmp_path / 'keep.sqlite'} exists" in said, said
    assert shown_name(f"{ZWSP}x.toml") == repr(f"{ZWSP}x.toml")
    assert shown_name("plain.toml") == "plain.toml" and blank_edge_hint(Path("p.toml")) == ""
    # the space's wording is as before
    assert "its name ends in a space or tab after its suffix" in missing_store(
        tmp_path / "keep.sqlite "
    )


def test_b03_cli_status_and_merge_name_the_invisible_character(tmp_path, tiny_classifier):
    _sqlite(tmp_path / "keep.sqlite")
    (tmp_path / "d.tsv").write_text("sentence\tlabel\ngood\t1\n")
    (tmp_path / "g.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
    )
    for args in (
        ("bench", "status", "g.toml", "--store", f"keep.sqlite{ZWSP}"),
        ("bench", "merge", f"keep.sqlite{ZWSP}", "--into", "m.sqlite"),
    ):
        said = _said(invoke_in(tmp_path, *args))
        assert "no results store at 'keep.sqlite\\u200b'" in said, said
        assert "U+200B (ZERO WIDTH SPACE)" in said and "keep.sqlite exists" in said, said


def test_b03_a_queue_config_with_an_invisible_character_is_quoted(tmp_path):
    from normxlogit.bench.queue import entry_config, load_queue
    from normxlogit.common.errors import InvalidFileError

    (tmp_path / "g.toml").write_text("")
    queue = tmp_path / "q.toml"
    queue.write_text(
        'title = "q"\ndeadline = 300\n[[entries]]\nname = "a"\nconfig = "g.toml\\u200b"\n'
        'limit = 2\nstore = "g2.sqlite.xz"\n'
    )
    with pytest.raises(InvalidFileError) as caught:
        loaded = load_queue(queue)
        entry_config(loaded, loaded.entries[0])
    said = str(caught.value)
    assert "config 'g.toml\\u200b' not found" in said and "g.toml exists" in said, said


# ------------------------------------------------------------------ 4
def test_b04_a_zstd_store_named_sqlite_gets_the_whole_command_to_a_free_name(tmp_path):
    """The tool alone (`zstd zs.sqlite`) compressed it again."""
    from normxlogit.bench.archive import foreign_compression

    plain = _sqlite(tmp_path / "source.sqlite")
    target = tmp_path / "zs.sqlite"
    if shutil.which("zstd"):
        subprocess.run(["zstd", "-q", "-o", str(target), str(plain)], check=True)
    else:
        target.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 32)
    message = foreign_compression(target)
    free = tmp_path / "plain-zs.sqlite"
    assert message is not None and f"(zstd -dc {target} > {free})" in message, message
    assert f"pass the SQLite file as {free}" in message
    if shutil.which("zstd"):
        command = message.split("decompress it (", 1)[1].split(") and pass", 1)[0]
        subprocess.run(command, shell=True, check=True, capture_output=True)
        assert free.read_bytes() == plain.read_bytes()


# ------------------------------------------------------------------ 5
@pytest.mark.parametrize(
    ("rows", "said"),
    [
        (
            "good movie\t1\nbad film\tpos\n",
            "d.tsv gives the gold labels both as indices (line 2: 1) and as names (line 3: pos); "
            "write them all one way: as model",
        ),
        (
            "good movie\tneg\nbad film\t0\n",
            "d.tsv gives the gold labels both as indices (line 3: 0) and as names (line 2: neg)",
        ),
        # noted: an index the model lacks is named with its line and instance, as -1 is
        (
            "good movie\t1\nbad film\t5\n",
            "label index 5 (the gold label of d.tsv line 3, instance 1) does not exist; the model",
        ),
    ],
)
def test_b05_gold_labels_mixing_indices_and_names(tmp_path, tiny_classifier, rows, said):
    (tmp_path / "d.tsv").write_text("sentence\tlabel\n" + rows)
    (tmp_path / "c.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_acc"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
    )
    result = invoke_in(tmp_path, "bench", "run", "c.toml")
    message = _said(result)
    assert result.exit_code != 0 and said in message, message
    assert "are not all labels" not in message
    if "both" in said:
        assert "(neg, neutral, pos) or as their indices (0 to 2)" in message, message
    else:
        assert "3 labels: 0=neg, 1=neutral, 2=pos" in message, message
    assert not (tmp_path / "c.sqlite").exists() or "random" not in message


# ------------------------------------------------------------------ noted
def test_noted_a_folder_as_path_is_refused_in_the_configs_words(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config

    (tmp_path / "sub").mkdir()
    config = tmp_path / "p.toml"
    config.write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "sst2"\npath = "sub"\n'
    )
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    said = str(caught.value)
    assert said.startswith(f'{config}: experiment 1 path = "sub" is a folder'), said
    assert "path=" not in said and "give the path of the data set's file" in said, said


@pytest.mark.parametrize("rate", ["0.0000001", "1e-300"])
def test_noted_estimate_refuses_a_rate_too_small_to_mean_anything(tmp_path, rate, capsys):
    from normxlogit.bench.estimate import main, rate_text

    assert main(["--queue", str(tmp_path / "q.toml"), "--rate-after", rate]) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith(f"error: --rate-after {rate}: under 1e-06 tokens/s"), said
    assert said.count("\n") == 0
    # a small rate that is taken is said readably, not "0 padded tokens/s"
    assert rate_text(0.001) == "0.001" and rate_text(0.5) == "0.5"
    assert rate_text(128306.4) == "128,306"


def test_noted_the_page_names_an_index_gold_label(bench_site):
    """A file of label indices: the gold was shown as the index beside the predicted
    label's name ("predicted: neg · gold: 2")."""
    from normxlogit.bench import load_config

    browser = _browser(bench_site)
    experiment = load_config(bench_site / "g.toml").experiments[0].name
    golds = [browser.explanation(0, experiment, "random", i)["label"] for i in range(3)]
    assert golds == ["pos", "neg", "neutral"]


def test_noted_the_merge_advice_says_it_adds_to_an_existing_store(tmp_path):
    from normxlogit.bench import ResultStore
    from normxlogit.cli.bench import _check_writable_store

    plain = tmp_path / "g.sqlite"
    with ResultStore(plain):  # a results store: `run` reads a compressed one before advising
        pass
    packed = tmp_path / "g.sqlite.xz"
    packed.write_bytes(lzma.compress(plain.read_bytes()))
    with pytest.raises(InvalidInputError) as refused:
        _check_writable_store(packed)
    said = str(refused.value)
    assert f"{plain} exists beside it" in said and "adds its results to those there" in said
    assert f"--into {tmp_path / 'plain-g.sqlite'}" in said, said


def test_b05_a_model_known_only_once_loaded_gets_the_same_words():
    """A hub model's head is known once it loads: the gold labels' check then says the
    mix too, not "labels 1, pos are not all labels"."""
    from types import SimpleNamespace

    from normxlogit.bench.work import gold_labels

    model = SimpleNamespace(task=SimpleNamespace(labels=["neg", "pos"], has_label_set=True))
    unit = SimpleNamespace(
        experiment="m:d.tsv",
        model="org/m",
        source="d.tsv",
        label_names=("1", "pos"),
        labels={0: 1, 1: "pos"},
    )
    with pytest.raises(InvalidInputError) as caught:
        gold_labels(model, unit)
    said = str(caught.value)
    assert "d.tsv gives the gold labels both as indices (1) and as names (pos)" in said, said
    assert "(neg, pos) or as their indices (0 to 1)" in said and "not all labels" not in said
