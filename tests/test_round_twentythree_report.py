"""Round twenty-three of new-user probes, probe a: the bench report of a method explained
at a fixed layer (P03: its plots named it "final layer" / "LAST"), a table cell of a method
an experiment does not run (P06: marked "not computed yet"), and the timing rows of two
experiments that differ only in target (P07: two rows alike). Tiny models, 4 texts."""

from __future__ import annotations

import json

import pytest

from normxlogit.bench import plots
from normxlogit.bench.plots import summary_axis_label
from normxlogit.bench.spec import MethodSpec

from .conftest import invoke_in

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]


@pytest.fixture
def drawn(monkeypatch):
    """Every figure the report saves, by file name (read before it is closed)."""
    figures = {}
    save = plots._save

    def keep(plt, figure, path):
        figures[path.stem] = {
            "legends": [
                [text.get_text() for text in axis.get_legend().get_texts()]
                for axis in figure.axes
                if axis.get_legend() is not None
            ],
            "ylabels": [axis.get_ylabel() for axis in figure.axes if axis.get_visible()],
        }
        save(plt, figure, path)

    monkeypatch.setattr(plots, "_save", keep)
    return figures


def _run_report(folder, config: str, rows: list[dict]) -> str:
    """``bench run`` and ``bench report`` of ``config`` on ``rows``: the report's Markdown."""
    (folder / "d.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "g.toml").write_text(config)
    ran = invoke_in(folder, "bench", "run", "g.toml")
    assert ran.exit_code == 0, ran.output
    result = invoke_in(folder, "bench", "report", "g.toml")
    assert result.exit_code == 0, result.output
    return (folder / "g-report" / "report.md").read_text()


# ------------------------------------------------------------------ P03
def test_p03_a_method_at_a_fixed_layer_is_labelled_with_its_layer(tmp_path, tiny_classifier, drawn):
    """LA2 (layer = 1) was drawn as "LA2 (final layer)", its axis "evidence_ap LAST"."""
    rows = [{"text": t, "label": i % 2, "evidence": [0, 1]} for i, t in enumerate(TEXTS)]
    _run_report(
        tmp_path,
        'metrics = ["evidence_ap"]\n'
        '[[methods]]\nname = "normxlogit"\nlabel = "NX-all"\nlayer = "all"\n'
        '[[methods]]\nname = "integrated_gradients"\nlabel = "IG"\noptions = { steps = 2 }\n'
        '[[methods]]\nname = "logat"\nlabel = "LA2"\nlayer = 1\n'
        f'[[experiments]]\nname = "E"\nmodel = "{tiny_classifier}"\ndataset = "d.jsonl"\n'
        '[[plots]]\nkind = "layers"\nmetric = "evidence_ap"\nname = "layers"\n'
        '[[plots]]\nkind = "summary"\nmetric = "evidence_ap"\nname = "summary"\n',
        rows,
    )
    assert drawn["layers"]["legends"] == [["NX-all", "IG (final layer)", "LA2 (layer 1)"]]
    (label,) = drawn["summary"]["ylabels"]
    assert "LAST" not in label
    assert label.startswith("evidence_ap (final layer; LA2 at layer 1)")


def test_p03_summary_axis_label_names_the_layer_only_where_one_is_fixed():
    final = [MethodSpec("normxlogit", layer="all"), MethodSpec("integrated_gradients")]
    assert summary_axis_label("evidence_ap", final).startswith("evidence_ap (final layer)")
    only = [MethodSpec("logat", label="LA2", layer=2)]
    assert summary_axis_label("evidence_ap", only).startswith("evidence_ap (LA2 at layer 2)")
    assert summary_axis_label("comp_cd", only).startswith("comp_cd AOPC")  # no layer axis


# ------------------------------------------------------------------ P06 / P07
TWO_TARGETS = (
    'metrics = ["comp_cd"]\nmethods = ["normxlogit", "random"]\n'
    '[[experiments]]\nname = "A"\nmodel = "{model}"\ndataset = "d.jsonl"\nlimit = 3\n'
    '[[experiments]]\nname = "B"\nmodel = "{model}"\ndataset = "d.jsonl"\nlimit = 3\n'
    'methods = ["normxlogit"]\ntarget = "label"\n'
    '[[tables]]\nmetric = "comp_cd"\ncolumns = "experiment"\n'
)


@pytest.fixture
def two_targets(tmp_path, tiny_classifier) -> str:
    """The report of A (normxlogit, random) and B (normxlogit of the gold label), done."""
    rows = [{"text": t, "label": i % 2} for i, t in enumerate(TEXTS)]
    return _run_report(tmp_path, TWO_TARGETS.format(model=tiny_classifier), rows)


def test_p06_a_cell_no_experiment_asks_for_is_blank_not_pending(two_targets):
    """B's random cell read "–" with "–: not computed yet", though no run will fill it."""
    metric_table = two_targets.split("Seconds per instance")[0]
    (random_row,) = [line for line in metric_table.splitlines() if line.startswith("| random |")]
    assert random_row.endswith("|  |")
    assert "–" not in random_row
    assert "–: not computed yet" not in two_targets
    assert "Blank: the config does not ask for it" in two_targets


def test_p06_a_cell_asked_for_and_missing_stays_not_computed(tmp_path, tiny_classifier):
    from normxlogit.bench import ResultStore, load_config
    from normxlogit.bench.report import build_table
    from normxlogit.bench.results import experiment_results

    (tmp_path / "g.toml").write_text(TWO_TARGETS.format(model=tiny_classifier))
    (tmp_path / "d.jsonl").write_text(json.dumps({"text": TEXTS[0], "label": 0}) + "\n")
    config = load_config(tmp_path / "g.toml")
    with ResultStore(tmp_path / "empty.sqlite") as store:  # nothing run yet
        table = build_table(config.tables[0], experiment_results(config, store))
    markdown = table.to_markdown()
    assert "| random | – |  |" in markdown
    assert "–: not computed yet." in markdown and "Blank:" in markdown
    cells = table.to_dict()["rows"][1]["cells"]
    assert [c["asked"] for c in cells] == [True, False]


def test_p07_timing_rows_of_two_targets_name_their_experiment(two_targets):
    """Two rows "normxlogit" (A's prediction, B's gold label) could not be told apart."""
    timing = two_targets.split("Seconds per instance")[1].split("![")[0]
    body = timing.split("---:|\n")[-1]  # the rows under the separator
    labels = [line.split("|")[1].strip() for line in body.splitlines() if line]
    assert labels == ["normxlogit (A)", "random", "normxlogit (B)"]
