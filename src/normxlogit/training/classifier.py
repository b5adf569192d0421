"""Sequence classification and regression: a fresh head on an encoder or a decoder.

The encoder's head reads [CLS] (through its pooler); the decoder's ``score`` head reads
the last non-padding token, as transformers' ``LlamaForSequenceClassification`` does.
Texts and pairs are tokenised exactly as :class:`normxlogit.model.inputs.Encoder` tokenises
them when the model is explained.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data import Example
from .loop import by_length, class_weights, weighted_cross_entropy
from .recipes import TrainingRecipe

EVAL_BATCH = 64


def encode(tokenizer, batch: Sequence[Example], max_length: int) -> dict[str, Any]:
    """Tokenised, right-padded tensors of texts or text pairs."""
    options = {"padding": True, "truncation": True, "max_length": max_length}
    if isinstance(batch[0].text, tuple):
        first, second = zip(*(ex.text for ex in batch), strict=True)
        return tokenizer(list(first), list(second), return_tensors="pt", **options)
    return tokenizer([ex.text for ex in batch], return_tensors="pt", **options)


class SequenceClassification:
    """Cross-entropy over the labels, or mean squared error for regression."""

    def __init__(self, model, tokenizer, recipe: TrainingRecipe):
        self.model, self.tokenizer, self.recipe = model, tokenizer, recipe
        self.weights: list[float] | None = None

    def balance(self, examples: Sequence[Example]) -> None:
        if self.recipe.num_labels > 1:  # regression has no labels to balance
            self.weights = class_weights(examples, self.recipe.num_labels)

    def select(self, examples: Sequence[Example]) -> list[Example]:
        return list(examples)

    def lengths(self, examples: Sequence[Example]) -> list[int]:
        pairs = [ex.text if isinstance(ex.text, tuple) else (ex.text,) for ex in examples]
        return [len(self.tokenizer(*pair)["input_ids"]) for pair in pairs]

    def loss(self, batch: Sequence[Example]):
        import torch

        dtype = torch.float if self.recipe.num_labels == 1 else torch.long
        labels = torch.tensor([ex.label for ex in batch], dtype=dtype)
        encoded = encode(self.tokenizer, batch, self.recipe.max_length)
        if self.weights is None:
            return self.model(**encoded, labels=labels).loss
        logits = self.model(**encoded).logits
        return weighted_cross_entropy(logits, labels, labels, self.weights)

    def logits(self, examples: Sequence[Example]):
        """The model's outputs ``[N, C]`` for ``examples``, in their order."""
        import torch

        self.model.eval()
        lengths = self.lengths(examples)
        rows: list[Any] = [None] * len(examples)
        with torch.no_grad():
            for picked, batch in by_length(examples, lengths, EVAL_BATCH):
                logits = self.model(**encode(self.tokenizer, batch, self.recipe.max_length)).logits
                for index, row in zip(picked, logits, strict=True):
                    rows[index] = row
        return torch.stack(rows)

    def evaluate(self, examples: Sequence[Example]) -> dict[str, Any]:
        """Accuracy (classification) or Pearson correlation (regression)."""
        logits = self.logits(examples)
        gold = np.array([ex.label for ex in examples])
        if self.recipe.num_labels == 1:
            return {"pearson": float(np.corrcoef(logits.squeeze(-1).numpy(), gold)[0, 1])}
        return {"accuracy": float((logits.argmax(-1).numpy() == gold).mean())}


def evaluate_dev(model, tokenizer, examples: Sequence[Example], recipe: TrainingRecipe) -> dict:
    """Accuracy (classification) or Pearson correlation (regression) on a dev split."""
    return SequenceClassification(model, tokenizer, recipe).evaluate(examples)
