"""``evaluate``: explanations in, a tidy table of faithfulness and plausibility out."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..adapter import ExplainableModel
from ..errors import InvalidInputError
from ..explanation import write_atomically
from .context import Explanations, ExplanationSet, build_context
from .protocol import Protocol
from .registry import metric_class, metric_info
from .summary import SummaryTable

DEFAULT_METRICS = ("comp_cd", "suff_cd")
COLUMNS = ["instance", "text", "method", "metric", "axis", "x", "value", "gold"]


@dataclass
class EvaluationResult:
    """Every instance x method x metric x curve point, with the protocol that made it.

    ``frame`` is tidy: one row per instance, method, metric and ratio / pi / step / layer
    (``axis`` names which, ``x`` holds it). ``summary()`` reduces it to methods x metrics.
    """

    frame: pd.DataFrame
    protocol: Protocol
    metrics: list[str]
    model: str = ""
    #: perturbed copies sent through the model (the cost of the evaluation)
    forward_rows: int = 0

    def __repr__(self) -> str:
        methods = list(dict.fromkeys(self.frame["method"]))
        texts = self.frame["instance"].nunique()
        return (
            f"EvaluationResult(model={self.model!r}, methods={methods}, metrics={self.metrics}, "
            f"texts={texts}, rows={len(self.frame)})"
        )

    def curves(self) -> pd.DataFrame:
        """Each metric's curve per method: instances combined at every point."""
        records = []
        for (metric, method, x), group in self._groups(["metric", "method", "x"]):
            info = metric_info(metric)
            value = info.combine(group["value"].to_numpy(), group["gold"].to_numpy(float))
            records.append({"metric": metric, "method": method, "x": x, "value": value})
        return pd.DataFrame(records, columns=["metric", "method", "x", "value"])

    def summary(self) -> SummaryTable:
        """Methods x metrics: the AOPC over ratios, the AUC over pi or steps, the last
        layer's value, or the mean; each column knows whether higher is better."""
        curves = self.curves()
        table = {}
        for (metric, method), curve in curves.groupby(["metric", "method"], sort=False):
            curve = curve.sort_values("x")
            x = curve["x"].to_numpy(float)
            table.setdefault(metric, {})[method] = metric_info(metric).summarise(
                x, curve["value"].to_numpy(float)
            )
        methods = list(dict.fromkeys(self.frame["method"]))
        values = pd.DataFrame(table, index=methods)[[m for m in self.metrics if m in table]]
        return SummaryTable(values, {m: metric_info(m) for m in values.columns})

    def _groups(self, keys: list[str]):
        frame = self.frame.fillna({"x": -1.0})  # one-number metrics: a single point
        for key, group in frame.groupby(keys, sort=False):
            metric, method, x = key
            yield (metric, method, np.nan if x == -1.0 else x), group

    # ------------------------------------------------------------- persistence
    def to_dict(self) -> dict[str, Any]:
        frame = self.frame.astype(object).where(self.frame.notna(), None)
        return {
            "model": self.model,
            "metrics": self.metrics,
            "protocol": self.protocol.to_dict(),
            "forward_rows": self.forward_rows,
            "rows": frame.to_dict(orient="records"),
        }

    def save(self, path: str | Path) -> Path:
        """Write the result (rows and protocol) as JSON; :meth:`load` reads it back."""
        path = Path(path)
        write_atomically(path, json.dumps(self.to_dict(), default=_plain))
        return path

    @classmethod
    def load(cls, path: str | Path) -> EvaluationResult:
        data = json.loads(Path(path).read_text())
        frame = pd.DataFrame(data["rows"], columns=COLUMNS)
        for column in ("x", "value", "gold"):
            frame[column] = frame[column].astype(float)
        return cls(
            frame=frame,
            protocol=Protocol.from_dict(data["protocol"]),
            metrics=data["metrics"],
            model=data.get("model", ""),
            forward_rows=data.get("forward_rows", 0),
        )


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__}")


def evaluate(
    model: ExplainableModel,
    explanations: Explanations,
    metrics: Sequence[str] = DEFAULT_METRICS,
    labels: Sequence[Any] | None = None,
    protocol: Protocol | None = None,
    *,
    evidence: Sequence[Any] | None = None,
    layer: int = -1,
    batch_size: int = 16,
    rows_per_forward: int = 64,
    progress: Callable[[int], None] | None = None,
) -> EvaluationResult:
    """Score explanations for faithfulness and plausibility.

    Args:
        explanations: ``Explanation`` objects of one or more methods on the same texts (a
            list, or ``{name: explanations}`` to name the methods yourself).
        metrics: names from :func:`list_metrics`: ``comp_cd``, ``comp_acc``, ``suff_cd``,
            ``suff_acc``, ``soft_nc``, ``soft_ns``, ``pi_soft_nc``, ``pi_soft_ns``,
            ``insertion``, ``deletion``, ``evidence_ap``, ``evidence_dot``.
        labels: gold labels (names or indices; numbers for regression), one per text in
            the order texts first appear among the explanations; the ``*_acc`` metrics
            need them.
        protocol: how inputs are perturbed (default: each paper's own settings).
        evidence: binary evidence vectors over each text's tokens (``evidence_*``).
        layer: which layer of per-layer explanations the faithfulness metrics use
            (evidence metrics score every layer).
        batch_size: texts encoded together; ``rows_per_forward``: perturbed copies per
            forward pass.
        progress: called with the number of texts done after every chunk.
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    metrics = list(dict.fromkeys(metrics))
    if not metrics:
        raise InvalidInputError("no metrics asked for; see normxlogit.evaluation.list_metrics()")
    classes = [metric_class(name) for name in metrics]
    if batch_size < 1 or rows_per_forward < 1:
        raise InvalidInputError("batch_size and rows_per_forward must be at least 1")
    protocol = (protocol or Protocol()).resolved(model)
    explained = ExplanationSet.build(explanations)
    count = len(explained.texts)
    _check_aligned("labels", labels, count, any(c.info.needs_labels for c in classes))
    _check_aligned("evidence", evidence, count, any(c.info.needs_evidence for c in classes))
    rows: list[dict] = []
    forward_rows = 0
    for start in range(0, count, batch_size):
        instances = list(range(start, min(start + batch_size, count)))
        ctx = build_context(
            model, protocol, explained, instances, labels, evidence, layer, rows_per_forward
        )
        for name, cls in zip(metrics, classes, strict=True):
            info = cls.info
            for row in cls().rows(ctx):
                row.update(
                    metric=name, axis=info.axis, text=_shown(explained.texts[row["instance"]])
                )
                rows.append(row)
        forward_rows += ctx.runner.forward_rows
        if progress is not None:
            progress(instances[-1] + 1)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["gold"] = frame["gold"].astype(float)
    order = {
        "metric": {name: i for i, name in enumerate(metrics)},
        "method": {name: i for i, name in enumerate(explained.methods)},
    }
    frame = frame.sort_values(
        ["metric", "method", "instance"],
        key=lambda column: column.map(order[column.name]) if column.name in order else column,
        kind="stable",
    ).reset_index(drop=True)
    return EvaluationResult(frame, protocol, metrics, model.name, forward_rows)


def _check_aligned(name: str, values: Sequence[Any] | None, count: int, needed: bool) -> None:
    if values is None:
        if needed:
            raise InvalidInputError(
                f"the metrics asked for need {name}: pass {name}=[...] with one entry per text"
            )
        return
    if len(values) != count:
        raise InvalidInputError(
            f"{len(values)} {name} for {count} texts; give one per text, in the order the "
            "texts first appear among the explanations"
        )


def _shown(text) -> str:
    return " [SEP] ".join(text) if isinstance(text, tuple) else text
