"""Segments as the units of the faithfulness metrics (``Protocol(unit="segment")``).

With token units every eligible token is ranked, kept or perturbed on its own. With
segment units the explanations' segments are: ranked by their segment scores
(``Explanation.segments``: a token method's scores reduced over the segment, or a segment
method's own), counted (comprehensiveness at ratio k perturbs ``int(S * k)`` of a text's
S segments), kept with one probability each (pi-Soft calibrates the segments' keep
probabilities to a mean of pi, so every method keeps the same expected number of
segments), and perturbed whole: every eligible token of a segment is deleted, masked or
zeroed with it. Tokens of no segment (a prompt's own words, a question left out of the
segments, separators) are never perturbed; the zero baseline of the soft metrics zeroes
every segment's tokens. A segment's Monte Carlo draw is its first token's, so a text whose
segments are single tokens scores as it does with token units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..common.errors import InvalidInputError
from ..common.numbering import text_name
from ..explanations.segments import SegmentScores


@dataclass
class Units:
    """A chunk's segments: which unit each padded position is in, and the units' scores."""

    #: ``[B, T]`` the unit of each position (-1: none)
    members: Tensor
    #: ``[M, B, U]`` each method's unit scores (NaN past a text's last unit)
    scores: Tensor
    #: ``[B]`` units per text
    count: Tensor

    def allowed(self, tokens: Tensor) -> Tensor:
        """Units ``[B, U]`` holding at least one of the ``tokens`` ``[B, T]`` allowed."""
        width = self.scores.shape[-1]
        hits = torch.zeros(tokens.shape[0], width + 1, dtype=torch.long, device=tokens.device)
        index = torch.where(self.members >= 0, self.members, width).to(tokens.device)
        hits.scatter_add_(1, index, tokens.long())
        return hits[:, :width] > 0

    def first_positions(self, tokens: Tensor) -> Tensor:
        """Each unit's first allowed position ``[B, U]`` (0 for units with none)."""
        width = self.scores.shape[-1]
        positions = torch.arange(tokens.shape[1], device=tokens.device).expand_as(tokens)
        large = tokens.shape[1]
        place = torch.where(tokens & (self.members.to(tokens.device) >= 0), positions, large)
        first = torch.full((tokens.shape[0], width + 1), large, device=tokens.device)
        index = torch.where(self.members >= 0, self.members, width).to(tokens.device)
        first.scatter_reduce_(1, index, place, reduce="amin")
        return first[:, :width].clamp_max(large - 1)

    def to_tokens(self, chosen: Tensor, tokens: Tensor) -> Tensor:
        """Unit masks ``[M, B, ..., U]`` as masks over the ``tokens`` ``[B, T]`` allowed:
        a position is chosen when its unit is."""
        shape = chosen.shape
        flat = chosen.reshape(shape[0], shape[1], -1, shape[-1])
        members = self.members.to(chosen.device)
        index = members.clamp_min(0)[None, :, None, :].expand(*flat.shape[:3], -1)
        spread = flat.gather(-1, index)
        inside = (tokens & (members >= 0))[None, :, None, :]
        return (spread & inside).reshape(*shape[:-1], members.shape[-1])


def read_segments(segments: SegmentScores) -> np.ndarray:
    """Which segments the model read (a token of theirs was read): a text truncated
    before its last segments leaves those without a token, and no metric ranks them."""
    read = np.zeros(len(segments.texts), dtype=bool)
    read[[s for s in set(segments.token_segments) if s is not None]] = True
    return read


def check_segment_scores(scores: np.ndarray, read: np.ndarray, method: str, text: int) -> None:
    """Refuse NaN or infinite scores of the segments read, as token scores are refused:
    they rank nothing (a segment not read may score NaN: it is never ranked)."""
    if not np.isfinite(scores[read]).all():
        raise InvalidInputError(
            f"the {method!r} explanation of {text_name(text)} holds NaN or infinite segment "
            "scores, which rank no segments; explain it again, or leave it out"
        )
