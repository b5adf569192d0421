"""Where an adapter goes, checked before any work, and writing it there atomically.

Where it goes: ``./normxlogit-<name>`` (in the current folder) or ``output``; never inside
the installed package, unless ``overwrite_builtin=True`` (``--overwrite-builtin``) asks to
replace the built-in model's own adapter (``make train`` does). The destination is checked
before any work (writable, not a file, not a folder of other files, not an adapter beside
files ``train`` did not write) and the adapter is written to a temporary folder next to it
and renamed into place, so an interrupted or failed run leaves the previous adapter as it
was. A link to a folder is written through: the folder it points to is replaced, the link
stays.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from pathlib import Path

from ..builtin.adapters import MANIFEST
from ..builtin.sources import WEIGHTS_DIR
from ..common.errors import OutputPathError
from ..common.outputs import FOLDER_NAME_EXTRA, check_output_folder, refuse_long_name
from .recipes import resolve_name

#: the installed package, and the built-in adapters inside it
PACKAGE_DIR = Path(__file__).resolve().parents[1]

#: suffixes of single weight or config files: an output so named is a file the user expects,
#: but ``train`` writes a folder
FILE_SUFFIXES = frozenset(
    {".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".json", ".gguf", ".onnx", ".h5"}
)

#: the files ``train`` writes into an adapter folder: the folder is replaced whole, so a
#: previous adapter is replaced only where it holds nothing else
ADAPTER_FILES = frozenset({"adapter_config.json", "adapter_model.safetensors", MANIFEST})


def default_output(name: str) -> Path:
    """Where ``train`` writes when no output is given: ``./normxlogit-<name>`` (the name
    as given, so ``train sst2`` writes ``normxlogit-sst2``)."""
    return Path(f"normxlogit-{name}")


def builtin_output(name: str) -> Path:
    """The folder of the built-in adapter that ``name`` trains, inside the package."""
    return WEIGHTS_DIR / resolve_name(name)


def check_output(name: str, output: str | os.PathLike | None, overwrite_builtin: bool) -> Path:
    """Where ``train`` will write, checked before any work.

    Refused: a place inside the installed package (unless ``overwrite_builtin``, which
    writes exactly the built-in's folder), a file, a folder that cannot be written, and a
    folder that holds files but is not an adapter written by ``train`` (it would be
    replaced).
    """
    builtin = builtin_output(name)
    model = resolve_name(name)
    if overwrite_builtin:
        if output is not None and os.path.realpath(output) != os.path.realpath(builtin):
            raise OutputPathError(
                f"--overwrite-builtin replaces the built-in {model} in {builtin}; "
                "leave out --output, or leave out --overwrite-builtin to write elsewhere"
            )
        target = builtin
    else:
        target = Path(output) if output is not None else default_output(name)
        refuse_long_name(target, "--output", FOLDER_NAME_EXTRA)
        _refuse_file_name(target)
        if _inside(target, PACKAGE_DIR):
            raise OutputPathError(
                f"{target} is inside the installed normxlogit package; training writes there "
                f"only with --overwrite-builtin (which replaces the built-in "
                f"{model}); otherwise choose another --output"
            )
    _refuse_current_folder(target)
    check_output_folder(written_folder(target), "output folder")
    _refuse_other_files(target)
    return target


def _refuse_file_name(target: Path) -> None:
    """``-o adapter.safetensors`` names one file, but an adapter is a folder of three: a
    folder so named would be a surprise to whoever looks for the file."""
    if target.suffix.lower() in FILE_SUFFIXES and not target.is_dir():
        raise OutputPathError(
            f"--output {target} names a {target.suffix} file, but training writes a folder "
            f"({', '.join(sorted(ADAPTER_FILES))}); pass a folder name such as "
            f"{target.with_suffix('')}"
        )


def _refuse_current_folder(target: Path) -> None:
    """Refuse the folder the command runs in, or one holding it (``-o .``, ``-o ..``):
    training replaces its output folder whole, which the system refuses for ``.`` (and
    would leave the shell in a deleted folder otherwise), so it would fail only after the
    whole run."""
    here = Path.cwd().resolve()
    real = Path(os.path.realpath(target))
    if real == here or real in here.parents:
        what = "the current folder" if real == here else f"a folder holding the current {here}"
        raise OutputPathError(
            f"output folder {target} is {what}, which training cannot replace while it runs "
            f"there; run it from the folder above (cd {real.parent} && normxlogit train ... -o "
            f"{real.name}) or choose another --output"
        )


def written_folder(target: Path) -> Path:
    """The folder writing ``target`` replaces: the one a link points to (followed to its
    end), so the link stays a link; else ``target`` itself (also a link loop, which has
    no end: the folder check names it as given)."""
    if not target.is_symlink():
        return target
    try:
        os.stat(target)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return target
    return Path(os.path.realpath(target))


def _refuse_other_files(target: Path) -> None:
    """Training replaces its output folder whole: refuse one holding files it did not
    write (a folder of other files, or the user's notes beside an earlier adapter)."""
    if not target.is_dir():
        return
    names = sorted(path.name for path in target.iterdir())
    if names and MANIFEST not in names:
        raise OutputPathError(
            f"output folder {target} holds files but no {MANIFEST}, so it is not an adapter "
            "written by `normxlogit train`; training replaces its output folder, so choose a "
            "new or empty folder"
        )
    others = [name for name in names if name not in ADAPTER_FILES]
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise OutputPathError(
            f"output folder {target} holds an earlier adapter and files train did not write "
            f"({shown}); training replaces the whole folder, so move them out or choose "
            "another --output"
        )


def _inside(path: Path, folder: Path) -> bool:
    # realpath, not resolve(): a link loop on the way (-o loop/m) is named by the folder
    # check after this, where resolve() raised a RuntimeError (before Python 3.13)
    resolved = Path(os.path.realpath(path))
    return resolved == folder or folder in resolved.parents


def write_adapter(model, manifest: dict, target: Path) -> Path:
    """Save ``model``'s adapter and ``manifest`` as the folder ``target``, atomically.

    Everything is written to a temporary folder next to ``target`` and renamed into place;
    a previous adapter there is replaced only once the new one is complete. If the final
    rename fails, the complete new adapter is kept and the error says where. A ``target``
    that is a link stays one: the folder it points to is replaced.
    """
    given, target = target, written_folder(target)
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=parent, prefix=f".{target.name}.partial-"))
    except OSError as error:
        raise OutputPathError(f"cannot write {target}: {error.strerror or error}") from None
    try:
        # the embeddings are not adapted: saying so spares peft a hub lookup of the base
        model.save_pretrained(staging, save_embedding_layers=False)
        (staging / "README.md").unlink(missing_ok=True)  # peft's empty model card
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)  # mkdtemp makes it private; give normal rights
        for path in staging.iterdir():
            os.chmod(path, 0o666 & ~umask)
    except BaseException as error:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(error, OSError):
            raise OutputPathError(
                f"cannot write {target}: {error.strerror or error}; nothing was changed"
            ) from None
        raise
    try:
        _swap_into_place(staging, target)
    except OSError as error:
        raise OutputPathError(
            f"the adapter is complete in {staging} but could not replace {target} "
            f"({error.strerror or error}); move it there yourself"
        ) from None
    return given


def _swap_into_place(staging: Path, target: Path) -> None:
    if not target.exists():
        os.replace(staging, target)
        return
    trash = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
    try:
        os.replace(target, trash / "previous")
    except OSError:  # the previous adapter stays in place; no empty trash folder beside it
        trash.rmdir()
        raise
    try:
        os.replace(staging, target)
    except OSError:
        os.replace(trash / "previous", target)  # put the previous adapter back
        trash.rmdir()
        raise
    shutil.rmtree(trash, ignore_errors=True)
