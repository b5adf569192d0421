"""Type checks for the fields of saved JSON (explanations, generation explanations).

A file edited by hand or written by another program must be refused with the field and
what it should hold, never fail later with a ``TypeError`` deep inside a method. Each
field has a :class:`Field`: a check and the words that describe what passes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInputError


@dataclass(frozen=True)
class Field:
    check: Callable[[Any], bool]
    expected: str  # "a list of strings"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


STRING = Field(lambda v: isinstance(v, str), "a string")
INTEGER = Field(_is_int, "an integer")
NUMBER = Field(_is_number, "a number")
BOOLEAN = Field(lambda v: isinstance(v, bool), "true or false")
OBJECT = Field(lambda v: isinstance(v, dict), "an object")
ARRAY = Field(lambda v: isinstance(v, list), "an array")
STRINGS = Field(
    lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings"
)
INTEGERS = Field(lambda v: isinstance(v, list) and all(_is_int(x) for x in v), "a list of integers")
NUMBERS = Field(
    lambda v: isinstance(v, list) and all(_is_number(x) for x in v), "a list of numbers"
)
BOOLEANS = Field(
    lambda v: isinstance(v, list) and all(isinstance(x, bool) for x in v), "a list of true/false"
)
WORD_IDS = Field(
    lambda v: isinstance(v, list) and all(x is None or _is_int(x) for x in v),
    "a list of integers or nulls",
)
NUMBER_BY_NAME = Field(
    lambda v: isinstance(v, dict) and all(_is_number(x) for x in v.values()),
    "an object of numbers",
)
PROBABILITY_BY_NAME = Field(
    lambda v: (
        isinstance(v, dict) and all(_is_number(x) and 0.0 <= x <= 1.0 + 1e-6 for x in v.values())
    ),  # NaN fails
    "an object of probabilities (numbers from 0 to 1)",
)
NONEMPTY_STRINGS = Field(
    lambda v: isinstance(v, list) and bool(v) and all(isinstance(x, str) for x in v),
    "a non-empty list of strings (leave it out to mean the label)",
)
NUMBER_LISTS_BY_NAME = Field(
    lambda v: (
        isinstance(v, dict)
        and all(
            isinstance(x, list) and all(y is None or _is_number(y) for y in x) for x in v.values()
        )
    ),
    "an object of lists of numbers (null where a value is missing)",
)
STRING_BY_NAME = Field(
    lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
    "an object of strings",
)
TEXT = Field(
    lambda v: (
        isinstance(v, str)
        or (isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v))
    ),
    "a string or a list of two strings (a pair)",
)


def check_fields(
    data: Mapping[str, Any], required: Mapping[str, Field], optional: Mapping[str, Field]
) -> None:
    """Refuse a required field that is missing or null, and any present field (null
    allowed for optional ones) whose value fails its check."""
    missing = [key for key in required if data.get(key) is None]
    if missing:
        raise InvalidInputError(f"no {', '.join(repr(k) for k in missing)} (or null)")
    for key, field in {**optional, **required}.items():
        value = data.get(key)
        if value is not None and not field.check(value):
            if isinstance(value, dict):  # name the entry that does not fit
                bad = next((k for k, v in value.items() if not field.check({k: v})), None)
                if bad is not None:
                    raise InvalidInputError(
                        f"{key!r} must be {field.expected}; its entry {str(bad)!r} is "
                        f"{_shown(value[bad])}"
                    )
            raise InvalidInputError(f"{key!r} must be {field.expected}, not {_shown(value)}")


def _shown(value: Any) -> str:
    """A short name for what was found: its JSON type."""
    names = {
        str: "a string",
        bool: "true/false",
        int: "a number",
        float: "a number",
        list: "an array",
        dict: "an object",
    }
    kind = names.get(type(value), type(value).__name__)
    if isinstance(value, list) and kind == "an array":
        return "an array holding other values"
    return kind
