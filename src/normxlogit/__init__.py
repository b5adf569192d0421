"""Explain transformer predictions token by token (NormXLogit) and measure faithfulness.

>>> import normxlogit
>>> model = normxlogit.load("minilm-sst2")
>>> explanation = model.explain("A gripping, beautifully acted film.")

Importing the package is instant: the public names below are loaded from their submodule
the first time they are used (PEP 562), so torch and transformers are imported only when
something needs them (the command line's ``--help`` and its refusals never do).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .common.errors import (
    InvalidFileError,
    InvalidInputError,
    InvalidOptionError,
    NormXLogitError,
    NormXLogitWarning,
    OutputPathError,
    UnknownMethodError,
    UnknownModelError,
    UnsupportedModelError,
)

__version__ = "0.1.0"

#: public name -> the submodule that defines it (imported on first use)
_LAZY = {
    "DEFAULT_MODEL": ".builtin",
    "list_models": ".builtin",
    "ExplainableModel": ".model.adapter",
    "ForwardResult": ".model.adapter",
    "EvaluationResult": ".evaluation",
    "Protocol": ".evaluation",
    "evaluate": ".evaluation",
    "evaluate_generations": ".evaluation.generations",
    "list_metrics": ".evaluation",
    "explain": ".explaining.texts",
    "explain_and_evaluate": ".workflows",
    "Explanation": ".explanations.explanation",
    "load_explanations": ".explanations.io",
    "save_explanations": ".explanations.io",
    "list_families": ".model.families",
    "GenerationExplanation": ".explanations.generation",
    "load": ".loading",
    "AttributionMethod": ".methods",
    "get_method": ".methods",
    "list_methods": ".methods",
    "register_method": ".methods",
    "ChatPrompt": ".model.tasks",
    "Task": ".model.tasks",
    "TaskKind": ".model.tasks",
}
#: public submodules
_SUBMODULES = ("metrics", "generation", "workflows")

__all__ = [
    "AttributionMethod",
    "ChatPrompt",
    "DEFAULT_MODEL",
    "EvaluationResult",
    "ExplainableModel",
    "Explanation",
    "ForwardResult",
    "GenerationExplanation",
    "InvalidFileError",
    "InvalidInputError",
    "InvalidOptionError",
    "NormXLogitError",
    "NormXLogitWarning",
    "OutputPathError",
    "Protocol",
    "Task",
    "TaskKind",
    "UnknownMethodError",
    "UnknownModelError",
    "UnsupportedModelError",
    "evaluate",
    "evaluate_generations",
    "explain",
    "explain_and_evaluate",
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

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports these
    from . import metrics
    from . import workflows as workflows
    from .builtin import DEFAULT_MODEL, list_models
    from .evaluation import EvaluationResult, Protocol, evaluate, list_metrics
    from .explaining.texts import explain
    from .explanations.explanation import Explanation
    from .explanations.generation import GenerationExplanation
    from .explanations.io import load_explanations, save_explanations
    from .loading import load
    from .methods import AttributionMethod, get_method, list_methods, register_method
    from .model.adapter import ExplainableModel, ForwardResult
    from .model.families import list_families
    from .model.tasks import ChatPrompt, Task, TaskKind
    from .workflows import explain_and_evaluate


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
