"""A causal LM tuned to answer a chat prompt with a label word.

Each example is wrapped in the recipe's chat prompt (rendered with the tokenizer's chat
template, generation prompt included), exactly as :class:`normxlogit.model.inputs.Encoder`
wraps it when the model is explained. The loss is the language model's cross-entropy,
over the whole vocabulary, of the first token of the gold label word at the answer
position (the last prompt token). The score reads the label words' logits there and
takes the larger, as the library's prompted classifier does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..builtin.smollm2 import PROMPTS
from ..common.errors import InvalidInputError
from ..data import Example
from .loop import by_length, class_weights, weighted_cross_entropy
from .recipes import TrainingRecipe

EVAL_BATCH = 32


class PromptedAnswer:
    """Train and score a prompted classifier (``recipe.prompt`` names its prompt)."""

    def __init__(self, model, tokenizer, recipe: TrainingRecipe):
        self.model, self.tokenizer, self.recipe = model, tokenizer, recipe
        self.prompt, words = PROMPTS[recipe.prompt]
        self.words = [words[label] for label in recipe.labels]
        ids = [tokenizer(word, add_special_tokens=False)["input_ids"][0] for word in self.words]
        if len(set(ids)) != len(ids):
            raise InvalidInputError(f"label words {self.words} share a first token")
        self.label_ids = ids
        self.weights: list[float] | None = None

    def balance(self, examples: Sequence[Example]) -> None:
        self.weights = class_weights(examples, len(self.label_ids))

    def rendered(self, example: Example) -> list[int]:
        """The token ids of the example in its prompt; a text too long for
        ``recipe.max_length`` loses its last tokens (of a pair, the longer part's)."""
        from ..model.inputs import truncate_text

        tokenizer, prompt = self.tokenizer, self.prompt
        ids = tokenizer(prompt.render(tokenizer, example.text), add_special_tokens=False)
        excess = len(ids["input_ids"]) - self.recipe.max_length
        if excess > 0:
            text = truncate_text(tokenizer, example.text, excess)
            ids = tokenizer(prompt.render(tokenizer, text), add_special_tokens=False)
        return ids["input_ids"]

    def select(self, examples: Sequence[Example]) -> list[Example]:
        return list(examples)

    def lengths(self, examples: Sequence[Example]) -> list[int]:
        return [len(self.rendered(ex)) for ex in examples]

    def answer_logits(self, batch: Sequence[Example]):
        """Vocabulary logits ``[B, V]`` at each example's answer position."""
        import torch

        rows = [self.rendered(ex) for ex in batch]
        width = max(len(row) for row in rows)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([row + [pad] * (width - len(row)) for row in rows])
        mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
        network = self.model
        if hasattr(network, "get_base_model"):  # peft's wrapper: the LoRA-injected LM
            network = network.get_base_model()
        states = network.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
        last = mask.sum(-1) - 1
        return network.lm_head(states[torch.arange(len(rows)), last])

    def loss(self, batch: Sequence[Example]):
        import torch

        logits = self.answer_logits(batch)  # over the vocabulary: the LM's own loss
        labels = torch.tensor([int(ex.label) for ex in batch])
        targets = torch.tensor(self.label_ids)[labels]
        return weighted_cross_entropy(logits, targets, labels, self.weights)

    def evaluate(self, examples: Sequence[Example]) -> dict[str, Any]:
        """Accuracy of the larger label-word logit, and how often each label is chosen
        (a degenerate model answers one label for everything)."""
        import torch

        self.model.eval()
        lengths = self.lengths(examples)
        predictions = [0] * len(examples)
        label_ids = torch.tensor(self.label_ids)
        with torch.no_grad():
            for picked, batch in by_length(examples, lengths, EVAL_BATCH):
                chosen = self.answer_logits(batch)[:, label_ids].argmax(-1)
                for index, label in zip(picked, chosen.tolist(), strict=True):
                    predictions[index] = label
        correct = sum(p == int(ex.label) for p, ex in zip(predictions, examples, strict=True))
        counts = Counter(predictions)
        return {
            "accuracy": correct / len(examples),
            "predicted": {
                label: counts[i] / len(examples) for i, label in enumerate(self.recipe.labels)
            },
        }
