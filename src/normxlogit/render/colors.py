"""Shared pieces of the renderers: readable token text and a signed colour scale."""

from __future__ import annotations

import numpy as np

# Marks that subword tokenizers put in token strings, and what they stand for.
_MARKS = {"Ġ": " ", "▁": " ", "Ċ": "\u21b5", "ĉ": "\t"}

POSITIVE = (30, 120, 230)  # blue: supports the target
NEGATIVE = (220, 50, 47)  # red: speaks against it


def display_token(token: str) -> str:
    """The token as a reader would write it (BPE/SentencePiece marks turned into spaces)."""
    for mark, shown in _MARKS.items():
        token = token.replace(mark, shown)
    return token


def scale(scores: np.ndarray) -> float:
    """The largest absolute score, used so that colour intensities compare within a row."""
    peak = float(np.abs(scores).max()) if scores.size else 0.0
    return peak if peak > 0 else 1.0


def rgba(score: float, peak: float) -> tuple[int, int, int, float]:
    """Colour for a signed score: blue for positive, red for negative, alpha by magnitude."""
    base = POSITIVE if score >= 0 else NEGATIVE
    return (*base, round(min(abs(score) / peak, 1.0), 3))
