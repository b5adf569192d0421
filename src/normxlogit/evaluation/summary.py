"""``SummaryTable``: methods x metrics, each metric sorting and colouring itself.

The direction of every column comes from its metric's metadata, so "best" means the
highest comprehensiveness confidence drop but the lowest sufficiency confidence drop,
without the table knowing either metric.

The table behaves like the DataFrame it shows (``table["comp_cd"]``, ``table.loc[...]``,
``table.columns``, ``len(table)``, any pandas method): everything it does not define itself
is the DataFrame's, which ``table.frame`` is and ``table.to_frame()`` copies.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..common.errors import InvalidInputError
from ..common.fields import markdown_text
from ..common.outputs import fixed_point
from .registry import MetricInfo

#: the most decimals to_markdown shows (Python's formatting refuses far more)
_MAX_DIGITS = 100

SUMMARY_NAMES = {"aopc": "AOPC", "auc": "AUC", "last": "last layer", "mean": "mean"}


@dataclass(eq=False)
class SummaryTable:
    """One number per method and metric (the AOPC, AUC, or mean), with the metadata."""

    values: pd.DataFrame  # index: methods; columns: metric names
    infos: dict[str, MetricInfo]

    @property
    def frame(self) -> pd.DataFrame:
        """The plain DataFrame (index: methods, columns: metrics)."""
        return self.values

    @property
    def metrics(self) -> list[str]:
        return list(self.values.columns)

    @property
    def methods(self) -> list[str]:
        return list(self.values.index)

    # ----------------------------------------------------- the DataFrame's face
    def __getitem__(self, key: Any) -> Any:
        """A metric's column (a Series indexed by method), or a table of several."""
        return self._wrapped(self.values[key])

    def __getattr__(self, name: str) -> Any:
        # only called for names the table lacks: pandas' own (loc, columns, mean, ...)
        if name.startswith("_") or name in ("values", "infos"):
            raise AttributeError(name)
        return getattr(self.values, name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {n for n in dir(self.values) if n[0] != "_"})

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self):
        return iter(self.values)  # the metric names, as a DataFrame iterates its columns

    def __contains__(self, metric: object) -> bool:
        return metric in self.values

    def __array__(self, dtype=None, copy=None):
        return self.values.to_numpy(dtype=dtype)

    def _wrapped(self, result: Any) -> Any:
        """A DataFrame of this table's metrics stays a table (it keeps its metadata)."""
        if isinstance(result, pd.DataFrame) and all(m in self.infos for m in result.columns):
            return SummaryTable(result, {m: self.infos[m] for m in result.columns})
        return result

    def _info(self, metric: str) -> MetricInfo:
        if not isinstance(metric, str) or metric not in self.infos or metric not in self.values:
            raise InvalidInputError(f"no metric {metric!r} in this table; it has {self.metrics}")
        return self.infos[metric]

    def ranking(self, metric: str) -> list[str]:
        """Methods from best to worst on ``metric`` (NaN last)."""
        info = self._info(metric)  # an unknown metric refused before the lookup
        column = self.values[metric]
        if not info.ranked:
            raise InvalidInputError(f"{metric} is descriptive: it ranks no method")
        ordered = column.sort_values(ascending=not info.higher_is_better)
        return list(ordered.dropna().index) + list(column[column.isna()].index)

    def best(self, metric: str) -> str:
        """The one method best on ``metric``. A tie has no one best, so it is refused
        rather than broken by row order; :meth:`bests` names every tied method."""
        tied = self.bests(metric)
        if len(tied) > 1:
            raise InvalidInputError(
                f"{', '.join(map(str, tied))} tie for best on {metric}; bests({metric!r}) "
                "names every method tied for best"
            )
        if not tied:
            raise InvalidInputError(f"no method has a value of {metric}, so none is best")
        return tied[0]

    def bests(self, metric: str) -> list[str]:
        """Every method with the best value of ``metric`` (several where they tie; none
        where no method has a value), in row order."""
        if not self._info(metric).ranked:
            raise InvalidInputError(f"{metric} is descriptive: it ranks no method")
        return self._ends(metric)[0]

    def _ends(self, metric: str) -> tuple[list[str], list[str]]:
        """(the methods at the best value of ``metric``, those at the worst), in row
        order; NaN is neither. Descriptive metrics have no ends."""
        if not self._info(metric).ranked:
            return [], []
        column = self.values[metric]
        finite = column[[not _missing(v) for v in column]]
        if finite.empty:
            return [], []
        high, low = finite.max(), finite.min()
        top, bottom = (high, low) if self._info(metric).higher_is_better else (low, high)
        return list(finite.index[finite == top]), list(finite.index[finite == bottom])

    def _marks(self, metric: str, digits: int = 3) -> tuple[set[str], set[str]]:
        """(the methods a table marks best, those it marks worst) on ``metric``, as the
        bench report marks them: tied methods alike, values equal at the ``digits``
        shown tied too (0.000 beside 0.000 is no best), and none where every method with
        a value shows the same one (a tie that tells none apart, or a single method)."""
        best, worst = self._ends(metric)
        if not best:
            return set(), set()
        column = self.values[metric]
        shown = {
            method: fixed_point(value, digits)
            for method, value in column.items()
            if not _missing(value)
        }
        best = {m for m, text in shown.items() if text == shown[best[0]]}
        worst = {m for m, text in shown.items() if text == shown[worst[0]]}
        if best == worst:  # one distinct value shown (or none)
            return set(), set()
        return best, worst

    def sort_by(self, metric: str) -> SummaryTable:
        """The table with its rows ordered best-first on ``metric``."""
        return SummaryTable(self.values.loc[self.ranking(metric)], self.infos)

    def header(self, metric: str) -> str:
        info = self._info(metric)
        name = SUMMARY_NAMES[info.summary]
        if info.summary == "last" and info.axis not in (None, "layer"):
            name = f"last {info.axis}"  # the sanity metrics' curve runs over their steps
        return f"{metric} ({info.marked(name)})"

    # ---------------------------------------------------------------- output
    def to_markdown(self, digits: int = 3) -> str:
        """A Markdown table; the best value of each metric in bold, every tied one alike,
        none where all are equal (``digits``: decimals shown, a whole number from 0 to
        100). Names are escaped: they show as written."""
        if (
            isinstance(digits, bool)
            or not isinstance(digits, numbers.Integral)
            or not 0 <= digits <= _MAX_DIGITS
        ):
            raise InvalidInputError(
                f"to_markdown: digits must be a whole number from 0 to {_MAX_DIGITS}, got "
                f"{digits!r:.40} ({type(digits).__name__})"
            )
        digits = int(digits)
        best = {m: self._marks(m, digits)[0] for m in self.metrics}
        lines = [
            "| method | " + " | ".join(markdown_text(self.header(m)) for m in self.metrics) + " |",
            "|---|" + "---:|" * len(self.metrics),
        ]
        for method, row in self.values.iterrows():
            cells = []
            for metric in self.metrics:
                value = row[metric]
                text = "n/a" if _missing(value) else fixed_point(value, digits)
                marked = method in best[metric]
                cells.append(f"**{text}**" if marked else text)
            lines.append(f"| {markdown_text(str(method))} | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def to_frame(self) -> pd.DataFrame:
        """A copy of the plain DataFrame."""
        return self.values.copy()

    def to_csv(self, path: str | Path | None = None, **options: Any) -> str | None:
        """CSV text with a ``method`` column (written to ``path`` when given); ``options``
        go to pandas' ``to_csv``. A name not ending in .csv (or .tsv, with ``sep="\\t"``)
        is refused, and so is one packed after it (.csv.gz): the file is plain CSV. The
        options that would write elsewhere or otherwise (a second path, compression, an
        appending mode) are refused: ``path`` is checked and written whole."""
        for key, instead in _NOT_PASSED.items():
            if key in options:
                raise InvalidInputError(f"to_csv: {key}= is not passed to pandas; {instead}")
        if path is not None:
            tabs = options.get("sep") == "\t"
            _check_name(
                path,
                (".csv", ".tsv") if tabs else (".csv",),
                "CSV",
                {
                    ".json": "to_json(path) writes JSON",
                    ".md": "to_markdown() gives the Markdown text",
                    ".tsv": "to_csv(path, sep='\\t') writes tab-separated values",
                },
            )
        options.setdefault("index_label", "method")
        text = self.values.to_csv(**options)
        # the file ends with the rows' own line ending ("\r" rows get no stray "\n")
        ending = options.get("lineterminator") or "\n"
        return text if path is None else _write(path, text, ending)

    def to_json(self, path: str | Path | None = None) -> str | None:
        """The values and every metric's metadata as JSON (an unbounded end of a range is
        ``null``); written to ``path`` when given. A name not ending in .json is refused,
        and so is one packed after it (.json.zstd): the file is plain JSON."""
        if path is not None:
            _check_name(
                path,
                (".json",),
                "JSON",
                {
                    ".csv": "to_csv(path) writes CSV",
                    ".tsv": "to_csv(path, sep='\\t') writes tab-separated values",
                    ".md": "to_markdown() gives the Markdown text",
                },
            )
        text = json.dumps(
            {
                "values": {
                    method: {m: (None if _missing(v) else float(v)) for m, v in row.items()}
                    for method, row in self.values.iterrows()
                },
                "metrics": {
                    name: {
                        "higher_is_better": info.higher_is_better,
                        "range": [None if math.isinf(end) else end for end in info.value_range],
                        "summary": info.summary,
                        "description": info.description,
                    }
                    for name, info in self.infos.items()
                },
            },
            indent=2,
        )
        return text if path is None else _write(path, text)

    def styled(self):
        """A pandas ``Styler``: each column shaded green (best) to red (worst); none
        where every value is the same (a gradient would paint them all the worst)."""
        styler = self.values.style.format(lambda value: fixed_point(value, 3), na_rep="n/a")
        for metric in self.metrics:
            if not any(self._marks(metric)):  # descriptive, or one value
                continue
            cmap = "RdYlGn" if self._info(metric).higher_is_better else "RdYlGn_r"
            styler = styler.background_gradient(cmap=cmap, subset=[metric])
        return styler

    def __rich__(self):
        from rich.table import Table
        from rich.text import Text

        table = Table(title=self._title(), show_lines=False)
        table.add_column("method")
        for metric in self.metrics:
            table.add_column(Text(self.header(metric)), justify="right")
        marks = {m: self._marks(m) for m in self.metrics}
        for method, row in self.values.iterrows():
            cells = []
            for metric in self.metrics:
                value = row[metric]
                text = "n/a" if _missing(value) else fixed_point(value, 3)
                best, worst = marks[metric]
                style = "bold green" if method in best else "red" if method in worst else ""
                cells.append(Text(text, style=style))
            table.add_row(Text(str(method)), *cells)
        return table

    def _title(self) -> str:
        """What the table's metrics measure ("faithfulness", "faithfulness and
        plausibility", ...): the title of a table of one kind names that kind only."""
        kinds = {
            "plausibility"
            if self._info(m).needs_evidence
            else "sanity"
            if m.startswith("sanity_")
            else "faithfulness"
            for m in self.metrics
        }
        named = [kind for kind in ("faithfulness", "plausibility", "sanity") if kind in kinds]
        return (
            ", ".join(named[:-1]) + (" and " if len(named) > 1 else "") + named[-1]
            if named
            else "scores"
        )

    def _repr_html_(self) -> str:  # notebooks show the coloured table
        return self.styled().to_html()

    def __repr__(self) -> str:
        return self.to_markdown()


#: pandas ``to_csv`` options that would bypass the checked, atomic write of ``path``
_NOT_PASSED = {
    "path_or_buf": "give the file as to_csv(path)",
    "compression": "the file is plain CSV; compress it afterwards",
    "mode": "the file is written whole, never appended to",
    "encoding": "the file is written as UTF-8",
    "storage_options": "the file is written to a local path",
}


def _check_name(path: str | Path, suffixes: tuple[str, ...], kind: str, hints: dict) -> None:
    """Refuse a name that promises another format before the text is made."""
    from ..common.outputs import check_save_name

    example = f"summary{suffixes[0]}"
    check_save_name(path, suffixes, kind, "a summary table is", example, hints)


def _write(path: str | Path, text: str, ending: str = "\n") -> None:
    """Write ``text`` to ``path``, ended by ``ending`` (the line ending its rows use)."""
    from ..common.outputs import write_atomically

    write_atomically(Path(path), text if text.endswith(ending) else text + ending)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
