"""Input paths: say what is wrong with a path a user named, before reading it, and read
it as UTF-8 text with the place where it is not.

"does not exist" is only said of paths that do not; a folder, a device such as
``/dev/null``, a pipe or an unreadable file each get their own words and the fix. This
module imports nothing heavy (the CLI checks paths before loading torch).
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from .errors import InvalidFileError, InvalidInputError
from .outputs import type_phrase as _type_phrase


def given_path(path: Any, name: str = "path") -> Path:
    """``path`` as a :class:`~pathlib.Path`, refused in one line where it is no path (None,
    a number, bytes: ``Path()`` would raise a TypeError) as ``normxlogit.load`` refuses it."""
    if isinstance(path, (str, os.PathLike)) and not isinstance(path, bytes):
        fspath = os.fspath(path)
        if isinstance(fspath, str):
            return Path(fspath)
        path = fspath
    if isinstance(path, (bytes, bytearray)):
        raise InvalidInputError(
            f"{name} is bytes {bytes(path)!r:.60}; give the file's name as a str "
            "(e.g. path.decode()) or a pathlib.Path"
        )
    given = "None" if path is None else f"{_type_phrase(path)} {path!r:.60}"
    raise InvalidInputError(f"{name} is a file's name, a str or a pathlib.Path; got {given}")


def check_input_file(
    path: str | os.PathLike,
    what: str,
    fix: str,
    error: type[InvalidInputError] = InvalidInputError,
    noun: str = "a file",
) -> Path:
    """``path`` if it is a regular file this process can read; else ``error`` naming
    ``what`` (``"data file"``; may be empty), the path, the problem and ``fix``; a folder
    is said to be "not ``noun``"."""
    target = given_path(path)
    hint = blank_edge_hint(target)
    blank = str(target) != str(target).strip()  # " ": all blank, no hint, but quoted
    name = repr(str(target)) if hint or blank else str(target)  # 'd.tsv ': the space is seen
    shown = f"{what} {name}" if what else name
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        raise error(f"{shown} does not exist{hint}; {fix}") from None
    except OSError as problem:
        raise error(f"cannot read {shown}: {problem.strerror or problem}; {fix}") from None
    if stat.S_ISDIR(mode):
        raise error(f"{shown} is a folder, not {noun}; {fix}")
    if not stat.S_ISREG(mode):
        kind = "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a pipe or socket"
        raise error(f"{shown} is {kind}, not a regular file; {fix}")
    if not os.access(target, os.R_OK):
        raise error(f"{shown} cannot be read (no permission); {fix}")
    return target


def blank_edge_hint(path: Path) -> str:
    """Why a name the user sees as an existing file's is not found: it starts or ends in
    a space or tab, or in an invisible character (a zero-width space, named), which a
    terminal does not show (and, where the name without them exists, that it does); ""
    for a name without them."""
    from .outputs import blank_edge

    name = path.name
    bare = bare_name(name)
    if not bare or bare == name:
        return ""
    end = bare_name(name, start=False) != name
    said = blank_edge(name, end)
    where = f"{'ends in' if end else 'starts with'} {said}"
    if end and Path(bare).suffix:
        where += " after its suffix"
    clean = path.with_name(bare)
    exists = f"; {clean} exists" if clean.exists() else ""
    return f" (its name {where}{exists})"


def bare_name(name: str, *, start: bool = True, end: bool = True) -> str:
    """``name`` without the blanks (spaces, tabs) and invisible characters (a zero-width
    space, a no-break space) at its start and end (``start``, ``end``: which edges)."""
    from .fields import unseen_in_name

    def unseen(char: str) -> bool:
        return char.isspace() or unseen_in_name(char)

    first, last = 0, len(name)
    while start and first < last and unseen(name[first]):
        first += 1
    while end and last > first and unseen(name[last - 1]):
        last -= 1
    return name[first:last]


def shown_name(path: str | os.PathLike) -> str:
    """``path`` as a message names it: quoted where its name starts or ends in a blank or
    an invisible character (else that is not seen; the quotes write an invisible one as
    its code, '\\u200b'), else as it is."""
    text = str(path)
    name = Path(text).name
    return repr(text) if name != bare_name(name) or text != text.strip() else text


def missing_name(path: str | os.PathLike) -> str:
    """How a message names a file it did not find: :func:`shown_name` and, where the name
    starts or ends in a blank, :func:`blank_edge_hint` (which names the file without it)."""
    return shown_name(path) + blank_edge_hint(Path(path))


def check_saved_file(path: str | os.PathLike, noun: str, fix: str) -> Path:
    """``path`` if it is a readable, non-empty regular file: what every loader of a saved
    object (``noun``: "a saved explanation") checks first, so that a folder, a device or
    an empty file is named as such, not as "not found" or as broken JSON."""
    target = check_input_file(path, "", fix, InvalidFileError, noun=noun)
    if target.stat().st_size == 0:
        raise InvalidFileError(f"{target} is empty (0 bytes), not {noun}; {fix}")
    return target


def read_text(path: str | Path) -> str:
    """The whole file as text; a file that is not UTF-8 is refused with where it breaks."""
    path = given_path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        hint = blank_edge_hint(path)
        shown = repr(str(path)) if hint or str(path) != str(path).strip() else str(path)
        raise InvalidFileError(f"cannot read {shown}: {error.strerror or error}{hint}") from None
    return decode_utf8(raw, str(path), reencode_hint(path))


def reencode_hint(path: Path, encoding: str = "latin1") -> str:
    """The command that re-encodes ``path`` as UTF-8 beside it, with the path as given
    (not its bare name: the user's shell may be elsewhere), quoted for a shell."""
    import shlex

    target = path.with_name(f"utf8-{path.name}")
    return f"`iconv -f {encoding} -t utf-8 {shlex.quote(str(path))} > {shlex.quote(str(target))}`"


#: byte-order marks of the wide Unicode encodings, UTF-32 first: its little-endian mark
#: begins with UTF-16's
_WIDE_UNICODE = (
    ((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE), "utf-32"),
    ((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE), "utf-16"),
)


#: compressions and archives by their first bytes: what each is, and the command that
#: writes its content to standard output (a file's advice redirects it to a named file,
#: so it works whatever the compressed file is called). bzip2's mark is "BZh", a block
#: size and the first block's (or the empty stream's) magic, so a text that merely starts
#: with "BZh" is not taken for it
_COMPRESSIONS = (
    (re.compile(rb"\x1f\x8b"), "gzip-compressed", "gunzip -c"),
    (
        re.compile(rb"BZh[1-9](\x31\x41\x59\x26\x53\x59|\x17\x72\x45\x38\x50\x90)"),
        "bzip2-compressed",
        "bunzip2 -c",
    ),
    (re.compile(rb"\xfd7zXZ\x00"), "xz-compressed", "unxz -c"),
    (re.compile(rb"\x28\xb5\x2f\xfd"), "zstd-compressed", "zstd -dc"),
    (re.compile(rb"\x04\x22\x4d\x18"), "lz4-compressed", "lz4 -dc"),
    (re.compile(rb"PK(\x03\x04|\x05\x06)"), "a zip archive", "unzip -p"),
    (re.compile(rb"7z\xbc\xaf\x27\x1c"), "a 7z archive", "7z e -so"),
)
#: the suffixes those are named with, removed from the advised output name
_COMPRESSED_SUFFIXES = (".gz", ".gzip", ".bz2", ".xz", ".zst", ".zstd", ".lz4", ".zip", ".7z")


def compression_of(raw: bytes) -> tuple[str, str] | None:
    """What compression or archive ``raw`` (a file's first bytes) begins with, as
    ``(kind, command)``: ``kind`` names it in a sentence ("gzip-compressed"), ``command``
    writes its content to standard output ("gunzip -c"); None for anything else. The one
    table of such marks: data and text files and the bench's stores read it."""
    found = next((kind for kind in _COMPRESSIONS if kind[0].match(raw)), None)
    return None if found is None else found[1:]


def free_name(path: Path) -> Path:
    """``path`` where no file is there, else the first free one of ``plain-NAME``,
    ``plain-2-NAME``, ``plain-3-NAME``, ... beside it (NAME: ``path``'s name without a
    ``plain-`` it already has): a name that advice may tell a user to write to, since
    writing there overwrites nothing."""
    if not path.exists() and not path.is_symlink():
        return path
    name = path.name.removeprefix("plain-")
    for number in range(1, 1000):
        candidate = path.with_name(f"plain-{name}" if number == 1 else f"plain-{number}-{name}")
        if not candidate.exists() and not candidate.is_symlink():
            return candidate
    return path.with_name(f"plain-{os.getpid()}-{name}")


def free_numbered_name(path: Path, suffixes: int = 1) -> Path:
    """``path`` where no file is there, else the first free one of ``STEM-2.SUFFIXES``,
    ``STEM-3.SUFFIXES``, ... beside it (``suffixes``: how many of its last suffixes stay
    together, 2 for ``x.sqlite.gz``): a free name for a compressed file, which
    :func:`free_name`'s ``plain-`` would misdescribe."""
    if not path.exists() and not path.is_symlink():
        return path
    tail = "".join(path.suffixes[-suffixes:]) if suffixes > 0 else ""
    stem = path.name[: len(path.name) - len(tail)] if tail else path.name
    for number in range(2, 1000):
        candidate = path.with_name(f"{stem}-{number}{tail}")
        if not candidate.exists() and not candidate.is_symlink():
            return candidate
    return path.with_name(f"{stem}-{os.getpid()}{tail}")


def compressed_refusal(raw: bytes, source: str, stream: bool = False) -> str | None:
    """Why ``raw`` (the content of ``source``) cannot be read as text: it is compressed,
    and how to decompress it (``stream``: standard input, decompressed in the pipe); None
    where it is not. Said before any decoding: compressed bytes are no text in any
    encoding, so re-encoding them (the advice for a text that is not UTF-8) cannot help."""
    if (found := compression_of(raw)) is None:
        return None
    kind, command = found
    if stream:
        return f"{source} is {kind}: decompress it first (pipe it through `{command}`)"
    import shlex

    path = Path(source)
    if path.suffix.lower() in _COMPRESSED_SUFFIXES and path.stem:
        plain = free_name(path.with_suffix(""))  # d.csv.gz: d.csv, unless that exists
    else:  # a compressed file named as plain text: its own name is taken
        plain = free_name(path.with_name(f"plain-{path.name}"))
    return (
        f"{source} is {kind}: decompress it first "
        f"(`{command} {shlex.quote(str(path))} > {shlex.quote(str(plain))}`), then pass {plain}"
    )


def decode_utf8(raw: bytes, source: str, fix: str, stream: bool = False) -> str:
    """``raw`` as text (a byte-order mark skipped), or a refusal naming the first bad byte,
    its line and ``fix`` (how to re-encode ``source``). A ``fix`` that runs ``iconv -f
    latin1`` is reused, with the right encoding, for UTF-16 and UTF-32 (so standard input
    gets a pipe, not a file name). Compressed content is refused as such first (see
    :func:`compressed_refusal`; ``stream``: ``raw`` is standard input)."""
    if (compressed := compressed_refusal(raw, source, stream)) is not None:
        raise InvalidFileError(compressed)
    for marks, encoding in _WIDE_UNICODE:  # Windows' "Unicode" and its wider kin
        if raw.startswith(marks):
            if "iconv -f latin1 " in fix:
                how = fix.replace("iconv -f latin1 ", f"iconv -f {encoding} ")
            else:
                how = reencode_hint(Path(source), encoding)
            raise InvalidFileError(
                f"{source} is {encoding.upper()} text (it starts with {encoding.upper()}'s "
                f"byte-order mark), not UTF-8; re-encode it, e.g. {how}, or save it as UTF-8 "
                "from your editor"
            )
    if (binary := not_text_refusal(raw, source)) is not None:  # no encoding makes it text
        raise InvalidFileError(binary)
    skipped = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[skipped:].decode("utf-8")
    except UnicodeDecodeError as error:
        offset = skipped + error.start
        line = raw.count(b"\n", 0, offset) + 1
        column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
        raise InvalidFileError(
            f"{source} is not UTF-8: byte 0x{raw[offset]:02X} on line {line} (byte {column} "
            f"of the line, byte offset {offset}) cannot be decoded; re-encode it as UTF-8, "
            f"e.g. {fix}, or save it as UTF-8 from your editor"
        ) from None


def json_problem(error: json.JSONDecodeError, *, line: bool = True) -> str:
    """Why and where text is not JSON, in words: the decoder's message (without the "at"
    some end in, "Unterminated string starting at") and its place, ``line`` and column or
    the column alone (a .jsonl line)."""
    what = error.msg.removesuffix(" at")
    return f"{what} at " + (
        f"line {error.lineno}, column {error.colno}" if line else f"column {error.colno}"
    )


def own_folder(path: Path) -> Path:
    """The folder a file's relative paths are read from: its own, and for a link, the
    folder of the file it points to (where those paths were written for); kept relative
    to the current folder where it can be, as the path given is."""
    if not path.is_symlink():
        return path.parent
    real = Path(os.path.realpath(path)).parent
    try:
        return Path(os.path.relpath(real))
    except ValueError:  # pragma: no cover - another drive (Windows)
        return real


#: binary formats by their first bytes, named in a sentence: a figure (``sanity --plot``
#: writes PNG), a table, a database or an array given where text is read (re-encoding
#: them, the advice for text that is not UTF-8, only makes unreadable text)
_BINARY_FORMATS = tuple(
    (re.compile(mark, re.DOTALL), kind)
    for mark, kind in (
        (rb"\x89PNG\r\n\x1a\n", "a PNG image"),
        (rb"PAR1", "a Parquet table"),
        (rb"\xff\xd8\xff", "a JPEG image"),
        (rb"GIF8", "a GIF image"),
        (rb"%PDF-", "a PDF document"),
        (rb"SQLite format 3\x00", "an SQLite database"),
        (rb"\x93NUMPY", "a NumPy array file"),
        (rb"ARROW1", "a Feather (Arrow IPC) table"),
        (rb"FEA1", "a Feather table"),
        (rb"\x80[\x02-\x05]", "a pickle file"),
        (rb"\x89HDF\r\n\x1a\n", "an HDF5 file"),
        (rb"BM.{4}\x00\x00\x00\x00", "a BMP image"),
        (rb"II\*\x00|MM\x00\*", "a TIFF image"),
        (rb"RIFF.{4}WEBP", "a WebP image"),
        (rb"\x7fELF", "an ELF executable"),
        (rb"\x00asm", "a WebAssembly module"),
        (rb"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Microsoft Office document (.xls, .doc)"),
    )
)


def binary_kind(raw: bytes) -> str | None:
    """What binary format ``raw`` (a file's first bytes) begins with ("a PNG image", "a
    Parquet table"); None for anything else."""
    return next((kind for mark, kind in _BINARY_FORMATS if mark.match(raw)), None)


def not_text_refusal(raw: bytes, source: str) -> str | None:
    """Why ``raw`` (the content of ``source``) is no text in any encoding: it begins with a
    binary format's mark (named), or it holds a NUL byte, which no text file does (UTF-16
    and UTF-32 with their byte-order mark are read as such before this is asked); None
    where neither holds."""
    fix = "pass a text file (UTF-8) instead"
    nul = raw.find(b"\x00")
    if (kind := binary_kind(raw[:16])) is not None and _binary_evidence(raw, nul):
        return f"{source} is {kind}, not text; {fix}"  # a text line "PAR1 ..." stays text
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        return (
            f"{source} holds a NUL byte (line {line}, byte offset {nul}), so it is binary data, "
            f"not text (or UTF-16/UTF-32 text without a byte-order mark); {fix}"
        )
    return None


#: control bytes no text holds in any encoding (tab, line ends, form feed, escape and the
#: DOS end-of-file mark 0x1A aside), the evidence that a file is binary data
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0e-\x19\x1c-\x1f]")


def _binary_evidence(raw: bytes, nul: int) -> bool:
    """Whether ``raw``, which begins with a binary format's mark, is that format rather
    than text beginning with the same bytes. A mark of ASCII letters (PAR1, GIF8, %PDF-,
    ARROW1, FEA1, RIFF....WEBP) names the format only with binary evidence, a NUL or another
    control byte, so a Latin-1 text "PAR1 café" is advised to be re-encoded; a mark that no
    text begins with (PNG's 0x89) needs only content that is not UTF-8."""
    if nul >= 0 or _CONTROL_BYTES.search(raw) is not None:
        return True
    return not (0x20 <= raw[0] < 0x7F) and not _is_utf8(raw)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def binary_refusal(raw: bytes, source: str, noun: str, fix: str) -> str | None:
    """Why ``raw`` (the content of ``source``) is not ``noun`` ("a saved explanation"):
    it is a binary format, named, with ``fix`` (what to pass instead); None where it is
    not one of those."""
    if (kind := binary_kind(raw)) is None:
        return None
    return f"{source} is {kind}, not {noun}; {fix}"


def refuse_binary_file(path: str | os.PathLike, noun: str, fix: str) -> None:
    """Refuse ``path`` where its first bytes mark a binary format (a ``.png`` figure, a
    ``.parquet`` table, under any name), before it is decoded as text: named as what it
    is, not as text to re-encode."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return  # the reader that follows names the problem
    if (refusal := binary_refusal(head, shown_name(path), noun, fix)) is not None:
        raise InvalidFileError(refusal)
