"""What a benchmark grid is, once read: experiments x methods x metrics x seeds, the
tables and plots a report draws, and the identity (canonical JSON, digest) stored results
are keyed by. :mod:`.config` reads and checks a TOML file into these."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..common.errors import InvalidInputError, NormXLogitError
from .model_refs import model_ref, split_model_ref

#: the row a table with ``average = true`` adds: each column's mean over the other rows
AVERAGE_ROW = "Avg"
#: ``bench report --versus best``: each metric against the method that does best on it
VERSUS_BEST = "best"


def canonical(value: Any) -> str:
    """One JSON text per value (sorted keys, no spaces): the identity stored results use."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def digest(value: Any) -> str:
    """A short stable hash of ``value``'s canonical form."""
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:16]


def result_options(method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` without the method's execution options (rows or tokens per pass) and
    without those written at their default value: the ones its results depend on, and so
    the ones its stored results are keyed by (``steps = 50`` where 50 is the default keys
    the cell that leaving ``steps`` out does)."""
    from ..methods.base import method_execution_options

    left_out = method_execution_options(method) | set(written_defaults(method, options))
    return {name: value for name, value in options.items() if name not in left_out}


def written_defaults(method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options of ``options`` written at method ``method``'s default value."""
    defaults = option_defaults(method)
    return {
        name: value
        for name, value in options.items()
        if _is_default(value, defaults.get(name, _NO_DEFAULT))
    }


#: an option without a default value (or of a name no method has)
_NO_DEFAULT = object()


def option_defaults(method: str) -> dict[str, Any]:
    """The default value of each option of ``method`` (none for a name no method has: a
    stored key of a method since removed keeps all its options)."""
    from ..methods.base import method_class

    try:
        cls = method_class(method)
    except NormXLogitError:
        return {}
    defaults: dict[str, Any] = {}
    for option in fields(cls):
        if not option.init:
            continue
        if option.default is not MISSING:
            defaults[option.name] = option.default
        elif option.default_factory is not MISSING:
            defaults[option.name] = option.default_factory()
    return defaults


def _is_default(value: Any, default: Any) -> bool:
    """Whether ``value`` (an option as a config or a stored key writes it) is ``default``:
    a list is its tuple, ``1`` is ``1.0``, but ``True`` is never ``1``."""
    if default is _NO_DEFAULT or isinstance(value, bool) != isinstance(default, bool):
        return False
    if isinstance(value, list | tuple) and isinstance(default, list | tuple):
        return len(value) == len(default) and all(
            _is_default(v, d) for v, d in zip(value, default, strict=True)
        )
    return bool(value == default)


def method_code(name: str) -> str | None:
    """The fingerprint of the code of method ``name`` where it is not built in (None: a
    built-in, or a name no method has): its results are keyed by it, so a method whose
    code changes under the same name is computed again."""
    from ..common.code_identity import code_fingerprint
    from ..methods.base import method_class

    try:
        cls = method_class(name)
    except NormXLogitError:
        return None
    return code_fingerprint(cls)


def current_method_key(stored: str) -> str:
    """A stored method key as :attr:`MethodSpec.key` now writes it: a key written while
    execution options (pi-soft's IG with ``internal_batch_size``) or options at their
    default value (a preset's ReAGent ``keep_top_n = 3``) were part of it resolves to the
    cell it belongs to; any other text is returned as it is."""
    try:
        identity = json.loads(stored)
    except ValueError:
        return stored
    if not isinstance(identity, dict) or not isinstance(identity.get("name"), str):
        return stored
    options = identity.get("options")
    if not isinstance(options, dict):
        return stored
    kept = result_options(identity["name"], options)
    if len(kept) == len(options):
        return stored
    return canonical({**identity, "options": kept})


def current_protocol_key(metric: str, stored: str) -> str:
    """A stored protocol key as :func:`~normxlogit.bench.runner.protocol_keys` now writes
    it for ``metric``: a setting the metric does not read but its values were once keyed by
    (``keyed_at_defaults``, as ``top_k`` for sanity_spearman, or for token_f1 under the
    stored ``discretize="rationale"``), stored at another value, is keyed at its default
    (the values do not depend on it); any other key, or a metric not registered here, is
    returned as it is."""
    from ..evaluation import Protocol
    from ..evaluation.registry import list_metrics, metric_class

    if metric not in list_metrics():
        return stored
    try:
        settings = json.loads(stored)
    except ValueError:
        return stored
    if not isinstance(settings, dict):
        return stored
    unread = metric_class(metric).keyed_at_defaults(settings)
    if not unread:
        return stored
    defaults = Protocol().to_dict()
    moved = {name: defaults[name] for name in unread if name in settings}
    if all(settings[name] == value for name, value in moved.items()):
        return stored
    return canonical({**settings, **moved})


#: what a method explains (``target``): the prediction, the gold label (a masked LM's
#: gold token), the foil of a minimal pair; any other text names a label or token
TARGET_KINDS = ("prediction", "label", "foil")
#: a method option's fix as a config gives it, ``{name}`` and ``{value}`` filled in
CONFIG_OPTION_FIX = "give the method options = {{ {name} = {value} }}"


@dataclass(frozen=True)
class MethodSpec:
    """A method and its options, shown in tables as ``label``; ``target`` and ``layer``
    say what it explains (None: the prediction, at the final layer), and ``contrast``
    what the target is explained against (None: nothing; ``foil``: a minimal pair's).
    ``segments`` (``"sentences"``, or ``"data"``: each instance's own) adds segment
    scores to its explanations, a token method's reduced by ``segment_reduce``."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    target: str | None = None
    layer: str | int | None = None
    contrast: str | None = None
    segments: str | None = None
    #: how a token method's scores become a segment's (None: a segment method's own)
    segment_reduce: str | None = None

    @property
    def key(self) -> str:
        """What identifies the method's results: its name, options, and what it explains
        (target, layer, contrast and segments, where set), never its label nor its
        execution options (how many rows go through the model at once), which change
        speed, not results, nor an option written at its default value (the cell of
        leaving it out)."""
        identity: dict[str, Any] = {
            "name": self.name,
            "options": result_options(self.name, self.options),
        }
        if self.target is not None:
            identity["target"] = self.target
        if self.layer is not None:
            identity["layer"] = self.layer
        if self.contrast is not None:
            identity["contrast"] = self.contrast
        if self.segments is not None:  # explanations with segment scores: other results
            identity["segments"] = self.segments
        if self.segment_reduce is not None:
            identity["segment_reduce"] = self.segment_reduce
        if (code := method_code(self.name)) is not None:  # a method that is not built in
            identity["code"] = code
        return canonical(identity)

    @property
    def display(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset split (``limit`` takes its first N examples)."""

    name: str
    split: str | None = None
    limit: int | None = None
    path: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    #: a generation data set: how many tokens the model writes after each prompt (what is
    #: explained depends on it, so it is part of the key)
    max_new_tokens: int | None = None
    #: where paths named relative to the config are read from, by the name the key holds
    #: (the path from the config's folder): not part of the key, so a config run from
    #: any folder, or on another machine, finds the cells it stored
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def located(self, name: str) -> str:
        """Where ``name`` (the data set, ``path`` or the ``model`` option) is read from."""
        return self.sources.get(name, name)

    @property
    def key(self) -> str:
        """What identifies an instance's dataset: everything but ``limit``, which only
        chooses how many of the split's instances run (instance ``i`` stays instance ``i``)."""
        identity = {"name": self.name, "split": self.split, "path": self.path}
        identity["options"] = self.options
        if self.max_new_tokens is not None:
            identity["max_new_tokens"] = self.max_new_tokens
        return canonical(identity)


@dataclass(frozen=True)
class Experiment:
    """A model on a dataset, with the methods, metrics and protocol it runs (no metrics:
    explanations and their timings only, as the efficiency experiments need)."""

    name: str
    model: str
    dataset: DatasetSpec
    methods: tuple[MethodSpec, ...]
    metrics: tuple[str, ...]
    protocol: Mapping[str, Any]
    batch_size: int
    #: a cap on the perturbed copies per forward pass while evaluating (None: none)
    rows_per_forward: int | None = None
    #: tokens per forward pass while evaluating (copies x the pass's longest text; None:
    #: the device's default, 4,096 on a CPU and 65,536 on a GPU)
    tokens_per_forward: int | None = None
    #: a memory budget: tokens per forward pass (texts or perturbed copies x the longest);
    #: None: none. Speed and memory only, like the two sizes above
    max_tokens_per_batch: int | None = None
    #: a generation data set (prompts): the model writes up to ``max_new_tokens`` greedily
    #: once per instance, every method explains that same continuation step by step, and
    #: the metrics score every ``evaluate_every``-th step (the pi-Soft paper: 5)
    generation: bool = False
    max_new_tokens: int = 32
    evaluate_every: int = 5
    #: where a model folder named relative to the config is loaded from (None: ``model``'s
    #: name as it is); ``model`` holds its path from the config's folder, the cells' key
    model_source: str | None = field(default=None, compare=False)

    @property
    def model_to_load(self) -> str:
        """The model's name or folder as :func:`normxlogit.load` takes it (no precision)."""
        return self.model_source or split_model_ref(self.model)[0]


@dataclass(frozen=True)
class TableSpec:
    """A methods x (group x column) table of one metric's summary, in the papers' layout.

    ``rows``, ``groups`` and ``columns`` each name an axis: method, dataset, model or
    experiment (``groups = "none"``: one header row only).

    ``metric`` is one metric name or a mapping from a group value (e.g. a dataset name) to
    the metric that group reports (the NormXLogit paper reports STS-B by accuracy).
    """

    title: str
    metric: str | Mapping[str, str]
    rows: str = "method"
    groups: str = "dataset"
    columns: str = "model"
    name: str = ""
    #: add a row with each column's mean over the rows (the pi-Soft tables' "Avg")
    average: bool = False
    #: show each number's standard error over the instances beside it ("0.245 ± 0.021"),
    #: so a reader sees which differences a small run can tell apart
    standard_error: bool = False
    #: a paper's numbers for the nearest setting, shown beside ours: experiment, model
    #: or dataset name (looked up in that order) -> method label -> value
    #: (``[tables.paper]`` in the config)
    paper: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: what the paper's numbers are (e.g. "BERT-base, paper table 1")
    paper_note: str = ""

    def place(
        self, experiment: Experiment, method: MethodSpec
    ) -> tuple[str, tuple[str, str, str]] | None:
        """Where ``method`` of ``experiment`` goes: its row and its column's (group,
        column, metric); None where the table's metric is none of the experiment's."""
        where = {
            "method": method.display,
            "dataset": experiment.dataset.name,
            "model": experiment.model,
            "experiment": experiment.name,
            "none": "",
        }
        metric = (
            self.metric
            if isinstance(self.metric, str)
            else self.metric.get(where["dataset"], self.metric.get(where[self.groups]))
        )
        if metric is None or metric not in experiment.metrics:
            return None
        return where[self.rows], (where[self.groups], where[self.columns], metric)

    def clashes(self, experiments: Sequence[Experiment]) -> tuple[str, str, str] | None:
        """Two experiments, or two methods of one experiment (a table with no method axis),
        whose numbers would land in one cell (the last would hide the other without a
        word): (first, second, the axis to split them by: "experiment" or "method");
        None: none."""
        owners: dict[tuple[str, tuple[str, str, str]], tuple[str, str]] = {}
        for experiment in experiments:
            for method in experiment.methods:
                cell = self.place(experiment, method)
                if cell is None:
                    continue
                other, label = owners.setdefault(cell, (experiment.name, method.display))
                if other != experiment.name:
                    return other, experiment.name, "experiment"
                if label != method.display:
                    return label, method.display, "method"
        return None


@dataclass(frozen=True)
class PlotSpec:
    """A figure: ``curve`` (metric vs ratio / pi per method, one panel per experiment),
    ``time`` (seconds per instance vs input length per method), ``summary`` (each method's
    AOPC / AUC of the metric, methods along the x axis: a sweep over an option),
    ``distribution`` (how each method's attribution values spread) or ``layers`` (a
    per-layer metric such as evidence_ap against the layer, mean with a 95% confidence
    band; a method without layers as a dashed line at its mean, labelled with the layer
    it was explained at: the final one, or the config's ``layer = N``)."""

    metric: str
    kind: str = "curve"
    title: str = ""
    name: str = ""


@dataclass(frozen=True)
class BenchConfig:
    """A whole grid, as read from its file."""

    path: Path
    title: str
    experiments: tuple[Experiment, ...]
    seeds: tuple[int, ...]
    chunk_size: int
    tables: tuple[TableSpec, ...] = ()
    plots: tuple[PlotSpec, ...] = ()
    description: str = ""

    @property
    def default_store(self) -> Path:
        """``<config>.sqlite`` next to the config file."""
        return default_store(self.path)

    def with_sizes(
        self,
        batch_size: int | None = None,
        rows_per_forward: int | None = None,
        max_tokens_per_batch: int | None = None,
        tokens_per_forward: int | None = None,
    ) -> BenchConfig:
        """The same grid with other forward-pass sizes everywhere (a bigger device takes
        more); what is stored does not depend on them. None keeps the config's."""
        sizes = {
            "batch_size": batch_size,
            "rows_per_forward": rows_per_forward,
            "max_tokens_per_batch": max_tokens_per_batch,
            "tokens_per_forward": tokens_per_forward,
        }
        chosen = {key: value for key, value in sizes.items() if value is not None}
        experiments = tuple(replace(e, **chosen) for e in self.experiments)
        return replace(self, experiments=experiments)

    def with_execution(self, settings: Mapping[str, Any]) -> BenchConfig:
        """The same grid with execution options set (a bigger device takes larger passes):
        ``internal_batch_size`` sets it for every method that has it,
        ``value_zeroing.batch_size`` for that method only. Stored results are not keyed by
        them, so the run fills the config's cells. An option no method of the grid has is
        refused with those it has."""
        specs = [spec for e in self.experiments for spec in e.methods]
        chosen = [
            _execution_setting(key, value, specs, self.path) for key, value in settings.items()
        ]
        if not chosen:
            return self
        experiments = tuple(
            replace(e, methods=tuple(_executed(spec, chosen) for spec in e.methods))
            for e in self.experiments
        )
        return replace(self, experiments=experiments)

    def with_dtype(self, dtype: str | None) -> BenchConfig:
        """The same grid with every model in precision ``dtype`` (the store keys results by
        model and precision, so these are new cells); None keeps the config's."""
        if dtype is None:
            return self

        def moved(e: Experiment) -> Experiment:
            model = model_ref(split_model_ref(e.model)[0], dtype)
            name = e.name  # a default name (model:dataset) names the precision run
            if name.startswith(f"{e.model}:"):
                name = model + name[len(e.model) :]
            return replace(e, model=model, name=name)

        experiments = [moved(e) for e in self.experiments]
        # names kept distinct, each still naming the precision stored: two experiments that
        # differ only in their precision are one cell now, the second called NAME#2
        taken = {e.name for e in experiments}
        seen: set[str] = set()
        for i, e in enumerate(experiments):
            if e.name in seen:
                number = 2
                while f"{e.name}#{number}" in taken:
                    number += 1
                experiments[i] = replace(e, name=f"{e.name}#{number}")
                taken.add(experiments[i].name)
            seen.add(experiments[i].name)
        return replace(self, experiments=tuple(experiments))

    def only(self, names: Sequence[str]) -> BenchConfig:
        """The same grid restricted to the experiments called ``names`` (to spread a
        config over machines or sessions); an unknown name is refused with the known ones."""
        known = [e.name for e in self.experiments]
        unknown = [name for name in names if name not in known]
        if unknown:
            raise InvalidInputError(
                f"no experiment named {', '.join(unknown)} in {self.path}; its experiments: "
                f"{', '.join(known)}"
            )
        chosen = tuple(e for e in self.experiments if e.name in names)
        return replace(self, experiments=chosen)

    def only_methods(self, labels: Sequence[str]) -> BenchConfig:
        """The same grid restricted to the methods shown as ``labels`` (a label, or the
        method's name where it has none): to run the cheap methods on more instances while
        the slow ones wait, say. An unknown label is refused with the known ones."""
        known = list(dict.fromkeys(m.display for e in self.experiments for m in e.methods))
        unknown = [label for label in labels if label not in known]
        if unknown:
            raise InvalidInputError(
                f"no method shown as {', '.join(unknown)} in {self.path}; its methods: "
                f"{', '.join(known)}"
            )
        narrowed = (
            replace(e, methods=tuple(m for m in e.methods if m.display in labels))
            for e in self.experiments
        )
        return replace(self, experiments=tuple(e for e in narrowed if e.methods))


#: an execution option set for a run: (method name or None for every method, option, value)
ExecutionSetting = tuple[str | None, str, Any]


def _execution_setting(
    key: str, value: Any, specs: Sequence[MethodSpec], path: Path
) -> ExecutionSetting:
    """``[METHOD.]OPTION`` and its value, checked against the grid's methods: the option
    must be an execution option of one of them, and the value fit every such method."""
    from ..methods.base import get_method, method_class, method_execution_options

    method, _, option = key.rpartition(".")
    name = method_class(method).name if method else None
    targets = [
        spec
        for spec in specs
        if option in method_execution_options(spec.name) and name in (None, spec.name)
    ]
    if not targets:
        known = sorted({f"{s.name}.{o}" for s in specs for o in method_execution_options(s.name)})
        raise InvalidInputError(
            f"{key!r} is no execution option of the methods of {path} (options that change "
            "results belong in the config, where they make new cells); "
            + (f"theirs: {', '.join(known)}" if known else "they have none")
        )
    for spec in targets:  # a value that does not fit is refused before any model loads
        get_method(spec.name, **{**spec.options, option: value})
    return name, option, value


def _executed(spec: MethodSpec, chosen: Sequence[ExecutionSetting]) -> MethodSpec:
    """``spec`` with the chosen execution options its method has (converted to their
    types; its key stays what it was)."""
    from ..common.options import convert_options
    from ..methods.base import method_class, method_execution_options

    own = {
        option: value
        for name, option, value in chosen
        if option in method_execution_options(spec.name) and name in (None, spec.name)
    }
    if not own:
        return spec
    typed = convert_options(method_class(spec.name), own, f"method {spec.name!r} option")
    return replace(spec, options={**spec.options, **typed})


def default_store(config_path: Path) -> Path:
    """Where a config's results go unless ``--store`` says otherwise: next to it."""
    return config_path.with_suffix(".sqlite")


def unseen_config_edge(config_path: Path, default: Path) -> tuple[str, str] | None:
    """Where the config's name begins or ends in a blank or an invisible character that
    a name derived from it (``default``: its store, its report folder) keeps unseen:
    ``(where, rename)``, "begins with a space or tab" and the advice to rename it (or to
    run the config of the clean name, where that exists); None otherwise."""
    from ..common.input_paths import bare_name
    from ..common.outputs import blank_edge

    name = config_path.name
    bare = bare_name(name)
    if not bare or bare_name(default.name) == default.name:  # "g.toml ": g.sqlite, seen
        return None
    end = bare_name(name, start=False) != name
    where = f"{'ends in' if end else 'begins with'} {blank_edge(name, end)}"
    clean = config_path.with_name(bare)
    rename = (
        f"{clean} exists: run that if it is the config meant, else rename this one"
        if clean.exists()
        else f"rename the config to {clean}"
    )
    return where, rename
