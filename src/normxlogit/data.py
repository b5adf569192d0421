"""Readers for the evaluation and training sets (GLUE TSV and JSON lines).

GLUE files are tab separated and must be read with ``csv.QUOTE_NONE``: sentences hold
quote characters that are not CSV quoting.
"""

from __future__ import annotations

import csv
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
    label: int | float | None = None


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
