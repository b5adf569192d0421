"""Which outputs an explanation is about: the predicted label, named labels, or tokens.

``target`` follows one convention across tasks:

- ``None``: the prediction (predicted label, or the predicted token for language models);
- a label name or index (classifiers and prompted LMs); ``"all"`` for every label;
- a token string or vocabulary id (masked and causal LMs);
- a list of any of these, giving one score column each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from .adapter import ExplainableModel, ForwardResult
from .errors import InvalidInputError
from .tasks import TaskKind

TargetSpec = None | int | str | Sequence[int | str]
ALL = "all"


@dataclass
class Targets:
    """Per-row output columns ``[B, K]`` and their names; ``single`` means one target."""

    columns: Tensor
    names: list[list[str]]
    single: bool


def resolve_targets(model: ExplainableModel, forward: ForwardResult, target: TargetSpec) -> Targets:
    """Turn a user's ``target`` into output columns for each row of the batch."""
    rows = len(forward.batch)
    predicted = forward.logits.argmax(-1)
    task = model.task
    if task.kind is TaskKind.REGRESSION:
        if target not in (None, 0, ALL) and target not in task.labels:
            raise InvalidInputError(
                f"a regression model has one output ({task.labels[0]!r}); leave target unset"
            )
        return Targets(torch.zeros(rows, 1, dtype=torch.long), [[task.labels[0]]] * rows, True)
    if target is None:
        return Targets(predicted.unsqueeze(-1), [[_name(model, int(i))] for i in predicted], True)
    if isinstance(target, str) and target == ALL:
        if not task.has_label_set:
            raise InvalidInputError(
                "target='all' needs a label set; a language model's vocabulary is too large. "
                "Pass the tokens you want as a list"
            )
        columns = torch.arange(len(task.labels)).expand(rows, -1)
        return Targets(columns, [list(task.labels)] * rows, False)
    single = isinstance(target, (str, int))
    items = [target] if single else list(target)
    if not items:
        raise InvalidInputError("an empty target list; give at least one label or token")
    ids = [_column(model, item) for item in items]
    columns = torch.tensor(ids).expand(rows, -1)
    return Targets(columns, [[_name(model, i) for i in ids]] * rows, single)


def _name(model: ExplainableModel, column: int) -> str:
    if model.task.has_label_set:
        return model.task.labels[column]
    return model.tokenizer.convert_ids_to_tokens(column)


def _column(model: ExplainableModel, item: int | str) -> int:
    task = model.task
    if task.has_label_set:
        return _label_column(task.labels, task.label_words, item)
    return _token_column(model.tokenizer, item)


def _label_column(labels: Sequence[str], words: Sequence[str], item: int | str) -> int:
    if isinstance(item, bool) or not isinstance(item, (int, str)):
        raise InvalidInputError(f"target {item!r} is neither a label name nor an index")
    if isinstance(item, int):
        if 0 <= item < len(labels):
            return item
        raise InvalidInputError(
            f"label index {item} does not exist; this model has {len(labels)} labels: "
            f"{', '.join(f'{i}={name}' for i, name in enumerate(labels))}"
        )
    lowered = [name.lower() for name in labels]
    for candidates in (lowered, [word.strip().lower() for word in words]):
        if item.strip().lower() in candidates:
            return candidates.index(item.strip().lower())
    if item.isdigit():
        return _label_column(labels, words, int(item))
    raise InvalidInputError(f"unknown label {item!r}; this model's labels are: {', '.join(labels)}")


def _token_column(tokenizer, item: int | str) -> int:
    size = len(tokenizer)
    if isinstance(item, int):
        if 0 <= item < size:
            return item
        raise InvalidInputError(f"token id {item} is outside the vocabulary (0..{size - 1})")
    vocab_id = tokenizer.convert_tokens_to_ids(item)
    if isinstance(vocab_id, int) and vocab_id != tokenizer.unk_token_id:
        return vocab_id
    pieces = tokenizer(item, add_special_tokens=False)["input_ids"]
    if len(pieces) == 1:
        return pieces[0]
    shown = tokenizer.convert_ids_to_tokens(pieces)
    raise InvalidInputError(
        f"target {item!r} is {len(pieces)} tokens ({', '.join(shown)}); a language-model "
        "target must be a single token: pass one of them or its id"
    )
