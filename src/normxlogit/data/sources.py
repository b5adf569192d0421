"""What the readers of the named data sets share: finding their files, checking a split
and a limit, halving a dev set, and turning a label value into its id."""

from __future__ import annotations

import operator
import sys
from collections.abc import Sequence
from pathlib import Path

from ..common.counts import integer_text
from ..common.errors import InvalidFileError, InvalidInputError, InvalidOptionError
from ..common.input_paths import blank_edge_hint, given_path
from .files import DATA_ENV, Example, data_root

#: The halves of a data set of which only the dev set is staged (MNLI, QNLI).
HALVES = {
    "train": "the rows with an even index (0, 2, 4, ...; header excluded)",
    "heldout": "the rows with an odd index (1, 3, 5, ...), on which experiments run",
    "dev": "all rows",
}


def check_split(dataset: str, split: str, splits: Sequence[str]) -> str:
    """``split``, or a refusal listing the splits ``dataset`` has."""
    if split not in splits:
        raise InvalidInputError(
            f"{dataset} has no split {split!r}; choose one of {', '.join(splits)}"
        )
    return split


def check_limit(limit: int | None) -> int | None:
    """``limit`` (a whole number >= 1, a numpy integer too, or None for all), or a
    refusal. A limit past ``sys.maxsize`` (more rows than any file holds) reads every row,
    as a smaller one past the file's end does (``islice`` takes no larger stop)."""
    if limit is None:
        return None
    try:
        whole = None if isinstance(limit, bool) else operator.index(limit)  # np.int64(2)
    except TypeError:
        whole = None
    if whole is None:
        raise InvalidOptionError(
            f"limit must be a whole number of examples (>= 1) or None for all, not {limit!r}"
        )
    if whole < 1:
        raise InvalidOptionError(
            f"limit must be at least 1 (the number of examples to read), not {whole}; "
            "leave it out (None) to read the whole split"
        )
    return min(whole, sys.maxsize)


def shared_file(*parts: str, root: Path | None = None) -> Path:
    """A staged data file under ``root`` (default: :func:`data_root`), or a refusal that
    says how to point at the data."""
    path = (data_root() if root is None else given_path(root, "root")).joinpath(*parts)
    if not path.exists():
        error = InvalidInputError(
            f"data file {path} not found; set ${DATA_ENV} to the folder that holds "
            f"{parts[0]}/ (the shared data), or pass path= to read your own copy"
        )
        # callers that take no path= (normxlogit train) give their own advice from these
        error.data_file, error.data_folder = path, parts[0]  # type: ignore[attr-defined]
        raise error
    return path


def user_file(path: str | Path) -> Path:
    """A user's own file or folder given as ``path=``, or a refusal naming it."""
    path = given_path(path, "path").expanduser()
    if not path.exists():
        raise InvalidInputError(
            f"path={str(path)!r} not found{blank_edge_hint(path)}; give the path of an "
            "existing file (or folder), "
            f"or leave path= out to read the shared copy (set ${DATA_ENV} to its folder)"
        )
    if path.is_dir():
        raise InvalidInputError(f"path={str(path)!r} is a folder; give the path of the file")
    return path


def locate(path: str | Path | None, *parts: str, root: Path | None = None) -> Path:
    """The user's file ``path`` if given, else the staged file ``parts`` under ``root``."""
    return user_file(path) if path is not None else shared_file(*parts, root=root)


def halve(examples: list[Example], split: str) -> list[Example]:
    """The ``train`` (even rows), ``heldout`` (odd rows) or ``dev`` (all rows) part.

    Only the dev sets of MNLI and QNLI are public with labels, so a model is fitted or
    tuned on one half and every experiment runs on the other. The halves follow the
    rows of the file, so they do not depend on a seed.
    """
    if split == "dev":
        return examples
    parity = 0 if split == "train" else 1
    return [
        example for example in examples if example.row is not None and example.row % 2 == parity
    ]


def label_id(
    value: object, labels: Sequence[str], source: Path | str, line: int, column: str
) -> int:
    """The id of a label given by its name (any case) or by its id."""
    if isinstance(value, bool):
        value = str(value)
    if isinstance(value, str):
        text = value.strip()
        names = [name.lower() for name in labels]
        if text.lower() in names:
            return names.index(text.lower())
        if (number := integer_text(text)) is not None:
            value = number
    if isinstance(value, int) and 0 <= value < len(labels):
        return value
    known = ", ".join(f"{name} ({index})" for index, name in enumerate(labels))
    raise InvalidFileError(
        f"{source}, line {line}: unknown label {value!r} in column {column!r}; the known "
        f"labels are {known}: fix the row or remove it"
    )


def column(row: dict, choices: Sequence[str], source: Path | str, line: int) -> str:
    """The first of ``choices`` that ``row`` has, or a refusal naming the header found."""
    for choice in choices:
        if choice in row:
            return choice
    expected = " or ".join(repr(choice) for choice in choices)
    raise InvalidFileError(
        f"{source}, line {line}: no column {expected}; the header (keys) found: "
        f"{', '.join(map(str, row)) or 'none'}; rename the column, or check that the file "
        "is the right data set"
    )


def take(examples: list[Example], limit: int | None) -> list[Example]:
    """The first ``limit`` examples (all if None)."""
    return examples if limit is None else examples[:limit]
