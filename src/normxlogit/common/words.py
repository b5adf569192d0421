"""Whitespace words: how evidence and rationales index a text (no tokenizer involved)."""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+")


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the whitespace-separated words of ``text``."""
    return [match.span() for match in _WORD.finditer(text)]


def word_at(spans: list[tuple[int, int]], start: int) -> int | None:
    """The index of the word whose span holds character ``start`` (None: whitespace)."""
    for index, (first, end) in enumerate(spans):
        if first <= start < end:
            return index
    return None


def text_word_count(text: str | tuple[str, ...]) -> int:
    """Whitespace words of a text (of a pair: both texts), as evidence indices count them."""
    parts = (text,) if isinstance(text, str) else tuple(text)
    return sum(len(word_spans(part)) for part in parts)
