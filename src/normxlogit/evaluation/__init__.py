"""Faithfulness and plausibility of explanations: the protocols of both papers.

>>> result = normxlogit.evaluate(model, explanations, metrics=["comp_cd", "pi_soft_nc"])
>>> result.summary()          # methods x metrics, each sorting itself
>>> result.frame              # one row per text x method x metric x ratio / pi / step

Metrics register themselves (``list_metrics()``) and carry their metadata; the perturbation
settings are a :class:`Protocol` saved with every result.
"""

from __future__ import annotations

from ..sanity import metrics as _sanity_metrics  # noqa: F401  (a listed delegation)
from . import (  # noqa: F401  (registers the metrics)
    evidence,
    hard,
    plausibility,
    segment_checks,
    segment_plausibility,
    soft,
)
from .evaluate import evaluate
from .plausibility import FERRET_PLAUSIBILITY, rationale_k
from .protocol import Protocol
from .registry import Metric, MetricInfo, list_metrics, metric_info, register_metric
from .result import EvaluationResult
from .summary import SummaryTable

__all__ = [
    "FERRET_PLAUSIBILITY",
    "EvaluationResult",
    "Metric",
    "MetricInfo",
    "Protocol",
    "SummaryTable",
    "evaluate",
    "list_metrics",
    "metric_info",
    "rationale_k",
    "register_metric",
]
