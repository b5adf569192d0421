"""Round nineteen of new-user probes, probe a (bench): user text in the figures drawn as
written (``$...$`` not parsed as math: P03; a label starting with ``_`` kept in every
legend: P04), every title a non-empty string (P05), table and plot names too long for a
file name refused when the config is read (P06), two merges into one compressed store
at once (P10), a plain store cut short (P12) and ``--into`` a link to the source (noted
4). Tiny models, a 4-text data file."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench import plots as bench_plots
from normxlogit.bench.archive import readable_store, writable_store
from normxlogit.bench.report import write_report
from normxlogit.common import outputs
from normxlogit.sanity import plot as sanity_plot
from normxlogit.sanity.randomization import SanityResult

from .bench.helpers import config_refusal
from .conftest import invoke_in, sanity_frame

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]


def _config(
    folder: Path,
    model: Path,
    top: str = 'methods = ["random"]',
    experiment: str = "",
    tail: str = "",
    title: str | None = '"t"',
):
    """One experiment of ``model`` on a 4-text file: ``top`` before it (methods),
    ``experiment`` inside it, ``tail`` after it (tables, plots); ``title`` as TOML (None:
    none)."""
    data = folder / "d.jsonl"
    data.write_text(
        "".join(json.dumps({"text": t, "label": i % 3}) + "\n" for i, t in enumerate(TEXTS))
    )
    path = folder / "grid.toml"
    head = "" if title is None else f"title = {title}\n"
    path.write_text(
        f'{head}seeds = [0]\nmetrics = ["comp_cd"]\nchunk_size = 4\n{top}\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\nlimit = 2\n{experiment}\n' + tail
    )
    return path


_refused = config_refusal


def _drawn_texts(monkeypatch, module) -> list[dict]:
    """Every figure ``module`` saves, as its legends' texts and whether any user text in
    it would be read as math (the figure is still written)."""
    figures: list[dict] = []
    save = module.save_figure

    def recording(figure, path, *args, **kwargs):
        texts = [t for axis in figure.axes if axis.get_legend() for t in axis.get_legend().texts]
        titles = [axis.title for axis in figure.axes] + list(figure.texts)  # the suptitle
        ticks = [t for axis in figure.axes for t in axis.get_xticklabels()]
        figures.append(
            {
                "name": Path(path).stem,
                "legend": [t.get_text() for t in texts],
                "math": [
                    t.get_text()
                    for t in (*texts, *titles, *ticks)
                    if "$" in t.get_text() and t.get_parse_math()
                ],
            }
        )
        return save(figure, path, *args, **kwargs)

    monkeypatch.setattr(module, "save_figure", recording)
    return figures


# ------------------------------------------------------------------ P03, P04
PLOTS = (
    '[[plots]]\nmetric = "comp_cd"\ntitle = "curve $^$"\n[[plots]]\nkind = "time"\n'
    '[[plots]]\nkind = "distribution"\ntitle = "$x$"\n[[plots]]\nkind = "summary"\n'
    'metric = "comp_cd"\n'
)


def _report(tmp_path: Path, model: Path, labels: tuple[str, str], name: str = "e"):
    methods = "".join(
        f'[[methods]]\nname = "{method}"\nlabel = "{label}"\n'
        for method, label in zip(("normxlogit", "random"), labels, strict=True)
    )
    config = load_config(_config(tmp_path, model, methods, f'name = "{name}"', PLOTS))
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(config, store)
        return write_report(config, store, tmp_path / "report")


def test_p03_mathtext_in_labels_names_and_titles_is_drawn_as_written(
    monkeypatch, tmp_path, tiny_classifier
):
    """``$\\frac$`` in a label ended the report in a ParseSyntaxException traceback after
    the .tex was written (serve: a 500); a balanced ``$x$`` turned into math."""
    figures = _drawn_texts(monkeypatch, bench_plots)
    written = _report(tmp_path, tiny_classifier, ("IG $\\\\frac$", "r $x$"), "e $\\\\frac$")
    assert {p.name for p in written} >= {"report.md", "plot1.png", "plot4.png"}
    assert len(figures) == 4
    assert all(not figure["math"] for figure in figures), figures
    assert "IG $\\frac$" in figures[0]["legend"]


def test_p04_a_label_starting_with_an_underscore_is_in_every_legend(
    monkeypatch, tmp_path, tiny_classifier
):
    """matplotlib leaves out of a legend it gathers a label starting with ``_``: the time
    and distribution plots drew the line unnamed."""
    figures = _drawn_texts(monkeypatch, bench_plots)
    _report(tmp_path, tiny_classifier, ("IG", "_hidden"))
    legends = {figure["name"]: figure["legend"] for figure in figures}
    for name in ("plot1", "plot2", "plot3"):  # curve, time, distribution
        assert sorted(legends[name]) == ["IG", "_hidden"], legends


def test_p03_p04_the_sanity_figure_draws_its_method_names_as_written(monkeypatch, tmp_path):
    figures = _drawn_texts(monkeypatch, outputs)  # the sanity figure imports it when drawing
    result = SanityResult(sanity_frame(method="_g $\\frac$"))
    sanity_plot.plot_sanity(result, tmp_path / "s.png")
    assert (tmp_path / "s.png").is_file()
    assert figures[0]["legend"] == ["_g $\\frac$"] and not figures[0]["math"]


# ------------------------------------------------------------------ P05
@pytest.mark.parametrize(
    ("title", "tail", "words"),
    [
        ('"t"', '[[tables]]\nmetric = "comp_cd"\ntitle = ""\n', ("table 1 title = ''",)),
        ('"t"', '[[plots]]\nmetric = "comp_cd"\ntitle = " "\n', ("plot 1 title = ' '",)),
        ("5", "", ("the config title must be a string",)),
        ('""', "", ("the config title = ''", "leave it out")),
    ],
)
def test_p05_every_title_is_a_non_empty_string(tmp_path, tiny_classifier, title, tail, words):
    """A table's ``title = ""`` became ``****`` (a rule) and ``\\caption{}``; the config's
    ``title = 5`` became ``# 5``, ``title = ""`` an empty heading."""
    _refused(_config(tmp_path, tiny_classifier, tail=tail, title=title), *words)
    kept = "\n".join(line for line in tail.splitlines() if not line.startswith("title"))
    config = load_config(_config(tmp_path, tiny_classifier, tail=kept, title=None))
    assert config.title == "grid"  # left out: the defaults
    assert [t.title for t in config.tables] in ([], ["Table 1"])


# ------------------------------------------------------------------ P06
@pytest.mark.parametrize(
    ("section", "name", "words"),
    [
        ("tables", "n" * 300, ("table 1 name 'nnnnnnnnnnnnnnnnnnnn…' is 300 characters",)),
        ("plots", "字" * 80, ("plot 1 name", "240 bytes", "give a shorter name")),
    ],
)
def test_p06_a_name_too_long_for_a_file_is_refused_when_read(
    tmp_path, tiny_classifier, section, name, words
):
    """300 characters passed `bench status`; the report then failed with "File name too
    long; pass --output DIR ...", blaming the folder, after writing part of the report."""
    tail = f'[[{section}]]\nmetric = "comp_cd"\nname = "{name}"\n'
    message = _refused(_config(tmp_path, tiny_classifier, tail=tail), *words)
    assert name not in message
    tail = f'[[{section}]]\nmetric = "comp_cd"\nname = "{"n" * 100}"\n'
    assert load_config(_config(tmp_path, tiny_classifier, tail=tail))


# ------------------------------------------------------------------ P10
def _store(folder: Path, model: Path, method: str) -> Path:
    """A store of ``method`` on two texts."""
    config = load_config(_config(folder, model, f'methods = ["{method}"]'))
    path = folder / f"{method}.sqlite"
    with ResultStore(path) as store:
        run_bench(config, store)
    return path


def _methods(path: Path) -> set[str]:
    with readable_store(path) as plain, ResultStore(plain, create=False) as store:
        return {json.loads(key)["name"] for key in store.values()["method"]}


def test_p10_a_second_merge_into_a_compressed_store_waits_for_the_first(tmp_path, tiny_classifier):
    """Each merge unpacked the store, merged and replaced it whole: the later replace
    dropped the earlier merge's rows, and both said "added"."""
    first, second = (_store(tmp_path, tiny_classifier, m) for m in ("random", "normxlogit"))
    into = tmp_path / "m.sqlite.xz"
    unpacked, waited = threading.Event(), threading.Event()
    told: list[str] = []

    def merge(source: Path, hold: bool) -> None:
        def wait(message: str) -> None:
            told.append(message)
            waited.set()

        with writable_store(into, wait) as plain, ResultStore(plain, shown=into) as target:
            if hold:  # the first merge has read the store; the second starts now
                unpacked.set()
                assert waited.wait(30)
            target.merge_from(source)

    with ThreadPoolExecutor(2) as pool:
        merging = pool.submit(merge, first, True)
        assert unpacked.wait(30)
        pool.submit(merge, second, False).result(timeout=60)
        merging.result(timeout=60)
    assert told == [f"waiting for another merge into {into}"]
    assert _methods(into) == {"random", "normxlogit"}
    assert not (tmp_path / ".m.sqlite.xz.lock").exists()


def test_p10_merge_says_it_waits_for_a_lock_held_elsewhere(tmp_path, tiny_classifier):
    from normxlogit.bench.archive import store_lock  # new in round nineteen

    source = _store(tmp_path, tiny_classifier, "random")
    into = tmp_path / "m.sqlite.gz"
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store_lock(into):
            held.set()
            release.wait(30)

    with ThreadPoolExecutor(1) as pool:
        holding = pool.submit(hold)
        assert held.wait(30)
        timer = threading.Timer(1.0, release.set)
        timer.start()
        result = invoke_in(tmp_path, "bench", "merge", source.name, "--into", into.name)
        holding.result(timeout=30)
    assert result.exit_code == 0, result.output
    assert f"waiting for another merge into {into.name}" in result.output
    assert _methods(into) == {"random"}


# ------------------------------------------------------------------ P12, noted 4
def test_p12_a_plain_store_cut_short_is_called_damaged(tmp_path, tiny_classifier):
    """It was told to "name the stores to merge (.sqlite, ...)", though it was one."""
    whole = _store(tmp_path, tiny_classifier, "random")
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    result = invoke_in(tmp_path, "bench", "merge", "cut.sqlite", "--into", "new.sqlite")
    assert result.exit_code != 0
    message = " ".join(result.output.split())
    assert "source cut.sqlite is damaged (" in message and "cut short" in message
    assert "name the stores" not in message
    assert not (tmp_path / "new.sqlite").exists()


def test_noted4_into_a_link_to_the_source_names_the_link(tmp_path, tiny_classifier):
    """It said "s.sqlite is the store being merged into", naming the source."""
    source = _store(tmp_path, tiny_classifier, "random")
    (tmp_path / "link.sqlite").symlink_to(source.name)
    result = invoke_in(tmp_path, "bench", "merge", source.name, "--into", "link.sqlite")
    assert result.exit_code != 0
    message = " ".join(result.output.split())
    assert "--into link.sqlite is a link to random.sqlite, the store being merged" in message
