"""``EvaluationResult``: every instance x method x metric x curve point of an evaluation,
with the protocol that made it; its summaries, and its file (checked when read back)."""

from __future__ import annotations

import json
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..common.code_identity import is_builtin
from ..common.counts import whole_number
from ..common.errors import InvalidFileError, NormXLogitError, NormXLogitWarning
from ..common.fields import name_problem
from ..common.input_paths import (
    check_saved_file,
    decode_utf8,
    given_path,
    reencode_hint,
    refuse_binary_file,
)
from ..common.outputs import check_json_name, json_text, short_value, type_phrase, write_atomically
from ..common.saved_kinds import (
    EVALUATION_LOADER,
    data_file_refusal,
    other_loader_hint,
    table_refusal,
)
from .protocol import Protocol
from .registry import MetricInfo, list_metrics, metric_class, metric_info, outside_range_warning
from .stats import paired_differences, standard_errors
from .summary import SummaryTable

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
    #: per method, the settings every one of its explanations shares (its options, the
    #: layer, the precision): what made the scores, kept with the file
    method_settings: dict[str, dict[str, Any]] = field(default_factory=dict)

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
            value = info.combine(group["value"].to_numpy(float), group["gold"].to_numpy(float))
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
        return SummaryTable(values, {m: self._range_info(m) for m in values.columns})

    @property
    def contrastive(self) -> bool:
        """Whether a method explained a contrast (``contrast=``, kept in its settings): a
        metric that reads p(target) - p(contrast) then has its contrastive range."""
        return any("contrast" in kept for kept in self.method_settings.values())

    def _range_info(self, metric: str) -> MetricInfo:
        """The metric's info with the range this result's values lie in."""
        return metric_class(metric).ranged_info(self.contrastive)

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
            "method_settings": self.method_settings,
            "rows": frame.to_dict(orient="records"),
        }

    def save(self, path: str | Path) -> Path:
        """Write the result (rows and protocol) as JSON; :meth:`load` reads it back. A name
        not ending in .json is refused: the file would be JSON whatever its suffix."""
        check_json_name(
            path,
            "an evaluation result is",
            "result.json",
            {".csv": "result.frame.to_csv() writes the rows as CSV"},
        )
        path = Path(path)
        write_atomically(path, json_text(self.to_dict(), default=plain_json))
        return path

    @classmethod
    def load(cls, path: str | Path) -> EvaluationResult:
        """Read a result written by :meth:`save`; any other file raises
        :class:`~normxlogit.common.errors.InvalidFileError` naming the file and the problem."""
        path = given_path(path)  # None, a number or bytes: refused in one line

        def refuse(problem: str) -> InvalidFileError:
            return InvalidFileError(
                f"{path} is not a saved normxlogit evaluation result: {problem}"
            )

        check_saved_file(
            path, "a saved result", "pass the path of a file written by EvaluationResult.save"
        )
        if (refusal := table_refusal(path, EVALUATION_LOADER)) is not None:
            raise InvalidFileError(refusal)  # a .csv / .parquet table: not JSON, nor cut short
        refuse_binary_file(  # a .png figure, a data .parquet: no encoding makes them text
            path, "a saved evaluation result", "pass the path of a file EvaluationResult.save wrote"
        )
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise InvalidFileError(f"cannot read {path}: {error.strerror or error}") from None
        # a UTF-8 byte-order mark (Windows Notepad) is skipped; UTF-16 and UTF-32 are named
        # with how to re-encode them, as every other reader does
        text = decode_utf8(raw, str(path), reencode_hint(path))
        try:
            data = json.loads(text, parse_int=whole_number)
        except json.JSONDecodeError as error:
            if refusal := data_file_refusal(path, "a saved evaluation result"):
                raise InvalidFileError(refusal) from None
            cut = ", cut short?" if not text.rstrip().endswith(("}", "]")) else ""
            raise refuse(
                f"invalid JSON at line {error.lineno}, column {error.colno}{cut}"
            ) from None
        if not isinstance(data, dict):
            hint = other_loader_hint(data, EVALUATION_LOADER)
            raise refuse(f"expected a JSON object, found {type_phrase(data)}{hint}")
        missing = [key for key in ("metrics", "protocol", "rows") if key not in data]
        if missing:
            hint = other_loader_hint(data, EVALUATION_LOADER)
            raise refuse(f"no {', '.join(repr(k) for k in missing)} (keys: {sorted(data)}){hint}")
        metrics = data["metrics"]
        if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
            raise refuse("'metrics' must be a list of metric names")
        for number, metric in enumerate(metrics):
            if metric in metrics[:number]:  # the summary would hold two columns of one name
                raise refuse(f"'metrics' names {metric} twice; name each metric once")
            if metric not in list_metrics():  # no summary, curve or table can read it
                raise refuse(
                    f"'metrics' names {metric!r}, no metric of normxlogit's; available: "
                    f"{', '.join(list_metrics())}"
                )
        if not isinstance(data["protocol"], dict):
            raise refuse("'protocol' must be an object of protocol settings")
        try:
            protocol = Protocol.from_dict(data["protocol"])
        except NormXLogitError as error:
            raise refuse(f"its protocol: {error}") from None
        method_settings = data.get("method_settings", {})
        if not isinstance(method_settings, dict) or not all(
            isinstance(value, dict) for value in method_settings.values()
        ):
            raise refuse("'method_settings' must be an object of method name -> settings")
        contrastive = {name for name, kept in method_settings.items() if "contrast" in kept}
        frame = _rows_frame(data["rows"], metrics, refuse, protocol, path, contrastive)
        forward_rows = data.get("forward_rows", 0)
        if not isinstance(forward_rows, int) or isinstance(forward_rows, bool):
            raise refuse("'forward_rows' must be a whole number")
        model = data.get("model")
        model = "" if model is None else model
        if not isinstance(model, str):  # a name written as 5 or [] is no model's name
            raise refuse("'model' must be the model's name (a string)")
        return cls(
            frame=frame,
            protocol=protocol,
            metrics=metrics,
            model=model,
            forward_rows=forward_rows,
            method_settings=method_settings,
        )


def _never_given(metric: str, info: MetricInfo, value: float) -> str:
    """A built-in metric's saved value outside its range, said as a value the metric
    cannot give (not the registry's advice to a metric's author to declare its range)."""
    low, high = info.value_range
    span = f"[{low:g}, {high:g}]"
    return f"is {float(value):g}, which {metric} never gives (its values lie in {span})"


def _rows_frame(
    rows: Any,
    metrics: list[str],
    refuse,
    protocol: Protocol,
    path: Path,
    contrastive: set[str],
) -> pd.DataFrame:
    """The saved rows as the tidy frame, every row checked; a row that repeats another's
    point is refused (a protocol never writes two: it refuses a repeated grid value), and
    so is a row whose x is no point of its metric's grid in ``protocol``. A built-in
    metric's values outside its declared range are warned about as ``evaluate`` does (the
    ``contrastive`` methods' against the metric's contrastive range)."""
    if not isinstance(rows, list):
        raise refuse(f"'rows' must be a list of row objects, found {type_phrase(rows)}")
    if not rows:  # the summary would be an empty table, with no word why
        raise refuse("'rows' is empty; evaluate again and save the result it returns")
    required = ("instance", "method", "metric", "value")
    stepped = any(isinstance(row, dict) and "step" in row for row in rows)  # a generation's
    points: dict[tuple, int] = {}
    infos = {metric: metric_class(metric).info for metric in metrics}
    ranged = {metric: metric_class(metric).ranged_info(True) for metric in metrics}
    # a registered metric's points are its own: only the rule evaluate applies holds
    grids = {
        metric: _grid(metric, protocol) for metric in metrics if is_builtin(metric_class(metric))
    }
    curves: dict[str, bool] = {}  # metric: whether its rows' x are numbers
    outside: dict[str, list[str]] = {}  # built-in metric: where its values leave its range
    curve_points: dict[tuple, list] = {}  # (metric, method, instance, step): its x
    for number, row in enumerate(rows):
        if not isinstance(row, dict):
            raise refuse(f"rows[{number}] is {type_phrase(row)}, not an object")
        absent = [key for key in required if key not in row]
        if absent:
            raise refuse(f"rows[{number}] has no {', '.join(absent)}")
        for key in ("metric", "method"):  # blank or null: a summary row named '' or 'nan'
            if not isinstance(row[key], str) or not row[key].strip():
                raise refuse(f"rows[{number}]: {key!r} is {row[key]!r}; name the row's {key}")
            # ' l ' or 'l\u200b' beside 'l': two rows a reader cannot tell apart
            if (problem := name_problem(row[key])) is not None:
                raise refuse(f"rows[{number}]: {key!r} is {row[key]!r}, {problem}")
        if row["metric"] not in metrics:
            raise refuse(f"rows[{number}] is for metric {row['metric']!r}, not among {metrics}")
        if not _whole_number(row["instance"]):
            raise refuse(
                f"rows[{number}]: 'instance' is {short_value(row['instance'])}; give the text's "
                "index, a whole number from 0"
            )
        for key in ("x", "value", "gold"):
            value = row.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise refuse(
                    f"rows[{number}]: {key!r} must be a number or null, not {short_value(value)}"
                )
            if value is not None and abs(value) > sys.float_info.max:  # NaN, null: no value
                raise refuse(
                    f"rows[{number}]: {key!r} is {short_value(value)}; give a finite number, "
                    "or null where there is no value"
                )
        x, metric = row.get("x"), row["metric"]
        if (problem := infos[metric].x_refusal(x, curves.get(metric))) is not None:
            raise refuse(f"rows[{number}]: 'x' {problem}")
        curves[metric] = x is not None and x == x
        if metric in grids and (problem := _off_grid(x, metric, grids[metric])) is not None:
            raise refuse(f"rows[{number}]: 'x' is {short_value(x)}, {problem}")
        # evaluate keeps a value outside the declared range with a warning, so a file it
        # wrote may hold one: said again here (a hand edit is flagged), not refused
        judged = (ranged if row["method"] in contrastive else infos)[metric]
        if metric in grids and judged.row_range_problem(row) is not None:
            where = f"method {row['method']!r} on text {row['instance']}"
            problem = _never_given(metric, judged, row["value"])
            outside.setdefault(metric, []).append(f"in rows[{number}] ({where}) {problem}")
        step = row.get("step")
        if stepped and not _whole_number(step):
            raise refuse(
                f"rows[{number}]: 'step' is {f'{step!r:.40}' if 'step' in row else 'missing'}; "
                "give a whole number from 0 (the generation step), or leave step out of every row"
            )
        x = None if pd.isna(row.get("x")) else row["x"]
        point = (row["metric"], row["method"], row["instance"], step, x)
        if (first := points.setdefault(point, number)) != number:
            raise refuse(
                f"rows[{number}] repeats rows[{first}] (the same metric, method, instance, step "
                "and x); remove one, or the summary averages the two"
            )
        curve_points.setdefault(point[:4], []).append(x)
    for metric, problems in outside.items():
        warnings.warn(
            outside_range_warning(
                metric,
                problems,
                "the file was edited or written by another program; the summary reads them as "
                f"saved in {path}",
            ),
            NormXLogitWarning,
            stacklevel=3,
        )
    if (problem := _incomplete_curve(curve_points, grids)) is not None:
        raise refuse(problem)
    if (unrowed := _unrowed(curve_points, metrics)) is not None:
        warnings.warn(f"{path}: {unrowed}", NormXLogitWarning, stacklevel=3)
    columns = [*COLUMNS[:1], "step", *COLUMNS[1:]] if stepped else COLUMNS
    frame = pd.DataFrame(rows, columns=columns)
    for column in ("x", "value", "gold"):
        frame[column] = frame[column].astype(float)
    frame["instance"] = frame["instance"].astype(int)
    if stepped:
        frame["step"] = frame["step"].astype(int)
    return frame


def _incomplete_curve(curve_points: dict[tuple, list], grids: dict[str, Any]) -> str | None:
    """Where one text's curve (of one method, metric and generation step) lacks a point
    that a built-in metric's curves hold: the point of its grid in the saved protocol; for
    a layer, one the method's other texts hold; for a randomisation step, one any sanity
    curve of the file holds (one pass randomises the same steps for every sanity metric,
    method and text, so a curve cut for every text still shows beside sanity_top_k's). Its
    summary would average the points left as if they were the curve. None: every curve is
    whole. A text with no rows at all (left out: its contrast was its target) is no curve
    cut short."""
    held: dict[tuple[str, ...], set] = {}  # _reference's key: every x of its curves
    for (metric, method, _, _), xs in curve_points.items():
        if metric in grids and grids[metric] is None:
            held.setdefault(_reference(metric, method), set()).update(xs)
    for (metric, method, instance, step), xs in curve_points.items():
        if metric not in grids:  # a registered metric: its points are its own
            continue
        grid = grids[metric]
        reference = _reference(metric, method)
        expected = sorted(held[reference], key=_x_order) if grid is None else grid
        missing = [point for point in expected if not _holds(xs, point)]
        if missing:
            where = f"text {instance}" + ("" if step is None else f", step {step}")
            if grid is not None:
                of = f"a point of {metric}'s grid in the saved protocol"
            elif len(reference) == 1:
                of = "a randomisation step the file's other sanity curves hold"
            else:
                of = "a point the method's other texts hold"
            return (
                f"the {metric} curve of method {method!r} on {where} has no row at x = "
                f"{', '.join(_shown_x(point) for point in missing)} ({of}); its "
                "summary would average the points left: restore the rows, or evaluate again"
            )
    return None


def _reference(metric: str, method: str) -> tuple[str, ...]:
    """Which curves share ``metric``'s points where no grid sets them: every sanity
    metric's and method's (the randomisation steps, one list per evaluation), else the
    method's own texts (the layers its explanations hold)."""
    return ("step",) if metric_class(metric).info.axis == "step" else (metric, method)


def _holds(xs: list, point: Any) -> bool:
    """Whether the curve's ``xs`` hold ``point`` (as saved, or within rounding)."""
    if point in xs:
        return True
    return point is not None and any(
        x is not None and math.isclose(x, point, rel_tol=1e-9, abs_tol=1e-12) for x in xs
    )


def _x_order(x: Any) -> float:
    return -1.0 if x is None else float(x)


def _shown_x(x: Any) -> str:
    return "null" if x is None else f"{x:g}"


def _unrowed(curve_points: dict[tuple, list], metrics: list[str]) -> str | None:
    """What the file lacks that the summary would show as no value without a word: a
    metric with no rows for a method the other metrics have rows of (NaN in its summary
    column), or with no rows at all (no column). evaluate warns when a metric gives no rows
    for a method and keeps the file whole, so this is said, not refused."""
    methods = list(dict.fromkeys(method for (_, method, _, _) in curve_points))
    rowed: dict[str, set[str]] = {}
    for metric, method, _, _ in curve_points:
        rowed.setdefault(metric, set()).add(method)
    said = []
    for metric in metrics:
        missing = [method for method in methods if method not in rowed.get(metric, set())]
        if len(missing) == len(methods):
            said.append(f"{metric} has no rows (the summary leaves it out)")
        elif missing:
            named = ", ".join(repr(method) for method in missing)
            said.append(f"{metric} has no rows for {named} (no value in the summary)")
    if not said:
        return None
    return "; ".join(said) + "; evaluate again for their values"


def _grid(metric: str, protocol: Protocol) -> tuple[float, ...] | None:
    """The x values ``protocol`` gives ``metric``'s rows: comprehensiveness' and
    sufficiency's ratios, insertion's and deletion's step fractions, pi-Soft's pis, the
    top-k drop's k; () for a metric of one number (x null). None where the protocol does
    not set them: a layer's index, or a randomisation step (whole numbers from 0, or
    null without layers)."""
    cls = metric_class(metric)
    fractions = getattr(cls, "fractions", None)  # the hard metrics: the points they perturb
    if callable(fractions):
        return tuple(fractions(cls(), protocol))
    axis = cls.info.axis
    if axis is None:
        return ()
    return {"pi": protocol.pis, "sources": protocol.drop_k}.get(axis)


def _off_grid(x: Any, metric: str, grid: tuple[float, ...] | None) -> str | None:
    """Why ``x`` (a row's, checked a finite number or null) is no point ``metric``'s rows
    hold: one off the grid would be averaged in as a point of its own. None: it is one."""
    x = None if x is None or x != x else x  # null, or NaN (a frame's missing x)
    if grid is None:  # a layer or a randomisation step
        if x is None or (x >= 0 and float(x).is_integer()):
            return None
        return f"but {metric}'s x is a layer or step index, a whole number from 0 (or null)"
    if not grid:
        return None if x is None else f"but {metric} is one number per row, with x null"
    if x is not None and (
        x in grid  # as saved; else as written before step fractions were rounded
        or any(math.isclose(x, point, rel_tol=1e-9, abs_tol=1e-12) for point in grid)
    ):
        return None
    return (
        f"not a point of {metric}'s grid in the saved protocol "
        f"({', '.join(f'{point:g}' for point in grid)}); remove the row, or the summary "
        "averages it in as a point of its own"
    )


def _whole_number(value: Any) -> bool:
    """An index a frame can hold: a whole number from 0 that fits 64 bits (a larger one
    is no text's or step's, and would overflow the frame's integer column)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def plain_json(value: Any) -> Any:
    """numpy scalars and tuples as the JSON values they are (``json.dumps``' ``default``)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__}")
