"""Reading files of texts and labels: a user's own file, and the building blocks (tables,
JSON lines, checked texts) of the readers of the named data sets.

GLUE files are tab separated and must be read with ``csv.QUOTE_NONE``: sentences hold
quote characters that are not CSV quoting.

Every reader checks what it reads and names the file and line of the first problem: a
file that is not UTF-8, a line of JSON that does not parse, a row with a missing or extra
cell, a text that is null, empty or not a string. Nothing is guessed: a missing cell never
becomes the label ``"None"``, and a plain-text file with blank lines between its texts is
refused rather than renumbered.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import re
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.columns import LABEL_COLUMNS, PAIR_COLUMNS, TEXT_COLUMNS
from ..common.counts import integer_text, whole_number
from ..common.errors import InvalidFileError, InvalidInputError
from ..common.input_paths import check_input_file, given_path, json_problem, read_text
from ..common.outputs import short_value
from ..common.words import visible

DATA_ENV = "NORMXLOGIT_DATA"


@dataclass(frozen=True)
class Example:
    """One input (a text or a text pair) with its gold label, if known.

    ``row`` is the example's 0-based row in its source file (header excluded; for JSON
    lines, blank lines are not rows), so that a stored result can be traced back to the
    file. It is provenance, not content: two examples with the same text and label are
    equal whatever their rows.
    """

    text: str | tuple[str, str]
    label: int | float | str | None = None
    row: int | None = field(default=None, compare=False)
    #: the words a human marks as the evidence for the label: indices into the text's
    #: whitespace-separated words (evidence alignment; None: not given)
    evidence: tuple[int, ...] | None = None
    #: a contrasting target (a minimal pair's ungrammatical word: LogAt of the foil)
    foil: str | None = None
    #: the 1-based line of the source file it was read from, for messages that name it
    line: int | None = field(default=None, compare=False)
    #: the parts of the text an answer may rest on (context attribution): each as it
    #: appears in the text, in order (a pair's: in its second text); None: not given
    segments: tuple[str, ...] | None = None
    #: the indices of the segments a human marks as the evidence (among ``segments``)
    evidence_segments: tuple[int, ...] | None = None
    #: the column its ``evidence`` was read from (``evidence`` or ``evidence_mask``), for
    #: messages that name the file's own column; None: no evidence
    evidence_column: str | None = field(default=None, compare=False)

    @property
    def where(self) -> str:
        """``line N`` (or ``row N``) of its file, for a message that points at it."""
        if self.line is not None:
            return f"line {self.line}"
        return f"row {self.row}" if self.row is not None else "an example"

    @property
    def segment_spec(self) -> list | None:
        """Its segments as ``explain(segments=...)`` takes them for this text (see
        :func:`segment_spec`); None where it has none."""
        return None if self.segments is None else segment_spec(self.text, self.segments)


def segment_spec(text: str | tuple[str, str], segments: Sequence[str]) -> list:
    """A text's own segments as ``explain`` takes them: in a pair (question, passage),
    ``(1, start, end)`` spans of the passage whenever they are all there in order (the
    data's segments are the passage's, and a question that repeats a passage's words is
    never one of them); else the strings themselves."""
    if isinstance(text, str):
        return list(segments)
    spans, cursor = [], 0
    for piece in segments:
        start = text[1].find(piece, cursor)
        if not piece or start < 0:
            return list(segments)
        spans.append((1, start, start + len(piece)))
        cursor = start + len(piece)
    return spans


def data_root() -> Path:
    """Where the shared data sets live: $NORMXLOGIT_DATA, else ``../shared/data``."""
    if env := os.environ.get(DATA_ENV):
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent.parent / "shared" / "data"
        if candidate.is_dir():
            return candidate
    return Path.cwd().parent / "shared" / "data"


def _require(path: Path) -> Path:
    """``path`` if it is a readable file; else what it is (missing, a folder, a device: the
    words every input path gets), and the fix: for a missing file of the shared data sets,
    how to point at them; else what to pass."""
    if not path.exists() and _is_shared(path):
        fix = (
            f"set ${DATA_ENV} to the folder that holds sst2/, stsb/, ... (the shared data), "
            "or pass the path of your copy"
        )
    else:
        fix = "pass the path of a data file (.tsv, .csv, .jsonl or .txt)"
    return check_input_file(path, "data file", fix, noun="a data file")


def _is_shared(path: Path) -> bool:
    """Whether ``path`` lies in the shared data folder (:func:`data_root`)."""
    return path.resolve().is_relative_to(data_root().resolve())


#: a line end as editors write them: LF, CRLF or a lone CR (an old Mac's file); never a
#: form feed, U+0085, U+2028 or U+2029, which ``str.splitlines`` also splits at
LINE_END = re.compile(r"\r\n?|\n")


def split_lines(content: str) -> list[str]:
    """``content``'s lines, split at LF, CRLF and a lone CR only (see :data:`LINE_END`): a
    form feed or U+2028 inside a line keeps it one line, so line numbers are the editor's."""
    return LINE_END.split(content)


def text_lines(
    content: str, source: str, limit: int | None = None, data_files: bool = True
) -> list[str]:
    """One text per line (the first ``limit``). Lines end as any editor ends them (LF,
    CRLF, or a lone CR: an old Mac's file is no single text). Blank lines at the end are
    dropped; a blank line between texts is refused, since results are numbered by line,
    and so is a line of invisible characters only (no token to explain). ``data_files``:
    the reader also takes a .jsonl/.tsv data file, which the refusal then suggests."""
    lines = split_lines(content)
    while lines and not lines[-1].strip():
        lines.pop()
    lines = lines[:limit]
    if not lines:
        raise InvalidFileError(f"{source} holds no texts; put one text per line")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise InvalidFileError(
                f"{source}, line {number} is blank; each line is one text and the results "
                "follow the lines, so remove the blank lines (e.g. grep -v '^[[:space:]]*$')"
                + (", or use a .jsonl/.tsv file" if data_files else "")
            )
        if not visible(line):
            raise InvalidFileError(
                f"{source}, line {number} holds only invisible characters (zero-width or "
                "control characters), no text to explain; remove it or write its text"
            )
    return lines


def table(path: Path, **options: Any) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) for each row of a delimited file with a header.

    A row with fewer cells than the header (a missing tab or comma) or more (a tab inside
    a text of a GLUE file) is refused with its line number.
    """
    reader = csv.DictReader(io.StringIO(read_text(_require(path)), newline=""), **options)
    try:
        header = list(reader.fieldnames or [])
        twice = next((name for name in header if header.count(name) > 1), None)
        if twice is not None:
            raise InvalidFileError(
                f"{path}, line 1: the header names column {twice!r} {header.count(twice)} "
                "times; rename or remove all but one (a row would keep only the last)"
            )
        for row in reader:
            line = reader.line_num
            header = list(reader.fieldnames or [])
            columns = f"{len(header)} columns ({', '.join(header)})"
            if None in row:
                raise InvalidFileError(
                    f"{path}, line {line}: {_cells(len(header) + len(row[None]))} but the header "
                    f"has {columns}; a delimiter inside a text splits it: remove it, or quote "
                    "the text (.csv)"
                )
            missing = [key for key, value in row.items() if value is None]
            if missing:
                raise InvalidFileError(
                    f"{path}, line {line}: no value in column {missing[0]!r}: the row has "
                    f"{_cells(len(header) - len(missing))} but the header has {columns}; add "
                    "the missing cell (check for a missing tab or comma)"
                )
            yield line, row
    except csv.Error as error:
        raise InvalidFileError(f"{path}, line {reader.line_num}: {error}") from None


def _cells(count: int) -> str:
    return f"{count} cell{'s' if count != 1 else ''}"


def read_tsv(path: str | Path) -> Iterator[dict[str, str]]:
    """Rows of a GLUE TSV as dicts keyed by the header (``path``: a str or a Path)."""
    for _, row in table(given_path(path), delimiter="\t", quoting=csv.QUOTE_NONE):
        yield row


def read_examples(path: str | Path, limit: int | None = None) -> list[Example]:
    """Texts (and gold labels) from a user's file, whatever its usual shape.

    ``.tsv`` / ``.csv`` with a header, or ``.jsonl`` (``.ndjson``): the text is the first
    of the columns ``sentence``, ``text``, ``review``, ``content`` (pairs:
    ``sentence1``/``sentence2``, ``premise``/``hypothesis``, ``question``/``sentence``),
    the label ``label``, ``score``, ``gold`` or ``classification`` if present; each
    example's ``row`` is its 0-based row (header excluded). Anything else: one text per line (blank
    lines at the end are ignored; a blank line between texts is refused, so that results
    stay numbered like the file's lines).

    Every row must have a text that is a non-empty string; labels are given on every row
    or on none. Problems are raised as :class:`~normxlogit.common.errors.InvalidFileError` naming
    the file and line.
    """
    from .sources import check_limit  # sources imports this module

    path = _require(given_path(path))
    limit = check_limit(limit)
    check_data_suffix(path)
    suffix = data_format(path)
    if suffix is None:
        return _lines(path, limit)
    rows = list(itertools.islice(records(path, suffix), limit))
    if not rows:
        raise InvalidFileError(f"{path} holds no rows")
    header = suffix != ".jsonl"  # a table's columns are named on its line 1
    examples = [_example(row, path, line, index, header) for index, (line, row) in enumerate(rows)]
    labelled = [line for (line, _), e in zip(rows, examples, strict=True) if e.label is not None]
    if labelled and len(labelled) < len(examples):
        line = next(line for (line, _), e in zip(rows, examples, strict=True) if e.label is None)
        raise InvalidFileError(
            f"{path}, line {line}: no label, while line {labelled[0]} has one; give every "
            f"row a label (column {' / '.join(LABEL_COLUMNS)}), or none"
        )
    return examples


#: the data files read by column, by suffix (any case): ``.ndjson`` is the other common
#: name of JSON lines, so it is read as them, never as one text per (JSON) line
DATA_FORMATS = {".tsv": ".tsv", ".csv": ".csv", ".jsonl": ".jsonl", ".ndjson": ".jsonl"}


def data_format(path: str | Path) -> str | None:
    """How a data file is read by its suffix: ``.tsv``, ``.csv`` or ``.jsonl`` (also for
    ``.ndjson``); None for a file of one text per line."""
    return DATA_FORMATS.get(Path(path).suffix.lower())


#: suffixes of files that are not data, read as one text per line they would give
#: nonsense texts (a JSON document's lines) or no text at all (a binary file)
NOT_DATA = {
    ".json": "a .json file is one JSON document, not one text per line; give one JSON "
    "object per line in a .jsonl file (a JSON array converts with: jq -c '.[]' {shell} > "
    "{jsonl})",
    ".sqlite": "{name} is a results store (SQLite), not a data file; pass the data file "
    "(.tsv, .csv, .jsonl, .txt)",
    ".parquet": "Parquet is not read as data; write it as .jsonl or .csv (pandas: "
    "read_parquet, then to_json(lines=True, orient='records'))",
}
NOT_DATA |= {".db": NOT_DATA[".sqlite"], ".sqlite3": NOT_DATA[".sqlite"]}
#: what a file of texts, one per line (``explain --input``), refuses besides
JSON_LINES = (
    "its lines are JSON, not texts, and each would be explained as written; give a text "
    "file with one text per line (jq -r '.text' {shell} > {txt})"
)
#: ... and a .json file: one document, an array of objects (``.[]`` reaches them)
JSON_DOCUMENT = (
    "a .json file is one JSON document, not one text per line; give a text file with one "
    "text per line (for an array of objects: jq -r '.[].text' {shell} > {txt})"
)
#: ... and a data file of columns, whose header and label cells would be texts too
TABLE_LINES = (
    "a {suffix} file is a data file (a header, then columns), and each line would be "
    "explained as written, header and label cells included; give a text file with one text "
    "per line ({extract})"
)
#: where a data file given as texts is read as data
EVALUATE_IT = ", or score the data file with normxlogit evaluate {shell}"
#: what a file of texts, one per line, refuses by its suffix
NOT_LINES = {
    ".json": JSON_DOCUMENT,
    ".jsonl": JSON_LINES + EVALUATE_IT,
    ".ndjson": JSON_LINES + EVALUATE_IT,
    ".tsv": TABLE_LINES.replace(
        "{extract}", "e.g. tail -n +2 {shell} | cut -f1 > {txt}, if the text is column 1"
    )
    + EVALUATE_IT,
    ".csv": TABLE_LINES.replace(
        "{extract}", "its text column, e.g. with Python's csv module: quoted cells defeat cut"
    )
    + EVALUATE_IT,
}


def check_data_suffix(path: Path, flag: str = "", lines: bool = False) -> None:
    """Refuse, before any work, a file whose suffix says it is no data file (see
    :data:`NOT_DATA`); ``flag`` leads the message. ``lines``: the file is read as one text
    per line whatever its suffix, so a data file (.json, .jsonl, .tsv, .csv) is refused too
    (see :data:`NOT_LINES`)."""
    suffix = Path(path).suffix.lower()
    reason = (NOT_LINES if lines else {}).get(suffix) or NOT_DATA.get(suffix)
    if reason is not None:
        lead = f"{flag} {path}" if flag else str(path)
        path = Path(path)
        raise InvalidFileError(f"{lead}: " + reason.format(**_advice_names(path, suffix)))


def _advice_names(path: Path, suffix: str) -> dict[str, str]:
    """The names a refusal's advice fills in: the commands name the file as given (its
    folder kept, quoted for the shell where it must be) so they run as printed."""
    return {
        "name": path.name,
        "suffix": suffix,
        "shell": shlex.quote(str(path)),
        "txt": shlex.quote(str(path.with_suffix(".txt"))),
        "jsonl": shlex.quote(str(path.with_suffix(".jsonl"))),
    }


def _lines(path: Path, limit: int | None) -> list[Example]:
    """One text per line (see :func:`text_lines`)."""
    lines = text_lines(read_text(path), str(path), limit)
    return [Example(line, row=index, line=index + 1) for index, line in enumerate(lines)]


def records(path: Path, suffix: str) -> Iterator[tuple[int, dict]]:
    """(line number, row) of a .tsv (GLUE quoting), .csv or .jsonl file (``suffix``: as
    :func:`data_format` gives it)."""
    if suffix == ".tsv":
        yield from table(path, delimiter="\t", quoting=csv.QUOTE_NONE)
    elif suffix == ".csv":
        yield from table(path)
    else:
        yield from _json_lines(path)


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each object of a JSON-lines file (``path``: a str or a
    Path)."""
    yield from _json_lines(_require(given_path(path)))


def json_lines(content: str, source: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each line of ``content``, refusing a line that is not a
    JSON object; blank lines are skipped (line numbers still count). Lines end in LF,
    CRLF or a lone CR, as in :func:`text_lines`."""
    for number, line in enumerate(split_lines(content), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line, object_pairs_hook=_unique_keys, parse_int=whole_number)
        except InvalidInputError as error:  # a number past the digits read
            raise InvalidFileError(f"{source}, line {number}: {error}") from None
        except json.JSONDecodeError as error:
            raise InvalidFileError(
                f"{source}, line {number}: not valid JSON ({json_problem(error, line=False)}); "
                'each line of a .jsonl file must be one JSON object, e.g. {"text": "...", '
                '"label": 1}'
            ) from None
        except _RepeatedKey as repeated:  # json keeps the last silently: which was meant?
            raise InvalidFileError(
                f"{source}, line {number}: key {json.dumps(repeated.key, ensure_ascii=False)} "
                "is given twice in one object, and only one value can be read; keep the one "
                "you mean"
            ) from None
        if not isinstance(value, dict):
            raise InvalidFileError(
                f"{source}, line {number}: {describe(value)} where a JSON object belongs; each "
                'line must be an object such as {"text": "...", "label": 1}'
            )
        yield number, value


class _RepeatedKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object from ``pairs``, refusing a key given twice (json keeps the last)."""
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise _RepeatedKey(key)
        value[key] = item
    return value


def _json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    yield from json_lines(read_text(path), str(path))


def describe(value: Any) -> str:
    """What a JSON value is, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, list):
        return f"a list ({json.dumps(value)[:40]})"
    if isinstance(value, dict):
        return "an object"
    return f"the string {value!r}"


def checked_text(row: dict, key: str, path: Path | str, line: int) -> str:
    """``row[key]`` stripped, or a refusal if it is not a non-empty string."""
    value = row[key]
    if not isinstance(value, str):
        raise InvalidFileError(
            f"{path}, line {line}: column {key!r} is {describe(value)}; a text must be a string "
            "(write it in quotes), or remove the row"
        )
    if not value.strip():
        raise InvalidFileError(
            f"{path}, line {line}: column {key!r} is empty; every row needs a text (remove "
            "the row or fill it in)"
        )
    if not visible(value):
        raise InvalidFileError(
            f"{path}, line {line}: column {key!r} holds only invisible characters (zero-width "
            "or control characters), no text to explain; remove the row or fill it in"
        )
    _refuse_surrogate_cell(value, key, path, line)
    return value.strip()


def _refuse_surrogate_cell(value: str, key: str, path: Path | str, line: int) -> None:
    """A cell holding a lone surrogate (a JSON ``"\\ud800"`` escape: valid JSON and UTF-8,
    but no character) is refused with its file and line before the model loads: no
    tokenizer encodes it, and it ended in a traceback."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidFileError(
            f"{path}, line {line}: column {key!r} holds U+{ord(value[error.start]):04X} at "
            f"character {error.start}, a lone surrogate (a JSON \\u escape of half a UTF-16 "
            "pair), which is no character; fix the escape or write the character itself"
        ) from None


def miscased(columns: Iterable[Any], known: Iterable[str]) -> str:
    """ "; column names are lower-case: rename 'Label' to 'label'" for the ``columns`` that
    are ``known`` names in another case (a file's columns are matched as written), else ""."""
    wanted = set(known)
    names = [str(c) for c in columns if str(c) not in wanted]
    found = [c for c in names if c == c.strip() and c.lower() in wanted]
    # " label": cells are stripped, a header's names are matched as written
    blank = [c for c in names if c != c.strip() and c.strip().lower() in wanted]
    said = ""
    if found:
        renames = ", ".join(f"{c!r} to {c.lower()!r}" for c in found)
        said += f"; column names are lower-case: rename {renames}"
    if blank:
        renames = ", ".join(f"{c!r} to {c.strip().lower()!r}" for c in blank)
        said += f"; column names have no blanks around them: rename {renames}"
    return said


def label_column_case(path: Path) -> str:
    """:func:`miscased` for a data file's label columns (its first row's), else ""."""
    suffix = data_format(path)
    if not path.is_file() or suffix is None:
        return ""
    try:
        first = next(records(path, suffix), None)
    except InvalidFileError:
        return ""
    return miscased(first[1], LABEL_COLUMNS) if first is not None else ""


def _example(row: dict, path: Path, line: int, index: int, header: bool = False) -> Example:
    label_key = next((k for k in LABEL_COLUMNS if k in row), None)
    label = _label(row[label_key], path, line, label_key) if label_key is not None else None
    for first, second in PAIR_COLUMNS:
        if first in row and second in row:
            pair = (checked_text(row, first, path, line), checked_text(row, second, path, line))
            if any(key in row for key in EVIDENCE_COLUMNS):
                raise InvalidFileError(
                    f"{path}, line {line}: evidence is read for single texts; a text pair's "
                    "words have no one numbering"
                )
            segments = _segments(
                row,
                pair[1],
                path,
                line,
                f"its {second} (a pair row's segments are parts of its second text)",
            )
            return Example(
                pair,
                label,
                index,
                line=line,
                segments=segments,
                evidence_segments=_evidence_segments(row, segments, path, line),
            )
    text_key = next((k for k in TEXT_COLUMNS if k in row), None)
    if text_key is None:
        where = "line 1 (the header)" if header else f"line {line}"
        pairs = [name for pair in PAIR_COLUMNS for name in pair]
        raise InvalidFileError(
            f"{path}, {where}: no text column; name it one of {', '.join(TEXT_COLUMNS)} "
            f"(or a pair such as sentence1/sentence2); found {', '.join(repr(str(c)) for c in row)}"
            + miscased(row, (*TEXT_COLUMNS, *pairs))
        )
    text = checked_text(row, text_key, path, line)
    segments = _segments(row, text, path, line)
    return Example(
        text,
        label,
        index,
        evidence=_evidence(row, text, path, line),
        line=line,
        segments=segments,
        evidence_segments=_evidence_segments(row, segments, path, line),
        evidence_column=next((k for k in EVIDENCE_COLUMNS if row.get(k) not in (None, "")), None),
    )


def _segments(
    row: dict, text: str, path: Path, line: int, searched: str = "the text"
) -> tuple[str, ...] | None:
    """The row's ``segments`` (context attribution): a JSON list of strings (in a .tsv or
    .csv cell, the list written out), each found in the text (a pair's second text) after
    the one before it; None where the row gives none."""
    raw = row.get("segments")
    if raw is None or raw == "":
        return None
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw, parse_int=whole_number)
        except json.JSONDecodeError:
            value = None
    if isinstance(value, list) and not value:
        raise InvalidFileError(
            f"{path}, line {line}: column 'segments' is an empty list ([]), and a text has at "
            'least one segment; give the text\'s parts, e.g. ["The first sentence.", "The '
            'second one."]'
        )
    if not isinstance(value, list):
        raise InvalidFileError(
            f"{path}, line {line}: column 'segments' is {describe(raw)}; give a JSON list of "
            'the text\'s parts, e.g. ["The first sentence.", "The second one."]'
        )
    start = 0
    for number, segment in enumerate(value):
        if not isinstance(segment, str) or not visible(segment):
            raise InvalidFileError(
                f"{path}, line {line}: segment {number} is {describe(segment)}; each segment "
                "is a string with some visible text"
            )
        found = text.find(segment.strip(), start)
        if found < 0:
            raise InvalidFileError(
                f"{path}, line {line}: segment {number} ({segment.strip()[:40]!r}) is not in "
                f"{searched}{' after the segment before it' if number else ''}; give the "
                "segments as written there, in order"
            )
        start = found + len(segment.strip())
    return tuple(segment.strip() for segment in value)


def _evidence_segments(
    row: dict, segments: tuple[str, ...] | None, path: Path, line: int
) -> tuple[int, ...] | None:
    """The row's ``evidence_segments``: indices among its segments (``"0 2"``, ``"0,2"``
    or a JSON list), each once; None where the row gives none."""
    raw = row.get("evidence_segments")
    if raw is None or raw == "":
        return None
    if segments is None:
        raise InvalidFileError(
            f"{path}, line {line}: evidence_segments numbers the row's segments, and it has "
            "none; add a segments column (a JSON list of the text's parts)"
        )
    values = _integers(raw, path, line, "evidence_segments")
    wrong = [v for v in values if not 0 <= v < len(segments)]
    if wrong:
        raise InvalidFileError(
            f"{path}, line {line}: evidence segment {wrong[0]} is out of range; the row has "
            f"{len(segments)} segments, numbered from 0"
        )
    if len(set(values)) != len(values):
        raise InvalidFileError(
            f"{path}, line {line}: evidence_segments repeats an index ({raw}); give segment "
            "indices, e.g. [0, 2], not a 0/1 mask"
        )
    return tuple(sorted(values))


#: a column of evidence word indices (``"0 3"``, ``"0,3"`` or a JSON list), or one 0/1
#: per word of the text
EVIDENCE_COLUMNS = ("evidence", "evidence_mask")


def _evidence(row: dict, text: str, path: Path, line: int) -> tuple[int, ...] | None:
    """The row's evidence as word indices (from either column), checked against the
    text's whitespace-separated words; None where the row gives none."""
    given = [key for key in EVIDENCE_COLUMNS if key in row and row[key] not in (None, "")]
    if not given:
        return None
    if len(given) > 1:
        raise InvalidFileError(
            f"{path}, line {line}: give evidence in one column, evidence (word indices) or "
            "evidence_mask (one 0/1 per word), not both"
        )
    key = given[0]
    values = _integers(row[key], path, line, key)
    words = len(text.split())
    if key == "evidence_mask":
        return _mask_words(values, words, path, line)
    return _word_indices(values, words, path, line)


def _mask_words(values: list[int], words: int, path: Path, line: int) -> tuple[int, ...]:
    """An ``evidence_mask`` cell as word indices: one 0 or 1 per word, the bad value named
    (a 2 is not a miscount)."""
    fix = f"give one 0 or 1 per whitespace-separated word of the text ({words} words)"
    wrong = next((v for v in values if v not in (0, 1)), None)
    if wrong is not None:
        raise InvalidFileError(
            f"{path}, line {line}: evidence_mask value {short_value(wrong)} is not 0 or 1; "
            f"a mask holds only 0s and 1s; {fix}"
        )
    if len(values) != words:
        raise InvalidFileError(
            f"{path}, line {line}: evidence_mask has {len(values)} values; {fix}"
        )
    return tuple(i for i, v in enumerate(values) if v)


def _word_indices(values: list[int], words: int, path: Path, line: int) -> tuple[int, ...]:
    """An ``evidence`` cell: word indices in range, each once, so that a 0/1 mask written
    in this column is refused rather than read as the words {0, 1}."""
    wrong = [v for v in values if not 0 <= v < words]
    if wrong:
        raise InvalidFileError(
            f"{path}, line {line}: evidence word index {short_value(wrong[0])} is out of range; "
            f"the text has {words} whitespace-separated words, numbered from 0"
        )
    repeated = next((v for v in values if values.count(v) > 1), None)
    if repeated is None:
        return tuple(sorted(values))
    if set(values) <= {0, 1}:
        raise InvalidFileError(
            f"{path}, line {line}: evidence {' '.join(map(str, values))} looks like a 0/1 "
            "mask; put a mask (one 0 or 1 per word) in an evidence_mask column, or give "
            "word indices, each once, e.g. 0 2, in evidence"
        )
    raise InvalidFileError(
        f"{path}, line {line}: evidence repeats word {repeated}; give each word index once, "
        "e.g. 0 2"
    )


#: what each evidence column holds, said where a cell holds something else: a mask's
#: example is a mask (index syntax there would then be refused as "3 is not 0 or 1")
_INTEGER_ADVICE = {
    "evidence_mask": 'give one 0 or 1 per word, e.g. "0 1 1 0" or [0, 1, 1, 0]',
    "evidence": 'give whole word indices, numbered from 0, e.g. "0 3" or [0, 3]',
    "evidence_segments": 'give whole segment indices, numbered from 0, e.g. "0 2" or [0, 2]',
}


def _integers(raw: Any, path: Path, line: int, key: str) -> list[int]:
    """Whole numbers from a JSON list or a cell such as ``"0 3"`` / ``"0,3"``; a mask's
    booleans (JSON ``true``/``false``, as pandas and json.dumps write them) are its 1s and
    0s."""
    cell = str(raw).strip()
    if not isinstance(raw, list) and cell.startswith("[") and cell.endswith("]"):
        cell = cell[1:-1]  # a JSON list written into a .tsv / .csv cell: "[0, 3]"
    items = raw if isinstance(raw, list) else cell.replace(",", " ").split()
    read = _mask_item if key == "evidence_mask" else _whole
    values = [read(item) for item in items]
    if None in values:
        advice = _INTEGER_ADVICE.get(key, 'give whole numbers, e.g. "0 3" or [0, 3]')
        if not isinstance(raw, list | str):  # an object, or one decimal: no list to place in
            raise InvalidFileError(
                f"{path}, line {line}: column {key!r} is {describe(raw)}; {advice}"
            )
        place = values.index(None)  # the stray value named where it is (a list cut to 40
        # characters hid the 0.5 at the end of a 40-word mask)
        raise InvalidFileError(
            f"{path}, line {line}: {key}[{place}] is {_item_shown(items[place], raw)}, not "
            f"{_ITEM_KIND.get(key, 'a whole number')}; {advice}"
        )
    return values  # type: ignore[return-value]


#: what each value of an evidence column is, said where one is something else
_ITEM_KIND = {
    "evidence_mask": "0 or 1",
    "evidence": "a whole word index",
    "evidence_segments": "a whole segment index",
}


def _item_shown(item: Any, raw: Any) -> str:
    """One value of an evidence cell for a message: a cell's text as written ("0.5"), a
    JSON list's string quoted, a list or object by its kind; cut past 40 characters."""
    if isinstance(item, str):
        shown = repr(item) if isinstance(raw, list) else item
    elif isinstance(item, bool | int | float):
        shown = json.dumps(item)
    else:
        shown = describe(item)
    return shown if len(shown) <= 40 else f"{shown[:39]}..."


#: a mask's values written as decimals (pandas writes a mask column with an empty cell as
#: floats, "1.0"; others write "1.", "1.00")
_DECIMAL_MASK = re.compile(r"([01])\.0*")


def _mask_item(item: Any) -> int | None:
    """One mask value: a whole number (checked as 0 or 1 by the mask), a boolean, JSON's
    or a cell's ``true``/``false``, or 0.0 / 1.0 (pandas writes a mask column with an
    empty cell as floats); None for anything else."""
    if isinstance(item, bool):
        return int(item)
    if isinstance(item, float) and item in (0.0, 1.0):
        return int(item)
    if isinstance(item, str) and item.strip().lower() in ("true", "false"):
        return int(item.strip().lower() == "true")
    if isinstance(item, str) and (decimal := _DECIMAL_MASK.fullmatch(item.strip())):
        return int(decimal.group(1))
    return _whole(item)


def _whole(item: Any) -> int | None:
    """A JSON integer, or a cell's ASCII digits ("3"; not "0_3", which int() reads as 3,
    nor "²"); None for anything else."""
    if isinstance(item, int) and not isinstance(item, bool):
        return item
    return integer_text(item) if isinstance(item, str) else None


def _label(raw, path: Path, line: int, key: str) -> int | float | str | None:
    """Numbers stay numbers (label indices or regression scores); names stay names.

    An empty cell or a JSON null is no label (``None``).
    """
    if raw is None:
        return None
    if isinstance(raw, (int, float)):  # JSON numbers (and booleans, which are ints)
        return raw
    if not isinstance(raw, str):
        raise InvalidFileError(
            f"{path}, line {line}: column {key!r} is {describe(raw)}; a label is a name or a number"
        )
    text = raw.strip()
    if not text:
        return None
    if "_" in text or not text.isascii():  # int("0_1") is 1 and int("٣") 3: names here
        return text
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
