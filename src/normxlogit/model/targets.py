"""Which outputs an explanation is about: the predicted label, named labels, or tokens.

``target`` follows one convention across tasks, and each value means one thing:

- ``None``: the prediction (predicted label, or the predicted token for language models);
- a ``str`` is always a name: a label name (classifiers, prompted LMs; case-insensitive,
  label words too) or a token string (masked and causal LMs). ``"4"`` is the token or
  label named "4", never index 4;
- an ``int`` (numpy integers too) is always a position: a label index for classifiers and
  prompted LMs, a vocabulary id for masked and causal LMs (the command line's
  ``--label-id``);
- ``"all"`` for every label (models with a label set);
- a list or tuple of names and positions, giving one score column each.

Anything else (a float, a bool, a dict, an empty list) is refused with an
:class:`~normxlogit.common.errors.InvalidInputError` saying what to pass instead.

The spelling of a target (and its checks, which need no model) is in
:mod:`normxlogit.common.targets`; this module resolves it against a model's outputs.
"""

from __future__ import annotations

import math
import numbers
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from ..common.counts import integer_text
from ..common.errors import InvalidInputError, refuse_surrogate
from ..common.outputs import short_value, type_phrase
from ..common.targets import (
    ALL,
    TargetSpec,
    as_target,
    check_contrast,
    check_target,
    index_advice,
    token_id_advice,
)
from ..common.tokens import (
    byte_token_spelling,
    named_id,
    splits_a_character,
    token_names,
    typed_view_text,
)
from .adapter import ExplainableModel, ForwardResult
from .tasks import TaskKind


@dataclass
class Targets:
    """Per-row output columns ``[B, K]`` and their names; ``single`` means one target.

    With ``contrast`` (``[B, K]`` columns and their names), target column ``k`` is
    explained against contrast column ``k``: the attributed quantity is the difference of
    the two outputs ("why A rather than B"). Methods read it through :meth:`pick` and
    :meth:`pick_all`, so they need not know whether an explanation is contrastive.
    """

    columns: Tensor
    names: list[list[str]]
    single: bool
    contrast: Tensor | None = None
    contrast_names: list[list[str]] | None = None
    #: ``[B]`` rows one of whose targets is its own contrast (the prediction is the
    #: contrast, say): nothing to explain there (None: no contrast)
    same: Tensor | None = None

    @property
    def contrastive(self) -> bool:
        return self.contrast is not None

    def row(self, index: int) -> Targets:
        """The targets of batch row ``index`` alone (a batch of one)."""
        pick = slice(index, index + 1)
        return Targets(
            self.columns[pick],
            self.names[pick],
            self.single,
            None if self.contrast is None else self.contrast[pick],
            None if self.contrast_names is None else self.contrast_names[pick],
            None if self.same is None else self.same[pick],
        )

    def pick(self, outputs: Tensor, k: int, rows: Tensor | None = None) -> Tensor:
        """Target ``k``'s output ``[N]`` from ``outputs`` ``[N, C]`` (minus its contrast's);
        ``rows`` ``[N]``: the batch row of each output row (default: one each)."""
        column = self.columns[:, k] if rows is None else self.columns[rows, k]
        picked = outputs.gather(1, column.to(outputs.device).unsqueeze(1)).squeeze(1)
        if self.contrast is None:
            return picked
        other = self.contrast[:, k] if rows is None else self.contrast[rows, k]
        return picked - outputs.gather(1, other.to(outputs.device).unsqueeze(1)).squeeze(1)

    def pick_all(self, values: Tensor) -> Tensor:
        """Every target's column ``[B, ..., K]`` of per-output values ``[B, ..., C]`` (a
        decomposition's shares), minus the contrast's."""

        def gathered(columns: Tensor) -> Tensor:
            shape = (columns.shape[0],) + (1,) * (values.dim() - 2) + (columns.shape[1],)
            index = columns.to(values.device).view(shape).expand(*values.shape[:-1], -1)
            return values.gather(-1, index)

        picked = gathered(self.columns)
        return picked if self.contrast is None else picked - gathered(self.contrast)


def resolve_targets(
    model: ExplainableModel,
    forward: ForwardResult,
    target: TargetSpec,
    contrast: TargetSpec = None,
) -> Targets:
    """Turn a user's ``target`` (and ``contrast``) into output columns for each row."""
    target = _every_label_alone(model, check_target(target))
    resolved = _resolve(model, forward, target)
    if contrast is None:
        return resolved
    return with_contrast(model, resolved, contrast, every_label=target == ALL)


def _every_label_alone(model: ExplainableModel, target: TargetSpec) -> TargetSpec:
    """A label set's target list holding the keyword ``"all"`` (no label is named so:
    refused at load): ``["all"]`` is ``"all"``; beside other labels it is refused as the
    keyword out of place, not as an unknown label."""
    task = model.task
    if not task.has_label_set or target is None or isinstance(target, (str, int)):
        return target
    if ALL not in target:  # no label is named "all" (refused at load)
        return target
    if len(target) == 1:
        return ALL
    raise InvalidInputError(
        "'all' (every label) stands alone, not in a list of targets: pass it alone, or "
        f"list the labels you want from: {', '.join(task.labels)}"
    )


def with_contrast(
    model: ExplainableModel, targets: Targets, contrast: TargetSpec, every_label: bool = False
) -> Targets:
    """``targets`` explained against ``contrast``: one name or id for every target column,
    or a list of one per column.

    A target column whose contrast is itself explains nothing (the difference of an
    output with itself is zero at every token). With ``every_label`` (``target="all"``)
    such a column is left out: every *other* label against the contrast. Otherwise the
    rows where it happens are marked in :attr:`Targets.same` (the caller refuses or
    flags them)."""
    contrast = check_contrast(contrast)
    if model.task.kind is TaskKind.REGRESSION:
        raise InvalidInputError(
            "a regression model has one output, so there is nothing to contrast it with; "
            "leave contrast unset (contrast_input= compares its output under two inputs)"
        )
    items = [contrast] if isinstance(contrast, (str, int)) else list(contrast)
    width = targets.columns.shape[1]
    if len(items) == 1:
        items = items * width
    elif len(items) != width:
        what = "label" if every_label else "target"
        described = " (the prediction)" if targets.single and width == 1 else ""
        raise InvalidInputError(
            f"{len(items)} contrasts for {width} {what}{'' if width == 1 else 's'}{described}; "
            f"give one contrast for every {what}, or one per {what}"
        )
    ids = torch.tensor([_column(model, item, "contrast") for item in items])
    ids = ids.to(targets.columns.device)
    rows = targets.columns.shape[0]
    contrast_ids = ids.expand(rows, -1)
    same = targets.columns == contrast_ids  # [B, K]
    if every_label:
        kept = ~same[0]  # every row holds every label, in the same order
        if not kept.any():
            against = ", ".join(dict.fromkeys(repr(_name(model, int(i))) for i in ids))
            raise InvalidInputError(
                f"target='all' against {against} leaves no label to explain: a label "
                "contrasted with itself explains nothing; name the labels to explain"
            )
        picked = kept.nonzero().squeeze(-1).tolist()
        targets = replace(
            targets,
            columns=targets.columns[:, picked],
            names=[[row[k] for k in picked] for row in targets.names],
        )
        contrast_ids, ids = contrast_ids[:, picked], ids[picked]
        same = same[:, picked]
    names = [_name(model, int(i)) for i in ids]
    return replace(
        targets,
        contrast=contrast_ids,
        contrast_names=[names] * rows,
        same=same.any(-1),
    )


def _resolve(model: ExplainableModel, forward: ForwardResult, target: TargetSpec) -> Targets:
    target = check_target(target)
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
    ids = [_column(model, item, keyword=len(items) == 1) for item in items]  # 'all', ['all']
    _refuse_repeated_targets(model, items, ids)
    columns = torch.tensor(ids).expand(rows, -1)
    return Targets(columns, [[_name(model, i) for i in ids]] * rows, single)


def _refuse_repeated_targets(model: ExplainableModel, items: list, ids: list[int]) -> None:
    """A target list naming one output twice (``[0, "negative"]``) would give two identical
    score columns, each read as its own target: refused, naming both spellings."""
    for position, column in enumerate(ids):
        first = ids.index(column)
        if first != position:
            raise InvalidInputError(
                f"target lists {_name(model, column)!r} twice ({items[first]!r} and "
                f"{items[position]!r} name the same output); give each target once"
            )


def gold_problem(model: ExplainableModel, label: object) -> str | None:
    """Why ``label`` (a data file's gold value) cannot be this model's target; None when
    it can. A classifier reads label names or indices, a regressor numbers."""
    if model.task.kind is TaskKind.REGRESSION:
        if isinstance(label, bool) or not isinstance(label, numbers.Real):
            return f"gold value {label!r} is not a number; a regressor is scored against numbers"
        try:
            finite = math.isfinite(label)
        except OverflowError:  # 10**400: beyond a float64
            finite = False
        if not finite:  # NaN or inf: every correlation, so every cell, n/a
            return (
                f"gold value {short_value(label)} is not finite; a regressor is scored "
                "against finite numbers: give it a value or leave the row out"
            )
        return None
    if isinstance(label, (bool, float)):
        names = ", ".join(model.task.labels) if model.task.has_label_set else "token strings"
        return (
            f"gold label {label!r} is {type_phrase(label)}; this model's labels are "
            f"names ({names}) or integer indices"
        )
    try:
        _column(model, label)  # type: ignore[arg-type]
    except InvalidInputError as error:
        return str(error)
    return None


def class_like(values: Sequence[object]) -> bool:
    """Whether gold values look like class labels (two or three whole numbers), not the
    scores of a regressor: sentiment 0/1 given to an STS-B model, say."""
    numbers_only = [v for v in values if isinstance(v, numbers.Real) and not isinstance(v, bool)]
    if len(numbers_only) != len(values) or len(values) < 2:
        return False
    return {float(v) for v in numbers_only} <= {0.0, 1.0, 2.0}


def output_column(model: ExplainableModel, item: int | str, role: str = "target") -> int:
    """The output column (label index or vocabulary id) a target name or index means;
    ``role`` (``target``, ``contrast``) names it in a refusal; a target is one given alone,
    where the keyword ``'all'`` is accepted too."""
    return _column(model, item, role, keyword=role == "target")


def recorded_column(model: ExplainableModel, name: int | str) -> int:
    """The output column of a name an explanation recorded (its ``targets``, ``contrasts``):
    those are vocabulary spellings (:func:`_name`), so the entry of that spelling is taken
    as written, a byte-level ``é`` (the byte 0xE9) too."""
    return _column(model, name, recorded=True)


def recorded_target(model: ExplainableModel, names: Sequence[str]) -> TargetSpec:
    """An explanation's recorded target (or contrast) names as a target that explains them
    again (:func:`as_target`): a byte-level entry that is part of a character (``é``, the
    byte 0xE9) goes by its id, since a typed ``é`` means the character."""
    return recorded_spec(model, as_target(names))


def recorded_spec(model: ExplainableModel, spec: TargetSpec) -> TargetSpec:
    """:func:`recorded_target` of names already made a target (:func:`as_target`)."""
    if spec is None or model.task.has_label_set:
        return spec
    items = [_recorded_item(model, name) for name in ([spec] if isinstance(spec, str) else spec)]
    return items[0] if isinstance(spec, str) else tuple(items)


def _recorded_item(model: ExplainableModel, name: int | str) -> int | str:
    if isinstance(name, str) and _read_as_text(model.tokenizer, name):
        return recorded_column(model, name)
    return name


def _name(model: ExplainableModel, column: int) -> str:
    if model.task.has_label_set:
        return model.task.labels[column]
    return token_names(model.tokenizer, [column])[0]


def _column(
    model: ExplainableModel,
    item: int | str,
    role: str = "target",
    recorded: bool = False,
    keyword: bool = False,
) -> int:
    """The output column ``item`` names; ``role`` (``target``, ``contrast``) in messages;
    ``recorded``: a vocabulary spelling an explanation wrote, not a text typed;
    ``keyword``: ``item`` stands where ``'all'`` is accepted (a target given alone), so a
    miscased ``'ALL'`` is pointed to it."""
    task = model.task
    if task.has_label_set:
        return _label_column(task.labels, task.label_words, item, role, keyword)
    if isinstance(item, str) and (padded := _padded_id(model, item)) is not None:
        return padded
    return _token_column(model.tokenizer, item, role, recorded)


def _padded_id(model: ExplainableModel, name: str) -> int | None:
    """The id named ``<id 50260>`` (how an explanation names an output row the tokenizer
    has no entry for: a padded vocabulary's) where the model has that row, else None."""
    index = named_id(name)
    rows = getattr(model.model.config, "vocab_size", None)
    if index is None or not isinstance(rows, int):
        return None
    outputs = max(rows, len(model.tokenizer))
    if index >= outputs:
        raise InvalidInputError(
            f"{name!r} names output row {index}, past the model's {outputs} rows; name a "
            "token the output shows, or a word the vocabulary has"
        )
    return index if len(model.tokenizer) <= index < rows else None


def _matched(name: str) -> str:
    """``name`` as a target is compared with a label: without blanks at its edges, in
    lower case, accents composed (NFC), so 'cafe\u0301' names the label 'café'."""
    return unicodedata.normalize("NFC", name.strip()).lower()


def _label_column(
    labels: Sequence[str],
    words: Sequence[str],
    item: int | str,
    role: str = "target",
    keyword: bool = False,
) -> int:
    if isinstance(item, bool) or not isinstance(item, (int, str)):
        raise InvalidInputError(f"{role} {short_value(item)} is neither a label name nor an index")
    if isinstance(item, int):
        if 0 <= item < len(labels):
            return item
        raise InvalidInputError(
            f"label index {short_value(item)} does not exist; this model has {len(labels)} labels: "
            f"{', '.join(f'{i}={name}' for i, name in enumerate(labels))}"
        )
    # case, blanks and how an accent is written (composed é, or e and U+0301) ignored
    lowered = [_matched(name) for name in labels]
    for candidates in (lowered, [_matched(word) for word in words]):
        if _matched(item) in candidates:
            return candidates.index(_matched(item))
    hint = ""
    if item.strip().lower() == ALL:  # no label is so named (refused at load): the keyword
        hint = (
            f"; did you mean {ALL!r} (every label, in lower case)?"
            if keyword and item != ALL
            else f"; {ALL!r} means every label only as a target given alone: name one label here"
        )
    elif (index := integer_text(item)) is not None:  # a name, never an index: say how to pass one
        hint = (
            f"; label index {index} is {labels[index]!r}: give that name "
            f"{index_advice(index, role)}"
            if 0 <= index < len(labels)
            else f"; a digit string is a name, and no label has index {short_value(index)} either"
        )
    raise InvalidInputError(
        f"unknown label {short_value(item)}; this model's labels are: {', '.join(labels)}{hint}"
    )


def _vocab_id(tokenizer, item: str, recorded: bool = False) -> int | None:
    """The vocabulary entry spelled ``item`` (``Ġgood``, ``<0xE9>`` for a byte-level byte),
    unless a typed text means other tokens: on a byte-level vocabulary the entry ``é`` is
    the byte 0xE9, and the text é its two UTF-8 bytes (None: read ``item`` as text)."""
    spelled = byte_token_spelling(tokenizer, item) or item
    vocab_id = tokenizer.convert_tokens_to_ids(spelled)
    if not isinstance(vocab_id, int) or vocab_id == tokenizer.unk_token_id:
        return None
    if recorded or spelled != item or not _read_as_text(tokenizer, item):
        return vocab_id
    return None


def _viewed_token(tokenizer, item: str) -> int | None:
    """The token a view's drawing names (``↵`` the newline token, ``<U+0019>`` a control
    byte's, as the page and the terminal show outputs), where its text is one token;
    None where ``item`` draws nothing or its text is several tokens (read as typed)."""
    text = typed_view_text(item)
    if text is None:
        return None
    pieces = tokenizer(text, add_special_tokens=False)["input_ids"]
    return pieces[0] if len(pieces) == 1 else None


def _read_as_text(tokenizer, item: str) -> bool:
    """Whether a typed ``item`` means its text, not the vocabulary entry of its spelling: a
    single Latin-1 letter (``é``) is both a character and the byte-level spelling of one
    byte (0xE9), and typed it is the character. A longer spelling of bytes that are no
    text (``å¤``, the start of 大) can only be the entry's, and is taken as given."""
    return len(item) == 1 and splits_a_character(tokenizer, item)


def _token_column(tokenizer, item: int | str, role: str = "target", recorded: bool = False) -> int:
    size = len(tokenizer)
    if isinstance(item, int):
        if 0 <= item < size:
            return item
        raise InvalidInputError(f"token id {item} is outside the vocabulary (0..{size - 1})")
    refuse_surrogate(item, f"{role} {item!r}")
    if (vocab_id := _vocab_id(tokenizer, item, recorded)) is not None:
        return vocab_id
    if (viewed := _viewed_token(tokenizer, item)) is not None:
        return viewed
    pieces = tokenizer(item, add_special_tokens=False)["input_ids"]
    unknown = tokenizer.unk_token_id
    if len(pieces) > 1:  # several tokens first: replacing the unknown one alone is no fix
        shown = tokenizer.convert_ids_to_tokens(pieces)
        known = unknown is None or any(piece != unknown for piece in pieces)
        unread = (
            f"; {tokenizer.unk_token} stands for a word the vocabulary lacks"
            if unknown is not None and unknown in pieces
            else ""
        )
        if any(splits_a_character(tokenizer, piece) for piece in shown):
            unread = (
                "; this byte-level vocabulary spells bytes, and a character it has no "
                "token for is its UTF-8 bytes"
            )
            known = False
        which = (
            "one of them" if not unread else "a known one" if known else "a word the vocabulary has"
        )
        advice = token_id_advice(role) if known else token_id_advice(role, "a token id")
        raise InvalidInputError(
            f"{role} {item!r} is {len(pieces)} tokens ({', '.join(shown)}{unread}); a "
            f"language-model {role} must be a single token: pass {which} {advice}"
        )
    if unknown is not None and unknown in pieces and item.strip() != tokenizer.unk_token:
        raise InvalidInputError(
            f"{role} {item!r} is not in this tokenizer's vocabulary: it reads as "
            f"{tokenizer.unk_token}, and a score for {tokenizer.unk_token} explains every "
            f"unknown word alike; pass a word the vocabulary has "
            f"{token_id_advice(role, 'a token id')}"
        )
    if len(pieces) == 1:
        return pieces[0]
    raise InvalidInputError(
        f"{role} {item!r} reads as no token; pass a word the vocabulary has "
        f"{token_id_advice(role, 'a token id')}"
    )
