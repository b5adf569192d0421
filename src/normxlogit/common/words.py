"""Whitespace words: how evidence and rationales index a text (no tokenizer involved)."""

from __future__ import annotations

import re
import unicodedata

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


def visible(text: str) -> bool:
    """Whether ``text`` holds a character a reader sees: not whitespace, not a format or
    control character (zero-width spaces, direction marks, soft hyphens, invisible
    operators), not a combining mark on its own. A segment without one holds nothing to
    score, and often no token at all."""
    return any(not char.isspace() and unicodedata.category(char) not in _UNSEEN for char in text)


#: Unicode categories that show nothing alone: format, control, unassigned, surrogates,
#: private use, and combining marks (they only change the character before them)
_UNSEEN = {"Cf", "Cc", "Cn", "Cs", "Co", "Mn", "Me", "Zs", "Zl", "Zp"}
