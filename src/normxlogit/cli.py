"""The ``normxlogit`` command line: ``explain``, ``evaluate``, ``models``, ``methods``,
``metrics``, ``train``."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from enum import Enum
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from .errors import InvalidInputError, NormXLogitError

FormatT = TypeVar("FormatT", bound=Enum)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Explain transformer predictions token by token (NormXLogit and baselines).",
)
out = Console()
err = Console(stderr=True)


class Format(str, Enum):
    terminal = "terminal"
    json = "json"
    html = "html"


#: the model a command runs on (empty: the built-in default)
ModelOption = Annotated[str, typer.Option("--model", "-m", help="Built-in name, folder or hub id.")]

#: what ``explain --output`` writes when ``--format`` is not given
FORMAT_BY_SUFFIX = {".html": Format.html, ".htm": Format.html, ".json": Format.json}


def _friendly(command: Callable) -> Callable:
    """Print user errors and warnings as one line each, never a stack trace."""

    @wraps(command)
    def run(*args, **kwargs):
        def show_warning(message, category, *rest, **more):
            err.print(f"[yellow]warning:[/] {message}", highlight=False)

        previous = warnings.showwarning
        warnings.showwarning = show_warning
        try:
            return command(*args, **kwargs)
        except NormXLogitError as error:
            err.print(f"[red]error:[/] {error}", highlight=False)
            raise typer.Exit(2) from None
        finally:
            warnings.showwarning = previous

    return run


def _read_texts(text: str | None, input_file: Path | None) -> list[str]:
    if text is not None and input_file is not None:
        raise InvalidInputError("give either a TEXT argument or --input, not both")
    if text is not None:
        return [text]
    if input_file is not None and str(input_file) != "-":
        if not input_file.is_file():
            raise InvalidInputError(f"input file {input_file} does not exist")
        lines = input_file.read_text(encoding="utf-8").splitlines()
    elif not sys.stdin.isatty() or input_file is not None:
        lines = sys.stdin.read().splitlines()
    else:
        raise InvalidInputError('nothing to explain: pass "TEXT", --input FILE, or pipe texts')
    texts = [line for line in lines if line.strip()]
    if not texts:
        raise InvalidInputError("the input holds no non-empty lines; put one text per line")
    return texts


def _parse_options(pairs: list[str], flag: str = "--option") -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise InvalidInputError(f"{flag} {pair!r} must look like name=value")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


def _target(labels: list[str], all_labels: bool) -> Any:
    if all_labels and labels:
        raise InvalidInputError("use --label or --all-labels, not both")
    if all_labels:
        return "all"
    if not labels:
        return None
    parsed = [int(x) if x.lstrip("-").isdigit() else x for x in labels]
    return parsed[0] if len(parsed) == 1 else parsed


def _chosen_format(
    chosen: FormatT | None, output: Path | None, by_suffix: dict[str, FormatT], default: FormatT
) -> FormatT:
    """``--format`` if given, else the one ``--output``'s suffix names, else ``default``."""
    if chosen is not None:
        return chosen
    suffix = output.suffix.lower() if output is not None else ""
    return by_suffix.get(suffix, default)


@app.command()
@_friendly
def explain(
    text: Annotated[str | None, typer.Argument(help="Text to explain (or use --input).")] = None,
    model: ModelOption = "",
    method: Annotated[
        str, typer.Option(help="Attribution method (see `normxlogit methods`).")
    ] = "normxlogit",
    label: Annotated[
        list[str] | None,
        typer.Option("--label", "-l", help="Label or token to explain; repeat for several."),
    ] = None,
    all_labels: Annotated[bool, typer.Option("--all-labels", help="Score every label.")] = False,
    layer: Annotated[
        str | None, typer.Option(help="Layer index (0 = embeddings) or 'all'.")
    ] = None,
    input_file: Annotated[
        Path | None,
        typer.Option("--input", "-i", help="File with one text per line ('-' for stdin)."),
    ] = None,
    fmt: Annotated[
        Format | None,
        typer.Option(
            "--format", "-f", help="terminal, json or html (default: from --output, else terminal)."
        ),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the result to this file.")
    ] = None,
    aggregate: Annotated[
        str | None, typer.Option(help="Merge subwords into words: sum, mean, max, absmax.")
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass.")] = 16,
    option: Annotated[
        list[str] | None, typer.Option("--option", help="Method option name=value; repeatable.")
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Do not print the terminal view when writing a file."),
    ] = False,
) -> None:
    """Explain the model's prediction for TEXT (or each line of --input) token by token."""
    from . import load
    from .builtin import DEFAULT_MODEL
    from .explain import explain as run_explain
    from .explanation import write_atomically
    from .inputs import check_texts
    from .methods import get_method
    from .render.html import render_html

    texts, _ = check_texts(_read_texts(text, input_file))
    target = _target(label or [], all_labels)
    attribution = get_method(method, **_parse_options(option or []))
    chosen = _chosen_format(fmt, output, FORMAT_BY_SUFFIX, Format.terminal)
    loaded = load(model or DEFAULT_MODEL)  # after the cheap checks: loading takes seconds
    with _progress(len(texts)) as advance:
        explanations = run_explain(
            loaded,
            texts,
            method=attribution,
            target=target,
            layer=layer,
            batch_size=batch_size,
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
        content = json.dumps(data[0] if len(data) == 1 else data, indent=2)
    else:
        content = render_html(explanations)
    if output is None:
        sys.stdout.write(content + ("\n" if not content.endswith("\n") else ""))
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
        from rich.progress import Progress

        self.bar = Progress(console=err, transient=True)
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


#: what ``evaluate --output`` writes when ``--format`` is not given
TABLE_FORMAT_BY_SUFFIX = {".csv": TableFormat.csv, ".json": TableFormat.json}


@app.command()
@_friendly
def evaluate(
    data: Annotated[
        Path,
        typer.Argument(
            help="Texts to explain and score: .tsv/.csv/.jsonl with a text column (and a label "
            "column), or one text per line."
        ),
    ],
    model: ModelOption = "",
    method: Annotated[
        list[str] | None,
        typer.Option("--method", help="Attribution method; repeat (default: normxlogit, random)."),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", help="Metric; repeat (default: comp_cd, suff_cd). See `metrics`."),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Use only the first N texts.")] = None,
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
        typer.Option("--format", "-f", help="markdown, csv or json (default: from --output)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the summary table here.")
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option(help="Also save every row and the protocol as JSON (EvaluationResult)."),
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass.")] = 16,
) -> None:
    """Explain every text with each method and score the explanations (faithfulness)."""
    from . import load
    from .builtin import DEFAULT_MODEL
    from .data import read_examples
    from .evaluation import Protocol, metric_info
    from .evaluation import evaluate as run_evaluate
    from .explain import explain as run_explain
    from .explanation import write_atomically
    from .methods import get_method, method_options

    methods = method or ["normxlogit", "random"]
    metrics = metric or ["comp_cd", "suff_cd"]
    for name in metrics:
        metric_info(name)  # unknown names fail before anything loads
    attributions = {
        name: get_method(name, **({"seed": seed} if "seed" in method_options(name) else {}))
        for name in methods
    }
    options = _parse_options(setting or [], "--protocol")
    protocol = Protocol(seed=seed).with_options(**options)
    examples = read_examples(data, limit)
    texts = [example.text for example in examples]
    labels = [example.label for example in examples]
    needs_labels = any(metric_info(name).needs_labels for name in metrics)
    if needs_labels and any(label is None for label in labels):
        raise InvalidInputError(f"{data} has no label column, which {', '.join(metrics)} need")
    loaded = load(model or DEFAULT_MODEL)
    explanations = {}
    for name, attribution in attributions.items():
        with _progress(len(texts), threshold=1, description=f"explaining: {name}") as advance:
            explanations[name] = run_explain(
                loaded, texts, method=attribution, batch_size=batch_size, progress=advance
            )
    with _progress(len(texts), threshold=1, description="evaluating") as advance:
        result = run_evaluate(
            loaded,
            explanations,
            metrics,
            labels=labels if needs_labels else None,
            protocol=protocol,
            batch_size=batch_size,
            progress=advance,
        )
    summary = result.summary()
    if fmt is None or output is not None:  # --format alone: only that table, on stdout
        out.print(summary)
    if save is not None:
        result.save(save)
        err.print(f"wrote {save}")
    chosen = _chosen_format(fmt, output, TABLE_FORMAT_BY_SUFFIX, TableFormat.markdown)
    content = {
        TableFormat.markdown: summary.to_markdown,
        TableFormat.csv: summary.to_csv,
        TableFormat.json: summary.to_json,
    }[chosen]().rstrip("\n")
    if output is not None:
        write_atomically(output, content + "\n")
        err.print(f"wrote {output}")
    elif fmt is not None:
        sys.stdout.write(content + "\n")


@app.command()
@_friendly
def metrics() -> None:
    """List the evaluation metrics and how to read them."""
    from .evaluation import list_metrics, metric_info

    table = Table("name", "description", "better", "range", "curve over", "summary")
    for name in list_metrics():
        info = metric_info(name)
        low, high = info.value_range
        table.add_row(
            name,
            info.description,
            "higher" if info.higher_is_better else "lower",
            f"[{low:g}, {high:g}]",
            info.axis or "-",
            info.summary,
        )
    out.print(table)


@app.command()
@_friendly
def models() -> None:
    """List the built-in models."""
    from .builtin import BUILTIN_MODELS, DEFAULT_MODEL

    table = Table("name", "task", "description", "weights from")
    for entry in BUILTIN_MODELS.values():
        name = entry.name + (" (default)" if entry.name == DEFAULT_MODEL else "")
        table.add_row(name, entry.task, entry.description, f"pip: {entry.package}")
    out.print(table)


@app.command()
@_friendly
def methods() -> None:
    """List the attribution methods and what each can do."""
    import dataclasses

    from .methods import list_methods, method_class

    table = Table(
        "name",
        "description",
        "per label",
        "signed",
        "per layer",
        "gradients",
        "one pass",
        "options",
    )
    for name in list_methods():
        cls = method_class(name)
        opts = ", ".join(f"{f.name}={f.default!r}" for f in dataclasses.fields(cls))
        flags = [
            cls.per_label,
            cls.signed,
            cls.supports_layers,
            cls.needs_gradients,
            cls.single_forward,
        ]
        table.add_row(name, cls.description, *("yes" if f else "no" for f in flags), opts)
    out.print(table)


@app.command()
@_friendly
def train(
    task: Annotated[str, typer.Argument(help="sst2 (minilm-sst2) or stsb (minilm-stsb).")],
    output: Annotated[
        Path | None, typer.Option(help="Folder to write (default: the package's own).")
    ] = None,
    train_size: Annotated[
        int | None, typer.Option(help="Training examples (default: all).")
    ] = None,
    epochs: Annotated[float | None, typer.Option(help="Epochs (default: the recipe's).")] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed (default: the recipe's).")] = None,
) -> None:
    """Train a built-in adapter from ../shared/data (or $NORMXLOGIT_DATA)."""
    from .training import RECIPES
    from .training import train as run_training

    if task not in RECIPES:
        raise InvalidInputError(f"unknown task {task!r}; choose one of: {', '.join(RECIPES)}")
    overrides = {
        key: value
        for key, value in {"train_size": train_size, "epochs": epochs, "seed": seed}.items()
        if value is not None
    }
    manifest = run_training(task, output, overrides, log=err.print)
    out.print(json.dumps(manifest["dev_metrics"]))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
