"""Checks for the counts users pass (batch sizes, token budgets, lengths).

``True`` is an int to Python and ``2.0`` compares like one, so neither fails a plain
``size < 1`` test, and a numpy integer from an array is not an ``int`` at all: one check
takes what is a whole number and refuses the rest in one line naming the argument.
"""

from __future__ import annotations

import numbers
import re
from typing import Any

from .errors import InvalidInputError


def positive_count(value: Any, name: str, *, none_ok: bool = False) -> int:
    """``value`` as an int of at least 1 (numpy integers taken), or a one-line refusal
    (``none_ok``: the message says None is accepted too)."""
    alternative = " (or None)" if none_ok else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(
            f"{name} must be a whole number of at least 1{alternative}, got {value!r:.40} "
            f"({type(value).__name__})"
        )
    if value < 1:
        raise InvalidInputError(f"{name} must be at least 1{alternative}, got {value}")
    return int(value)


def optional_count(value: Any, name: str) -> int | None:
    """:func:`positive_count`, with ``None`` (no limit) passed through."""
    return None if value is None else positive_count(value, name, none_ok=True)


def integer_text(text: str) -> int | None:
    """The int a string of ASCII digits spells (``"-3"``, ``" 2 "``), else None.
    ``str.isdigit`` also takes ``"²"`` and ``"①"``, which ``int`` then refuses."""
    match = re.fullmatch(r"\s*(-?[0-9]+)\s*", text)
    return int(match.group(1)) if match else None
