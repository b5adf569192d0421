"""The root command and what its commands share: the app, the output console, the
common options and the argument helpers (public: each command module imports them)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ..common.console import plain_console
from ..common.counts import integer_text
from ..common.errors import InvalidInputError, InvalidOptionError
from ..common.input_paths import check_input_file, decode_utf8
from ..common.options import same_setting
from ..common.outputs import quoted_name
from ..data import text_lines

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Explain transformer predictions token by token (NormXLogit and baselines).",
)
out = plain_console()


def _print_version(value: bool) -> None:
    """``--version``: the package's version, without loading torch."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            shown = version("normxlogit")
        except PackageNotFoundError:  # run from a source tree that was never installed
            from .. import __version__ as shown
        out.print(f"normxlogit {shown}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Explain transformer predictions token by token (NormXLogit and baselines)."""


class Format(str, Enum):
    terminal = "terminal"
    json = "json"
    html = "html"


#: the model a command runs on (empty: the built-in default)
ModelOption = Annotated[str, typer.Option("--model", "-m", help="Built-in name, folder or hub id.")]
TokenBudgetOption = Annotated[
    int | None,
    typer.Option(
        help="Memory budget: at most this many tokens per forward pass (texts, or "
        "perturbed copies, x the longest, padding included); texts are grouped by length. "
        "Default: no budget.",
    ),
]
MethodsOption = Annotated[
    list[str] | None,
    typer.Option("--method", help="Attribution method; repeat (default: normxlogit, random)."),
]
#: method options of the commands that take several methods (``explain`` takes one)
MethodOptionsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        help="Method option NAME=VALUE (every --method that takes NAME) or METHOD.NAME=VALUE "
        "(that method alone); repeatable. See `normxlogit methods NAME`.",
    ),
]
DtypeOption = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        help="Compute in float32, bfloat16, float16 or float64 (default: as loaded; built-ins: "
        "float32).",
    ),
]

#: what ``explain --output`` writes when ``--format`` is not given
FORMAT_BY_SUFFIX = {".html": Format.html, ".htm": Format.html, ".json": Format.json}


def stdin_dash(text: str | None, input_file: Path | None) -> tuple[str | None, Path | None]:
    """A TEXT of exactly ``-`` means standard input, as ``--input -`` does (the Unix
    convention): explaining the one-character text "-" would leave the pipe unread."""
    if text == "-" and input_file is None:
        return None, Path("-")
    return text, input_file


def check_utf8_argument(value: str | None, what: str) -> None:
    """A text argument holds no undecodable bytes (Python keeps them as surrogates, which
    the tokenizer refuses with a TypeError traceback)."""
    if value is None:
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        byte = (
            ord(value[error.start]) - 0xDC00 if "\udc80" <= value[error.start] <= "\udcff" else None
        )
        shown = f"byte 0x{byte:02X}" if byte is not None else f"character {value[error.start]!r}"
        # only TEXT has a file form: --input FILE replaces it, not a --label or --contrast
        instead = (
            ", or put the text in a UTF-8 file and pass --input FILE" if what == "TEXT" else ""
        )
        raise InvalidInputError(
            f"{what} is not UTF-8 ({shown} at character {error.start + 1}); set your terminal "
            f"to UTF-8{instead}"
        ) from None


def read_texts(text: str | None, input_file: Path | None) -> list[str]:
    """The texts to explain: TEXT, or one per line of --input (a file, or '-' for stdin).

    Outputs follow the input lines one to one, so a blank line inside the input is refused
    with its number (blank lines at the very end are ignored). A file that is not UTF-8 is
    refused with the line of the first bad byte.
    """
    if text is not None and input_file is not None:
        raise InvalidInputError("give either a TEXT argument or --input, not both")
    if text is not None:
        return [text]
    if input_file is not None and str(input_file) != "-":
        source = str(input_file)
        check_input_file(
            input_file,
            "--input",
            "pass a text file with one text per line (or pipe texts on standard input)",
        )
        from ..data.files import check_data_suffix

        check_data_suffix(input_file, "--input", lines=True)
        try:
            raw = input_file.read_bytes()
        except OSError as error:
            raise InvalidInputError(f"cannot read {source}: {error.strerror or error}") from None
        fix = f"`iconv -f latin1 -t utf-8 {source} > utf8.txt`"
    elif not sys.stdin.isatty() or input_file is not None:
        source, fix = "standard input", "by piping it through `iconv -f latin1 -t utf-8`"
        stream = getattr(sys.stdin, "buffer", None)
        raw = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
    else:
        raise InvalidInputError('nothing to explain: pass "TEXT", --input FILE, or pipe texts')
    # a binary file (plot.png) is named by decode_utf8, the one reader every text input shares
    content = decode_utf8(raw, source, fix, stream=source == "standard input")
    return text_lines(content, source, data_files=False)


def input_lines(text: str | None, input_file: Path | None, count: int):
    """How messages name the texts :func:`read_texts` read: by their line of --input (or of
    standard input), counted from 1 as editors do; a TEXT argument as "the text"."""
    if text is not None:
        return lambda _: "the text"
    from ..common.numbering import lines_of

    source = "standard input" if input_file is None or str(input_file) == "-" else str(input_file)
    return lines_of(source, range(1, count + 1))


def parse_options(pairs: list[str], flag: str = "--option") -> dict[str, str]:
    """``name=value`` pairs; values stay text, converted to each option's declared type."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        owner, dot, name = key.strip().rpartition(".")
        if not sep or not key.strip() or (dot and not (owner.strip() and name.strip())):
            raise InvalidInputError(
                f"{flag} {pair!r} must look like name=value"
                + (" (or METHOD.NAME=VALUE)" if flag == "--option" else "")
            )
        if key.strip() in options and not same_setting(options[key.strip()], raw):
            raise InvalidInputError(
                f"{flag} {quoted_name(key.strip())} is given twice with different values "
                f"({options[key.strip()]!r}, {raw!r}); give it once"
            )
        options[key.strip()] = raw
    return options


def options_by_method(pairs: list[str], methods: list[str]) -> dict[str, dict[str, str]]:
    """Each method's options from ``--option`` pairs: ``NAME=VALUE`` goes to every method
    that takes ``NAME`` (refused when none does), ``METHOD.NAME=VALUE`` to that method
    alone and wins over the bare name. Values stay text for :func:`get_method` to convert."""
    from ..methods import method_options

    by_method: dict[str, dict[str, str]] = {name: {} for name in methods}
    chosen = ", ".join(methods)
    named_options = []
    for key, value in parse_options(pairs).items():
        owner, dot, option = key.rpartition(".")
        shown = quoted_name(key)  # 'se\u200bed': an invisible character escaped
        if option == "seed":
            raise InvalidOptionError(
                f"--option {shown}: the methods are seeded by --seed; give the seed there"
            )
        if not dot:
            takers = [name for name in methods if option in method_options(name)]
            if not takers:
                raise InvalidOptionError(
                    f"--option {shown}: none of the methods ({chosen}) takes an option "
                    f"{option!r}; see `normxlogit methods NAME` for a method's options"
                )
            for name in takers:
                by_method[name][option] = value
        elif owner not in by_method:
            raise InvalidOptionError(
                f"--option {shown}: {owner!r} is not one of the methods ({chosen}); write "
                "METHOD.NAME=VALUE with a --method as given"
            )
        else:
            named_options.append((owner, option, value))
    for owner, option, value in named_options:  # the method's own setting wins
        by_method[owner][option] = value
    return by_method


def target_of(labels: list[str], label_ids: list[int], all_labels: bool) -> Any:
    """--label values are names (labels or tokens), --label-id values are ints."""
    from ..common.targets import check_target

    if all_labels and (labels or label_ids):
        raise InvalidInputError("use --label / --label-id or --all-labels, not both")
    if all_labels:
        return "all"
    items: list[Any] = [*labels, *label_ids]
    if not items:
        return None
    return check_target(items[0] if len(items) == 1 else items)


def at_least(value: int | None, least: int, flag: str, hint: str = "") -> None:
    if value is not None and value < least:
        raise InvalidOptionError(f"{flag} {value}: must be at least {least}{hint}")


def check_layer(layer: str | None) -> None:
    if layer is None or layer == "all" or integer_text(layer) is not None:
        return
    raise InvalidOptionError(
        f"--layer {layer!r} must be a layer index (0 = embeddings, negative counts from the "
        "end) or 'all'"
    )
