"""``normxlogit bench``: run a grid, see what is done, export values, render the report.

``normxlogit bench CONFIG`` runs (``run`` is the default sub-command), and ``status``,
``export`` and ``report`` read the store. Arguments are checked before anything heavy
is imported or any model loaded.
"""

from __future__ import annotations

import math
import shlex
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from ..bench.spec import default_store
from ..common.console import GuardedStdout, labelled, plain_console
from ..common.errors import (
    InvalidFileError,
    InvalidInputError,
    NormXLogitError,
    OutputPathError,
    UnknownMethodError,
    UnknownMetricError,
)
from ..common.outputs import (
    check_output_file,
    check_output_folder,
    output_format,
    refuse_input_as_output,
    refuse_inputs_in_folder,
    refuse_suffix_only,
    write_atomically,
)
from .helpers import friendly, once_each, warnings_named

if TYPE_CHECKING:
    from ..bench.runner import BenchReport

out = plain_console()
err = plain_console(stderr=True)


class DefaultToRun(TyperGroup):
    """``bench CONFIG`` means ``bench run CONFIG``: a first word that is no sub-command
    (a config path) runs it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            if (
                message := unknown_command(args, list(self.commands), ctx.command_path)
            ) is not None:
                err.print(labelled("error:", "red", message), soft_wrap=True)
                raise typer.Exit(2)
            args = ["run", *args]
        return super().parse_args(ctx, args)


#: words taken for a bench command that name a script of the repository instead
SCRIPTS = {"estimate", "slot", "pack"}


def unknown_command(args: list[str], commands: list[str], command_path: str) -> str | None:
    """Why ``args[0]`` reads as a mistyped sub-command, not as the config ``bench CONFIG``
    runs, or None. Read as a config, ``bench statuss g.toml`` would blame g.toml as an
    extra argument of ``bench run``: a word that is no file and has no suffix is a
    command the user meant (a config file has one: .toml)."""
    import difflib

    word = args[0]
    if word.startswith("-") or Path(word).suffix or "/" in word or Path(word).exists():
        return None  # a config path: run reads it, or says it does not exist
    known = ", ".join(commands)
    if word in SCRIPTS:
        return (
            f"no bench command {word!r}, and no file {word} to run as a config: {word} is the "
            f"script scripts/gpu/{word} (python3 scripts/gpu/{word}, from the repository "
            f"root); the bench commands are {known}"
        )
    close = difflib.get_close_matches(word, commands, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    return (
        f"no bench command {word!r}, and no file {word} to run as a config; {hint}the "
        f"commands are {known}, and `{command_path} CONFIG` runs a config file (.toml)"
    )


bench_app = typer.Typer(
    cls=DefaultToRun,
    no_args_is_help=True,
    help="Run a grid of models x datasets x methods x metrics into a resumable store.",
)

ConfigArgument = Annotated[Path, typer.Argument(help="The bench config (.toml).")]
StoreOption = Annotated[
    Path | None,
    typer.Option("--store", help="The results store (default: CONFIG with .sqlite)."),
]
LimitOption = Annotated[
    int | None,
    typer.Option(
        help="Only the first N instances of every dataset (quick runs); an experiment's "
        "own lower `limit` stays."
    ),
]


class ExportFormat(str, Enum):
    csv = "csv"
    parquet = "parquet"


#: what ``bench export --output`` writes when ``--format`` is not given
EXPORT_SUFFIXES = {".csv": ExportFormat.csv, ".parquet": ExportFormat.parquet}


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise InvalidInputError(f"--limit {limit}: must be at least 1 (leave it out for all)")


def _note_limits(
    config, config_path: Path, limit: int | None, verb: str, *, generation: bool = False
) -> None:
    """A note per experiment whose own ``limit`` is below ``--limit`` (which only caps)."""
    from ..bench.runner import limits_below

    for name, own in limits_below(config, limit, generation=generation):
        err.print(
            labelled(
                "note:",
                "yellow",
                f"--limit {limit} is above limit = {own} of experiment {name!r} in "
                f"{config_path}, which stays: {own} instances; raise that limit to {verb} more",
            ),
            soft_wrap=True,
        )


def _config(path: Path):
    from ..bench.config import load_config  # imports the method registry (torch)

    try:
        with warnings_named("bench"):  # [protocol] settings no metric reads, in its keys
            return load_config(path)
    except (UnknownMethodError, UnknownMetricError) as error:
        what = "method" if isinstance(error, UnknownMethodError) else "metric"
        raise type(error)(
            f"{error}. The command line knows the built-in {what}s only (normxlogit {what}s "
            f"lists them); a {what} registered from Python (register_{what}) exists only in "
            "the Python process that registers it: register it, then run the config from "
            "Python with normxlogit.bench.run_bench(config, store) (its report with "
            "normxlogit.bench.report.write_report(config, store, folder))"
        ) from None


@bench_app.command("run", cls=once_each())
@friendly
def run(
    config_path: ConfigArgument,
    store: StoreOption = None,
    limit: LimitOption = None,
    engine: Annotated[str, typer.Option(help="local (default) or ray.")] = "local",
    address: Annotated[
        str | None,
        typer.Option(help="Ray cluster address (default: start a local one)."),
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Ray actors (default: one per CPU or GPU).")
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(help="Run the models there (cuda, cuda:1, cpu...; local engine)."),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(
            help="Texts per forward pass, for every experiment (default: the config's). "
            "Speed and memory only: stored values do not depend on it."
        ),
    ] = None,
    rows_per_forward: Annotated[
        int | None,
        typer.Option(
            help="A cap on the perturbed copies per forward pass while evaluating "
            "(default: the config's, or none). Speed and memory only."
        ),
    ] = None,
    tokens_per_forward: Annotated[
        int | None,
        typer.Option(
            help="Tokens per forward pass while evaluating: perturbed copies of texts of "
            "similar length packed, shortest first (default: the config's, or 4,096 on a "
            "CPU and 65,536 on a GPU). Speed and memory only."
        ),
    ] = None,
    max_tokens_per_batch: Annotated[
        int | None,
        typer.Option(
            help="Memory budget: at most this many tokens per forward pass, explaining and "
            "evaluating (texts or perturbed copies x the longest). Speed and memory only."
        ),
    ] = None,
    execution_option: Annotated[
        list[str] | None,
        typer.Option(
            "--execution-option",
            metavar="[METHOD.]OPTION=VALUE",
            help="An execution option (IG's internal_batch_size or tokens_per_pass, value "
            "zeroing's or LIME's batch_size) for every method that has it, or for METHOD "
            "only; repeatable. Speed and memory only: the run fills the config's cells.",
        ),
    ] = None,
    experiment: Annotated[
        list[str] | None,
        typer.Option(
            "--experiment",
            help="Only this experiment (its name in `bench status`); repeat for several.",
        ),
    ] = None,
    method: Annotated[
        list[str] | None,
        typer.Option(
            "--method",
            help="Only this method (its label in the tables); repeat for several.",
        ),
    ] = None,
    threads: Annotated[
        int | None,
        typer.Option(
            help="CPU threads per model (local engine; Ray: per actor). Default: one per "
            "core; two runs on one machine should split the cores, or both crawl."
        ),
    ] = None,
    dtype: Annotated[
        str | None,
        typer.Option(
            help="Run every model in float32, float64, bfloat16 or float16 (default: the config's, "
            "else as loaded). Stored under the model's name with @dtype: new cells."
        ),
    ] = None,
    deadline: Annotated[
        str | None,
        typer.Option(
            help="Stop within this many seconds: start no unit predicted to end later (the "
            "rest waits for the next run), and go chunk by chunk across methods so that "
            "every method has the same instances done. Local engine."
        ),
    ] = None,
) -> None:
    """Compute what the store lacks for CONFIG; killed, the same command resumes."""
    _check_limit(limit)
    if deadline is not None:  # ASCII digits, finite: float() takes "1_000", "٣٠" and inf
        from ..common.options import number_text

        try:
            seconds = number_text(deadline)
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and seconds > 0):
            raise InvalidInputError(
                f"--deadline {deadline}: must be a finite number of seconds above 0, "
                "written in ASCII digits (e.g. 3600)"
            )
        deadline = seconds  # type: ignore[assignment]
    if engine not in ("local", "ray"):
        raise InvalidInputError(f"unknown engine {engine!r}; choose local (default) or ray")
    if engine == "local" and (address is not None or workers is not None):
        raise InvalidInputError("--address and --workers are for --engine ray")
    if engine == "ray" and deadline is not None:
        raise InvalidInputError(
            "--deadline is for the local engine (Ray takes units ahead of their turn)"
        )
    if engine == "ray" and device is not None:
        raise InvalidInputError(
            "--device is for the local engine; Ray actors take a GPU when the cluster has one"
        )
    counts = {
        "--workers": workers,
        "--threads": threads,
        "--batch-size": batch_size,
        "--rows-per-forward": rows_per_forward,
        "--tokens-per-forward": tokens_per_forward,
        "--max-tokens-per-batch": max_tokens_per_batch,
    }
    for flag, count in counts.items():
        if count is not None and count < 1:
            raise InvalidInputError(f"{flag} {count}: must be at least 1")
    executed = _execution_settings(execution_option or [])
    if device is not None:
        _check_device(device)
    if dtype is not None:
        from ..model.precision import dtype_name

        dtype = dtype_name(dtype)
    if not config_path.is_file():
        _config(config_path)  # the reader says what is wrong with the path
    store_path = store or _default_store(config_path, writes=True)
    _check_store_path(store_path)
    _check_writable_store(store_path)
    config = _config(config_path)
    config = config.with_sizes(
        batch_size, rows_per_forward, max_tokens_per_batch, tokens_per_forward
    )
    config = config.with_execution(executed)
    _refuse_empty_names(config, experiment, method)
    if experiment:
        config = config.only(experiment)
    if method:
        config = config.only_methods(method)
    # before --dtype renames them: the note points into the config, by the config's names
    _note_limits(config, config_path, limit, "run")
    config = config.with_dtype(dtype)  # after --experiment: it names the config's names

    from ..bench.engines import get_engine
    from ..bench.progress import BenchProgress
    from ..bench.runner import run_bench
    from ..bench.store import opened_store

    options = (
        {"device": device, "threads": threads}
        if engine == "local"
        else {"address": address, "workers": workers, "cpus_per_worker": threads}
    )
    from ..bench.runner import Deadline

    chosen = get_engine(engine, **options)
    until = None if deadline is None else Deadline(deadline)
    with opened_store(store_path) as results, warnings_named("bench"):
        report = run_bench(
            config, results, chosen, limit=limit, progress=BenchProgress(err), deadline=until
        )
    for label, reason in report.skipped.items():
        err.print(labelled("N/A", "yellow", f"{label}: {reason}"), soft_wrap=True)
    for label, flagged in report.contrast_is_target.items():
        shown = ", ".join(map(str, sorted(flagged)[:10])) + (", ..." if len(flagged) > 10 else "")
        err.print(
            labelled(
                "warning:",
                "yellow",
                f"{label}: {len(flagged)} instance(s) ({shown}) have their own target as "
                "contrast: the difference of an output with itself is zero at every token, "
                "so they are not explained and have no metric values",
            ),
            soft_wrap=True,
        )
    err.print(
        f"stored {report.units} unit(s) in {store_path} ({report.wall_seconds:.1f} s; "
        f"explain + evaluate {report.compute_seconds:.1f} s)" + _raced(report, "unit(s)"),
        highlight=False,
    )
    if report.deferred:
        err.print(
            f"deadline: {report.deferred} unit(s) left for the next run (the same command resumes)",
            highlight=False,
        )


def _execution_settings(given: list[str]) -> dict[str, str]:
    """``--execution-option`` values as ``{[METHOD.]OPTION: VALUE}`` (the values are
    converted to the option's type once the config's methods are known)."""
    settings = {}
    for text in given:
        key, equals, value = text.partition("=")
        if not equals or not key.strip() or not value.strip():
            raise InvalidInputError(
                f"--execution-option {text!r}: write [METHOD.]OPTION=VALUE, e.g. "
                "internal_batch_size=32 or value_zeroing.batch_size=16"
            )
        settings[key.strip()] = value.strip()
    return settings


@bench_app.command("generate", cls=once_each())
@friendly
def generate(
    config_path: ConfigArgument,
    store: StoreOption = None,
    limit: LimitOption = None,
    device: Annotated[str | None, typer.Option(help="Run the models there (cuda, cpu...).")] = None,
) -> None:
    """Write only the continuations CONFIG's generation experiments lack (greedy, once per
    instance), so that a later run, on another machine too, only explains and scores."""
    _check_limit(limit)
    if device is not None:
        _check_device(device)
    if not config_path.is_file():
        _config(config_path)
    store_path = store or _default_store(config_path, writes=True)
    _check_store_path(store_path)
    _check_writable_store(store_path)
    config = _config(config_path)
    if not any(e.generation for e in config.experiments):
        raise InvalidInputError(f"{config_path} has no generation experiment: nothing to write")
    _note_limits(config, config_path, limit, "write", generation=True)

    from ..bench.engines import get_engine
    from ..bench.runner import generate_continuations
    from ..bench.store import opened_store

    with opened_store(store_path) as results:
        report = generate_continuations(
            config, results, get_engine("local", device=device), limit=limit
        )
        counts = results.counts()
    err.print(
        f"wrote {report.units} chunk(s) of continuations to {store_path} "
        f"({counts['generations']} stored; {report.wall_seconds:.1f} s)"
        + _raced(report, "chunk(s)"),
        highlight=False,
    )


def _raced(report: BenchReport, what: str) -> str:
    """What another run on the same store stored first, of what this one computed: said,
    so that two runs' counts never add up to more than the grid."""
    if not report.stored_elsewhere:
        return ""
    return (
        f"; another run on this store had stored {report.stored_elsewhere} {what} "
        "computed here first (kept once)"
    )


@bench_app.command("status", cls=once_each())
@friendly
def status(
    config_path: ConfigArgument,
    store: StoreOption = None,
    limit: LimitOption = None,
) -> None:
    """What is done: instances stored per experiment, method and seed (with --limit N,
    of the first N, as a run with --limit N counts them)."""
    _check_limit(limit)
    config = _config(config_path)
    _note_limits(config, config_path, limit, "count")
    from ..bench.archive import readable_store
    from ..bench.results import status_frame
    from ..bench.runner import tagger_refusal
    from ..bench.store import ResultStore

    store = store or _default_store(config_path)
    with (
        readable_store(store) as path,
        ResultStore(path, create=False, shown=store) as results,
    ):
        frame = status_frame(config, results, limit)
        blocked = tagger_refusal(config, results, limit)
    table = Table(title=Text(f"{config.title} ({store})"))
    for column in frame.columns:
        table.add_column(column, justify="right" if column in ("seed", "done", "total") else "left")
    colours = {"done": "green", "partial": "yellow", "to do": "red", "N/A": "dim"}
    for row in frame.itertuples(index=False):
        table.add_row(*(str(v) for v in row[:-1]), Text(row.state, style=colours[row.state]))
    out.print(table)
    applicable = frame[frame["state"] != "N/A"]
    done, total = int(applicable["done"].sum()), int(applicable["total"].sum())
    not_applicable = len(frame) - len(applicable)
    if blocked is not None:  # what `bench run` would refuse before any work
        err.print(
            labelled("warning:", "yellow", f"bench run would stop: {blocked}"), soft_wrap=True
        )
    out.print(
        f"{done} of {total} instances done in {len(applicable)} cell(s)"
        + (
            f"; {not_applicable} cell(s) N/A (method does not apply to the model)"
            if not_applicable
            else ""
        )
    )


@bench_app.command("merge", cls=once_each())
@friendly
def merge(
    sources: Annotated[
        list[Path], typer.Argument(help="Stores to copy from (written on other machines).")
    ],
    into: Annotated[Path, typer.Option("--into", help="The store to merge into.")],
) -> None:
    """Join stores filled elsewhere (a GPU box, another session) into one.

    A result held by both is kept once; each source is merged in one transaction. Sources
    and the target may be compressed (.sqlite.xz, .sqlite.gz): a compressed target is
    written back whole when every source has been merged.
    """
    from contextlib import ExitStack

    from ..bench.archive import is_compressed, readable_store, writable_store
    from ..bench.store import ResultStore, opened_store
    from ..common.outputs import same_file

    _check_store_path(into, "--into")
    for source in sources:
        if not source.is_file():
            from ..bench.archive import missing_store

            text = missing_store(source)  # "; name it X" where X is the blank-less name
            fix = "; name it " in text or " is a folder; " in text
            raise InvalidInputError(
                text if fix else f"{text.partition(';')[0]}; name the stores to merge"
            )
        if same_file(source, into):  # compressed or not: merging it would only rewrite it
            raise InvalidFileError(_merged_into_itself(source, into))
    advice = "name the stores to merge (.sqlite, .sqlite.xz, .sqlite.gz)"
    with ExitStack() as stack:
        # every source is opened and checked before any is merged: a damaged one (a slot
        # file cut short in transfer) leaves the target as it was
        readable = []
        for source in sources:
            plain = stack.enter_context(readable_store(source, f"source {source}"))
            ResultStore(
                plain, create=False, update_keys=False, shown=source, role="source", advice=advice
            ).close()
            readable.append(plain)
        merged: list[Path] = []
        try:
            with (
                writable_store(
                    into, lambda waiting: err.print(waiting, highlight=False)
                ) as plain_target,
                opened_store(
                    plain_target,
                    shown=into,
                    role="--into",
                    advice="name another --into, or move this file away",
                ) as target,
            ):
                for source, plain in zip(sources, readable, strict=True):
                    added = target.merge_from(plain, shown=source)
                    merged.append(source)
                    summary = ", ".join(
                        f"{count} {table}" for table, count in added.items() if table != "runs"
                    )
                    err.print(f"merged {source}: added {summary}", highlight=False)
        except NormXLogitError as error:
            left = [str(s) for s in sources[len(merged) :]]
            if is_compressed(into):
                state = f"nothing was written to {into}"
            elif merged:
                state = f"{', '.join(map(str, merged))} merged into {into}, {', '.join(left)} not"
            else:
                state = f"nothing was merged into {into}"
            raise type(error)(f"{error} ({state})") from None


def _merged_into_itself(source: Path, into: Path) -> str:
    """Why ``source`` cannot be merged into ``into`` (the same file), naming the path the
    user wrote that is a link to the other."""
    if into.is_symlink():
        return f"--into {into} is a link to {source}, the store being merged; name another --into"
    if source.is_symlink():
        return f"{source} is a link to --into {into}, the store being merged into; name another"
    if into.resolve() != source.resolve():  # hard links: one file under two names
        return f"{source} and --into {into} are one file (hard links); name another"
    return f"{source} is the store being merged into; name another"


@bench_app.command("export", cls=once_each())
@friendly
def export(
    store: Annotated[Path, typer.Option("--store", help="The results store to read.")],
    fmt: Annotated[
        ExportFormat | None,
        typer.Option("--format", "-f", help="csv or parquet (default: from --output's suffix)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here (default: print CSV).")
    ] = None,
) -> None:
    """Every stored metric value, one row per instance x method x metric x point."""
    if fmt is ExportFormat.parquet and output is None:
        raise OutputPathError("Parquet is binary: give --output FILE.parquet")
    if output is not None:
        refuse_input_as_output(
            output, store, "--output", "the store being exported", "name another file"
        )
        check_output_file(output, "--output", example="values.csv")
        fmt = output_format(output, fmt, EXPORT_SUFFIXES)
    fmt = fmt or ExportFormat.csv
    if fmt is ExportFormat.parquet:
        _check_parquet()
    from ..bench.archive import readable_store
    from ..bench.results import export_frame
    from ..bench.store import ResultStore

    with readable_store(store) as path, ResultStore(path, create=False, shown=store) as results:
        frame = export_frame(results)
    if output is None:
        frame.to_csv(GuardedStdout(), index=False)
        return
    if fmt is ExportFormat.csv:
        write_atomically(output, frame.to_csv(index=False))
    else:
        _write_parquet(frame, output)
    err.print(f"wrote {len(frame)} rows to {output}")


@bench_app.command("report", cls=once_each())
@friendly
def report(
    config_path: ConfigArgument,
    store: StoreOption = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Folder for the tables and figures (default: CONFIG's name + "
            "'-report', next to --store if given, else next to CONFIG).",
        ),
    ] = None,
    common: Annotated[
        bool,
        typer.Option(
            "--common",
            help="Compare methods on the same instances: in each experiment, only the "
            "instances every started method has values for (while a grid is partly done).",
        ),
    ] = False,
    standard_error: Annotated[
        bool,
        typer.Option(
            "--standard-error",
            help="Show each number's standard error over the instances beside it, in "
            "every table (a table may ask for it itself: standard_error = true).",
        ),
    ] = False,
    versus: Annotated[
        list[str] | None,
        typer.Option(
            "--versus",
            help="A method's label: add, per experiment, every other method's difference "
            "from it instance by instance, with the standard error of those differences "
            "(tells close methods apart better than two separate errors); 'best': each "
            "metric against the method that does best on it. Repeat for several.",
        ),
    ] = None,
) -> None:
    """The tables (Markdown, LaTeX) and figures (PNG) of CONFIG, from the store alone."""
    config = _config(config_path)
    # beside the store the user named, else beside the config (where its store is)
    beside = store if store is not None else config.path
    if output is None:  # the folder's name is the config's: a blank at its edge, kept
        _refuse_unseen_config_edges(
            config.path, beside.with_name(f"{config.path.stem}-report"), "--output FOLDER"
        )
    folder = output or beside.with_name(f"{config.path.stem}-report")
    # a folder derived from the config's name is no --output the user gave: named as the
    # default it is, with --output as the way out
    role = "--output" if output is not None else "the config's default report folder"
    try:
        check_output_folder(folder, role)
    except OutputPathError as error:
        if output is not None:
            raise
        raise OutputPathError(f"{str(error).partition('; ')[0]}; pass --output FOLDER") from None
    store = store or _default_store(config_path)
    _refuse_report_over_inputs(config, folder, store, role)
    from ..bench.archive import readable_store
    from ..bench.report import write_report
    from ..bench.store import ResultStore

    with (
        readable_store(store) as path,
        ResultStore(path, create=False, shown=store) as results,
    ):
        try:
            written = write_report(
                config,
                results,
                folder,
                common=common,
                standard_error=standard_error,
                versus=versus,
            )
        except OSError as error:
            where = error.filename or folder
            raise OutputPathError(
                f"cannot write the report to {where}: {error.strerror or error}; pass "
                "--output DIR with a folder you can write to"
            ) from None
    text = written[0].read_text(encoding="utf-8")
    out.print(text, soft_wrap=True)  # tables stay whole
    err.print(f"wrote {len(written)} file(s) to {folder}")


def _refuse_report_over_inputs(config, folder: Path, store: Path, role: str = "--output") -> None:
    """The report writes through links: refuse, before any work, a report folder where
    one of its files (report.md, a table's .tex, a plot's .png) is the config or the store
    through a link, or a link onto a model's file."""
    from ..bench.report import default_plots, default_tables

    names = [
        "report.md",
        *(f"{spec.name}.tex" for spec in config.tables or default_tables(config)),
        *(f"{spec.name}.png" for spec in config.plots or default_plots(config)),
    ]
    inputs = {"the config": config.path, "the store": store}
    refuse_inputs_in_folder(folder, names, inputs, role)


def _check_device(device: str) -> None:
    """``device`` names a torch device this machine has (checked before any work)."""
    from ..model.devices import check_device

    check_device(device, f"--device {device}")


def _refuse_empty_names(config, experiments: list[str] | None, methods: list[str] | None) -> None:
    """An empty ``--experiment`` / ``--method`` said to be empty (it vanished between two
    spaces in "no method shown as  in")."""
    for flag, names, known, what in (
        ("--experiment", experiments, [e.name for e in config.experiments], "an experiment name"),
        (
            "--method",
            methods,
            list(dict.fromkeys(m.display for e in config.experiments for m in e.methods)),
            "a method label",
        ),
    ):
        if any(not name.strip() for name in names or ()):
            raise InvalidInputError(
                f"{flag} is empty; give {what} of {config.path} ({', '.join(known)})"
            )


def _check_store_path(path: Path, flag: str = "--store") -> None:
    """The store can be created or opened there (checked before any work), under a name:
    "out/.sqlite" would be a hidden store."""
    refuse_suffix_only(path, flag)
    check_output_file(path, flag, example="results.sqlite", replaced=False)


def _default_store(config_path: Path, *, writes: bool = False) -> Path:
    """The config's store beside it; refused where it is missing but kept compressed
    beside it (as stores ship), naming that file: a read would say "no results store",
    and a run (``writes``) would recompute everything the compressed one holds."""
    from ..bench.archive import packed_beside, tar_inside
    from ..common.outputs import link_loop_phrase

    store = default_store(config_path)
    _refuse_unseen_config_edges(config_path, store, "--store NAME.sqlite")
    if store.is_dir():  # no --store was given: "--store g.sqlite is a folder" named none
        raise InvalidInputError(
            f"the config's default store {store} is a folder; pass --store FILE "
            f"(e.g. --store {store / 'results.sqlite'})"
        )
    packed = packed_beside(store)
    if writes and (loop := link_loop_phrase(store)) is not None:
        # named first: the unpack advised below would write into the loop, and fail
        then = f", then unpack {packed} (normxlogit bench merge {packed} --into {store})"
        raise InvalidInputError(
            f"the config's default store {store} is {loop}; remove the link "
            f"(rm {shlex.quote(str(store))}){then if packed else ''}, or pass --store FILE"
        )
    if packed is None:
        return store
    if writes and (tar := tar_inside(packed)) is not None:  # the advised merge would refuse it
        raise InvalidInputError(f"no results store at {store}, and {tar}")
    if writes:
        raise InvalidInputError(
            f"no results store at {store}, but {packed} beside {config_path} holds its "
            f"results, and a run writes a plain store as it goes: unpack it first "
            f"(normxlogit bench merge {packed} --into {store}), or pass --store {store} "
            "to start a new one"
        )
    raise InvalidInputError(
        f"no results store at {store}; its results are kept compressed beside it: "
        f"pass --store {packed}"
    )


def _refuse_unseen_config_edges(config_path: Path, default: Path, option: str) -> None:
    """Refuse a name derived from the config's (its store, its report folder) where the
    config's name begins or ends in a blank or an invisible character: the derived name
    would keep it unseen, and an option the user never gave is no place to name it."""
    from ..bench.spec import unseen_config_edge

    found = unseen_config_edge(config_path, default)
    if found is None:
        return
    where, rename = found
    raise InvalidInputError(
        f"config {str(config_path)!r}: its name {where}, which a terminal does not show, and "
        f"its default {'store' if '--store' in option else 'report folder'} would be "
        f"{str(default)!r}; {rename}, or pass {option}"
    )


def _check_writable_store(path: Path) -> None:
    """A run writes a plain store as it goes; a compressed one is only read and merged
    (a merge into a compressed name creates it, so a new one is made from a plain run)."""
    from ..bench.archive import content_kind, is_compressed, misnamed_content

    if path.is_file():  # x.sqlite.GZ: advised the name the other commands advise
        from ..bench.store import store_name_refusal
        from ..common.input_paths import free_name

        kind = content_kind(path)
        packed = path.suffix if path.suffix in (".xz", ".gz") and kind == path.suffix else ""
        refused = store_name_refusal(path, f"--store {path}", True, packed)
        if refused is not None:
            error, advised = refused
            if advised is None:
                raise error
            plain = advised.with_suffix("")
            if plain.suffix.lower() != ".sqlite":
                plain = plain.with_name(plain.name + ".sqlite")
            plain = free_name(plain)
            raise type(error)(
                f"{error}, then unpack it (normxlogit bench merge {advised} --into {plain}) "
                f"and run with --store {plain}"
            )
    if path.exists() and (misnamed := misnamed_content(path)) is not None:
        raise InvalidInputError(f"--store {misnamed}")  # a merge would refuse it too
    if is_compressed(path):
        from ..bench.store import unpack_plan

        plan = unpack_plan(path)
        plain = plan.plain
        if not path.exists():
            packed = plain.with_name(plain.name + path.suffix)  # x.tar.gz: x.sqlite.gz
            raise InvalidInputError(
                f"--store {path} does not exist yet, and a run writes a plain store as it "
                f"goes: run with --store {plain}, then compress it (normxlogit bench merge "
                f"{plain} --into {packed})"
            )
        _check_readable_store(path)  # no store inside: refused as status and merge refuse it
        said = f"--store {path} is compressed, and a run writes its store as it goes"
        fresh = plan.fresh
        if plan.beside == "a results store":  # the advised merge would add to it: said
            raise InvalidInputError(
                f"{said}; {plain} exists beside it: merge into that store ({plan.merge(plain)} "
                f"adds its results to those there) and run with --store {plain}, or unpack it "
                f"to a new store ({plan.merge(fresh)}) and run with --store {fresh}"
            )
        if plan.beside is not None:
            raise InvalidInputError(
                f"{said}; {plain} beside it is {plan.beside}: unpack it to a new store "
                f"({plan.merge(fresh)}) and run with --store {fresh}"
            )
        raise InvalidInputError(
            f"{said}: unpack it first ({plan.merge(plain)}), then run with --store {plain}"
        )


def _check_readable_store(path: Path) -> None:
    """Refuse the compressed ``path`` where it holds no store (text, an empty or cut-short
    file, another compressed file), in the words ``bench status`` and ``merge`` use, before
    a merge of it is advised (that merge would refuse it)."""
    from ..bench.archive import readable_store
    from ..bench.store import ResultStore

    with (
        readable_store(path) as readable,
        ResultStore(readable, create=False, update_keys=False, shown=path),
    ):
        pass


def _check_parquet() -> None:
    """Parquet is written by pyarrow, an extra: refused before any work when missing."""
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        raise InvalidInputError(
            "Parquet is written with pyarrow: pip install 'normxlogit[bench]', or export "
            "--format csv"
        )


def _write_parquet(frame, output: Path) -> None:
    from ..common.outputs import replacing

    with replacing(output) as temporary:
        frame.to_parquet(temporary, index=False)
