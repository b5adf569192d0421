"""Type checks for the fields of saved JSON (explanations, generation explanations).

A file edited by hand or written by another program must be refused with the field and
what it should hold, never fail later with a ``TypeError`` deep inside a method. Each
field has a :class:`Field`: a check and the words that describe what passes it.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInputError
from .outputs import repr_text, short_value


@dataclass(frozen=True)
class Field:
    check: Callable[[Any], bool]
    expected: str  # "a list of strings"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_finite_number(value: Any) -> bool:
    """A number a float holds, not NaN or infinite: a whole number past float64 (10**400)
    fails where it is shown or computed with (an OverflowError)."""
    return _is_number(value) and abs(value) <= sys.float_info.max


#: the largest token id a model's input tensor holds (int64); a larger one is no
#: vocabulary's, and fails deep inside the tokenizer
MAX_TOKEN_ID = 2**63 - 1


def _is_token_id(value: Any) -> bool:
    return _is_int(value) and 0 <= value <= MAX_TOKEN_ID


def _is_probability(value: Any) -> bool:
    return _is_number(value) and 0.0 <= value <= 1.0 + 1e-6  # NaN fails; float32 rounding


STRING = Field(lambda v: isinstance(v, str), "a string")
INTEGER = Field(_is_int, "an integer")
NUMBER = Field(_is_number, "a number")
FINITE_NUMBER = Field(_is_finite_number, "a finite number")
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
WORD_IDS = Field(  # a word's index in its text, from 0 (null: a special token)
    lambda v: isinstance(v, list) and all(x is None or (_is_int(x) and x >= 0) for x in v),
    "a list of word indices (whole numbers from 0) or nulls",
)
NUMBER_BY_NAME = Field(
    lambda v: isinstance(v, dict) and all(_is_number(x) for x in v.values()),
    "an object of numbers",
)
PROBABILITY_BY_NAME = Field(
    lambda v: isinstance(v, dict) and all(_is_probability(x) for x in v.values()),  # NaN fails
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
    """A short name for what was found: a number as it is (it may be the right type out
    of range, or NaN), anything else by its JSON type."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        try:  # 10**400 cut, as long values are in every message
            return f"{str(value)[:20]}... ({len(str(abs(value)))} digits)"
        except ValueError:  # past the 4,300 digits Python prints
            return "a whole number of thousands of digits"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "NaN" if value != value else repr(value)
    names = {
        type(None): "null",
        str: "a string",
        bool: "true/false",
        list: "an array",
        dict: "an object",
    }
    kind = names.get(type(value), type(value).__name__)
    if isinstance(value, list) and kind == "an array":
        return "an array holding other values"
    return kind


def check_token_ids(ids: Any, name: str) -> None:
    """Refuse token ids that no vocabulary has: not whole numbers, below 0, or past
    64 bits (the tokenizer fails on them with a message about nesting). Whether an id is
    in a model's vocabulary is checked where the model is known."""
    expected = "a list of token ids (whole numbers from 0, below 2**63)"
    if not isinstance(ids, list):
        raise InvalidInputError(f"{name!r} must be {expected}, not {_shown(ids)}")
    for position, value in enumerate(ids):
        if not _is_token_id(value):
            raise InvalidInputError(f"{name}[{position}] is {value!r:.40}; {name!r} is {expected}")


#: the largest magnitude a float32 holds: scores are kept as float32, and a larger finite
#: number would turn into inf (with numpy's overflow warning once per value)
FLOAT32_MAX = 3.4028234663852886e38
#: what a saved score is, said in every refusal of one
_SCORES_ARE = "scores are numbers (null where there is none)"


def check_scores(value: Any, name: str) -> None:
    """Refuse saved scores numpy would misread: true/false (read as 1.0/0.0), a string
    ("0.5" read as a number), or a finite number past float32's range (read as inf). JSON's
    NaN and Infinity literals pass (they mean no value, as documented)."""
    for item in _scalars(value):
        if isinstance(item, bool):
            raise InvalidInputError(f"{name!r} holds true/false; {_SCORES_ARE}")
        if isinstance(item, str):
            raise InvalidInputError(f"{name!r} holds the string {item!r:.30}; {_SCORES_ARE}")
        finite = _is_int(item) or (isinstance(item, float) and item - item == 0)
        if finite and abs(item) > FLOAT32_MAX:
            raise InvalidInputError(
                f"{name!r} holds {short_value(item)}, beyond the largest score kept (float32, "
                f"{FLOAT32_MAX:.3g}); write a smaller number, or null where there is none"
            )


def _scalars(value: Any) -> Any:
    """Every value in nested lists."""
    if isinstance(value, list):
        for item in value:
            yield from _scalars(item)
    else:
        yield value


def check_within(
    values: list[Any], name: str, low: float, high: float, what: str, missing: bool = False
) -> None:
    """Refuse the first of ``values`` (numbers, checked) outside ``[low, high]``, NaN
    included unless ``missing`` (then null and NaN mean no value), naming its position;
    ``what`` says what the list holds."""
    for position, value in enumerate(values):
        if missing and (value is None or value != value):
            continue
        if not (_is_number(value) and low <= value <= high):
            raise InvalidInputError(
                f"{name}[{position}] is {short_value(value)}; {name!r} holds {what}"
            )


#: diagnostics that are probabilities (the target's under the input and under a contrast
#: input), each from 0 to 1
PROBABILITY_DIAGNOSTICS = ("target_probability", "contrast_input_probability")


def check_diagnostics(value: Any) -> None:
    """Refuse saved ``diagnostics`` that are no numbers (true/false, a string: numpy and
    the tables would misread them) and probabilities outside 0..1; each entry is a number
    or a list of numbers, null (or NaN) where there is none."""
    for key, values in (value or {}).items():
        name = f"diagnostics.{key}"
        items = list(_scalars(values))
        for item in items:
            if item is not None and not _is_number(item):
                raise InvalidInputError(
                    f"{name!r} holds {_shown(item)}; diagnostics are numbers (null where "
                    "there is none)"
                )
        if key in PROBABILITY_DIAGNOSTICS:
            what = "probabilities, numbers from 0 to 1 (null where missing)"
            check_within(items, name, 0.0, 1.0 + 1e-6, what, missing=True)


def name_problem(name: str) -> str | None:
    """What makes ``name`` (a method's, a metric's, a group's) look like another name it is
    not, so that two rows a reader cannot tell apart are summarised apart: spaces around
    it, or a character that shows nothing or looks like a plain space (zero-width
    characters, direction marks, control characters, a no-break space). None: nothing.
    Spaces inside a name ('IG 50 steps') are a name's own."""
    if name != name.strip():
        return f"with spaces around it; write it as {name.strip()!r}"
    if (composed := unicodedata.normalize("NFC", name)) != name:  # 'café' as e + U+0301
        odd = [c for c in name if unicodedata.normalize("NFC", c) != c]  # U+212A KELVIN SIGN
        if odd and not any(unicodedata.combining(c) for c in name):
            shown = ", ".join(
                f"U+{ord(c):04X} ({unicodedata.name(c, '?')}), which looks like "
                f"{unicodedata.normalize('NFC', c)!r}"
                for c in dict.fromkeys(odd)
            )
            return (
                f"not in composed (NFC) form: it holds {shown} but is another character; "
                f"write it as {composed!r}: unicodedata.normalize('NFC', name)"
            )
        return (
            "written with separate combining accents (it looks like its composed spelling "
            "but is another name); write it composed: unicodedata.normalize('NFC', name)"
        )
    for char in name:
        if char != " " and (char.isspace() or unseen_in_name(char)):
            described = unicodedata.name(char, "")
            shown = f"U+{ord(char):04X}" + (f" ({described})" if described else "")
            looks = "a space" if char.isspace() else "nothing"
            cleaned = "".join(" " if c.isspace() else "" if unseen_in_name(c) else c for c in name)
            return f"holding {shown}, which shows as {looks}; write it as {cleaned.strip()!r}"
    return None


#: Unicode categories of characters that show nothing in a name: format (zero-width
#: spaces and joiners, direction marks, a byte order mark), control, unassigned,
#: surrogates, private use, line and paragraph separators (``visible`` in ``words``)
_UNSEEN_IN_NAMES = {"Cf", "Cc", "Cn", "Cs", "Co", "Zl", "Zp"}
#: characters of other categories that show nothing either (Unicode's default
#: ignorables, and the blank Braille pattern): the combining grapheme joiner, Hangul
#: fillers, Khmer inherent vowels, Mongolian and other variation selectors
_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2800, 0x2800),  # the blank Braille pattern
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
)


def unseen_in_name(char: str) -> bool:
    code = ord(char)
    return unicodedata.category(char) in _UNSEEN_IN_NAMES or any(
        low <= code <= high for low, high in _IGNORABLE
    )


def check_replacing(kind: str, name: str, cls: type, present: type | None, replace: bool) -> None:
    """Refuse registering ``cls`` as ``name`` of ``kind`` ("method", "metric") over another
    class already registered there (``present``) unless ``replace``. The same module-level
    class defined again (a module reloaded, a notebook cell run again) replaces itself;
    classes a function makes share one qualified name, so not those."""
    reloaded = (
        present is not None
        and "<locals>" not in cls.__qualname__
        and (present.__module__, present.__qualname__) == (cls.__module__, cls.__qualname__)
    )
    if present is not None and not replace and not reloaded:
        raise InvalidInputError(
            f"a {kind} named {name!r} is already registered ({present.__module__}."
            f"{present.__qualname__}); choose another name, or pass replace=True to replace it"
        )


def check_one_name(kind: str, name: str, cls: type, registered: Mapping[str, type]) -> None:
    """Refuse registering ``cls`` as ``name`` of ``kind`` where it is already registered
    under another name: a class has one name, so what was asked for by the first would be
    labelled with the second."""
    for other, present in registered.items():
        if present is cls and other != name:
            raise InvalidInputError(
                f"class {cls.__qualname__} is already registered as {kind} {other!r}; "
                f"subclass it to register it as {name!r} too"
            )


def json_problem(value: Any, where: str) -> str | None:
    """Why ``value`` (found at ``where``) cannot be written as JSON (None: it can): str,
    int, float, bool and None, NumPy numbers, and lists, tuples and string-keyed dicts of
    them."""
    if value is None or isinstance(value, str | int | float):
        return None
    if hasattr(value, "dtype") and getattr(value, "ndim", None) == 0:  # a NumPy number
        return None if isinstance(value.item(), int | float) else _not_json(value, where)
    if isinstance(value, list | tuple):
        items = enumerate(value)
    elif isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            key = next(key for key in value if not isinstance(key, str))
            return f"{where} has the key {shown_value(key)}; its keys are strings"
        items = value.items()
    else:
        return _not_json(value, where)
    for key, item in items:
        if (problem := json_problem(item, f"{where}[{key!r}]")) is not None:
            return problem
    return None


def _not_json(value: Any, where: str) -> str:
    return f"{where} is {shown_value(value)}, which JSON cannot write"


#: Markdown punctuation that formats inline text wherever it stands (code spans,
#: emphasis, links, table cells, headings' closing ``#``, strikethrough, math); escaped
#: by a backslash, which CommonMark, GitHub and Python-Markdown all honour
_MARKDOWN_SPECIALS = frozenset("\\`*[]#|~$")
#: an ``&`` that starts an entity reference (``&lt;``, ``&#60;``): shown as written only
#: when its ``&`` is written as ``&amp;``
_ENTITY_AFTER = re.compile(r"#?[0-9A-Za-z]+;")
#: line breaks: a table row and a heading are one line each
_LINE_BREAKS = re.compile("[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")


def markdown_text(text: str) -> str:
    """``text`` (a name, a label, a title: user text) for a Markdown table cell or
    heading, shown as written: user text is data, never markup. Without this, ``<mask>``
    vanishes as an HTML tag, `` `x` `` and ``*x*`` format, and a ``|`` ends the cell.

    A backslash escapes the Markdown punctuation (the backslash itself first); ``<`` and
    ``>`` become ``&lt;`` and ``&gt;`` (a backslash before them is not honoured
    everywhere); an ``&`` that would start an entity becomes ``&amp;``; a ``_`` between
    letters or digits (``integrated_gradients``) stays, as it cannot emphasise there;
    line breaks become spaces."""
    text = _LINE_BREAKS.sub(" ", text)
    return "".join(_markdown_char(text, i) for i in range(len(text)))


def _markdown_char(text: str, i: int) -> str:
    """The character at ``i`` of ``text`` as Markdown that shows it."""
    char = text[i]
    if char in _MARKDOWN_SPECIALS:
        return "\\" + char
    if char == "_":
        return "_" if _inert_underscore(text, i) else "\\_"
    if char in "<>":
        return "&lt;" if char == "<" else "&gt;"
    if char == "&" and _ENTITY_AFTER.match(text, i + 1):
        return "&amp;"
    return char


def _inert_underscore(text: str, i: int) -> bool:
    """Whether the run of ``_`` holding ``text[i]`` has a letter or digit on both sides:
    such a run opens and closes no emphasis (CommonMark's flanking rules)."""
    start, end = i, i
    while start > 0 and text[start - 1] == "_":
        start -= 1
    while end < len(text) - 1 and text[end + 1] == "_":
        end += 1
    before = text[start - 1] if start > 0 else " "
    after = text[end + 1] if end < len(text) - 1 else " "
    return before.isalnum() and after.isalnum()


def shown_value(value: Any, limit: int = 60) -> str:
    """``value`` named for a message: its type and a short repr, on one line."""
    text = " ".join(repr_text(value).split())
    return f"{type(value).__name__} {text[:limit] + '...' if len(text) > limit else text}"
