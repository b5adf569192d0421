"""Metrics that carry their own metadata, and the registry that lists them.

A metric knows its name, whether higher or lower is better, its range, the axis its curve
runs along (ratio, pi, step or layer) and how the curve is summarised (AOPC, AUC, the final
layer), so result tables sort and colour themselves without a table of special cases.
"""

from __future__ import annotations

import array
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..common.code_identity import forget_fingerprints
from ..common.errors import InvalidInputError, UnknownMetricError
from ..common.extensions import REASON, guard_hooks, is_reason
from ..common.fields import check_one_name, check_replacing, name_problem
from ..common.fields import shown_value as _shown
from ..common.outputs import lone_item, type_phrase
from ..metrics import aopc, auc, pearson
from ..model.tasks import TaskKind

if TYPE_CHECKING:
    from ..model.adapter import ExplainableModel
    from .context import EvaluationContext
    from .protocol import Protocol

SUMMARIES = ("aopc", "auc", "mean", "last")
ACROSS_INSTANCES = ("mean", "accuracy")
EVIDENCE = ("tokens", "segments")
#: how far past its range a value may lie before it is refused: float rounding (a
#: correlation of 1.0000000000000002), relative to the bound
_RANGE_SLACK = 1e-6


def _is_real(value: object) -> bool:
    """A real number (an int, a float, a NumPy number; not a bool, not NaN)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and value == value


@dataclass(frozen=True)
class MetricInfo:
    """What a metric measures and how to read it. Every field is checked when it is made
    (``summary`` one of :data:`SUMMARIES`, ``higher_is_better`` True, False or None, the
    range two numbers, low first); ``evaluate`` warns, once per metric, about values
    that lie outside the range."""

    name: str
    description: str
    #: None: a descriptive quantity with no better direction (nothing is ranked by it)
    higher_is_better: bool | None
    #: the closed interval every value lies in (``inf`` where unbounded): each instance's
    #: value, each curve point and the summary; an accuracy metric's rows on a regression
    #: model hold the model's predictions, and their correlation lies in the range
    value_range: tuple[float, float]
    #: the curve's axis: "ratio", "pi", "step", "layer", or None for one number
    axis: str | None
    #: how the curve becomes one number: "aopc" (mean over points), "auc" (trapezoid),
    #: "last" (the final layer) or "mean" (no curve)
    summary: str
    #: how instances combine at each point: "mean", or "accuracy" (the mean, or the
    #: Pearson correlation with the gold values when the rows carry them: regression)
    across_instances: str = "mean"
    needs_labels: bool = False
    needs_evidence: bool = False
    #: what its evidence is, per text: ``"tokens"`` (0/1 over the tokens, or word indices)
    #: or ``"segments"`` (the evidence segments' indices)
    evidence: str = "tokens"

    def __post_init__(self) -> None:
        what = f"MetricInfo of metric {self.name!r}:"
        value_range = self.value_range
        if (
            not isinstance(value_range, tuple | list)
            or len(value_range) != 2
            or not all(_is_real(end) for end in value_range)
        ):
            raise InvalidInputError(
                f"{what} value_range is {_shown(value_range)}; give (low, high), two numbers "
                "(float('inf') where unbounded)"
            )
        low, high = value_range
        if not low <= high:
            raise InvalidInputError(
                f"{what} value_range {tuple(value_range)} is empty; give (low, high), low first"
            )
        if low == high and not np.isfinite(low):  # (inf, inf), (-inf, -inf)
            raise InvalidInputError(
                f"{what} value_range {tuple(value_range)} holds no number; give (low, high) "
                "with a finite end, or (-inf, inf) where unbounded"
            )
        object.__setattr__(self, "value_range", tuple(value_range))
        if not isinstance(self.description, str):
            raise InvalidInputError(f"{what} description is {_shown(self.description)}; a string")
        if self.higher_is_better is not None and not isinstance(self.higher_is_better, bool):
            raise InvalidInputError(
                f"{what} higher_is_better is {_shown(self.higher_is_better)}; True, False, or "
                "None (a descriptive quantity)"
            )
        if self.axis is not None and not (isinstance(self.axis, str) and self.axis.strip()):
            raise InvalidInputError(
                f"{what} axis is {_shown(self.axis)}; the name of the curve's axis (such as "
                "'ratio', 'pi', 'step', 'layer'), or None for one number"
            )
        for field, value, choices in (
            ("summary", self.summary, SUMMARIES),
            ("across_instances", self.across_instances, ACROSS_INSTANCES),
            ("evidence", self.evidence, EVIDENCE),
        ):
            if not (isinstance(value, str) and value in choices):
                raise InvalidInputError(
                    f"{what} {field} is {_shown(value)}; one of: {', '.join(choices)}"
                )
        for field in ("needs_labels", "needs_evidence"):
            if not isinstance(getattr(self, field), bool):
                raise InvalidInputError(
                    f"{what} {field} is {_shown(getattr(self, field))}; True or False"
                )

    def in_range(self, value: float) -> bool:
        """Whether ``value`` lies in the declared range (NaN, a missing value, does)."""
        low, high = self.value_range
        return bool(np.isnan(value) or low <= value <= high)

    def number_refusal(self, value: object) -> str | None:
        """Why ``value``, one of this metric's rows, is no number to report (None: it is a
        number, or missing: None and NaN)."""
        if value is None or (isinstance(value, numbers.Real) and value != value):
            return None  # null or NaN: no value
        if not _is_real(value):
            return f"is {_shown(value)}, not a number (NaN where there is none)"
        return None

    def x_refusal(self, x: object, curve: bool | None) -> str | None:
        """Why ``x``, a row's curve point (checked a number, None or NaN), is none of this
        metric's (None: it is one): a finite number on a curve, null (None or NaN) for one
        number per text, and a number in every row or in none (``curve``: whether the rows
        before had one; None before the first). ``evaluate`` and
        ``EvaluationResult.load`` both ask, so what one writes the other reads."""
        number = x is not None and x == x
        if number and not np.isfinite(float(x)):  # type: ignore[arg-type]
            return f"is {float(x)}; give a finite number, or None (no curve point)"  # type: ignore[arg-type]
        if curve is not None and number != curve:
            return (
                f"is {x!r}, but earlier rows of {self.name} have "
                + ("numbers" if curve else "None")
                + ": a curve's rows all have x, a metric of one number none"
            )
        return None

    def range_problem(self, value: float) -> str | None:
        """Why a number lies outside the declared range by more than float rounding (None:
        it lies inside)."""
        low, high = self.value_range
        slack_low = _RANGE_SLACK * max(1.0, abs(low)) if np.isfinite(low) else 0.0
        slack_high = _RANGE_SLACK * max(1.0, abs(high)) if np.isfinite(high) else 0.0
        if low - slack_low <= value <= high + slack_high:
            return None
        return (
            f"is {float(value):g}, outside its range [{low:g}, {high:g}] (MetricInfo's "
            "value_range, which every value lies in); fix the metric's rows, or declare the "
            "range its values reach"
        )

    def row_range_problem(self, row: Mapping[str, Any]) -> str | None:
        """Why a row's value (checked a number, None or NaN) lies outside the declared
        range (None: inside, or missing). An accuracy metric's rows on a regression model
        (with gold values) hold the model's predictions: their correlation is what lies in
        the range. ``evaluate`` and ``EvaluationResult.load`` both ask."""
        gold = row.get("gold")
        if self.across_instances == "accuracy" and gold is not None and gold == gold:
            return None
        value = row.get("value")
        if value is None or value != value:
            return None
        return self.range_problem(value)

    @property
    def ranked(self) -> bool:
        """Whether methods are ranked by this metric (it has a better direction)."""
        return self.higher_is_better is not None

    @property
    def direction(self) -> str:
        if not self.ranked:
            return "descriptive"
        return "higher is better" if self.higher_is_better else "lower is better"

    @property
    def arrow(self) -> str:
        return "" if not self.ranked else "↑" if self.higher_is_better else "↓"

    def marked(self, text: str) -> str:
        """``text`` followed by the arrow, where the metric has one."""
        return f"{text} {self.arrow}" if self.ranked else text

    def summarise(self, x: np.ndarray, curve: np.ndarray) -> float:
        """One number from the curve over the instances' mean (or correlation)."""
        if self.summary == "aopc":
            return aopc(curve)
        if self.summary == "auc":
            return auc(curve, x)
        if self.summary == "last":
            return float(curve[np.argmax(x)])
        return float(np.mean(curve))

    def combine(self, values: np.ndarray, gold: np.ndarray) -> float:
        """The value at one curve point from every instance's value."""
        if self.across_instances == "accuracy" and np.isfinite(gold).any():
            return pearson(values, gold, float32_outputs=True)  # the model's outputs
        return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")


class Metric(ABC):
    """A registered metric: ``rows`` turns one evaluation context into tidy rows."""

    info: ClassVar[MetricInfo]
    #: the protocol settings this metric's values depend on (None: all of them); a bench
    #: store keys stored values by these alone, so changing another setting reuses them
    protocol_settings: ClassVar[tuple[str, ...] | None] = None
    #: settings added to ``protocol_settings`` after values were stored: a store keys
    #: them only when they differ from their defaults, so the values stored before (under
    #: the defaults) are still found
    keyed_unless_default: ClassVar[tuple[str, ...]] = ()
    #: settings the metric does not read but its stored values were once keyed by: a
    #: store keys them at their defaults whatever they are set to, so changing them
    #: recomputes nothing and the values stored before (under the defaults) are still found
    keyed_at_default: ClassVar[tuple[str, ...]] = ()
    #: raised when what the metric computes changes under the same settings, so a bench
    #: store recomputes values stored before (0: the first definition)
    revision: ClassVar[int] = 0
    #: why a regression model cannot be scored by this metric (None: it can)
    regression_refusal: ClassVar[str | None] = None
    #: whether it scores the explanation of a whole answer (a segment method with
    #: ``generate=``/``continuation=``): its value is then the answer's log-probability
    #: after the prompt, not one prediction read at one position
    reads_answers: ClassVar[bool] = False
    #: whether it reads each explanation's segments (removes, ranks or matches them): an
    #: explanation without segments is refused
    needs_segments: ClassVar[bool] = False
    #: the range its values lie in for a contrastive explanation (``contrast=``), where it
    #: reads p(target) - p(contrast), a difference in [-1, 1] (None: ``info.value_range``)
    contrast_range: ClassVar[tuple[float, float] | None] = None
    #: whether it perturbs the text and reads the model's output on it: an explanation
    #: against a contrast input explains the difference of two inputs' outputs, which a
    #: perturbation of one input does not measure, so it is refused
    perturbs_input: ClassVar[bool] = False

    @classmethod
    def keyed_at_defaults(cls, settings: Mapping[str, Any]) -> tuple[str, ...]:
        """The settings a store keys at their defaults for values computed under
        ``settings`` (the protocol's, as ``Protocol.to_dict`` gives them): those the metric
        does not read there. ``keyed_at_default`` by default; a metric whose reads depend on
        one setting's value (token_f1 and ``discretize``) adds those that value leaves
        unread, so changing them recomputes nothing."""
        return cls.keyed_at_default

    @classmethod
    def ranged_info(cls, contrastive: bool) -> MetricInfo:
        """``info`` with the range the values of a contrastive explanation (``contrastive``)
        or a plain one lie in: what ``evaluate`` checks them against and the page shows."""
        if not contrastive or cls.contrast_range is None:
            return cls.info
        return replace(cls.info, value_range=tuple(cls.contrast_range))

    @classmethod
    def refusal(cls, model: ExplainableModel) -> str | None:
        """Why this metric means nothing for ``model`` (None: it applies). ``evaluate``
        refuses before any work, and the page greys the metric out."""
        if model.task.kind is TaskKind.REGRESSION and cls.regression_refusal is not None:
            return f"{cls.info.name} {cls.regression_refusal}"
        return None

    @classmethod
    def explanation_refusal(cls, methods: Iterable[str]) -> str | None:
        """Why this metric cannot score explanations made by ``methods`` (their registered
        names; None: it can). ``evaluate`` asks before any work, so a refusal a later
        chunk would meet comes first."""
        return None

    @classmethod
    def run_refusal(cls, model: Any, explanations: Iterable[Any]) -> str | None:
        """Why this metric cannot run with ``model`` on ``explanations`` here (None: it
        can): what it needs beyond the explanations themselves (an extra a method it
        explains again with needs), asked by ``evaluate`` before any work."""
        return None

    @abstractmethod
    def rows(self, context: EvaluationContext) -> list[dict]:
        """One dict per instance x method (x curve point): ``instance`` (one of
        ``context.instances``, each text's number in the evaluation, not its position in
        the chunk), ``method`` (one of ``context.methods``), ``x`` (a number, or None for
        one number per text) and ``value`` (and ``gold`` for correlations); ``evaluate``
        refuses a row that is not so, or repeats an instance, method and x."""

    def planned_rows(self, protocol: Protocol, methods: int, texts: int) -> dict | None:
        """The perturbed rows this metric sends through the model for a chunk of ``texts``
        (for progress bars), keyed by what it shares with other metrics in the same chunk
        (rows under one key run once); ``None``: not known in advance."""
        return None

    def finish(self, protocol: Protocol) -> None:  # noqa: B027  (optional, not abstract)
        """Called once after the last chunk of an evaluation: warn about what the values
        alone do not say (how many texts could not be scored, say). Nothing by default."""


_METRICS: dict[str, type[Metric]] = {}


def _is_plan(value: Any) -> bool:
    return value is None or (
        isinstance(value, dict)
        and all(
            isinstance(rows, numbers.Integral) and not isinstance(rows, bool) and rows >= 0
            for rows in value.values()
        )
    )


#: what the hooks evaluate reads return: a registered metric's is refused in one line
#: naming it and the hook otherwise
_RETURNS = {
    "refusal": (is_reason, f"{REASON} the metric does not apply to the model"),
    "explanation_refusal": (is_reason, f"{REASON} it cannot score these methods"),
    "planned_rows": (_is_plan, "a dict of row counts (whole numbers from 0), or None"),
}


def register_metric(cls: Any = None, *, replace: bool = False) -> Any:
    """Class decorator: make a metric available by its ``info.name``.

    The class subclasses :class:`Metric` and has ``info``, a :class:`MetricInfo`. The name
    is looked up exactly as written, so it has no spaces around it and no invisible
    characters. A name already registered (a built-in's included) is refused unless
    ``replace=True`` (``@register_metric(replace=True)``).
    """
    if cls is None:  # @register_metric(replace=True)
        return lambda given: register_metric(given, replace=replace)
    if not (isinstance(cls, type) and issubclass(cls, Metric)):
        raise InvalidInputError(f"register_metric needs a subclass of Metric, got {_shown(cls)}")
    info = getattr(cls, "info", None)
    if not isinstance(info, MetricInfo):
        raise InvalidInputError(
            f"register_metric needs a class with info = MetricInfo(name, description, "
            f"higher_is_better, value_range, axis, summary); {cls.__qualname__} has "
            + ("none" if info is None else _shown(info))
        )
    name = info.name
    if not isinstance(name, str):
        raise InvalidInputError(
            f"register_metric needs a metric named by a string (MetricInfo's name); "
            f"{cls.__qualname__} has {_shown(name)}"
        )
    if not name.strip():
        raise InvalidInputError(f"metric {cls.__qualname__} has a blank name {name!r}")
    if (problem := name_problem(name)) is not None:
        raise InvalidInputError(f"metric name {name!r} is {problem}")
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise InvalidInputError(
            f"metric {name!r} does not implement {', '.join(f'{m}()' for m in missing)}; "
            "define it in the class (rows() returns one dict per instance x method)"
        )
    check_replacing("metric", name, cls, _METRICS.get(name), replace)
    check_one_name("metric", name, cls, _METRICS)
    # a failure in its own rows(), refusal(), finish()... is said in one line naming it
    guard_hooks(cls, "metric", lambda owner: owner.info.name, _RETURNS)
    forget_fingerprints()  # its attributes may have changed since it was first registered
    _METRICS[name] = cls
    return cls


def list_metrics() -> list[str]:
    """Names of every registered metric."""
    return sorted(_METRICS)


def outside_range_warning(name: str, problems: Sequence[str], kept: str) -> str:
    """The warning about a metric's values outside its declared range (``problems``:
    where each lies, as ``"for <where> is ..."``); ``kept``: what becomes of them."""
    return (
        f"metric {name!r}: {len(problems)} value(s) outside its declared range, the "
        f"first {problems[0]}; {kept}"
    )


def metric_info(name: str) -> MetricInfo:
    return metric_class(name).info


def first_refusal(model: ExplainableModel, metrics: Iterable[str]) -> str | None:
    """Why the first of ``metrics`` that means nothing for ``model`` does not apply (None:
    they all do), so callers refuse a wrong metric before any work."""
    for name in metrics:
        reason = metric_class(name).refusal(model)
        if reason is not None:
            return reason
    return None


def given_metrics(metrics: Any) -> list[str] | None:
    """``metrics=`` as a list of names (None: left out, the defaults): a lone name is a
    list of one, any other iterable is read once; a value that is no list of names (a
    number, a bool, bytes) is refused as a metric name is, in one line."""
    metrics = lone_item(metrics)  # np.array("comp_cd"): the one name
    if metrics is None:
        return None
    if isinstance(metrics, str):
        return [metrics]
    packed = (bytes, bytearray, memoryview, array.array)  # read an item (a character) at a time
    if isinstance(metrics, packed) or not isinstance(metrics, Iterable):
        metric_class(metrics)  # refuses it, naming what it is
    return list(metrics)


def metric_class(name: str) -> type[Metric]:
    if not isinstance(name, str):
        shown = repr(name)
        shown = shown[:60] + "..." if len(shown) > 60 else shown
        given = "None" if name is None else f"{type_phrase(name)} {shown}"
        nested = "; ask for one metric at a time" if isinstance(name, (list, tuple, set)) else ""
        raise InvalidInputError(
            f"a metric is named by a string (one of: {', '.join(list_metrics())}), got "
            f"{given}{nested}"
        )
    if name not in _METRICS:
        raise UnknownMetricError(f"unknown metric {name!r}; available: {', '.join(list_metrics())}")
    return _METRICS[name]
