"""The results store: one SQLite file that a bench run writes as it goes.

Every explanation and every metric value is keyed by model, dataset, instance, method
(name and options), seed, and for metric values the metric and the protocol. Each unit of
work is written in one transaction, so a run killed at any moment (SIGKILL included)
leaves whole units or nothing, and the next run asks the store what is missing and
computes only that. Primary keys make a second write of the same result impossible.

The file uses SQLite's write-ahead log, so ``bench status`` and ``bench report`` read it
while a run writes.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..common.errors import InvalidFileError, OutputPathError, StaleResultsError
from ..common.input_paths import bare_name, free_name, free_numbered_name
from ..common.outputs import (
    ARCHIVE_SUFFIXES,
    FORMAT_SUFFIXES,
    MODEL_SUFFIXES,
    misnamed_after_format,
    refuse_blank_edges,
    refuse_suffix_only,
)
from .archive import missing_store
from .spec import current_method_key, current_protocol_key

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS instances (
    dataset TEXT NOT NULL,          -- DatasetSpec.key (canonical JSON)
    instance INTEGER NOT NULL,      -- index in the dataset split
    row INTEGER,                    -- row in the source file, when known
    text TEXT NOT NULL,             -- JSON: a string or a [first, second] pair
    label TEXT,                     -- JSON: the gold label as the dataset gives it
    PRIMARY KEY (dataset, instance)
);
CREATE TABLE IF NOT EXISTS explanations (
    model TEXT NOT NULL,
    dataset TEXT NOT NULL,
    instance INTEGER NOT NULL,
    method TEXT NOT NULL,           -- MethodSpec.key (canonical JSON: name + options)
    seed INTEGER NOT NULL,
    tokens INTEGER NOT NULL,        -- input length, for time-vs-length plots
    seconds REAL NOT NULL,          -- explain time of this instance (its share of a batch)
    batch INTEGER NOT NULL,         -- how many texts shared the batch it ran in
    payload TEXT NOT NULL,          -- Explanation.to_dict() as JSON
    PRIMARY KEY (model, dataset, instance, method, seed)
);
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    dataset TEXT NOT NULL,
    instance INTEGER NOT NULL,
    method TEXT NOT NULL,
    seed INTEGER NOT NULL,
    metric TEXT NOT NULL,
    protocol TEXT NOT NULL,         -- canonical JSON of the protocol settings the metric reads
    seconds REAL NOT NULL,
    UNIQUE (model, dataset, instance, method, seed, metric, protocol)
);
CREATE TABLE IF NOT EXISTS metric_values (
    evaluation INTEGER NOT NULL REFERENCES evaluations(id),
    axis TEXT,                      -- ratio / pi / step / layer, or NULL for one number
    x REAL,
    value REAL,
    gold REAL
);
CREATE INDEX IF NOT EXISTS metric_values_by_evaluation ON metric_values(evaluation);
CREATE TABLE IF NOT EXISTS skipped (
    model TEXT NOT NULL,
    dataset TEXT NOT NULL,
    method TEXT NOT NULL,
    seed INTEGER NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (model, dataset, method, seed)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    config TEXT NOT NULL,
    engine TEXT NOT NULL,
    started REAL NOT NULL,
    finished REAL
);
"""

#: tables of generation experiments, added to stores of every age when they are opened
#: (new tables only: a run of an older normxlogit writing the same file is not disturbed)
GENERATION_SCHEMA = """
CREATE TABLE IF NOT EXISTS generations (
    model TEXT NOT NULL,
    dataset TEXT NOT NULL,
    instance INTEGER NOT NULL,
    max_new_tokens INTEGER NOT NULL,
    ids TEXT NOT NULL,              -- JSON: the token ids the model wrote (greedy)
    PRIMARY KEY (model, dataset, instance, max_new_tokens)
);
CREATE TABLE IF NOT EXISTS step_values (
    evaluation INTEGER NOT NULL REFERENCES evaluations(id),
    step INTEGER NOT NULL,          -- the generated token's index
    axis TEXT,
    x REAL,
    value REAL,
    gold REAL
);
CREATE INDEX IF NOT EXISTS step_values_by_evaluation ON step_values(evaluation);
"""

#: what each instance's results were computed against besides its text and label (its
#: evidence words or segments, its foil), recorded by a run and compared by later ones as
#: the text and label are; created by the first run that records it (a store written
#: before it is read as before, and records the data the next run reads)
ANNOTATION_SCHEMA = """
CREATE TABLE IF NOT EXISTS annotations (
    dataset TEXT NOT NULL,
    instance INTEGER NOT NULL,
    gold TEXT NOT NULL,             -- JSON: {"evidence": [...], "foil": ...} as given
    PRIMARY KEY (dataset, instance)
)
"""

KEY = ("model", "dataset", "method", "seed")
_MODEL = "model:"  # meta key prefix of a model's fingerprint


@dataclass(frozen=True)
class CellKey:
    """One grid cell: a method (with options) of an experiment, under one seed."""

    model: str
    dataset: str
    method: str
    seed: int


@dataclass
class StoredExplanation:
    instance: int
    payload: dict[str, Any]
    tokens: int
    seconds: float
    batch: int
    #: replaces the stored one (a generation explained again at more steps), where a new
    #: explanation leaves a stored one as it is
    replaces: bool = False


@dataclass
class StoredEvaluation:
    instance: int
    metric: str
    protocol: str  # canonical JSON of the settings the metric reads
    seconds: float
    #: (axis, x, value, gold) per point; a generation's: (step, axis, x, value, gold)
    rows: list[tuple]
    stepped: bool = False


_SAME_EVALUATION = " AND ".join(
    f"m.{column} = o.{column}"
    for column in ("model", "dataset", "instance", "method", "seed", "metric", "protocol")
)


def _copy_rows(conn: sqlite3.Connection, source: Path) -> None:
    """The body of :meth:`ResultStore.merge_from`, inside its transaction."""
    clash = conn.execute(
        "SELECT o.dataset, o.instance FROM source.instances o JOIN main.instances m "
        "ON m.dataset = o.dataset AND m.instance = o.instance "
        "WHERE m.text != o.text OR m.label IS NOT o.label LIMIT 1"
    ).fetchone()
    if clash is not None:
        raise InvalidFileError(
            f"{source} holds another text or label for instance {clash[1]} of dataset "
            f"{_dataset_name(clash[0])!r}: "
            "the stores were filled from different data files, so their results do not "
            "belong together"
        )
    other = conn.execute(
        "SELECT o.key, o.value, m.value FROM source.meta o JOIN main.meta m ON m.key = o.key "
        "WHERE o.key LIKE ? AND m.value != o.value LIMIT 1",
        (_MODEL + "%",),
    ).fetchone()
    if other is not None:
        raise StaleResultsError(
            f"{source} holds results of another {other[0][len(_MODEL) :]!r} (fingerprint "
            f"{other[1]}, this store's {other[2]}): the model changed between the runs, so "
            "their results do not belong together"
        )
    conn.execute(
        "INSERT OR IGNORE INTO main.meta SELECT * FROM source.meta WHERE key LIKE ?",
        (_MODEL + "%",),
    )
    conn.execute("INSERT OR IGNORE INTO main.instances SELECT * FROM source.instances")
    _copy_annotations(conn, source)
    conn.execute("INSERT OR IGNORE INTO main.explanations SELECT * FROM source.explanations")
    conn.execute("INSERT OR IGNORE INTO main.skipped SELECT * FROM source.skipped")
    last = conn.execute("SELECT COALESCE(MAX(id), 0) FROM main.evaluations").fetchone()[0]
    columns = "model, dataset, instance, method, seed, metric, protocol, seconds"
    conn.execute(
        f"INSERT INTO main.evaluations ({columns}) SELECT {columns} FROM source.evaluations o "
        f"WHERE NOT EXISTS (SELECT 1 FROM main.evaluations m WHERE {_SAME_EVALUATION}) "
        "ORDER BY o.id"
    )
    conn.execute(
        "INSERT INTO main.metric_values SELECT m.id, v.axis, v.x, v.value, v.gold "
        f"FROM main.evaluations m JOIN source.evaluations o ON {_SAME_EVALUATION} "
        "JOIN source.metric_values v ON v.evaluation = o.id WHERE m.id > ? "
        "ORDER BY m.id, v.rowid",
        (last,),
    )
    conn.execute(
        "INSERT INTO main.step_values SELECT m.id, v.step, v.axis, v.x, v.value, v.gold "
        f"FROM main.evaluations m JOIN source.evaluations o ON {_SAME_EVALUATION} "
        "JOIN source.step_values v ON v.evaluation = o.id WHERE m.id > ? "
        "ORDER BY m.id, v.rowid",
        (last,),
    )
    clash = conn.execute(
        "SELECT o.model, o.instance FROM source.generations o JOIN main.generations m USING "
        "(model, dataset, instance, max_new_tokens) WHERE m.ids != o.ids LIMIT 1"
    ).fetchone()
    if clash is not None:
        raise StaleResultsError(
            f"{source} holds another generation of {clash[0]!r} for instance {clash[1]}: the "
            "explanations of the two stores explain different continuations"
        )
    conn.execute("INSERT OR IGNORE INTO main.generations SELECT * FROM source.generations")
    conn.execute(
        "INSERT INTO main.runs (config, engine, started, finished) SELECT config, "
        "engine || ' (merged from ' || ? || ')', started, finished FROM source.runs o "
        "WHERE NOT EXISTS (SELECT 1 FROM main.runs m WHERE m.config = o.config AND "
        "m.started = o.started) ORDER BY id",
        (source.name,),
    )


#: the tables whose rows name a method (``MethodSpec.key``)
_METHOD_TABLES = ("explanations", "evaluations", "skipped")


def _outdated_method_keys(conn: sqlite3.Connection) -> dict[str, str]:
    """Stored method keys that :attr:`MethodSpec.key` now writes otherwise (execution
    options such as ``internal_batch_size``, and options at their default value, left
    out), each with its current form."""
    union = " UNION ".join(f"SELECT method FROM {table}" for table in _METHOD_TABLES)
    stored = [row[0] for row in conn.execute(union)]
    current = {key: current_method_key(key) for key in stored}
    return {key: new for key, new in current.items() if new != key}


def _rename_method_keys(conn: sqlite3.Connection, renamed: dict[str, str]) -> None:
    """Rows under an outdated key moved to its current one, inside the caller's
    transaction; a row the store also holds under the current key keeps that copy (the
    two differ by float rounding at most), as a merge keeps the store's own."""
    for old, new in renamed.items():
        for table in ("explanations", "skipped"):
            conn.execute(f"UPDATE OR IGNORE {table} SET method=? WHERE method=?", (new, old))
            conn.execute(f"DELETE FROM {table} WHERE method=?", (old,))
        conn.execute("UPDATE OR IGNORE evaluations SET method=? WHERE method=?", (new, old))
        for values in ("metric_values", "step_values"):
            conn.execute(
                f"DELETE FROM {values} WHERE evaluation IN "
                "(SELECT id FROM evaluations WHERE method=?)",
                (old,),
            )
        conn.execute("DELETE FROM evaluations WHERE method=?", (old,))


def _outdated_protocol_keys(conn: sqlite3.Connection) -> dict[tuple[str, str], str]:
    """Stored (metric, protocol key) pairs that the bench now keys otherwise (a setting the
    metric does not read, stored at another value than its default), each with its
    current protocol key."""
    stored = conn.execute("SELECT DISTINCT metric, protocol FROM evaluations").fetchall()
    current = {(metric, key): current_protocol_key(metric, key) for metric, key in stored}
    return {pair: new for pair, new in current.items() if new != pair[1]}


def _rename_protocol_keys(conn: sqlite3.Connection, renamed: dict[tuple[str, str], str]) -> None:
    """Values under an outdated protocol key moved to its current one, inside the caller's
    transaction; where the store also holds them under the current key, that copy is kept
    (the setting is not read, so the two are the same values)."""
    for (metric, old), new in renamed.items():
        conn.execute(
            "UPDATE OR IGNORE evaluations SET protocol=? WHERE metric=? AND protocol=?",
            (new, metric, old),
        )
        leftover = "SELECT id FROM evaluations WHERE metric=? AND protocol=?"
        for values in ("metric_values", "step_values"):
            conn.execute(f"DELETE FROM {values} WHERE evaluation IN ({leftover})", (metric, old))
        conn.execute("DELETE FROM evaluations WHERE metric=? AND protocol=?", (metric, old))


def _rename_outdated_keys(conn: sqlite3.Connection) -> None:
    """Every outdated method and protocol key moved to its current form."""
    _rename_method_keys(conn, _outdated_method_keys(conn))
    _rename_protocol_keys(conn, _outdated_protocol_keys(conn))


#: SQLite's words for a store that cannot take writes (as opposed to a programming error)
_WRITE_FAILURES = re.compile(r"disk is full|readonly|read-only|disk I/O error|unable to open")


def _copy_annotations(conn: sqlite3.Connection, source: Path) -> None:
    """The source store's recorded evidence and foils (where it has them), refused where
    both stores record one and they differ: the results were computed against other
    evidence. A part only one store records was read by no value of the other."""
    if not _has_table(conn, "annotations", "source"):
        return
    conn.execute(ANNOTATION_SCHEMA)
    pairs = conn.execute(
        "SELECT o.dataset, o.instance, m.gold, o.gold FROM source.annotations o "
        "JOIN main.annotations m ON m.dataset = o.dataset AND m.instance = o.instance "
        "WHERE m.gold != o.gold"
    ).fetchall()
    for dataset, instance, mine, theirs in pairs:
        if _clashing_parts(mine, theirs):
            raise InvalidFileError(
                f"{source} holds other {' and '.join(_clashing_parts(mine, theirs))} for "
                f"instance {instance} of dataset {_dataset_name(dataset)!r}: the stores were "
                "filled from different data files, so their results do not belong together"
            )
        conn.execute(
            "UPDATE main.annotations SET gold=? WHERE dataset=? AND instance=?",
            (_joined_gold(mine, theirs), dataset, instance),
        )
    conn.execute("INSERT OR IGNORE INTO main.annotations SELECT * FROM source.annotations")


def _clashing_parts(before: str, now: str) -> list[str]:
    """The parts (evidence, evidence_segments, foil) both records give, differently: a
    part only one records was not read where the other was written."""
    old, new = json.loads(before), json.loads(now)
    return [key for key in sorted(old.keys() & new.keys()) if old[key] != new[key]]


def _joined_gold(before: str, now: str) -> str:
    """Both records' parts in one (they agree where both give one)."""
    return json.dumps({**json.loads(now), **json.loads(before)}, sort_keys=True)


def _dataset_name(dataset: str) -> str:
    """A dataset key as the config names it (its name, not the internal JSON key)."""
    return json.loads(dataset).get("name", dataset) if dataset.startswith("{") else dataset


def _stored_evaluation(
    conn: sqlite3.Connection, key: tuple[str, str, str, int], evaluation: StoredEvaluation
) -> bool:
    """Whether the store already holds this metric for this instance under this protocol."""
    model, dataset, method, seed = key
    found = conn.execute(
        "SELECT 1 FROM evaluations WHERE model=? AND dataset=? AND instance=? AND method=? "
        "AND seed=? AND metric=? AND protocol=?",
        (model, dataset, evaluation.instance, method, seed, evaluation.metric, evaluation.protocol),
    )
    return found.fetchone() is not None


def _encoded_instances(dataset: str, rows: Iterable[tuple[int, int | None, Any, Any]]) -> list:
    """Instance rows as the ``instances`` table holds them (text and label as JSON)."""
    return [
        (dataset, instance, row, json.dumps(text), json.dumps(label))
        for instance, row, text, label in rows
    ]


def _changed_data(store: Path, dataset: str, instance: int, before: tuple[str, str]) -> str:
    name = _dataset_name(dataset)
    text = json.loads(before[0])
    shown = text if isinstance(text, str) else " / ".join(text)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return (
        f"dataset {name!r} gives instance {instance} another text or label than {store} "
        f"holds ({shown!r}, label {before[1]}): the data changed since these results were "
        "stored, or another file of that name was read (a data file is named by its path "
        "from the config's folder). Pass --store "
        "NEW.sqlite for results of the new data, or point the config back at the data the "
        "store was filled from"
    )


def _changed_annotation(store: Path, dataset: str, instance: int, before: str, now: str) -> str:
    """The refusal of an instance whose evidence or foil changed since its results were
    stored (its text and label did not): the values that read them hold the old ones."""
    old, new = json.loads(before), json.loads(now)
    changed = _clashing_parts(before, now)
    shown = "; ".join(
        f"{key} {_shown_gold(new[key])}, stored {_shown_gold(old[key])}" for key in changed
    )
    readers = (
        "explanations and metric values computed over them"
        if changed == ["segments"]
        else "values of the metrics (or contrasts) that read it"
    )
    return (
        f"dataset {_dataset_name(dataset)!r} gives instance {instance} other "
        f"{' and '.join(changed)} than {store} holds ({shown}): the data changed since "
        f"these results were stored, and the {readers} would keep the old ones. Pass "
        "--store NEW.sqlite for results of the corrected data, or point the config back at "
        "the data the store was filled from"
    )


def _shown_gold(value: Any) -> str:
    """A recorded part as the refusal shows it: indices spaced, texts (segments) quoted
    in a list, so where one segment ends is seen."""
    if value is None:
        return "none"
    if isinstance(value, list) and any(isinstance(item, str) for item in value):
        return json.dumps(value, ensure_ascii=False)
    return " ".join(map(str, value)) if isinstance(value, list) else repr(value)


def _has_table(conn: sqlite3.Connection, name: str, schema: str = "main") -> bool:
    found = conn.execute(
        f"SELECT 1 FROM {schema}.sqlite_master WHERE type='table' AND name=?", (name,)
    )
    return found.fetchone() is not None


#: the compressions the bench reads and writes a store in (bench.archive), as written
_STORE_COMPRESSIONS = (".xz", ".gz")

#: suffixes of compressions the bench does not write: a store under such a name would be
#: plain SQLite that every tool opening it by its suffix takes for an archive
_FOREIGN_COMPRESSIONS = frozenset(ARCHIVE_SUFFIXES) - set(_STORE_COMPRESSIONS)


#: the suffixes of the formats a store is not (a table's, a config's, a model's weights):
#: a new store under such a name is refused
_OTHER_FORMATS = {
    **{s: kind for s, kind in FORMAT_SUFFIXES.items() if s != ".sqlite"},
    **MODEL_SUFFIXES,
}


def _misnamed_store(path: Path) -> Path | None:
    """The name to give a store named as something it is not, else ``None``: x.tzst and,
    whatever its last suffix, x.sqlite.zstd or x.sqlite.XZ (any suffix after .sqlite but
    the compressions the bench writes)."""
    fixed = misnamed_after_format(path, (".sqlite",), _STORE_COMPRESSIONS)
    if fixed is None and path.suffix.lower() in _FOREIGN_COMPRESSIONS:
        fixed = path.with_suffix("")
        fixed = fixed if fixed.suffix.lower() == ".sqlite" else fixed.with_suffix(".sqlite")
    return fixed


def _misnamed_advice(given: Path, fixed: Path, create: bool) -> tuple[str, Path | None]:
    """The name to give a store file named as no store (``given``, x.sqlite.XZ), whose
    name without that suffix is ``fixed``, and that name where the file is compressed
    (else None): for a file, the one name that fits what it holds (x.sqlite for plain
    SQLite, x.sqlite.gz for gzip data), free (renaming onto a store that is there would
    destroy it); for a new store, the names a store may have (for a run, which writes a
    plain store as it goes, the plain one only)."""
    from .archive import _KINDS, content_kind

    kind = content_kind(given) if given.is_file() else None
    if kind is None:
        if create or given.is_file():  # an empty file: filled by a run, as a plain store
            return f"name it {fixed}", None
        return f"name it {fixed} (or {fixed}.xz, {fixed}.gz)", None
    if kind == ".sqlite":
        fits = fixed
        advised = free_name(fits)
    else:
        fits = fixed.with_name(fixed.name + kind)
        advised = free_numbered_name(fits, 2 if fixed.suffix.lower() == ".sqlite" else 1)
    taken = f" ({fits} is another file)" if advised != fits else ""
    return (
        f"{given} is {_KINDS[kind]}: rename it to {advised}{taken}",
        None if kind == ".sqlite" else advised,
    )


def store_name_refusal(
    given: Path, named: str, create: bool, packed: str
) -> tuple[InvalidFileError | OutputPathError, Path | None] | None:
    """The refusal of a store named as something it is not, by the name the user gave
    (``given``; ``packed``: its compression suffix where it holds that compression), and
    the compressed name it advises (None where it advises a plain one); else None. An
    existing file holding neither SQLite nor a compression is said to be no store, not
    advised a name that would be refused next."""
    from .archive import content_kind, foreign_compression, tar_inside

    name = given.with_suffix("") if packed else given  # x.csv.xz: a store named x.csv
    fixed = _misnamed_store(name)
    if fixed is None:
        return None
    if given.is_file() and not given.stat().st_size:  # renaming an empty file is no fix
        from .archive import empty_compressed_store

        return InvalidFileError(empty_compressed_store(given, named)), None
    if given.is_file() and (tar := tar_inside(given, named)) is not None:
        return InvalidFileError(tar), None  # `tar czf x.tar.gz`: no rename makes it a store
    if not packed:  # x.sqlite.bz2 holding bzip2: renaming is no fix
        if (foreign := foreign_compression(given, named)) is not None:
            return InvalidFileError(foreign), None
        if given.is_file() and given.stat().st_size and content_kind(given) is None:
            return InvalidFileError(
                f"{named} is not a results store: it holds neither SQLite nor xz or gzip "
                "data; name the store a bench run wrote"
            ), None
    if packed:  # renaming onto a file that is there would destroy it: a free name
        fits = fixed.with_name(fixed.name + packed)
        advised = free_numbered_name(fits, 2 if fixed.suffix.lower() == ".sqlite" else 1)
        taken = f" ({fits} is another file)" if advised != fits else ""
        advice = f"name it {advised}{taken}"
    else:
        advice, advised = _misnamed_advice(given, fixed, create)
    return OutputPathError(
        f"{named}: a store is plain SQLite (.sqlite), and the bench reads and writes "
        f"compressed stores as .sqlite.xz or .sqlite.gz only; {advice}"
    ), advised


#: what SQLite says of a file that starts as one but whose pages are cut short or broken
_DAMAGE = ("database disk image is malformed", "file is not a database")

#: how long an open waits for another connection's switch to the write-ahead log
WAL_SWITCH_SECONDS = 60.0


def _write_ahead(connection: sqlite3.Connection) -> None:
    """Put the store in write-ahead-log mode, waiting for other connections doing the same.

    SQLite answers ``database is locked`` at once, without its busy timeout, to a
    connection switching a rollback-journal file (a decompressed copy, a store from
    ``xz -d``) while another switches it: several page requests opening one such store
    together must wait, not fail."""
    waited, pause = 0.0, 0.005
    while True:
        try:
            mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or waited >= WAL_SWITCH_SECONDS:
                raise
        time.sleep(pause)
        waited += pause
        pause = min(pause * 2, 0.2)


def _damaged(path: Path, error: sqlite3.DatabaseError) -> bool:
    """Whether ``path`` is an SQLite file (by its first bytes) that SQLite cannot read:
    damaged or cut short in a copy, not some other kind of file."""
    from .archive import content_kind

    return str(error) in _DAMAGE and content_kind(path) == ".sqlite"


def _is_config(path: Path) -> bool:
    """Whether ``path`` is a bench config: named .toml, or TOML with its methods or
    experiments."""
    if path.suffix.lower() == ".toml":
        return True
    try:
        import tomllib

        if path.stat().st_size > 2**20:
            return False
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return "methods" in raw or "experiments" in raw


def _not_a_store_advice(
    given: Path, role: str, advice: str | None, create: bool, flag: str | None = None
) -> str:
    """What to do about ``given``, a file that is no store: name the store where it is
    a config (the run's own, or the config passed where export wants the store); a
    command that reads a store pass the one a run wrote (moving the file away leaves
    none); only where a new store would be made, another name or the file moved away.
    ``flag``: how the command names its store where that is not ``role`` or ``--store``
    (serve has no --store: the STORE of --bench CONFIG=STORE)."""
    if _is_config(given):
        example = given.with_suffix(".sqlite")
        if role and not role.startswith("--"):  # a merge's source: its own advice
            where = f", e.g. {example}" if example != given else ""
            return f"it is a bench config, not a store; {advice or 'name a store'}{where}"
        flag = flag or role or "--store"
        if example == given:  # a config under a store's name
            return (
                f"it holds a bench config, not a store; {flag} takes the store's path "
                "(the .sqlite or .sqlite.xz file a run wrote)"
            )
        return f"{flag} names a bench config, not a store; give the store's path, e.g. {example}"
    if advice is not None:
        return advice
    if not create:
        return "pass as --store the store file (.sqlite or .sqlite.xz) a run wrote"
    return "pass another --store, or move this file away"


#: the tables every store of this schema has from its start
_SCHEMA_TABLES = frozenset(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA))


def _store_tables(conn: sqlite3.Connection, create: bool) -> set[str]:
    """The tables of the SQLite file ``conn`` reads, where it is a store of this
    normxlogit's schema (or, where ``create``, a file with no tables yet); reading only."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if tables and "meta" not in tables:
        raise sqlite3.DatabaseError("it holds other tables")
    if "meta" in tables:
        found = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if found is None or _schema_number(found[0]) != SCHEMA_VERSION:
            raise sqlite3.DatabaseError(
                f"schema version {_schema_shown(found)}, this normxlogit reads {SCHEMA_VERSION}"
            )
        if missing := sorted(_SCHEMA_TABLES - tables):  # a store's own tables, never added later
            tables_word = "table" if len(missing) == 1 else "tables"
            raise sqlite3.DatabaseError(f"it has no {', '.join(missing)} {tables_word}")
    elif not create:
        raise sqlite3.DatabaseError("it is empty")
    return tables


def _schema_number(value: object) -> int | None:
    """A store's ``schema_version`` as a whole number; None where it is none (text, NULL)."""
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number == value or str(number) == str(value).strip() else None


def _schema_shown(found: tuple | None) -> str:
    """The ``schema_version`` row ``found`` as a message names it: a number as it is,
    other text quoted, NULL said so, a missing row as ?."""
    if found is None:
        return "?"
    if found[0] is None:
        return "NULL"
    number = _schema_number(found[0])
    return str(number) if number is not None else repr(found[0])


def _check_tables_unchanged(path: Path, create: bool) -> None:
    """Refuse the file ``path`` where it is no store, on a read-only connection: the
    switch to the write-ahead log (a lasting mode, written into the file's header) is for
    stores only, and a file refused is left as it was. A file this connection cannot open
    (a write-ahead-log file whose index cannot be made, say) is checked after that switch,
    as before. Where no write-ahead log is beside it (no connection has it open), the file
    is read as immutable: a read-only connection would leave a -wal and -shm file behind
    (a write-ahead-log file's, refused or not)."""
    resolved = path.resolve()
    quiet = not any(resolved.with_name(resolved.name + s).exists() for s in ("-wal", "-shm"))
    try:
        conn = sqlite3.connect(
            f"{resolved.as_uri()}?mode=ro{'&immutable=1' if quiet else ''}", uri=True, timeout=60
        )
    except sqlite3.OperationalError:
        return
    try:
        _store_tables(conn, create)
    except sqlite3.OperationalError:
        return  # locked or unreadable read-only: the writing connection decides
    finally:
        conn.close()


class ResultStore:
    """A bench results store at ``path`` (created on first use). Opening it moves results
    stored under outdated method keys to their current ones, unless ``update_keys`` is
    False (a merge source, read as it is: the merge moves the rows it copies)."""

    def __init__(
        self,
        path: str | Path,
        *,
        create: bool = True,
        update_keys: bool = True,
        shown: str | Path | None = None,
        role: str = "",
        advice: str | None = None,
        flag: str | None = None,
    ):
        """``shown``: the file the user named (``path`` may be its decompressed copy);
        ``role`` and ``advice``: how errors name it (``--into``, ``source``) and what a
        refusal of a file that is no store suggests; ``flag``: how advice names the
        option that takes the store, where that is not ``role`` or ``--store``."""
        self.path = Path(path)
        given = Path(shown) if shown is not None else self.path
        self.shown = given  # what messages name: the copy is gone once the command ends
        named = f"{role} {given}" if role else str(given)
        if self.path.is_dir():
            raise OutputPathError(f"store {self.shown} is a folder; give a file name (.sqlite)")
        if create and not self.path.exists():  # "out/.sqlite": a hidden store, never meant
            refuse_suffix_only(given, role or "store")
        if given.name != bare_name(given.name) and not given.exists():
            if create:  # "r.sqlite ": a second store beside the r.sqlite the user sees
                refuse_blank_edges(given, role or "store")
            raise InvalidFileError(missing_store(given))
        self._check_name(given, named if role else f"store {given}", create)
        if not create and not self.path.is_file():
            raise InvalidFileError(missing_store(self.shown))
        if not create and self.path.stat().st_size == 0:  # opening would write a header
            raise InvalidFileError(
                f"{named} is an empty file, not a results store; "
                + (
                    advice
                    or "run `normxlogit bench CONFIG --store` with it to fill it, or pass "
                    "another --store"
                )
            )
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.is_file() and self.path.stat().st_size:
                _check_tables_unchanged(self.path, create)
            self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            _write_ahead(self._conn)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._check_schema(create)
            if update_keys:
                self._update_method_keys()
        except sqlite3.DatabaseError as error:
            from .archive import misnamed_content

            # xz data named .sqlite, say (a decompressed copy is no name the user gave)
            misnamed = misnamed_content(self.path) if given == self.path else None
            if misnamed is not None:
                raise InvalidFileError(f"{role} {misnamed}".strip()) from None
            if _damaged(self.path, error):
                raise InvalidFileError(
                    f"{named} is damaged ({error}): the file may be cut short; copy or fetch "
                    "it again"
                ) from None
            raise InvalidFileError(
                f"{named} is not a normxlogit results store ({error}); "
                + _not_a_store_advice(given, role, advice, create, flag)
            ) from None
        except OSError as error:
            raise OutputPathError(f"cannot open store {self.shown}: {error}") from None

    def _check_name(self, given: Path, named: str, create: bool) -> None:
        """Refuse a store named as something it is not, by the name the user gave
        (``given``: ``self.path`` may be its decompressed copy in a temporary folder)."""
        packed = given.suffix if given != self.path and given.suffix in _STORE_COMPRESSIONS else ""
        name = given.with_suffix("") if packed else given  # x.csv.xz: a store named x.csv
        refused = store_name_refusal(given, named, create, packed)
        if refused is not None:
            raise refused[0]
        kind = _OTHER_FORMATS.get(name.suffix.lower())
        if create and kind is not None and not self.path.exists():
            # a new store under a table's name: an export to that name would take it for one
            raise OutputPathError(
                f"{named}: that name says {kind}, and a store is SQLite; name it "
                f"{name.with_suffix('.sqlite')}{packed}"
            )

    def _check_schema(self, create: bool) -> None:
        tables = _store_tables(self._conn, create)
        if "meta" in tables:
            if not {"generations", "step_values"} <= tables:
                self._create(GENERATION_SCHEMA)
            return
        self._create(SCHEMA + GENERATION_SCHEMA, version=True)

    def _update_method_keys(self) -> None:
        """Move results stored under outdated method keys (written while execution
        options, or options at their default value, were part of them) and outdated
        protocol keys (a setting the metric does not read, as ``top_k`` for
        sanity_spearman, once part of them) to their current keys, in one transaction, so
        every reader, SQL of its own included, finds them in the cells they belong to.
        Checked again inside the transaction: a second process opening the store meanwhile
        finds nothing left to do; a store that cannot be written is named in one line."""
        methods = bool(_outdated_method_keys(self._conn))
        if not methods and not _outdated_protocol_keys(self._conn):
            return
        try:
            with self.transaction() as conn:
                _rename_outdated_keys(conn)
        except OutputPathError:
            why = (
                "method keys of an earlier normxlogit (execution options such as "
                "internal_batch_size, or options at their default value, in them)"
                if methods
                else "protocol keys of an earlier normxlogit (a setting the metric does not "
                "read in them, such as top_k for sanity_spearman)"
            )
            raise OutputPathError(
                f"{self.shown} holds results under {why}, which opening it "
                "updates, but it cannot be written (read-only, or its disk is full); make "
                "it writable, or open a writable copy"
            ) from None

    def _create(self, schema: str, version: bool = False) -> None:
        with self.transaction() as conn:
            for statement in schema.split(";"):
                if statement.strip():
                    conn.execute(statement)
            if version:
                conn.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All writes inside happen together or not at all; a store that cannot be
        written (a full disk, a read-only file) is one clear error naming it."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        except sqlite3.OperationalError as error:
            if not _WRITE_FAILURES.search(str(error)):
                raise
            raise OutputPathError(
                f"cannot write the store {self.shown}: {error}; free space there or pass "
                "another --store (what it held before is kept)"
            ) from None

    # ------------------------------------------------------------------ writing
    def add_instances(
        self,
        dataset: str,
        rows: Iterable[tuple[int, int | None, Any, Any]],
        annotations: Mapping[int, str] | None = None,
    ):
        """Record the texts and gold labels of a dataset's instances (once), and their
        ``annotations`` (JSON per instance: evidence, foil) where given.

        Refused, with nothing written, when the store holds another text, label or
        annotation for one of them: the data file changed since its results were stored,
        and reusing them would score the old texts (or evidence) under the new ones' names.
        """
        encoded = _encoded_instances(dataset, rows)
        with self.transaction() as conn:
            self._refuse_changed(conn, dataset, encoded)
            conn.executemany("INSERT OR IGNORE INTO instances VALUES (?, ?, ?, ?, ?)", encoded)
            if annotations:
                conn.execute(ANNOTATION_SCHEMA)
                stored = self._refuse_changed_annotations(conn, dataset, annotations)
                conn.executemany(
                    "INSERT OR REPLACE INTO annotations VALUES (?, ?, ?)",
                    [
                        (dataset, instance, _joined_gold(stored[instance], gold))
                        if instance in stored
                        else (dataset, instance, gold)
                        for instance, gold in annotations.items()
                    ],
                )

    def check_instances(
        self,
        dataset: str,
        rows: Iterable[tuple[int, int | None, Any, Any]],
        annotations: Mapping[int, str] | None = None,
    ):
        """Refuse, as :meth:`add_instances` does, instances whose stored text, label or
        annotation differs, writing nothing: ``bench status`` reads a store a run may be
        writing."""
        self._refuse_changed(self._conn, dataset, _encoded_instances(dataset, rows))
        if annotations and _has_table(self._conn, "annotations"):
            self._refuse_changed_annotations(self._conn, dataset, annotations)

    def _refuse_changed_annotations(
        self, conn: sqlite3.Connection, dataset: str, annotations: Mapping[int, str]
    ) -> dict[int, str]:
        """The stored records of ``dataset``, refused where one gives a part (evidence,
        foil) that ``annotations`` gives otherwise. ``annotations`` holds only the parts
        the config reads, so a part no metric reads may change without a refusal."""
        stored = dict(
            conn.execute("SELECT instance, gold FROM annotations WHERE dataset=?", (dataset,))
        )
        for instance, gold in annotations.items():
            before = stored.get(instance)
            if before is not None and _clashing_parts(before, gold):
                raise StaleResultsError(
                    _changed_annotation(self.shown, dataset, instance, before, gold)
                )
        return stored

    def _refuse_changed(self, conn: sqlite3.Connection, dataset: str, encoded: list[tuple]):
        stored = {
            instance: (text, label)
            for instance, text, label in conn.execute(
                "SELECT instance, text, label FROM instances WHERE dataset=?", (dataset,)
            )
        }
        for _, instance, _, text, label in encoded:
            before = stored.get(instance)
            if before is not None and before != (text, label):
                raise StaleResultsError(_changed_data(self.shown, dataset, instance, before))

    def model_fingerprint(self, model: str) -> str | None:
        """The fingerprint of the weights ``model``'s stored results were computed with
        (None: nothing recorded, a store written before fingerprints)."""
        row = self._conn.execute("SELECT value FROM meta WHERE key=?", (_MODEL + model,))
        found = row.fetchone()
        return None if found is None else found[0]

    def _claim_model(self, conn: sqlite3.Connection, model: str, fingerprint: str | None):
        """Record ``model``'s fingerprint, or refuse results of other weights under its
        name (inside the transaction that writes them)."""
        if fingerprint is None:
            return
        found = conn.execute("SELECT value FROM meta WHERE key=?", (_MODEL + model,)).fetchone()
        if found is None:
            conn.execute("INSERT INTO meta VALUES (?, ?)", (_MODEL + model, fingerprint))
        elif found[0] != fingerprint:
            raise StaleResultsError(
                f"model {model!r} is not the model whose results {self.shown} holds: its "
                "weights, task or tokenizer changed since, or another folder of that name was "
                f"read (a model folder is named by its path from the config's folder; "
                f"fingerprint {fingerprint}, "
                f"stored {found[0]}). Keep both sets of results apart: pass --store NEW.sqlite "
                "(or give the changed model another name in the config)"
            )

    def add_unit(
        self,
        cell: CellKey,
        explanations: Sequence[StoredExplanation],
        evaluations: Sequence[StoredEvaluation],
        fingerprint: str | None = None,
    ) -> bool:
        """One unit of work's explanations and metric values, in one transaction;
        ``fingerprint`` is the model's (:func:`~normxlogit.model.fingerprint.model_fingerprint`).

        Two runs may share a store: what another process stored first (an explanation, or
        a metric under the same protocol) is kept and this unit's copy of it skipped; an
        explanation that ``replaces`` the stored one (more steps of a generation) does.
        Returns whether the store took anything of this unit (False: another run had
        stored all of it first), so a run counts only what it stored itself.
        """
        key = (cell.model, cell.dataset, cell.method, cell.seed)
        with self.transaction() as conn:
            self._claim_model(conn, cell.model, fingerprint)
            before = conn.total_changes
            for replaces, verb in ((False, "INSERT OR IGNORE"), (True, "INSERT OR REPLACE")):
                conn.executemany(
                    f"{verb} INTO explanations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            cell.model,
                            cell.dataset,
                            e.instance,
                            cell.method,
                            cell.seed,
                            e.tokens,
                            e.seconds,
                            e.batch,
                            json.dumps(e.payload),
                        )
                        for e in explanations
                        if e.replaces == replaces
                    ],
                )
            for evaluation in evaluations:
                if _stored_evaluation(conn, key, evaluation):
                    continue  # another run on this store was first
                cursor = conn.execute(
                    "INSERT INTO evaluations (model, dataset, instance, method, seed, metric, "
                    "protocol, seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        cell.model,
                        cell.dataset,
                        evaluation.instance,
                        cell.method,
                        cell.seed,
                        evaluation.metric,
                        evaluation.protocol,
                        evaluation.seconds,
                    ),
                )
                if evaluation.stepped:
                    conn.executemany(
                        "INSERT INTO step_values (evaluation, step, axis, x, value, gold) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        [(cursor.lastrowid, *row) for row in evaluation.rows],
                    )
                    continue
                conn.executemany(
                    "INSERT INTO metric_values VALUES (?, ?, ?, ?, ?)",
                    [(cursor.lastrowid, *row) for row in evaluation.rows],
                )
            return conn.total_changes > before or not (explanations or evaluations)

    def add_generations(
        self,
        model: str,
        dataset: str,
        max_new_tokens: int,
        generated: dict[int, list[int]],
        fingerprint: str | None = None,
    ) -> bool:
        """What the model wrote for each instance (once: a second write keeps the first).
        Returns whether the store took any of it (False: another run had stored it all)."""
        with self.transaction() as conn:
            self._claim_model(conn, model, fingerprint)
            before = conn.total_changes
            conn.executemany(
                "INSERT OR IGNORE INTO generations VALUES (?, ?, ?, ?, ?)",
                [
                    (model, dataset, instance, max_new_tokens, json.dumps(list(ids)))
                    for instance, ids in generated.items()
                ],
            )
            return conn.total_changes > before or not generated

    def generations(self, model: str, dataset: str, max_new_tokens: int) -> dict[int, list[int]]:
        """The stored generations of a model on a dataset, by instance."""
        rows = self._conn.execute(
            "SELECT instance, ids FROM generations WHERE model=? AND dataset=? AND "
            "max_new_tokens=?",
            (model, dataset, max_new_tokens),
        )
        return {instance: json.loads(ids) for instance, ids in rows}

    def mark_skipped(self, cell: CellKey, reason: str, fingerprint: str | None = None) -> None:
        """A method that does not apply to a model (a table shows N/A)."""
        with self.transaction() as conn:
            self._claim_model(conn, cell.model, fingerprint)
            conn.execute(
                "INSERT OR REPLACE INTO skipped VALUES (?, ?, ?, ?, ?)",
                (cell.model, cell.dataset, cell.method, cell.seed, reason),
            )

    def start_run(self, config: str, engine: str) -> int:
        with self.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO runs (config, engine, started) VALUES (?, ?, ?)",
                (config, engine, time.time()),
            )
            return int(cursor.lastrowid)

    def finish_run(self, run: int) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE runs SET finished = ? WHERE id = ?", (time.time(), run))

    def merge_from(self, source: str | Path, shown: str | Path | None = None) -> dict[str, int]:
        """Copy into this store what the store at ``source`` holds and this one lacks.

        Stores written on different machines (a GPU box, a cluster, another session) join
        into one: explanations, metric values and N/A cells are keyed as in a run, so a
        result held by both is kept once (this store's copy). Refused, with nothing
        written, when the two disagree on a dataset's texts. Returns the rows added per
        table.
        """
        source = Path(source)
        shown = Path(shown) if shown is not None else source  # the name errors give
        if source.resolve() == self.path.resolve():
            raise InvalidFileError(f"{source} is the store being merged into; name another")
        # a store of this schema, or a clear error; its keys are moved in the merge
        ResultStore(
            source,
            create=False,
            update_keys=False,
            shown=shown,
            role="source",
            advice="name the stores to merge (.sqlite, .sqlite.xz, .sqlite.gz)",
        ).close()
        before = self.counts()
        self._conn.execute("ATTACH DATABASE ? AS source", (str(source),))
        try:
            with self.transaction() as conn:
                _copy_rows(conn, shown)
                _rename_outdated_keys(conn)
        finally:
            self._conn.execute("DETACH DATABASE source")
        after = self.counts()
        return {table: after[table] - before[table] for table in after}

    # ------------------------------------------------------------------ reading
    def explained(self, cell: CellKey) -> set[int]:
        """Instances of ``cell`` whose explanation is stored."""
        rows = self._conn.execute(
            "SELECT instance FROM explanations WHERE model=? AND dataset=? AND method=? AND seed=?",
            (cell.model, cell.dataset, cell.method, cell.seed),
        )
        return {row[0] for row in rows}

    def evaluated(self, cell: CellKey) -> dict[tuple[str, str], set[int]]:
        """For each (metric, protocol), the instances of ``cell`` whose values exist."""
        rows = self._conn.execute(
            "SELECT metric, protocol, instance FROM evaluations WHERE model=? AND dataset=? "
            "AND method=? AND seed=?",
            (cell.model, cell.dataset, cell.method, cell.seed),
        )
        done: dict[tuple[str, str], set[int]] = {}
        for metric, protocol, instance in rows:
            done.setdefault((metric, protocol), set()).add(instance)
        return done

    def skipped(self, cell: CellKey) -> str | None:
        row = self._conn.execute(
            "SELECT reason FROM skipped WHERE model=? AND dataset=? AND method=? AND seed=?",
            (cell.model, cell.dataset, cell.method, cell.seed),
        ).fetchone()
        return row[0] if row else None

    def explanations(self, cell: CellKey, instances: Iterable[int]) -> dict[int, dict]:
        """Stored explanation payloads of ``instances`` (those that exist)."""
        wanted = sorted(set(instances))
        found: dict[int, dict] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT instance, payload FROM explanations WHERE model=? AND dataset=? AND "
                f"method=? AND seed=? AND instance IN ({marks})",
                (cell.model, cell.dataset, cell.method, cell.seed, *chunk),
            )
            found.update({instance: json.loads(payload) for instance, payload in rows})
        return found

    def values(self) -> pd.DataFrame:
        """Every stored metric value, one row per instance x method x metric x point (and
        generated step: ``step`` is empty for the values of classification experiments)."""
        columns = "e.model, e.dataset, e.instance, e.method, e.seed, e.metric, e.protocol"
        query = (
            f"SELECT {columns}, NULL AS step, v.axis, v.x, v.value, v.gold, e.id AS _e, "
            "v.rowid AS _r FROM metric_values v JOIN evaluations e ON v.evaluation = e.id "
            f"UNION ALL SELECT {columns}, v.step, v.axis, v.x, v.value, v.gold, e.id, v.rowid "
            "FROM step_values v JOIN evaluations e ON v.evaluation = e.id ORDER BY _e, _r"
        )
        frame = pd.read_sql_query(query, self._conn).drop(columns=["_e", "_r"])
        frame["step"] = frame["step"].astype("Int64")
        return frame

    def valueless(self) -> pd.DataFrame:
        """Evaluations stored with no value (an instance whose explanation contrasts its
        target with itself explains nothing): one row per model, dataset, instance,
        method, seed, metric and protocol."""
        query = (
            "SELECT model, dataset, instance, method, seed, metric, protocol FROM evaluations e "
            "WHERE NOT EXISTS (SELECT 1 FROM metric_values v WHERE v.evaluation = e.id) "
            "AND NOT EXISTS (SELECT 1 FROM step_values v WHERE v.evaluation = e.id)"
        )
        return pd.read_sql_query(query, self._conn)

    def seconds_spent(self, cell: CellKey) -> float:
        """Seconds the stored explanations and metric values of ``cell`` took."""
        key = (cell.model, cell.dataset, cell.method, cell.seed)
        where = "WHERE model=? AND dataset=? AND method=? AND seed=?"
        return sum(
            self._conn.execute(
                f"SELECT COALESCE(SUM(seconds), 0) FROM {table} {where}", key
            ).fetchone()[0]
            for table in ("explanations", "evaluations")
        )

    def timings(self) -> pd.DataFrame:
        """Explain time per instance with its length: the efficiency experiments' data."""
        query = (
            "SELECT model, dataset, instance, method, seed, tokens, seconds, batch "
            "FROM explanations ORDER BY rowid"
        )
        return pd.read_sql_query(query, self._conn)

    def skipped_cells(self) -> pd.DataFrame:
        return pd.read_sql_query("SELECT * FROM skipped", self._conn)

    def instance(self, dataset: str, instance: int) -> dict[str, Any] | None:
        row = self._conn.execute(
            "SELECT row, text, label FROM instances WHERE dataset=? AND instance=?",
            (dataset, instance),
        ).fetchone()
        if row is None:
            return None
        return {"row": row[0], "text": json.loads(row[1]), "label": json.loads(row[2])}

    def instance_count(self, dataset: str) -> int:
        """How many instances of ``dataset`` were planned into the store."""
        row = self._conn.execute(
            "SELECT COUNT(*) FROM instances WHERE dataset=?", (dataset,)
        ).fetchone()
        return int(row[0])

    def counts(self) -> dict[str, int]:
        """How many rows each table holds."""
        tables = (
            "instances",
            "explanations",
            "evaluations",
            "metric_values",
            "skipped",
            "runs",
            "generations",
            "step_values",
        )
        return {t: self._conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}

    def runs(self) -> pd.DataFrame:
        return pd.read_sql_query("SELECT * FROM runs ORDER BY id", self._conn)


#: tables whose rows are work done (a store holding none of them holds no results)
_RESULT_TABLES = ("explanations", "evaluations", "skipped", "generations")


@contextmanager
def opened_store(path: str | Path, **options: Any) -> Iterator[ResultStore]:
    """The store at ``path``, created where missing; a store this call created is removed
    again when the work inside fails before storing any result (an unknown dataset, a
    refused merge), so a mistake never leaves an empty ``.sqlite`` behind. ``options``:
    :class:`ResultStore`'s ``shown``, ``role`` and ``advice``."""
    path = Path(path)
    existed = path.exists()
    store = ResultStore(path, **options)
    try:
        yield store
    except BaseException:
        empty = not existed and not any(store.counts()[t] for t in _RESULT_TABLES)
        store.close()
        if empty:
            for leftover in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm"))):
                leftover.unlink(missing_ok=True)
        raise
    store.close()


def is_results_store(path: Path) -> bool:
    """Whether the plain file ``path`` opens as a results store, as ``merge --into`` opens
    it (an SQLite file of other tables, or a damaged one, does not)."""
    from ..common.errors import NormXLogitError
    from .archive import content_kind

    if content_kind(path) != ".sqlite":
        return False
    try:
        ResultStore(path, create=False, update_keys=False, shown=path).close()
    except NormXLogitError:
        return False
    return True


def store_content_refusal(path: Path, kind: str) -> str | None:
    """Why the file ``path``, holding ``kind`` (``.sqlite``, or ``.gz`` data of a plain
    SQLite file) by its first bytes, holds no results store ("it holds other tables", "its
    gzip data is no SQLite file"); None where it holds one. Read only: ``path`` and its
    folder are left as they were."""
    import gzip
    import shutil
    import tempfile

    from .archive import content_kind

    if kind != ".gz":
        return _plain_content_refusal(path)
    with tempfile.TemporaryDirectory(prefix="normxlogit-store-") as folder:
        plain = Path(folder) / "store.sqlite"
        try:
            with gzip.open(path, "rb") as packed, open(plain, "wb") as out:
                shutil.copyfileobj(packed, out, 4 * 2**20)
        except (OSError, EOFError) as error:
            return f"its gzip data cannot be read: {error}"
        if content_kind(plain) != ".sqlite":
            return "its gzip data is no SQLite file"
        return _plain_content_refusal(plain)


def _plain_content_refusal(path: Path) -> str | None:
    """Why the plain SQLite file ``path`` holds no results store; None where it holds one."""
    try:
        if path.stat().st_size == 0:
            return "it is empty"
        _check_tables_unchanged(path, create=False)
    except OSError as error:
        return f"it cannot be read: {error.strerror or error}"
    except sqlite3.DatabaseError as error:
        return str(error)
    return None


@dataclass(frozen=True)
class UnpackPlan:
    """Where the compressed store ``packed`` is unpacked for a run (which writes a plain
    store as it goes), by what is at its plain name beside it: ``plain``, that name;
    ``fresh``, a free name (``plain`` where nothing is there); ``beside``, what is at
    ``plain`` where something is: "not a store file", "not a results store", "an empty
    file", a link loop or a link to nowhere (named; unpack into ``fresh``), or "a results
    store" (a merge into ``plain`` adds to it; ``fresh`` is a new one)."""

    packed: Path
    plain: Path
    fresh: Path
    beside: str | None

    def merge(self, into: Path) -> str:
        """The command that unpacks ``packed`` into ``into``."""
        return f"normxlogit bench merge {self.packed} --into {into}"


def unpack_plan(packed: Path) -> UnpackPlan:
    """How to unpack the compressed store ``packed`` for a run: the same advice from
    ``bench run --store X.sqlite.xz`` and from the page's "not computed yet"."""
    plain = packed.with_suffix("")
    if plain.suffix.lower() != ".sqlite":  # x.tar.gz: a store is named .sqlite
        plain = plain.with_suffix(".sqlite")
    if not plain.exists() and not plain.is_symlink():
        return UnpackPlan(packed, plain, plain, None)
    fresh = free_name(plain)
    if not plain.exists():  # a link loop or a link to nowhere: a merge into it is refused
        return UnpackPlan(packed, plain, fresh, _broken_link_phrase(plain))
    # a folder, or a file holding no store (an empty one too: no results to add to)
    if not plain.is_file():
        return UnpackPlan(packed, plain, fresh, "not a store file")
    if not is_results_store(plain):
        said = "an empty file" if plain.stat().st_size == 0 else "not a results store"
        return UnpackPlan(packed, plain, fresh, said)
    return UnpackPlan(packed, plain, fresh, "a results store")


def _broken_link_phrase(link: Path) -> str:
    """The link ``link`` that leads to no file, described: a link loop in the words the
    bench names one elsewhere, else a link to nowhere naming its target."""
    from ..common.outputs import link_loop_phrase

    if (loop := link_loop_phrase(link)) is not None:
        return loop
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    return f"a link to nowhere (its target {target} does not exist)"
