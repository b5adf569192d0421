"""Output paths: checked before any work starts, written whole or not at all.

Every command that writes checks each output first with :func:`check_output_file` (or
:func:`check_output_folder`) and its format with :func:`output_format`, so that a bad
path is refused in an instant, not after minutes of work; :func:`write_atomically` then
writes a temporary file in the same folder and renames it into place, so a reader never
sees a half-written file and an existing file is replaced only by a complete one. This
module imports nothing heavy.
"""

from __future__ import annotations

import itertools
import json
import math
import numbers
import os
import shlex
import stat
import tempfile
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

from .errors import InvalidInputError, OutputPathError

FormatT = TypeVar("FormatT", bound=Enum)


def check_output_file(
    path: str | os.PathLike,
    flag: str = "output",
    example: str = "result.json",
    *,
    replaced: bool = True,
) -> Path:
    """``path`` if a file can be written there now; else an :class:`OutputPathError`
    (a folder is answered with ``example``, a file name that fits inside it).

    Refused: an existing folder, a missing or unwritable parent folder, a parent that is
    a file, an existing file that is read-only, a place in the package's built-in models,
    and (where the output ``replaced`` an existing file, as every file but a store is) an
    existing file of a model, adapter or tokenizer folder.
    """
    refuse_blank_edges(path, flag)
    target = Path(path)
    shown = f"{flag} {target}"
    if str(path) not in ("", "."):
        refuse_long_name(path, flag)
    if str(path) in ("", ".") or target.is_dir():
        raise OutputPathError(
            f"{shown} is a folder; give a file name inside it, e.g. {target / example}"
        )
    refuse_folder_slash(path, flag, example)
    if target.is_symlink() and _link_loop(target):  # resolving it would raise
        raise OutputPathError(f"{shown} is {_to_nowhere(target)}; {_dangling_fix(target)}")
    written = _written_path(target)  # a symlink is written through, to its target
    if written != target:
        shown = f"{shown} (a link to {written})"
        target = written
    refuse_model_folder_file(path, flag, replaced=replaced)
    parent = target.parent
    if not parent.exists() and (unseen := _unseen_in_folder(parent)) is not None:
        # 'sub\u200b' printed raw reads "the folder sub does not exist" where sub exists
        chars, clean = unseen
        if clean.is_dir():
            there, fix = "exists", f"write to {clean / target.name}"
        elif (link := _dangling_link(clean)) is not None:  # mkdir -p dl fails: it exists
            there = (
                f"is {_to_nowhere(link)}"
                if link == clean
                else f"cannot be made: {link} is {_to_nowhere(link)}"
            )
            fix = _dangling_fix(link)
        elif (file := _file_on_the_way(clean)) is not None:  # mkdir -p afile.json fails
            there = (
                "is a file, not a folder"
                if file == clean
                else f"cannot be made: {file} is a file, not a folder"
            )
            fix = "write in another folder, or name a new folder without those characters"
        else:
            there = "does not exist either"
            fix = (
                f"create {clean} first (mkdir -p {shlex.quote(str(clean))}) and write to "
                f"{clean / target.name}"
            )
        raise OutputPathError(
            f"{flag} {str(path)!r}: the folder {str(parent)!r} does not exist: its name holds "
            f"{chars}, which a terminal does not show ({clean} {there}); {fix}"
        )
    _refuse_dangling_folder(parent, shown)
    if not parent.exists():
        raise OutputPathError(
            f"{shown}: the folder {parent} does not exist; create it first "
            f"(mkdir -p {parent}) or write elsewhere"
        )
    if not parent.is_dir():
        raise OutputPathError(f"{shown}: {parent} is a file, not a folder; choose another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(
            f"{shown}: no permission to write in {parent}; choose a folder you can write to"
        )
    _refuse_read_only(target, shown)
    try_writing(parent, shown)
    return Path(path)


def _refuse_dangling_folder(parent: Path, shown: str) -> None:
    """Refuse ``parent`` (the folder of the output ``shown``) where ``mkdir -p`` cannot make
    it: a link to nowhere or a link loop on its way ("File exists" would say nothing
    useful)."""
    if not parent.exists() and (link := _dangling_link(parent)) is not None:
        raise OutputPathError(
            f"{shown}: the folder {link} is {_to_nowhere(link)}; {_dangling_fix(link)}"
        )


def _refuse_unmakeable_folder(parent: Path, shown: str) -> None:
    """Refuse, as :func:`check_output_file` does, a ``parent`` that ``mkdir -p`` cannot
    make: a link to nowhere or a loop on its way, or a file (or a link to one) there."""
    _refuse_dangling_folder(parent, shown)
    if (file := _file_on_the_way(parent)) is not None:
        raise OutputPathError(f"{shown}: {file} is a file, not a folder; choose another path")


def _file_on_the_way(folder: Path) -> Path | None:
    """``folder`` or the first of its parents that exists as something other than a
    folder (a file), which ``mkdir -p`` cannot make a folder of; None where none does."""
    return next(
        (
            step
            for step in reversed([folder, *folder.parents])
            if step.exists() and not step.is_dir()
        ),
        None,
    )


def _dangling_link(folder: Path) -> Path | None:
    """``folder`` or the first of its parents that is a symbolic link whose target does
    not exist (a link to nowhere), which ``mkdir -p`` cannot make ("File exists"); None
    where none is."""
    return next(
        (
            step
            for step in reversed([folder, *folder.parents])
            if step.is_symlink() and not step.exists()
        ),
        None,
    )


def _link_target(link: Path) -> Path:
    """Where ``link`` points, read from its own folder (a relative target is)."""
    try:
        return link.parent / os.readlink(link)
    except OSError:
        return link


def _link_loop(link: Path) -> bool:
    """Whether ``link`` leads back to itself through links (loopa -> loopb -> loopa): no
    target ever exists, yet each link in the loop does."""
    import errno

    try:
        os.stat(link)
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


def _looping_link(path: Path) -> Path | None:
    """The link where resolving ``path`` goes round in a loop (the first link met twice),
    shown as the user would type it (relative to the current folder where it lies inside
    it); None where resolving meets no loop (or only a chain too long to follow)."""
    try:
        here = Path.cwd()
    except OSError:
        return None
    whole = path if path.is_absolute() else here / path
    done, rest = Path(whole.anchor), list(whole.parts[1:])
    seen: set[Path] = set()
    while rest and len(seen) < 100:
        part = rest.pop(0)
        if part in ("", "."):
            continue
        if part == "..":  # ``done`` holds no link, so its parent is the real one
            done = done.parent
            continue
        step = done / part
        if not step.is_symlink():
            done = step
            continue
        if step in seen:
            return step.relative_to(here) if step.is_relative_to(here) else step
        seen.add(step)
        try:
            target = Path(os.readlink(step))
        except OSError:
            return None
        if target.is_absolute():
            done = Path(target.anchor)
            rest = [*target.parts[1:], *rest]
        else:
            rest = [*target.parts, *rest]
    return None


def _loop_elsewhere(link: Path) -> Path | None:
    """The link that loops where ``link`` (a link loop) only leads into another's loop
    (deeploop -> loop/x, loop -> loop): the one to name and remove; None where ``link``
    is itself on the loop (or the loop cannot be traced)."""
    looping = _looping_link(link)
    if looping is None or _same_place(looping, link):
        return None
    return looping


def _same_place(one: Path, other: Path) -> bool:
    """Whether two paths name the same entry (not followed through a last link)."""
    try:
        return os.path.samestat(os.lstat(one), os.lstat(other))
    except OSError:
        return False


def _to_nowhere(link: Path) -> str:
    """``link`` described for a message: a link to nowhere, naming its missing target (or
    a link loop, whose target is a link leading back, or a link into another's loop)."""
    try:
        raw = os.readlink(link)
    except OSError:
        raw = "?"
    if _link_loop(link):
        if (looping := _loop_elsewhere(link)) is not None:
            return (
                f"a link into a link loop (its target {raw} leads through {looping}, a link "
                "that leads back to itself through links)"
            )
        return f"a link loop (its target {raw} leads back to it through links)"
    end = _link_end(link)
    if _link_target(link).is_symlink():  # dl2 -> dl -> nowhere: mkdir -p dl would fail
        return f"a link to nowhere (its target {raw} is itself a link to nowhere ({end}))"
    if end != _link_target(link):  # out -> dd/x, dd -> nowhere: mkdir -p dd/x would fail
        return (
            f"a link to nowhere (its target {raw} does not exist, and runs through links to {end})"
        )
    return f"a link to nowhere (its target {raw} does not exist)"


def link_loop_phrase(path: Path) -> str | None:
    """``path`` described where it is a link leading back to itself through links ("a
    link loop (its target lb leads back to it through links)"); None where it is not."""
    return _to_nowhere(path) if path.is_symlink() and _link_loop(path) else None


def _link_end(link: Path) -> Path:
    """Where a chain of links from ``link`` ends (dl2 -> dl -> nowhere: nowhere), the
    path ``mkdir -p`` can make, links among its folders followed too (out -> dd/x with
    dd -> nowhere: nowhere/x, as mkdir -p dd/x fails on the link dd); ``link``'s own
    target where the chain is too long."""
    step = _link_target(link)
    for _ in range(40):
        if not step.is_symlink():
            return _folders_followed(step)
        step = _link_target(step)
    return _link_target(link)


def _folders_followed(path: Path) -> Path:
    """``path`` with every link among its folders followed to where it leads, as the
    shell's ``mkdir -p`` would need it (relative where ``path`` is, from the working
    folder as it really is); ``path`` itself where no link is on its way."""
    real = Path(os.path.realpath(path))
    if real == Path(os.path.abspath(path)):
        return path
    if path.is_absolute():
        return real
    return Path(os.path.relpath(real, os.path.realpath(os.getcwd())))


def _dangling_fix(link: Path) -> str:
    """The two fixes of a dangling ``link`` as an output's folder (one for a loop)."""
    if _link_loop(link):
        if (looping := _loop_elsewhere(link)) is not None:
            return (  # removing the loop alone leaves a link to nowhere: named second
                f"remove the link (rm {shlex.quote(str(link))}), or write elsewhere (rm "
                f"{shlex.quote(str(looping))} removes the loop itself)"
            )
        return f"remove the link (rm {shlex.quote(str(link))}), or write elsewhere"
    made = shlex.quote(str(_link_end(link)))
    if _link_target(link).is_symlink():
        chain, step = [link], _link_target(link)
        while step.is_symlink() and len(chain) < 40:
            chain, step = [*chain, step], _link_target(step)
        return (
            f"remove the links (rm {' '.join(shlex.quote(str(one)) for one in chain)}) or "
            f"create their final target (mkdir -p {made}), or write elsewhere"
        )
    return (
        f"remove the link (rm {shlex.quote(str(link))}) or create its target "
        f"(mkdir -p {made}), or write elsewhere"
    )


def _unseen_in_folder(folder: Path) -> tuple[str, Path] | None:
    """The invisible characters (a zero-width space, named) in ``folder``'s names, and
    blanks at their edges, described, with the folder without them; None where it has
    none. A message prints the folder quoted then, since printed raw it reads as the
    folder without them."""
    from .fields import unseen_in_name

    found: list[str] = []
    clean: list[str] = []
    for part in folder.parts:
        kept = "".join(c for c in part if not unseen_in_name(c))
        stripped = kept.strip()
        blank = "a space or tab at the edge of a name"
        if stripped != kept and blank not in found:
            found.append(blank)
        for char in part:
            if unseen_in_name(char):
                named = f"U+{ord(char):04X}" + (
                    f" ({unicodedata.name(char)})" if unicodedata.name(char, "") else ""
                )
                if named not in found:
                    found.append(named)
        clean.append(stripped)
    if not found:
        return None
    kept_parts = [part for part in clean if part]
    return ", ".join(found), Path(*kept_parts) if kept_parts else Path(".")


def blank_edge(text: str, end: bool) -> str:
    """The blank (space, tab) or invisible characters (a zero-width space, named) at the
    end (``end``) or start of ``text``, described; "" where there are none."""
    from .fields import unseen_in_name

    def unseen(char: str) -> bool:
        return char.isspace() or unseen_in_name(char)

    chars = list(reversed(text)) if end else list(text)
    edge = "".join(itertools.takewhile(unseen, chars))
    if not edge:
        return ""
    if all(c in " \t" for c in edge):
        return "a space or tab"
    return ", ".join(
        f"U+{ord(c):04X}" + (f" ({unicodedata.name(c)})" if unicodedata.name(c, "") else "")
        for c in (reversed(edge) if end else edge)
    )


def refuse_blank_edges(
    path: str | os.PathLike, flag: str = "", example: str = "result.json"
) -> None:
    """Refuse, before any work, an output name that begins or ends in a blank or an
    invisible character, is made only of them (" ", "\u200b.json"), or holds an invisible
    or direction-changing character inside it ('r\u200b.json'): written as given, the file's
    name would hold a character no one sees ('r.csv ', ' s.json'), written beside the file
    the user sees (a second store "r.sqlite " beside r.sqlite) and later read under the
    name without it. The message names the character and a name to use instead (and
    whether that file exists); ``example`` is the name advised where nothing is left (a
    folder name for a folder output). ``flag`` leads the message."""
    text = os.fspath(path)
    if not isinstance(text, str) or not text:
        return
    lead = f"{flag} {text!r}" if flag else repr(text)
    name = Path(text).name or text
    suffix = Path(name).suffix
    stem = name[: len(name) - len(suffix)] if suffix else name
    if not _without_unseen_edges(stem):  # " ", "\u200b", "\u200b\u200b.json": no name left
        fallback = Path(example).stem + suffix if suffix else example
        advised = Path(text).with_name(fallback) if Path(text).name else fallback
        before = f" before {suffix}" if suffix else ""
        noun = "file name" if Path(example).suffix else "folder name"
        raise OutputPathError(
            f"{lead}: the name{before} is only {blank_edge(stem, False)}, which a terminal "
            f"does not show; give a {noun}, e.g. {advised}"
        )
    if (bare := _without_unseen_edges(name)) in (".", "..") and bare != name:
        # ".\u200b": without the invisible character, a folder (. or ..), no name at all
        noun = "file name" if Path(example).suffix else "folder name"
        unseen = blank_edge(name, True) or blank_edge(name, False)
        raise OutputPathError(
            f"{lead}: the name is only {bare} and {unseen}, which a terminal does not show "
            f"({bare} is a folder, not a name); give a {noun}, e.g. "
            f"{Path(text).with_name(example)}"
        )
    for where, end, part in (
        ("begins with", False, text),
        ("begins with", False, name),
        ("ends in", True, text),
    ):
        if said := blank_edge(part, end):
            clean = _without_unseen_parts(text)
            exists = " (that file exists)" if clean and os.path.exists(clean) else ""
            raise OutputPathError(
                f"{lead}: the name {where} {said}, which a terminal does not show; "
                f"name it {clean}{exists}"
            )
    if inside := [c for c in dict.fromkeys(name) if _hidden_inside(c)]:
        said = ", ".join(
            f"U+{ord(c):04X}" + (f" ({unicodedata.name(c)})" if unicodedata.name(c, "") else "")
            for c in inside
        )
        clean = Path(text).with_name("".join(c for c in name if not _hidden_inside(c)))
        raise OutputPathError(
            f"{lead}: the name holds {said}, which a terminal does not show or draws "
            f"out of order; name it {clean}"
        )


def _hidden_inside(char: str) -> bool:
    """Whether ``char`` inside a name shows nothing or changes how the name is drawn (a
    zero-width space, a right-to-left override, a tab); a plain space is seen."""
    from .fields import unseen_in_name

    return char != " " and (unseen_in_name(char) or not char.isprintable())


def quoted_name(path: str | os.PathLike) -> str:
    """``path`` as a message names it: quoted with its escapes where it holds a character
    a terminal does not show or that breaks the line ('r.jso\\u200bn', 'r.json\\n'), or a
    blank at an edge; else as it is."""
    from .fields import unseen_in_name

    text = os.fspath(path)
    if not isinstance(text, str):
        return repr(text)
    hidden = any(not c.isprintable() or unseen_in_name(c) for c in text)
    return repr(text) if hidden or text != text.strip() else text


def _without_unseen_parts(text: str) -> str:
    """``text`` with the blanks and invisible characters at the edges of each of its
    parts removed, and a folder part made only of them left out: " /r.json" (the file
    r.json in a folder named " ") is r.json, not the root's /r.json."""
    parts = text.split(os.sep)
    kept = [parts[0] if not parts[0] else _without_unseen_edges(parts[0])]
    kept += [_without_unseen_edges(part) for part in parts[1:]]
    cleaned = [
        part for given, part in zip(parts, kept, strict=True) if part or not given
    ]  # "" stays where the text had it (a leading "/"), a blank folder goes
    return os.sep.join(cleaned).lstrip(os.sep) if parts[0] else os.sep.join(cleaned)


def _without_unseen_edges(text: str) -> str:
    """``text`` without the blanks and invisible characters at its ends."""
    from .fields import unseen_in_name

    def unseen(char: str) -> bool:
        return char.isspace() or unseen_in_name(char)

    start, end = 0, len(text)
    while start < end and unseen(text[start]):
        start += 1
    while end > start and unseen(text[end - 1]):
        end -= 1
    return text[start:end]


#: characters the atomic writers add to an output's name: :func:`replacing` writes
#: ``.NAME.XXXXXXXX`` plus a suffix (".png"), SQLite adds "-journal", a lock ``.NAME.lock``
FILE_NAME_EXTRA = 14
#: characters ``train`` adds to its output folder's name: ``.NAME.partial-XXXXXXXX``
FOLDER_NAME_EXTRA = 18
#: the usual longest file name where the file system does not say
_DEFAULT_NAME_MAX = 255


def _name_max(path: Path) -> int:
    """The longest file name (in bytes) the file system of ``path``'s nearest existing
    folder takes."""
    folder = path.parent
    while True:
        try:
            if folder.is_dir():
                return os.pathconf(folder, "PC_NAME_MAX")
        except (OSError, ValueError):
            return _DEFAULT_NAME_MAX
        if folder == folder.parent:
            return _DEFAULT_NAME_MAX
        folder = folder.parent


def refuse_long_name(path: str | os.PathLike, flag: str, extra: int = FILE_NAME_EXTRA) -> None:
    """Refuse, before any work, a path with a name longer than its file system takes (the
    last one less the ``extra`` characters its temporary name adds): otherwise it fails
    with a traceback, or only after the work, when the temporary file is written."""
    target = Path(path)
    folders = [Path(*target.parts[: i + 1]) for i in range(len(target.parts) - 1)]
    limit = _name_max(target)
    for folder in folders:
        if len(os.fsencode(folder.name)) > limit:
            raise OutputPathError(
                f"{flag}: the folder name {folder.name[:20]}... is over the {limit} bytes "
                "this file system allows; choose a shorter name"
            )
    allowed = limit - extra
    size = len(os.fsencode(target.name))
    if size > allowed:
        raise OutputPathError(
            f"{flag}: the name {target.name[:20]}... is {size} bytes long; an output name "
            f"may have at most {allowed} here (the file system allows {allowed + extra}, less "
            f"{extra} for the temporary name it is written under); choose a shorter name"
        )


#: the package's built-in models (their adapters): no command writes there (``train
#: --overwrite-builtin`` checks its own way in)
BUILTIN_WEIGHTS = Path(__file__).resolve().parents[1] / "builtin" / "weights"

#: weights beside a config.json make a folder a saved model
_WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin*", "*.pt", "*.pth", "*.gguf", "*.h5")
#: a saved tokenizer's files (``save_pretrained`` always writes tokenizer_config.json)
_TOKENIZER_NAMES = ("tokenizer.json", "tokenizer_config.json")
#: an adapter (``normxlogit train``, peft): its config, or the manifest beside its weights
_ADAPTER_CONFIG = "adapter_config.json"
_ADAPTER_MANIFEST = "normxlogit.json"


def model_folder_kind(folder: Path) -> str | None:
    """What ``folder`` holds that loading reads: ``"model"`` (config.json beside weights
    or a tokenizer), ``"adapter"``, ``"tokenizer"``, or ``None`` (none of them)."""
    try:
        if (folder / _ADAPTER_CONFIG).is_file() or (
            (folder / _ADAPTER_MANIFEST).is_file() and any(folder.glob("adapter_model.*"))
        ):
            return "adapter"
        tokenizer = any((folder / name).is_file() for name in _TOKENIZER_NAMES)
        if (folder / "config.json").is_file() and (
            tokenizer or any(any(folder.glob(pattern)) for pattern in _WEIGHT_PATTERNS)
        ):
            return "model"
        return "tokenizer" if (folder / "tokenizer_config.json").is_file() else None
    except OSError:
        return None


def refuse_model_folder_file(path: str | os.PathLike, flag: str, *, replaced: bool = True) -> None:
    """Refuse writing ``path`` (the output ``flag``) inside the package's built-in models,
    or, where the write ``replaced`` it, over an existing file of a model, adapter or
    tokenizer folder (a link is followed): the file would break that model for every later
    command, whichever model the command itself loads."""
    given = Path(path)
    target = _written_path(given)
    linked = target != given
    shown = f"{flag} {given}" + (f" (a link to {target})" if linked else "")
    try:
        place = target.resolve()
        builtin = BUILTIN_WEIGHTS.resolve()
        existing = target.is_file()
    except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13): named later
        return
    if place.is_relative_to(builtin) and place != builtin:
        parts = place.relative_to(builtin).parts
        owner = f"the built-in model {parts[0]}" if len(parts) > 1 else "the built-in models"
        raise OutputPathError(
            f"{shown} is a file of {owner} (inside the installed package); write elsewhere"
        )
    if not (replaced and existing):  # a new file beside a model breaks nothing
        return
    kind = model_folder_kind(place.parent)
    if kind is not None:  # the folder as the user wrote it, unless a link leads there
        folder = target.parent if linked else given.parent
        raise OutputPathError(f"{shown} is a file of the {kind} {folder}; write elsewhere")


def same_file(one: str | os.PathLike, other: str | os.PathLike) -> bool:
    """Whether ``one`` and ``other`` name the same file: the same resolved path (``./x``,
    a symlink) or, where both exist, the same file on disk (a hard link)."""
    first, second = Path(one), Path(other)
    try:
        if first.resolve() == second.resolve():
            return True
        return first.exists() and second.exists() and os.path.samefile(first, second)
    except (OSError, RuntimeError):  # a link loop: RuntimeError before Python 3.13
        return False


def refuse_input_as_output(
    output: str | os.PathLike, source: str | os.PathLike, flag: str, what: str, fix: str
) -> None:
    """An :class:`OutputPathError` where the output ``flag`` names the input ``source``
    (``what``, e.g. "the data file"): writing it would replace the input the command
    reads. ``fix`` says what to do, e.g. "write the table to another file"."""
    if same_file(output, source):
        raise OutputPathError(f"{flag} {output} is {what}; {fix}")


def refuse_inputs_in_folder(
    folder: str | os.PathLike,
    names: Iterable[str],
    inputs: Mapping[str, str | os.PathLike],
    flag: str,
) -> None:
    """Refuse, before any work, an output folder where one of the files the command will
    write there (``names``) is one of its ``inputs`` (``{"the config": path}``) through a
    link or a hard link, or a link onto a model's file: the file is written through, so
    the input would be replaced."""
    folder = Path(folder)
    for name in dict.fromkeys(names):
        path = folder / name
        if not (path.is_symlink() or path.is_file()):
            continue
        how = "a link to" if path.is_symlink() else "the same file as"
        for what, source in inputs.items():
            if same_file(path, source):
                raise OutputPathError(
                    f"{flag} {folder}: {name} there is {how} {what} {source}, which writing "
                    f"{name} would replace; remove {path} or write elsewhere"
                )
        if path.is_symlink():
            refuse_model_folder_file(path, flag)


def _refuse_read_only(target: Path, shown: str) -> None:
    """Refuse to replace an existing read-only file (``target``: already the file a
    symlink points to). The bits are looked at too: root may write any file, and renaming
    a new file into a writable folder replaces a read-only one for anyone, yet a 0444 file
    asks to be left alone. Every writer passes here (:func:`replacing`), so the Python
    saves refuse what the command line refuses."""
    try:
        mode = target.stat().st_mode
    except OSError:  # missing (or a dangling link's target): nothing to keep
        return
    if not os.access(target, os.W_OK) or not mode & 0o222:
        raise OutputPathError(
            f"{shown} exists and is read-only; choose another name or make it writable "
            f"(chmod u+w {target})"
        )


def refuse_folder_slash(path: str | os.PathLike, flag: str, example: str) -> None:
    """A path given with a trailing slash names a folder: never write a file there
    (``Path`` drops the slash, so only a path given as text can still show it)."""
    raw = os.fspath(path)
    separators = os.sep + (os.altsep or "")
    if isinstance(raw, str) and raw.endswith(tuple(separators)) and raw.rstrip(separators):
        name = raw.rstrip(separators)
        raise OutputPathError(
            f"{flag} {raw} ends in {os.sep}, which names a folder; give a file name: "
            f"{name} (or {Path(name) / example} inside that folder)"
        )


def _written_path(target: Path) -> Path:
    """Where writing ``target`` lands: the file a symlink points to (followed to its end,
    also when it is dangling: its target is created), else ``target`` itself."""
    if not target.is_symlink():
        return target
    return Path(os.path.realpath(target))


def try_writing(folder: Path, shown: str) -> None:
    """Create and remove a file in ``folder``, as :func:`write_atomically` will: the
    permission bits do not tell everything (root passes them all, yet cannot create a file
    in /proc or on a read-only mount)."""
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".normxlogit-check.")
    except OSError as error:
        raise OutputPathError(
            f"{shown}: cannot create a file in {folder} ({error.strerror or error}); choose a "
            "folder you can write to"
        ) from None
    os.close(handle)
    os.unlink(temporary)


def check_output_folder(
    path: str | os.PathLike, flag: str = "output", extra: int = FOLDER_NAME_EXTRA
) -> Path:
    """``path`` if a folder can be created or replaced there now; else an OutputPathError
    (also for a name that, with the ``extra`` characters of its staging folder, is too long)."""
    target = Path(path)
    shown = f"{flag} {target}"
    refuse_blank_edges(path, flag, "out")
    refuse_long_name(path, flag, extra)
    if target.exists() and not target.is_dir():
        raise OutputPathError(f"{shown} is a file, not a folder; choose a folder name")
    if target.is_symlink() and not target.exists():  # the folder cannot replace it
        raise OutputPathError(
            f"{shown} is {_to_nowhere(target)}; remove the link, or choose another folder name"
        )
    _refuse_dangling_folder(target.parent, shown)  # mkdir -p dl/sub fails: "File exists"
    packed = target.suffix.lower()
    if packed in ARCHIVE_SUFFIXES:  # r.tar.gz: a folder, yet every tool takes it for a file
        plain = target.name
        while Path(plain).suffix.lower() in ARCHIVE_SUFFIXES and Path(plain).stem:
            plain = Path(plain).stem
        raise OutputPathError(
            f"{shown} is written as a folder, not a {ARCHIVE_SUFFIXES[packed]} file; name it "
            f"{target.with_name(plain)} (pack it afterwards if you need an archive)"
        )
    existing = target if target.exists() else target.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"{shown}: {existing} is a file, not a folder; choose another path")
    # the folder is written next to itself and renamed, so its parent must be writable
    parent = target.parent if target.parent.exists() else existing
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(
            f"{shown}: no permission to write in {parent}; choose a folder you can write to"
        )
    try_writing(parent, shown)
    return target


#: suffixes whose files every tool reads as their format: an explicit --format that
#: writes another is refused for them (any other suffix, such as .txt, takes it)
#: archive and compression suffixes: a tool opening such a file by its name unpacks it,
#: so plain text or a plain SQLite store is never written under one
ARCHIVE_SUFFIXES = {
    ".gz": "gzip-compressed",
    ".bz2": "bzip2-compressed",
    ".xz": "xz-compressed",
    ".lzma": "LZMA-compressed",
    ".zst": "zstd-compressed",
    ".lz4": "LZ4-compressed",
    ".lz": "lzip-compressed",
    ".br": "Brotli-compressed",
    ".z": "compress-compressed",
    ".zip": "ZIP",
    ".tar": "tar",
    ".tgz": "gzip-compressed tar",
    ".tbz": "bzip2-compressed tar",
    ".tbz2": "bzip2-compressed tar",
    ".txz": "xz-compressed tar",
    ".7z": "7-Zip",
    ".rar": "RAR",
    ".gzip": "gzip-compressed",
    ".bz": "bzip2-compressed",
    ".bzip2": "bzip2-compressed",
    ".zstd": "zstd-compressed",
    ".lzo": "lzop-compressed",
    ".sz": "Snappy-compressed",
    ".tzst": "zstd-compressed tar",
    ".tlz": "lzip-compressed tar",
    ".taz": "compress-compressed tar",
    ".tz": "compressed tar",
    ".cpio": "cpio",
    ".jar": "Java archive (ZIP)",
    ".war": "web archive (ZIP)",
    ".cab": "cabinet",
    ".arj": "ARJ",
}

#: format suffixes (no archive): a name ending in one of them followed by one more suffix
#: (x.json.zstd, x.csv.bak) is refused for an output of that format, whatever that last
#: suffix is, so no list of compressions has to be complete
FORMAT_SUFFIXES = {
    ".csv": "CSV",
    ".tsv": "TSV",
    ".json": "JSON",
    ".jsonl": "JSON-lines",
    ".parquet": "Parquet",
    ".html": "HTML",
    ".htm": "HTML",
    ".md": "Markdown",
    ".tex": "LaTeX",
    ".png": "PNG",
    ".pdf": "PDF",
    ".xlsx": "Excel",
    ".xls": "Excel",
    ".ods": "OpenDocument spreadsheet",
    ".sqlite": "SQLite",
    ".toml": "TOML",
}

#: suffixes of model weights and checkpoints: a table, a figure or a store written under
#: one would replace (or pass for) a model's weights, so every output with a format of its
#: own refuses them, as it refuses another format's name
MODEL_SUFFIXES = {
    ".safetensors": "safetensors weights",
    ".bin": "weights (.bin)",
    ".pt": "PyTorch weights",
    ".pth": "PyTorch weights",
    ".ckpt": "checkpoint",
    ".gguf": "GGUF weights",
    ".ggml": "GGML weights",
    ".h5": "HDF5 weights",
    ".keras": "Keras model",
    ".onnx": "ONNX model",
    ".msgpack": "Flax weights",
    ".pkl": "pickle",
    ".pickle": "pickle",
    ".npz": "NumPy archive",
    ".npy": "NumPy array",
}

WELL_KNOWN_SUFFIXES = {**FORMAT_SUFFIXES, **MODEL_SUFFIXES, **ARCHIVE_SUFFIXES}

#: letters whose spoken name starts with a vowel ("an HTML", "an xz-compressed")
_VOWEL_LETTER_NAMES = "FHLMNRSX"
#: capitals read as a word, not letter by letter ("a RAR")
_READ_AS_WORDS = ("RAR",)


def with_article(kind: str) -> str:
    """``kind`` after "a" or "an" as it is spoken: an Excel, an HTML, an LZMA-compressed,
    a JSON, a PNG (a format name read letter by letter takes the first letter's sound)."""
    spelled = (kind[:2].isupper() or kind[:2].lower() == "xz") and not kind.startswith(
        _READ_AS_WORDS
    )
    vowel = kind[:1].upper() in "AEIOU" or (spelled and kind[:1].upper() in _VOWEL_LETTER_NAMES)
    return f"{'an' if vowel else 'a'} {kind}"


def type_phrase(value: object) -> str:
    """What ``value`` is, for a message: ``None``, ``an int``, ``a str``, ``an ndarray``
    (the type's name after its article, so no message says "a int" or "a NoneType")."""
    if value is None:
        return "None"
    name = type(value).__name__
    vowel = name[:1].lower() in "aeiou" or name.startswith("nd")  # an ndarray
    return f"{'an' if vowel else 'a'} {name}"


def short_value(value: Any, width: int = 40) -> str:
    """``value``'s repr on one line for a message, cut to ``width`` characters with an
    ellipsis; a long whole number (10**400) shows its first digits and its count of digits
    ("10000000000000000000... (401 digits)"), never a cut that reads as a smaller number."""
    if (long := _long_integer(value)) is not None:
        return long
    said = repr_text(value)
    if "\n" in said:  # an array's repr over lines; a text's blanks are kept as given
        said = " ".join(said.split())
    if len(said) <= width:
        return said
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        digits = len(str(abs(int(value))))
        return f"{said[: width // 2]}... ({digits} digits)"
    return f"{said[: width - 1]}..."


def _long_integer(value: Any) -> str | None:
    """A whole number past the 4,300 digits Python prints as its first digits and its
    count of digits ("10000000000000000000... (5001 digits)"); None for any other value."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        return None
    magnitude = abs(int(value))
    if magnitude.bit_length() <= 14_000:
        return None
    digits = int(magnitude.bit_length() * math.log10(2)) + 1
    digits -= 10 ** (digits - 1) > magnitude  # the estimate can be one over
    lead = str(magnitude // 10 ** (digits - 20))
    return f"{'-' if value < 0 else ''}{lead}... ({digits} digits)"


def repr_text(value: Any) -> str:
    """``repr(value)``, with a list, tuple, set or dict holding a whole number past the
    4,300 digits Python prints (whose repr raises ``ValueError``) shown item by item, that
    number as :func:`_long_integer` writes it."""
    try:
        return repr(value)
    except ValueError:  # repr(10**5000), or of a list holding it
        if (long := _long_integer(value)) is not None:
            return long
        if isinstance(value, Mapping):
            inner = ", ".join(f"{repr_text(k)}: {repr_text(v)}" for k, v in value.items())
            return f"{{{inner}}}"
        if isinstance(value, (list, tuple, set, frozenset)):
            inner = ", ".join(repr_text(item) for item in value)
            if isinstance(value, tuple):
                return f"({inner}{',' if len(value) == 1 else ''})"
            if isinstance(value, list):
                return f"[{inner}]"
            return f"{{{inner}}}" if value else repr(type(value)())
        raise


def lone_item(value: Any) -> Any:
    """``value``, or its one item where it is a 0-d array (``np.array("comp_cd")``,
    ``torch.tensor(1)``): iterating one fails with a traceback, so it is read as the
    lone value it holds (a name, a text, a number), which is then taken or refused as
    that value is."""
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        try:
            return value.item()
        except (TypeError, ValueError):
            return value
    return value


def zero_d_phrase(value: Any) -> str:
    """What a 0-d array or tensor is, with the value it holds, for a message ("a 0-d
    Tensor holding 1", "a 0-d ndarray holding None"); "" for any other value."""
    if getattr(value, "ndim", None) != 0 or not hasattr(value, "item"):
        return ""
    try:
        held = value.item()
    except (TypeError, ValueError):
        return f"a 0-d {type(value).__name__}"
    return f"a 0-d {type(value).__name__} holding {short_value(held)}"


def checked_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """``value`` as one of ``choices`` (the name of an aggregation, a mode), a 0-d array
    read as the string it holds; refused in one line naming ``name`` otherwise, a list or
    an array (which no membership test could hash) included."""
    choices = list(choices)
    held = lone_item(value)
    if isinstance(held, str) and held in choices:
        return str(held)
    said = (
        zero_d_phrase(value) or f"{type_phrase(held)} {short_value(held)}"
        if not isinstance(held, str)
        else short_value(held)
    )
    if held is None and not zero_d_phrase(value):  # "None None": type_phrase says None
        said = "None"

    raise InvalidInputError(f"{name}={said} is not one of: {', '.join(choices)}")


def unordered_phrase(value: Any) -> str:
    """What ``value`` is where it has no order (a set, a frozenset, a dict's keys, values
    or items), for a refusal of it where entries are read by position; "" otherwise."""
    from collections.abc import ItemsView, KeysView, ValuesView
    from collections.abc import Set as AbstractSet

    if isinstance(value, (AbstractSet, KeysView, ValuesView, ItemsView)):
        return type_phrase(value)
    return ""


def fixed_point(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, unsigned where it rounds to zero: "-0.000"
    beside "0.000" would show two numbers a table ties."""
    return f"{value if round(value, digits) else 0.0:.{digits}f}"


def misnamed_after_format(
    path: Path, own: Iterable[str], written: Iterable[str] = ()
) -> Path | None:
    """The name to use instead of ``path`` when it ends in a format suffix followed by one
    more suffix that is neither one of ``own`` (the output's format) nor one of
    ``written`` (a compression the writer really applies, compared as written): x.json.tzst
    -> x.json, x.csv.bak -> x.csv; ``None`` when the name is fine. A tool takes the last
    suffix for what the file is, so plain text under x.json.zstd would be "corrupt"."""
    own = [suffix.lower() for suffix in own]
    last = path.suffix
    if not last or last.lower() in own or last in set(written):
        return None
    before = Path(path.stem).suffix.lower()
    if before not in own and before not in FORMAT_SUFFIXES:
        return None
    plain = path.with_suffix("")
    return plain if before in own or not own else plain.with_suffix(own[0])


def suffix_tail_hint(path: Path, suffixes: Sequence[str]) -> str:
    """Why a name that shows one of ``suffixes`` does not end in it: a space or tab, or
    a character that shows nothing (a zero-width space, named), after the suffix; ""
    where the name holds none (its suffix is another)."""
    from .fields import unseen_in_name

    suffix = path.suffix
    bare = suffix.rstrip(" \t")
    if bare != suffix and bare.lower() in suffixes:
        return f" (the name {path.name!r} ends in a space or tab after its suffix)"
    unseen = suffix.rstrip()
    while unseen and (unseen[-1].isspace() or unseen_in_name(unseen[-1])):
        unseen = unseen[:-1]
    if unseen == suffix or unseen.lower() not in suffixes:
        return ""
    tail = suffix[len(unseen) :]
    named = ", ".join(
        f"U+{ord(c):04X}" + (f" ({unicodedata.name(c)})" if unicodedata.name(c, "") else "")
        for c in tail
    )
    return f" (the name {path.name!r} ends in {named}, which shows as nothing, after its suffix)"


def refuse_suffix_only(
    path: str | os.PathLike, flag: str = "", suffixes: Iterable[str] = ()
) -> None:
    """Refuse an output named by its suffixes alone ("out/.csv", "out/.sqlite.xz"), as
    ``-o out/$NAME.csv`` gives with NAME empty: a hidden file no one meant. ``suffixes``:
    the output's own, beside the well-known ones; ``flag`` leads the message."""
    path = Path(path)
    name = path.name.lower()
    known = {s.lower() for s in suffixes} | set(WELL_KNOWN_SUFFIXES)
    parts = name.split(".")[1:]
    if not name.startswith(".") or not parts or any(f".{part}" not in known for part in parts):
        return
    lead = f"{flag} {path}" if flag else str(path)
    raise OutputPathError(
        f"{lead} is a suffix with no name before it (a hidden file named {path.name}); "
        f"give the file a name, e.g. {path.with_name('results' + path.name)}"
    )


def output_format(
    path: Path | None,
    chosen: FormatT | None,
    by_suffix: Mapping[str, FormatT],
    flag: str = "--output",
    format_flag: str = "--format",
) -> FormatT | None:
    """The format to write ``path`` in: ``chosen`` if given, else the one its suffix names.

    A suffix that names no format is refused (never guessed); ``None`` when neither a
    path nor a format is given.
    """
    suffix = path.suffix.lower() if path is not None else ""
    if path is not None:
        refuse_blank_edges(path, flag)  # " ", "r.jso\u200bn": the character named first
        refuse_suffix_only(path, flag, by_suffix)
    if chosen is not None:
        named = by_suffix.get(suffix)
        own = [s for s, f in by_suffix.items() if f == chosen]  # none: writes no file
        if named is not None and named != chosen and own:  # Parquet bytes in a .csv file
            raise OutputPathError(
                f"{flag} {quoted_name(path)} names the {getattr(named, 'value', named)} format but "
                f"{format_flag} is {getattr(chosen, 'value', chosen)}; end the name in "
                f"{' or '.join(own)}, or leave {format_flag} out"
            )
        other = WELL_KNOWN_SUFFIXES.get(suffix)
        if named is None and other is not None and own:  # CSV text in a .json file
            fixed = misnamed_after_format(path, own)
            raise OutputPathError(
                f"{flag} {quoted_name(path)} names {with_article(other)} file but {format_flag} "
                f"{getattr(chosen, 'value', chosen)} writes none; end the name in "
                f"{' or '.join(own)}" + (f" (name it {fixed})" if fixed else "")
            )
        if own and path is not None:  # x.json.bak: plain JSON under another file's name
            _refuse_packed(path, own, chosen, flag)
        return chosen
    if path is None:
        return None
    if suffix in by_suffix:
        return by_suffix[suffix]
    meant = by_suffix.get(Path(path.stem).suffix.lower())  # x.json.zstd: JSON, packed?
    if meant is not None:
        _refuse_packed(path, [s for s, f in by_suffix.items() if f == meant], meant, flag)
    names = sorted({f.value for f in by_suffix.values()})
    other = WELL_KNOWN_SUFFIXES.get(suffix)
    if other is not None:  # x.json for a CSV writer: --format would be refused as well
        raise OutputPathError(
            f"{flag} {quoted_name(path)} names {with_article(other)} file, a format this "
            "command does not write; end "
            f"the name in {', '.join(sorted(by_suffix))}"
        )
    raise OutputPathError(
        f"{flag} {quoted_name(path)}: cannot tell the format from "
        + (f"the suffix {suffix!r}" if suffix else "a name without a suffix")
        + f"; end the name in {', '.join(sorted(by_suffix))}, or pass "
        f"{format_flag} {'/'.join(names)}"
    )


def _refuse_packed(path: Path, own: list[str], fmt: Any, flag: str) -> None:
    """Refuse a name whose last suffix follows a format suffix but is not ``fmt``'s own."""
    fixed = misnamed_after_format(path, own)
    if fixed is not None:
        kind = ARCHIVE_SUFFIXES.get(path.suffix.lower())
        what = f"{with_article(kind)} file" if kind else f"a {path.suffix} file"
        raise OutputPathError(
            f"{flag} {quoted_name(path)}: "
            f"{FORMAT_SUFFIXES.get(own[0], getattr(fmt, 'value', fmt))} is written plain, "
            "yet the name "
            f"ends in {path.suffix} after {Path(path.stem).suffix}, so tools take it for "
            f"{what}; name it {fixed}"
        )


@contextmanager
def replacing(target: Path, suffix: str = "") -> Iterator[Path]:
    """A temporary path beside ``target`` to write, renamed onto ``target`` when the block
    ends without error (removed otherwise).

    A ``target`` that is a symlink stays one: the file it points to is replaced (a dangling
    link's target is created). The file keeps an existing file's permission bits, else gets
    a new file's usual rights (``mkstemp`` makes it private: 0600 whatever the umask). An
    existing read-only file (0444, also behind a link) is refused with an
    :class:`OutputPathError`, as :func:`check_output_file` refuses it.
    """
    given = Path(target)
    target = _written_path(given)
    shown = str(given) if target == given else f"{given} (a link to {target})"
    _refuse_read_only(target, shown)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=suffix
    )
    os.close(handle)
    try:
        yield Path(temporary)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def writing(
    path: str | os.PathLike, example: str = "result.json", suffix: str = ""
) -> Iterator[Path]:
    """A temporary path to write ``path``'s content to, renamed onto ``path`` when the
    block ends without error (see :func:`replacing`): the whole file or nothing.

    Checked first, with the words :func:`check_output_file` uses: a folder, a name ending
    in a slash (``example`` is advised inside it), a name that is itself a link loop or a
    link into a missing folder, and a folder ``mkdir -p`` cannot make. Missing parent
    folders are created. A path that cannot be written raises an :class:`OutputPathError`
    (the previous file, if any, is left as it was).
    """
    refuse_blank_edges(path)
    target = Path(path)
    if target.is_dir():
        raise OutputPathError(f"{target} is a folder; give a file name inside it")
    refuse_folder_slash(path, "output", example)
    _refuse_unwritable_link(target, f"cannot write {target}")
    _refuse_unmakeable_folder(target.parent, f"cannot write {target}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with replacing(target, suffix=suffix) as temporary:
            yield temporary
    except OSError as error:
        raise OutputPathError(
            f"cannot write {target}: {error.strerror or error}; choose a folder you can "
            "write to (nothing was written)"
        ) from None


def _refuse_unwritable_link(target: Path, lead: str) -> None:
    """Refuse, as :func:`check_output_file` does, a ``target`` that is itself a link which
    cannot be written through: a link loop (or a link into one), or a link whose target's
    folder does not exist or is a file (``lead``, e.g. "cannot write x.json", starts the
    message)."""
    if not target.is_symlink():
        return
    if _link_loop(target):
        raise OutputPathError(f"{lead}: {target} is {_to_nowhere(target)}; {_dangling_fix(target)}")
    written = _written_path(target)
    shown, folder = f"{lead} (a link to {written})", written.parent
    _refuse_dangling_folder(folder, shown)
    if not folder.exists():
        raise OutputPathError(
            f"{shown}: the folder {folder} does not exist; create it first "
            f"(mkdir -p {shlex.quote(str(folder))}) or write elsewhere"
        )
    if (file := _file_on_the_way(folder)) is not None:
        raise OutputPathError(f"{shown}: {file} is a file, not a folder; choose another path")


def write_atomically(path: str | os.PathLike, content: str) -> Path:
    """Write a whole file or nothing: a temporary file renamed into place (see
    :func:`writing` for what is refused first). Missing parent folders are created."""
    with writing(path) as temporary:
        temporary.write_text(content, encoding="utf-8")
    return Path(path)


def save_figure(figure: Any, path: str | os.PathLike, dpi: int = 120) -> Path:
    """Write a matplotlib figure as a PNG whole or not at all (a temporary file renamed
    into place); the figure is left open for its owner to close."""
    with writing(path, "figure.png", suffix=".png") as temporary:
        figure.savefig(temporary, dpi=dpi)
    return Path(path)


def standard_json(value: Any) -> Any:
    """``value`` with every non-finite number (NaN, inf) as ``None``: JSON has no NaN, and
    readers in other languages refuse the bare ``NaN`` Python writes by default."""
    if isinstance(value, dict):
        return {key: standard_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [standard_json(item) for item in value]
    if hasattr(value, "item") and hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0:
        value = value.item()  # a numpy scalar
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_text(value: Any, indent: int | None = None, default: Any = None) -> str:
    """Standard JSON (RFC 8259) of ``value``: non-finite numbers become ``null``."""
    return json.dumps(standard_json(value), indent=indent, default=default, allow_nan=False)


def check_json_name(
    path: str | os.PathLike, what: str, example: str, hints: Mapping[str, str]
) -> None:
    """Refuse, before writing, a folder or a name whose suffix promises another format
    (.csv, .html, .json.gz): ``what`` is saved as JSON whatever the name says. ``hints``
    name, per suffix, what writes that format instead."""
    check_save_name(path, (".json",), "JSON", what, example, hints)


def check_save_name(
    path: str | os.PathLike,
    suffixes: Sequence[str],
    kind: str,
    what: str,
    example: str,
    hints: Mapping[str, str],
) -> None:
    """Refuse, before writing, a folder or a name not ending in one of ``suffixes``
    (``what`` is saved as ``kind`` whatever the name says), also one with a suffix after
    them (x.csv.gz: plain text under a compressed file's name). ``hints`` name, per
    suffix, what writes that format instead. Give ``path`` as the user gave it: a
    trailing slash (a folder) is refused before ``Path`` drops it."""
    refuse_folder_slash(path, "path", example)
    if isinstance(os.fspath(path), str) and not _without_unseen_edges(Path(path).name):
        refuse_blank_edges(path)  # "\u200b": only invisible characters, no name at all
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(
            f"{path} is a folder; give a file name inside it, e.g. {path / example}"
        )
    refuse_suffix_only(path, suffixes=suffixes)
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        fixed = misnamed_after_format(path, suffixes)  # r.json.zstd: name it r.json
        hint = f" ({hints[suffix]})" if suffix in hints else ""
        hint = f" (name it {fixed})" if fixed is not None and not hint else hint
        hint = suffix_tail_hint(path, suffixes) or hint  # "e.json ": the space is not seen
        raise OutputPathError(
            f"{quoted_name(path)}: {what} saved as {kind}; end the name in "
            f"{' or '.join(suffixes)}{hint}"
        )
    refuse_blank_edges(path)  # " x.json": a blank the file's name would keep
