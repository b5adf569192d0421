"""Tables, figures and the report, made from the store."""

from __future__ import annotations

import numpy as np
import pytest

from normxlogit.bench import ResultStore, load_config, plan, run_bench
from normxlogit.bench.report import build_table, write_report
from normxlogit.bench.results import experiment_results, export_frame
from normxlogit.common.errors import InvalidInputError

from .helpers import stored, write_config


def test_report_renders_tables_and_figures_from_the_store(tmp_path, sentiment_model):
    config = load_config(write_config(tmp_path, sentiment_model))
    store_path = tmp_path / "results.sqlite"
    with ResultStore(store_path) as store:
        run_bench(config, store)
        written = write_report(config, store, tmp_path / "report")
        results = experiment_results(config, store)
    names = {path.name for path in written}
    assert {"report.md", "table-comp_cd.tex", "curve-comp_cd.png", "time-vs-length.png"} <= names
    for path in written:
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| grad_ellm | N/A |" in markdown
    latex = (tmp_path / "report" / "table-comp_cd.tex").read_text()
    assert "\\toprule" in latex
    # best and second marked where the values differ as printed (three decimals)
    ranks = build_table(_comp_cd_table(), results).ranks()
    assert ("\\textbf{" in latex) == (1 in ranks.values())
    assert ("\\underline{" in latex) == (2 in ranks.values())
    # the table's numbers are the evaluation's own summary of the stored values
    summary = results[0].summary()
    table = build_table(config.tables[0] if config.tables else _comp_cd_table(), results)
    index = table.columns.index(("sst2", str(sentiment_model), "comp_cd"))
    assert table.values[("normxlogit", index)] == pytest.approx(
        summary.loc["normxlogit", "comp_cd"]
    )
    frame = stored(store_path)
    mine = frame[(frame["method"] == "normxlogit") & (frame["metric"] == "comp_cd")]
    assert summary.loc["normxlogit", "comp_cd"] == pytest.approx(mine["value"].mean())
    assert "Seconds per instance" in markdown  # the default figures include time
    curves_only = load_config(
        write_config(tmp_path, sentiment_model, body='[[plots]]\nmetric = "comp_cd"\n')
    )
    with ResultStore(store_path) as store:
        written = write_report(curves_only, store, tmp_path / "curves")
    assert {path.name for path in written} == {"report.md", "plot1.png"} | {
        p.name for p in written if p.suffix == ".tex"
    }
    assert "Seconds per instance" not in (tmp_path / "curves" / "report.md").read_text()


def _comp_cd_table():
    from normxlogit.bench.spec import TableSpec

    return TableSpec(title="comp_cd", metric="comp_cd")


def test_pisoft_layout_datasets_in_rows_methods_in_columns_with_average(tmp_path, sentiment_model):
    """pi-Soft's tables: datasets down, methods across, an Avg row; ranks along a row."""
    from normxlogit.bench.spec import TableSpec

    config = load_config(write_config(tmp_path, sentiment_model, limit=3))
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_bench(config, store)
        results = experiment_results(config, store)
    layout = dict(title="pi", metric="pi_soft_nc", rows="dataset", groups="none", columns="method")
    table = build_table(TableSpec(**layout, average=True), results)
    assert table.rows == ["sst2", "Avg"]
    assert [column for _, column, _ in table.columns] == ["normxlogit", "random", "grad_ellm"]
    assert table.values[("sst2", 2)] == "N/A"
    ranks = table.ranks()
    assert sorted(ranks[("sst2", i)] for i in (0, 1)) == [1, 2]
    markdown = table.to_markdown()
    assert markdown.splitlines()[2].startswith("| dataset | normxlogit (pi_soft_nc ↑)")
    assert "| Avg |" in markdown
    # a paper's number for the nearest setting goes beside ours, keyed by dataset here
    spec = TableSpec(**layout, paper={"sst2": {"random": 0.549}}, paper_note="LLaMA-3.1-8B")
    table = build_table(spec, results)
    ours = table.values[("sst2", 1)]
    assert f"{ours:.3f}** (0.549)" in table.to_markdown() or f"{ours:.3f}</u> (0.549)" in (
        table.to_markdown()
    )
    assert "nearest setting: LLaMA-3.1-8B" in table.to_markdown()
    assert "{\\scriptsize (0.549)}" in table.to_latex()


def test_a_table_shows_each_numbers_standard_error_over_instances(tmp_path, sentiment_model):
    from normxlogit.bench.spec import TableSpec

    config = load_config(write_config(tmp_path, sentiment_model, limit=4))
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_bench(config, store)
        results = experiment_results(config, store)
        values = export_frame(store)
    layout = dict(title="pi", metric="pi_soft_nc", rows="dataset", groups="none", columns="method")
    table = build_table(TableSpec(**layout, standard_error=True), results)
    # by hand from the stored values: each review's AUC over pi, then std / sqrt(n)
    mine = values[(values["method"] == "random") & (values["metric"] == "pi_soft_nc")]
    trapezoid = getattr(np, "trapezoid", None) or np.trapz
    areas = [
        trapezoid(rows.sort_values("x")["value"], rows.sort_values("x")["x"])
        for _, rows in mine.groupby("instance")
    ]
    # a review whose metric is undefined (NaN at every pi) counts in neither number
    areas = np.array([area for area in areas if np.isfinite(area)])
    assert len(areas) >= 2
    error = np.std(areas, ddof=1) / np.sqrt(len(areas))
    assert table.values[("sst2", 1)] == pytest.approx(np.mean(areas))
    assert table.errors[("sst2", 1)] == pytest.approx(error)
    markdown = table.to_markdown()
    assert f"{np.mean(areas):.3f}" in markdown and f"± {error:.3f}" in markdown
    assert "±: the standard error over the instances." in markdown
    assert "| N/A |" in markdown  # grad_ellm does not apply: no spread either
    assert "$\\pm$" in table.to_latex()
    cells = table.to_dict()["rows"][0]["cells"]
    assert cells[1]["standard_error"] == pytest.approx(table.errors[("sst2", 1)])
    assert cells[2]["standard_error"] is None
    assert "±" not in build_table(TableSpec(**layout), results).to_markdown()


def test_a_report_compares_every_method_with_one_instance_by_instance(tmp_path, sentiment_model):
    from normxlogit.bench.report import paired_table

    config = load_config(write_config(tmp_path, sentiment_model, limit=4))
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_bench(config, store)
        (result,) = experiment_results(config, store)
        values = export_frame(store)
        with pytest.raises(InvalidInputError, match="--versus 'nope' is no method of this"):
            write_report(config, store, tmp_path / "none", versus="nope")
        with pytest.raises(InvalidInputError, match=r"or best \(each metric's best method\)"):
            write_report(config, store, tmp_path / "none", versus="BEST")  # the word is best
        assert not (tmp_path / "none").exists()  # refused before anything is written
        written = write_report(config, store, tmp_path / "report", versus="random")
    # by hand: each review's comp_cd AOPC, normxlogit minus random, on the same reviews
    aopc = (
        values[values["metric"] == "comp_cd"]
        .groupby(["method", "instance"])["value"]
        .mean()
        .unstack("method")
    )
    differences = (aopc["normxlogit"] - aopc["random"]).dropna().to_numpy()
    error = differences.std(ddof=1) / np.sqrt(len(differences))
    paired = result.paired_differences("random").set_index(["method", "metric"])
    assert paired.loc[("normxlogit", "comp_cd"), "difference"] == pytest.approx(differences.mean())
    assert paired.loc[("normxlogit", "comp_cd"), "standard_error"] == pytest.approx(error)
    markdown = written[0].read_text()
    assert "each method minus random, paired over instances" in markdown
    from normxlogit.bench.report import _difference

    assert f"| normxlogit | {_difference(differences.mean(), error)}" in markdown
    assert "a paired t-test tells it from zero" in markdown
    assert "| grad_ellm |" not in paired_table(result, "random")  # N/A: nothing to pair


def test_versus_best_pairs_each_metric_with_the_method_that_does_best_on_it(
    tmp_path, sentiment_model
):
    from normxlogit.bench.report import paired_table

    config = load_config(write_config(tmp_path, sentiment_model, limit=4))
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_bench(config, store)
        (result,) = experiment_results(config, store)
        written = write_report(config, store, tmp_path / "report", versus=["random", "best"])
    summaries = result.instance_summaries()
    markdown = paired_table(result, "best")
    for metric, higher in (("comp_cd", True), ("suff_acc", True), ("pi_soft_nc", True)):
        means = summaries[metric].groupby(level="method").mean()
        best = means.idxmax() if higher else means.idxmin()
        other = next(m for m in means.index if m != best)
        difference = (
            summaries.xs(other, level="method")[metric] - summaries.xs(best, level="method")[metric]
        ).mean()
        column = ["comp_cd", "suff_acc", "pi_soft_nc"].index(metric)
        rows = {
            line.split(" | ")[0].strip("| "): line.split(" | ")[1:]
            for line in markdown.splitlines()
            if line.startswith("| ") and "---" not in line
        }
        assert rows[best][column].strip(" |") == "best"
        shown = rows[other][column].split(" ±")[0]  # 3 decimals, or 2 digits when tiny
        assert shown in (f"{difference:.3f}", f"{difference:.1e}")
    text = written[0].read_text()
    assert "each method minus random" in text and "each method minus the best" in text


def test_cells_of_an_unfinished_run_are_marked(tmp_path, sentiment_model):
    """A table made while a run is still going says which numbers cover part of the data."""
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_bench(load_config(write_config(tmp_path, sentiment_model, limit=4)), store)
        bigger = load_config(write_config(tmp_path, sentiment_model, limit=8))
        plan(bigger, store)  # what a run that was killed would have planned (and recorded)
        table = build_table(_comp_cd_table(), experiment_results(bigger, store))
    assert set(table.partial.values()) == {(4, 8)}
    markdown = table.to_markdown()
    assert "†" in markdown
    # the note names each partial cell by its row and its column, as the header spells it
    column = table.columns[0][0] + " · " + table.columns[0][1]
    assert f"normxlogit / {column} 4/8" in markdown and f"random / {column} 4/8" in markdown


def test_common_compares_started_methods_on_the_same_instances(tmp_path, sentiment_model):
    both = '["normxlogit", "random"]'
    with ResultStore(tmp_path / "results.sqlite") as store:
        run_bench(
            load_config(write_config(tmp_path, sentiment_model, methods=both, limit=2)), store
        )
        one = write_config(tmp_path, sentiment_model, methods='["normxlogit"]', limit=5)
        run_bench(load_config(one), store)
        config = load_config(
            write_config(tmp_path, sentiment_model, methods='["normxlogit", "random", "lime"]')
        )
        (results,) = experiment_results(config, store)
        shared = results.common()
        written = write_report(config, store, tmp_path / "report", common=True)
    assert results.done("normxlogit", "comp_cd") == 5 and results.done("random", "comp_cd") == 2
    assert sorted(shared.frame["instance"].unique()) == [0, 1]  # lime not started: left out
    assert shared.total == 2
    assert "same instances" in written[0].read_text()


# ----------------------------------------------------------------------------- figures


def test_a_method_keeps_its_colour_in_every_panel():
    from normxlogit.bench.plots import method_colours

    colours = method_colours(["Random", "IG", "DecompX", "IG", "NormXLogit"])
    assert list(colours) == ["Random", "IG", "DecompX", "NormXLogit"]
    assert len(set(colours.values())) == 4
    # a panel without DecompX (N/A there) still draws NormXLogit in NormXLogit's colour
    assert (
        method_colours(["Random", "IG", "DecompX", "NormXLogit"])["NormXLogit"]
        == colours["NormXLogit"]
    )


def test_summary_and_distribution_figures(tmp_path, sentiment_model):
    path = write_config(tmp_path, sentiment_model, methods='["normxlogit", "random"]', limit=4)
    path.write_text(
        path.read_text()
        + """
[[plots]]
kind = "summary"
metric = "pi_soft_nc"
name = "sweep"

[[plots]]
kind = "distribution"
name = "values"
"""
    )
    config = load_config(path)
    with ResultStore(tmp_path / "results.sqlite") as store:
        run_bench(config, store)
        from normxlogit.bench.report import attribution_values

        values = attribution_values(config, store)
        written = write_report(config, store, tmp_path / "report")
    (experiment,) = values
    assert set(values[experiment]) == {"normxlogit", "random"}
    for scores in values[experiment].values():
        assert len(scores) > 0 and min(scores) == 0.0 and max(scores) == 1.0
    names = {p.name for p in written}
    assert {"sweep.png", "values.png"} <= names
    from PIL import Image

    for name in ("sweep.png", "values.png"):
        assert Image.open(tmp_path / "report" / name).size[0] > 300
