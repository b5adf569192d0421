"""Compressed stores: ``.sqlite.xz`` / ``.sqlite.gz`` files that the bench reads and merges.

A results store is mostly repeated keys and JSON, so it compresses about tenfold. The
project commits its stores compressed (a lent GPU machine takes the whole tree with every
command, 64 MiB at most), and a GPU slot sends its new rows back compressed. Reading one
(``bench status``, ``export``, ``report``) decompresses it into a private temporary folder;
merging into one decompresses, merges and writes the compressed file back atomically.
Nothing here changes a stored number: a compressed store holds the SQLite file's bytes.
"""

from __future__ import annotations

import gzip
import lzma
import os
import shlex
import shutil
import sqlite3
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..common.errors import InvalidFileError, OutputPathError
from ..common.input_paths import (
    bare_name,
    compression_of,
    free_name,
    free_numbered_name,
    missing_name,
)
from ..common.outputs import replacing

#: the compressions a store may come in, by the file's last suffix
COMPRESSED_SUFFIXES = (".xz", ".gz")


def is_compressed(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a compressed store (by its suffix)."""
    return Path(path).suffix in COMPRESSED_SUFFIXES


#: how a file's first bytes tell what it holds: a plain store, or a compression
_MAGIC = ((b"SQLite format 3\x00", ".sqlite"), (b"\xfd7zXZ\x00", ".xz"), (b"\x1f\x8b", ".gz"))
_KINDS = {".sqlite": "a plain SQLite file", ".xz": "xz-compressed", ".gz": "gzip-compressed"}


def content_kind(path: str | os.PathLike) -> str | None:
    """What ``path`` holds by its first bytes: ``.sqlite``, ``.xz``, ``.gz``, or None
    (something else, or unreadable)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return None
    return next((kind for magic, kind in _MAGIC if head.startswith(magic)), None)


#: the compressions the bench reads itself (its own stores); any other compression
#: :func:`~normxlogit.common.input_paths.compression_of` knows is foreign to it
_READ_KINDS = ("gzip-compressed", "xz-compressed")


def foreign_compression(path: str | os.PathLike, named: str | None = None) -> str | None:
    """A sentence saying ``path`` holds a compression the bench does not read (bzip2,
    zstd, ...) and how to make it readable, by its first bytes; else None. Renaming such a
    file (to .sqlite, .sqlite.xz) cannot help, so no message about it may advise that.
    The command given writes the file the sentence names. ``named``: how the sentence
    names the file (``store x.sqlite.bz2``), else its path."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return None
    found = compression_of(head)
    if found is None or found[0] in _READ_KINDS:
        return None
    kind, command = found
    # the redirect must not overwrite a store beside it, nor the file itself where its
    # name is already the .sqlite one (x.sqlite holding zstd: plain-x.sqlite); the whole
    # command, since the tool alone (`zstd x.sqlite`) compresses it again
    plain = free_name(plain_store_name(path))
    tool = f"{command} {shlex.quote(str(path))} > {shlex.quote(str(plain))}"
    then = f"and pass the SQLite file as {plain}, or recompress that as {plain}.xz"
    return (
        f"{named or path} is {kind}, which the bench does not read (it reads .sqlite, "
        f"and .sqlite.xz or .sqlite.gz): decompress it ({tool}) {then}"
    )


#: the suffixes of compressions the bench does not read
FOREIGN_SUFFIXES = (".bz2", ".zst", ".zstd", ".lz4", ".zip", ".7z")


def packed_beside(store: Path) -> Path | None:
    """The compressed copy of a missing ``store`` kept beside it (``X.sqlite.xz``, else
    ``.gz``), as the project ships stores and a merge into ``X.sqlite.xz`` leaves them;
    None where the store is there or has no such copy."""
    if store.exists():
        return None
    for suffix in COMPRESSED_SUFFIXES:
        packed = store.with_name(store.name + suffix)
        if packed.is_file():
            return packed
    return None


def missing_store(path: str | os.PathLike) -> str:
    """The refusal of a store that is not there: its name quoted and the store without
    a blank at its name's edges named where that is the file the user meant; a folder
    under the name is said to be one."""
    path = Path(path)
    if path.is_dir():  # folder.sqlite.xz: there, but no store file (a run is refused it too)
        return f"store {path} is a folder; give a file name (.sqlite)"
    bare = path.with_name(bare_name(path.name)) if bare_name(path.name) else path
    if bare != path and bare.exists():
        return f"no results store at {missing_name(path)}; name it {bare}"
    return (
        f"no results store at {missing_name(path)}; run `normxlogit bench CONFIG` first, or "
        "pass --store PATH"
    )


def empty_compressed_store(
    path: str | os.PathLike, shown: str | None = None, config: str | None = None
) -> str:
    """The refusal of an empty file under a compressed store's name, where a store is
    read (``status``, ``report``, ``run``, the page): no run fills it, as a run writes a
    plain store, so it is advised another --store, not to be filled. ``shown``: how the
    command names the file (``source x``, ``--into x``); ``config``: the config of serve's
    ``--bench CONFIG=STORE`` it was given with (serve has no --store)."""
    path = Path(path)
    plain = shlex.quote(str(plain_store_name(path)))
    said = f"{shown or path} is an empty file, not a results store"
    if config is not None:
        return f"{said}: name another store as --bench CONFIG=STORE (e.g. {config}={plain})"
    if (shown or "").startswith("source "):  # bench merge has no --store
        return f"{said}: pass another source (a store a run wrote, e.g. {plain})"
    if (shown or "").startswith("--into "):
        return f"{said}: name another --into (a merge writes .sqlite, e.g. --into {plain})"
    return f"{said}: pass another --store (a run writes a plain .sqlite, e.g. --store {plain})"


def plain_store_name(path: Path) -> Path:
    """``path`` without its compression suffixes, as a .sqlite name: x.sqlite.bz2 ->
    x.sqlite, x.zst -> x.sqlite."""
    while path.suffix.lower() in (*FOREIGN_SUFFIXES, ".xz", ".gz"):
        path = path.with_suffix("")
    if path.suffix.lower() in (".tar", ".tgz"):  # x.tar.gz, x.tgz: an archive's name
        path = path.with_suffix("")
    if path.name.lower() in (".sqlite", ""):  # .sqlite.gz: no name but the suffix
        return path.with_name("results.sqlite") if path.name else path / "results.sqlite"
    return path if path.suffix.lower() == ".sqlite" else path.with_name(path.name + ".sqlite")


def misnamed_content(path: str | os.PathLike) -> str | None:
    """A sentence naming what ``path`` holds and the name to give it, where its suffix
    says otherwise (plain SQLite named .xz, xz data named .sqlite), or saying it holds a
    compression the bench does not read (:func:`foreign_compression`); else None."""
    path = Path(path)
    if (foreign := foreign_compression(path)) is not None:
        return foreign
    kind = content_kind(path)
    named = path.suffix if path.suffix in COMPRESSED_SUFFIXES else ".sqlite"
    if kind is None or kind == named:
        return None
    if kind == ".sqlite":  # x.sqlite.xz -> x.sqlite, x.xz -> x.sqlite
        base = path.with_suffix("") if path.suffix in COMPRESSED_SUFFIXES else path
        fixed = base if base.suffix.lower() == ".sqlite" else base.with_name(base.name + ".sqlite")
    elif path.suffix in COMPRESSED_SUFFIXES:  # x.sqlite.gz holding xz -> x.sqlite.xz
        fixed = path.with_suffix(kind)
    else:
        fixed = path.with_name(path.name + kind)
    # renaming onto an existing store would destroy it; a compressed one is not "plain-"
    if kind == ".sqlite":
        fixed = free_name(fixed)
    else:
        fixed = free_numbered_name(
            fixed, 2 if fixed.with_suffix("").suffix.lower() == ".sqlite" else 1
        )
    return f"{path} is {_KINDS[kind]}, which its name does not say: rename it to {fixed}"


#: where a tar archive's header says so, and the word there (POSIX and GNU tar)
_TAR_MAGIC = (257, b"ustar")


def tar_inside(path: str | os.PathLike, named: str | None = None) -> str | None:
    """A sentence saying the compressed ``path`` holds a tar archive (``tar czf``), not a
    store, and how to extract the store from it, by its decompressed first bytes; else
    None. Renaming such a file (to .sqlite.gz) cannot help, so no message about it may
    advise that. The extraction overwrites nothing: where any of the archive's files is
    there already, it is extracted into a new folder. ``named``: how the sentence names
    the file (``store x.tar.gz``), else its path."""
    path = Path(path)
    kind = content_kind(path)
    if kind not in COMPRESSED_SUFFIXES:
        return None
    start, magic = _TAR_MAGIC
    try:
        opener = lzma.open if kind == ".xz" else gzip.open
        with opener(path, "rb") as packed:
            head = packed.read(512)
    except (OSError, EOFError, lzma.LZMAError):
        return None
    if head[start : start + len(magic)] != magic:
        return None
    members = _members(path, kind)
    flag = "xJf" if kind == ".xz" else "xzf"
    folder = path.parent
    safe = [m for m in members if not m[0].is_absolute() and ".." not in m[0].parts]
    files = [name for name, is_dir in safe if not is_dir and name.parts]
    store = next((f for f in files if f.suffix.lower() == ".sqlite"), files[0] if files else None)
    if any(_overwritten(folder / name, is_dir) for name, is_dir in safe if name.parts):
        stem = path.name.split(".")[0] or "store"  # extracting would overwrite a file there
        folder = free_numbered_name(path.with_name(f"{stem}-unpacked"), 0)
        command = f"mkdir {shlex.quote(str(folder))} && tar {flag} {shlex.quote(str(path))}"
    else:
        command = f"tar {flag} {shlex.quote(str(path))}"
    gives = f", which gives {folder / store}" if store is not None else ""
    if str(folder) != ".":
        command += f" -C {shlex.quote(str(folder))}"
    compression = "xz" if kind == ".xz" else "gzip"
    return (
        f"{named or path} is a tar archive ({compression}-compressed), not a results store: "
        f"extract it ({command}{gives}) and pass the store file it holds (.sqlite)"
    )


def _members(path: Path, kind: str) -> list[tuple[Path, bool]]:
    """The members of the compressed tar archive ``path`` (after the headers that pax and
    GNU tar put first), each as its path and whether it is a folder; [] where it cannot be
    read."""
    import tarfile

    try:
        with tarfile.open(path, "r:xz" if kind == ".xz" else "r:gz") as archive:
            return [(Path(member.name), member.isdir()) for member in archive]
    except (OSError, EOFError, lzma.LZMAError, tarfile.TarError):
        return []


def _overwritten(target: Path, is_dir: bool) -> bool:
    """Whether extracting a member at ``target`` (a folder where ``is_dir``) would replace
    what is there: a file or link for a file; for a folder, anything there but a folder."""
    if is_dir:
        return target.is_symlink() or (target.exists() and not target.is_dir())
    return target.exists() or target.is_symlink()


def _reader(path: Path) -> IO[bytes]:
    return lzma.open(path, "rb") if path.suffix == ".xz" else gzip.open(path, "rb")


def decompress_store(source: Path, target: Path) -> Path:
    """Write the SQLite file that the compressed ``source`` holds to ``target``."""
    try:
        with _reader(source) as packed, open(target, "wb") as plain:
            shutil.copyfileobj(packed, plain, 4 * 2**20)
    except (OSError, EOFError, lzma.LZMAError) as error:
        target.unlink(missing_ok=True)
        if isinstance(error, FileNotFoundError):
            raise InvalidFileError(missing_store(source)) from None
        misnamed = misnamed_content(source)
        if misnamed is not None:  # whole, under another kind's name
            raise InvalidFileError(misnamed) from None
        if (tar := tar_inside(source)) is not None:  # cut short, but a tar archive
            raise InvalidFileError(tar) from None
        if content_kind(source) is None and source.stat().st_size > 0:  # no compression's start
            raise InvalidFileError(
                f"{source} is not a compressed results store: it holds neither xz nor gzip "
                "data (nor SQLite); name the store a bench run wrote"
            ) from None
        raise InvalidFileError(
            f"{source} is not a compressed results store ({error}); the file may be cut "
            "short: fetch it again"
        ) from None
    if content_kind(target) != ".sqlite" and (tar := tar_inside(source)) is not None:
        target.unlink(missing_ok=True)  # `tar czf x.sqlite.gz x.sqlite`: renaming is no fix
        raise InvalidFileError(tar)
    return target


@contextmanager
def readable_store(path: str | os.PathLike, shown: str | None = None) -> Iterator[Path]:
    """A plain SQLite path for ``path``: itself, or a decompressed private copy of a
    compressed store (removed afterwards). ``shown``: how the command names it where
    that is not its path (``source x``: a merge has no --store)."""
    path = Path(path)
    if not is_compressed(path):
        yield path
        return
    if not path.is_file():
        raise InvalidFileError(missing_store(path))
    if path.stat().st_size == 0:
        raise InvalidFileError(empty_compressed_store(path, shown))
    with tempfile.TemporaryDirectory(prefix="normxlogit-store-") as folder:
        plain = decompress_store(path, Path(folder) / path.with_suffix("").name)
        with named_as_given(plain, path):
            yield plain


@contextmanager
def named_as_given(copy: Path, given: Path) -> Iterator[None]:
    """Within it, errors and warnings that name ``copy`` (a compressed store's temporary
    plain copy, gone once the command ends) name ``given``, the store the user named."""

    def named(text: str) -> str:
        return text.replace(str(copy), str(given))

    shown = warnings.showwarning

    def show(message, category, *rest, **more):
        shown(named(str(message)), category, *rest, **more)

    warnings.showwarning = show
    try:
        yield
    except Exception as error:
        if error.args and isinstance(error.args[0], str) and str(copy) in error.args[0]:
            error.args = (named(error.args[0]), *error.args[1:])
        raise
    finally:
        warnings.showwarning = shown


def compress_store(store: Path, target: Path, *, level: int | None = None) -> Path:
    """Write ``store`` (a plain SQLite file, its write-ahead log folded in) compressed to
    ``target``, atomically: a reader sees the old file or the whole new one."""
    if not is_compressed(target):
        raise OutputPathError(
            f"{target}: a compressed store ends in {' or '.join(COMPRESSED_SUFFIXES)}"
        )
    with tempfile.TemporaryDirectory(prefix="normxlogit-store-") as folder:
        snapshot = Path(folder) / "store.sqlite"
        snapshot_store(store, snapshot)
        with (
            replacing(target) as temporary,
            open(snapshot, "rb") as plain,
            _writer(temporary, target.suffix, level) as packed,
        ):
            shutil.copyfileobj(plain, packed, 4 * 2**20)
    return target


def lock_path(path: Path) -> Path:
    """The lock file of the compressed store ``path``: hidden, beside the file it names
    (through links: the file a merge replaces, whichever name it is given by)."""
    real = Path(os.path.realpath(path))
    return real.with_name(f".{real.name}.lock")


@contextmanager
def store_lock(path: Path, waiting: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on :func:`lock_path` of ``path`` (``waiting`` is told once
    when another process holds it); the lock file is removed on release. Where the
    system has no ``fcntl`` (Windows), nothing is locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    lock = lock_path(path)
    told = False
    while True:
        try:
            handle = os.open(lock, os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError as error:
            raise OutputPathError(_lock_refusal(path, lock, error)) from None
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting is not None and not told:
                    waiting(f"waiting for another merge into {path}")
                    told = True
                fcntl.flock(handle, fcntl.LOCK_EX)
            if _same_inode(handle, lock):  # not a lock file its holder had removed
                try:
                    yield
                finally:
                    lock.unlink(missing_ok=True)  # still held: a waiter sees it gone
                return
        finally:
            os.close(handle)


def _lock_refusal(path: Path, lock: Path, error: OSError) -> str:
    """Why ``lock`` cannot be opened, and the fix: a folder in its place (made by hand or
    by another program) is removed, not worked around by writing elsewhere."""
    if lock.is_dir():
        return (
            f"cannot lock {path}: its lock file {lock} is a folder, not a lock file; remove "
            "it and merge again"
        )
    return (
        f"cannot lock {path} (its lock file {lock.name}: {error.strerror}); "
        "write the store to a folder you can write to"
    )


def _same_inode(handle: int, path: Path) -> bool:
    """Whether the open file ``handle`` is still the file at ``path``."""
    try:
        return os.path.samestat(os.fstat(handle), os.stat(path))
    except OSError:
        return False


def _writer(path: Path, suffix: str, level: int | None) -> IO[bytes]:
    if suffix == ".xz":
        return lzma.open(path, "wb", preset=6 if level is None else level)
    return gzip.open(path, "wb", compresslevel=9 if level is None else level)


def snapshot_store(store: Path, target: Path) -> Path:
    """A consistent single-file copy of ``store`` (committed transactions only, the
    write-ahead log folded in; a run writing meanwhile is not disturbed)."""
    source = sqlite3.connect(store, timeout=60)
    try:
        destination = sqlite3.connect(target)
        try:
            source.backup(destination)
            destination.execute("PRAGMA journal_mode=DELETE")
        finally:
            destination.close()
    finally:
        source.close()
    return target


@contextmanager
def writable_store(
    path: str | os.PathLike, waiting: Callable[[str], None] | None = None
) -> Iterator[Path]:
    """A plain SQLite path to write ``path`` through: itself, or, for a compressed store, a
    decompressed copy that is compressed back over ``path`` when the block succeeds (a new
    compressed store starts empty). A compressed store is locked from before it is read
    until it is written back, so a second writer waits and then starts from the first's
    result (``waiting`` is told once that it waits) instead of replacing it."""
    path = Path(path)
    if not is_compressed(path):
        yield path
        return
    with (
        store_lock(path, waiting),
        tempfile.TemporaryDirectory(prefix="normxlogit-store-") as folder,
    ):
        plain = Path(folder) / path.with_suffix("").name
        if path.exists() and path.stat().st_size:  # an empty one (xz or gzip) starts empty
            decompress_store(path, plain)
        with named_as_given(plain, path):
            yield plain
        if plain.exists():
            compress_store(plain, path)
