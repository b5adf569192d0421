"""Which loader reads a saved JSON file, so a file opened with the wrong one is refused
naming the right one (the loaders live on floors that cannot import each other)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: what a saved sanity result says it is (its ``"kind"``)
SANITY_KIND = "normxlogit sanity result"
#: what a saved generation explanation says it is (its ``"kind"``)
GENERATION_KIND = "generation"

EXPLANATION_LOADER = "normxlogit.Explanation.load"
EXPLANATIONS_LOADER = "normxlogit.load_explanations"
GENERATION_LOADER = "normxlogit.GenerationExplanation.load"
EVALUATION_LOADER = "normxlogit.EvaluationResult.load"
SANITY_LOADER = "normxlogit.sanity.SanityResult.load"

#: how to get a loadable evaluation, where a file is a summary no loader reads back
_SAVE_EVALUATION = (
    "which no loader reads back: save the evaluation with evaluate --save result.json "
    "(or EvaluationResult.save) to load it"
)
#: the loaders that read a file of explanations (one or several)
_EXPLANATION_LOADERS = (EXPLANATION_LOADER, EXPLANATIONS_LOADER)


def saved_kind(data: Any) -> tuple[str, str] | None:
    """``(what the file is, its loader or how to read it where no loader does)`` for a
    parsed JSON file one of normxlogit's writers wrote, read from the keys each writes;
    None when it looks like none of them. Explanations are saved as a list: one is
    :data:`EXPLANATION_LOADER`'s (a generation's :data:`GENERATION_LOADER`'s), several
    :data:`EXPLANATIONS_LOADER`'s."""
    if isinstance(data, list):
        first = saved_kind(data[0]) if data else None
        if first is None or first[1] not in (EXPLANATION_LOADER, GENERATION_LOADER):
            return None
        if len(data) == 1:
            return first
        return f"a list of {len(data)} explanations", EXPLANATIONS_LOADER
    if not isinstance(data, dict):
        return None
    if data.get("kind") == SANITY_KIND:
        return "a sanity result", SANITY_LOADER
    if {"metrics", "protocol", "rows"} <= data.keys():
        return "an evaluation result", EVALUATION_LOADER
    if "scores" in data and "tokens" in data:
        if data.get("kind") == GENERATION_KIND:  # Explanation.load would refuse it
            return "a generation explanation", GENERATION_LOADER
        return "an explanation", EXPLANATION_LOADER
    if data.keys() == {"values", "metrics"}:
        return "the summary table evaluate -o writes (one row per method)", _SAVE_EVALUATION
    return None


def other_loader_hint(data: Any, loader: str) -> str:
    """``"; it is a sanity result: use normxlogit.sanity.SanityResult.load"`` when ``data``
    is a file another loader reads, or how to get a loadable file where no loader reads
    it (empty when it is ``loader``'s own kind or none)."""
    found = saved_kind(data)
    if found is None or found[1] == loader:
        return ""
    what, right = found
    if loader in _EXPLANATION_LOADERS and right in _EXPLANATION_LOADERS:
        return ""  # either reads explanations; Explanation.load says when there are several
    if right == _SAVE_EVALUATION:
        return f"; it is {what}, {right}"
    return f"; it is {what}: use {right}"


#: the columns each of normxlogit's table writers puts in a .csv / .parquet file, and
#: what the file is: a sanity result (``sanity -o``, SanityResult.save), a bench export
#: (one row per stored value), an evaluate summary (``evaluate -o x.csv``: one row per method)
_SANITY_COLUMNS = {"method", "mode", "step", "randomized", "instance", "spearman"}
_EXPORT_COLUMNS = {"model", "dataset", "instance", "method", "seed", "metric", "value"}
#: how to read a table no loader reads back (in place of a loader)
_TABLE_ONLY = f"a table for reading (pandas.read_csv / read_parquet), {_SAVE_EVALUATION}"
_TABLE_ONLY_MARKDOWN = f"a table for reading, {_SAVE_EVALUATION}"
_EXPORT_ONLY = (
    "a table for reading (pandas.read_csv / read_parquet), which no loader reads back: "
    "the bench reads its results from the store (bench report, bench status)"
)


#: how to get a loadable file of explanations, where a file is the page explain -o writes
_SAVE_EXPLANATIONS = (
    "for reading in a browser, which no loader reads back: save the explanations with "
    "explain -o result.json (or Explanation.save) to load them"
)


def table_kind(path: Path) -> tuple[str, str] | None:
    """``(what the file is, its loader or how to read it where no loader does)`` for a
    .csv or .parquet file one of normxlogit's table writers wrote, from its header
    (columns), or a Markdown summary / HTML page one of its commands writes; None for any
    other."""
    written = _text_kind(path)
    if written is not None:
        return written
    columns = _table_columns(path)
    if columns is None:
        return None
    if columns >= _SANITY_COLUMNS:
        return "a sanity result table", SANITY_LOADER
    if columns >= _EXPORT_COLUMNS:
        return "a bench export (one row per stored value)", _EXPORT_ONLY
    if "method" in columns and not columns & (_SANITY_COLUMNS | {"top_k", "target"}) - {"method"}:
        return "an evaluate summary table (one row per method)", _TABLE_ONLY
    return None


def _text_kind(path: Path) -> tuple[str, str] | None:
    """A Markdown summary (``evaluate -o x.md``: a table whose first column is the method)
    or an HTML page (``explain -o x.html``), from the file's first line."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    except OSError:
        return None
    first = head.split("\n", 1)[0].strip()
    if first.startswith("|") and first.strip("| ").lower().startswith("method"):
        return "an evaluate summary in Markdown (one row per method)", _TABLE_ONLY_MARKDOWN
    if first.lower().startswith(("<!doctype html", "<html")):
        return "an HTML page of explanations", _SAVE_EXPLANATIONS
    return None


def _table_columns(path: Path) -> set[str] | None:
    """The columns of a Parquet file (by its magic bytes) or of a CSV's header line."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return None
    if head.startswith(b"PAR1"):
        try:
            import pyarrow.parquet as pq

            return set(pq.read_schema(path).names)
        except Exception:  # no pyarrow, or a broken file: said by the loader itself
            return None
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    if path.suffix.lower() != ".csv" and ("," not in first or first[:1] in "{["):
        return None  # a CSV under another name (summary.txt) still has its header's commas
    return {cell.strip().strip('"') for cell in first.split(",")}


def table_refusal(path: Path, loader: str, called: str | None = None) -> str | None:
    """The refusal of a .csv / .parquet table normxlogit wrote, opened with ``loader``
    when it is not that loader's: naming the right loader, or saying no loader reads it
    (None: not such a table, or ``loader``'s own). ``called`` names the function the user
    called where it differs from ``loader`` (load_explanations reads Explanation.load's)."""
    if (found := _json_kind(path)) is not None:
        return _misnamed_json(path, loader, called, *found)
    found = table_kind(path)
    if found is None:
        return None
    what, right = found
    if right == loader:  # its own table, under a name its loader reads as another format
        return _misnamed_table(path, what)
    if right in (_TABLE_ONLY, _TABLE_ONLY_MARKDOWN, _EXPORT_ONLY, _SAVE_EXPLANATIONS):
        return f"{path} is {what}: {right}"
    use = f"use {right}"
    if _misnamed_table(path, what) is not None:  # that loader reads it under its own suffix
        use = f"rename it to {_renamed(path)} and use {right}"
    return f"{path} is {what}, not a JSON file {called or loader} reads: {use}"


def _table_suffix(path: Path) -> tuple[str, str]:
    """The format of a table normxlogit wrote and its suffix: Parquet (by its magic
    bytes), else CSV."""
    try:
        with open(path, "rb") as handle:
            parquet = handle.read(4) == b"PAR1"
    except OSError:
        parquet = False
    return ("Parquet", ".parquet") if parquet else ("CSV", ".csv")


def _misnamed_table(path: Path, what: str) -> str | None:
    """The refusal of a loader's own table whose name ends in another format's suffix (a
    CSV named ``.json`` would be refused as "invalid JSON"), naming the name to give it;
    None where the suffix is the table's own."""
    fmt, suffix = _table_suffix(path)
    if path.suffix.lower() == suffix:
        return None
    return f"{path} is {what} ({fmt}) under another name: rename it to {_renamed(path)} to load it"


def _renamed(path: Path) -> str:
    """``path``'s name with its table format's suffix (in place of its last suffix)."""
    return _named_as(path, _table_suffix(path)[1])


def _named_as(path: Path, suffix: str) -> str:
    """``path``'s name ending in ``suffix`` in place of its last suffix, or without its
    last suffix where the one before is ``suffix`` already (s.csv.json -> s.csv, not
    s.csv.csv)."""
    if Path(path.stem).suffix.lower() == suffix:
        return path.stem
    return path.with_suffix(suffix).name


#: the loaders that tell a file's format by its suffix (the others read JSON by content)
_SUFFIX_LOADERS = (SANITY_LOADER,)


def _json_kind(path: Path) -> tuple[str, str] | None:
    """:func:`saved_kind` of a JSON file one of normxlogit's writers wrote, saved under a
    table's name (``.csv`` / ``.parquet``): told by its first byte, ``{`` or ``[``."""
    if path.suffix.lower() not in (".csv", ".parquet"):
        return None
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if raw.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] not in (b"{", b"["):
        return None
    try:
        return saved_kind(json.loads(raw.decode("utf-8-sig")))
    except (UnicodeDecodeError, ValueError):  # not JSON after all: said by the loader
        return None


def _misnamed_json(
    path: Path, loader: str, called: str | None, what: str, right: str
) -> str | None:
    """The refusal of a saved JSON file under a table's name: its own (where ``loader``
    reads by suffix) told to be renamed, another loader's named (None: ``loader`` reads
    it as JSON whatever its name)."""
    json_name = _named_as(path, ".json")
    if right == loader or (loader in _EXPLANATION_LOADERS and right in _EXPLANATION_LOADERS):
        if loader not in _SUFFIX_LOADERS:
            return None
        return f"{path} is {what} (JSON) under another name: rename it to {json_name} to load it"
    if right == _SAVE_EVALUATION:
        return f"{path} is {what}, {right}"
    use = (
        f"rename it to {json_name} and use {right}" if right in _SUFFIX_LOADERS else f"use {right}"
    )
    return f"{path} is {what} (JSON), not a file {called or loader} reads: {use}"


#: the suffixes of the data files ``read_examples`` reads (rows of texts)
_DATA_SUFFIXES = {".tsv": "TSV", ".csv": "CSV", ".jsonl": "JSON Lines", ".txt": "plain-text"}


def data_file_refusal(path: Path, what: str) -> str | None:
    """The refusal of a data file (texts: .tsv, .csv, .jsonl, .txt) opened with a loader
    of saved results, ``what`` ("a saved explanation"): read as JSON it is "not complete
    JSON", and the advice to write it again with a save would not fit; None for another
    suffix. Called where the file is not JSON."""
    kind = _DATA_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        return None
    return (
        f"{path} is not JSON: it looks like a data file (a {kind} file of texts), not {what}; "
        "read it with normxlogit.data.read_examples and pass its texts to explain"
    )
