"""Reading a store back: tidy value tables, per-experiment summaries, status counts.

Everything here reads the store alone (no model runs). Values are selected by the
config's current cells (model, dataset, method with its options, seed, protocol), so
results of settings the config no longer names stay in the store but out of the tables.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .runner import protocol_keys
from .spec import BenchConfig, Experiment
from .store import ResultStore

EXPORT_COLUMNS = [
    "model",
    "dataset",
    "dataset_path",
    "split",
    "dataset_options",
    "max_new_tokens",
    "instance",
    "method",
    "method_options",
    "method_code",
    "target",
    "layer",
    "contrast",
    "segments",
    "segment_reduce",
    "seed",
    "metric",
    "protocol",
    "step",
    "axis",
    "x",
    "value",
    "gold",
]


def export_frame(store: ResultStore) -> pd.DataFrame:
    """Every stored metric value: one row per instance x method x metric x point, with
    every setting that keys it (two rows differ in at least one column: a method's plain
    and contrastive values, its layers, or its token and segment results never export
    alike; nor do two versions of a registered method's code, told apart by
    ``method_code``, its code fingerprint, empty for a built-in). The data set is
    ``dataset``, as the config names it (a registered name, ``hub:...`` or a file), and
    ``dataset_path``, its ``path =`` (empty without): with a path, the name chooses the
    reader and task, so ``sst2`` reading ``x.tsv`` and ``x.tsv`` itself never export alike."""
    frame = store.values()
    if frame.empty:
        return pd.DataFrame(columns=EXPORT_COLUMNS)
    datasets = {key: json.loads(key) for key in frame["dataset"].unique()}
    methods = {key: json.loads(key) for key in frame["method"].unique()}

    def dataset_field(name: str, read):
        frame[name] = frame["dataset"].map(lambda k: read(datasets[k]))

    def method_field(name: str, read):
        frame[name] = frame["method"].map(lambda k: read(methods[k]))

    dataset_field("split", lambda d: d.get("split"))
    dataset_field("dataset_options", lambda d: json.dumps(d.get("options") or {}, sort_keys=True))
    dataset_field("max_new_tokens", lambda d: d.get("max_new_tokens"))
    method_field("method_options", lambda m: json.dumps(m["options"], sort_keys=True))
    method_field("method_code", lambda m: m.get("code"))
    for setting in ("target", "layer", "contrast", "segments", "segment_reduce"):
        method_field(setting, lambda m, setting=setting: m.get(setting))
    method_field("method", lambda m: m["name"])
    dataset_field("dataset_path", lambda d: d.get("path"))
    dataset_field("dataset", lambda d: d["name"])
    return frame[EXPORT_COLUMNS]


def seeds_not_started_phrase(seeds: Sequence[int]) -> str:
    """ " (seed 1 not started)" after a partial count, so a number that stands on fewer
    seeds than the config plans says which are missing ("" when none is)."""
    if not seeds:
        return ""
    plural = "s" if len(seeds) > 1 else ""
    return f" (seed{plural} {', '.join(str(seed) for seed in seeds)} not started)"


@dataclass
class ExperimentResults:
    """The stored values of one experiment, as an :class:`EvaluationResult` per seed."""

    experiment: Experiment
    frame: pd.DataFrame  # tidy rows: instance, method (display), metric, axis, x, value, gold, seed
    skipped: dict[str, str]  # method display -> why it does not apply
    #: instances the experiment has (as planned into the store; 0: never planned)
    total: int = 0
    #: (method display, metric) -> instances evaluated with no value: their explanation
    #: contrasts its target with itself, so there was nothing to score
    valueless: dict[tuple[str, str], int] = field(default_factory=dict)
    #: the seeds the config plans: a planned seed with no row of a method is not done,
    #: though the seeds it has give a number (empty: the seeds stored)
    seeds: tuple[int, ...] = ()
    #: (method display, metric, seed) -> instances evaluated with no value in that seed
    valueless_by_seed: dict[tuple[str, str, int], int] = field(default_factory=dict)

    def planned_seeds(self) -> tuple[int, ...]:
        """The seeds every method's cell needs to be done (the config's)."""
        return self.seeds or tuple(sorted(int(seed) for seed in set(self.frame["seed"])))

    def done(self, method: str, metric: str) -> int:
        """How many instances ``method`` has done on ``metric`` in every planned seed: with
        values, or left out with none (a target that is its contrast). A planned seed not
        started counts none, as `bench status` counts it, so its cell reads as partial."""
        rows = self.frame[(self.frame["method"] == method) & (self.frame["metric"] == metric)]
        counts = rows.groupby("seed")["instance"].nunique()
        return min(
            (
                int(counts.get(seed, 0)) + self.valueless_by_seed.get((method, metric, seed), 0)
                for seed in self.planned_seeds()
            ),
            default=0,
        )

    def seeds_not_started(self, method: str) -> list[int]:
        """The planned seeds ``method`` has no row of (no value and none left out) yet."""
        started = set(self.frame.loc[self.frame["method"] == method, "seed"])
        started |= {seed for (m, _, seed), count in self.valueless_by_seed.items() if m == method}
        return [seed for seed in self.planned_seeds() if seed not in started]

    def unfinished(self, methods: Sequence[str], metrics: Sequence[str]) -> dict[str, str]:
        """Each of ``methods`` not done on every instance of ``metrics`` in every planned
        seed, with its count as the tables' † note gives it ("2/11", a planned seed not
        started named), so a number or curve over part of the grid is not read as final."""
        unfinished = {}
        for method in methods:
            done = min((self.done(method, metric) for metric in metrics), default=0)
            if done < self.total:
                unfinished[method] = f"{done}/{self.total}" + seeds_not_started_phrase(
                    self.seeds_not_started(method)
                )
        return unfinished

    def common(self) -> ExperimentResults:
        """The same results on the instances every started method has values of every
        metric for in every planned seed, so that methods compare on the same texts (a
        method with no value yet, one with a planned seed not started, or N/A, stays out
        of the count and shows as not computed)."""
        if self.frame.empty:
            return self
        seeds = self.planned_seeds()
        started = [m for m in dict.fromkeys(self.frame["method"]) if not self.seeds_not_started(m)]
        rows = self.frame[self.frame["method"].isin(started)]
        counts = rows.groupby("instance")[["method", "metric", "seed"]].apply(
            lambda r: len(set(zip(r["method"], r["metric"], r["seed"], strict=True)))
        )
        wanted = len(started) * len(self.experiment.metrics) * len(seeds)
        shared = counts[counts == wanted].index
        frame = rows[rows["instance"].isin(shared)].reset_index(drop=True)
        # the instances left with no value (a target that is its contrast) stay counted
        return ExperimentResults(
            self.experiment,
            frame,
            self.skipped,
            len(shared),
            dict(self.valueless),
            self.seeds,
            dict(self.valueless_by_seed),
        )

    def summary(self) -> pd.DataFrame:
        """Methods x metrics (AOPC / AUC / mean), averaged over seeds."""
        tables = [
            self._evaluation(rows).summary().frame
            for _, rows in self.frame.groupby("seed", sort=True)
        ]
        if not tables:
            return pd.DataFrame(columns=list(self.experiment.metrics))
        return pd.concat(tables).groupby(level=0, sort=False).mean()

    def standard_errors(self) -> pd.DataFrame:
        """Methods x metrics: the standard error over instances of :meth:`summary`'s
        numbers (each instance's summary averaged over seeds first); NaN under two
        instances, and for a correlation (a regression model's accuracy)."""
        from ..evaluation.stats import standard_errors

        summaries = self.instance_summaries()
        if summaries is None:
            return pd.DataFrame(columns=list(self.experiment.metrics))
        return standard_errors(summaries)

    def correlated_metrics(self) -> list[str]:
        """The metrics whose number is one correlation over all the instances (a
        regression model's comp_acc / suff_acc: its predictions against the gold values),
        so that no instance has a value of its own to list or to pair."""
        from ..evaluation import metric_info

        if self.frame.empty or "gold" not in self.frame.columns:
            return []
        found = []
        for metric, rows in self.frame.groupby("metric", sort=False):
            gold = pd.to_numeric(rows["gold"], errors="coerce").to_numpy(float)
            if metric_info(str(metric)).across_instances == "accuracy" and np.isfinite(gold).any():
                found.append(str(metric))
        return found

    def paired_differences(self, versus: str) -> pd.DataFrame:
        """Each method minus the method labelled ``versus``, instance by instance (each
        instance's summary averaged over seeds first): mean, standard error, instances."""
        from ..evaluation.stats import PAIRED_COLUMNS, paired_differences

        summaries = self.instance_summaries()
        if summaries is None:
            return pd.DataFrame(columns=PAIRED_COLUMNS)
        differences = paired_differences(summaries, versus)
        order = {m.display: i for i, m in enumerate(self.experiment.methods)}  # the config's
        ranks = differences["method"].map(order)
        return differences.iloc[ranks.argsort(kind="stable")].reset_index(drop=True)

    def instance_summaries(self) -> pd.DataFrame | None:
        """Each (method, instance)'s summary of every metric, averaged over seeds; None
        before any value is stored."""
        per_seed = [
            self._evaluation(rows).instance_summaries()
            for _, rows in self.frame.groupby("seed", sort=True)
        ]
        if not per_seed:
            return None
        return pd.concat(per_seed).groupby(level=["method", "instance"], sort=False).mean()

    def _evaluation(self, rows: pd.DataFrame):
        """One seed's rows as an :class:`EvaluationResult` (which summarises them)."""
        from ..evaluation import EvaluationResult, Protocol

        return EvaluationResult(
            frame=rows.drop(columns="seed").assign(text=""),
            protocol=Protocol(),
            metrics=list(self.experiment.metrics),
        )

    def curves(self) -> pd.DataFrame:
        """Each metric's curve per method (instances combined, seeds averaged)."""
        curves = [
            self._evaluation(rows).curves() for _, rows in self.frame.groupby("seed", sort=True)
        ]
        if not curves:
            return pd.DataFrame(columns=["metric", "method", "x", "value"])
        joined = pd.concat(curves)
        return joined.groupby(["metric", "method", "x"], sort=False, as_index=False)["value"].mean()


def experiment_results(config: BenchConfig, store: ResultStore) -> list[ExperimentResults]:
    """The stored values of every experiment of ``config``."""
    values = store.values()
    skipped = store.skipped_cells()
    valueless = store.valueless()
    results = []
    for experiment in config.experiments:
        keys = {m.key: m.display for m in experiment.methods}
        protocols = protocol_keys(experiment)
        wanted = values["metric"].map(protocols)
        chosen = values[
            (values["model"] == experiment.model)
            & (values["dataset"] == experiment.dataset.key)
            & (values["protocol"] == wanted)
            & values["method"].isin(list(keys))
            & values["seed"].isin(list(config.seeds))
            & values["metric"].isin(list(experiment.metrics))
        ]
        if experiment.dataset.limit is not None:
            chosen = chosen[chosen["instance"] < experiment.dataset.limit]
        columns = ["instance", "method", "metric", "axis", "x", "value", "gold", "seed"]
        if experiment.generation:  # a value per evaluated step: summaries average them
            columns.insert(1, "step")
        frame = chosen.assign(method=chosen["method"].map(keys))[columns].reset_index(drop=True)
        frame["axis"] = frame["axis"].astype(object).where(frame["axis"].notna(), None)
        not_applicable = skipped[
            (skipped["model"] == experiment.model)
            & (skipped["dataset"] == experiment.dataset.key)
            & skipped["method"].isin(list(keys))
        ]
        total = store.instance_count(experiment.dataset.key)
        if experiment.dataset.limit is not None:
            total = min(total, experiment.dataset.limit)
        empty = valueless[
            (valueless["model"] == experiment.model)
            & (valueless["dataset"] == experiment.dataset.key)
            & (valueless["protocol"] == valueless["metric"].map(protocols))
            & valueless["method"].isin(list(keys))
            & valueless["seed"].isin(list(config.seeds))
        ]
        if experiment.dataset.limit is not None:
            empty = empty[empty["instance"] < experiment.dataset.limit]
        counted = empty.groupby(["method", "metric", "seed"])["instance"].nunique()
        no_values = {
            (keys[method], metric): int(count)
            for (method, metric), count in counted.groupby(level=[0, 1]).min().items()
        }
        results.append(
            ExperimentResults(
                experiment,
                frame,
                {
                    keys[m]: reason
                    for m, reason in zip(
                        not_applicable["method"], not_applicable["reason"], strict=True
                    )
                },
                total,
                no_values,
                tuple(config.seeds),
                {
                    (keys[method], metric, int(seed)): int(count)
                    for (method, metric, seed), count in counted.items()
                },
            )
        )
    return results


def config_timings(config: BenchConfig, timings: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``timings`` (:meth:`ResultStore.timings`) that belong to ``config``'s
    own cells: an experiment's model, dataset and method, the config's seeds, the
    experiment's instances (``limit``). A store shared with other configs (``bench
    merge``, one ``--store`` for two configs, an experiment dropped from this one) keeps
    other cells' timings, which are no part of this config's efficiency numbers."""
    if timings.empty:
        return timings
    limits: dict[tuple[str, str, str], float] = {}  # a cell -> instances it has
    for experiment in config.experiments:
        own = experiment.dataset.limit
        for method in experiment.methods:
            key = (experiment.model, experiment.dataset.key, method.key)
            limits[key] = max(limits.get(key, 0), math.inf if own is None else own)
    wanted = [
        instance < limits.get((model, dataset, method), 0) and seed in config.seeds
        for model, dataset, method, seed, instance in zip(
            timings["model"],
            timings["dataset"],
            timings["method"],
            timings["seed"],
            timings["instance"],
            strict=True,
        )
    ]
    return timings[np.array(wanted, dtype=bool)]


def timings_by_experiment(
    config: BenchConfig, timings: pd.DataFrame
) -> list[tuple[str, pd.DataFrame]]:
    """:func:`config_timings`, split per experiment (the config's order): each experiment's
    name and its own rows, so two models (or data sets) are never averaged together, as
    the metric tables keep them apart. Experiments that share their cells (the same
    model, dataset and split) share their rows, named together ("a / b"). Each row gains
    a ``label`` column: its method's label, unique in its group (:func:`_timing_labels`)."""
    timings = config_timings(config, timings)
    if timings.empty:
        return []
    shared: dict[tuple[str, str], list[Experiment]] = {}
    for experiment in config.experiments:
        shared.setdefault((experiment.model, experiment.dataset.key), []).append(experiment)
    groups = []
    keys = list(zip(timings["model"], timings["dataset"], strict=True))
    for key, experiments in shared.items():
        rows = timings[np.array([k == key for k in keys], dtype=bool)]
        if not rows.empty:
            labels = _timing_labels(experiments)
            name = " / ".join(e.name for e in experiments)
            groups.append((name, rows.assign(label=rows["method"].map(labels))))
    return groups


def _timing_labels(experiments: list[Experiment]) -> dict[str, str]:
    """Each method key of experiments that share their cells by its label, followed by
    the experiments that run it where two keys share a label (A's prediction and B's
    ``target = "label"`` cell of one method), so that no two timing rows read alike."""
    labels: dict[str, str] = {}
    owners: dict[str, list[str]] = {}
    for experiment in experiments:
        for method in experiment.methods:
            labels.setdefault(method.key, method.display)
            owners.setdefault(method.key, []).append(experiment.name)
    counts = Counter(labels.values())
    return {
        key: f"{label} ({' / '.join(owners[key])})" if counts[label] > 1 else label
        for key, label in labels.items()
    }


def status_frame(config: BenchConfig, store: ResultStore, limit: int | None = None) -> pd.DataFrame:
    """Per experiment and method: instances done of the total (of the first ``limit``,
    as a run with that limit counts them), or N/A."""
    from .runner import plan

    rows = []
    for cell in plan(config, store, limit, with_units=False):
        rows.append(
            {
                "experiment": cell.experiment.name,
                "method": _method_label(cell),
                "seed": cell.key.seed,
                "done": cell.done,
                "total": cell.total,
                "state": "N/A"
                if cell.skipped
                else ("done" if cell.done == cell.total else "partial" if cell.done else "to do"),
            }
        )
    return pd.DataFrame(rows, columns=["experiment", "method", "seed", "done", "total", "state"])


def _method_label(cell) -> str:
    for method in cell.experiment.methods:
        if method.key == cell.key.method:
            return method.display
    return cell.key.method


def mean_std(values: np.ndarray) -> tuple[float, float]:
    """Mean and standard deviation, NaN-safe (NaN when no value)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    return float(values.mean()), float(values.std())
