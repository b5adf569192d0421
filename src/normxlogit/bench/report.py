"""``bench report``: the papers' tables (Markdown, LaTeX) and figures (PNG) from a store.

A table puts methods in rows and, for each group (by default a dataset), one column per
model, like NormXLogit table 1; each cell is the metric's summary (AOPC over ratios, AUC
over pi) averaged over seeds, "N/A" where the method does not apply to the model. In
every column the best value is bold and the second underlined, "best" following the
metric's own direction. Figures: a metric's curve per method (one panel per
experiment), and explain time per instance against input length.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..common.errors import InvalidInputError
from ..common.fields import markdown_text
from ..common.outputs import fixed_point, write_atomically
from .results import (
    ExperimentResults,
    experiment_results,
    seeds_not_started_phrase,
    timings_by_experiment,
)
from .spec import AVERAGE_ROW, VERSUS_BEST, BenchConfig, PlotSpec, TableSpec
from .store import ResultStore

NOT_APPLICABLE = "N/A"
#: a cell every instance of which is left out with no value (its target is its contrast):
#: computed, and a rerun gives it no number either
LEFT_OUT = "n/a"
#: why a cell leaves instances out (the report's note and the page's words)
LEFT_OUT_REASON = (
    "Left out, with no value: instances whose target is their contrast (the difference of "
    "an output with itself explains nothing)"
)
#: the statistics of a paired-comparison cell (from ``paired_differences``)
PAIRED_STATISTICS = ["difference", "standard_error", "p_value"]


@dataclass
class RenderedTable:
    """A table's numbers and where its best and second-best values are."""

    spec: TableSpec
    columns: list[tuple[str, str, str]]  # (group, column, metric)
    rows: list[str]
    values: dict[tuple[str, int], float | str]  # (row, column index) -> number or N/A
    #: the paper's number for a cell, where the config gives one
    paper: dict[tuple[str, int], float] = field(default_factory=dict)
    #: cells computed on part of their instances so far: (done, total)
    partial: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    #: each number's standard error over the instances (tables with ``standard_error``)
    errors: dict[tuple[str, int], float] = field(default_factory=dict)
    #: instances a cell has no value for: their explanation contrasts its target with
    #: itself (nothing explained), so the number leaves them out
    valueless: dict[tuple[str, int], int] = field(default_factory=dict)
    #: cells no experiment of the config asks for (an experiment that narrows
    #: ``methods``): blank, as no run will ever fill them, unlike a cell not computed yet
    not_asked: set[tuple[str, int]] = field(default_factory=set)
    #: per metric, the rows the "Avg" row is the mean over (tables with ``average``)
    average_rows: dict[str, list[str]] = field(default_factory=dict)
    #: partial cells with a planned seed not started: those seeds (the number stands
    #: on the other seeds alone)
    not_started: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)

    def ranks(self) -> dict[tuple[str, int], int]:
        """1 for the best value among the methods compared, 2 for the second; none where
        every method compared has the same value (a tie that tells none apart, e.g. a
        plausibility metric on texts whose every segment is evidence) or there is one.

        Methods are compared down a column when they are the rows (NormXLogit's layout) and
        along a row of one metric when they are the columns (pi-Soft's layout).
        """
        from ..evaluation.registry import metric_info

        if self.spec.rows == "method":  # the Avg row is no method: never ranked with them
            methods = [row for row in self.rows if row != AVERAGE_ROW]
            lines = [[(row, index) for row in methods] for index in range(len(self.columns))]
        else:
            lines = []
            for row in self.rows:
                for metric in dict.fromkeys(m for _, _, m in self.columns):
                    lines.append(
                        [(row, i) for i, (_, _, m) in enumerate(self.columns) if m == metric]
                    )
        ranks = {}
        for cells in lines:
            if not cells:
                continue
            info = metric_info(self.columns[cells[0][1]][2])
            if not info.ranked:  # a descriptive quantity: no best
                continue
            higher = info.higher_is_better
            numbers = {  # as shown: values that print alike are tied
                cell: round(value, SHOWN_DIGITS)
                for cell in cells
                if isinstance(value := self.values.get(cell), float) and math.isfinite(value)
            }
            distinct = sorted(set(numbers.values()), reverse=higher)
            if len(distinct) < 2:  # one method, or all alike: nothing is best
                continue
            for cell, value in numbers.items():
                rank = distinct.index(value) + 1
                if rank <= 2:
                    ranks[cell] = rank
        return ranks

    def _marked_rows(self, marks: dict[int, str], beside: str = "{} ({})", spread: str = "{} ± {}"):
        """Each row's label and its cells as text, the best and second-best values
        wrapped in ``marks[1]`` and ``marks[2]`` (format strings), the standard error
        after the number (``spread``) and the paper's number after both (``beside``)
        where there are those."""
        ranks = self.ranks()
        for row in self.rows:
            cells = []
            for index in range(len(self.columns)):
                text = _number(self._value((row, index)))
                rank = ranks.get((row, index))
                text = marks[rank].format(text) if rank in marks else text
                if (row, index) in self.partial:
                    text += "†"
                error = self.errors.get((row, index), math.nan)
                if math.isfinite(error):
                    text = spread.format(text, _number(error))
                if (row, index) in self.paper:
                    text = beside.format(text, _number(self.paper[(row, index)]))
                cells.append(text)
            yield row, cells

    def _column_name(self, index: int) -> str:
        """A column as a reader finds it: its header, under its group where it has one."""
        group, column, _ = self.columns[index]
        return f"{group} · {column}" if group and group != column else column

    def _value(self, cell: tuple[str, int]) -> float | str | None:
        """A cell's number or note; "" where it is not computed yet, None where the config
        does not ask for it."""
        return self.values.get(cell, None if cell in self.not_asked else "")

    def _all_cells(self):
        return [self._value((r, i)) for r in self.rows for i in range(len(self.columns))]

    def left_out_note(self) -> str:
        """What the table leaves out with no value, and why ("" when nothing)."""
        if not self.valueless:
            return ""
        counts = ", ".join(
            f"{markdown_text(row)} / {markdown_text(self._column_name(index))} {count}"
            for (row, index), count in self.valueless.items()
        )
        every = (
            f" {LEFT_OUT}: every instance of the cell is left out."
            if any(self.values.get(cell) == LEFT_OUT for cell in self.valueless)
            else ""
        )
        return f"{LEFT_OUT_REASON}: {counts}.{every}"

    def average_note(self) -> str:
        """Which rows the Avg row is taken over, where a column lacks one of them and so
        has no Avg yet ("" when every column has its Avg or there is no Avg row)."""
        if AVERAGE_ROW not in self.rows:
            return ""
        lacking = [
            index
            for index, (_, _, metric) in enumerate(self.columns)
            if self.average_rows.get(metric)
            and not isinstance(self.values.get((AVERAGE_ROW, index)), float)
        ]
        if not lacking:
            return ""
        over = sorted(
            {row for index in lacking for row in self.average_rows[self.columns[index][2]]},
            key=self.rows.index,
        )
        return (
            f"{AVERAGE_ROW}: each column's mean over the same rows ({', '.join(over)}); "
            "none for a column that lacks a number in one of them."
        )

    def to_dict(self) -> dict:
        """The table as data (a page draws it): header, and per row each cell's value,
        its rank among the methods compared (1, 2 or None), the paper's number, and
        whether it covers only part of its instances."""
        from ..evaluation.registry import metric_info

        ranks = self.ranks()
        return {
            "name": self.spec.name,
            "title": self.spec.title,
            "corner": self.spec.rows,
            "columns": [
                {
                    "group": group,
                    "column": column,
                    "metric": metric,
                    "arrow": metric_info(metric).arrow,
                }
                for group, column, metric in self.columns
            ],  # fmt: skip
            "rows": [
                {
                    "label": row,
                    "cells": [
                        {
                            "value": _plain_cell(self.values.get((row, i))),
                            "rank": ranks.get((row, i)),
                            "paper": self.paper.get((row, i)),
                            "standard_error": _finite_or_none(self.errors.get((row, i))),
                            "partial": (row, i) in self.partial,
                            "asked": (row, i) not in self.not_asked,
                        }
                        for i in range(len(self.columns))
                    ],
                }
                for row in self.rows
            ],
            "paper_note": self.spec.paper_note if self.paper else "",
            "left_out_note": self.left_out_note(),
            "not_asked_note": NOT_ASKED_NOTE if self.not_asked else "",
            "average_note": self.average_note(),
        }

    def to_markdown(self) -> str:
        from ..evaluation.registry import metric_info

        header = [markdown_text(self.spec.rows)] + [
            markdown_text(
                f"{group + ' · ' if group else ''}{column} ({metric_info(metric).marked(metric)})"
            )
            for group, column, metric in self.columns
        ]
        lines = [
            f"**{markdown_text(self.spec.title)}**",
            "",
            "| " + " | ".join(header) + " |",
            "|---|" + "---:|" * len(self.columns),
        ]
        marks = {1: "**{}**", 2: "<u>{}</u>"}
        for row, cells in self._marked_rows(marks):
            lines.append(f"| {markdown_text(row)} | " + " | ".join(cells) + " |")
        if self.errors:
            lines += ["", "±: the standard error over the instances."]
        if self.paper:
            note = f": {markdown_text(self.spec.paper_note)}" if self.spec.paper_note else ""
            lines += ["", f"In parentheses: the paper's number for the nearest setting{note}."]
        if self.partial:
            counts = ", ".join(
                f"{markdown_text(row)} / {markdown_text(self._column_name(index))} {done}/{total}"
                + seeds_not_started_phrase(self.not_started.get((row, index), ()))
                for (row, index), (done, total) in self.partial.items()
            )
            lines += ["", f"†: not every instance is done yet (instances done: {counts})."]
        if self.valueless:
            lines += ["", self.left_out_note()]
        if any(value == "" for value in self._all_cells()):
            lines += ["", "–: not computed yet."]
        if self.not_asked:
            lines += ["", NOT_ASKED_NOTE]
        if note := self.average_note():
            lines += ["", markdown_text(note)]
        if any(isinstance(v, float) and not np.isfinite(v) for v in self._all_cells()):
            lines += [
                "",
                "n/a: computed, with no value for any instance: the metric is undefined "
                "there (the run's warnings say why, e.g. texts of too few segments).",
            ]
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        from ..evaluation.registry import metric_info

        groups: list[tuple[str, int, str]] = []  # (group, span, metric)
        for group, _, metric in self.columns:
            if groups and groups[-1][0] == group and groups[-1][2] == metric:
                groups[-1] = (group, groups[-1][1] + 1, metric)
            else:
                groups.append((group, 1, metric))
        spec = "l" + "r" * len(self.columns)
        arrows = {True: " $\\uparrow$", False: " $\\downarrow$", None: ""}
        top = " & ".join(
            f"\\multicolumn{{{span}}}{{c}}{{{_tex(group)} ({_tex(metric)}"
            f"{arrows[metric_info(metric).higher_is_better]})}}"
            for group, span, metric in groups
        )
        second = " & ".join(_tex(column) for _, column, _ in self.columns)
        lines = [
            "\\begin{table}[t]",
            "\\centering",
            f"\\begin{{tabular}}{{{spec}}}",
            "\\toprule",
            f" & {top} \\\\",
            f"{self.spec.rows.capitalize()} & {second} \\\\",
            "\\midrule",
        ]
        marks = {1: "\\textbf{{{}}}", 2: "\\underline{{{}}}"}
        for row, cells in self._marked_rows(
            marks, "{} {{\\scriptsize ({})}}", "{} {{\\scriptsize $\\pm$ {}}}"
        ):
            lines.append(f"{_tex(row)} & " + " & ".join(cells) + " \\\\")
        lines += [
            "\\bottomrule",
            "\\end{tabular}",
            f"\\caption{{{_tex(self.spec.title)}}}",
            "\\end{table}",
        ]
        return "\n".join(lines) + "\n"


#: the note under a table with a cell no experiment asks for (left blank)
NOT_ASKED_NOTE = "Blank: the config does not ask for it (no experiment runs that method there)."


def build_table(spec: TableSpec, results: list[ExperimentResults]) -> RenderedTable:
    """The numbers of ``spec`` from the experiments' stored values.

    Every (experiment, method) gives one number, placed by its coordinates on the
    table's rows, column groups and columns (method, dataset, model or experiment).
    With ``average``, a last row ("Avg") holds each column's mean over the rows.
    """
    columns: list[tuple[str, str, str]] = []
    rows: list[str] = []
    values: dict[tuple[str, int], float | str] = {}
    paper: dict[tuple[str, int], float] = {}
    partial: dict[tuple[str, int], tuple[int, int]] = {}
    not_started: dict[tuple[str, int], tuple[int, ...]] = {}
    errors: dict[tuple[str, int], float] = {}
    valueless: dict[tuple[str, int], int] = {}
    asked: set[tuple[str, int]] = set()
    for result in results:
        summary = result.summary()
        spread = result.standard_errors() if spec.standard_error else pd.DataFrame()
        experiment = result.experiment
        for method in experiment.methods:
            placed = spec.place(experiment, method)
            if placed is None:
                continue
            row, column = placed
            metric = column[2]
            if column not in columns:
                columns.append(column)
            index = columns.index(column)
            if row not in rows:
                rows.append(row)
            asked.add((row, index))
            reported = next(
                (
                    spec.paper[key][method.display]
                    for key in (experiment.name, experiment.model, experiment.dataset.name)
                    if method.display in spec.paper.get(key, {})
                ),
                None,
            )
            if reported is not None:
                paper[(row, index)] = reported
            if method.display in result.skipped:
                values[(row, index)] = NOT_APPLICABLE
                continue
            left_out = result.valueless.get((method.display, metric), 0)
            if method.display in summary.index and metric in summary.columns:
                values[(row, index)] = float(summary.loc[method.display, metric])
                if method.display in spread.index and metric in spread.columns:
                    error = float(spread.loc[method.display, metric])
                    if math.isfinite(error):  # none: a correlation, or one instance
                        errors[(row, index)] = error
            elif left_out:  # every instance so far is its own contrast: no number, ever
                values[(row, index)] = LEFT_OUT
            else:  # not computed yet
                continue
            if left_out:
                valueless[(row, index)] = left_out
            done = result.done(method.display, metric)
            if done < result.total:
                partial[(row, index)] = (done, result.total)
                if unstarted := result.seeds_not_started(method.display):
                    not_started[(row, index)] = tuple(unstarted)
    average_rows: dict[str, list[str]] = {}
    if spec.average and rows:
        average_rows = _average_rows(columns, rows, values)
        for index, (_, _, metric) in enumerate(columns):
            over = average_rows[metric]
            if not over:  # nothing computed in any row yet
                asked.add((AVERAGE_ROW, index))
                continue
            if any((r, index) not in asked for r in over):  # no run fills that row
                continue
            numbers = [values.get((r, index)) for r in over]
            if all(isinstance(v, float) for v in numbers):
                values[(AVERAGE_ROW, index)] = float(np.mean(numbers))
                asked.add((AVERAGE_ROW, index))
            elif any(v in (LEFT_OUT, NOT_APPLICABLE) for v in numbers):  # never a number
                values[(AVERAGE_ROW, index)] = NOT_APPLICABLE
                asked.add((AVERAGE_ROW, index))
            else:  # a row not computed yet: no mean over fewer rows than its neighbours'
                asked.add((AVERAGE_ROW, index))
        rows.append(AVERAGE_ROW)
    not_asked = {(r, i) for r in rows for i in range(len(columns))} - asked
    return RenderedTable(
        spec,
        columns,
        rows,
        values,
        paper,
        partial,
        errors,
        valueless,
        not_asked,
        average_rows,
        not_started,
    )


def _average_rows(
    columns: list[tuple[str, str, str]], rows: list[str], values: dict[tuple[str, int], float | str]
) -> dict[str, list[str]]:
    """Per metric, the rows an "Avg" is taken over: those where any column of that metric
    has a number. Every column's Avg covers the same rows, so that the Avg row compares
    methods on the same data sets; a column lacking one of them gets no Avg yet."""
    return {
        metric: [
            row
            for row in rows
            if any(
                isinstance(values.get((row, index)), float)
                for index, (_, _, m) in enumerate(columns)
                if m == metric
            )
        ]
        for metric in dict.fromkeys(m for _, _, m in columns)
    }


def paired_table(result: ExperimentResults, versus: str) -> str | None:
    """Markdown: every other method minus ``versus`` on each metric, with the standard
    error of the per-instance differences; a line saying why not where ``versus`` is N/A,
    not of the experiment, without values yet, or its only method with values, so a
    comparison asked for is never dropped without a word. ``versus="best"``: each metric
    against its best method."""
    from ..evaluation.registry import metric_info

    if versus == VERSUS_BEST:
        return _versus_best_table(result)
    present = set(result.frame["method"])
    name, shown = markdown_text(result.experiment.name), markdown_text(versus)
    if versus in result.skipped:  # said, so a missing table is not a forgotten experiment
        return (
            f"**{name}**: no differences (--versus {shown}), {shown} is N/A there: "
            f"{markdown_text(result.skipped[versus].rstrip('.'))}.\n"
        )
    if versus not in present:  # not in this experiment, or no values
        return f"**{name}**: no differences (--versus {shown}), {_absent(result, versus)}.\n"
    if present == {versus}:  # one line, where a table would have no row
        return (
            f"**{name}**: {shown} is the only method with values, so "
            f"there is nothing to compare {shown} with (--versus {shown}).\n"
        )
    correlated = result.correlated_metrics()
    if correlated and set(result.experiment.metrics) <= set(
        correlated
    ):  # no value per instance to pair
        return f"**{name}**: no differences (--versus {shown}), {_correlated_phrase(correlated)}.\n"
    differences = result.paired_differences(versus)
    differences = differences[~differences["metric"].isin(correlated)]
    if differences.empty:
        return None
    metrics = list(dict.fromkeys(differences["metric"]))
    instances = _instance_counts(differences["instances"])
    lines = [
        f"**{name}: each method minus {shown}, paired over instances ({instances})**",
        "",
        "| method | " + " | ".join(markdown_text(metric_info(m).marked(m)) for m in metrics) + " |",
        "|---|" + "---:|" * len(metrics),
    ]
    compared = list(dict.fromkeys(differences["method"]))
    unfinished = result.unfinished([versus, *compared], metrics)
    for method, rows in differences.groupby("method", sort=False):
        by_metric = rows.set_index("metric")
        cells = []
        for metric in metrics:
            mean, error, p_value = by_metric.loc[metric, PAIRED_STATISTICS]
            text = _difference(float(mean), float(error))
            if p_value < 0.05:
                text += " *"
            cells.append(text)
        mark = "†" if method in unfinished else ""
        lines.append(f"| {markdown_text(method)}{mark} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Each cell: the mean over the instances both have of the method's number minus "
        f"{shown}'s, ± the standard error of those differences; *: a paired t-test tells "
        "it from zero (two-sided p < 0.05).",
        *_unfinished_note(unfinished),
        *_not_applicable_lines(result, versus),
        *_correlated_lines(correlated),
    ]
    return "\n".join(lines) + "\n"


def _correlated_phrase(metrics: list[str]) -> str:
    """Why a regression model's comp_acc / suff_acc have no paired differences."""
    named = ", ".join(markdown_text(m) for m in metrics)
    one = len(metrics) == 1
    return (
        f"{named} of a regression model {'is' if one else 'are'} one Pearson correlation "
        "over all the instances (its predictions against the gold values), with no value "
        "per instance to pair"
    )


def _correlated_lines(metrics: list[str]) -> list[str]:
    """The line under a difference table naming the metrics left out of it as
    correlations over all the instances (none: none)."""
    return ["", f"Left out: {_correlated_phrase(metrics)}."] if metrics else []


def _unfinished_note(unfinished: dict[str, str]) -> list[str]:
    """The line under a difference table naming its methods not done yet (none: none)."""
    if not unfinished:
        return []
    counts = ", ".join(f"{markdown_text(m)} {count}" for m, count in unfinished.items())
    return ["", f"†: not every instance is done yet (instances done: {counts})."]


def _absent(result: ExperimentResults, versus: str) -> str:
    """Why an experiment has no values of ``versus``: not one of its methods, or not
    computed yet (and what computes it)."""
    shown = markdown_text(versus)
    if versus not in {m.display for m in result.experiment.methods}:
        return f"{shown} is no method of this experiment"
    if left_out := max((n for (m, _), n in result.valueless.items() if m == versus), default=0):
        return _all_left_out(result, versus, left_out)
    return f"{shown} has no values here yet (bench run --method {shown} computes them)"


def _all_left_out(result: ExperimentResults, versus: str, left_out: int) -> str:
    """Why ``versus`` has no values where each instance it has done is its own contrast:
    the table's reason, with run advice only for instances not done yet (a rerun of
    those done gives no value either)."""
    shown = markdown_text(versus)
    said = (
        f"every instance of {shown} has its target as its contrast, so it has no value to "
        f"compare ({left_out} left out, with no value)"
    )
    metrics = list(result.experiment.metrics)
    if min((result.done(versus, metric) for metric in metrics), default=0) < result.total:
        said += f"; bench run --method {shown} computes the instances not done yet"
    return said


def _not_applicable_lines(result: ExperimentResults, versus: str) -> list[str]:
    """A line under a difference table per method left out of it as N/A in this
    experiment, with the reason, so tables of differing rows are not read as forgotten."""
    lines = [
        f"{markdown_text(method)}: N/A here, left out: {markdown_text(why.rstrip('.'))}."
        for method, why in result.skipped.items()
        if method != versus
    ]
    return ["", *lines] if lines else []


def _versus_best_table(result: ExperimentResults) -> str | None:
    """Each method minus the row's best on each ranked metric (the best by its mean over
    the instances), paired over the instances both have: what the best is told apart
    from."""
    from ..evaluation.registry import metric_info
    from ..evaluation.stats import paired_differences

    name = markdown_text(result.experiment.name)
    summaries = result.instance_summaries()
    if summaries is None or summaries.empty:
        return f"**{name}**: no differences (--versus best), {_no_values(result)}.\n"
    methods = [m.display for m in result.experiment.methods]
    present = set(summaries.index.get_level_values("method"))
    methods = [m for m in methods if m in present]
    if len(methods) == 1:  # one line, where a table would compare the best with itself
        only = markdown_text(methods[0])
        return (
            f"**{name}**: {only} is the only method with values, so there is nothing to "
            "compare it with (--versus best).\n"
            + "".join(f"{line}\n" for line in _not_applicable_lines(result, VERSUS_BEST))
        )
    correlated = result.correlated_metrics()
    ranked = [m for m in summaries.columns if metric_info(m).ranked]
    metrics = [m for m in ranked if m not in correlated]
    if ranked and not metrics:  # no value per instance to pair
        return f"**{name}**: no differences (--versus best), {_correlated_phrase(correlated)}.\n"
    cells: dict[tuple[str, str], str] = {}
    bests = {}
    paired: list[int] = []  # the instances each difference is paired over
    for metric in metrics:
        means = summaries[metric].groupby(level="method").mean().dropna()
        if means.empty:
            continue
        best = means.idxmax() if metric_info(metric).higher_is_better else means.idxmin()
        bests[metric] = best
        differences = paired_differences(summaries[[metric]], best)
        paired += list(differences["instances"])
        for row in differences.itertuples(index=False):
            mean, error, p_value = (getattr(row, c) for c in PAIRED_STATISTICS)
            text = _difference(float(mean), float(error))
            cells[(row.method, metric)] = text + (" *" if p_value < 0.05 else "")
        cells[(best, metric)] = "best"
    if not bests:  # said, as an N/A --versus is: the comparison asked for is not dropped
        return f"**{name}**: no differences (--versus best), {_no_best(summaries, metrics)}.\n"
    shown = list(bests)
    lines = [
        f"**{name}: each method minus the best on each metric, paired over instances"
        + (f" ({_instance_counts(paired)})**" if paired else "**"),
        "",
        "| method | " + " | ".join(markdown_text(metric_info(m).marked(m)) for m in shown) + " |",
        "|---|" + "---:|" * len(shown),
    ]
    unfinished = result.unfinished(methods, shown)
    for method in methods:
        mark = "†" if method in unfinished else ""
        lines.append(
            f"| {markdown_text(method)}{mark} | "
            + " | ".join(cells.get((method, m), "–") for m in shown)
            + " |"
        )
    lines += [
        "",
        "Each cell: the mean over the instances both have of the method's number minus the "
        "best method's (by its mean), ± the standard error of those differences; *: a "
        "paired t-test tells it from zero (two-sided p < 0.05); unstarred methods are not "
        "told apart from the best.",
        *_unfinished_note(unfinished),
        *_not_applicable_lines(result, VERSUS_BEST),
        *_correlated_lines([m for m in correlated if m in ranked]),
    ]
    return "\n".join(lines) + "\n"


def _no_values(result: ExperimentResults) -> str:
    """Why no method of an experiment has values: each is N/A there (no run will give
    any, so said with each reason), or the run has not stored them yet."""
    methods = [m.display for m in result.experiment.methods]
    if methods and all(m in result.skipped for m in methods):
        reasons = "; ".join(
            f"{markdown_text(m)}: {markdown_text(result.skipped[m].rstrip('.'))}" for m in methods
        )
        return f"every method is N/A there ({reasons})"
    return "no method has values here yet"


def _no_best(summaries: pd.DataFrame, ranked: list[str]) -> str:
    """Why no metric of an experiment has a best method: none of them is ranked (such as
    expected_retained), or the ranked ones have no numbers yet."""
    if ranked:
        return f"no value of {', '.join(markdown_text(m) for m in ranked)} here yet"
    metrics = ", ".join(markdown_text(m) for m in summaries.columns)
    return f"none of this experiment's metrics ({metrics}) has a better direction to rank by"


def default_tables(config: BenchConfig) -> tuple[TableSpec, ...]:
    """Without [[tables]]: one table per metric, experiments as columns: a column per
    model within each dataset, or per experiment name where two experiments share a model
    and a dataset (they differ in split, limit or protocol), so neither hides the other."""
    metrics = list(dict.fromkeys(m for e in config.experiments for m in e.metrics))
    tables = []
    for metric in metrics:
        spec = TableSpec(
            title=f"{metric}",
            metric=metric,
            groups="dataset",
            columns="model",
            name=f"table-{metric}",
        )
        if spec.clashes(config.experiments) is not None:
            spec = replace(spec, columns="experiment")
        tables.append(spec)
    return tuple(tables)


def default_plots(config: BenchConfig) -> tuple[PlotSpec, ...]:
    """Without [[plots]]: the curve of every metric that has one (not of a metric that is
    one number per text: its axis is None), and time against length."""
    from ..evaluation.registry import metric_info

    metrics = list(dict.fromkeys(m for e in config.experiments for m in e.metrics))
    return (
        *(PlotSpec(metric=m, name=f"curve-{m}") for m in metrics if metric_info(m).axis),
        PlotSpec(metric="", kind="time", name="time-vs-length"),
    )


def write_report(
    config: BenchConfig,
    store: ResultStore,
    folder: str | Path,
    *,
    common: bool = False,
    standard_error: bool = False,
    versus: str | Sequence[str] | None = None,
) -> list[Path]:
    """Every table (.md, .tex) and figure (.png) of ``config`` into ``folder``.

    ``common``: each experiment on the instances that every method has values for, so a
    partly done grid compares methods on the same texts (the report says how many).
    ``standard_error``: every table shows each number's standard error over instances,
    as a table with ``standard_error = true`` does.
    ``versus``: a method label, or ``"best"``, or several; each experiment with it gains a
    table of every other method's paired difference from it (:func:`paired_table`).
    """
    from .plots import check_matplotlib

    check_matplotlib()  # every report draws figures: refused before any table is written
    folder = Path(folder)
    # each once: a label given twice would print its tables twice
    against = list(dict.fromkeys([versus] if isinstance(versus, str) else versus or ()))
    labels = list(dict.fromkeys(m.display for e in config.experiments for m in e.methods))
    for versus in against:
        if versus != VERSUS_BEST and versus not in labels:
            raise InvalidInputError(
                f"--versus {versus!r} is no method of this config; its labels: "
                f"{', '.join(labels)}, or {VERSUS_BEST} (each metric's best method)"
            )
    results = experiment_results(config, store)
    if common:
        results = [result.common() for result in results]
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    markdown = [f"# {markdown_text(config.title)}\n"]
    if common:
        counts = ", ".join(
            f"{markdown_text(r.experiment.name)} {r.frame['instance'].nunique()}" for r in results
        )
        markdown.append(
            f"Every method started on the same instances (those all of them have done): {counts}.\n"
        )
    for spec in config.tables or default_tables(config):
        if standard_error:
            spec = replace(spec, standard_error=True)
        table = build_table(spec, results)
        if not table.columns:
            continue
        markdown.append(table.to_markdown())
        path = folder / f"{spec.name}.tex"
        write_atomically(path, table.to_latex())
        written.append(path)
    for versus in against:
        markdown.extend(filter(None, (paired_table(result, versus) for result in results)))
    plots = config.plots or default_plots(config)
    # timings are the efficiency experiments' data; a grid that plots no time (its
    # batches sized for throughput, maybe on several machines) shows no time table
    if any(p.kind == "time" for p in plots):
        timed = time_table(config, store.timings())
        if timed is not None:
            markdown.append(timed)
    for spec in plots:
        path = folder / f"{spec.name}.png"
        if draw_plot(spec, config, store, results, path):
            written.append(path)
            markdown.append(f"![{markdown_text(spec.title or spec.name)}]({_link(path.name)})\n")
    summary = folder / "report.md"
    write_atomically(summary, "\n".join(markdown))
    return [summary, *written]


def _link(name: str) -> str:
    """A file name as a Markdown link target: in angle brackets where a space or a
    parenthesis would end the plain form."""
    if not any(char in name for char in " ()<>"):
        return name
    return "<" + name.replace("\\", "\\\\").replace("<", "\\<").replace(">", "\\>") + ">"


def draw_plot(
    spec: PlotSpec,
    config: BenchConfig,
    store: ResultStore,
    results: list[ExperimentResults],
    path: Path,
) -> bool:
    """Draw one of the config's figures to ``path`` (PNG); False when there is nothing
    to draw yet. One figure is drawn at a time (:data:`DRAWING`): the page draws the
    figures it is asked for at once, each in a thread, and matplotlib is not thread-safe."""
    from ..common.figures import DRAWING
    from .plots import plot_curves, plot_distribution, plot_layers, plot_summary, plot_time

    with DRAWING:
        if spec.kind == "time":
            return plot_time(config, store.timings(), path, spec.title)
        if spec.kind == "summary":
            return plot_summary(results, spec.metric, path, spec.title)
        if spec.kind == "layers":
            return plot_layers(results, spec.metric, path, spec.title)
        if spec.kind == "distribution":
            units = {
                e.name: "segments" if segment_units(e) else "tokens" for e in config.experiments
            }
            return plot_distribution(attribution_values(config, store), path, spec.title, units)
        return plot_curves(results, spec.metric, path, spec.title)


def drawable(
    spec: PlotSpec, config: BenchConfig, store: ResultStore, results: list[ExperimentResults]
) -> bool:
    """Whether :func:`draw_plot` would draw ``spec`` now (its panels, without matplotlib):
    the figures the report writes are these, and the page lists these alone (a curve of a
    metric read at the explained layer only, one point per method, is never drawn)."""
    from .plots import curve_panels, distribution_panels, metric_panels, timing_panels

    if spec.kind == "time":
        return bool(timing_panels(config, store.timings()))
    if spec.kind in ("summary", "layers"):
        return bool(metric_panels(results, spec.metric))
    if spec.kind == "distribution":
        return bool(distribution_panels(attribution_values(config, store)))
    return bool(curve_panels(results, spec.metric))


def attribution_values(config: BenchConfig, store: ResultStore) -> dict[str, dict[str, list]]:
    """Every stored explanation's token scores, min-max rescaled per explanation (per step
    of a generation), by experiment and method label (first seed); its segment scores
    where the experiment's metrics rank segments (``unit = "segment"``)."""
    import numpy as np

    from ..explanations.io import load_payload
    from .store import CellKey

    values: dict[str, dict[str, list]] = {}
    for experiment in config.experiments:
        methods = values.setdefault(experiment.name, {})
        segments = segment_units(experiment)
        for method in experiment.methods:
            cell = CellKey(experiment.model, experiment.dataset.key, method.key, config.seeds[0])
            instances = store.explained(cell)
            if experiment.dataset.limit is not None:
                instances = {i for i in instances if i < experiment.dataset.limit}
            scores: list[float] = []
            for payload in store.explanations(cell, instances).values():
                for row in _score_rows(load_payload(payload), segments):
                    row = row[np.isfinite(row)]
                    if row.size and row.max() > row.min():
                        scores.extend(((row - row.min()) / (row.max() - row.min())).tolist())
            methods[method.display] = scores
    return values


def segment_units(experiment) -> bool:
    """Whether the experiment's metrics rank segments rather than tokens."""
    return experiment.protocol.get("unit") == "segment"


def _score_rows(explanation, segments: bool = False) -> list:
    """The scores a metric reads: the first target's at the last layer, or each step's;
    with ``segments``, the segment scores a segment-unit metric ranks."""
    if segments and explanation.segments is None:
        return []
    if hasattr(explanation, "steps"):  # a generation: one row per step, last layer
        scores = explanation.segments.scores if segments else explanation.scores
        return list(scores[:, -1] if explanation.has_layers else scores)
    if segments:
        from ..evaluation.context import segment_vector

        return [segment_vector(explanation, -1)]
    return [explanation.scores_3d()[-1, :, 0]]


#: input-length bins of the time table (tokens), as the NormXLogit paper's table 2
LENGTH_BINS = (0, 64, 128, 256, 512, 10**9)


def time_table(config: BenchConfig, timings: pd.DataFrame) -> str | None:
    """Seconds per instance (mean ± std) per method and input-length bin, and over every
    instance (the pi-Soft paper's table 6: average time per sample), as Markdown. Only
    the timings of the config's own cells count (model, dataset, method, seed, instances),
    as in the metric tables.

    The time of an instance is its share of the batch it ran in; configs that measure
    efficiency explain one text per batch (``batch_size = 1``).
    """
    groups = timings_by_experiment(config, timings)  # this config's cells, per experiment
    if not groups:
        return None
    timings = pd.concat([rows for _, rows in groups])
    edges = list(LENGTH_BINS)
    names = [
        f"{low + 1}-{high}" if high < 10**9 else f">{low}"
        for low, high in zip(edges[:-1], edges[1:], strict=True)
    ]
    present = [
        name for name in names if (pd.cut(timings["tokens"], edges, labels=names) == name).any()
    ]
    several = len(groups) > 1  # one experiment: its name is the config's, no column for it
    lines = [
        "**Seconds per instance by input length (tokens), mean ± std**",
        "",
        ("| experiment " if several else "")
        + "| method | "
        + " | ".join(present)
        + " | all | instances |",
        "|" + "---|" * (1 + several) + "---:|" * (len(present) + 2),
    ]
    for experiment, rows in groups:
        binned = rows.assign(bin=pd.cut(rows["tokens"], edges, labels=names))
        for label, method_rows in binned.groupby("label", sort=False):
            cells = []
            for name in present + ["all"]:
                chosen = (
                    method_rows if name == "all" else method_rows.loc[method_rows["bin"] == name]
                )
                seconds = chosen["seconds"].to_numpy(float)
                cells.append(f"{seconds.mean():.3f} ± {seconds.std():.3f}" if seconds.size else "")
            cells.append(str(len(method_rows)))
            first = f"| {markdown_text(experiment)} " if several else ""
            lines.append(f"{first}| {markdown_text(label)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _plain_cell(value: float | str | None) -> float | str | None:
    """A cell for JSON: a finite number, a note such as ``N/A``, ``n/a`` where it was
    computed and is undefined (as the Markdown report writes it; JSON has no NaN), or None
    (not computed)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "n/a"
    return value


def _finite_or_none(value: float | None) -> float | None:
    """A standard error for JSON: None where there is none to give."""
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


#: the decimals a table shows; values equal to them are tied (none bold among 0.000s)
SHOWN_DIGITS = 3


def _instance_counts(counts: Iterable[int]) -> str:
    """``"12 instances"``, or their range where the pairs differ: ``"10-12 instances"``."""
    shown = sorted({int(count) for count in counts})
    return f"{shown[0]} instances" if len(shown) == 1 else f"{shown[0]}-{shown[-1]} instances"


def _difference(mean: float, error: float) -> str:
    """A paired difference and its standard error: as every number, unless both print as
    0.000 and the difference is not 0, where both go in two significant digits (a "0.000 ±
    0.000 *" would call nothing significant); a difference lost in a larger error (-7e-18
    ± 0.14, rounding's zero) prints 0.000, unsigned: a sign below the shown digits says
    nothing beside an error that large."""
    tiny = np.isfinite(mean) and mean != 0 and round(mean, SHOWN_DIGITS) == 0
    if tiny and np.isfinite(error) and round(error, SHOWN_DIGITS) == 0:
        return f"{mean:.1e} ± {error:.1e}"
    return f"{_number(0.0 if tiny else mean)} ± {_number(error)}"


def _number(value: float | str | None) -> str:
    if value is None:  # a cell the config does not ask for
        return ""
    if isinstance(value, str):
        return value or "–"  # "" is a cell not computed yet
    if not np.isfinite(value):  # computed, undefined: n/a
        return "n/a"
    return fixed_point(value, SHOWN_DIGITS)


#: LaTeX's special characters outside math, each as text that prints it
TEX_ESCAPES = {
    "\\": "\\textbackslash{}",
    "_": "\\_",
    "&": "\\&",
    "%": "\\%",
    "#": "\\#",
    "$": "\\$",
    "{": "\\{",
    "}": "\\}",
    "^": "\\textasciicircum{}",
    "~": "\\textasciitilde{}",
    # in LaTeX's default (OT1) font encoding these print other glyphs (¡, ¿, ‘)
    "<": "\\textless{}",
    ">": "\\textgreater{}",
    "`": "\\textasciigrave{}",
}


def _tex(text: str) -> str:
    """``text`` printed as written in LaTeX (one pass, so an escape's own braces stay)."""
    return "".join(TEX_ESCAPES.get(char, char) for char in text)


def tables_frame(config: BenchConfig, store: ResultStore) -> pd.DataFrame:
    """Every experiment's summary as one frame (experiment, method, metric, value)."""
    records = []
    for result in experiment_results(config, store):
        summary = result.summary()
        for method in summary.index:
            for metric in summary.columns:
                records.append(
                    {
                        "experiment": result.experiment.name,
                        "method": method,
                        "metric": metric,
                        "value": float(summary.loc[method, metric]),
                    }
                )
    return pd.DataFrame(records, columns=["experiment", "method", "metric", "value"])
