"""``evaluate``: explanations in, a tidy table of faithfulness and plausibility out."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..common.errors import InvalidFileError, InvalidInputError, NormXLogitError, NormXLogitWarning
from ..common.outputs import json_text, write_atomically
from ..common.progress import TerminalBar
from ..model.adapter import ExplainableModel
from ..model.tasks import TaskKind
from .context import Explanations, ExplanationSet, build_context
from .protocol import Protocol
from .registry import first_refusal, metric_class, metric_info
from .summary import SummaryTable

DEFAULT_METRICS = ("comp_cd", "suff_cd")
#: a regressor has no class probabilities: its comprehensiveness and sufficiency are the
#: Pearson correlation with gold values (NormXLogit section 4)
REGRESSION_METRICS = ("comp_acc", "suff_acc")


def default_metrics(model: ExplainableModel) -> tuple[str, ...]:
    """What ``evaluate`` scores when not told: the paper's pair for the model's task."""
    return REGRESSION_METRICS if model.task.kind is TaskKind.REGRESSION else DEFAULT_METRICS


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
        """Each metric's curve per method: instances combined at every point (the steps of
        a generation averaged first, so each generation weighs alike)."""
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

    def instance_summaries(self) -> pd.DataFrame:
        """Every instance's own summary of each metric (its AOPC / AUC / mean), rows
        indexed by (method, instance). Their mean over instances is :meth:`summary`'s
        number, the summaries being linear in the curve; a regression model's accuracy
        (a correlation across instances) has none, so it is NaN."""
        frame = self._instance_points()
        values: dict[str, dict[tuple[str, Any], float]] = {}
        for (metric, method), rows in frame.groupby(["metric", "method"], sort=False):
            info = metric_info(metric)
            points = rows.pivot_table(index="instance", columns="x", values="value", dropna=False)
            correlated = info.across_instances == "accuracy" and bool(
                np.isfinite(rows["gold"].to_numpy(float)).any()
            )
            x = np.asarray(points.columns, dtype=float)
            column = values.setdefault(metric, {})
            for instance, curve in zip(points.index, points.to_numpy(float), strict=True):
                column[(method, instance)] = np.nan if correlated else info.summarise(x, curve)
        table = pd.DataFrame(values, columns=[m for m in self.metrics if m in values])
        table.index = pd.MultiIndex.from_tuples(list(table.index), names=["method", "instance"])
        methods = list(dict.fromkeys(self.frame["method"]))
        return table.sort_index(level="instance").reindex(methods, level="method")

    def standard_errors(self) -> pd.DataFrame:
        """Methods x metrics: the standard error of each :meth:`summary` number over the
        instances (sample standard deviation / sqrt(n)); NaN under two instances."""
        return standard_errors(self.instance_summaries())  # methods in the frame's order

    def paired_differences(self, versus: str) -> pd.DataFrame:
        """Each method against ``versus`` on the instances both have: the mean of the
        per-instance differences (method minus ``versus``), its standard error, and how
        many instances it stands on (see :func:`paired_differences`)."""
        return paired_differences(self.instance_summaries(), versus)

    def _instance_points(self) -> pd.DataFrame:
        """The rows with one-number metrics at x = -1 and a generation's steps averaged."""
        frame = self.frame.fillna({"x": -1.0})  # one-number metrics: a single point
        if "step" in frame.columns:  # steps of one generation: their mean first
            instance = ["metric", "method", "x", "instance"]
            frame = frame.groupby(instance, sort=False)[["value", "gold"]].mean().reset_index()
        return frame

    def _groups(self, keys: list[str]):
        frame = self._instance_points()
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
        write_atomically(path, json_text(self.to_dict(), default=_plain))
        return path

    @classmethod
    def load(cls, path: str | Path) -> EvaluationResult:
        """Read a result written by :meth:`save`; any other file raises
        :class:`~normxlogit.common.errors.InvalidFileError` naming the file and the problem."""
        path = Path(path)

        def refuse(problem: str) -> InvalidFileError:
            return InvalidFileError(
                f"{path} is not a saved normxlogit evaluation result: {problem}"
            )

        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InvalidFileError(f"{path} does not exist") from None
        except IsADirectoryError:
            raise InvalidFileError(f"{path} is a folder, not a saved result") from None
        except UnicodeDecodeError:
            raise refuse("it is not UTF-8 text") from None
        except OSError as error:
            raise InvalidFileError(f"cannot read {path}: {error.strerror or error}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            cut = ", cut short?" if not text.rstrip().endswith(("}", "]")) else ""
            raise refuse(
                f"invalid JSON at line {error.lineno}, column {error.colno}{cut}"
            ) from None
        if not isinstance(data, dict):
            raise refuse(f"expected a JSON object, found a {type(data).__name__}")
        missing = [key for key in ("metrics", "protocol", "rows") if key not in data]
        if missing:
            raise refuse(f"no {', '.join(repr(k) for k in missing)} (keys: {sorted(data)})")
        metrics = data["metrics"]
        if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
            raise refuse("'metrics' must be a list of metric names")
        if not isinstance(data["protocol"], dict):
            raise refuse("'protocol' must be an object of protocol settings")
        try:
            protocol = Protocol.from_dict(data["protocol"])
        except NormXLogitError as error:
            raise refuse(f"its protocol: {error}") from None
        frame = _rows_frame(data["rows"], metrics, refuse)
        forward_rows = data.get("forward_rows", 0)
        if not isinstance(forward_rows, int) or isinstance(forward_rows, bool):
            raise refuse("'forward_rows' must be a whole number")
        model = data.get("model", "")
        return cls(
            frame=frame,
            protocol=protocol,
            metrics=metrics,
            model=model if isinstance(model, str) else str(model),
            forward_rows=forward_rows,
        )


def _rows_frame(rows: Any, metrics: list[str], refuse) -> pd.DataFrame:
    """The saved rows as the tidy frame, every row checked."""
    if not isinstance(rows, list):
        raise refuse(f"'rows' must be a list of row objects, found a {type(rows).__name__}")
    required = ("instance", "method", "metric", "value")
    for number, row in enumerate(rows):
        if not isinstance(row, dict):
            raise refuse(f"row {number} is a {type(row).__name__}, not an object")
        absent = [key for key in required if key not in row]
        if absent:
            raise refuse(f"row {number} has no {', '.join(absent)}")
        if row["metric"] not in metrics:
            raise refuse(f"row {number} is for metric {row['metric']!r}, not among {metrics}")
        if not isinstance(row["instance"], int) or isinstance(row["instance"], bool):
            raise refuse(f"row {number}: 'instance' must be a whole number")
        for key in ("x", "value", "gold"):
            value = row.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise refuse(f"row {number}: {key!r} must be a number or null, not {value!r}")
    stepped = any("step" in row for row in rows)  # a generation's: kept where it was
    columns = [*COLUMNS[:1], "step", *COLUMNS[1:]] if stepped else COLUMNS
    frame = pd.DataFrame(rows, columns=columns)
    for column in ("x", "value", "gold"):
        frame[column] = frame[column].astype(float)
    frame["instance"] = frame["instance"].astype(int)
    if stepped:
        frame["step"] = frame["step"].astype(int)
    return frame


def standard_errors(summaries: pd.DataFrame) -> pd.DataFrame:
    """Methods x metrics from per-instance summaries (rows indexed by method, instance):
    sample standard deviation / sqrt(n), NaN under two instances."""
    grouped = summaries.groupby(level="method", sort=False)
    return grouped.std(ddof=1) / np.sqrt(grouped.count())


#: the columns of :func:`paired_differences`
PAIRED_COLUMNS = ["method", "metric", "difference", "standard_error", "instances", "p_value"]


def paired_differences(summaries: pd.DataFrame, versus: str) -> pd.DataFrame:
    """Every other method minus ``versus``, metric by metric, instance by instance.

    ``summaries`` holds per-instance summaries (rows indexed by method, instance). Two
    methods scored on the same texts share those texts' difficulty, so the standard error
    of their paired differences is smaller than the two methods' own errors combined:
    it says whether a small run tells two close methods apart. ``p_value`` is the paired
    t-test's (two-sided; Student's t with n - 1 degrees of freedom, which a handful of
    instances needs: two standard errors is no 95% bound under 30 or so). Only instances
    where both have a number count; error and p are NaN under two of them.
    """
    from scipy import stats

    methods = list(dict.fromkeys(summaries.index.get_level_values("method")))
    if versus not in methods:
        raise InvalidInputError(
            f"no method {versus!r} to compare against; methods: {', '.join(methods)}"
        )
    reference = summaries.xs(versus, level="method")
    records = []
    for method in methods:
        if method == versus:
            continue
        own = summaries.xs(method, level="method")
        for metric in summaries.columns:
            both = pd.concat([own[metric], reference[metric]], axis=1, join="inner").dropna()
            differences = (both.iloc[:, 0] - both.iloc[:, 1]).to_numpy(float)
            count = len(differences)
            mean = differences.mean() if count else np.nan
            error = differences.std(ddof=1) / np.sqrt(count) if count > 1 else np.nan
            if count < 2:
                p_value = np.nan
            elif error > 0:
                p_value = 2 * stats.t.sf(abs(mean) / error, count - 1)
            else:  # every difference the same: certain, unless it is zero
                p_value = 1.0 if mean == 0 else 0.0
            records.append(
                {
                    "method": method,
                    "metric": metric,
                    "difference": mean,
                    "standard_error": error,
                    "instances": count,
                    "p_value": p_value,
                }
            )
    return pd.DataFrame(records, columns=PAIRED_COLUMNS)


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__}")


def evaluate(
    model: ExplainableModel,
    explanations: Explanations,
    metrics: Sequence[str] | None = None,
    labels: Sequence[Any] | None = None,
    protocol: Protocol | None = None,
    *,
    evidence: Sequence[Any] | None = None,
    layer: int = -1,
    batch_size: int = 16,
    rows_per_forward: int = 64,
    max_tokens_per_batch: int | None = None,
    progress: bool | Callable[[float], None] | None = None,
) -> EvaluationResult:
    """Score explanations for faithfulness and plausibility.

    Args:
        explanations: ``Explanation`` objects of one or more methods on the same texts (a
            list, or ``{name: explanations}`` to name the methods yourself); or generation
            explanations, scored every fifth step (see
            :func:`normxlogit.generation.evaluate_generations` for the step choice).
        metrics: names from :func:`list_metrics`: ``comp_cd``, ``comp_acc``, ``suff_cd``,
            ``suff_acc``, ``soft_nc``, ``soft_ns``, ``pi_soft_nc``, ``pi_soft_ns``,
            ``insertion``, ``deletion``, ``evidence_ap``, ``evidence_dot``. Default: each
            paper's pair for the task: ``comp_cd`` and ``suff_cd`` (``comp_acc`` and
            ``suff_acc`` for a regressor, with ``labels``; ``pi_soft_nc`` and
            ``pi_soft_ns`` for generations). A metric that means nothing for the model is
            refused before any work.
        labels: gold labels (names or indices; numbers for regression), one per text in
            the order texts first appear among the explanations; the ``*_acc`` metrics
            need them.
        protocol: how inputs are perturbed (default: each paper's own settings).
        evidence: binary evidence vectors over each text's tokens (``evidence_*``).
        layer: which layer of per-layer explanations the faithfulness metrics use
            (evidence metrics score every layer).
        batch_size: texts encoded together; ``rows_per_forward``: perturbed copies per
            forward pass.
        max_tokens_per_batch: a memory budget: a perturbed pass holds at most this many
            tokens (copies x the padded length), so long texts run fewer copies at a time
            (at least one); scores do not change.
        progress: a progress bar on stderr (with an ETA) that moves with every forward
            pass over the perturbed rows of every metric. ``None`` (default): shown when
            stderr is a terminal or in a notebook; ``True``/``False``: always / never; a
            callable: called instead with the work done so far in texts (a float out of
            the number of texts, rising steadily to it; what the command line's bar uses).
    """
    if _holds_generations(explanations):
        from .generations import evaluate_generations

        if labels is not None or evidence is not None:
            raise InvalidInputError("a generation has no gold labels or evidence to pass")
        return evaluate_generations(
            model,
            explanations,  # type: ignore[arg-type]
            metrics,
            protocol,
            layer=layer,
            batch_size=batch_size,
            rows_per_forward=rows_per_forward,
            max_tokens_per_batch=max_tokens_per_batch,
            progress=progress,
        )
    if metrics is None:
        metrics = default_metrics(model)
    if isinstance(metrics, str):
        metrics = [metrics]
    metrics = list(dict.fromkeys(metrics))
    if not metrics:
        raise InvalidInputError("no metrics asked for; see normxlogit.evaluation.list_metrics()")
    classes = [metric_class(name) for name in metrics]
    reason = first_refusal(model, metrics)
    if reason is not None:
        raise InvalidInputError(reason)
    if batch_size < 1 or rows_per_forward < 1:
        raise InvalidInputError("batch_size and rows_per_forward must be at least 1")
    if max_tokens_per_batch is not None and max_tokens_per_batch < 1:
        raise InvalidInputError(
            f"max_tokens_per_batch must be at least 1 (or None), got {max_tokens_per_batch}"
        )
    protocol = (protocol or Protocol()).resolved(model)
    explained = ExplanationSet.build(explanations)
    count = len(explained.texts)
    _check_aligned("labels", labels, count, any(c.info.needs_labels for c in classes))
    _check_aligned("evidence", evidence, count, any(c.info.needs_evidence for c in classes))
    if model.task.kind is TaskKind.REGRESSION:
        _warn_undefined_correlations(
            metrics, classes, [] if labels is None else list(labels), count
        )
    rows: list[dict] = []
    forward_rows = 0
    chunks = [list(range(s, min(s + batch_size, count))) for s in range(0, count, batch_size)]
    scorers = [cls() for cls in classes]
    plan = [_plan(scorers, protocol, len(explained.methods), len(chunk)) for chunk in chunks]
    with _Progress(progress, sum(sum(steps) for steps in plan), count) as tracker:
        for chunk, steps in zip(chunks, plan, strict=True):
            where = f"texts {chunk[0] + 1}-{chunk[-1] + 1}/{count}"
            tracker.step(steps[0], f"clean pass, {where}")
            ctx = build_context(
                model,
                protocol,
                explained,
                chunk,
                labels,
                evidence,
                layer,
                rows_per_forward,
                max_tokens_per_batch,
            )
            ctx.runner.on_rows = tracker.advance
            for name, scorer, weight in zip(metrics, scorers, steps[1:], strict=True):
                tracker.step(weight, f"{name}, {where}")
                info = scorer.info
                for row in scorer.rows(ctx):
                    row.update(
                        metric=name, axis=info.axis, text=_shown(explained.texts[row["instance"]])
                    )
                    rows.append(row)
            tracker.step(0, "")
            forward_rows += ctx.runner.forward_rows
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


def _warn_undefined_correlations(
    metrics: Sequence[str], classes: Sequence[Any], labels: Sequence[Any], count: int
) -> None:
    """Say why a regressor's ``*_acc`` will be n/a: a Pearson correlation across texts
    needs two texts or more, and gold values that differ."""
    correlated = [
        name
        for name, cls in zip(metrics, classes, strict=True)
        if cls.info.across_instances == "accuracy"
    ]
    if not correlated or not labels:
        return
    gold = [float(v) for v in labels if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if count < 2:
        reason = "one text has none"
    elif gold and len(set(gold)) < 2:
        reason = f"every gold value is {gold[0]:g}"
    else:
        return
    warnings.warn(
        f"{', '.join(correlated)} of a regressor are Pearson correlations with the gold "
        f"values across texts, and {reason}: they will be n/a; evaluate two texts or more "
        "with different gold values",
        NormXLogitWarning,
        stacklevel=3,
    )


def _holds_generations(explanations: Any) -> bool:
    """Whether ``explanations`` are generation explanations (scored per step)."""
    from ..explanations.generation import GenerationExplanation

    items = explanations.values() if isinstance(explanations, dict) else [explanations]
    for item in items:
        first = next(iter(item), None) if isinstance(item, (list, tuple)) else item
        if isinstance(first, GenerationExplanation):
            return True
    return False


def _plan(scorers: list, protocol: Protocol, methods: int, texts: int) -> list[int]:
    """The work of one chunk in rows through the model: its clean pass, then each metric's
    perturbed rows (rows a metric shares with an earlier one count once; a metric that
    cannot say counts one row per explanation)."""
    steps, seen = [texts], set()
    for scorer in scorers:
        planned = scorer.planned_rows(protocol, methods, texts)
        if planned is None:
            steps.append(methods * texts)
            continue
        steps.append(sum(rows for key, rows in planned.items() if key not in seen))
        seen.update(planned)
    return steps


class _Progress:
    """Counts the work done in rows through the model and reports it: to a terminal bar,
    to a callable (in texts), or nowhere. A step's rows are counted as its forward passes
    run, never past the step's planned end, so the count only rises and ends at the total."""

    def __init__(self, progress: bool | Callable[[float], None] | None, total: int, texts: int):
        self.total, self.texts = max(total, 1), texts
        self.done = self.end = 0
        self.callback: Callable[[float], None] | None = None
        self.bar: TerminalBar | None = None
        if callable(progress):
            self.callback = progress
        elif progress is None or progress is True:
            self.bar = TerminalBar("evaluating", self.total, unit="rows", force=progress is True)

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def step(self, weight: int, description: str) -> None:
        """Close the current step (its planned rows are done) and open the next."""
        self._report(self.end)
        self.end = self.done + weight
        if self.bar is not None and description:
            self.bar.update(self.done, description=description)

    def advance(self, rows: int) -> None:
        self._report(min(self.done + rows, self.end))

    def _report(self, done: int) -> None:
        if done == self.done:
            return
        self.done = done
        if self.callback is not None:
            self.callback(self.texts * done / self.total)
        elif self.bar is not None:
            self.bar(done)


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
