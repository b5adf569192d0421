"""What the head-on-top predicts: the task kind, label names, label words and prompts."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from .errors import UnsupportedModelError

if TYPE_CHECKING:  # transformers is imported only when a model is loaded
    from transformers import PreTrainedModel


class TaskKind(str, Enum):
    CLASSIFICATION = "classification"
    REGRESSION = "regression"
    MASKED_LM = "masked_lm"
    CAUSAL_LM = "causal_lm"


@dataclass(frozen=True)
class ChatPrompt:
    """A chat prompt around the user's text, rendered with the tokenizer's chat template."""

    user: str = "{text}"
    system: str | None = None

    def render(self, tokenizer, text: str) -> str:
        messages = [{"role": "user", "content": self.user.format(text=text)}]
        if self.system:
            messages.insert(0, {"role": "system", "content": self.system})
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


@dataclass(frozen=True)
class Task:
    """The prediction being explained.

    For a causal LM, ``label_words`` turn it into a prompted classifier: class ``k`` is
    the first token of ``label_words[k]`` read at the last position, named ``labels[k]``.
    """

    kind: TaskKind
    labels: tuple[str, ...] = ()
    label_words: tuple[str, ...] = ()
    prompt: ChatPrompt | None = field(default=None)

    @property
    def over_vocabulary(self) -> bool:
        """Whether the head's outputs are vocabulary logits (a language-model head)."""
        return self.kind in (TaskKind.MASKED_LM, TaskKind.CAUSAL_LM)

    @property
    def prompted(self) -> bool:
        return bool(self.label_words)

    @property
    def has_label_set(self) -> bool:
        """Outputs are a fixed, named label set (a classifier or a prompted LM)."""
        return self.kind is TaskKind.CLASSIFICATION or self.prompted


def detect_task(
    model: PreTrainedModel,
    label_words: dict[str, str] | list[str] | None = None,
    prompt: ChatPrompt | None = None,
) -> Task:
    """The task of a transformers model, from the class of its head."""
    from transformers.models.auto import modeling_auto as auto

    name = type(model).__name__
    if name in auto.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES.values():
        config = model.config
        if config.num_labels == 1 or config.problem_type == "regression":
            return Task(TaskKind.REGRESSION, labels=(_label_name(config, 0, "score"),))
        labels = tuple(_label_name(config, i, f"LABEL_{i}") for i in range(config.num_labels))
        return Task(TaskKind.CLASSIFICATION, labels=labels)
    if name in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES.values():
        return Task(TaskKind.MASKED_LM)
    if name in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values():
        if label_words:
            if isinstance(label_words, dict):
                names, words = tuple(label_words), tuple(label_words.values())
            else:
                names = words = tuple(label_words)
            return Task(TaskKind.CAUSAL_LM, labels=names, label_words=words, prompt=prompt)
        return Task(TaskKind.CAUSAL_LM, prompt=prompt)
    raise UnsupportedModelError(
        f"{name} has no head-on-top normxlogit can explain; load the model with a "
        "sequence-classification, masked-LM or causal-LM head (for example "
        "AutoModelForSequenceClassification)"
    )


def _label_name(config, index: int, default: str) -> str:
    id2label = getattr(config, "id2label", None) or {}
    return str(id2label.get(index, default))
