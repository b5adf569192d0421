"""Segment scores carried by an explanation: which segment each token belongs to, and one
score per segment (a token method's scores reduced over the segment's tokens, or a
segment method's own).

Shapes follow the token scores with the token axis replaced by segments: ``[S]``,
``[S, K]``, ``[L, S]``, ``[L, S, K]`` for a text, with a leading step axis for a
generation's steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..common.errors import InvalidInputError
from ..common.outputs import checked_choice
from .base import score_array

#: how token scores become a segment's score (``native``: a segment method's own scores)
SEGMENT_REDUCTIONS = ("sum", "mean", "max", "absmax")
NATIVE = "native"


@dataclass
class SegmentScores:
    """Segments of an explained text and their scores."""

    #: each segment's text
    texts: list[str]
    #: for each token of the explanation, its segment (None: the prompt, special tokens,
    #: separators, generated tokens)
    token_segments: list[int | None]
    #: the token scores' shape with the token axis (``axis``) over segments instead
    scores: np.ndarray
    #: ``sum``, ``mean``, ``max``, ``absmax`` of the token scores, or ``native``
    how: str

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.float32)

    @classmethod
    def reduced(
        cls,
        texts: Sequence[str],
        token_segments: Sequence[int | None],
        scores: np.ndarray,
        axis: int,
        how: str = "sum",
    ) -> SegmentScores:
        """Token ``scores`` (tokens along ``axis``) reduced over each segment's tokens; a
        segment with no token the model read (truncated away) scores NaN."""
        how = checked_choice(how, "segment_reduce", SEGMENT_REDUCTIONS)
        moved = np.moveaxis(np.asarray(scores, dtype=np.float32), axis, -1)
        out = np.full((*moved.shape[:-1], len(texts)), np.nan, dtype=np.float32)
        members = np.asarray([-1 if s is None else s for s in token_segments])
        for index in range(len(texts)):
            block = moved[..., members == index]
            if block.shape[-1]:
                out[..., index] = _reduce(block, how)
        return cls(list(texts), list(token_segments), np.moveaxis(out, -1, axis), how)

    def to_dict(self) -> dict[str, Any]:
        return {
            "texts": self.texts,
            "token_segments": self.token_segments,
            "scores": self.scores.tolist(),
            "how": self.how,
        }

    @classmethod
    def from_dict(cls, data: Any, token_scores: np.ndarray, axis: int) -> SegmentScores:
        """The saved dict back, checked against the explanation's token scores
        (``token_scores``, tokens along ``axis``): an edited file whose segment scores miss
        a segment, target, layer or step would fail later, or give a wrong number, and
        one whose segment scores are NaN (null) for a segment the model read, where its
        token scores are not, would be refused only by evaluate."""
        token_shape = list(token_scores.shape)
        tokens = token_shape[axis]
        if not isinstance(data, dict) or not {"texts", "token_segments", "scores"} <= set(data):
            raise InvalidInputError(
                "'segments' must be an object with 'texts', 'token_segments' and 'scores'"
            )
        texts, members = data["texts"], data["token_segments"]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise InvalidInputError("'segments.texts' must be a list of strings")
        if not texts:  # explain never writes it, and segments_frame() has nothing to show
            raise InvalidInputError(
                "'segments' lists no segments ('segments.texts' is empty); leave 'segments' "
                "out for an explanation without segments"
            )
        if not isinstance(members, list) or len(members) != tokens:
            raise InvalidInputError(
                f"'segments.token_segments' must hold one entry per token ({tokens})"
            )
        for member in members:
            index = isinstance(member, int) and not isinstance(member, bool)
            if member is not None and not (index and 0 <= member < len(texts)):
                raise InvalidInputError(
                    f"'segments.token_segments' holds {member!r}; each entry is null or a "
                    f"segment index below {len(texts)}"
                )
        scores = score_array(data["scores"], "segments.scores")
        expected = token_shape.copy()
        expected[axis] = len(texts)
        if list(scores.shape) != expected:
            raise InvalidInputError(
                f"'segments.scores' has shape {list(scores.shape)}, expected {expected} "
                f"(the token scores' {token_shape} with {len(texts)} segments in place of "
                f"{tokens} tokens)"
            )
        how = data.get("how", "sum")
        if how not in (*SEGMENT_REDUCTIONS, NATIVE):
            raise InvalidInputError(f"'segments.how' is {how!r}, not a known reduction")
        _check_unread_nan(texts, members, scores, token_scores, axis)
        return cls(list(texts), list(members), scores, how)


def _check_unread_nan(
    texts: list[str], members: list[int | None], scores: np.ndarray, tokens: np.ndarray, axis: int
) -> None:
    """Refuse a NaN (null) segment score where NaN means nothing: NaN marks a segment the
    model did not read (no token in ``token_segments``), or one whose token scores are NaN
    there too (a target contrasted with itself, a generation's step not explained; every
    reduction of a NaN token score, and a segment method's own score copied to its
    tokens, is NaN)."""
    if not np.isnan(scores).any():
        return
    segment_scores = np.moveaxis(scores, axis, -1)  # [..., S]
    token_scores = np.moveaxis(tokens, axis, -1)  # [..., T]
    owner = np.asarray([-1 if m is None else m for m in members])
    for index, piece in enumerate(texts):
        inside = owner == index
        if not inside.any():  # not read: NaN is its mark
            continue
        explained = ~np.isnan(token_scores[..., inside]).any(-1)
        if (np.isnan(segment_scores[..., index]) & explained).any():
            raise InvalidInputError(
                f"'segments.scores' holds NaN (null) for segment {index} ({piece[:40]!r}), "
                "which has tokens the model read and scored; NaN marks only a segment the "
                "model did not read (no token in 'segments.token_segments')"
            )


def _reduce(block: np.ndarray, how: str) -> np.ndarray:
    if how == "sum":
        return block.sum(-1)
    if how == "mean":
        return block.mean(-1)
    if how == "max":
        return block.max(-1)
    picked = np.abs(block).argmax(-1)[..., None]
    return np.take_along_axis(block, picked, -1)[..., 0]
