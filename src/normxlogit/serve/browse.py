"""Browsing bench results: each experiment's table and curves, and per instance the
stored explanation behind a number.

Only the bench configs named on the command line are offered, each with its store; the
store is opened read-only per request (a running bench keeps writing meanwhile: SQLite's
write-ahead log lets both happen). A compressed store (``.sqlite.xz``, ``.sqlite.gz``) is
decompressed once into a private temporary folder, again only when the file changes (a
merge writes it back), and the folder is removed when the page stops.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.errors import InvalidFileError, InvalidInputError, NormXLogitError
from ..common.input_paths import bare_name, check_input_file, missing_name
from .payloads import payload, plain, results_payload

#: how many characters of an instance's text the drill-down list shows
SHOWN_TEXT = 120


@dataclass(frozen=True)
class BenchEntry:
    """A bench config and the store that holds its results; ``given``: the ``--bench``
    value and ``shown`` the store as the user named them, for messages (the paths are
    resolved, and a server path is no name the user gave)."""

    config: Path
    store: Path
    given: str = field(default="", compare=False)
    shown: Path | None = field(default=None, compare=False)
    #: the config as the user named it (relative to where serve started), for advice
    config_shown: Path | None = field(default=None, compare=False)

    @classmethod
    def parse(cls, value: str | Path) -> BenchEntry:
        """``CONFIG`` (its default store) or ``CONFIG=STORE``."""
        from ..bench.archive import is_compressed, packed_beside
        from ..bench.config import load_config
        from ..bench.spec import default_store, unseen_config_edge

        text = str(value)
        config_text, equals, store_text = text.partition("=")
        if not config_text.strip() or (equals and not store_text.strip()):
            part = "config" if not config_text.strip() else "store"
            raise InvalidInputError(
                f"--bench {text}: the {part} part is empty; pass --bench CONFIG or CONFIG=STORE"
            )
        config = Path(config_text).expanduser()
        check_input_file(config, "bench config", "pass --bench CONFIG.toml[=STORE]")
        if is_compressed(config) or _is_sqlite(config):
            raise InvalidInputError(
                f"--bench {config}: that is a results store, not a bench config; pass the "
                f"config it belongs to and the store as --bench CONFIG.toml={config}"
            )
        load_config(config)  # a config that does not read is refused now, not per request
        store = Path(store_text).expanduser() if store_text else default_store(config)
        if not store_text and (unseen := unseen_config_edge(config, store)) is not None:
            where, rename = unseen  # its store's name is the config's: not the user's to fix
            raise InvalidInputError(
                f"--bench {str(config)!r}: the config's name {where}, which a terminal does "
                f"not show, and its default store would be {str(store)!r}; {rename}, or "
                "pass --bench CONFIG=STORE"
            )
        if store.is_dir() and not store_text:  # no STORE was given: the config's
            raise InvalidInputError(
                f"--bench {text}: the config's default store {store} is a folder; pass "
                f"--bench {config}=FILE (e.g. --bench {config}={store / 'results.sqlite'})"
            )
        if store.is_dir():  # as `bench status --store FOLDER` says it, not "run into it"
            raise InvalidInputError(
                f"--bench {text}: store {store} is a folder; give a file name (.sqlite) "
                "as CONFIG=STORE"
            )
        if not store_text and (packed := packed_beside(store)) is not None:
            raise InvalidInputError(
                f"no results store {store} for {config}; its results are kept compressed "
                f"beside it: pass --bench {config}={packed}"
            )
        if not store.is_file():
            bare = store.with_name(bare_name(store.name) or store.name)
            if bare != store and bare.is_file():  # "g.sqlite ": the store is there, unseen
                raise InvalidInputError(
                    f"no results store {missing_name(store)} for {config}; pass --bench "
                    f"{config}={bare}"
                )
            if bare != store:  # a run into a name the shell would strip fills no such store
                raise InvalidInputError(
                    f"no results store {missing_name(store)} for {config}; name the store "
                    "without the blank"
                )
            # given as CONFIG=STORE already: "or name it so" would only repeat it
            named = "" if store_text else "; or name the store as CONFIG=STORE"
            raise InvalidInputError(
                f"no results store {store} for {config}; "
                f"{_filling_run(config, store if store_text else None)}{named}"
            )
        entry = cls(config.resolve(), store.resolve(), text, store, config)
        if not is_compressed(store):  # a compressed one is opened once decompressed (check)
            _open_once(entry, store)
        return entry


def _open_once(entry: BenchEntry, plain: Path) -> None:
    """Open the entry's store (``plain``: itself, or its decompressed copy) as ``bench
    status`` does, so a store it refuses (another compression, empty, cut short) is
    refused as the page starts, in the CLI's words, not by every request."""
    from ..bench.store import ResultStore

    try:
        ResultStore(
            plain,
            create=False,
            shown=_shown(entry),
            advice=_STORE_ADVICE.format(entry=entry),
            flag=_STORE_FLAG,
        ).close()
    except NormXLogitError as error:
        raise InvalidInputError(f"--bench {entry.given}: {error}") from None


def _filling_run(config: Path, store: Path | None) -> str:
    """The run that fills the store ``--bench`` names (None: the config's default store),
    to do first; a run writes a plain store, so a compressed name is filled as its plain
    file and compressed after, by the command that writes that name."""
    from ..bench.archive import FOREIGN_SUFFIXES, is_compressed, plain_store_name

    run = f"run `normxlogit bench run {config}"
    if store is None:
        return run + "` first"
    if store.suffix.lower() in FOREIGN_SUFFIXES:  # x.sqlite.bz2: no store the bench reads
        return (
            f"{run} --store {plain_store_name(store)}` first (the bench reads no "
            f"{store.suffix} store)"
        )
    if is_compressed(store):
        plain = store.with_suffix("")
        tool = "xz" if store.suffix.lower() == ".xz" else "gzip"
        return f"{run} --store {plain}` first, then `{tool} -k {plain}`, which writes {store}"
    return f"{run} --store {store}` first"


#: what a store that does not read suggests (serve has no --store)
_STORE_ADVICE = (
    "name the store a run of {entry.config.name} wrote (.sqlite, .sqlite.xz or .sqlite.gz) "
    "as --bench CONFIG=STORE"
)


#: how advice names the store's place on serve's command line (it has no --store)
_STORE_FLAG = "the STORE of --bench CONFIG=STORE"


def _shown(entry: BenchEntry) -> Path:
    """The entry's store as the user named it (its resolved path where not known)."""
    return entry.shown if entry.shown is not None else entry.store


def _decompress(entry: BenchEntry, target: Path) -> None:
    """Decompress the entry's store to ``target``; errors name the store as given (not
    through ``named_as_given``, whose warning hook is no thing to swap per request)."""
    import shlex

    from ..bench.archive import decompress_store, empty_compressed_store

    try:
        if entry.store.is_file() and entry.store.stat().st_size == 0:
            config = shlex.quote(str(entry.config_shown or entry.config))
            raise InvalidFileError(empty_compressed_store(entry.store, config=config))
        decompress_store(entry.store, target)
    except NormXLogitError as error:
        if error.args and isinstance(error.args[0], str):
            error.args = (_as_given(error.args[0], entry),)
        raise


def _as_given(message: str, entry: BenchEntry) -> str:
    """``message`` with the entry's resolved store, and other files beside it (a name to
    rename it to), in the folder as the user named it."""
    shown = _shown(entry)
    message = message.replace(str(entry.store), str(shown))
    folder = "" if str(shown.parent) == "." else f"{shown.parent}{os.sep}"
    return message.replace(f"{entry.store.parent}{os.sep}", folder)


def _is_sqlite(path: Path) -> bool:
    with open(path, "rb") as stream:
        return stream.read(16) == b"SQLite format 3\x00"


class BenchBrowser:
    """Read-only views of the named bench configs' stores."""

    def __init__(self, entries: list[BenchEntry]):
        self.entries = entries
        self._lock = threading.Lock()  # two requests decompress a store once, not twice
        self._folder: tempfile.TemporaryDirectory | None = None
        #: per compressed store: (its size and mtime when decompressed, the plain copy)
        self._copies: dict[Path, tuple[tuple[int, int], Path]] = {}
        self._made = 0
        #: per (config, experiment, data set, limit): the instances the config plans
        self._planned: dict[tuple[Any, ...], int] = {}

    def close(self) -> None:
        """Remove the decompressed copies of compressed stores (the page stops)."""
        with self._lock:
            if self._folder is not None:
                self._folder.cleanup()
            self._folder = None
            self._copies.clear()

    def check(self) -> None:
        """Refuse, as the page starts, a compressed store that does not decompress to a
        SQLite file, as :meth:`BenchEntry.parse` refuses a plain one that is none: not
        every request's error. The copy made is kept for the requests."""
        for entry in self.entries:
            try:
                plain = self._readable(entry)
            except NormXLogitError as error:
                self.close()
                raise InvalidInputError(f"--bench {entry.given}: {error}") from None
            if not _is_sqlite(plain):
                self.close()
                raise InvalidInputError(
                    f"--bench {entry.given}: {_shown(entry)} holds no results store (it "
                    "decompresses to no SQLite file); name the store as CONFIG=STORE"
                )
            if plain != entry.store:  # a plain store was opened by BenchEntry.parse
                try:
                    _open_once(entry, plain)
                except InvalidInputError:
                    self.close()
                    raise

    def _readable(self, entry: BenchEntry) -> Path:
        """A plain SQLite path for the entry's store: itself, or its decompressed private
        copy (made once, and again when the compressed file changes)."""
        from ..bench.archive import is_compressed

        store = entry.store
        if not is_compressed(store):
            return store
        with self._lock:
            try:
                stat = store.stat()
            except FileNotFoundError:
                raise InvalidInputError(
                    f"no results store at {_shown(entry)} (it was there when the page started)"
                ) from None
            stamp = (stat.st_size, stat.st_mtime_ns)
            known = self._copies.get(store)
            if known is not None and known[0] == stamp and known[1].is_file():
                return known[1]
            if self._folder is None:
                self._folder = tempfile.TemporaryDirectory(prefix="normxlogit-page-")
            # a new name each time: a request reading the previous copy keeps it
            self._made += 1
            target = Path(self._folder.name) / f"{self._made}-{store.with_suffix('').name}"
            _decompress(entry, target)
            self._copies[store] = (stamp, target)
            return target

    def listing(self) -> list[dict[str, Any]]:
        from ..bench.config import load_config

        found = []
        for index, entry in enumerate(self.entries):
            config = load_config(entry.config)
            found.append(
                {
                    "id": index,
                    "title": config.title,
                    "config": entry.config.name,
                    "store": entry.store.name,
                    "experiments": [e.name for e in config.experiments],
                }
            )
        return found

    def _open(self, index: int):
        from ..bench.config import load_config
        from ..bench.store import ResultStore

        if not 0 <= index < len(self.entries):
            raise InvalidInputError(f"no bench results {index}; the page has {len(self.entries)}")
        entry = self.entries[index]
        config = load_config(entry.config)
        plain = self._readable(entry)
        return config, ResultStore(
            plain,
            create=False,
            shown=_shown(entry),
            advice=_STORE_ADVICE.format(entry=entry),
            flag=_STORE_FLAG,
        )

    @contextmanager
    def _experiment(self, index: int, name: str) -> Iterator[tuple[Any, Any, Any]]:
        """The config, its open store and the stored results of experiment ``name``."""
        from ..bench.results import experiment_results

        config, store = self._open(index)
        with store:
            for result in experiment_results(config, store):
                if result.experiment.name == name:
                    yield config, store, result
                    return
        raise InvalidInputError(f"no experiment {name!r} in {self.entries[index].config.name}")

    def experiment(self, index: int, name: str) -> dict[str, Any]:
        """An experiment's summary (methods x metrics, on the instances all methods share)
        and its curves, with each metric's metadata."""
        with self._experiment(index, name) as (_, _, result):
            common = result.common()
        experiment = result.experiment
        started = set(result.frame["method"])
        left_out = _left_out(experiment, result.valueless)
        # started, with a planned seed that is not: left out of the rows, as not computed
        missing = {
            m.display: seeds
            for m in experiment.methods
            if m.display in started and (seeds := result.seeds_not_started(m.display))
        }
        return {
            "experiment": name,
            "model": experiment.model,
            "instances": common.total,
            # of the instances the config plans (as `bench status` counts them), not only
            # those a run has stored so far
            "of": max(self._planned_instances(index, experiment, result.total), result.total),
            "skipped": result.skipped,
            # methods with no value yet: left out of the rows and of the count above
            "not_computed": [
                m.display
                for m in experiment.methods
                if (m.display not in started or m.display in missing)
                and m.display not in result.skipped
                and m.display not in left_out
            ],
            # of those, each one started with a planned seed not (method -> those seeds)
            "seeds_not_started": missing,
            # methods with instances whose target is their contrast (all of them: no row)
            "left_out": left_out,
            "left_out_note": _left_out_note(left_out),
            **results_payload(common.summary(), common.curves()),
        }

    def _planned_instances(self, index: int, experiment: Any, stored: int) -> int:
        """How many instances ``experiment`` plans: its data set's first ``limit`` rows
        (read once); the instances in the store where the data set cannot be read here."""
        from ..bench.runner import load_examples

        dataset = experiment.dataset
        key = (self.entries[index].config, experiment.name, dataset.key, dataset.limit)
        with self._lock:
            if key in self._planned:
                return self._planned[key]
        try:
            count = len(load_examples(dataset, dataset.limit).texts)
        except (NormXLogitError, OSError):  # data not staged on this machine, say
            return stored
        with self._lock:
            self._planned[key] = count
        return count

    def tables(self, index: int) -> dict[str, Any]:
        """The config's tables as the report renders them (the paper's numbers beside
        ours), on the instances every method has, and the names of the figures it draws
        (as the report, leaving out those with nothing to draw)."""
        from ..bench.report import build_table, default_tables
        from ..bench.results import experiment_results

        config, store = self._open(index)
        with store:
            results = [result.common() for result in experiment_results(config, store)]
            plots = _drawn_plots(config, store, results)
        tables = []
        for spec in config.tables or default_tables(config):
            table = build_table(spec, results)
            if table.columns:
                tables.append(table.to_dict())
        return {
            "tables": tables,
            "plots": [{"name": p.name, "title": p.title or p.name} for p in plots],
        }

    def plot(self, index: int, name: str) -> bytes:
        """One of the config's figures as PNG, drawn by the report's own code; a figure
        the tables do not list is refused naming those they do (one list, not two)."""
        import tempfile

        from ..bench.report import default_plots, draw_plot
        from ..bench.results import experiment_results

        config, store = self._open(index)
        specs = {p.name: p for p in config.plots or default_plots(config)}
        with store, tempfile.TemporaryDirectory() as folder:
            results = [result.common() for result in experiment_results(config, store)]
            drawn = [p.name for p in _drawn_plots(config, store, results)]
            if name not in specs:
                listed = ", ".join(drawn) or "no figure yet"
                raise InvalidInputError(f"no figure {name!r}; this config draws {listed}")
            if name not in drawn:
                raise InvalidInputError(f"figure {name!r}: {_undrawn(specs[name], results)}")
            path = Path(folder) / "figure.png"
            if not draw_plot(specs[name], config, store, results, path):
                raise InvalidInputError(f"figure {name!r} has nothing to draw yet")
            return path.read_bytes()

    def instances(self, index: int, name: str, method: str, metric: str) -> dict[str, Any]:
        """Every instance's number for one method and metric (its own AOPC / AUC / mean),
        to find the explanation behind an outlier; averaged over the stored seeds, as the
        table's number is, so the listed values agree with the number clicked."""
        from ..evaluation import metric_info

        with self._experiment(index, name) as (_, store, result):
            _check_asked(result.experiment, name, method, metric)
            frame = result.frame
            rows = frame[(frame["method"] == method) & (frame["metric"] == metric)]
            if rows.empty and method in result.skipped:
                raise InvalidInputError(_not_applicable(name, method, result.skipped[method]))
            if rows.empty:
                left_out = result.valueless.get((method, metric), 0)
                why = f" ({_left_out_note({method: left_out})})" if left_out else ""
                raise InvalidInputError(
                    f"no stored values of {metric!r} for {method!r} in {name!r}{why}"
                )
            if metric in result.correlated_metrics():  # its rows hold the predictions
                raise InvalidInputError(
                    f"{metric} of {name!r} is one Pearson correlation over all its instances "
                    "(the regression model's predictions against the gold values), so no "
                    "instance has a value of its own to list; the table's number summarises that "
                    "correlation's curve"
                )
            info = metric_info(metric)
            seeds = sorted(int(seed) for seed in set(rows["seed"]))
            keys = ["instance", "step", "seed"] if "step" in rows else ["instance", "seed"]
            per_instance: dict[int, list[float]] = {}
            for key, curve in rows.groupby(keys, sort=True):
                instance = int(key[0]) if isinstance(key, tuple) else int(key)
                curve = curve.sort_values("x")
                value = info.summarise(curve["x"].to_numpy(float), curve["value"].to_numpy(float))
                per_instance.setdefault(instance, []).append(float(value))
            dataset = result.experiment.dataset.key
            texts = {i: store.instance(dataset, i) for i in per_instance}
            missing = result.seeds_not_started(method)
        return {
            "method": method,
            "metric": metric,
            "seeds": seeds,
            # the config's seeds with no row of the method yet: the values stand without
            "seeds_not_started": missing,
            "higher_is_better": info.higher_is_better,
            "instances": [
                {
                    "instance": instance,
                    "value": plain(sum(values) / len(values)),
                    "text": _short(texts[instance]["text"]) if texts[instance] else "",
                }
                for instance, values in per_instance.items()
            ],
        }

    def explanation(self, index: int, name: str, method: str, instance: int) -> dict[str, Any]:
        """The stored explanation of one instance by one method, with the instance."""
        from ..bench.store import CellKey
        from ..explanations.io import load_payload

        with self._experiment(index, name) as (config, store, result):
            experiment = result.experiment
            keys = {m.display: m.key for m in experiment.methods}
            if method not in keys:
                raise InvalidInputError(
                    f"{name!r} has no method {method!r}; it has {', '.join(keys)}"
                )
            cell = CellKey(experiment.model, experiment.dataset.key, keys[method], config.seeds[0])
            found = store.explanations(cell, [instance])
            row = store.instance(experiment.dataset.key, instance)
        if instance not in found and method in result.skipped:
            raise InvalidInputError(_not_applicable(name, method, result.skipped[method]))
        # the experiment's own instances (its data file's first ``limit`` rows, as `bench
        # status` counts them), not those a run planned into the store: a `run --limit`
        # stores fewer, and a larger experiment sharing the cell stores more
        planned = self._planned_instances(index, experiment, result.total)
        if planned and not 0 <= instance < planned:
            raise InvalidInputError(
                f"{name!r} has no instance {instance}: its instances run 0 to "
                f"{planned - 1}; ask for one of those"
            )
        if instance not in found:
            raise InvalidInputError(
                f"no stored explanation of instance {instance} by {method!r}: it is not "
                f"computed yet; {_computing_run(self.entries[index])}"
            )
        return {
            "instance": instance,
            "text": row and row["text"],
            "label": row and _gold_name(experiment, row["label"]),
            "explanation": payload(load_payload(found[instance])),
        }


def _computing_run(entry: BenchEntry) -> str:
    """The run that computes what ``entry``'s store lacks, its config and store named as
    given to serve (shell-quoted); a run writes a plain store, so a compressed one is
    unpacked first, where ``bench run --store`` advises it (:func:`unpack_plan`: a file
    at its plain name beside it is named, and a free name given)."""
    import shlex

    from ..bench.archive import is_compressed
    from ..bench.store import unpack_plan

    config = shlex.quote(str(entry.config_shown or entry.config))
    store = entry.shown or entry.store
    if not is_compressed(store):
        return (
            f"run `normxlogit bench run {config} --store {shlex.quote(str(store))}` "
            "(without --limit) to compute it"
        )
    plan = unpack_plan(entry.store)  # the file beside the store serve reads

    def shown(path: Path) -> str:  # beside the store as the user named it
        return shlex.quote(str(store.with_name(path.name)))

    def merge(into: Path) -> str:
        return f"`normxlogit bench merge {shlex.quote(str(store))} --into {shown(into)}`"

    def run(into: Path) -> str:
        return (
            f"run `normxlogit bench run {config} --store {shown(into)}` (without --limit) to "
            f"compute it, and serve --bench {config}={shown(into)}"
        )

    said = "its store is compressed, and a run writes a plain one"
    if plan.beside == "a results store":  # the merge adds to it: said, and a new one offered
        return (
            f"{said}; {shown(plan.plain)} exists beside it: merge into that store "
            f"({merge(plan.plain)} adds its results to those there) and {run(plan.plain)}, "
            f"or unpack it to a new store ({merge(plan.fresh)}) and {run(plan.fresh)}"
        )
    if plan.beside is not None:
        return (
            f"{said}; {shown(plan.plain)} beside it is {plan.beside}: unpack it to a new store "
            f"({merge(plan.fresh)}), {run(plan.fresh)}"
        )
    return f"{said}: unpack it ({merge(plan.plain)}), {run(plan.plain)}"


def _gold_name(experiment: Any, label: Any) -> Any:
    """A stored gold label as the page shows it beside the predicted label's name: a
    label index named (a registered data set's by its own label names; a user's file of
    indices by the model's, as the bench scores it), where the names are known without
    loading anything; any other label as stored."""
    if not isinstance(label, int) or isinstance(label, bool):
        return label
    from ..bench.config import _classifier_labels
    from ..data import dataset_info, list_datasets

    dataset = experiment.dataset.name
    if dataset.startswith("hub:"):  # its label names are fetched: the index as stored
        return label
    if dataset in list_datasets():
        names = list(dataset_info(dataset).labels)
    else:
        names = _classifier_labels(experiment.model, experiment.model_source)
    return names[label] if 0 <= label < len(names) else label


def _check_asked(experiment: Any, name: str, method: str, metric: str) -> None:
    """Refuse a method or metric the experiment does not have, naming those it has (not
    "no stored values", which a run could seem to fill)."""
    methods = [m.display for m in experiment.methods]
    if method not in methods:
        raise InvalidInputError(f"{name!r} has no method {method!r}; it has {', '.join(methods)}")
    if metric not in experiment.metrics:
        raise InvalidInputError(
            f"{name!r} has no metric {metric!r}; it has {', '.join(experiment.metrics)}"
        )


def _not_applicable(experiment: str, method: str, why: str) -> str:
    """A method the bench found N/A in an experiment, as the report says it: nothing is
    stored, and a rerun stores nothing either."""
    return f"{method!r} is N/A in {experiment!r}, so nothing is stored: {why.rstrip('.')}"


def _left_out(experiment: Any, valueless: dict) -> dict[str, int]:
    """Methods with instances left out with no value (their own target as contrast, as the
    report says), each with how many: one with no value at all is computed all the same,
    and a rerun gives it none, unlike a method not computed yet."""
    counts: dict[str, int] = {}
    for (method, _), count in valueless.items():
        counts[method] = max(counts.get(method, 0), count)
    return {m.display: counts[m.display] for m in experiment.methods if m.display in counts}


def _left_out_note(left_out: dict[str, int]) -> str:
    """The report's words for the methods left out with no value ("" when none)."""
    from ..bench.report import LEFT_OUT_REASON

    if not left_out:
        return ""
    counts = ", ".join(f"{method} {count}" for method, count in left_out.items())
    return f"{LEFT_OUT_REASON}: {counts}."


def _drawn_plots(config: Any, store: Any, results: list) -> list:
    """The figures the config draws now: what the report writes and the page lists, and
    the one list a refused figure name is answered with."""
    from ..bench.report import default_plots, drawable

    specs = config.plots or default_plots(config)
    return [spec for spec in specs if drawable(spec, config, store, results)]


def _undrawn(spec: Any, results: list) -> str:
    """Why a figure of the config is not drawn: its metric has no curve at all, or only
    one point per method here, or nothing is stored for it yet."""
    from ..evaluation.registry import metric_info

    if (no_curve := _no_curve(spec)) is not None:
        return no_curve
    stored = any(
        spec.metric in result.experiment.metrics
        and not result.frame.empty
        and (result.frame["metric"] == spec.metric).any()
        for result in results
    )
    if spec.kind != "curve" or not spec.metric or not stored:
        return "nothing is stored for it yet; run the bench, then ask again"
    axis = metric_info(spec.metric).axis
    return (
        f"{spec.metric} has a curve over {axis}s only, and each method here has it at one "
        f"{axis} (its tables show it)"
    )


def _no_curve(spec: Any) -> str | None:
    """Why a curve figure can never be drawn: its metric is one number per text."""
    from ..evaluation.registry import metric_info

    if spec.kind != "curve" or not spec.metric:
        return None
    try:
        axis = metric_info(spec.metric).axis
    except NormXLogitError:
        return None
    if axis is not None:
        return None
    return f"{spec.metric} is one number per text (no curve); its tables show it"


def _short(text: Any) -> str:
    shown = " / ".join(text) if isinstance(text, list) else str(text)
    return shown if len(shown) <= SHOWN_TEXT else shown[: SHOWN_TEXT - 1] + "…"
