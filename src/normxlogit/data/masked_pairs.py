"""BLiMP pairs as a masked LM sees them: the target masked, evidence on the tokens.

A pair's good and bad sentences differ in one word; for a masked LM they must differ in
exactly one *token* of its tokenizer, which is masked: ``hasn't``/``haven't`` differ in
``hasn``/``haven`` and share ``' t``, so the first piece is masked; ``waitress``/
``waitresses`` split into a different number of pieces and the pair cannot be asked as one
masked token (:func:`mask_pair` returns ``None``; the NormXLogit paper's RoBERTa setting
has the same limit). Word-level evidence (indices into the sentence split on whitespace)
becomes a binary vector over the tokens the model explains, special tokens included.

No model runs here, and nothing heavy is imported: the tokenizer is passed in.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.outputs import short_value
from ..common.words import word_spans
from .blimp import PAPER_PARADIGMS, BlimpPair, read_blimp
from .files import Example, data_root
from .sources import check_split

#: ``train``: each paradigm's even pairs (0, 2, 4, ... in file order), on which the
#: built-in masked LM was tuned; ``heldout``: the odd ones (the paper's 50/50 split);
#: ``all``: every pair
BLIMP_SPLITS = ("heldout", "train", "all")


@dataclass(frozen=True)
class MaskedPair:
    """A pair asked as a masked token: ``text`` is the good sentence with the token where
    good and bad differ replaced by the mask token; ``target_id``/``foil_id`` are the
    good and bad tokens' ids."""

    pair: BlimpPair
    text: str
    target_id: int
    foil_id: int
    target_token: str
    foil_token: str

    @property
    def evidence_words(self) -> tuple[int, ...]:
        return self.pair.evidence


def mask_pair(pair: BlimpPair, tokenizer: Any) -> MaskedPair | None:
    """The pair with its one differing token masked, or ``None`` where the good and bad
    sentences do not differ in exactly one token of ``tokenizer``, or where either token
    is its unknown token (the word is not in the vocabulary: a target or contrast read as
    ``[UNK]`` would explain every unknown word alike, and explain/serve refuse it)."""
    masked = _masked_or_why_not(pair, tokenizer)
    return masked if isinstance(masked, MaskedPair) else None


def _masked_or_why_not(pair: BlimpPair, tokenizer: Any) -> MaskedPair | str:
    """:func:`mask_pair`'s pair, or why there is none: ``apart`` (not one token apart)
    or ``unknown`` (its differing token is the unknown token)."""
    if tokenizer.mask_token is None:
        raise InvalidInputError(
            f"{type(tokenizer).__name__} has no mask token: BLiMP pairs are asked of a masked LM"
        )
    good = tokenizer(pair.good, add_special_tokens=False, return_offsets_mapping=True)
    bad = tokenizer(pair.bad, add_special_tokens=False)
    if len(good["input_ids"]) != len(bad["input_ids"]):
        return "apart"
    differing = [
        i
        for i, (a, b) in enumerate(zip(good["input_ids"], bad["input_ids"], strict=True))
        if a != b
    ]
    if len(differing) != 1:
        return "apart"
    position = differing[0]
    start, end = good["offset_mapping"][position]
    text = pair.good[:start] + tokenizer.mask_token + pair.good[end:]
    target_id, foil_id = good["input_ids"][position], bad["input_ids"][position]
    if tokenizer.unk_token_id in (target_id, foil_id):
        return "unknown"  # a word the vocabulary lacks: its score would explain every unknown word
    target_token, foil_token = tokenizer.convert_ids_to_tokens([target_id, foil_id])
    return MaskedPair(pair, text, target_id, foil_id, target_token, foil_token)


def mask_pairs(
    pairs: Sequence[BlimpPair], tokenizer: Any
) -> tuple[list[MaskedPair], dict[str, int]]:
    """The pairs that can be asked as one masked token, and per paradigm how many cannot."""
    masked, skipped = [], {}
    for pair in pairs:
        item = mask_pair(pair, tokenizer)
        if item is None:
            skipped[pair.paradigm] = skipped.get(pair.paradigm, 0) + 1
        else:
            masked.append(item)
    return masked, skipped


def token_words(tokenizer: Any, text: str) -> list[int | None]:
    """For each token of ``text`` as the model reads it (special tokens included), the
    index of the whitespace word it comes from (``None`` for special tokens)."""
    encoded = tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    spans = word_spans(text)
    words: list[int | None] = []
    for (start, end), special in zip(
        encoded["offset_mapping"], encoded["special_tokens_mask"], strict=True
    ):
        if special or end <= start:
            words.append(None)
            continue
        words.append(next(i for i, (s, e) in enumerate(spans) if s <= start < e))
    return words


def token_evidence(tokenizer: Any, text: str, evidence_words: Sequence[int]) -> list[int]:
    """The binary evidence vector over ``text``'s tokens: 1 on every piece of an evidence
    word."""
    words = token_words(tokenizer, text)
    count = len(word_spans(text))
    wrong = [w for w in evidence_words if not 0 <= w < count]
    if wrong:
        raise InvalidInputError(
            f"evidence word index {short_value(wrong[0])} is out of range for {text!r}, which "
            f"has {count} words (indices count whitespace-separated words from 0)"
        )
    chosen = set(evidence_words)
    return [int(word is not None and word in chosen) for word in words]


def split_pairs(pairs: Sequence[BlimpPair], split: str) -> list[BlimpPair]:
    """The pairs of ``split`` (see :data:`BLIMP_SPLITS`), numbered within each paradigm in
    file order."""
    check_split("blimp", split, BLIMP_SPLITS)
    if split == "all":
        return list(pairs)
    seen: dict[str, int] = {}
    chosen = []
    for pair in pairs:
        index = seen.get(pair.paradigm, 0)
        seen[pair.paradigm] = index + 1
        if (index % 2 == 0) == (split == "train"):
            chosen.append(pair)
    return chosen


def interleaved(pairs: Sequence[BlimpPair]) -> list[BlimpPair]:
    """The pairs with their paradigms taking turns, each paradigm's in file order."""
    by_paradigm: dict[str, list[BlimpPair]] = {}
    for pair in pairs:
        by_paradigm.setdefault(pair.paradigm, []).append(pair)
    longest = max((len(group) for group in by_paradigm.values()), default=0)
    return [
        group[index]
        for index in range(longest)
        for group in by_paradigm.values()
        if index < len(group)
    ]


def blimp_split(split: str) -> list[BlimpPair]:
    """The NormXLogit paper's five paradigms from the shared data, one split of each."""
    return split_pairs(read_blimp(data_root() / "blimp", paradigms=PAPER_PARADIGMS), split)


def read_blimp_masked(
    split: str = "heldout",
    *,
    tokenizer: Any,
    path: str | None = None,
    paradigms: Sequence[str] | None = None,
    limit: int | None = None,
    pipeline: str | None = None,
) -> list[Example]:
    """BLiMP pairs as a masked LM's inputs, for evidence alignment.

    Each example's text is the good sentence with the target token masked (for
    ``tokenizer``, the masked LM's), its label the target token, its foil the bad one, and its
    evidence the evidence words (whitespace words of the text). Pairs that are not one
    token apart for the tokenizer are left out, so the instances depend on the model
    (the bench puts the model in the data set's key). The paradigms take turns (the first
    pair of each, then the second...), so that the first N examples cover them all;
    ``limit`` counts the pairs kept.
    ``paradigms`` defaults to the paper's five in the shared data, and to every known
    paradigm file in a folder given as ``path``.
    """
    folder = path or data_root() / "blimp"
    if paradigms is None and path is None:
        paradigms = PAPER_PARADIGMS
    pairs = split_pairs(read_blimp(folder, paradigms=paradigms, pipeline=pipeline), split)
    examples, left_out = [], {"apart": 0, "unknown": 0}
    for pair in interleaved(pairs):
        item = _masked_or_why_not(pair, tokenizer)
        if isinstance(item, str):
            left_out[item] += 1
            continue
        examples.append(
            Example(
                item.text,
                item.target_token,
                row=pair.pair_id,
                evidence=pair.evidence,
                foil=item.foil_token,
            )
        )
        if limit is not None and len(examples) >= limit:
            break
    if not examples:
        _refuse_none_kept(left_out, folder, split)
    _warn_left_out(left_out, len(examples))
    return examples


def _left_out_reasons(left_out: dict[str, int]) -> str:
    """How many pairs were left out for each reason, in words."""
    reasons = [
        f"{left_out['apart']} not one token apart for this tokenizer" if left_out["apart"] else "",
        f"{left_out['unknown']} whose word the vocabulary lacks (read as its unknown token)"
        if left_out["unknown"]
        else "",
    ]
    return "; ".join(filter(None, reasons))


def _warn_left_out(left_out: dict[str, int], kept: int) -> None:
    """Say how many pairs read were left out and why, so a count below the paradigms'
    sizes is not a mystery (the instances depend on the tokenizer)."""
    total = sum(left_out.values())
    if not total:
        return
    warnings.warn(
        f"{total} BLiMP pairs left out ({_left_out_reasons(left_out)}); {kept} kept",
        NormXLogitWarning,
        stacklevel=3,
    )


def _refuse_none_kept(left_out: dict[str, int], source: Any, split: str) -> None:
    """Refuse a source none of whose pairs can be asked of this masked LM: an empty set of
    instances would read as done with nothing to show, and no run would ever fill it."""
    total = sum(left_out.values())
    if not total:
        raise InvalidInputError(
            f"BLiMP data {source} holds no pair in split {split!r} (heldout takes each "
            "paradigm's odd pairs, train its even ones); give more pairs, or split 'all'"
        )
    raise InvalidInputError(
        f"none of the {total} BLiMP pairs of {source} (split {split!r}) can be asked of this "
        f"masked LM: every one is left out ({_left_out_reasons(left_out)}); use a masked LM "
        "whose tokenizer reads each pair's differing word as one token of its vocabulary, "
        "or pairs whose differing words it reads so"
    )
