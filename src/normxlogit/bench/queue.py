"""The GPU queue: what lent GPU slots run, in order, and where each entry's results live.

A queue file (``experiments/gpu-queue.toml``) lists entries; each names a bench config,
the experiments and methods of it to run, how many instances (``limit``), and the
committed store its results are merged into. A slot (:mod:`normxlogit.bench.slot`) runs
the entries in order until its deadline; what an entry's store already holds is not run
again. Paths in the file are relative to it (to the file a link to it points to).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..common.errors import InvalidFileError, InvalidInputError
from ..common.input_paths import (
    bare_name,
    blank_edge_hint,
    decode_utf8,
    free_name,
    free_numbered_name,
    missing_name,
    own_folder,
    shown_name,
)
from ..common.outputs import blank_edge
from .slot import COMMAND_SECONDS, MINIMUM_DEADLINE, MINIMUM_DEADLINE_PARTS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: seconds a slot runs by default: 9 minutes of a device's 10-minute command limit
DEFAULT_DEADLINE = 540.0

_ENTRY_KEYS = {"name", "config", "experiments", "methods", "limit", "store", "why"}
_QUEUE_KEYS = {"title", "deadline", "dtype", "continuations", "entries"}


@dataclass(frozen=True)
class QueueEntry:
    """One line of the queue: part of a bench config, and the store it fills."""

    name: str
    config: Path
    experiments: tuple[str, ...]
    methods: tuple[str, ...]
    limit: int | None
    store: Path
    why: str = ""


@dataclass(frozen=True)
class GpuQueue:
    """A queue file as read: its entries in order, the slot's deadline and precision."""

    path: Path
    title: str
    entries: tuple[QueueEntry, ...]
    deadline: float = DEFAULT_DEADLINE
    dtype: str | None = None
    #: a store of continuations written ahead (``bench generate``), copied into every
    #: slot so that a slot never generates
    continuations: Path | None = None

    def entry(self, name: str) -> QueueEntry:
        for entry in self.entries:
            if entry.name == name:
                return entry
        known = ", ".join(e.name for e in self.entries)
        raise InvalidInputError(
            f"no queue entry named {name!r} in {self.path}; its entries: {known}"
        )

    def only(self, names: list[str] | None) -> GpuQueue:
        """The queue narrowed to the entries called ``names`` (None: all), in queue order."""
        if not names:
            return self
        for name in names:
            self.entry(name)
        return replace(self, entries=tuple(e for e in self.entries if e.name in names))


PROJECT_MODULES = ("torch", "transformers")


def check_environment(script: str) -> None:
    """``pack`` and ``estimate`` read the queue's configs, which needs the project's
    environment; run by another Python (the docs' ``python3``, no venv active) they would
    fail deep inside with a ModuleNotFoundError. (``slot`` needs only the standard library.)"""
    import importlib.util

    missing = [name for name in PROJECT_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise InvalidInputError(
            f"{script} runs in the project's environment, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed for {sys.executable}: "
            f"run `make setup`, then `.venv/bin/python {script}` (or activate .venv first)"
        )


def load_queue(path: str | Path) -> GpuQueue:
    """Read and check a queue file (every config it names is read too)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InvalidFileError(f"no queue file at {missing_name(path)}") from None
    except OSError as error:
        raise InvalidFileError(f"{path} is not a readable TOML queue: {error}") from None
    # a byte-order mark is skipped; UTF-16, UTF-32 and other encodings are refused with
    # the byte and how to re-encode, as bench configs are (bench/config.py load_config)
    text = decode_utf8(raw, str(path), f"`iconv -t utf-8 {path.name}`")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        from .config import toml_fix

        keys = _QUEUE_KEYS | _ENTRY_KEYS
        examples = {"deadline": round(DEFAULT_DEADLINE)}
        fix = toml_fix(error, {("entries",)}, keys, examples, "the queue")
        raise InvalidFileError(f"{path} is not a readable TOML queue: {error}{fix}") from None
    unknown = set(data) - _QUEUE_KEYS
    if unknown:
        raise InvalidFileError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))}; a queue has "
            f"{', '.join(sorted(_QUEUE_KEYS))}"
        )
    entries = data.get("entries")
    if not isinstance(entries, list) or not entries:
        raise InvalidFileError(f"{path}: no [[entries]]; a queue lists at least one")
    deadline = data.get("deadline", DEFAULT_DEADLINE)
    if not isinstance(deadline, int | float) or isinstance(deadline, bool) or not deadline > 0:
        raise InvalidFileError(f"{path}: deadline must be a number of seconds above 0")
    if deadline < MINIMUM_DEADLINE:
        raise InvalidFileError(
            f"{path}: deadline = {deadline:g} is under the {MINIMUM_DEADLINE:.0f} s a slot "
            f"needs ({MINIMUM_DEADLINE_PARTS}); give at least {MINIMUM_DEADLINE:.0f} (the "
            f"default is {DEFAULT_DEADLINE:.0f})"
        )
    if not deadline < COMMAND_SECONDS:  # inf and nan too
        raise InvalidFileError(
            f"{path}: deadline = {deadline} is not under a device command's limit of "
            f"{COMMAND_SECONDS:.0f} s, so the slot would be stopped before it sends its rows "
            f"back; keep it below (the default {DEFAULT_DEADLINE:.0f} leaves time to start "
            "and export)"
        )
    dtype = _queue_dtype(data.get("dtype"), path)
    continuations = _continuations(data.get("continuations"), path)
    read = [_entry(raw, path, i) for i, raw in enumerate(entries, 1)]
    names = [e.name for e in read]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InvalidFileError(f"{path}: entry name(s) {', '.join(repeated)} used twice")
    queue = GpuQueue(
        path=path,
        title=_queue_title(data.get("title", path.stem), path),
        entries=tuple(read),
        deadline=float(deadline),
        dtype=dtype,
        continuations=continuations,
    )
    for entry in queue.entries:
        entry_config(queue, entry)  # every config, experiment and method name is checked now
    return queue


def _queue_dtype(value: Any, path: Path) -> str | None:
    """The queue's precision by its canonical name; a wrong one is refused naming the
    file, as every queue error is (None: the configs' own)."""
    if value is None:
        return None
    from ..common.errors import InvalidOptionError
    from ..model.precision import DTYPE_NAMES, dtype_name

    if isinstance(value, str):
        try:
            return dtype_name(value)
        except InvalidOptionError as error:
            raise InvalidFileError(f"{path}: {error}") from None
    raise InvalidFileError(
        f"{path}: dtype = {value!r} must be a precision's name, one of "
        f'{", ".join(DTYPE_NAMES)} (e.g. dtype = "bfloat16"), or left out'
    )


def _continuations(value: Any, path: Path) -> Path | None:
    """The store of continuations, beside the queue (None: none written ahead)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidFileError(
            f"{path}: continuations = {value!r} must be the path of a store, e.g. "
            'continuations = "continuations.sqlite.xz", or left out'
        )
    return own_folder(path) / value


def _queue_title(value: Any, path: Path) -> str:
    """The queue's title as written: a number would be shown as a text nobody wrote."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidFileError(
            f'{path}: title = {value!r} must be a text, e.g. title = "GPU queue", or left out'
        )
    return value


#: an entry's string keys: what each names, and an example
_ENTRY_WHAT = {
    "name": "the entry's name",
    "config": "the bench config's path from the queue's folder",
    "store": "the results store's path from the queue's folder",
}
_ENTRY_EXAMPLES = {
    "name": '"sst2"',
    "config": '"pisoft-classification.toml"',
    "store": '"stores/pisoft-classification.sqlite.xz"',
}


def _entry(raw: Any, path: Path, number: int) -> QueueEntry:
    where = f"{path}, entry {number}"
    if not isinstance(raw, dict):
        raise InvalidFileError(f"{where}: an entry is a table ([[entries]])")
    unknown = set(raw) - _ENTRY_KEYS
    if unknown:
        raise InvalidFileError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; an entry has "
            f"{', '.join(sorted(_ENTRY_KEYS))}"
        )
    for key, example in _ENTRY_EXAMPLES.items():
        if isinstance(raw.get(key), str) and not raw[key].strip():
            raise InvalidFileError(
                f"{where}: {key} is empty; give {_ENTRY_WHAT[key]}, e.g. {key} = {example}"
            )
        if not isinstance(raw.get(key), str):
            raise InvalidFileError(f"{where}: {key} must be given as a string")
    _check_store_name(raw["store"], f"{where} ({raw['name']})", own_folder(path))
    limit = raw.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise InvalidFileError(f"{where}: limit must be a whole number of instances above 0")
    lists = {}
    for key in ("experiments", "methods"):
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidFileError(f"{where}: {key} must be a list of names")
        if key in raw and not value:  # not "all": a config's own methods = [] is refused
            raise InvalidFileError(
                f"{where} ({raw['name']}): {key} = [] runs no {key[:-1]}; list the "
                f"{key} to run, or leave the key out to run all of the config's"
            )
        lists[key] = tuple(value)
    return QueueEntry(
        name=raw["name"],
        config=own_folder(path) / raw["config"],
        experiments=lists["experiments"],
        methods=lists["methods"],
        limit=limit,
        store=own_folder(path) / raw["store"],
        why=str(raw.get("why", "")),
    )


#: the name a queue entry's store ends in: the compressed form the bench commits
STORE_SUFFIX = ".sqlite.xz"


def _check_store_name(store: str, where: str, folder: Path | None = None) -> None:
    """Refuse a ``store`` that ``bench merge --into`` would refuse after the slot has
    run: the name the slot's rows are merged into ends in .sqlite.xz after a name. A
    misnamed store file there (``folder``: the queue's) is advised by what it holds, as
    the bench advises it (:func:`_misnamed_store_file`)."""
    name = Path(store).name
    if bare_name(name) and bare_name(name) != name:  # the slot would fill "x.sqlite.xz "
        bare = (Path(store).parent / bare_name(name)).as_posix()
        end = bare_name(name, start=False) != name
        raise InvalidFileError(
            f"{where}: store = {store!r}: its name {'ends in' if end else 'starts with'} "
            f"{blank_edge(name, end)}, which a terminal does not show; write "
            f'store = "{bare}"'
        )
    if folder is not None:
        _store_by_content(store, where, folder)
    if name.endswith(STORE_SUFFIX) and name[: -len(STORE_SUFFIX)].strip(".").strip():
        return
    if folder is not None:
        _misnamed_store_file(store, where, folder)
    stem = name.split(".")[0].strip() or "results"
    example = (Path(store).parent / f"{stem}{STORE_SUFFIX}").as_posix()
    cased = name.lower().endswith(STORE_SUFFIX) and name[: -len(STORE_SUFFIX)].strip(".").strip()
    if cased:  # x.SQLITE.xz: merge takes it, the queue not (".sqlite.xz" alone is no name)
        example = (Path(store).parent / f"{name[: -len(STORE_SUFFIX)]}{STORE_SUFFIX}").as_posix()
        raise InvalidFileError(
            f"{where}: store = {store!r}: a queue names its store in lower case, ending in "
            f'{STORE_SUFFIX}; write store = "{example}"'
        )
    raise InvalidFileError(
        f"{where}: store = {store!r} is no name a slot's rows can be merged into (bench "
        f"merge --into would refuse it after the slot ran): name a compressed store, a "
        f'name ending in {STORE_SUFFIX}, e.g. store = "{example}"'
    )


def _store_by_content(store: str, where: str, folder: Path) -> None:
    """Refuse the existing ``store`` file (``folder``: the queue's) that holds a store in
    another form than the xz a queue's store is (plain SQLite or gzip data, under its own
    name or under .sqlite.xz), advising the rename its content needs (if any), then the
    merge that makes the .sqlite.xz a queue entry names, so its results are kept; a tar
    archive is said to be one."""
    from .archive import _KINDS, content_kind, tar_inside
    from .store import store_content_refusal

    path = folder / store
    if not path.is_file():
        return
    kind = content_kind(path)
    if kind in (".xz", ".gz") and (tar := tar_inside(path, f"{where}: store = {store!r}")):
        raise InvalidFileError(tar)
    name, lower = path.name, path.name.lower()
    if lower.endswith(STORE_SUFFIX) and kind in (".sqlite", ".gz"):
        stem = name[: -len(STORE_SUFFIX)]
    elif (name.endswith(".sqlite") and kind == ".sqlite") or (
        name.endswith(".sqlite.gz") and kind == ".gz"
    ):
        stem = name[: -len(".sqlite" if kind == ".sqlite" else ".sqlite.gz")]
    else:
        return
    if (why := store_content_refusal(path, kind)) is not None:  # a merge of it would refuse it
        raise InvalidFileError(
            f"{where}: store = {store!r} holds no results store (it is {_KINDS[kind]}; "
            f"{why}): name another store, or move this file away"
        )
    stem = stem if stem.strip(".").strip() else "results"  # ".sqlite.xz": no name
    readable = path.with_name(stem + (".sqlite" if kind == ".sqlite" else ".sqlite.gz"))
    target = path.with_name(stem + STORE_SUFFIX)
    said = f"{where}: store = {store!r} is {_KINDS[kind]}"
    if readable != path:  # x.sqlite.xz holding plain SQLite: read under its own name
        readable = free_name(readable) if kind == ".sqlite" else free_numbered_name(readable, 2)
        said += f", which its name does not say: rename it to {readable}, then"
    else:
        said += f", and a queue's store is xz-compressed ({STORE_SUFFIX}):"
    if target != path:  # after the rename, the store's own name is free
        target = free_numbered_name(target, 2)
    shown = (Path(store).parent / target.name).as_posix()  # as the queue names it
    raise InvalidFileError(
        f"{said} compress it as xz (normxlogit bench merge {readable} --into {target}), and "
        f'write store = "{shown}"'
    )


def _misnamed_store_file(store: str, where: str, folder: Path) -> None:
    """Refuse the existing ``store`` file whose name misspells a store's (``g.sqlite.GZ``)
    with the bench's own store-name check (what it holds: rename it, or that it holds no
    store), then how to make the .sqlite.xz a queue entry names."""
    from .archive import content_kind
    from .store import store_name_refusal

    path = folder / store
    if not path.is_file():
        return
    kind = content_kind(path)
    packed = path.suffix if path.suffix in (".xz", ".gz") and kind == path.suffix else ""
    refused = store_name_refusal(path, f"{where}: store = {store!r}", False, packed)
    if refused is None and packed and path.name.lower().endswith(".sqlite" + packed):
        # x.SQLITE.xz: the bench reads it, the queue takes x.sqlite.xz only; renamed, the
        # store (and its results) is the queue's, not a new one
        stem = path.name[: -len(".sqlite" + packed)]
        named = stem.strip(".").strip()  # ".SQLITE.xz", ".sqlite.xz": no name but the suffix
        why = "in lower case" if named else f"with a name before {STORE_SUFFIX}"
        cased = path.with_name((stem if named else "results") + ".sqlite" + packed)
        refused = (
            InvalidFileError(
                f"{where}: store = {store!r}: a queue names its store {why}; "
                f"rename it to {free_numbered_name(cased, 2)}"
            ),
            free_numbered_name(cased, 2),
        )
    if refused is None:
        return
    error, advised = refused
    if advised is None:
        raise error
    lower = advised.name.lower()
    if lower.endswith((".sqlite.xz", ".sqlite.gz")) and not advised.name.endswith(
        (".sqlite.xz", ".sqlite.gz")
    ):  # x.SQLITE.xz: the bench takes it, the queue takes x.sqlite.xz only
        cased = free_numbered_name(
            advised.with_name(advised.name[: -len(".sqlite.xz")] + lower[-len(".sqlite.xz") :]),
            2,
        )
        error = InvalidFileError(str(error).replace(str(advised), str(cased)))
        advised = cased
    shown = Path(store).parent / advised.name  # as the queue names it
    if advised.name.endswith(STORE_SUFFIX):
        raise InvalidFileError(f'{error}, and write store = "{shown.as_posix()}"')
    plain = shown.with_suffix("") if shown.suffix in (".gz", ".xz") else shown
    xz = plain.with_name(plain.name + ".xz") if plain.suffix == ".sqlite" else None
    if xz is None:
        raise error
    raise InvalidFileError(
        f"{error}, then recompress it as xz (normxlogit bench merge {advised} --into "
        f'{advised.parent / xz.name}) and write store = "{xz.as_posix()}"'
    )


def limit_notes(queue: GpuQueue) -> list[str]:
    """A note per entry whose ``limit`` is above an experiment's own ``limit`` (a queue's
    limit only caps, as ``bench run --limit`` does: the experiment keeps its own)."""
    from .runner import limits_below

    notes = []
    for entry in queue.entries:
        for name, own in limits_below(entry_config(queue, entry), entry.limit):
            notes.append(
                f"note: entry {entry.name}: limit = {entry.limit} is above limit = {own} of "
                f"experiment {name!r} in {entry.config.name}, which stays: {own} instances; "
                "raise that limit to run more"
            )
    return notes


def entry_config(queue: GpuQueue, entry: QueueEntry):
    """The bench config of ``entry``: its config file narrowed to its experiments and
    methods, in the queue's precision."""
    from .config import load_config

    if not entry.config.exists():  # named in the queue, read from the queue's folder
        where = _where(queue, entry)
        try:
            named = entry.config.relative_to(own_folder(queue.path)).as_posix()
        except ValueError:
            named = str(entry.config)
        folder = own_folder(queue.path).resolve()
        hint = blank_edge_hint(entry.config)  # "g.toml ": quoted, g.toml named
        raise InvalidFileError(
            f"{queue.path}, {where}: config {shown_name(named)} not found in {folder}{hint} "
            "(a queue's "
            "configs and stores are read from the queue's folder); put the queue beside its "
            "configs, or give each config's path relative to the queue"
        )
    config = load_config(entry.config)
    try:
        if entry.experiments:
            _check_names(
                entry.experiments, "experiments", [e.name for e in config.experiments], config
            )
            config = config.only(list(entry.experiments))
        if entry.methods:
            known = dict.fromkeys(m.display for e in config.experiments for m in e.methods)
            _check_names(entry.methods, "methods", list(known), config)
            config = config.only_methods(list(entry.methods))
    except InvalidInputError as error:  # the mistake is the queue's: name its entry
        raise InvalidFileError(f"{queue.path}, {_where(queue, entry)}: {error}") from None
    return config.with_dtype(queue.dtype)


def _where(queue: GpuQueue, entry: QueueEntry) -> str:
    numbers = [i for i, e in enumerate(queue.entries, 1) if e is entry]
    return f"entry {numbers[0]} ({entry.name})" if numbers else f"entry {entry.name}"


def _check_names(names: tuple[str, ...], key: str, known: list[str], config) -> None:
    """An empty name of ``key`` said to be empty (it vanished in "no method shown as  in")."""
    for number, name in enumerate(names):
        if not name.strip():
            what = "a method label" if key == "methods" else "an experiment name"
            raise InvalidInputError(
                f"{key}[{number}] is empty; give {what} of {config.path} ({', '.join(known)})"
            )
