"""Checks for the counts users pass (batch sizes, token budgets, lengths).

``True`` is an int to Python and ``2.0`` compares like one, so neither fails a plain
``size < 1`` test, and a numpy integer from an array is not an ``int`` at all: one check
takes what is a whole number and refuses the rest in one line naming the argument.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import InvalidInputError
from .fields import shown_value
from .outputs import lone_item, short_value


def positive_count(value: Any, name: str, *, none_ok: bool = False) -> int:
    """``value`` as an int of at least 1 (numpy integers taken), or a one-line refusal
    (``none_ok``: the message says None is accepted too)."""
    alternative = " (or None)" if none_ok else ""
    value = lone_item(value)  # np.array(2), torch.tensor(2): the number held
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(
            f"{name} must be a whole number of at least 1{alternative}, got "
            f"{short_value(value)} ({type(value).__name__})"
        )
    if value < 1:
        raise InvalidInputError(f"{name} must be at least 1{alternative}, got {short_value(value)}")
    return int(value)


def optional_count(value: Any, name: str) -> int | None:
    """:func:`positive_count`, with ``None`` (no limit) passed through."""
    return None if value is None else positive_count(value, name, none_ok=True)


#: the most digits a whole number written in text (an argument, a data or saved file) may
#: have; Python's ``int()`` stops at 4,300 and advises a setting of its own, so longer
#: numbers are read here in parts, and ones past this are refused in one line
MAX_DIGITS = 100_000


def whole_number(text: str) -> int:
    """The int ``text`` (ASCII digits, a sign allowed, as ``int()`` takes them) spells,
    past the 4,300 digits ``int()`` reads too, so that a 5,001-digit label or layer is
    refused as out of range like 10**400 is (``ValueError`` where it is no number; a
    one-line refusal past :data:`MAX_DIGITS` digits). ``parse_int=`` of ``json.loads``."""
    body = text.strip()
    sign = -1 if body[:1] == "-" else 1
    digits = body[1:] if body[:1] in "+-" else body
    if len(digits) <= 4000 or not digits.isascii() or not digits.isdigit():
        return int(text)
    if len(digits) > MAX_DIGITS:
        raise InvalidInputError(
            f"a whole number of {len(digits)} digits ({digits[:20]}...) is too long; "
            f"at most {MAX_DIGITS} digits are read"
        )
    return sign * _digits_value(digits)


def _digits_value(digits: str) -> int:
    if len(digits) <= 4000:
        return int(digits)
    half = len(digits) // 2
    return _digits_value(digits[:-half]) * 10**half + _digits_value(digits[-half:])


def integer_text(text: str) -> int | None:
    """The int a string of ASCII digits spells (``"-3"``, ``" 2 "``), else None.
    ``str.isdigit`` also takes ``"²"`` and ``"①"``, which ``int`` then refuses."""
    match = re.fullmatch(r"\s*(-?[0-9]+)\s*", text)
    return whole_number(match.group(1)) if match else None


def step_numbers(steps: Any, name: str) -> list[int] | None:
    """Steps of a generation (``explain_steps=``, evaluate's ``steps=``) as a list of ints
    >= 0, read once (a generator too): None, or a list, tuple, range or array of step
    numbers. One number, a text, a mapping or a set, or an item that is no step number,
    is refused in one line naming ``name`` (``steps=2`` means ``[2]``)."""
    if steps is None:
        return None
    if isinstance(steps, numbers.Real) or (
        getattr(steps, "ndim", None) == 0 and hasattr(steps, "item")
    ):
        number = steps.item() if hasattr(steps, "item") else steps
        fix = int(number) if isinstance(number, float) and number.is_integer() else number
        raise InvalidInputError(
            f"{name} is a list of step numbers (0 is the first), got the "
            f"{type(steps).__name__} {number!r}; give [{fix!r}]"
        )
    if isinstance(steps, (str, bytes, Mapping, set, frozenset)) or not isinstance(steps, Iterable):
        raise InvalidInputError(
            f"{name} is a list of step numbers (0 is the first), e.g. [0, 2] or "
            f"range(0, 32, 4); got {shown_value(steps)}"
        )
    items = steps.tolist() if hasattr(steps, "tolist") else list(steps)
    if not isinstance(items, list):
        items = [items]
    # 0-d entries (list(torch.tensor([0, 2])), np.array(0)): the numbers they hold, as the
    # 1-d tensor's are read
    items = [lone_item(s) for s in items]
    bad = [s for s in items if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0]
    if bad:
        raise InvalidInputError(f"{name} are step numbers (0 is the first), got {bad[0]!r:.40}")
    return [int(s) for s in items]
