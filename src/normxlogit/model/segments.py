"""Segments: the parts of a text an answer may rest on (sentences of a passage, retrieved
documents, few-shot examples), as character spans, and what the model reads of them.

A segment is a group of token positions. Token methods' scores are reduced over each
group; segment methods remove whole segments from the text and read the model again.
Removal follows ContextCite (Cohen-Wang et al., 2024): within a part of the text, the
stretch from the first segment's start to the last one's end becomes the kept segments
joined by the separator written before each (the first kept one without it), so no
doubled spaces are left where a segment was; text around that stretch is kept as is.
Text between two segments that belongs to neither (more than whitespace) is no
separator: it stays, as text of no segment does anywhere, joined like a kept segment.
"""

from __future__ import annotations

import numbers
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..common.errors import InvalidInputError
from ..common.words import visible
from .inputs import TextInput

#: a sentence ends at ``.``, ``!`` or ``?`` (closing quotes and brackets with it) before
#: whitespace and a capital letter, a digit or an opening quote; a line break ends one too
_SENTENCE_END = re.compile(r"[.!?]+[\"'’”)\]]*(?=\s+[\"'“‘(\[]?[A-Z0-9])")


@dataclass(frozen=True)
class Segments:
    """A text's segments: ``(part, start, end)`` character spans, in reading order and
    not overlapping (``part`` is 0, or 1 for the second text of a pair)."""

    spans: tuple[tuple[int, int, int], ...]

    def __len__(self) -> int:
        return len(self.spans)

    def texts(self, text: TextInput) -> list[str]:
        parts = _parts(text)
        return [parts[part][start:end] for part, start, end in self.spans]

    def without(self, text: TextInput, keep: Sequence[bool], replacement: str = "") -> TextInput:
        """``text`` with the segments whose ``keep`` is False removed (see the module), or
        each replaced by ``replacement`` when it is not empty."""
        if len(keep) != len(self.spans):
            raise InvalidInputError(f"{len(keep)} keep flags for {len(self.spans)} segments")
        parts = list(_parts(text))
        for index in range(len(parts)):
            mine = [(s, e, k) for (p, s, e), k in zip(self.spans, keep, strict=True) if p == index]
            if mine:
                parts[index] = _joined(parts[index], mine, replacement)
        return parts[0] if isinstance(text, str) else (parts[0], parts[1])

    def token_segments(self, places: Sequence[tuple[int, int, int] | None]) -> list[int | None]:
        """For each token (its ``(part, start, end)`` place, see
        :meth:`~normxlogit.model.inputs.Encoder.token_places`) the segment its first
        visible character lies in; None for tokens of no segment (the prompt, special
        tokens, separators)."""
        out: list[int | None] = []
        for place in places:
            found = None
            if place is not None:
                part, start, _ = place
                for index, (p, s, e) in enumerate(self.spans):
                    if p == part and s <= start < e:
                        found = index
                        break
            out.append(found)
        return out


#: how a text's segments can be given: ``"sentences"``, the segments' texts (found in
#: order in the text), ``(start, end)`` character spans, ``(part, start, end)`` spans (the
#: only spans a pair takes: part 0 is its first text, 1 its second), or :class:`Segments`
SegmentSpec = (
    str | Sequence[str] | Sequence[tuple[int, int]] | Sequence[tuple[int, int, int]] | Segments
)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans of ``text`` (whitespace trimmed): a rule of punctuation and line
    breaks, not a parser; abbreviations followed by a capital ("Dr. Smith") split. Pass
    the segments yourself (e.g. from spaCy) where that matters."""
    spans: list[tuple[int, int]] = []
    for line in re.finditer(r"[^\n]+", text):
        start = line.start()
        for end in _SENTENCE_END.finditer(line.group()):
            _add_trimmed(spans, text, start, line.start() + end.end())
            start = line.start() + end.end()
        _add_trimmed(spans, text, start, line.end())
    return spans


def resolve_segments(text: TextInput, spec: Any, where: str = "segments") -> Segments:
    """``spec`` for ``text`` as :class:`Segments` (see :data:`SegmentSpec`); refused with
    a message naming the fix when it does not describe segments of this text."""
    parts, parted = _parts(text), True  # parted: spans shown as (part, start, end)
    if isinstance(spec, Segments):
        _check_spans(parts, spec.spans, where)
        return spec
    if isinstance(spec, str):
        if spec != "sentences" and where.endswith("]"):
            raise InvalidInputError(
                f"{where} is one string; with a list of texts give each text's segments as a "
                "list (segments=[['first part', 'second part'], ...]) or 'sentences'"
            )
        if spec != "sentences":
            raise InvalidInputError(
                f"{where}={spec!r}: give 'sentences', a list of the segments' texts (as they "
                "appear in the text, in order) or a list of (start, end) character spans"
            )
        found = tuple((p, s, e) for p, part in enumerate(parts) for s, e in split_sentences(part))
    elif hasattr(spec, "tolist") and not isinstance(spec, Sequence):  # a NumPy array of spans
        return resolve_segments(text, spec.tolist(), where)
    elif isinstance(spec, Sequence) and spec and all(isinstance(x, str) for x in spec):
        found = _find_in_order(parts, spec, where)
    elif isinstance(spec, Sequence) and spec and all(_is_span(x, 2) for x in spec):
        if len(parts) > 1:
            raise InvalidInputError(
                f"{where}: (start, end) spans are ambiguous for a pair of texts; give "
                "(part, start, end) spans (part 0 the first text, 1 the second) or the "
                "segments' texts"
            )
        found = tuple((0, int(s), int(e)) for s, e in spec)
        parted = False
    elif isinstance(spec, Sequence) and spec and all(_is_span(x, 3) for x in spec):
        found = tuple((int(p), int(s), int(e)) for p, s, e in spec)
    else:
        raise InvalidInputError(_not_segments(spec, where))
    if not found:
        raise InvalidInputError(f"{where}: the text has no segment (it is empty or blank)")
    _check_spans(parts, found, where, parted)
    return Segments(found)


def _parts(text: TextInput) -> tuple[str, ...]:
    return (text,) if isinstance(text, str) else tuple(text)


def _is_span(value: Any, size: int) -> bool:
    """A span of ``size`` whole numbers (NumPy's integers too: spans often come from
    arrays); a bool is no position."""
    return (
        isinstance(value, (tuple, list))
        and len(value) == size
        and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value)
    )


def _entry_kind(entry: Any) -> str | None:
    """What a segment list's entry is ("text", a span), None when it is none of these."""
    if isinstance(entry, str):
        return "text"
    if _is_span(entry, 2):
        return "(start, end) span"
    return "(part, start, end) span" if _is_span(entry, 3) else None


def _not_segments(spec: Any, where: str) -> str:
    """Why ``spec`` is not a segment list, naming its first entry that does not fit."""
    if isinstance(spec, Sequence) and spec:
        kinds = [_entry_kind(entry) for entry in spec]
        for index, (entry, kind) in enumerate(zip(spec, kinds, strict=True)):
            shown = f"{where}[{index}] = {entry!r}"
            numeric = isinstance(entry, (tuple, list)) and len(entry) in (2, 3)
            if kind is None and numeric and all(isinstance(v, numbers.Real) for v in entry):
                return f"{shown}: give whole-number character positions"
            if kind is None:
                return f"{shown}: give each segment as its text or a (start, end) span"
            if kind != kinds[0]:
                return (
                    f"{shown} is a {kind} but {where}[0] is a {kinds[0]}; give every segment "
                    "the same way"
                )
    empty = "an empty " if isinstance(spec, Sequence) else ""
    return (
        f"{where} must be 'sentences', a non-empty list of strings or of (start, end) "
        f"spans, got {empty}{type(spec).__name__}"
    )


def _find_in_order(
    parts: Sequence[str], wanted: Sequence[str], where: str
) -> tuple[tuple[int, int, int], ...]:
    found, part, cursor = [], 0, 0
    for index, piece in enumerate(wanted):
        if not visible(piece):
            raise InvalidInputError(
                f"{where}[{index}] is blank (whitespace or invisible characters only); a "
                "segment needs some text"
            )
        searched = (part, cursor)
        while part < len(parts) and (start := parts[part].find(piece, cursor)) < 0:
            part, cursor = part + 1, 0
        if part == len(parts):
            raise InvalidInputError(_misplaced(parts, wanted, found, index, searched, where))
        if part + 1 < len(parts) and (other := parts[part + 1].find(piece)) >= 0:
            raise InvalidInputError(
                f"{where}[{index}] ({piece[:40]!r}) is in both texts of the pair; give "
                f"(part, start, end) spans instead, e.g. ({part}, {start}, {start + len(piece)}) "
                f"for the first text, ({part + 1}, {other}, {other + len(piece)}) for the second"
            )
        found.append((part, start, start + len(piece)))
        cursor = start + len(piece)
    return tuple(found)


def _misplaced(
    parts: Sequence[str],
    wanted: Sequence[str],
    found: Sequence[tuple[int, int, int]],
    index: int,
    searched: tuple[int, int],
    where: str,
) -> str:
    """Why segment ``index`` was not found after the segments before it (``found``, searched
    from ``searched``, a (part, character) place): it repeats, overlaps or comes before one
    of them; its accents are encoded otherwise than the text's; or it is not in the text."""
    piece = wanted[index]
    shown = f"{where}[{index}] ({piece[:40]!r}) is not in the text"
    occurrences = [  # every place it starts (overlapping ones too) before the search began
        (p, start, start + len(piece))
        for p, text in enumerate(parts)
        for start in _starts(text, piece)
        if (p, start) < searched
    ]
    if occurrences:  # in the text, but not after the segments before it
        at = occurrences[-1]  # the nearest to where it was looked for
        said = f"{shown} after the segments before it:"
        fix = "; give the segments in reading order, not overlapping"
        for other, span in enumerate(found):
            if span == at:
                times = "once" if len(occurrences) == 1 else f"{len(occurrences)} times"
                return (
                    f"{said} it repeats {where}[{other}] (the text holds it {times}); give "
                    "each part of the text once, in reading order"
                )
        for other, span in enumerate(found):
            if span[0] == at[0] and span[1] < at[2] and at[1] < span[2]:
                return f"{said} it overlaps {where}[{other}] there{fix}"
        later = next((o for o, span in enumerate(found) if span[:2] > at[:2]), len(found) - 1)
        return f"{said} it comes before {where}[{later}] there{fix}"
    composed = unicodedata.normalize("NFC", piece)
    if any(composed in unicodedata.normalize("NFC", text) for text in parts):
        return (
            f"{shown} as written: it differs from the text in how its "
            "accents are encoded (one character or a letter and a combining mark); write both "
            "alike, e.g. unicodedata.normalize('NFC', ...)"
        )
    return (
        f"{shown}{' after the segments before it' if index else ''}; "
        "give the segments in the order they appear, copied exactly"
    )


def _starts(text: str, piece: str) -> list[int]:
    """Where ``piece`` starts in ``text``, overlapping places too."""
    starts, at = [], text.find(piece)
    while at >= 0:
        starts.append(at)
        at = text.find(piece, at + 1)
    return starts


def _check_spans(
    parts: Sequence[str],
    spans: Sequence[tuple[int, int, int]],
    where: str,
    parted: bool = True,
) -> None:
    """Refuse a span out of its text, holding only whitespace, or out of reading order,
    naming it as it was given: ``(part, start, end)``, or ``(start, end)`` where the user
    gave those (``parted`` False)."""
    previous = (-1, 0)
    for index, (part, start, end) in enumerate(spans):
        if not 0 <= part < len(parts):
            texts = "0 (the first text) or 1 (the second)" if len(parts) > 1 else "0 (one text)"
            raise InvalidInputError(f"{where}[{index}] names part {part}; a part is {texts}")
        shown = f"{where}[{index}] = " + (
            f"({part}, {start}, {end})" if parted else f"({start}, {end})"
        )
        if not 0 <= start < end <= len(parts[part]):
            raise InvalidInputError(
                f"{shown} is not a non-empty span of {_part_name(parts, part)} "
                f"({len(parts[part])} characters)"
            )
        if not visible(parts[part][start:end]):
            raise InvalidInputError(
                f"{shown} is only whitespace or invisible characters; a segment needs some text"
            )
        if (part, start) < previous:
            raise InvalidInputError(
                f"{where}[{index}] overlaps or comes before the segment before it; give "
                "segments in reading order, not overlapping"
            )
        previous = (part, end)


def _part_name(parts: Sequence[str], part: int) -> str:
    """The text a span lies in, as messages name it: the text, or one of a pair's two."""
    if len(parts) == 1:
        return "the text"
    return f"the {'first' if part == 0 else 'second'} text of the pair"


def _add_trimmed(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start and visible(text[start:end]):  # a line of invisible characters: none
        spans.append((start, end))


def _joined(text: str, mine: Sequence[tuple[int, int, bool]], replacement: str = "") -> str:
    """``text`` with its segment stretch rebuilt from the kept segments (and the others'
    ``replacement`` where it is not empty) and the text of no segment between them, each
    piece after the whitespace written before it (the first piece without it)."""
    first, last = mine[0][0], mine[-1][1]
    pieces: list[tuple[str, str]] = []  # (whitespace before it, the piece)
    previous_end = first
    for start, end, kept in mine:
        gap = text[previous_end:start]
        between = gap.strip()
        if between:  # text of no segment: kept, with the whitespace around it
            lead = gap[: len(gap) - len(gap.lstrip())]
            pieces.append((lead, between))
            gap = gap[len(gap.rstrip()) :]
        piece = text[start:end] if kept else replacement
        if piece:
            pieces.append((gap, piece))
        previous_end = end
    joined = "".join((space if n else "") + piece for n, (space, piece) in enumerate(pieces))
    return text[:first] + joined + text[last:]
