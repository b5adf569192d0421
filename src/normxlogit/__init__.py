"""Explain transformer predictions token by token (NormXLogit) and measure faithfulness.

>>> import normxlogit
>>> model = normxlogit.load("minilm-sst2")
>>> explanation = model.explain("A gripping, beautifully acted film.")
"""

from __future__ import annotations

from . import metrics  # noqa: E402  (pure metric functions: normxlogit.metrics)
from .adapter import ExplainableModel, ForwardResult
from .builtin import DEFAULT_MODEL, list_models
from .errors import (
    InvalidInputError,
    NormXLogitError,
    NormXLogitWarning,
    UnknownMethodError,
    UnknownModelError,
    UnsupportedModelError,
)
from .evaluation import EvaluationResult, Protocol, evaluate, list_metrics
from .explain import explain
from .explanation import Explanation, load_explanations, save_explanations
from .families import list_families
from .loading import load
from .methods import AttributionMethod, get_method, list_methods, register_method
from .tasks import ChatPrompt, Task, TaskKind

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MODEL",
    "AttributionMethod",
    "ChatPrompt",
    "EvaluationResult",
    "ExplainableModel",
    "Explanation",
    "ForwardResult",
    "InvalidInputError",
    "NormXLogitError",
    "NormXLogitWarning",
    "Protocol",
    "Task",
    "TaskKind",
    "UnknownMethodError",
    "UnknownModelError",
    "UnsupportedModelError",
    "evaluate",
    "explain",
    "get_method",
    "list_families",
    "list_methods",
    "list_metrics",
    "list_models",
    "load",
    "load_explanations",
    "metrics",
    "register_method",
    "save_explanations",
]
