"""``run_bench``: plan what the store lacks, hand it to an engine, store what comes back.

Planning asks the store, per cell, which instances lack an explanation and which lack
each metric under the experiment's protocol; only that becomes work. Results are written
by this process alone, one transaction per unit, as they arrive, so engines (the local
loop, Ray actors) never touch the store.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.errors import InvalidInputError
from .engines import Engine, LocalEngine
from .spec import BenchConfig, DatasetSpec, Experiment, canonical
from .store import CellKey, ResultStore
from .work import (
    EVIDENCE_SOURCES,
    GenerationResult,
    GenerationUnit,
    UnitResult,
    WorkUnit,
    split_chunks,
)


@dataclass
class CellPlan:
    """One cell's state: how many instances it has, how many are done, what is left."""

    experiment: Experiment
    key: CellKey
    label: str
    total: int
    done: int
    units: list[WorkUnit] = field(default_factory=list)
    skipped: str | None = None


@dataclass
class BenchReport:
    """What a run did: units computed, seconds in explain/evaluate, seconds in all."""

    units: int = 0
    #: units computed here that another run on the same store had stored first (the
    #: store keeps one copy; they are not counted in ``units``)
    stored_elsewhere: int = 0
    compute_seconds: float = 0.0
    load_seconds: float = 0.0
    wall_seconds: float = 0.0
    skipped: dict[str, str] = field(default_factory=dict)
    #: units left for a later run because they could not finish before the deadline
    deferred: int = 0
    #: per cell, the instances whose target is their contrast (nothing explained; stored
    #: with no metric values)
    contrast_is_target: dict[str, list[int]] = field(default_factory=dict)

    @property
    def overhead(self) -> float:
        """Wall time (model loading left out) over the explain + evaluate time it contains:
        1.0 means the bench added nothing (planning, store writes, progress)."""
        if not self.compute_seconds:
            return float("nan")
        return (self.wall_seconds - self.load_seconds) / self.compute_seconds


@dataclass(frozen=True)
class LoadedDataset:
    texts: dict[int, Any]
    labels: dict[int, Any]
    rows: dict[int, int | None]
    label_names: tuple[str, ...]
    #: evidence words and foils of the instances that have them (evidence alignment)
    evidence: dict[int, tuple[int, ...]] = field(default_factory=dict)
    foils: dict[int, str] = field(default_factory=dict)
    #: the segments and evidence segments of the instances that have them (context
    #: attribution: boolq with passage="sentences")
    segments: dict[int, tuple[str, ...]] = field(default_factory=dict)
    evidence_segments: dict[int, tuple[int, ...]] = field(default_factory=dict)
    #: each instance's line in its data file (1-based; None where the source has none)
    lines: dict[int, int | None] = field(default_factory=dict)


def load_examples(spec: DatasetSpec, limit: int | None) -> LoadedDataset:
    """The dataset's first ``limit`` instances (all when None), numbered from 0."""
    from ..data import dataset_info, load_dataset

    options = dict(spec.options)
    if "model" in options:  # a data set built for the experiment model's tokenizer
        from ..loading import load_tokenizer

        options["tokenizer"] = load_tokenizer(spec.located(options.pop("model")))
    name = spec.located(spec.name)
    path = None if spec.path is None else spec.located(spec.path)
    examples = load_dataset(name, spec.split, limit=limit, path=path, **options)
    try:
        label_names = tuple(dataset_info(name).labels)
    except InvalidInputError:
        if Path(name).is_file():  # a user's file whose labels no model can read
            raise
        label_names = ()
    except Exception:  # a user's file: labels are used as the file gives them
        label_names = ()
    return LoadedDataset(
        texts={i: e.text for i, e in enumerate(examples)},
        labels={i: e.label for i, e in enumerate(examples)},
        rows={i: getattr(e, "row", None) for i, e in enumerate(examples)},
        lines={i: getattr(e, "line", None) for i, e in enumerate(examples)},
        label_names=label_names,
        evidence={i: e.evidence for i, e in enumerate(examples) if e.evidence is not None},
        foils={i: e.foil for i, e in enumerate(examples) if e.foil is not None},
        segments={i: e.segments for i, e in enumerate(examples) if e.segments is not None},
        evidence_segments={
            i: e.evidence_segments
            for i, e in enumerate(examples)
            if e.evidence_segments is not None
        },
    )


def check_segment_data(experiment: Experiment, dataset: LoadedDataset) -> None:
    """An experiment with ``segments = "data"`` needs every instance's segments, and one
    with segment plausibility metrics their evidence segments: refused, before any model
    loads, when the data set does not give them."""
    from ..evaluation.registry import metric_info

    if not any(method.segments == "data" for method in experiment.methods):
        return
    name, where = experiment.dataset.name, f"experiment {experiment.name}"
    boolq = (
        'boolq with options = { passage = "sentences" }, or a data file with a segments '
        "column (and evidence_segments)"
    )
    lacking = next((i for i in sorted(dataset.texts) if i not in dataset.segments), None)
    if lacking is not None:
        raise InvalidInputError(
            f'{where}: segments = "data" takes each instance\'s own segments, and {name} gives '
            f'instance {lacking} none; read {boolq}, or use segments = "sentences"'
        )
    wanted = [m for m in experiment.metrics if metric_info(m).evidence == "segments"]
    lacking = next((i for i in sorted(dataset.texts) if i not in dataset.evidence_segments), None)
    if wanted and lacking is not None:
        raise InvalidInputError(
            f"{where}: metric {wanted[0]} needs each instance's evidence segments, and {name} "
            f"gives instance {lacking} none; read {boolq}, "
            "or take the segment_* metrics out"
        )


def annotations(dataset: LoadedDataset, experiment: Experiment | None = None) -> dict[int, str]:
    """Each instance's evidence words, evidence segments, foil and own segments as
    canonical JSON (only those it has; none for a data set that gives none of them), so
    the store can tell when they change between runs as it tells a changed text or label.
    With ``experiment``, only the parts its metrics or methods read: a part no stored value
    read may be corrected without refusing the store."""
    sources = {
        "evidence": dataset.evidence,
        "evidence_segments": dataset.evidence_segments,
        "foil": dataset.foils,
        "segments": dataset.segments,
    }
    if experiment is not None:
        read = read_annotations(experiment)
        sources = {key: given for key, given in sources.items() if key in read}
    if not any(sources.values()):
        return {}
    return {
        instance: json.dumps(
            {key: _plain(given[instance]) for key, given in sources.items() if instance in given},
            sort_keys=True,
        )
        for instance in dataset.texts
    }


def read_annotations(experiment: Experiment) -> set[str]:
    """Which of an instance's evidence words, evidence segments, foil and segments the
    experiment's values read: the evidence (plausibility) metrics' evidence, the foil of a
    method whose target or contrast is "foil", and the data's own segments where a method
    explains them (``segments = "data"``: its explanations and segment metrics)."""
    from ..evaluation.registry import metric_info

    read = set()
    for metric in experiment.metrics:
        info = metric_info(metric)
        if info.needs_evidence:
            read.add("evidence_segments" if info.evidence == "segments" else "evidence")
    if any("foil" in (method.target, method.contrast) for method in experiment.methods):
        read.add("foil")
    if any(method.segments == "data" for method in experiment.methods):
        read.add("segments")
    return read


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def check_evidence_data(experiment: Experiment, dataset: LoadedDataset) -> None:
    """An experiment whose metrics read evidence words needs them on every instance:
    refused when its data set is loaded, before any experiment runs, not at its turn after
    the earlier experiments have taken their time."""
    from ..evaluation.registry import metric_info

    wanted = [
        m
        for m in experiment.metrics
        if metric_info(m).needs_evidence and metric_info(m).evidence != "segments"
    ]
    lacking = next((i for i in sorted(dataset.texts) if i not in dataset.evidence), None)
    if not wanted or lacking is None:
        return
    lead = f"experiment {experiment.name}: metric {wanted[0]} needs each instance's evidence words"
    line = dataset.lines.get(lacking)
    column = _evidence_column(experiment.dataset) if line is not None else None
    if not dataset.evidence and column is not None:  # the column is there, every cell empty
        raise InvalidInputError(
            f"{lead}, and the {column} column of {experiment.dataset.name} is empty in every "
            f"row (line {line}, instance {lacking}, first); an empty cell is no evidence, so "
            f"{_empty_cell_fix(column, every=True)}"
        )
    if dataset.evidence and line is not None:  # a file with evidence, one of whose cells is empty
        raise InvalidInputError(
            f"{lead}, and {experiment.dataset.name}, line {line} (instance {lacking}) gives "
            f"none; an empty cell is no evidence, so {_empty_cell_fix(column, every=False)} "
            "(left out, or scored with "
            '[protocol] empty_rationale = "score")'
        )
    raise InvalidInputError(
        f"{lead}, and {experiment.dataset.name} gives instance {lacking} none; read a data "
        f"set that gives them ({EVIDENCE_SOURCES}), or take the evidence metrics out"
    )


def check_label_data(experiment: Experiment, dataset: LoadedDataset) -> None:
    """A method whose target or contrast is "label", or a metric that scores against the
    gold label, needs every instance's label: refused when the data set is loaded (bench
    status and run, before any cell), not explained for the prediction (or against
    nothing) and stored as if for the gold label."""
    from ..data.files import LABEL_COLUMNS, label_column_case

    lacking = next((i for i in sorted(dataset.labels) if dataset.labels[i] is None), None)
    if lacking is None:
        _check_label_kinds(experiment, dataset)
        return
    reader = _label_reader(experiment)
    if reader is None:
        return
    what, fix, ending = reader
    name, line = experiment.dataset.name, dataset.lines.get(lacking)
    if all(label is None for label in dataset.labels.values()):
        spec = experiment.dataset
        case = label_column_case(Path(spec.located(spec.path or spec.name)))
        gives = f"{name} gives no gold labels" + (
            f" (a data file gives them in a {' / '.join(LABEL_COLUMNS)} column{case})"
            if line is not None
            else ""
        )
    else:
        where = f"line {line}, instance {lacking}" if line is not None else f"instance {lacking}"
        gives = f"{name} gives none for {where}"
    raise InvalidInputError(
        f"experiment {experiment.name}: {what} need{ending} each instance's gold label, "
        f"and {gives}; "
        f"add the labels to the data, or {fix}"
    )


def _check_label_kinds(experiment: Experiment, dataset: LoadedDataset) -> None:
    """A classifier's gold labels, read by a label metric or a ``"label"`` target or
    contrast, are label names or whole indices: a file that writes them as floats
    (``1.0``) is refused in the config's terms (bench status and run, before any cell),
    not by the evaluation's Python-API words after the explaining. A regressor's (known
    without loading it) are scores, and a hub model's head is checked once it loads."""
    from .config import _known_outputs, toml_phrase

    reader = _label_reader(experiment)
    if reader is None:
        return
    head = _known_outputs(experiment.model, experiment.model_source)
    if head is not None and head[0] == "regression":
        _check_gold_values(experiment, dataset, reader)
        return
    odd = next(
        (
            (i, label)
            for i, label in sorted(dataset.labels.items())
            if isinstance(label, (float, bool))
        ),
        None,
    )
    if head is None:
        return
    if odd is None:
        if head[0] == "classification":
            _check_label_indices(experiment, dataset, reader, head[1])
        return
    instance, label = odd
    line = dataset.lines.get(instance)
    where = f"line {line}, instance {instance}" if line is not None else f"instance {instance}"
    fix = (
        "write them in the file as the model names its labels (or as whole label indices "
        "from 0, e.g. 1, not 1.0)"
        if head[0] == "classification"
        else "a language model has no label indices: write each one in the file as the token "
        'to explain (e.g. "positive")'
    )
    raise InvalidInputError(
        f"experiment {experiment.name}: {reader[0]} read{reader[2]} each text's gold "
        f"label, which must be a label name or a whole label index; "
        f"{experiment.dataset.name} gives "
        f"{toml_phrase(label)} at {where}: {fix}, or {reader[1]}"
    )


def _check_label_indices(
    experiment: Experiment, dataset: LoadedDataset, reader: tuple[str, str, str], count: int
) -> None:
    """A classifier's gold labels (its head known without loading it) are all indices of
    its labels or all names: a file mixing the two, or an index the model lacks, is
    refused before any cell naming the line (the first of each way, where mixed)."""
    from .config import _classifier_labels

    names = _classifier_labels(experiment.model, experiment.model_source)
    listed = ", ".join(f"{i}={name}" for i, name in enumerate(names)) if names else ""
    source = experiment.dataset.name

    def at(instance: int) -> str:
        line = dataset.lines.get(instance)
        return f"line {line}" if line is not None else f"instance {instance}"

    indices = [
        (i, label)
        for i, label in sorted(dataset.labels.items())
        if isinstance(label, int) and not isinstance(label, bool)
    ]
    named = next(
        ((i, label) for i, label in sorted(dataset.labels.items()) if isinstance(label, str)),
        None,
    )
    if indices and named is not None:
        (first, index), (other, name) = indices[0], named
        raise InvalidInputError(
            f"experiment {experiment.name}: {source} gives the gold labels both as indices "
            f"({at(first)}: {index}) and as names ({at(other)}: {name}); write them all one "
            f"way: as model {experiment.model} names its labels"
            + (f" ({', '.join(names)})" if names else "")
            + f" or as their indices (0 to {count - 1})"
        )
    bad = next(((i, label) for i, label in indices if not 0 <= label < count), None)
    if bad is None:
        return
    instance, label = bad
    line = dataset.lines.get(instance)
    where = f"line {line}, instance {instance}" if line is not None else f"instance {instance}"
    raise InvalidInputError(  # the experiment's name already holds the model and data paths
        f"experiment {experiment.name}: label index {label} (the gold label of "
        f"{Path(source).name} {where}) does not exist; the model has {count} labels"
        + (f": {listed}" if listed else "")
        + f"; write it as a label name or an index from 0 to {count - 1}, leave that text "
        f"out, or {reader[1]}"
    )


def _check_gold_values(
    experiment: Experiment, dataset: LoadedDataset, reader: tuple[str, str, str]
) -> None:
    """A regressor's gold values (known a regressor without loading it) are finite
    numbers: a string, a boolean, NaN or infinity is refused before any cell, naming its
    line and instance, not when its chunk is scored after the earlier ones' work."""
    import math

    from .config import toml_phrase

    for instance, label in sorted(dataset.labels.items()):
        if isinstance(label, (int, float)) and not isinstance(label, bool):
            if math.isfinite(label):
                continue
            given = "NaN, a missing value" if math.isnan(label) else f"{label:+}inity".lstrip("+")
        else:
            given = toml_phrase(label)
        line = dataset.lines.get(instance)
        where = f"line {line}, instance {instance}" if line is not None else f"instance {instance}"
        raise InvalidInputError(
            f"experiment {experiment.name}: {reader[0]} score{reader[2]} model "
            f"{experiment.model}, a regressor, against each text's gold value, which must be "
            f"a finite number; "
            f"{experiment.dataset.name}, {where} gives {given}: write a number there or "
            f"leave that text out, or {reader[1]}"
        )


def _label_reader(experiment: Experiment) -> tuple[str, str, str] | None:
    """What of ``experiment`` reads the gold labels (each method's target or contrast
    "label", each metric that needs labels), all named at once, how to do without each,
    and the verb's ending ("s" for one reader, "" for several); or None."""
    from ..evaluation.registry import metric_info

    readers: list[str] = []
    fixes: list[str] = []
    for method in experiment.methods:
        if method.target == "label":
            readers.append(f'method {method.display} target = "label"')
            fixes.append(f'set method {method.display} target = "prediction"')
        if method.contrast == "label":
            readers.append(f'method {method.display} contrast = "label"')
            fixes.append(
                f"take contrast out of method {method.display} (or contrast with a label name)"
            )
    metrics = [m for m in experiment.metrics if metric_info(m).needs_labels]
    if metrics:
        readers.append(f"metric{'s' if len(metrics) > 1 else ''} {', '.join(metrics)}")
        fixes.append(f"take {', '.join(metrics)} out of the experiment's metrics")
    if not readers:
        return None
    ending = "s" if len(readers) == 1 and len(metrics) <= 1 else ""
    return _joined(readers), _joined(fixes), ending


def _joined(parts: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _empty_cell_fix(column: str | None, every: bool) -> str:
    """How to fill an empty evidence cell of ``column`` (``every``: each row's, not one)."""
    if column == "evidence_mask":
        whose = "each" if every else "its"
        return (
            f"give one 0 or 1 per word of {whose} text, all 0s for a text whose rationale is empty"
        )
    whose = "each text its" if every else "its"
    return (
        f'give {whose} word indices (e.g. "0 3"), or write [] for a text whose rationale is empty'
    )


def _evidence_column(spec: DatasetSpec) -> str | None:
    """The evidence column a data file's first row has (``evidence`` or
    ``evidence_mask``), filled or not; None for a built-in data set or a file without."""
    from ..data.files import EVIDENCE_COLUMNS, data_format, records

    path = Path(spec.located(spec.path or spec.name))
    suffix = data_format(path)
    if not path.is_file() or suffix is None:
        return None
    first = next(records(path, suffix), None)
    return next((key for key in EVIDENCE_COLUMNS if first and key in first[1]), None)


#: ReAGent's ``sampler='uniform'`` as a bench config gives it
CONFIG_SAMPLER_FIX = 'give the method options = { sampler = "uniform" }'


def tagger_refusal(
    config: BenchConfig,
    store: ResultStore,
    limit: int | None = None,
    load: Callable[[DatasetSpec, int | None], LoadedDataset] = load_examples,
) -> str | None:
    """Why a ReAGent cell with instances left to explain cannot run here (no spaCy, and
    no cached part-of-speech groups of its model's tokenizer), known before any work:
    at its turn, it would stop a run after the cells before it (hours, in a grid). A cell
    done, or found not to apply, needs no tagger; None: nothing stops the run."""
    from ..methods import get_method
    from ..methods.reagent import uses_pos_sampler
    from ..methods.reagent.samplers import pos_sampler_refusal, tagger_missing

    if tagger_missing() is None:
        return None
    for experiment in config.experiments:
        pos = [m for m in experiment.methods if uses_pos_sampler(get_method(m.name, **m.options))]
        if not pos:
            continue
        dataset = load(experiment.dataset, _smaller(experiment.dataset.limit, limit))
        waiting = [
            method
            for method in pos
            for seed in config.seeds
            if _unexplained(
                store, CellKey(experiment.model, experiment.dataset.key, method.key, seed), dataset
            )
        ]
        if not waiting:
            continue
        reason = pos_sampler_refusal(None, CONFIG_SAMPLER_FIX)
        if reason is None:  # some groups are cached: are this tokenizer's?
            from ..loading import load_tokenizer

            tokenizer = load_tokenizer(experiment.model_to_load)
            reason = pos_sampler_refusal(tokenizer, CONFIG_SAMPLER_FIX)
        if reason is not None:
            return f"experiment {experiment.name}, method {waiting[0].display}: {reason}"
    return None


def _unexplained(store: ResultStore, key: CellKey, dataset: LoadedDataset) -> bool:
    """Whether the run would explain instances of cell ``key`` (not done, nor N/A)."""
    return store.skipped(key) is None and bool(set(dataset.texts) - store.explained(key))


def protocol_keys(experiment: Experiment) -> dict[str, str]:
    """Per metric, the protocol settings its values depend on (defaults included, the seed
    left out: it is a key of its own) and the metric's revision (a metric that is not built
    in: the fingerprint of its code), so changing one setting recomputes only the metrics
    that read it, and a metric whose code changes is computed again. A setting a metric
    was once keyed by but does not read (``keyed_at_defaults``: ``pis`` for soft_nc,
    ``top_k`` for token_f1 under ``discretize="rationale"``) is keyed at its default, so
    stores written before find their values under the same key."""
    from ..common.code_identity import code_fingerprint
    from ..evaluation import Protocol
    from ..evaluation.protocol import LATER_SETTINGS
    from ..evaluation.registry import metric_class

    settings = Protocol().with_options(**experiment.protocol).to_dict()
    settings.pop("seed")
    defaults = Protocol().to_dict()
    keys = {}
    for metric in experiment.metrics:
        scorer = metric_class(metric)
        reads = scorer.protocol_settings
        chosen = (
            dict(settings) if reads is None else {k: settings[k] for k in reads if k in settings}
        )
        chosen.update({name: defaults[name] for name in scorer.keyed_at_defaults(settings)})
        for name in (*scorer.keyed_unless_default, *LATER_SETTINGS):
            if name in chosen and chosen[name] == defaults[name]:
                chosen.pop(name)
        if scorer.revision:  # values stored under an earlier definition are not reused
            chosen = {**chosen, "revision": scorer.revision}
        if (code := code_fingerprint(scorer)) is not None:  # not built in: keyed by its code
            chosen = {**chosen, "code": code}
        if experiment.generation:  # which steps are scored
            chosen = {**chosen, "evaluate_every": experiment.evaluate_every}
        keys[metric] = canonical(chosen)
    return keys


#: the planned work of explaining an instance (beside its (metric, protocol key) pairs)
_EXPLAIN = "explain"


def plan(
    config: BenchConfig,
    store: ResultStore,
    limit: int | None = None,
    load: Callable[[DatasetSpec, int | None], LoadedDataset] = load_examples,
    *,
    with_units: bool = True,
) -> list[CellPlan]:
    """Every cell of ``config`` with the work the store still lacks (``with_units=False``:
    only the counts, for ``bench status``, and the store is only read).

    Two experiments on one model and data set share cells (the key leaves ``limit`` out):
    what an earlier experiment's units compute is not planned again for a later one, whose
    bar counts it as done, so this run never computes the same value twice."""
    cells = []
    #: per cell, per instance: the work units of this plan compute already ("explain",
    #: and each (metric, protocol key))
    claimed: dict[CellKey, dict[int, set]] = {}
    for experiment in config.experiments:
        wanted = _smaller(experiment.dataset.limit, limit)
        dataset = load(experiment.dataset, wanted)
        check_segment_data(experiment, dataset)
        check_evidence_data(experiment, dataset)
        check_label_data(experiment, dataset)
        dataset_key = experiment.dataset.key
        rows = [(i, dataset.rows[i], dataset.texts[i], dataset.labels[i]) for i in dataset.texts]
        # counting (bench status) writes nothing: a run may be writing the store meanwhile
        record = store.add_instances if with_units else store.check_instances
        record(dataset_key, rows, annotations(dataset, experiment))
        instances = sorted(dataset.texts)
        protocols = protocol_keys(experiment)
        continuations = None
        if experiment.generation:
            continuations = store.generations(
                experiment.model, dataset_key, experiment.max_new_tokens
            )
        for method in experiment.methods:
            for seed in config.seeds:
                key = CellKey(experiment.model, dataset_key, method.key, seed)
                cell = CellPlan(
                    experiment,
                    key,
                    f"{experiment.name} {method.display} seed {seed}",
                    total=len(instances),
                    done=0,
                )
                cells.append(cell)
                cell.skipped = store.skipped(key)
                if cell.skipped:
                    continue
                explained = store.explained(key)
                evaluated = store.evaluated(key)
                planned = claimed.setdefault(key, {}) if with_units else {}
                missing = {
                    m: [
                        i
                        for i in instances
                        if i not in evaluated.get((m, protocols[m]), ())
                        and (m, protocols[m]) not in planned.get(i, ())
                    ]
                    for m in experiment.metrics
                }
                lacking = {i for i in instances if i not in explained}
                lacking -= {i for i in lacking if _EXPLAIN in planned.get(i, ())}
                lacking.update(i for v in missing.values() for i in v)
                unfinished = sorted(lacking)
                cell.done = len(instances) - len(unfinished)
                if not with_units:
                    continue
                for chunk in split_chunks(unfinished, config.chunk_size):
                    chosen = set(chunk)
                    to_explain = tuple(i for i in chunk if i not in explained)
                    metrics = {m: tuple(i for i in v if i in chosen) for m, v in missing.items()}
                    reuse = {i for v in metrics.values() for i in v} - set(to_explain)
                    for i in to_explain:
                        planned.setdefault(i, set()).add(_EXPLAIN)
                    for m, chosen_instances in metrics.items():
                        for i in chosen_instances:
                            planned.setdefault(i, set()).add((m, protocols[m]))
                    cell.units.append(
                        WorkUnit(
                            cell=key,
                            experiment=experiment.name,
                            model=experiment.model,
                            model_source=experiment.model_source,
                            experiment_methods=experiment.methods,
                            source=experiment.dataset.name,
                            lines={i: dataset.lines.get(i) for i in chunk},
                            method=method,
                            seed=seed,
                            protocol=dict(experiment.protocol),
                            protocol_keys=protocols,
                            batch_size=experiment.batch_size,
                            rows_per_forward=experiment.rows_per_forward,
                            tokens_per_forward=experiment.tokens_per_forward,
                            max_tokens_per_batch=experiment.max_tokens_per_batch,
                            instances=chunk,
                            texts={i: dataset.texts[i] for i in chunk},
                            labels={i: dataset.labels[i] for i in chunk},
                            label_names=dataset.label_names,
                            evidence={
                                i: dataset.evidence[i] for i in chunk if i in dataset.evidence
                            },
                            foils={i: dataset.foils[i] for i in chunk if i in dataset.foils},
                            segments={
                                i: dataset.segments[i] for i in chunk if i in dataset.segments
                            },
                            evidence_segments={
                                i: dataset.evidence_segments[i]
                                for i in chunk
                                if i in dataset.evidence_segments
                            },
                            explain=to_explain,
                            metrics={m: v for m, v in metrics.items() if v},
                            stored=store.explanations(key, reuse) if reuse else {},
                            continuations=None
                            if continuations is None
                            else {i: continuations[i] for i in chunk if i in continuations},
                            evaluate_every=experiment.evaluate_every,
                        )
                    )
    return cells


def plan_generations(
    config: BenchConfig,
    store: ResultStore,
    limit: int | None = None,
    load: Callable[[DatasetSpec, int | None], LoadedDataset] = load_examples,
) -> list[GenerationUnit]:
    """The continuations the generation experiments still lack, in chunks: the model
    writes each once, before any method explains it."""
    units: list[GenerationUnit] = []
    seen: set[tuple[str, str, int]] = set()
    for experiment in config.experiments:
        key = (experiment.model, experiment.dataset.key, experiment.max_new_tokens)
        if not experiment.generation or key in seen:
            continue
        seen.add(key)
        dataset = load(experiment.dataset, _smaller(experiment.dataset.limit, limit))
        stored = store.generations(*key)
        missing = [i for i in sorted(dataset.texts) if i not in stored]
        units.extend(
            GenerationUnit(
                experiment.model,
                experiment.dataset.key,
                experiment.max_new_tokens,
                chunk,
                {i: dataset.texts[i] for i in chunk},
                experiment.model_source,
            )
            for chunk in split_chunks(missing, config.chunk_size)
        )
    return units


def _smaller(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def limits_below(
    config: BenchConfig, limit: int | None, *, generation: bool = False
) -> list[tuple[str, int]]:
    """(experiment name, its own ``limit``) for every experiment whose ``limit`` is below
    ``limit`` (a run's ``--limit`` only caps: such an experiment keeps its own);
    ``generation``: only the generation experiments (what ``bench generate`` writes)."""
    if limit is None:
        return []
    return [
        (experiment.name, experiment.dataset.limit)
        for experiment in config.experiments
        if experiment.dataset.limit is not None
        and experiment.dataset.limit < limit
        and (experiment.generation or not generation)
    ]


def generate_continuations(
    config: BenchConfig,
    store: ResultStore,
    engine: Engine | None = None,
    *,
    limit: int | None = None,
) -> BenchReport:
    """Write only the continuations the generation experiments of ``config`` lack (what a
    machine without a GPU can do ahead of a GPU run that then only explains and scores)."""
    started = time.perf_counter()
    report = BenchReport()
    units = plan_generations(config, store, limit)
    report.units, report.stored_elsewhere = _generate(units, store, engine or LocalEngine(), report)
    report.wall_seconds = time.perf_counter() - started
    return report


def _generate(
    units: list[GenerationUnit], store: ResultStore, engine: Engine, report: BenchReport
) -> tuple[int, int]:
    """Write ``units``' continuations; (chunks stored, chunks another run stored first)."""
    counts = [0, 0]

    def keep(result: GenerationResult) -> None:
        unit = result.unit
        new = store.add_generations(
            unit.model, unit.dataset, unit.max_new_tokens, result.generated, result.fingerprint
        )
        counts[0 if new else 1] += 1
        report.load_seconds += result.load_seconds

    engine.run(units, keep)  # type: ignore[arg-type]
    return counts[0], counts[1]


class Deadline:
    """A time by which a run must be done: a unit is started only when its predicted time
    fits in what is left.

    A unit's time is predicted from the units of its cell done in this run (the slowest
    seconds per instance), else from its experiment's slowest cell times two (the
    perturbed passes, the same for every method of an experiment, are most of the cost);
    a unit with neither is started on trust, so a slot's first unit of a new experiment
    should be small, and whoever runs under a hard limit still stops the process at it.
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.at = clock() + seconds
        self.per_instance: dict[CellKey, float] = {}
        self.experiment_of: dict[CellKey, str] = {}

    def remaining(self) -> float:
        return self.at - self.clock()

    def predict(self, unit: WorkUnit) -> float | None:
        """Predicted seconds of ``unit``, or None when nothing in this run tells."""
        rate = self.per_instance.get(unit.cell)
        if rate is None:
            same = [
                r
                for key, r in self.per_instance.items()
                if self.experiment_of.get(key) == unit.experiment
            ]
            rate = 2 * max(same) if same else None
        return None if rate is None else rate * len(unit.instances)

    def fits(self, unit: WorkUnit) -> bool:
        predicted = self.predict(unit)
        left = self.remaining()
        return left > 0 and (predicted is None or predicted <= left)

    def record(self, unit: WorkUnit, seconds: float) -> None:
        rate = seconds / max(1, len(unit.instances))
        self.per_instance[unit.cell] = max(rate, self.per_instance.get(unit.cell, 0.0))
        self.experiment_of[unit.cell] = unit.experiment


def _progress(progress: Any) -> Any:
    """``progress`` as run_bench uses it: False and None show nothing, True the bars; any
    other value must take the three calls, refused now rather than after the run starts."""
    if progress is None or progress is False:
        return None
    if progress is True:
        from .progress import BenchProgress

        return BenchProgress()
    missing = [name for name in ("start", "advance", "finish") if not hasattr(progress, name)]
    if missing:
        raise InvalidInputError(
            f"progress is {type(progress).__name__}, without {', '.join(missing)}(); give True "
            "(bars), False (nothing) or an object with start, advance and finish (see "
            "normxlogit.bench.progress.BenchProgress)"
        )
    return progress


def run_bench(
    config: BenchConfig,
    store: ResultStore,
    engine: Engine | None = None,
    *,
    limit: int | None = None,
    progress: Any = None,
    deadline: Deadline | None = None,
    interleave: bool | None = None,
) -> BenchReport:
    """Compute and store everything ``config`` asks for that ``store`` lacks.

    ``progress`` receives ``start(cells)``, ``advance(cell, n)`` and ``finish()`` calls
    (see :class:`~normxlogit.bench.progress.BenchProgress`); None or False shows nothing,
    True the command line's bars.
    ``deadline``: start no unit that is not predicted to finish before it (the rest is
    left for a later run and counted in ``deferred``). ``interleave`` (the default with a
    deadline): chunk by chunk across the methods of an experiment rather than method by
    method, so that a run cut short leaves every method with the same instances done.
    """
    progress = _progress(progress)
    if (reason := tagger_refusal(config, store, limit)) is not None:
        raise InvalidInputError(reason)  # before any model writes, explains or scores
    engine = engine or LocalEngine()
    started = time.perf_counter()
    report = BenchReport()
    interleave = deadline is not None if interleave is None else interleave
    generations = plan_generations(config, store, limit)
    if generations and deadline is not None:
        raise InvalidInputError(
            "a run with a deadline does not generate: the continuations of "
            f"{len(generations)} chunk(s) are missing; write them first (normxlogit bench "
            "generate CONFIG), then run"
        )
    if generations:  # first what the models write, then every method explains it
        _generate(generations, store, engine, report)
    cells = plan(config, store, limit)
    # two experiments on one model and data set share the store's cells (same CellKey):
    # a unit belongs to its own experiment's plan, so progress names and counts it right
    by_key = {(cell.experiment.name, cell.key): cell for cell in cells}
    sharing: dict[CellKey, list[CellPlan]] = {}
    for cell in cells:
        sharing.setdefault(cell.key, []).append(cell)
    run = store.start_run(str(config.path), engine.name)
    if progress is not None:
        progress.start(cells)

    def deliver(result: UnitResult) -> None:
        cell = by_key[(result.unit.experiment, result.unit.cell)]
        stored = True  # False: another run on this store was first, and its copy is kept
        if result.skipped is not None:
            store.mark_skipped(result.unit.cell, result.skipped, result.fingerprint)
            for other in sharing[result.unit.cell]:  # the method does not apply to the model
                fresh = other.skipped is None
                other.skipped = result.skipped
                report.skipped[other.label] = result.skipped
                if other is not cell and fresh and progress is not None:
                    progress.advance(other, 0)  # its bar says N/A too
        else:
            stored = store.add_unit(
                result.unit.cell, result.explanations, result.evaluations, result.fingerprint
            )
            report.compute_seconds += result.compute_seconds
            if result.contrast_is_target:
                flagged = report.contrast_is_target.setdefault(cell.label, [])
                flagged.extend(result.contrast_is_target)
            if deadline is not None:
                deadline.record(result.unit, result.compute_seconds)
        report.load_seconds += result.load_seconds
        if stored:
            report.units += 1
        else:
            report.stored_elsewhere += 1
        if progress is not None:
            progress.advance(cell, len(result.unit.instances))

    def ordered() -> Iterator[tuple[CellPlan, WorkUnit]]:
        if not interleave:
            yield from ((cell, unit) for cell in cells for unit in cell.units)
            return
        experiments = {e.name: i for i, e in enumerate(config.experiments)}
        ranked = sorted(
            ((experiments[cell.experiment.name], chunk, c), cell, unit)
            for c, cell in enumerate(cells)
            for chunk, unit in enumerate(cell.units)
        )
        yield from ((cell, unit) for _, cell, unit in ranked)

    def pending() -> Iterator[WorkUnit]:
        for cell, unit in ordered():
            if cell.skipped is not None:  # a method found not to apply stops its cell
                continue
            if deadline is not None and not deadline.fits(unit):
                report.deferred += 1
                continue
            yield unit

    try:
        engine.run(pending(), deliver)
    finally:
        if progress is not None:
            progress.finish()
    store.finish_run(run)
    report.wall_seconds = time.perf_counter() - started
    return report
