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
from ..common.outputs import (
    check_output_file,
    output_format,
    quoted_name,
    refuse_input_as_output,
    refuse_suffix_only,
    same_file,
    suffix_tail_hint,
    write_atomically,
)
from ..common.progress import TerminalBar
from .app import (
    DtypeOption,
    MethodOptionsOption,
    MethodsOption,
    ModelOption,
    TokenBudgetOption,
    app,
    at_least,
    options_by_method,
    out,
    parse_options,
)
from .helpers import (
    err,
    friendly,
    once_each,
    refuse_missing_tagger,
    refuse_model_file,
    refuse_reagent_model,
    warnings_named,
)


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


def _default_metrics(loaded: Any, data: Path, examples: list, segments: str | None) -> list[str]:
    """The model's default metrics, and the evidence metrics where every row of the file
    has evidence (the help promises evidence alignment there), or the segment metrics
    where every row has evidence segments and ``--segments data`` explains its segments.
    Otherwise a warning says the evidence is not scored and what would score it, rather
    than reading the column and dropping it unsaid."""
    from ..evaluation.evaluate import EVIDENCE_METRICS, default_metrics

    defaults = list(default_metrics(loaded))
    chosen = defaults + _added_for_evidence(loaded, data, examples, "evidence", EVIDENCE_METRICS)
    if any(e.evidence_segments is not None for e in examples):
        chosen += _added_for_segment_evidence(loaded, data, examples, segments, chosen)
    return chosen


def _added_for_evidence(
    loaded: Any, data: Path, examples: list, column: str, readers: tuple[str, ...]
) -> list[str]:
    """``readers`` where every row has the ``column`` and the model takes them; else, where
    some row has it, a warning saying why it is not scored and what would score it: the
    column on every row, which adds ``readers`` to the defaults (``--metric`` would replace
    them, dropping the default metrics)."""
    from ..evaluation.registry import first_refusal

    given = [getattr(e, column) for e in examples if getattr(e, column) is not None]
    if not given:
        return []
    lacking = next((e.where for e in examples if getattr(e, column) is None), None)
    reason = first_refusal(loaded, list(readers))
    if lacking is None and reason is None:
        return list(readers)
    named = _file_column(examples, column)
    if lacking is None:  # the model takes none of them: no flag would score it
        _warn_unscored(data, named, reason, f"no metric scores it for {_model_named(loaded)}")
        return []
    fix = (
        f"fill it on every row to score it ({', '.join(readers)} are then added to the "
        "default metrics)"
    )
    _warn_unscored(data, named, f"{lacking} has none", fix)
    return []


def _file_column(examples: list, column: str) -> str:
    """The file's own name for the ``column`` its examples hold: an ``evidence`` read from
    an ``evidence_mask`` column is named so (both, where rows use each)."""
    if column != "evidence":
        return column
    used = dict.fromkeys(e.evidence_column for e in examples if e.evidence_column is not None)
    return " / ".join(used) or column


def _model_named(loaded: Any) -> str:
    return getattr(loaded, "name", None) or "this model"


def _added_for_segment_evidence(
    loaded: Any, data: Path, examples: list, segments: str | None, chosen: list[str]
) -> list[str]:
    """The segment metrics for a file's evidence_segments column, where ``--segments data``
    explains the segments they number and no token metric is scored (one run scores one
    kind of evidence); else a warning says why not and what would score it."""
    from ..evaluation.evaluate import SEGMENT_EVIDENCE_METRICS, reads_evidence

    flags = _metric_flags(SEGMENT_EVIDENCE_METRICS)
    if segments != "data":
        why = (
            "no --segments is given, and it numbers the file's segments column"
            if segments is None
            else "it numbers the file's segments column, not the sentences --segments "
            "sentences explains"
        )
        readers = ", ".join(SEGMENT_EVIDENCE_METRICS)
        _warn_unscored(
            data, "evidence_segments", why, f"pass --segments data to score it ({readers})"
        )
        return []
    if any(reads_evidence(m, "tokens") for m in chosen):
        _warn_unscored(
            data, "evidence_segments", f"the {_file_column(examples, 'evidence')} column's "
            "token metrics are scored, and one run scores one kind of evidence",
            f"score it in a run of its own with {flags}",
        )  # fmt: skip
        return []
    return _added_for_evidence(
        loaded, data, examples, "evidence_segments", SEGMENT_EVIDENCE_METRICS
    )


def _metric_flags(metrics: tuple[str, ...]) -> str:
    return " ".join(f"--metric {m}" for m in metrics)


def _warn_unscored(data: Path, column: str, why: str, fix: str) -> None:
    warnings.warn(f"{data}: the {column} column is not scored ({why}); {fix}", stacklevel=3)


def _check_metric_inputs(data: Path, examples: list, metrics: list[str], explain_label: bool):
    """Refuse a data file that lacks the labels or evidence the metrics need."""
    from ..workflows import metric_needs

    needs = metric_needs(metrics)
    if (needs.labels or explain_label) and any(e.label is None for e in examples):
        wanted = ", ".join(metrics) if needs.labels else "--explain-label"
        raise InvalidInputError(f"{data} has no label column, which {wanted} need")
    if needs.segment_evidence:
        lacking = next((e.where for e in examples if e.evidence_segments is None), None)
        if lacking is not None:
            raise InvalidInputError(
                f"{data}, {lacking}: no evidence segments, which "
                f"{', '.join(needs.segment_evidence)} need; give every row a segments column "
                '(a JSON list of its parts) and evidence_segments (their indices, e.g. "0 2"), '
                "and pass --segments data"
            )
    if any(_reads_word_evidence(m) for m in metrics):
        lacking = next((e.where for e in examples if e.evidence is None), None)
        if lacking is not None:
            raise InvalidInputError(
                f"{data}, {lacking}: no evidence, which {', '.join(metrics)} need; give "
                'every row an evidence column (word indices, e.g. "0 3") or evidence_mask '
                "(one 0/1 per whitespace-separated word); an empty cell is no evidence, so "
                "write [] for a text whose rationale is empty (left out, or scored with "
                "--protocol empty_rationale=score)"
            )


def _reads_word_evidence(metric: str) -> bool:
    """Whether ``metric`` reads human evidence as words (not segment indices)."""
    from ..evaluation import metric_info

    info = metric_info(metric)
    return info.needs_evidence and info.evidence != "segments"


def _segment_spec(
    segments: str | None,
    segment_reduce: str | None,
    data: Path,
    examples: list,
    metrics: list[str],
    methods: dict[str, Any],
    unit: str,
) -> Any:
    """``--segments`` as explain takes it (``"sentences"``, or each row's own), refused
    before the model loads where the metrics, methods or protocol need segments and
    none are given, or the file lacks them."""
    from ..evaluation.registry import metric_class
    from ..methods.segment_methods import SegmentMethod

    if segments not in (None, "sentences", "data"):
        raise InvalidOptionError(
            f"--segments {segments!r}: give 'sentences' (each text's sentences) or 'data' "
            "(the file's segments column)"
        )
    from ..explanations.segments import SEGMENT_REDUCTIONS

    if segment_reduce is not None and segment_reduce not in SEGMENT_REDUCTIONS:
        raise InvalidOptionError(
            f"--segment-reduce {segment_reduce!r} is not one of: {', '.join(SEGMENT_REDUCTIONS)}"
        )
    if segment_reduce is not None and segments is None:
        raise InvalidOptionError(
            "--segment-reduce reduces token scores over segments; add --segments"
        )
    if segments is None:
        wanted = [m for m in metrics if metric_class(m).needs_segments]
        wanted += [name for name, m in methods.items() if isinstance(m, SegmentMethod)]
        if unit == "segment":
            wanted.append("--protocol unit=segment")
        if wanted:
            raise InvalidOptionError(
                f"{wanted[0]} needs segments; add --segments sentences (or --segments data "
                "for the file's segments column)"
            )
        return None
    if segments == "sentences":
        by_evidence = [m for m in metrics if metric_class(m).info.evidence == "segments"]
        if by_evidence:  # evidence segments number the file's segments, not its sentences
            raise InvalidOptionError(
                f"{by_evidence[0]} reads each row's evidence_segments, which number the "
                "file's segments column, not the sentences; pass --segments data"
            )
        return "sentences"
    lacking = next((e.where for e in examples if e.segments is None), None)
    if lacking is not None:
        raise InvalidInputError(
            f"{data}, {lacking}: no segments column, which --segments data reads; give every "
            "row one (a JSON list of the text's parts), or pass --segments sentences"
        )
    return [e.segment_spec for e in examples]  # a pair's: spans of its passage


#: what ``evaluate --output`` writes when ``--format`` is not given
TABLE_FORMAT_BY_SUFFIX = {
    ".md": TableFormat.markdown,
    ".markdown": TableFormat.markdown,
    ".csv": TableFormat.csv,
    ".json": TableFormat.json,
}


@app.command(
    cls=once_each(
        model="evaluate each model in its own run (a bench config compares models)",
        seed="run once per seed (a bench config takes seeds = [...])",
        segment_reduce="run once per reduction",
    )
)
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
    option: MethodOptionsOption = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            help="Metric; repeat (default: comp_cd, suff_cd; a regressor: comp_acc, "
            "suff_acc; and token_f1, token_iou, auprc where every row has evidence). See "
            "`metrics`.",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="Use only the first N texts (N >= 1; default: all).")
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            help="Seed of random methods and metrics (default 0); --protocol seed=N sets "
            "the same seed."
        ),
    ] = None,
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
    segments: Annotated[
        str | None,
        typer.Option(
            "--segments",
            help="Score segments too: 'sentences', or 'data' (the file's segments column, a "
            "JSON list of each text's parts); segment methods and metrics and --protocol "
            "unit=segment need it.",
        ),
    ] = None,
    segment_reduce: Annotated[
        str | None,
        typer.Option(
            "--segment-reduce",
            help="How a token method's scores become a segment's: sum (default), mean, max, "
            "absmax.",
        ),
    ] = None,
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
    evidence alignment where the file has an evidence or evidence_mask column: token_f1,
    token_iou and auprc are added to the default metrics)."""
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
        refuse_suffix_only(save, "--save", (".json",))
        if save.suffix.lower() != ".json":
            raise OutputPathError(
                f"--save {str(save)!r}: the result is saved as JSON; give the file a .json "
                f"name{suffix_tail_hint(save, ('.json',))}"
            )
        check_output_file(save, "--save")
        if output is not None and same_file(save, output):
            raise OutputPathError(
                f"--save and --output both name {save}; give them different files"
            )
    for path, flag, fix in (
        (output, "--output", "write the table to another file"),
        (save, "--save", "save the result to another file"),
    ):
        if path is not None:  # writing it would replace the texts being evaluated
            refuse_input_as_output(path, data, flag, "the data file", fix)
            refuse_model_file(path, model, flag)
    check_input_file(data, "data file", "pass a data file (.tsv, .csv, .jsonl, .txt)")
    options = parse_options(setting or [], "--protocol")

    from ..builtin import DEFAULT_MODEL
    from ..common.numbering import lines_of, texts_named
    from ..data import read_examples
    from ..evaluation import Protocol, metric_info
    from ..evaluation.registry import first_refusal
    from ..loading import load
    from ..methods import method_class
    from ..model.precision import resolve_dtype
    from ..workflows import (
        evaluate_texts,
        explain_texts,
        methods_by_name,
        metric_needs,
        refuse_regressor_label,
    )

    for name in metric or ():
        metric_info(name)  # unknown names fail before anything loads
    protocol = Protocol(seed=0 if seed is None else seed).with_options(**options)
    if seed is not None and protocol.seed != seed:  # one seed, for methods and metrics
        raise InvalidOptionError(
            f"--seed {seed} and --protocol seed={protocol.seed} disagree; give the seed "
            "once (one seed seeds the random methods and metrics alike)"
        )
    names = method or ["normxlogit", "random"]
    for name in names:  # an unknown --method before a METHOD. prefix is checked against it
        method_class(name)
    options_of = options_by_method(option or [], names)
    attributions = {
        name: methods_by_name([name], protocol.seed, options_of[name])[name] for name in names
    }
    refuse_missing_tagger(attributions.values(), None, "several")
    examples = read_examples(data, limit)
    texts = [example.text for example in examples]
    labels = [example.label for example in examples]
    if metric:  # checked before the model loads; the default depends on the model
        _check_metric_inputs(data, examples, metric, explain_label)
    # the default metrics read no segments: every need of them is known before loading
    parts = _segment_spec(
        segments, segment_reduce, data, examples, list(metric or ()), attributions, protocol.unit
    )
    with (
        texts_named(lines_of(str(data), [example.line for example in examples])),
        warnings_named("evaluate"),  # Protocol(ratios=...) is --protocol ratios=...
    ):
        precision = resolve_dtype(dtype) if dtype is not None else None
        loaded = load(model or DEFAULT_MODEL, dtype=precision)
        refuse_missing_tagger(attributions.values(), loaded.tokenizer, "several")
        refuse_reagent_model(attributions.values(), loaded, "several", option or [])
        refuse_regressor_label(loaded, explain_label, "--explain-label")
        metrics = list(metric or _default_metrics(loaded, data, examples, segments))
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
            segments=parts,
            segment_reduce=segment_reduce or "sum",
        )
        with TerminalBar("evaluating", len(texts), threshold=1, console=err) as advance:
            result = evaluate_texts(
                loaded,
                explained.explanations,
                metrics,
                labels=labels,
                evidence_words=[example.evidence for example in examples],
                evidence_segments=[example.evidence_segments for example in examples]
                if metric_needs(metrics).segment_evidence
                else None,
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
        err.print(f"wrote {quoted_name(save)}")
    content = {
        TableFormat.markdown: summary.to_markdown,
        TableFormat.csv: summary.to_csv,
        TableFormat.json: summary.to_json,
    }[chosen or TableFormat.markdown]().rstrip("\n")
    if output is not None:
        write_atomically(output, content + "\n")
        err.print(f"wrote {quoted_name(output)}")
    elif fmt is not None:
        GuardedStdout().write(content + "\n")
