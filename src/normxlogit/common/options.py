"""Option values converted to the types their dataclass declares, or a clear refusal.

Method options (:func:`normxlogit.get_method`), protocol settings
(:meth:`normxlogit.Protocol.with_options`) and training settings are dataclass fields.
Values come from Python (already typed) or from the command line (always text, e.g.
``--option steps=20``); both go through :func:`convert_options`, which turns text into
the declared type (``int``, ``float``, ``bool``, ``str``, ``None`` in an optional, a
union, a tuple or list of those) and refuses a value that does not fit, naming the option
and the type it needs. This module imports nothing heavy.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Union

from .counts import whole_number
from .errors import InvalidOptionError
from .outputs import repr_text, short_value

_TRUE = frozenset({"true", "yes", "on"})
_FALSE = frozenset({"false", "no", "off"})
_NONE = frozenset({"none", "null"})
#: ASCII digits only: ``int()`` would also read "٣" or "０５", which the docs do not
_INT = re.compile(r"[+-]?[0-9]+")


def _parse_int(text: str) -> int:
    """Whole numbers only: ``int()`` alone would also take ``"1_000"``."""
    if not _INT.fullmatch(text):
        raise ValueError(text)
    return whole_number(text)


def _parse_float(text: str) -> float:
    """A number in ASCII digits, as whole numbers are read: ``float()`` alone would also
    take "٣.5" or "３.５" (other scripts' digits) and ``"1_000.5"``."""
    if "_" in text or any(c.isdigit() and not "0" <= c <= "9" for c in text):
        raise ValueError(text)
    return float(text)


def number_text(text: str) -> float:
    """``text`` (a flag's value) as a number written in ASCII digits, as the options read
    one: ``ValueError`` for "٣٠٠", "０.５" or "1_000", which ``float()`` alone takes."""
    return _parse_float(text.strip())


#: The number types an option may have: what counts as one, and how text becomes one.
_NUMBERS: dict[type, tuple[type, Callable[[str], Any]]] = {
    int: (numbers.Integral, _parse_int),
    float: (numbers.Real, _parse_float),
}


_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def same_setting(first: str, second: str) -> bool:
    """Whether two texts of one setting (``--option``/``--protocol`` given twice) read as
    the same value whatever the option's type: ``3`` and ``03``, ``true`` and ``True``,
    ``0.5`` and ``[0.5]`` (a list of one, as a list option reads the bare value). Values
    that some type would read apart (``l1`` and ``L1``) are not the same."""
    return first.strip() == second.strip() or _read_as(first) == _read_as(second)


def _read_as(text: str) -> tuple:
    """A setting's text as a comparable value: a list's items (a bare value is a list of
    one), each a number, a bool, none or the text itself, tagged so that True is not 1."""
    stripped = text.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        stripped = stripped[1:-1]
    return tuple(_item(part) for part in stripped.split(","))


def _item(text: str) -> tuple[str, Any]:
    word = text.strip().strip("\"'")
    lowered = word.lower()
    if _NUMBER.fullmatch(word):
        return ("number", float(word))
    if lowered in _TRUE | _FALSE:
        return ("bool", lowered in _TRUE)
    if lowered in _NONE:
        return ("none", None)
    return ("text", word)


class _Mismatch(Exception):
    """The value does not fit the type (internal)."""


class _TooLarge(Exception):
    """A whole number past the largest float, where a float is wanted (internal)."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


def convert_options(cls: type, values: Mapping[str, Any], what: str) -> dict[str, Any]:
    """``values`` converted to the types of ``cls``'s dataclass fields.

    ``what`` names the owner in messages (e.g. ``"method 'integrated_gradients' option"``);
    unknown names are left to the caller. Fields whose annotation cannot be resolved pass
    through unchanged.
    """
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # annotations naming types that only exist for type checkers
        hints = {}
    defaults = {
        f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
    }
    tokens = {f.name for f in dataclasses.fields(cls) if f.metadata.get(TOKEN_TEXT)}
    converted = {}
    for name, value in values.items():
        annotation = hints.get(name, Any)
        try:
            if name in tokens and isinstance(value, str):
                converted[name] = token_text(value)
            else:
                converted[name] = _convert(value, annotation)
        except _TooLarge as large:
            shown = short_value(large.value)
            said = f" {shown} is" if large.value is value else f" holds {shown},"
            raise InvalidOptionError(
                f"{what} {name}{said} too large for a number (float); "
                f"at most {sys.float_info.max:.1e}"
            ) from None
        except _Mismatch:
            default = defaults.get(name, dataclasses.MISSING)
            hint = (
                f"; e.g. {name}={_show(default)} (the default"
                + (": the empty string)" if default == "" else ")")
                if default is not dataclasses.MISSING
                else ""
            )
            raise InvalidOptionError(
                f"{what} {name}={repr_text(value)} must be {describe(annotation)}{hint}"
            ) from None
        check_magnitude(converted[name], f"{what} {name}")
    return converted


#: a field's metadata key: its text names a token, never a number (:func:`token_field`)
TOKEN_TEXT = "normxlogit_token_text"
_TOKEN_ID = re.compile(r"id:([0-9]+)")  # ASCII digits, as every number is read
_DIGITS = re.compile(r"[0-9]+")


def token_field(default: Any) -> Any:
    """A ``str | int`` option naming a token (or a named kind) as text and a token id as
    an int: text such as ``"10"`` stays the token "10" (a vocabulary may hold it), and an
    id from text is written ``"id:10"``, so the meaning never depends on the vocabulary."""
    return dataclasses.field(default=default, metadata={TOKEN_TEXT: True})


def ascii_digits(text: str) -> bool:
    """Whether ``text`` is a whole number in ASCII digits (``str.isdigit`` also takes
    "²" or "①", which ``int()`` refuses, and "٣", which the docs do not read as a number)."""
    return _DIGITS.fullmatch(text) is not None


def token_text(text: str) -> str | int:
    """``text`` as a :func:`token_field` reads it: ``"id:N"`` is the id N, anything else
    the text itself."""
    found = _TOKEN_ID.fullmatch(text.strip())
    return int(found.group(1)) if found else text


#: the largest integer an option or flag may hold: counts, sizes and seeds beyond it
#: mean nothing, and would overflow torch, numpy or SQLite further on
MAX_INTEGER = 2**31 - 1


def check_magnitude(value: Any, shown: str) -> None:
    """Refuse an integer beyond :data:`MAX_INTEGER` (either sign), naming ``shown``; in a
    list or tuple (``drop_k=[1, 10**5000]``), each item (such a number could be stored and
    saved in no file: JSON prints no int past 4,300 digits)."""
    if isinstance(value, list | tuple):
        for item in value:
            if isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_INTEGER:
                raise InvalidOptionError(
                    f"{shown} holds {short_value(item)}, too large; at most {MAX_INTEGER}"
                )
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
        raise InvalidOptionError(
            f"{shown} {short_value(value)} is too large; at most {MAX_INTEGER}"
        )


def describe(annotation: Any) -> str:
    """The type ``annotation`` in words, for messages."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        return " or ".join(describe(arg) for arg in typing.get_args(annotation))
    if origin in (tuple, list):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        inner = describe(args[0]) if args else "values"
        return f"a list of {_plural(inner)}"
    return {
        int: "an integer (int)",
        float: "a number (float)",
        bool: "true or false (bool; yes/no and on/off read too, 1/0 not)",
        str: "a string (str)",
        type(None): "none",
    }.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _plural(words: str) -> str:
    return {
        "an integer (int)": "integers",
        "a number (float)": "numbers",
        "a string (str)": "strings",
    }.get(words, words)


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ",".join(str(v) for v in value) + "]"
    if value is None:
        return "none"
    if value == "":
        return "''"
    return str(value).lower() if isinstance(value, bool) else str(value)


def is_bool(value: Any) -> bool:
    """Whether ``value`` is a bool, numpy's too (a bool read from a table or an array is
    ``np.bool_``, as its numbers are numpy's), without importing numpy here."""
    kind = type(value)
    return isinstance(value, bool) or (
        kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")
    )


def _convert(value: Any, annotation: Any) -> Any:
    if annotation is Any:
        return value
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = typing.get_args(annotation)
        if isinstance(value, str):  # text names a number, a bool or none before a string
            args = tuple(a for a in args if a is not str) + tuple(a for a in args if a is str)
        for arg in args:
            try:
                return _convert(value, arg)
            except _Mismatch:
                continue
        raise _Mismatch
    if origin in (tuple, list):
        return _sequence(value, annotation, origin)
    if annotation is type(None):
        if value is None or (isinstance(value, str) and value.strip().lower() in _NONE):
            return None
        raise _Mismatch
    if annotation is bool:
        if is_bool(value):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise _Mismatch
    if annotation in _NUMBERS:
        kind, parse = _NUMBERS[annotation]
        if isinstance(value, bool):  # True is an Integral, but never meant as 1
            raise _Mismatch
        if isinstance(value, kind):
            try:
                return annotation(_as_written(value) if annotation is float else value)
            except OverflowError:  # float(10**400)
                raise _TooLarge(value) from None
        if isinstance(value, str):
            try:
                return parse(value.strip())
            except ValueError:
                raise _Mismatch from None
        raise _Mismatch
    if annotation is str:
        if isinstance(value, str):
            return value
        raise _Mismatch
    return value  # a type this module does not know: the owner checks it


def _as_written(value: Any) -> Any:
    """A float of a narrower type as its digits read (``np.float32(0.076)`` is 0.076, not
    0.07599999755...), so that a bound written in that type is the bound; any other
    number as it is."""
    size = getattr(getattr(value, "dtype", None), "itemsize", 8)
    if size < 8 and math.isfinite(value):
        return float(str(value))
    return value


def _sequence(value: Any, annotation: Any, origin: type) -> Any:
    if isinstance(value, str):
        value = _sequence_items(value)
    if isinstance(value, (str, bytes, Mapping, set, frozenset)):
        raise _Mismatch
    if not isinstance(value, (list, tuple)):
        try:
            value = list(value)  # numpy arrays and other ordered iterables
        except TypeError:
            raise _Mismatch from None
    args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
    item = args[0] if args else Any
    return origin(_convert(v, item) for v in value)


def _sequence_items(text: str) -> list[Any]:
    """A list option's text as its items: JSON (``[0.1,0.5]``, nested lists), else a flat
    list whose items are read as a single value of the option reads them, so that ``.5``
    and ``0.5,.7`` are numbers in a list as ``--option name=.5`` is one alone."""
    text = text.strip()
    try:
        return json.loads(text if text.startswith("[") else f"[{text}]", parse_int=whole_number)
    except json.JSONDecodeError:
        pass
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if not inner.strip() or "[" in inner or "]" in inner:
        raise _Mismatch
    return [part.strip() for part in inner.split(",")]


#: Python's spelling of a value a message may name, in TOML's
_TOML_WORDS = {"True": "true", "False": "false"}


def toml_spelling(value: str) -> str:
    """A value as a library message writes it (Python: ``'score'``, ``True``) as a bench
    config writes it (TOML: ``"score"``, ``true``), so a key named in a message can be
    copied into the config."""
    value = value.strip()
    if value[:1] in "'\"" and value[-1:] == value[:1] and len(value) > 1:
        return '"' + value[1:-1] + '"'
    return _TOML_WORDS.get(value, value)
