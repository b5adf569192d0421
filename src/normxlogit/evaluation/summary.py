"""``SummaryTable``: methods x metrics, each metric sorting and colouring itself.

The direction of every column comes from its metric's metadata, so "best" means the
highest comprehensiveness confidence drop but the lowest sufficiency confidence drop,
without the table knowing either metric.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pandas as pd

from ..errors import InvalidInputError
from .registry import MetricInfo

SUMMARY_NAMES = {"aopc": "AOPC", "auc": "AUC", "last": "last layer", "mean": "mean"}


@dataclass
class SummaryTable:
    """One number per method and metric (the AOPC, AUC, or mean), with the metadata."""

    values: pd.DataFrame  # index: methods; columns: metric names
    infos: dict[str, MetricInfo]

    @property
    def metrics(self) -> list[str]:
        return list(self.values.columns)

    @property
    def methods(self) -> list[str]:
        return list(self.values.index)

    def _info(self, metric: str) -> MetricInfo:
        if metric not in self.infos:
            raise InvalidInputError(f"no metric {metric!r} in this table; it has {self.metrics}")
        return self.infos[metric]

    def ranking(self, metric: str) -> list[str]:
        """Methods from best to worst on ``metric`` (NaN last)."""
        column = self.values[metric]
        ordered = column.sort_values(ascending=not self._info(metric).higher_is_better)
        return list(ordered.dropna().index) + list(column[column.isna()].index)

    def best(self, metric: str) -> str:
        return self.ranking(metric)[0]

    def sort_by(self, metric: str) -> SummaryTable:
        """The table with its rows ordered best-first on ``metric``."""
        return SummaryTable(self.values.loc[self.ranking(metric)], self.infos)

    def header(self, metric: str) -> str:
        info = self._info(metric)
        return f"{metric} ({SUMMARY_NAMES[info.summary]} {info.arrow})"

    # ---------------------------------------------------------------- output
    def to_markdown(self, digits: int = 3) -> str:
        """A Markdown table; the best value of each metric in bold."""
        best = {m: self.best(m) for m in self.metrics}
        lines = [
            "| method | " + " | ".join(self.header(m) for m in self.metrics) + " |",
            "|---|" + "---:|" * len(self.metrics),
        ]
        for method, row in self.values.iterrows():
            cells = []
            for metric in self.metrics:
                value = row[metric]
                text = "n/a" if _missing(value) else f"{value:.{digits}f}"
                cells.append(f"**{text}**" if best[metric] == method and text != "n/a" else text)
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def to_frame(self) -> pd.DataFrame:
        return self.values.copy()

    def to_csv(self) -> str:
        return self.values.to_csv(index_label="method")

    def to_json(self) -> str:
        return json.dumps(
            {
                "values": {
                    method: {m: (None if _missing(v) else float(v)) for m, v in row.items()}
                    for method, row in self.values.iterrows()
                },
                "metrics": {
                    name: {
                        "higher_is_better": info.higher_is_better,
                        "range": list(info.value_range),
                        "summary": info.summary,
                        "description": info.description,
                    }
                    for name, info in self.infos.items()
                },
            },
            indent=2,
        )

    def styled(self):
        """A pandas ``Styler``: each column shaded green (best) to red (worst)."""
        styler = self.values.style.format("{:.3f}", na_rep="n/a")
        for metric in self.metrics:
            cmap = "RdYlGn" if self._info(metric).higher_is_better else "RdYlGn_r"
            styler = styler.background_gradient(cmap=cmap, subset=[metric])
        return styler

    def __rich__(self):
        from rich.table import Table

        table = Table(title="faithfulness and plausibility", show_lines=False)
        table.add_column("method")
        for metric in self.metrics:
            table.add_column(self.header(metric), justify="right")
        ends = {m: (self.ranking(m)[0], self._worst(m)) for m in self.metrics}
        for method, row in self.values.iterrows():
            cells = []
            for metric in self.metrics:
                value = row[metric]
                text = "n/a" if _missing(value) else f"{value:.3f}"
                best, worst = ends[metric]
                if method == best and len(self.methods) > 1:
                    text = f"[bold green]{text}[/]"
                elif method == worst and len(self.methods) > 1:
                    text = f"[red]{text}[/]"
                cells.append(text)
            table.add_row(str(method), *cells)
        return table

    def _worst(self, metric: str) -> str | None:
        finite = [m for m in self.ranking(metric) if not _missing(self.values.at[m, metric])]
        return finite[-1] if finite else None

    def _repr_html_(self) -> str:  # notebooks show the coloured table
        return self.styled().to_html()

    def __repr__(self) -> str:
        return self.to_markdown()


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
