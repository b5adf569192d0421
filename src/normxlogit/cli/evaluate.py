"""``normxlogit evaluate``: explain a data file with each method, then score the explanations."""

from __future__ import annotations

import warnings
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ..common.console import GuardedStdout
from ..common.errors import InvalidInputError, InvalidOptionError, OutputPathError
from ..common.input_paths import check_input_file
from ..common.outputs import check_output_file, output_format, write_atomically
from ..common.progress import TerminalBar
from .app import (
    DtypeOption,
    MethodsOption,
    ModelOption,
    TokenBudgetOption,
    app,
    at_least,
    out,
    parse_options,
)
from .helpers import err, friendly


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
    from ..workflows import metric_needs

    needs = metric_needs(metrics)
    if (needs.labels or explain_label) and any(e.label is None for e in examples):
        wanted = ", ".join(metrics) if needs.labels else "--explain-label"
        raise InvalidInputError(f"{data} has no label column, which {wanted} need")
    if needs.evidence:
        lacking = next((e.where for e in examples if e.evidence is None), None)
        if lacking is not None:
            raise InvalidInputError(
                f"{data}, {lacking}: no evidence, which {', '.join(metrics)} need; give "
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
    method: MethodsOption = None,
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
    at_least(limit, 1, "--limit", " (leave it out to use every text)")
    at_least(batch_size, 1, "--batch-size")
    at_least(max_tokens_per_batch, 1, "--max-tokens-per-batch")
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
    options = parse_options(setting or [], "--protocol")

    from ..builtin import DEFAULT_MODEL
    from ..common.numbering import lines_of, texts_named
    from ..data import read_examples
    from ..evaluation import Protocol, metric_info
    from ..evaluation.evaluate import default_metrics
    from ..evaluation.registry import first_refusal
    from ..loading import load
    from ..model.precision import resolve_dtype
    from ..workflows import evaluate_texts, explain_texts, methods_by_name, metric_needs

    for name in metric or ():
        metric_info(name)  # unknown names fail before anything loads
    attributions = methods_by_name(method or ["normxlogit", "random"], seed)
    protocol = Protocol(seed=seed).with_options(**options)
    examples = read_examples(data, limit)
    texts = [example.text for example in examples]
    labels = [example.label for example in examples]
    if metric:  # checked before the model loads; the default depends on the model
        _check_metric_inputs(data, examples, metric, explain_label)
    with texts_named(lines_of(str(data), [example.line for example in examples])):
        precision = resolve_dtype(dtype) if dtype is not None else None
        loaded = load(model or DEFAULT_MODEL, dtype=precision)
        metrics = list(metric or default_metrics(loaded))
        reason = first_refusal(loaded, metrics)
        if reason is not None:
            raise InvalidInputError(f"--metric {reason}")
        if not metric:
            _check_metric_inputs(data, examples, metrics, explain_label)
        if metric_needs(metrics).labels or explain_label:
            _check_gold(loaded, data, examples)
        explained = explain_texts(
            loaded,
            texts,
            attributions,
            labels if explain_label else None,
            batch_size=batch_size,
            max_tokens_per_batch=max_tokens_per_batch,
            progress=lambda name, count: TerminalBar(
                f"explaining: {name}", count, threshold=1, console=err
            ),
        )
        with TerminalBar("evaluating", len(texts), threshold=1, console=err) as advance:
            result = evaluate_texts(
                loaded,
                explained.explanations,
                metrics,
                labels=labels,
                evidence_words=[example.evidence for example in examples],
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
