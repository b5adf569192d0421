"""Readers for the evaluation and training sets (GLUE TSV and JSON lines).

GLUE files are tab separated and must be read with ``csv.QUOTE_NONE``: sentences hold
quote characters that are not CSV quoting.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import InvalidInputError

DATA_ENV = "NORMXLOGIT_DATA"


@dataclass(frozen=True)
class Example:
    """One input (a text or a text pair) with its gold label, if known."""

    text: str | tuple[str, str]
    label: int | float | str | None = None


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
    if not path.is_file():
        raise InvalidInputError(
            f"data file {path} not found; pass the path of your copy or set ${DATA_ENV} "
            "to the folder that holds sst2/, stsb/, ..."
        )
    return path


def read_tsv(path: Path) -> Iterator[dict[str, str]]:
    """Rows of a GLUE TSV as dicts keyed by the header."""
    with open(_require(path), encoding="utf-8", newline="") as handle:
        yield from csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)


def read_sst2(split: str = "dev", root: Path | None = None) -> list[Example]:
    """SST-2 sentences with labels 0 (negative) and 1 (positive)."""
    path = (root or data_root()) / "sst2" / f"{split}.tsv"
    return [Example(row["sentence"].strip(), int(row["label"])) for row in read_tsv(path)]


def read_stsb(split: str = "dev", root: Path | None = None) -> list[Example]:
    """STS-B sentence pairs with similarity scores in [0, 5]."""
    path = (root or data_root()) / "stsb" / f"{split}.tsv"
    return [
        Example((row["sentence1"], row["sentence2"]), float(row["score"])) for row in read_tsv(path)
    ]


TEXT_COLUMNS = ("sentence", "text", "review", "content")
PAIR_COLUMNS = (("sentence1", "sentence2"), ("premise", "hypothesis"), ("question", "sentence"))
LABEL_COLUMNS = ("label", "score", "gold", "classification")


def read_examples(path: str | Path, limit: int | None = None) -> list[Example]:
    """Texts (and gold labels) from a user's file, whatever its usual shape.

    ``.tsv`` / ``.csv`` with a header, or ``.jsonl``: the text is the first of the columns
    ``sentence``, ``text``, ``review``, ``content`` (pairs: ``sentence1``/``sentence2``,
    ``premise``/``hypothesis``, ``question``/``sentence``), the label ``label``, ``score``,
    ``gold`` or ``classification`` if present. Anything else: one text per line.
    """
    path = _require(Path(path))
    suffix = path.suffix.lower()
    if suffix not in (".tsv", ".csv", ".jsonl"):
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [Example(line) for line in lines[:limit]]
    rows = list(itertools.islice(_records(path, suffix), limit))
    if not rows:
        raise InvalidInputError(f"{path} holds no rows")
    return [_example(row, path) for row in rows]


def _records(path: Path, suffix: str) -> Iterator[dict]:
    """The rows of a .tsv (GLUE quoting), .csv or .jsonl file as dicts."""
    if suffix == ".tsv":
        yield from read_tsv(path)
        return
    with open(path, encoding="utf-8", newline="") as handle:
        if suffix == ".csv":
            yield from csv.DictReader(handle)
        else:
            yield from (json.loads(line) for line in handle if line.strip())


def _example(row: dict, path: Path) -> Example:
    label_key = next((k for k in LABEL_COLUMNS if k in row), None)
    label = _label(row[label_key]) if label_key is not None else None
    for first, second in PAIR_COLUMNS:
        if first in row and second in row:
            return Example((str(row[first]).strip(), str(row[second]).strip()), label)
    text_key = next((k for k in TEXT_COLUMNS if k in row), None)
    if text_key is None:
        raise InvalidInputError(
            f"{path}: no text column; name it one of {', '.join(TEXT_COLUMNS)} (or a pair such "
            f"as sentence1/sentence2); found {', '.join(map(str, row))}"
        )
    return Example(str(row[text_key]).strip(), label)


def _label(raw) -> int | float | str:
    """Numbers stay numbers (label indices or regression scores); names stay names."""
    if isinstance(raw, (int, float)):
        return raw
    text = str(raw).strip()
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
