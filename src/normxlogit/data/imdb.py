"""IMDb movie reviews: the staged 2,000-review subset of the aclImdb test split."""

from __future__ import annotations

from pathlib import Path

from ..common.errors import InvalidFileError
from .files import Example, checked_text, read_jsonl
from .sources import check_limit, check_split, column, label_id, locate, take

IMDB_LABELS = ("negative", "positive")
IMDB_SPLITS = ("test",)


def read_imdb(
    split: str = "test",
    root: Path | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
) -> list[Example]:
    """Reviews with labels 0 (negative) and 1 (positive): 1,000 of each, shuffled.

    The texts are the raw reviews (``<br />`` tags kept, as in the HF ``imdb`` data set).
    ``path=`` reads JSON lines with ``text`` and ``label`` (0/1 or negative/positive).
    """
    check_split("imdb", split, IMDB_SPLITS)
    limit = check_limit(limit)
    source = locate(path, "imdb", "test_subset_2000.jsonl", root=root)
    examples = []
    for index, (line, row) in enumerate(read_jsonl(source)):
        text_key = column(row, ("text", "review"), source, line)
        label_key = column(row, ("label",), source, line)
        label = label_id(row[label_key], IMDB_LABELS, source, line, label_key)
        examples.append(Example(checked_text(row, text_key, source, line), label, index))
        if limit is not None and len(examples) == limit:
            break
    if not examples:
        raise InvalidFileError(f"{source} holds no rows")
    return take(examples, limit)
