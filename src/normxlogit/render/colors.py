"""Shared pieces of the renderers: readable token text and a signed colour scale."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..common.tokens import SHOWN_CHARACTERS, SPACE_SHOWN

if TYPE_CHECKING:
    from ..explanations.explanation import Explanation

# Marks that subword tokenizers put in token strings, and what they stand for.
_MARKS = {"Ġ": " ", "▁": " ", "Ċ": "\u21b5", "ĉ": "\t"}

POSITIVE = (30, 120, 230)  # blue: supports the target
NEGATIVE = (220, 50, 47)  # red: speaks against it


def display_token(token: str) -> str:
    """A raw token with BPE/SentencePiece marks turned into spaces (a rough guess; the
    renderers show ``Explanation.token_texts`` instead)."""
    for mark, shown in _MARKS.items():
        token = token.replace(mark, shown)
    return token


#: how a token that only continues a character begun by the token before it is drawn
CONTINUATION = "\u00b7"
_SHOWN = SHOWN_CHARACTERS


def display_text(text: str) -> str:
    """A token's text (``Explanation.token_texts``) made visible.

    Newlines and tabs become arrows, other invisible characters (zero-width spaces,
    control characters) their code point ``<U+200B>``, a token of spaces ``␣``, and an
    empty text (the rest of a character begun by the token before) ``·``.
    """
    if not text:
        return CONTINUATION
    shown = "".join(_SHOWN.get(c) or _code(c) for c in text)
    return shown if shown.strip() else SPACE_SHOWN * len(shown)


def _code(character: str) -> str:
    if unicodedata.category(character) in ("Cc", "Cf", "Zl", "Zp", "Co", "Cn"):
        return f"<U+{ord(character):04X}>"
    return character


def scale(scores: np.ndarray) -> float:
    """The largest absolute score, used so that colour intensities compare within a row."""
    finite = np.abs(scores[np.isfinite(scores)]) if scores.size else scores
    peak = float(finite.max()) if finite.size else 0.0
    return peak if peak > 0 else 1.0


def rgba(score: float, peak: float) -> tuple[int, int, int, float]:
    """Colour for a signed score: blue for positive, red for negative, alpha by magnitude."""
    base = POSITIVE if score >= 0 else NEGATIVE
    if not math.isfinite(score):  # no score (NaN) or a broken one: no colour
        return (*base, 0.0)
    return (*base, round(min(abs(score) / peak, 1.0), 3))


def segment_columns(
    explanation: Explanation, layer_title: Callable[[int, str], str]
) -> tuple[list[str], np.ndarray, list[int]]:
    """The segments table's columns: their titles, the scores ``[segments, columns]`` and
    each column's layer position. With layers every layer gets its columns, titled by
    ``layer_title(layer, title)`` as the token rows are, so one layer's scores are never
    shown as if they were every layer's."""
    scores = explanation.segments.scores
    if not explanation.has_layers:
        scores = scores[None]
    if not explanation.has_targets_axis:
        scores = scores[..., None]
    titles = explanation.column_titles
    layers = explanation.layers if explanation.has_layers else [None]
    named = [
        title if layer is None else layer_title(layer, title)
        for layer in layers
        for title in titles
    ]
    columns = np.concatenate(list(scores), axis=1)  # [L, S, K] -> [S, L*K], layer-major
    return named, columns, [li for li in range(len(layers)) for _ in titles]
