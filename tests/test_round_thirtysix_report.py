"""Round thirty-six: the pi-Soft tables' "Avg" row compares methods on the same rows.

The GPU slot of 2026-11-28 left BoolQ with seven of ten methods: the report's Avg row
then put Attention's mean over SST-2 and BoolQ beside ReAGent's SST-2 alone, and marked
the best among them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.report import AVERAGE_ROW, build_table
from normxlogit.bench.results import experiment_results
from normxlogit.bench.spec import TableSpec

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]
LAYOUT = dict(metric="comp_cd", rows="dataset", groups="none", columns="method", average=True)


def _two_datasets(folder: Path, model: Path, extra_b: str = "") -> Path:
    for name in ("first", "second"):
        (folder / f"{name}.jsonl").write_text(
            "".join(json.dumps({"text": t, "label": i % 2}) + "\n" for i, t in enumerate(TEXTS))
        )
    path = folder / "grid.toml"
    path.write_text(
        'title = "t"\nmetrics = ["comp_cd"]\nmethods = ["normxlogit", "random"]\n'
        f'[[experiments]]\nname = "a"\nmodel = "{model}"\ndataset = "first.jsonl"\n'
        f'[[experiments]]\nname = "b"\nmodel = "{model}"\ndataset = "second.jsonl"\n{extra_b}'
    )
    return path


def test_a_column_lacking_a_row_gets_no_average(tmp_path, tiny_classifier):
    config = load_config(_two_datasets(tmp_path, tiny_classifier))
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(config.only(["a"]), store)
        run_bench(config.only(["b"]).only_methods(["normxlogit"]), store)
        results = experiment_results(config, store)
    table = build_table(TableSpec(title="t", **LAYOUT), results)
    first, second = table.rows[:2]
    assert table.rows[2] == AVERAGE_ROW
    both = [table.values[(first, 0)], table.values[(second, 0)]]
    assert table.values[(AVERAGE_ROW, 0)] == pytest.approx(sum(both) / 2)
    assert (AVERAGE_ROW, 1) not in table.values  # random has the first row only
    assert (AVERAGE_ROW, 1) not in table.not_asked  # shown as not computed yet
    assert AVERAGE_ROW in table.average_note() and first in table.average_note()
    markdown = table.to_markdown()
    assert "Avg: each column's mean over the same rows" in markdown
    assert "–: not computed yet." in markdown
    assert table.to_dict()["average_note"] == table.average_note()
    # no rank on the Avg row between a mean over two rows and one over one
    assert (AVERAGE_ROW, 0) not in table.ranks()


def test_every_column_complete_averages_all_and_says_nothing(tmp_path, tiny_classifier):
    config = load_config(_two_datasets(tmp_path, tiny_classifier))
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(config, store)
        results = experiment_results(config, store)
    table = build_table(TableSpec(title="t", **LAYOUT), results)
    for index in (0, 1):
        rows = [table.values[(row, index)] for row in table.rows[:2]]
        assert table.values[(AVERAGE_ROW, index)] == pytest.approx(sum(rows) / 2)
    assert table.average_note() == ""
    assert "Avg:" not in table.to_markdown()


def test_a_method_the_config_does_not_ask_on_a_row_has_a_blank_average(tmp_path, tiny_classifier):
    narrowed = 'methods = ["normxlogit"]\n'
    config = load_config(_two_datasets(tmp_path, tiny_classifier, narrowed))
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(config, store)
        results = experiment_results(config, store)
    table = build_table(TableSpec(title="t", **LAYOUT), results)
    assert (AVERAGE_ROW, 1) in table.not_asked  # no run will ever give it the second row
    assert isinstance(table.values[(AVERAGE_ROW, 0)], float)


def test_the_avg_row_is_never_ranked_among_the_methods(tmp_path, tiny_classifier):
    """Round 37: with ``rows = "method"`` the Avg row (a mean over the methods) was
    underlined as the second-best method."""
    config = load_config(_two_datasets(tmp_path, tiny_classifier))
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(config, store)
        results = experiment_results(config, store)
    layout = dict(metric="comp_cd", rows="method", groups="none", columns="dataset")
    table = build_table(TableSpec(title="t", average=True, **layout), results)
    assert table.rows[-1] == AVERAGE_ROW
    assert isinstance(table.values[(AVERAGE_ROW, 0)], float)
    assert not [cell for cell in table.ranks() if cell[0] == AVERAGE_ROW]
    assert all(cell["rank"] is None for cell in table.to_dict()["rows"][-1]["cells"])
