"""The ``normxlogit`` command line: ``explain``, ``evaluate``, ``bench``, ``serve``, ``models``,
``methods``, ``metrics``, ``train``.

Only typer, rich and the package's light modules are imported at the top: every command
checks its arguments, output paths and input files first, then imports torch and
transformers and loads the model. ``--help`` and bad input are answered at once, and a
bad output path is refused before minutes of work, not after.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..common.console import GuardedStdout, description_column, labelled, plain_console
from ..common.errors import InvalidInputError, InvalidOptionError, OutputPathError
from ..common.input_paths import check_input_file
from ..common.outputs import check_output_file, json_text, output_format, write_atomically
from ..data import decode_utf8, text_lines
from .helpers import err, friendly

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Explain transformer predictions token by token (NormXLogit and baselines).",
)
out = plain_console()


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
DtypeOption = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        help="Compute in float32, bfloat16 or float16 (default: as loaded; built-ins: float32).",
    ),
]

#: what ``explain --output`` writes when ``--format`` is not given
FORMAT_BY_SUFFIX = {".html": Format.html, ".htm": Format.html, ".json": Format.json}


def _read_texts(text: str | None, input_file: Path | None) -> list[str]:
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
    return text_lines(decode_utf8(raw, source, fix), source)


def _parse_options(pairs: list[str], flag: str = "--option") -> dict[str, str]:
    """``name=value`` pairs; values stay text, converted to each option's declared type."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInputError(f"{flag} {pair!r} must look like name=value")
        if key.strip() in options:
            raise InvalidInputError(f"{flag} {key.strip()} is given twice; give it once")
        options[key.strip()] = raw
    return options


def _target(labels: list[str], label_ids: list[int], all_labels: bool) -> Any:
    """--label values are names (labels or tokens), --label-id values are ints."""
    from ..model.targets import check_target

    if all_labels and (labels or label_ids):
        raise InvalidInputError("use --label / --label-id or --all-labels, not both")
    if all_labels:
        return "all"
    items: list[Any] = [*labels, *label_ids]
    if not items:
        return None
    return check_target(items[0] if len(items) == 1 else items)


def _at_least(value: int | None, least: int, flag: str, hint: str = "") -> None:
    if value is not None and value < least:
        raise InvalidOptionError(f"{flag} {value}: must be at least {least}{hint}")


def _check_layer(layer: str | None) -> None:
    if layer is None or layer == "all" or layer.strip().lstrip("-").isdigit():
        return
    raise InvalidOptionError(
        f"--layer {layer!r} must be a layer index (0 = embeddings, negative counts from the "
        "end) or 'all'"
    )


@app.command()
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
) -> None:
    """Explain the model's prediction for TEXT (or each line of --input) token by token;
    with --generate or --continuation, every step of what a causal LM writes after it."""
    # everything that needs neither torch nor the model, so bad input is refused at once
    _at_least(batch_size, 1, "--batch-size")
    _at_least(max_tokens_per_batch, 1, "--max-tokens-per-batch")
    stepwise = generate or continuation is not None
    if generate and continuation is not None:
        raise InvalidInputError(
            "--generate writes a continuation and --continuation gives one; pass one of them"
        )
    _at_least(max_new_tokens, 1, "--max-new-tokens")
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
    if stepwise and (label or label_id or all_labels):
        raise InvalidInputError(
            "a generation's targets are its own tokens, one per step; leave out --label, "
            "--label-id and --all-labels"
        )
    if output is not None:
        check_output_file(output, "--output")
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
    _check_layer(layer)
    options = _parse_options(option or [])
    texts = _read_texts(text, input_file)

    from ..builtin import DEFAULT_MODEL
    from ..explaining.texts import explain as run_explain
    from ..explanations.explanation import AGGREGATIONS
    from ..loading import load
    from ..methods import get_method
    from ..model.inputs import check_texts
    from ..model.precision import resolve_dtype
    from ..render.html import render_html

    if aggregate is not None and aggregate not in AGGREGATIONS:
        raise InvalidOptionError(
            f"--aggregate {aggregate!r} is not one of: {', '.join(AGGREGATIONS)}"
        )
    target = _target(label or [], label_id or [], all_labels)
    texts, _ = check_texts(texts)
    attribution = get_method(method, preset=preset, **options)
    precision = resolve_dtype(dtype) if dtype is not None else None
    loaded = load(model or DEFAULT_MODEL, dtype=precision)  # after the cheap checks
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
        )
    else:
        with _progress(len(texts)) as advance:
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
            )
    if chosen is Format.terminal or (output is not None and not quiet):
        for explanation in explanations:
            out.print(explanation)
    if chosen is Format.terminal:
        return
    if chosen is Format.json:
        data = [e.to_dict() for e in explanations]
        content = json_text(data[0] if len(data) == 1 else data, indent=2)
    elif stepwise:
        from ..render.generation import render_generation_html

        content = render_generation_html(explanations)
    else:
        content = render_html(explanations)
    if output is None:
        GuardedStdout().write(content + ("\n" if not content.endswith("\n") else ""))
    else:
        write_atomically(output, content)
        err.print(f"wrote {output}")


class _progress:
    """A progress bar on stderr for long inputs; silent for a handful of texts."""

    def __init__(self, total: int, threshold: int = 32, description: str = "explaining"):
        self.total, self.enabled = total, total >= threshold and err.is_terminal
        self.description = description
        self.bar = None

    def __enter__(self) -> Callable[[int], None]:
        if not self.enabled:
            return lambda done: None
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TimeRemainingColumn

        self.bar = Progress(
            description_column(),
            BarColumn(),
            TaskProgressColumn(),
            TimeRemainingColumn(),
            console=err,
            transient=True,
        )
        self.bar.start()
        task = self.bar.add_task(self.description, total=self.total)
        return lambda done: self.bar.update(task, completed=done)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


class TableFormat(str, Enum):
    markdown = "markdown"
    csv = "csv"
    json = "json"


def _check_gold(model: Any, data: Path, examples: list) -> None:
    """Gold labels the model cannot read are refused with their file and line; a
    regressor given what look like class labels is warned (its scores mean little)."""
    from ..common.errors import InvalidFileError
    from ..model.targets import class_like, gold_problem
    from ..model.tasks import TaskKind

    for example in examples:
        problem = gold_problem(model, example.label)
        if problem is not None:
            raise InvalidFileError(f"{data}, {example.where}: {problem}")
    if model.task.kind is TaskKind.REGRESSION and class_like([e.label for e in examples]):
        warnings.warn(
            f"{data}: every gold value is 0, 1 or 2, which look like class labels, while "
            f"{model.name or 'the model'} is a regressor ({model.task.labels[0]!r}); its "
            "correlations with them mean little: check that the file goes with this model",
            stacklevel=2,
        )


def _check_metric_inputs(data: Path, examples: list, metrics: list[str], explain_label: bool):
    """Refuse a data file that lacks the labels or evidence the metrics need."""
    from ..evaluation import metric_info

    needs_labels = any(metric_info(name).needs_labels for name in metrics)
    if (needs_labels or explain_label) and any(e.label is None for e in examples):
        wanted = ", ".join(metrics) if needs_labels else "--explain-label"
        raise InvalidInputError(f"{data} has no label column, which {wanted} need")
    if any(metric_info(name).needs_evidence for name in metrics):
        lacking = next((e.row for e in examples if e.evidence is None), None)
        if lacking is not None:
            raise InvalidInputError(
                f"{data}: row {lacking} has no evidence, which {', '.join(metrics)} need; give "
                'every row an evidence column (word indices, e.g. "0 3") or evidence_mask '
                "(one 0/1 per whitespace-separated word)"
            )


#: what ``evaluate --output`` writes when ``--format`` is not given
TABLE_FORMAT_BY_SUFFIX = {
    ".md": TableFormat.markdown,
    ".markdown": TableFormat.markdown,
    ".csv": TableFormat.csv,
    ".json": TableFormat.json,
}


@app.command()
@friendly
def evaluate(
    data: Annotated[
        Path,
        typer.Argument(
            help="Texts to explain and score: .tsv/.csv/.jsonl with a text column (and a label "
            "column), or one text per line."
        ),
    ],
    model: ModelOption = "",
    dtype: DtypeOption = None,
    method: Annotated[
        list[str] | None,
        typer.Option("--method", help="Attribution method; repeat (default: normxlogit, random)."),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            help="Metric; repeat (default: comp_cd, suff_cd; a regressor: comp_acc, "
            "suff_acc). See `metrics`.",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="Use only the first N texts (N >= 1; default: all).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of random methods and metrics.")] = 0,
    setting: Annotated[
        list[str] | None,
        typer.Option(
            "--protocol",
            help="Protocol setting name=value, e.g. routing=fixed, samples=5; repeatable.",
        ),
    ] = None,
    fmt: Annotated[
        TableFormat | None,
        typer.Option(
            "--format",
            "-f",
            help="markdown, csv or json (default: from the --output suffix: .md, .csv, .json).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the summary table here (.md, .csv, .json)."),
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option(help="Also save every row and the protocol to this .json (EvaluationResult)."),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Do not print the terminal table when writing a file."),
    ] = False,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass.")] = 16,
    max_tokens_per_batch: TokenBudgetOption = None,
    explain_label: Annotated[
        bool,
        typer.Option(
            "--explain-label",
            help="Explain each text's gold label (e.g. a masked LM's gold token) instead of "
            "the prediction.",
        ),
    ] = False,
) -> None:
    """Explain every text with each method and score the explanations (faithfulness, and
    evidence alignment where the file has an evidence or evidence_mask column)."""
    # every output and setting is checked before anything is imported, loaded or run
    _at_least(limit, 1, "--limit", " (leave it out to use every text)")
    _at_least(batch_size, 1, "--batch-size")
    _at_least(max_tokens_per_batch, 1, "--max-tokens-per-batch")
    if output is not None:
        check_output_file(output, "--output")
    chosen = output_format(output, fmt, TABLE_FORMAT_BY_SUFFIX)
    if quiet and output is None and save is None:
        raise InvalidOptionError(
            "--quiet hides the terminal table and nothing else would be written; add "
            "--output FILE or --save FILE.json"
        )
    if save is not None:
        if save.suffix.lower() != ".json":
            raise OutputPathError(
                f"--save {save}: the result is saved as JSON; give the file a .json name"
            )
        check_output_file(save, "--save")
        if output is not None and save.resolve() == output.resolve():
            raise OutputPathError(
                f"--save and --output both name {save}; give them different files"
            )
    check_input_file(data, "data file", "pass a data file (.tsv, .csv, .jsonl, .txt)")
    options = _parse_options(setting or [], "--protocol")

    from ..builtin import DEFAULT_MODEL
    from ..data import read_examples
    from ..evaluation import Protocol, metric_info
    from ..evaluation import evaluate as run_evaluate
    from ..evaluation.evaluate import default_metrics
    from ..evaluation.registry import first_refusal
    from ..explaining.texts import explain_each
    from ..loading import load
    from ..methods import get_method, method_options
    from ..model.precision import resolve_dtype

    methods = method or ["normxlogit", "random"]
    for name in metric or ():
        metric_info(name)  # unknown names fail before anything loads
    attributions = {
        name: get_method(name, **({"seed": seed} if "seed" in method_options(name) else {}))
        for name in methods
    }
    protocol = Protocol(seed=seed).with_options(**options)
    examples = read_examples(data, limit)
    texts = [example.text for example in examples]
    labels = [example.label for example in examples]
    if metric:  # checked before the model loads; the default depends on the model
        _check_metric_inputs(data, examples, metric, explain_label)
    precision = resolve_dtype(dtype) if dtype is not None else None
    loaded = load(model or DEFAULT_MODEL, dtype=precision)
    metrics = list(metric or default_metrics(loaded))
    reason = first_refusal(loaded, metrics)
    if reason is not None:
        raise InvalidInputError(f"--metric {reason}")
    if not metric:
        _check_metric_inputs(data, examples, metrics, explain_label)
    needs_labels = any(metric_info(name).needs_labels for name in metrics)
    needs_evidence = any(metric_info(name).needs_evidence for name in metrics)
    if needs_labels or explain_label:
        _check_gold(loaded, data, examples)
    explanations = {}
    for name, attribution in attributions.items():
        with _progress(len(texts), threshold=1, description=f"explaining: {name}") as advance:
            explanations[name] = explain_each(
                loaded,
                texts,
                labels if explain_label else [None] * len(texts),
                attribution,
                batch_size=batch_size,
                max_tokens_per_batch=max_tokens_per_batch,
                progress=advance,
            )
    evidence = None
    if needs_evidence:
        from ..data.masked_pairs import token_evidence

        evidence = [token_evidence(loaded.tokenizer, e.text, e.evidence) for e in examples]
    with _progress(len(texts), threshold=1, description="evaluating") as advance:
        result = run_evaluate(
            loaded,
            explanations,
            metrics,
            labels=labels if needs_labels else None,
            evidence=evidence,
            protocol=protocol,
            batch_size=batch_size,
            max_tokens_per_batch=max_tokens_per_batch,
            progress=advance,
        )
    summary = result.summary()
    if (fmt is None or output is not None) and not quiet:  # --format alone: that table only
        out.print(summary)
    if save is not None:
        result.save(save)  # atomically, like every output
        err.print(f"wrote {save}")
    content = {
        TableFormat.markdown: summary.to_markdown,
        TableFormat.csv: summary.to_csv,
        TableFormat.json: summary.to_json,
    }[chosen or TableFormat.markdown]().rstrip("\n")
    if output is not None:
        write_atomically(output, content + "\n")
        err.print(f"wrote {output}")
    elif fmt is not None:
        GuardedStdout().write(content + "\n")


@app.command()
@friendly
def metrics() -> None:
    """List the evaluation metrics and how to read them."""
    from ..evaluation import list_metrics, metric_info

    table = Table("name", "description", "better", "range", "curve over", "summary")
    for name in list_metrics():
        info = metric_info(name)
        low, high = info.value_range
        table.add_row(
            name,
            info.description,
            {True: "higher", False: "lower", None: "-"}[info.higher_is_better],
            f"[{low:g}, {high:g}]",
            info.axis or "-",
            info.summary,
        )
    out.print(table)


@app.command()
@friendly
def models() -> None:
    """List the built-in models."""
    from ..builtin import BUILTIN_MODELS, DEFAULT_MODEL

    table = Table("name", "task", "description", "weights from")
    for entry in BUILTIN_MODELS.values():
        name = entry.name + (" (default)" if entry.name == DEFAULT_MODEL else "")
        table.add_row(name, entry.task, entry.description, f"pip: {entry.package}")
    out.print(table)


#: capability flags of a method: the attribute, its letter in the list, its words
METHOD_FLAGS = (
    ("per_label", "L", "a score per label (target)"),
    ("signed", "S", "signed scores (for and against)"),
    ("supports_layers", "Y", "per-layer scores (--layer all)"),
    ("needs_gradients", "G", "uses gradients"),
    ("single_forward", "1", "one forward pass"),
)


@app.command()
@friendly
def methods(
    name: Annotated[
        str | None,
        typer.Argument(help="A method: show its description, capabilities and options."),
    ] = None,
) -> None:
    """List the attribution methods (one line each), or describe one in full."""
    from ..methods import list_methods, method_class

    if name is not None:
        _describe_method(method_class(name))
        return
    names = list_methods()
    width = max(len(method) for method in names)
    for method in names:
        cls = method_class(method)
        flags = "".join(letter if getattr(cls, attr) else "." for attr, letter, _ in METHOD_FLAGS)
        line = f"{method:<{width}}  {flags}  {cls.description}"
        # one line per method on a terminal, cut to fit; whole lines into pipes and files
        if out.is_terminal:
            out.print(line, no_wrap=True, overflow="ellipsis", crop=True)
        else:
            out.print(line, soft_wrap=True)
    legend = ", ".join(f"{letter} {words}" for _, letter, words in METHOD_FLAGS)
    out.print(f"flags: {legend}.")
    out.print("Options and more: normxlogit methods NAME")


def _plain_doc(text: str) -> str:
    """A docstring paragraph without reST roles and literals (``x``, :mod:`~a.b`)."""
    import re

    text = re.sub(r":\w+:`~?(?:[\w.]+\.)?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def _describe_method(cls: Any) -> None:
    """Everything about one method: what it computes, can do and accepts."""
    import dataclasses
    import inspect

    from ..methods.presets import list_presets, preset_options

    out.print(f"{cls.name}: {cls.description}")
    doc = inspect.getdoc(cls) or ""
    if doc:
        out.print()
        out.print(_plain_doc(doc.split("\n\n")[0]))
    out.print()
    for attr, _, words in METHOD_FLAGS:
        out.print(f"  {'yes' if getattr(cls, attr) else 'no ':3}  {words}")
    fields = dataclasses.fields(cls)
    out.print()
    out.print(
        "options (--option NAME=VALUE; Python: keyword arguments):" if fields else "no options"
    )
    for field in fields:
        kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
        out.print(f"  {field.name} = {field.default!r}  ({kind})")
    presets = [p for p, methods in list_presets().items() if cls.name in methods]
    for preset in presets:
        values = ", ".join(f"{k}={v!r}" for k, v in preset_options(preset, cls.name).items())
        out.print(f"preset {preset!r}: {values}")


class _steps:
    """The training progress bar on stderr: steps done, elapsed time and ETA."""

    def __init__(self) -> None:
        self.bar = None
        self.task = None

    def __enter__(self) -> Callable[[int, int], None]:
        return self.update

    def update(self, done: int, total: int) -> None:
        if self.bar is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("training"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("steps, elapsed"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=err,
            )
            self.bar.start()
            self.task = self.bar.add_task("training", total=total)
        self.bar.update(self.task, completed=done)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


@app.command()
@friendly
def train(
    task: Annotated[
        str,
        typer.Argument(
            help="The built-in model to train: minilm-sst2, minilm-stsb, minilm-mnli, "
            "minilm-qnli, smollm2-sst2, smollm2-stsb, smollm2-sst2-prompted, "
            "smollm2-boolq-prompted (sst2 and stsb: the MiniLM ones).",
            metavar="NAME",
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Folder to write the adapter to (default: ./normxlogit-NAME). A folder that "
            "holds other files is refused; a previous adapter there is replaced.",
        ),
    ] = None,
    overwrite_builtin: Annotated[
        bool,
        typer.Option(
            "--overwrite-builtin",
            help="Replace the built-in model's adapter inside the installed package "
            "(the built-in model changes); `make train` does this.",
        ),
    ] = False,
    train_size: Annotated[
        int | None,
        typer.Option(help="Training examples, at least 1 (default: the recipe's, mostly all)."),
    ] = None,
    epochs: Annotated[
        float | None, typer.Option(help="Epochs, above 0 (default: the recipe's).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed (default: the recipe's).")] = None,
    eval_size: Annotated[
        int | None,
        typer.Option(
            help="Score on the first N examples of the evaluation split (default: the "
            "recipe's, mostly all)."
        ),
    ] = None,
) -> None:
    """Train a built-in adapter from ../shared/data (or $NORMXLOGIT_DATA).

    Writes ./normxlogit-NAME (or --output); the built-in model in the installed package is
    replaced only with --overwrite-builtin. Everything is checked before training starts,
    and the adapter is written to a temporary folder and renamed into place when complete.
    """
    import json

    from ..training import check_output, check_recipe
    from ..training import train as run_training

    overrides = {
        key: value
        for key, value in {
            "train_size": train_size,
            "epochs": epochs,
            "seed": seed,
            "eval_size": eval_size,
        }.items()
        if value is not None
    }
    check_recipe(task, overrides)  # refusals before torch is even imported
    target = check_output(task, output, overwrite_builtin)
    with _steps() as progress:
        manifest = run_training(
            task,
            target,
            overrides,
            log=err.print,
            overwrite_builtin=overwrite_builtin,
            progress=progress,
        )
    out.print(json.dumps(manifest["dev_metrics"]))


@app.command()
@friendly
def serve(
    model: Annotated[
        list[Path] | None,
        typer.Option(
            "--model",
            "-m",
            help="A local model folder the page may use besides the built-ins (repeat for "
            "more). The page can use no other path.",
        ),
    ] = None,
    bench: Annotated[
        list[str] | None,
        typer.Option(
            "--bench",
            help="A bench config whose results the page browses: CONFIG (its default store) "
            "or CONFIG=STORE (repeat for more).",
        ),
    ] = None,
    data: Annotated[
        list[Path] | None,
        typer.Option("--data", help="A file of examples to pick from (repeat for more)."),
    ] = None,
    host: Annotated[
        str,
        typer.Option(help="Address to listen on; anyone who reaches it can run the models."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the page in the default browser.")
    ] = False,
) -> None:
    """Explore explanations and their faithfulness in the browser, and browse bench results.

    The page explains a text with several methods side by side (per label, per layer,
    step by step for a decoder's generation), runs the faithfulness curves of those
    explanations, and shows the tables, curves and stored explanations of `normxlogit bench`
    stores. Stop it with Ctrl-C.
    """
    from ..serve import serve as run_page

    if not 0 < port < 65536:
        raise InvalidOptionError(f"--port must be between 1 and 65535, not {port}")
    if host not in ("127.0.0.1", "localhost", "::1"):
        err.print(
            labelled(
                "warning:",
                "yellow",
                f"listening on {host}: anyone who reaches this port can run the models "
                "on this machine",
            )
        )
    run_page(
        model or [],
        host=host,
        port=port,
        bench=bench or [],
        data=data or [],
        open_browser=open_browser,
    )


def _add_bench() -> None:
    """``normxlogit bench ...`` (its module imports nothing heavy either)."""
    from .bench import bench_app

    app.add_typer(bench_app, name="bench")


_add_bench()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
