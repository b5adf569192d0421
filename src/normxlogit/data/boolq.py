"""ERASER BoolQ: yes/no questions about a Wikipedia passage, with human evidence spans.

In ERASER each row names a whole Wikipedia document (median about 2,200 words) and marks
the original BoolQ passage inside it as evidence (``start_token:end_token`` of the
document's whitespace tokens). A model is asked about the passage, not the whole article,
so the passage is by default the evidence text (``passage="evidence"``; several spans of
one row are joined in document order, overlaps once); ``passage="document"`` gives the
whole document instead (read from the documents, and each evidence span checked against
it). ``passage="window"`` is for plausibility: the evidence with ``context`` words of
its document on each side (the first document of a row), and each example's ``evidence``
marks the words a person marked (indices through the question's words, then the
passage's), so that a method can be asked whether it singles the human rationale out of
its surroundings. ``passage="sentences"`` is for context attribution: the document's
sentences (ERASER's documents hold one sentence per line) that hold the evidence, with
``context`` sentences on each side, joined by single spaces; each example's ``segments``
are those sentences and its ``evidence_segments`` the indices of the evidence sentences
among them (ERASER's ``start_sentence`` to ``end_sentence``, inclusive; found here from
the evidence's first and last tokens, which give the same sentences on every row of the
staged val and test), and its ``evidence`` the evidence words, as ``"window"`` marks them.
The window holds at most ``max_words`` words (context sentences are added nearest first
while they fit; an evidence longer than that keeps its first sentences, at least one), so
a passage stays a few hundred tokens.

Files: ``val.jsonl``, ``test.jsonl`` and ``test_original.jsonl`` (staged as
``test_original_2817.jsonl``), with the documents in an ERASER ``docs/`` folder (one file
per docid) or a ``docs.jsonl``-style file of ``{"docid", "document"}`` lines (gzipped or
not; staged as ``docs_val_test.jsonl.gz``).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..common.errors import InvalidFileError, InvalidInputError, InvalidOptionError
from ..common.input_paths import decode_utf8, given_path, read_text
from .files import (
    DATA_ENV,
    Example,
    checked_text,
    describe,
    json_lines,
    read_jsonl,
)
from .sources import check_limit, check_split, label_id, shared_file, take

BOOLQ_LABELS = ("false", "true")
BOOLQ_SPLITS = ("val", "test", "test_original")
PASSAGES = ("evidence", "document", "window", "sentences")
#: passage="window": document words kept on each side of the evidence by default
DEFAULT_CONTEXT = 50
#: passage="sentences": document sentences kept on each side of the evidence by default
DEFAULT_SENTENCE_CONTEXT = 2
#: passage="sentences": the most words a window holds by default (some 300-400 SmolLM2
#: tokens; 9 of 10 test rows fit whole with 2 sentences of context)
DEFAULT_MAX_WORDS = 300
#: The file names a split may have in a folder, the staged name last.
SPLIT_FILES = {
    "val": ("val.jsonl",),
    "test": ("test.jsonl",),
    "test_original": ("test_original.jsonl", "test_original_2817.jsonl"),
}
DOC_FILES = ("docs.jsonl", "docs.jsonl.gz", "docs_val_test.jsonl.gz")

Span = tuple[str, int, int, str]  # docid, start token, end token, text


def read_boolq(
    split: str = "val",
    root: Path | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
    passage: str = "evidence",
    context: int | None = None,
    max_words: int | None = None,
) -> list[Example]:
    """(question, passage) pairs with labels 0 (false) and 1 (true).

    Splits ``val`` (1,491), ``test`` (2,807; some rows carry several evidence groups) and
    ``test_original`` (2,817, one span per row: the size usually quoted for ERASER).
    ``path=`` is an ERASER BoolQ folder (the split's ``.jsonl`` and ``docs/`` or a docs
    file) or one split file (documents, if needed, are looked for beside it).
    ``context``: words (``passage="window"``, default 50) or sentences
    (``passage="sentences"``, default 2) of the document on each side of the evidence;
    ``max_words``: the most words of a ``"sentences"`` window (default 300).
    """
    check_split("boolq", split, BOOLQ_SPLITS)
    limit = check_limit(limit)
    if passage not in PASSAGES:
        raise InvalidOptionError(
            f"passage must be one of {', '.join(map(repr, PASSAGES))} (the evidence span, "
            f"the original BoolQ passage; or the whole Wikipedia document), not {passage!r}"
        )
    sentences = passage == "sentences"
    if context is None:
        context = DEFAULT_SENTENCE_CONTEXT if sentences else DEFAULT_CONTEXT
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        unit = "sentences" if sentences else "words"
        raise InvalidOptionError(
            f"context must be a whole number of {unit} (0 or more), not {context!r}"
        )
    if max_words is not None and not sentences:
        raise InvalidOptionError(
            "max_words bounds a passage='sentences' window; leave it out, or pass "
            "passage='sentences'"
        )
    max_words = DEFAULT_MAX_WORDS if max_words is None else max_words
    if isinstance(max_words, bool) or not isinstance(max_words, int) or max_words < 1:
        raise InvalidOptionError(
            f"max_words must be a whole number of words (1 or more), not {max_words!r}"
        )
    source = _split_file(split, root, path)
    rows = take(list(_rows(source)), limit)
    if sentences:
        needed = {span[0] for _, _, _, spans, _ in rows for span in spans}
        lines = _document_lines(source.parent, needed)
        examples = []
        for line, index, question, spans, label in rows:
            window = _sentence_window(spans, lines, context, max_words, source, line)
            offset = len(question.split())
            examples.append(
                Example(
                    (question, " ".join(window.sentences)),
                    label,
                    index,
                    evidence=tuple(offset + word for word in window.words),
                    segments=window.sentences,
                    evidence_segments=window.marked,
                )
            )
        return examples
    if passage == "window":
        documents = _documents(
            source.parent, {span[0] for _, _, _, spans, _ in rows for span in spans}
        )
        examples = []
        for line, index, question, spans, label in rows:
            window, marked = _window(spans, documents, context, source, line)
            offset = len(question.split())
            evidence = tuple(offset + word for word in marked)
            examples.append(Example((question, window), label, index, evidence=evidence))
        return examples
    if passage == "document":
        documents = _documents(
            source.parent, {span[0] for _, _, _, spans, _ in rows for span in spans}
        )
        texts = [_document_text(spans, documents, source, line) for line, _, _, spans, _ in rows]
    else:
        texts = [_evidence_text(spans, source, line) for line, _, _, spans, _ in rows]
    return [
        Example((question, text), label, index)
        for (_, index, question, _, label), text in zip(rows, texts, strict=True)
    ]


def _split_file(split: str, root: Path | None, path: str | Path | None) -> Path:
    """The split's file: in the shared ``boolq_eraser/``, in a user's folder, or a user's
    file itself."""
    if path is None:
        return shared_file("boolq_eraser", SPLIT_FILES[split][-1], root=root)
    path = given_path(path, "path").expanduser()
    if path.is_file():
        return path
    if not path.is_dir():
        raise InvalidInputError(
            f"path={str(path)!r} not found; give an ERASER BoolQ folder (val.jsonl, "
            f"test.jsonl, docs/) or one of its .jsonl files, or leave path= out to read the "
            f"shared copy (set ${DATA_ENV} to its folder)"
        )
    for name in SPLIT_FILES[split]:
        if (path / name).is_file():
            return path / name
    raise InvalidInputError(
        f"{path} has no {' or '.join(SPLIT_FILES[split])} for split {split!r}; found "
        f"{', '.join(sorted(p.name for p in path.iterdir())) or 'nothing'}; give the path "
        "of the split's file itself"
    )


def _rows(path: Path) -> Iterable[tuple[int, int, str, list[Span], int]]:
    """(line, row index, question, evidence spans, label id) for each row of a split."""
    for index, (line, row) in enumerate(read_jsonl(path)):
        for key in ("query", "classification", "evidences"):
            if key not in row:
                raise InvalidFileError(
                    f"{path}, line {line}: no key {key!r}; the keys found: "
                    f"{', '.join(row) or 'none'}; an ERASER row has annotation_id, "
                    "classification, evidences, query"
                )
        question = checked_text(row, "query", path, line)
        label = label_id(row["classification"], BOOLQ_LABELS, path, line, "classification")
        yield line, index, question, _spans(row["evidences"], path, line), label


def _spans(evidences: object, path: Path, line: int) -> list[Span]:
    """The evidence spans of a row (ERASER nests them in groups), in document order."""
    groups = evidences if isinstance(evidences, list) else None
    spans: list[Span] = []
    for group in groups or []:
        for evidence in group if isinstance(group, list) else [group]:
            if not isinstance(evidence, dict) or not all(
                key in evidence for key in ("docid", "start_token", "end_token", "text")
            ):
                raise InvalidFileError(
                    f"{path}, line {line}: an evidence is {describe(evidence)}; each needs "
                    "docid, start_token, end_token and text"
                )
            start, end = evidence["start_token"], evidence["end_token"]
            text = evidence["text"]
            valid = all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end))
            if not (valid and 0 <= start < end and isinstance(text, str)):
                raise InvalidFileError(
                    f"{path}, line {line}: evidence tokens {start!r}:{end!r} with text "
                    f"{describe(text)}; start_token and end_token must be whole numbers with "
                    "start < end, and text a string"
                )
            if len(text.split()) != end - start:
                raise InvalidFileError(
                    f"{path}, line {line}: the evidence text has {len(text.split())} tokens "
                    f"but spans tokens {start}:{end} ({end - start}); fix the span or its text"
                )
            spans.append((str(evidence["docid"]), start, end, text))
    if not spans:
        raise InvalidFileError(
            f"{path}, line {line}: no evidence span; the passage is the evidence, so every "
            "row needs one (or use passage='document')"
        )
    order = _doc_order(spans)
    return sorted(spans, key=lambda span: (order[span[0]], span[1], span[2]))


def _doc_order(spans: list[Span]) -> dict[str, int]:
    """Each docid's rank, in order of first mention."""
    return {docid: rank for rank, docid in enumerate(dict.fromkeys(span[0] for span in spans))}


def _evidence_text(spans: list[Span], path: Path, line: int) -> str:
    """The tokens the spans cover, each once, in document order."""
    order = _doc_order(spans)
    tokens: dict[tuple[int, int], str] = {}
    for docid, start, _, text in spans:
        for position, token in enumerate(text.split(), start=start):
            if tokens.setdefault((order[docid], position), token) != token:
                raise InvalidFileError(
                    f"{path}, line {line}: two evidence spans of document {docid} disagree "
                    f"on token {position}; fix the spans"
                )
    return " ".join(token for _, token in sorted(tokens.items()))


def _document_text(
    spans: list[Span], documents: dict[str, list[str]], path: Path, line: int
) -> str:
    """The whole document(s) of a row, each evidence span checked against it."""
    for docid, start, end, text in spans:
        if documents[docid][start:end] != text.split():
            raise InvalidFileError(
                f"{path}, line {line}: the evidence of {docid} is not tokens {start}:{end} "
                "of its document; the documents do not belong to this file (check the "
                "docs folder or file beside it)"
            )
    return " ".join(" ".join(documents[docid]) for docid in _doc_order(spans))


def _window(
    spans: list[Span], documents: dict[str, list[str]], context: int, path: Path, line: int
) -> tuple[str, list[int]]:
    """The first document's evidence with ``context`` words on each side, and the
    indices of the evidence words in it."""
    docid = spans[0][0]
    own = [span for span in spans if span[0] == docid]
    _document_text(own, documents, path, line)  # the spans belong to the document
    words = documents[docid]
    first = max(0, min(start for _, start, _, _ in own) - context)
    last = min(len(words), max(end for _, _, end, _ in own) + context)
    covered = {p for _, start, end, _ in own for p in range(start, end)}
    marked = [p - first for p in range(first, last) if p in covered]
    return " ".join(words[first:last]), marked


@dataclass(frozen=True)
class _SentenceWindow:
    """A ``passage="sentences"`` window: its sentences, the indices of the evidence
    sentences among them, and the indices of the evidence words among its words."""

    sentences: tuple[str, ...]
    marked: tuple[int, ...]
    words: tuple[int, ...]


def _sentence_window(
    spans: list[Span],
    lines: dict[str, list[list[str]]],
    context: int,
    max_words: int,
    path: Path,
    line: int,
) -> _SentenceWindow:
    """The first document's evidence sentences with ``context`` sentences on each side
    (nearest first, while the window holds at most ``max_words`` words)."""
    docid = spans[0][0]
    own = [span for span in spans if span[0] == docid]
    sentences = [words for words in lines[docid] if words]  # a blank line holds no sentence
    flat = [word for words in sentences for word in words]
    _document_text(own, {docid: flat}, path, line)  # the spans belong to the document
    sentence_of = [n for n, words in enumerate(sentences) for _ in words]
    marked = sorted({sentence_of[p] for _, start, end, _ in own for p in range(start, end)})
    first, last = marked[0], marked[-1]
    size = sum(len(words) for words in sentences[first : last + 1])
    while last > first and size > max_words:  # an evidence too long keeps its start
        size -= len(sentences[last])
        last -= 1
    low, high = first, last
    growing = {-1: True, 1: True}  # a side stops at its first sentence that does not fit
    for distance in range(1, context + 1):
        for side, candidate in ((-1, low - distance), (1, high + distance)):
            if not (growing[side] and 0 <= candidate < len(sentences)):
                continue
            if size + len(sentences[candidate]) > max_words:
                growing[side] = False
                continue
            size += len(sentences[candidate])
            first, last = min(first, candidate), max(last, candidate)
    kept = range(first, last + 1)
    covered = {p for _, start, end, _ in own for p in range(start, end)}
    start_word = sum(len(words) for words in sentences[:first])
    end_word = start_word + sum(len(sentences[n]) for n in kept)
    return _SentenceWindow(
        tuple(" ".join(sentences[n]) for n in kept),
        tuple(n - first for n in kept if n in marked),
        tuple(p - start_word for p in range(start_word, end_word) if p in covered),
    )


def _document_lines(folder: Path, docids: set[str]) -> dict[str, list[list[str]]]:
    """Each document's lines (ERASER: one sentence per line) as whitespace tokens."""
    raw = _raw_documents(folder, docids)
    return {docid: [line.split() for line in text.split("\n")] for docid, text in raw.items()}


def _documents(folder: Path, docids: set[str]) -> dict[str, list[str]]:
    """The whitespace tokens of each document in ``docids``."""
    return {docid: text.split() for docid, text in _raw_documents(folder, docids).items()}


def _raw_documents(folder: Path, docids: set[str]) -> dict[str, str]:
    """The text of each document in ``docids``, from ``folder``'s ``docs/`` (one file per
    docid) or its docs JSON-lines file."""
    if (folder / "docs").is_dir():
        found = {}
        for docid in sorted(docids):
            file = folder / "docs" / docid
            if not file.is_file():
                raise InvalidFileError(
                    f"document {docid} not found: {file} is missing; copy the ERASER docs/ "
                    "folder of this data set beside its .jsonl files"
                )
            found[docid] = read_text(file)
        return found
    file = next((folder / name for name in DOC_FILES if (folder / name).is_file()), None)
    if file is None:
        raise InvalidInputError(
            f"no documents beside {folder}: passage='document' needs a docs/ folder (one "
            f"file per docid) or one of {', '.join(DOC_FILES)} there (as 'window' and "
            "'sentences' do)"
        )
    raw = file.read_bytes()
    if file.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as error:
            raise InvalidFileError(f"{file} is not a readable gzip file ({error})") from None
    content = decode_utf8(raw, str(file), "re-writing it as UTF-8")
    found = {}
    for line, row in json_lines(content, str(file)):
        docid = row.get("docid")
        if docid in docids:
            document = row.get("document")
            if not isinstance(document, str):
                raise InvalidFileError(
                    f"{file}, line {line}: 'document' is {describe(document)}; each line "
                    'must be {"docid": ..., "document": "the text"}'
                )
            found[docid] = document
    missing = sorted(docids - found.keys())
    if missing:
        raise InvalidFileError(
            f"{file} has no document {missing[0]!r} ({len(missing)} missing); use the docs "
            "file that belongs to this data set"
        )
    return found
