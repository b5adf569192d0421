"""GLUE: SST-2, STS-B, MNLI (dev-matched) and QNLI (dev).

SST-2, STS-B and QNLI are GLUE TSVs (tab delimiter, ``csv.QUOTE_NONE``); the staged
MNLI file is JSON lines (``premise``, ``hypothesis``, ``label``), and a GLUE MNLI TSV
(``sentence1``, ``sentence2``, ``gold_label``) is read too. Only the dev sets of MNLI and
QNLI are staged, so their split ``train`` is the even rows of the dev file, ``heldout`` the
odd rows (every experiment runs on these) and ``dev`` all rows.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from ..common.errors import InvalidFileError
from .files import Example, checked_text, records, table
from .sources import (
    check_limit,
    check_split,
    column,
    halve,
    label_id,
    locate,
    take,
)

SST2_LABELS = ("negative", "positive")
MNLI_LABELS = ("entailment", "neutral", "contradiction")
QNLI_LABELS = ("entailment", "not_entailment")
GLUE_SPLITS = ("train", "dev")
HALF_SPLITS = ("train", "heldout", "dev")


def _glue(
    path: Path,
    text_columns: tuple[str, ...],
    label_column: str,
    kind: Callable,
    labels: Sequence[str] = (),
    bounds: tuple[float, float] | None = None,
) -> list[Example]:
    """Examples of a GLUE TSV: text columns, and a label converted with ``kind`` (and, for
    a classification, one of the ids of ``labels``; for a regression, within ``bounds``)."""
    examples = []
    for index, (line, row) in enumerate(table(path, delimiter="\t", quoting=csv.QUOTE_NONE)):
        for key in (*text_columns, label_column):
            if key not in row:
                raise InvalidFileError(
                    f"{path} has no column {key!r}; its header: {', '.join(map(str, row))}; "
                    "check that the file is the right data set (a GLUE TSV with a header)"
                )
        texts = [checked_text(row, key, path, line) for key in text_columns]
        try:
            label = kind(row[label_column])
        except ValueError:
            raise InvalidFileError(
                f"{path}, line {line}: column {label_column!r} holds {row[label_column]!r}, "
                f"{_wanted_label(labels)}"
            ) from None
        if isinstance(label, float) and not math.isfinite(label):  # nan, inf, 1e400
            raise InvalidFileError(
                f"{path}, line {line}: {label_column} {row[label_column]} is not finite; "
                "a regressor is trained and scored against finite numbers: give the row a "
                "value or leave it out"
            )
        if bounds is not None and not bounds[0] <= label <= bounds[1]:
            raise InvalidFileError(
                f"{path}, line {line}: {label_column} {row[label_column]} lies outside "
                f"{bounds[0]:g}-{bounds[1]:g}, the data set's scale; correct the row or leave "
                "it out"
            )
        if labels:
            label_id(label, labels, path, line, label_column)
        text = texts[0] if len(texts) == 1 else (texts[0], texts[1])
        examples.append(Example(text, label, index))
    return examples


def _wanted_label(labels: Sequence[str]) -> str:
    """What a label cell should hold: a class index (``1.5`` is a number, but no index),
    or for a regression a number."""
    if not labels:
        return "not a number"
    known = ", ".join(f"{name} ({index})" for index, name in enumerate(labels))
    return f"not a label index (a whole number): the labels are {known}"


def read_sst2(
    split: str = "dev",
    root: Path | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
) -> list[Example]:
    """SST-2 sentences with labels 0 (negative) and 1 (positive); splits train, dev."""
    check_split("sst2", split, GLUE_SPLITS)
    limit = check_limit(limit)
    source = locate(path, "sst2", f"{split}.tsv", root=root)
    return take(_glue(source, ("sentence",), "label", int, SST2_LABELS), limit)


def read_stsb(
    split: str = "dev",
    root: Path | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
) -> list[Example]:
    """STS-B sentence pairs with similarity scores in [0, 5]; splits train, dev."""
    check_split("stsb", split, GLUE_SPLITS)
    limit = check_limit(limit)
    source = locate(path, "stsb", f"{split}.tsv", root=root)
    return take(_glue(source, ("sentence1", "sentence2"), "score", float, bounds=(0.0, 5.0)), limit)


def read_mnli(
    split: str = "heldout",
    root: Path | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
) -> list[Example]:
    """MNLI dev-matched (premise, hypothesis) pairs; labels 0 entailment, 1 neutral,
    2 contradiction.

    Split ``train`` is the even rows of the dev file, ``heldout`` the odd rows, ``dev``
    all 9,815 (MNLI's training set is not staged). ``path=`` reads a file of the same
    shape: JSON lines or a GLUE ``dev_matched.tsv``.
    """
    check_split("mnli", split, HALF_SPLITS)
    limit = check_limit(limit)
    source = locate(path, "mnli", "dev_matched.jsonl", root=root)
    pairs = (("premise", "hypothesis"), ("sentence1", "sentence2"))
    examples = _pairs(source, pairs, ("label", "gold_label"), MNLI_LABELS)
    return take(halve(examples, split), limit)


def read_qnli(
    split: str = "heldout",
    root: Path | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
) -> list[Example]:
    """QNLI dev (question, sentence) pairs; labels 0 entailment, 1 not_entailment.

    Split ``train`` is the even rows of the dev file, ``heldout`` the odd rows, ``dev``
    all 5,463 (QNLI's training set is not staged). ``path=`` reads a GLUE TSV (or JSON
    lines) with the columns ``question``, ``sentence``, ``label``.
    """
    check_split("qnli", split, HALF_SPLITS)
    limit = check_limit(limit)
    source = locate(path, "qnli", "dev.tsv", root=root)
    examples = _pairs(source, (("question", "sentence"),), ("label",), QNLI_LABELS)
    return take(halve(examples, split), limit)


def _pairs(
    path: Path,
    pairs: Sequence[tuple[str, str]],
    label_columns: Sequence[str],
    labels: Sequence[str],
) -> list[Example]:
    """Text pairs with named labels from a GLUE TSV or a JSON-lines file."""
    suffix = ".jsonl" if path.suffix.lower() in (".jsonl", ".ndjson", ".json") else ".tsv"
    examples = []
    for index, (line, row) in enumerate(records(path, suffix)):
        first, second = _pair_columns(row, pairs, path, line)
        key = column(row, label_columns, path, line)
        examples.append(
            Example(
                (checked_text(row, first, path, line), checked_text(row, second, path, line)),
                label_id(row[key], labels, path, line, key),
                index,
            )
        )
    if not examples:
        raise InvalidFileError(f"{path} holds no rows")
    return examples


def _pair_columns(
    row: dict, pairs: Sequence[tuple[str, str]], path: Path, line: int
) -> tuple[str, str]:
    """The first pair of text columns that ``row`` has, or a refusal naming the header."""
    for first, second in pairs:
        if first in row and second in row:
            return first, second
    expected = " or ".join(f"{first!r} and {second!r}" for first, second in pairs)
    raise InvalidFileError(
        f"{path}, line {line}: no columns {expected}; the header (keys) found: "
        f"{', '.join(map(str, row)) or 'none'}; rename the columns, or check that the file "
        "is the right data set"
    )
