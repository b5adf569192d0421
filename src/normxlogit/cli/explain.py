"""``normxlogit explain``: texts (or a generation) -> explanations on the terminal or in files."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from ..common.console import GuardedStdout
from ..common.errors import InvalidInputError, InvalidOptionError, OutputPathError
from ..common.input_paths import blank_edge_hint
from ..common.numbering import texts_named
from ..common.options import same_setting
from ..common.outputs import (
    check_output_file,
    json_text,
    output_format,
    quoted_name,
    refuse_input_as_output,
    write_atomically,
)
from ..common.progress import TerminalBar
from .app import (
    FORMAT_BY_SUFFIX,
    DtypeOption,
    Format,
    ModelOption,
    TokenBudgetOption,
    app,
    at_least,
    check_layer,
    check_utf8_argument,
    input_lines,
    out,
    parse_options,
    read_texts,
    stdin_dash,
    target_of,
)
from .helpers import (
    err,
    flags_named,
    friendly,
    once_each,
    refuse_missing_tagger,
    refuse_model_file,
    refuse_reagent_model,
)


@contextmanager
def _contrast_input_named(
    segments: str | None = None, lines: list[int] | None = None
) -> Iterator[None]:
    """--contrast-input is passed on as a list of one (one per text): messages name the
    flag, not ``contrast_input[0]``; and the flags of the keyword names the library's
    messages use (``segments=``, ``segment_reduce=``; a --segments file's segment by its
    line, ``lines[i]`` for segment i: blank lines skipped do not shift them), and advice
    only Python could follow as the command line's (:func:`~.helpers.flags_named`)."""
    try:
        yield
    except InvalidInputError as error:
        # a segment by its --segments line, or as the text's sentence (counted from 1)
        def named(index: str) -> str:
            if segments == "sentences":
                return f"sentence {int(index) + 1}"
            line = lines[int(index)] if lines and int(index) < len(lines) else int(index) + 1
            return f"--segments line {line}"

        message = re.sub(r"segments\[0\]\[(\d+)\]", lambda m: named(m[1]), str(error))
        message = re.sub(r"segments\[(\d+)\] of ", lambda m: named(m[1]) + " of ", message)
        message = flags_named(message)
        if message == str(error):
            raise
        raise type(error)(message) from None


def contrast_of(names: list[str], ids: list[int], stepwise: bool) -> Any:
    """--contrast values are names, --contrast-id values ints; a generation's contrast is
    one continuation (a text, or ids)."""
    from ..common.targets import check_contrast

    if stepwise:
        if names and ids:
            raise InvalidInputError(
                "a generation's contrast is one continuation: --contrast TEXT or --contrast-id "
                "ids, not both"
            )
        if len(names) > 1:
            raise InvalidInputError(
                "a generation's contrast is one continuation: pass --contrast once"
            )
        return names[0] if names else (ids or None)
    items: list[Any] = [*names, *ids]
    if not items:
        return None
    return check_contrast(items[0] if len(items) == 1 else items)


@app.command(
    cls=once_each(
        method="to compare methods, run evaluate (repeat --method there) or the page "
        "(normxlogit serve)",
        model="explain with each model in its own run (a bench config compares models)",
        layer="give one layer index, or --layer all for every layer",
        input="put the texts in one file, one per line",
        contrast_input="explain under each edited text in its own run",
        continuation="explain each continuation in its own run",
        aggregate="run once per aggregation",
        preset="",
    )
)
@friendly
def explain(
    text: Annotated[str | None, typer.Argument(help="Text to explain (or use --input).")] = None,
    model: ModelOption = "",
    dtype: DtypeOption = None,
    method: Annotated[
        str, typer.Option(help="Attribution method (see `normxlogit methods`).")
    ] = "normxlogit",
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            "-l",
            help="Label name (classifiers) or token string (language models) to explain; "
            "always text, digits too (use --label-id for a number). Repeat for several.",
        ),
    ] = None,
    label_id: Annotated[
        list[int] | None,
        typer.Option(
            "--label-id",
            help="Label index (classifiers) or vocabulary id (language models); repeatable.",
        ),
    ] = None,
    all_labels: Annotated[bool, typer.Option("--all-labels", help="Score every label.")] = False,
    contrast: Annotated[
        list[str] | None,
        typer.Option(
            "--contrast",
            help="Explain why the target rather than this label / token (one for all targets, "
            "or one per target); with --generate/--continuation: a contrast continuation, one "
            "token per step.",
        ),
    ] = None,
    contrast_id: Annotated[
        list[int] | None,
        typer.Option("--contrast-id", help="A contrast as a label index or vocabulary id."),
    ] = None,
    contrast_input: Annotated[
        str | None,
        typer.Option(
            "--contrast-input",
            help="Explain the same target under this second text too (a contrast prompt for "
            "a generation): aligned tokens score the difference.",
        ),
    ] = None,
    layer: Annotated[
        str | None, typer.Option(help="Layer index (0 = embeddings) or 'all'.")
    ] = None,
    input_file: Annotated[
        Path | None,
        typer.Option(
            "--input",
            "-i",
            help="UTF-8 file with one text per line, no blank lines ('-' for stdin).",
        ),
    ] = None,
    fmt: Annotated[
        Format | None,
        typer.Option(
            "--format",
            "-f",
            help="terminal, json or html (default: from the --output suffix, .html or .json; "
            "else terminal).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Write the result to this file (.html or .json, or --format)."
        ),
    ] = None,
    aggregate: Annotated[
        str | None, typer.Option(help="Merge subwords into words: sum, mean, max, absmax.")
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass.")] = 16,
    max_tokens_per_batch: TokenBudgetOption = None,
    option: Annotated[
        list[str] | None, typer.Option("--option", help="Method option name=value; repeatable.")
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(help="A paper's settings for the method, e.g. pi-soft (--option overrides)."),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Do not print the terminal view when writing a file."),
    ] = False,
    generate: Annotated[
        bool,
        typer.Option(
            "--generate",
            help="Causal LMs: generate after TEXT (greedy) and explain every generated token.",
        ),
    ] = False,
    max_new_tokens: Annotated[
        int | None,
        typer.Option(help="With --generate: the most tokens to generate (default 32)."),
    ] = None,
    continuation: Annotated[
        str | None,
        typer.Option(help="Causal LMs: explain this continuation of TEXT, step by step."),
    ] = None,
    segments: Annotated[
        str | None,
        typer.Option(
            "--segments",
            help="Score the text's segments too: 'sentences', or a UTF-8 FILE with one "
            "segment of TEXT per line (as written in TEXT, in order). Segment methods "
            "(leave_one_out, shapley_sampling, contextcite, ...) need it.",
        ),
    ] = None,
    segment_reduce: Annotated[
        str, typer.Option(help="How token scores become a segment's: sum, mean, max, absmax.")
    ] = "sum",
) -> None:
    """Explain the model's prediction for TEXT (or each line of --input) token by token;
    with --generate or --continuation, every step of what a causal LM writes after it."""
    # everything that needs neither torch nor the model, so bad input is refused at once
    at_least(batch_size, 1, "--batch-size")
    at_least(max_tokens_per_batch, 1, "--max-tokens-per-batch")
    stepwise = generate or continuation is not None
    if generate and continuation is not None:
        raise InvalidInputError(
            "--generate writes a continuation and --continuation gives one; pass one of them"
        )
    at_least(max_new_tokens, 1, "--max-new-tokens")
    if max_new_tokens is not None and not generate:
        raise InvalidInputError(
            "--max-new-tokens goes with --generate"
            + (
                ": --continuation sets the steps; leave --max-new-tokens out"
                if continuation is not None
                else "; add --generate to explain a generation (without it, only the "
                "next token is explained)"
            )
        )
    if stepwise and aggregate is not None:  # a generation's aggregate is over its steps
        raise InvalidInputError(
            "--aggregate merges the subwords of one text and does not apply to --generate or "
            "--continuation; leave it out (a --format html page colours the text by each "
            "token's sum, mean, max, absmax or normalized score over the steps)"
        )
    if stepwise and (label or label_id or all_labels):
        raise InvalidInputError(
            "a generation's targets are its own tokens, one per step; leave out --label, "
            "--label-id and --all-labels"
        )
    refuse_model_file(output, model, "--output")
    if output is not None:
        check_output_file(output, "--output")
        sources = (
            (input_file, "--input"),
            (None if segments in (None, "sentences") else segments, "--segments"),
        )
        for source, flag in sources:  # writing it would replace what is being explained
            if source is not None:
                refuse_input_as_output(
                    output,
                    source,
                    "--output",
                    f"the {flag} file",
                    "write the result to another file",
                )
    chosen = output_format(output, fmt, FORMAT_BY_SUFFIX)
    if output is not None and chosen is Format.terminal:
        raise OutputPathError(
            "--format terminal prints to the terminal and writes no file; leave out "
            "--output, or pass --format json or html"
        )
    chosen = chosen or Format.terminal
    if quiet and chosen is Format.terminal:
        raise InvalidInputError(
            "--quiet hides the terminal view and nothing else would be written; add --output "
            "FILE (.html, .json) or --format json/html"
        )
    check_layer(layer)
    from ..methods import method_class

    method_class(method)  # an unknown --method before a METHOD. prefix is checked against it
    options = own_options(parse_options(option or []), method)
    refuse_flag_options(options)
    text, input_file = stdin_dash(text, input_file)
    for value, what in (
        (text, "TEXT"),
        (contrast_input, "--contrast-input"),
        (continuation, "--continuation"),
    ):
        check_utf8_argument(value, what)
    for values, what in ((label, "--label"), (contrast, "--contrast")):
        for value in values or []:
            check_utf8_argument(value, what)
    texts = read_texts(text, input_file)
    parts, segment_lines = segments_of(segments, len(texts))
    with _contrast_input_named():  # the library's target checks, in the flags' words
        versus = contrast_of(contrast or [], contrast_id or [], stepwise)
    if contrast_input is not None and len(texts) != 1:
        raise InvalidInputError(
            f"--contrast-input is one text, for one text to explain; {len(texts)} were given"
        )
    if contrast_input is not None and not contrast_input.strip():
        what = "the prompt to explain the continuation after" if stepwise else "the edited text"
        raise InvalidInputError(f"--contrast-input is empty; give {what}")

    from ..builtin import DEFAULT_MODEL
    from ..explaining.texts import explain as run_explain
    from ..explanations.explanation import AGGREGATIONS, Explanation
    from ..loading import load
    from ..methods import get_method
    from ..model.inputs import check_texts
    from ..model.precision import resolve_dtype
    from ..render.html import render_html

    if aggregate is not None and aggregate not in AGGREGATIONS:
        raise InvalidOptionError(
            f"--aggregate {aggregate!r} is not one of: {', '.join(AGGREGATIONS)}"
        )
    with _contrast_input_named():
        target = target_of(label or [], label_id or [], all_labels)
    if versus is not None and not stepwise:
        from ..common.targets import check_pairing

        try:
            check_pairing(target, versus)
        except InvalidInputError as error:
            raise InvalidInputError(f"--contrast/--contrast-id: {error}") from None
    numbering = input_lines(text, input_file, len(texts))  # messages name --input's lines
    with texts_named(numbering):
        texts, _ = check_texts(texts)
    attribution = get_method(method, preset=preset, **options)
    refuse_missing_tagger([attribution], None, "explain")
    precision = resolve_dtype(dtype) if dtype is not None else None
    loaded = load(model or DEFAULT_MODEL, dtype=precision)  # after the cheap checks
    refuse_missing_tagger([attribution], loaded.tokenizer, "explain")
    refuse_reagent_model([attribution], loaded, "explain", option or [])
    # the flag's name in messages, not the list's; texts named by their --input line
    with _contrast_input_named(segments, segment_lines), texts_named(numbering):
        if stepwise:
            explanations = run_explain(
                loaded,
                texts,
                method=attribution,
                layer=layer,
                batch_size=batch_size,
                max_tokens_per_batch=max_tokens_per_batch,
                aggregate=aggregate,
                generate=generate,
                max_new_tokens=max_new_tokens,
                continuation=continuation,
                contrast=versus,
                contrast_input=None if contrast_input is None else [contrast_input],  # one per text
                segments=parts,
                segment_reduce=segment_reduce,
            )
        else:
            with TerminalBar("explaining", len(texts), threshold=32, console=err) as advance:
                explanations = run_explain(
                    loaded,
                    texts,
                    method=attribution,
                    target=target,
                    layer=layer,
                    batch_size=batch_size,
                    max_tokens_per_batch=max_tokens_per_batch,
                    aggregate=aggregate,
                    progress=advance,
                    contrast=versus,
                    contrast_input=None if contrast_input is None else [contrast_input],
                    segments=parts,
                    segment_reduce=segment_reduce,
                )
    if chosen is Format.terminal or (output is not None and not quiet):
        for explanation in explanations:
            out.print(explanation)
    if chosen is Format.terminal:
        return
    if chosen is Format.json:
        data = [e.to_dict() for e in explanations]
        content = json_text(data[0] if len(data) == 1 else data, indent=2)
    elif stepwise and not isinstance(explanations[0], Explanation):
        from ..render.generation import render_generation_html

        content = render_generation_html(explanations)
    else:
        content = render_html(explanations)
    if output is None:
        GuardedStdout().write(content + ("\n" if not content.endswith("\n") else ""))
    else:
        write_atomically(output, content)
        err.print(f"wrote {quoted_name(output)}")


#: names --option cannot take, with the flag that sets each
_FLAG_OPTIONS = {"preset": "--preset", "name": "--method"}


def own_options(options: dict[str, str], method: str) -> dict[str, str]:
    """The method's options from ``--option`` pairs: ``NAME=VALUE``, or
    ``METHOD.NAME=VALUE`` as evaluate and sanity take it (both spellings with different
    values are refused); a METHOD other than ``--method`` is refused. Values stay text
    for get_method."""
    bare, named = {}, {}
    for key, value in options.items():
        owner, dot, name = key.rpartition(".")
        if not dot:
            bare[key] = value
        elif _method_spelling(owner) != _method_spelling(method):
            raise InvalidOptionError(
                f"--option {quoted_name(key)}: {owner!r} is not the method explained (--method "
                f"{method}); give its options as NAME=VALUE or {method}.NAME=VALUE"
            )
        elif name in named and not same_setting(named[name], value):
            raise InvalidOptionError(
                f"--option {name} is given twice with different values ({named[name]!r}, "
                f"{value!r}); give it once"
            )
        else:
            named[name] = value
    for name, value in named.items():
        if name in bare and not same_setting(bare[name], value):
            raise InvalidOptionError(
                f"--option {name}={bare[name]} and --option {method}.{name}={value} give "
                f"{name} two values; give it once"
            )
    return {**bare, **named}


def _method_spelling(name: str) -> str:
    """A method name as lookups read it (lower case, '_' for '-')."""
    return name.strip().lower().replace("-", "_")


def refuse_flag_options(options: dict[str, str]) -> None:
    """Refuse ``--option preset=...`` / ``--option name=...``: each is a flag of its own,
    not a method option (passing it on would fail inside get_method)."""
    for key, flag in _FLAG_OPTIONS.items():
        if key in options:
            raise InvalidOptionError(
                f"--option {key}={options[key]}: {key} is no method option; give it as "
                f"{flag} {options[key]}"
            )


def segments_of(
    value: str | None, texts: int
) -> tuple[str | list[list[str]] | None, list[int] | None]:
    """``--segments``: ``sentences``, or the segments of the one TEXT read from a file
    (one per line, lines ending as --input's do: LF, CRLF or a lone CR; blank lines
    skipped, a byte-order mark too), as explain takes them for one text; and each
    segment's line in the file, for messages."""
    if value is None or value == "sentences":
        return value, None
    path = Path(value)
    if not path.is_file():
        raise InvalidInputError(
            f"--segments {value!r} is neither 'sentences' nor a file{blank_edge_hint(path)}; "
            "give 'sentences' or a UTF-8 file with one segment of the text per line"
        )
    if texts != 1:
        raise InvalidInputError(
            f"--segments FILE lists the segments of one text; {texts} texts were given (use "
            "--segments sentences with --input)"
        )
    from ..common.input_paths import read_text
    from ..data.files import split_lines  # LF, CRLF, lone CR: as --input (not U+2028)

    numbered = [
        (number, line.strip())
        for number, line in enumerate(split_lines(read_text(path)), start=1)
        if line.strip()
    ]
    if not numbered:
        raise InvalidInputError(f"--segments {value}: the file holds no segment")
    return [[line for _, line in numbered]], [number for number, _ in numbered]
