"""A folder cache for converted weights, safe for concurrent first loads.

``cached_folder(name, build)`` returns ``cache_dir() / name``, building it first when it is
missing or broken. A build happens under a file lock (``.NAME.lock`` beside the folder), so
two processes loading a model for the first time at once convert it once: the second waits
and then reads what the first wrote. The build writes into a private staging folder, adds a
manifest (every file's size and sha256) last, and renames the folder into place, so the
cache folder either does not exist or is complete; a killed build leaves only a staging
folder, which the next build removes.

Each load checks the manifest's file sizes (cheap: a truncated file is caught); the hashes
are checked after writing and, through :func:`verify`, when loading a cache folder fails.
A broken cache is rebuilt with a warning that names the folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock

from .errors import NormXLogitWarning, UnknownModelError

#: the environment variable naming the cache folder
CACHE_ENV = "NORMXLOGIT_CACHE"


def cache_dir() -> Path:
    """Writable cache for converted weights: $NORMXLOGIT_CACHE or ~/.cache/normxlogit."""
    if env := os.environ.get(CACHE_ENV):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "normxlogit"


#: written last into every cache folder: its files, their sizes and sha256 hashes
MANIFEST = "normxlogit-cache.json"
MANIFEST_VERSION = 1


def cached_folder(
    name: str,
    build: Callable[[Path], None],
    *,
    rebuild: bool = False,
    source: dict[str, Any] | None = None,
) -> Path:
    """``cache_dir() / name``, built by ``build(folder)`` first if it is missing or broken.

    ``build`` writes the cache's files into the (empty, existing) folder it is given.
    ``rebuild=True`` replaces a folder that passes the size check (after a failed load).
    ``source`` describes what the cache is built from (e.g. the source file's name and
    size): a cache built from another source is rebuilt.
    """
    root = cache_dir()
    target = root / name
    if not rebuild and _problem(target, hashes=False, source=source) is None:
        return target
    _make_writable_root(root)
    with FileLock(str(lock_path(target))):
        problem = _problem(target, hashes=False, source=source)
        if problem is None and not rebuild:
            return target  # another process built it while we waited for the lock
        if rebuild and problem is None:
            problem = _problem(target, hashes=True, source=source)
            if problem is None:
                return target  # rebuilt meanwhile by another process, or it was never broken
        if target.exists():
            warnings.warn(
                f"the normxlogit cache folder {target} is broken ({problem}); rebuilding it",
                NormXLogitWarning,
                stacklevel=2,
            )
        remove_stale(target)
        staging = root / f".{name}.staging-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        staging.mkdir()
        try:
            build(staging)
            write_manifest(staging, source)
            _replace(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def verify(folder: Path, hashes: bool = True) -> str | None:
    """What is wrong with a cache folder (``None``: complete and intact)."""
    return _problem(Path(folder), hashes)


def lock_path(target: Path) -> Path:
    return target.parent / f".{target.name}.lock"


def remove_stale(target: Path) -> None:
    """Remove the leftovers of killed builds of ``target``. Call only under its lock: the
    lock holder is the only process that writes beside the folder."""
    lock = lock_path(target).name
    for path in target.parent.glob(f".{target.name}.*"):
        if path.name != lock and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def write_manifest(folder: Path, source: dict[str, Any] | None = None) -> None:
    """Record the source and every file's size and sha256 (the manifest last, atomically)."""
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != MANIFEST:
            relative = path.relative_to(folder).as_posix()
            files[relative] = {"size": path.stat().st_size, "sha256": _sha256(path)}
    partial = folder / f"{MANIFEST}.partial"
    manifest = {"version": MANIFEST_VERSION, "source": source or {}, "files": files}
    partial.write_text(json.dumps(manifest, indent=1))
    os.replace(partial, folder / MANIFEST)


def _problem(folder: Path, hashes: bool, source: dict[str, Any] | None = None) -> str | None:
    if not folder.is_dir():
        return "missing"
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        files = manifest["files"]
        if manifest.get("version") != MANIFEST_VERSION or not isinstance(files, dict) or not files:
            return f"{MANIFEST} is from another version"
    except FileNotFoundError:
        return f"no {MANIFEST}: an interrupted or older build"
    except (OSError, ValueError, KeyError, TypeError):
        return f"unreadable {MANIFEST}"
    if source is not None and manifest.get("source") != source:
        return f"built from {manifest.get('source')}, not from {source}"
    for relative, entry in files.items():
        path = folder / relative
        try:
            size = path.stat().st_size
        except OSError:
            return f"{relative} is missing"
        if size != entry.get("size"):
            return f"{relative} has {size} bytes, expected {entry.get('size')}"
        if hashes and _sha256(path) != entry.get("sha256"):
            return f"{relative} does not match its sha256"
    return None


def _make_writable_root(root: Path) -> None:
    """Create the cache root, or say how to point the cache somewhere writable."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".write-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        probe.touch()
        probe.unlink()
    except OSError as error:
        raise UnknownModelError(
            f"the normxlogit cache folder {root} cannot be written ({error.strerror or error}); "
            f"set ${CACHE_ENV} to a writable folder"
        ) from None


def _replace(staging: Path, target: Path) -> None:
    """Move the complete ``staging`` folder to ``target`` (a broken one moved aside first:
    processes still reading its files keep their open handles)."""
    aside = None
    if target.exists():
        aside = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
        os.replace(target, aside)
    os.replace(staging, target)
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
