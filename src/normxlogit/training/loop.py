"""The training loop every recipe shares: seeded batches, AdamW, a linear schedule.

What a recipe trains is an :class:`Objective`: it encodes a batch of examples, returns
its loss, and scores the model on an evaluation split. The loop knows nothing else.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from ..data import Example
from .recipes import TrainingRecipe

#: batches are grouped by length within pools of this many batches (then shuffled)
POOL_BATCHES = 50


class Objective(Protocol):
    """What one kind of recipe trains (sequence classification, prompted answers)."""

    def select(self, examples: Sequence[Example]) -> list[Example]:
        """The examples this objective can train on (all of them, for most)."""
        ...

    def lengths(self, examples: Sequence[Example]) -> list[int]:
        """Tokens per example, for batches of similar length."""
        ...

    def loss(self, batch: Sequence[Example]) -> Any:
        """The loss of ``batch`` (a scalar tensor, with gradients)."""
        ...

    def evaluate(self, examples: Sequence[Example]) -> dict[str, Any]:
        """The score on an evaluation split (accuracy, Pearson correlation...)."""
        ...

    def balance(self, examples: Sequence[Example]) -> None:
        """Weigh the loss so that every label of ``examples`` counts the same."""
        ...


def class_weights(examples: Sequence[Example], num_labels: int) -> list[float]:
    """Per label, the inverse of its share of ``examples`` (1 where all labels are equally
    common), so that every label weighs the same in the loss in all."""
    counts = np.bincount([int(ex.label) for ex in examples], minlength=num_labels)
    return [len(examples) / (num_labels * count) if count else 0.0 for count in counts]


def weighted_cross_entropy(logits, targets, labels, weights: Sequence[float] | None):
    """Cross-entropy of ``logits`` ``[B, C]`` against ``targets`` (class indices), each
    example weighed by the weight of its label (``labels``, label indices); the plain mean
    without weights."""
    import torch

    losses = torch.nn.functional.cross_entropy(logits.float(), targets, reduction="none")
    if weights is None:
        return losses.mean()
    weight = torch.tensor(weights, dtype=losses.dtype)[labels]
    return (losses * weight).sum() / weight.sum()


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def batches(
    examples: Sequence[Example],
    size: int,
    rng: random.Random | None,
    lengths: Sequence[int] | None = None,
) -> Iterator[list[Example]]:
    """``examples`` in batches of ``size``: shuffled with ``rng`` (in order without one).

    With ``lengths``, each pool of ``POOL_BATCHES`` shuffled batches is sorted by length
    before it is cut, and the batches are shuffled again: every batch holds texts of
    similar length, so little of the time goes to padding.
    """
    order = list(range(len(examples)))
    if rng is not None:
        rng.shuffle(order)
    if lengths is None:
        groups = [order[start : start + size] for start in range(0, len(order), size)]
    else:
        groups = []
        pool = size * POOL_BATCHES
        for start in range(0, len(order), pool):
            chunk = sorted(order[start : start + pool], key=lambda i: -lengths[i])
            groups.extend(chunk[i : i + size] for i in range(0, len(chunk), size))
        if rng is not None:
            rng.shuffle(groups)
    for group in groups:
        yield [examples[i] for i in group]


def by_length(examples: Sequence[Example], lengths: Sequence[int], size: int):
    """(indices, batch) in order of length, for evaluation: little padding, and the
    predictions go back to the examples' order through the indices."""
    order = sorted(range(len(examples)), key=lambda i: -lengths[i])
    for start in range(0, len(order), size):
        picked = order[start : start + size]
        yield picked, [examples[i] for i in picked]


def optimise(
    model,
    objective: Objective,
    train_set: Sequence[Example],
    recipe: TrainingRecipe,
    rng: random.Random,
    log: Callable[[str], None],
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Train ``model``'s trainable weights on ``train_set``; the number of steps taken.

    LoRA weights take ``recipe.learning_rate`` and the head (peft's saved modules)
    ``recipe.head_learning_rate``; gradients are clipped to norm 1.
    """
    import torch
    from transformers import get_linear_schedule_with_warmup

    head_params = [p for n, p in model.named_parameters() if p.requires_grad and "lora_" not in n]
    lora_params = [p for n, p in model.named_parameters() if p.requires_grad and "lora_" in n]
    groups = [{"params": lora_params, "lr": recipe.learning_rate}]
    if head_params:
        groups.append({"params": head_params, "lr": recipe.head_learning_rate})
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)
    steps_per_epoch = math.ceil(len(train_set) / recipe.batch_size)
    total = max(1, int(steps_per_epoch * recipe.epochs))
    schedule = get_linear_schedule_with_warmup(optimizer, int(total * recipe.warmup_ratio), total)
    lengths = objective.lengths(train_set) if recipe.group_by_length else None
    every = max(1, min(100, total // 20))
    log(f"{total} steps of {recipe.batch_size}")

    start, step = time.time(), 0
    while step < total:
        model.train()
        for batch in batches(train_set, recipe.batch_size, rng, lengths):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=recipe.bf16):
                loss = objective.loss(batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            if progress is not None:
                progress(step, total)
            if step % every == 0:
                log(f"step {step}/{total} loss {loss.item():.4f} ({time.time() - start:.0f}s)")
            if step >= total:
                break
    model.eval()
    return total
