"""Units of bench work and the worker that computes them, whatever engine runs it.

A :class:`WorkUnit` is a chunk of one cell's instances (a method of an experiment under
one seed) with what is still missing for them: explanations to compute and, per metric,
instances to score. It carries the texts and gold labels, so a worker needs only the
model (a Ray actor loads it once). The :class:`Worker` returns plain data
(:class:`UnitResult`) that the one process owning the store writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import InvalidInputError, UnsupportedModelError
from ..common.numbering import texts_named
from ..common.targets import ALL, without_index_advice
from ..data.files import segment_spec
from .model_refs import split_model_ref
from .spec import CONFIG_OPTION_FIX, MethodSpec
from .store import CellKey, StoredEvaluation, StoredExplanation


@dataclass(frozen=True)
class WorkUnit:
    """Part of a cell: ``instances`` with their texts and the work they still need."""

    cell: CellKey
    experiment: str
    model: str  # as the cells store it
    method: MethodSpec
    seed: int
    protocol: Mapping[str, Any]  # Protocol settings but the seed
    protocol_keys: Mapping[str, str]  # metric -> the settings its values depend on
    batch_size: int
    instances: tuple[int, ...]
    texts: Mapping[int, Any]
    labels: Mapping[int, Any]
    #: the dataset's label names in id order (empty: labels are used as they are)
    label_names: tuple[str, ...] = ()
    explain: tuple[int, ...] = ()
    metrics: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    #: stored explanation payloads of instances that need only metrics
    stored: Mapping[int, dict] = field(default_factory=dict)
    #: a cap on the perturbed copies per forward pass in evaluate (None: none)
    rows_per_forward: int | None = None
    #: tokens per forward pass in evaluate (None: the device's default)
    tokens_per_forward: int | None = None
    #: a memory budget in tokens per forward pass (explaining and evaluating); None: none
    max_tokens_per_batch: int | None = None
    #: a generation experiment: each instance's continuation (the ids the model wrote),
    #: explained step by step; metrics score every ``evaluate_every``-th step
    continuations: Mapping[int, Sequence[int]] | None = None
    evaluate_every: int = 5
    #: evidence words (indices into each text's whitespace words) and minimal-pair foils
    evidence: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    foils: Mapping[int, str] = field(default_factory=dict)
    #: each instance's own segments (``segments = "data"``) and the indices of its
    #: evidence segments among them (the segment plausibility metrics)
    segments: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    evidence_segments: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    #: the folder ``model`` loads from when it differs (Experiment.model_source)
    model_source: str | None = None
    #: every method of the unit's experiment: their layers, targets and contrasts are
    #: checked against the model as soon as it loads, before the first is computed
    experiment_methods: tuple[MethodSpec, ...] = ()
    #: the data set as the config names it, and each instance's line in its file (where
    #: a file gives one): what messages about a text point at
    source: str = ""
    lines: Mapping[int, int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class GenerationUnit:
    """Instances of a generation experiment whose continuation is not stored yet: the
    model writes it once, greedily, and every method then explains that same text."""

    model: str
    dataset: str  # DatasetSpec.key
    max_new_tokens: int
    instances: tuple[int, ...]
    texts: Mapping[int, Any]
    model_source: str | None = None


@dataclass
class GenerationResult:
    unit: GenerationUnit
    generated: dict[int, list[int]] = field(default_factory=dict)
    load_seconds: float = 0.0
    fingerprint: str | None = None
    skipped: str | None = None  # never set: every causal LM generates


@dataclass
class UnitResult:
    unit: WorkUnit
    explanations: list[StoredExplanation] = field(default_factory=list)
    evaluations: list[StoredEvaluation] = field(default_factory=list)
    #: why the method does not apply to this model (the cell is skipped)
    skipped: str | None = None
    #: seconds spent in explain and evaluate (what the bench adds is the rest)
    compute_seconds: float = 0.0
    #: seconds spent loading the model before this unit (0 when it was loaded already)
    load_seconds: float = 0.0
    #: the model's fingerprint (:mod:`~normxlogit.model.fingerprint`): what the store
    #: checks its results against
    fingerprint: str | None = None
    #: instances explained here whose target is their contrast (the prediction is the
    #: foil, say): nothing explained, stored with no metric values
    contrast_is_target: list[int] = field(default_factory=list)


class Worker:
    """Computes units; keeps the last model loaded, so units of one model load it once."""

    def __init__(self, load=None):
        self._load = load
        self._name: str | None = None
        self._model = None
        self.fingerprint: str | None = None  # the loaded model's

    def model(self, name: str, source: str | None = None):
        """The model ``name`` refers to (``smollm2-sst2@bfloat16``: in that precision),
        loaded from ``source`` where given (a folder the config names relatively)."""
        if name != self._name:
            from ..model.fingerprint import model_fingerprint

            if self._load is None:
                from .. import load

                self._load = load
            self._model, self._name = None, None  # free the previous model first
            model, dtype = split_model_ref(name)
            model = source or model
            loaded = self._load(model) if dtype is None else self._load(model, dtype=dtype)
            self._model, self._name = loaded, name
            self.fingerprint = model_fingerprint(self._model)
        return self._model

    def run(self, unit: WorkUnit | GenerationUnit) -> UnitResult | GenerationResult:
        if isinstance(unit, GenerationUnit):
            return self.generate(unit)
        if unit.continuations is not None:
            return self.run_generation(unit)
        return self.run_texts(unit)

    def _start(self, unit: WorkUnit) -> tuple[Any, Any, UnitResult, dict[int, Any]]:
        """The unit's model (loaded once), its method (seeded), an empty result with the
        load time, and the explanations stored already."""
        from ..explanations.io import load_payload
        from ..workflows import methods_by_name

        start = time.perf_counter()
        model = self.model(unit.model, unit.model_source)
        _refuse_metrics_that_do_not_apply(model, unit)
        result = UnitResult(
            unit, load_seconds=time.perf_counter() - start, fingerprint=self.fingerprint
        )
        _check_methods(model, unit)
        name = unit.method.name
        method = methods_by_name([name], unit.seed, unit.method.options)[name]
        stored = {i: load_payload(payload) for i, payload in unit.stored.items()}
        return model, method, result, stored

    def generate(self, unit: GenerationUnit) -> GenerationResult:
        """What the model writes after each instance's prompt (greedy, the unit's prompts
        decoded together: the same tokens as one at a time)."""
        from ..explaining.steps import build_generations

        start = time.perf_counter()
        model = self.model(unit.model, unit.model_source).language_model_view()
        result = GenerationResult(
            unit, load_seconds=time.perf_counter() - start, fingerprint=self.fingerprint
        )
        instances = list(unit.instances)
        prompts = [unit.texts[instance] for instance in instances]
        made = build_generations(model, prompts, [None] * len(prompts), unit.max_new_tokens)
        for instance, generation in zip(instances, made, strict=True):
            result.generated[instance] = list(generation.continuation)
        return result

    def run_generation(self, unit: WorkUnit) -> UnitResult:
        """A generation experiment's unit: each method explains the stored continuation of
        every instance at the steps the metrics score (every ``evaluate_every``-th), and
        a stored explanation that lacks one of them again (with the steps it had)."""
        from ..evaluation import Protocol
        from ..evaluation.generations import evaluate_generations
        from ..workflows import explain_generations

        model, method, result, explanations = self._start(unit)
        continuations = unit.continuations or {}
        name = unit.method.display
        for instances, steps in _generations_to_explain(unit, explanations):
            explained = explain_generations(
                model,
                [unit.texts[i] for i in instances],
                {name: method},
                [list(continuations[i]) for i in instances],
                batch_size=unit.batch_size,
                max_tokens_per_batch=unit.max_tokens_per_batch,
                explain_steps=steps,
                skip=(UnsupportedModelError,),
            )
            if not _keep(unit, explained, result, explanations, instances):
                return result
        protocol = Protocol(seed=unit.seed).with_options(**unit.protocol)
        for instances, metrics in _metric_groups(unit):
            start = time.perf_counter()
            from ..evaluation.unread import settings_checked

            with settings_checked():  # against all its metrics, when the config loaded
                evaluated = evaluate_generations(
                    model,
                    {name: [explanations[i] for i in instances]},
                    metrics,
                    protocol,
                    every=unit.evaluate_every,
                    batch_size=unit.batch_size,
                    rows_per_forward=unit.rows_per_forward,
                    tokens_per_forward=unit.tokens_per_forward,
                    max_tokens_per_batch=unit.max_tokens_per_batch,
                    progress=False,
                )
            _store_scores(unit, result, instances, metrics, evaluated, start)
        return result

    def run_texts(self, unit: WorkUnit) -> UnitResult:
        from ..workflows import explain_texts

        model, method, result, explanations = self._start(unit)
        # gold labels nothing reads are left as they are (bench.md): not mapped, not checked
        labels = gold_labels(model, unit) if reads_gold_labels(unit) else dict(unit.labels)
        name = unit.method.display
        with texts_named(_instances_named(unit, unit.explain)):
            explained = explain_texts(
                model,
                [unit.texts[i] for i in unit.explain],
                {name: method},
                [_target_of(unit, i, labels) for i in unit.explain],
                contrasts=[_contrast_of(unit, i, labels) for i in unit.explain],
                layer=unit.method.layer if method.supports_layers else None,
                batch_size=unit.batch_size,
                max_tokens_per_batch=unit.max_tokens_per_batch,
                skip=(UnsupportedModelError,),
                flag_only=True,  # said once per cell, by the run's report
                **_segmenting(unit, unit.explain),
            )
        if not _keep(unit, explained, result, explanations, unit.explain):
            return result
        result.contrast_is_target = [i for i in unit.explain if explanations[i].contrast_is_target]
        for instances, metrics in _metric_groups(unit):
            start = time.perf_counter()
            # a target contrasted with itself explains nothing: stored with no values
            scored = tuple(i for i in instances if not explanations[i].contrast_is_target)
            from ..evaluation.unread import settings_checked

            # its settings were checked against all its metrics when the config loaded
            with texts_named(_instances_named(unit, scored)), settings_checked():
                evaluated = _evaluate_unit(unit, model, name, explanations, scored, metrics, labels)
            _store_scores(unit, result, instances, metrics, evaluated, start, scored)
        return result


def _evaluate_unit(
    unit: WorkUnit,
    model: Any,
    name: str,
    explanations: Mapping[int, Any],
    scored: tuple[int, ...],
    metrics: list[str],
    labels: Mapping[int, Any],
) -> Any:
    """The ``metrics`` of the ``scored`` instances' explanations (None for none): segment
    plausibility with its evidence segment indices, the rest with words and labels."""
    from ..evaluation import Protocol, evaluate
    from ..workflows import evaluate_texts

    if not scored:
        return None
    protocol = Protocol(seed=unit.seed).with_options(**unit.protocol)
    made = {name: [explanations[i] for i in scored]}
    if _ranks_evidence_segments(metrics):  # the evidence: segment indices
        return evaluate(
            model,
            made,
            metrics,
            evidence=[_evidence_segments(unit, i) for i in scored],
            protocol=protocol,
            batch_size=unit.batch_size,
            progress=False,
        )
    return evaluate_texts(
        model,
        made,
        metrics,
        labels=[labels.get(i) for i in scored],
        evidence_words=_evidence_words(unit, scored, metrics),
        protocol=protocol,
        batch_size=unit.batch_size,
        rows_per_forward=unit.rows_per_forward,
        tokens_per_forward=unit.tokens_per_forward,
        max_tokens_per_batch=unit.max_tokens_per_batch,
        progress=False,
    )


def _instances_named(unit: WorkUnit, instances: Sequence[int]) -> Callable[[int], str]:
    """How messages name the ``i``-th text of a call over ``instances``: its data file's
    line where the file gives one, else its instance number in the data set (never its
    place in the call, which no user can find)."""
    source = unit.source or "the data set"

    def name(index: int) -> str:
        instance = instances[index] if 0 <= index < len(instances) else index
        line = unit.lines.get(instance)
        return f"{source} line {line}" if line is not None else f"{source} instance {instance}"

    return name


def _keep(
    unit: WorkUnit,
    explained: Any,
    result: UnitResult,
    explanations: dict,
    instances: Sequence[int],
) -> bool:
    """Put what the workflow explained of ``instances`` into the unit's result (and
    beside the stored explanations, for the metrics; one stored already is replaced);
    False when the method does not apply to the model."""
    name = unit.method.display
    if name in explained.skipped:
        result.skipped = explained.skipped[name]
        return False
    made = explained.explanations[name]
    seconds, sizes = explained.seconds[name], explained.batch_sizes[name]
    for instance, explanation, share, size in zip(instances, made, seconds, sizes, strict=True):
        explanations[instance] = explanation
        result.compute_seconds += share
        result.explanations.append(
            StoredExplanation(
                instance,
                explanation.to_dict(),
                len(explanation.tokens),
                share,
                size,
                replaces=instance in unit.stored,
            )
        )
    return True


def _scored_steps(unit: WorkUnit, instances: Sequence[int]) -> list[int]:
    """The steps the unit's metrics score in any of ``instances``' continuations: every
    ``evaluate_every``-th from the first, as
    :func:`~normxlogit.evaluation.generations.evaluated_steps` picks them."""
    continuations = unit.continuations or {}
    longest = max((len(continuations[i]) for i in instances), default=0)
    return list(range(0, longest, unit.evaluate_every))


def _generations_to_explain(
    unit: WorkUnit, stored: Mapping[int, Any]
) -> list[tuple[list[int], list[int]]]:
    """The generations to explain, each group with its steps: the unit's new ones at the
    steps the metrics score, and stored ones that lack one of those (explained with
    another ``evaluate_every``) at those and the steps they had."""
    groups = []
    if unit.explain:
        groups.append((list(unit.explain), _scored_steps(unit, unit.explain)))
    lacking, steps = [], set()
    for instance, explanation in stored.items():
        had = explanation.steps_with_scores
        wanted = range(0, explanation.steps, unit.evaluate_every)
        if not set(wanted) <= set(had):
            lacking.append(instance)
            steps.update(had, wanted)
    if lacking:
        groups.append((lacking, sorted(steps)))
    return groups


def _store_scores(
    unit: WorkUnit,
    result: UnitResult,
    instances: tuple[int, ...],
    metrics: list[str],
    evaluated: Any,
    start: float,
    scored: Sequence[int] | None = None,
) -> None:
    """The evaluation's rows, per instance and metric, as the store keeps them (a
    generation's rows lead with their step), each with its share of the time.
    ``scored``: the instances evaluated (the frame numbers them), when not all were
    (``evaluated`` None: none); the others are stored with no values."""
    seconds = time.perf_counter() - start
    result.compute_seconds += seconds
    scored = instances if scored is None else scored
    frame = evaluated.frame if evaluated is not None else None
    stepped = frame is not None and "step" in frame.columns
    rows: dict[tuple[int, str], list] = {(i, m): [] for i in instances for m in metrics}
    for record in [] if frame is None else frame.itertuples(index=False):
        values = (
            _text(record.axis),
            _number(record.x),
            _number(record.value),
            _number(record.gold),
        )
        key = (scored[int(record.instance)], record.metric)
        rows[key].append(((int(record.step),) + values) if stepped else values)
    share = seconds / (len(instances) * len(metrics))
    result.evaluations.extend(
        StoredEvaluation(i, m, unit.protocol_keys[m], share, rows[(i, m)], stepped=stepped)
        for i in instances
        for m in metrics
    )


def _segmenting(unit: WorkUnit, instances: Sequence[int]) -> dict[str, Any]:
    """``explain_texts``' segment arguments for ``instances``: none without segments,
    ``"sentences"``, or each instance's own segments (``"data"``)."""
    chosen = unit.method.segments
    if chosen is None:
        return {}
    reduce = unit.method.segment_reduce or "sum"
    if chosen == "sentences":
        return {"segments": "sentences", "segment_reduce": reduce}
    missing = [i for i in instances if i not in unit.segments]
    if missing:  # the plan refuses such data first; a unit built by hand gets here
        raise InvalidInputError(
            f'experiment {unit.experiment}: segments = "data" takes each instance\'s own '
            f'segments, and instance {missing[0]} has none; use segments = "sentences"'
        )
    return {
        "segments": [segment_spec(unit.texts[i], unit.segments[i]) for i in instances],
        "segment_reduce": reduce,
    }


def _ranks_evidence_segments(metrics: Sequence[str]) -> bool:
    from ..evaluation.registry import metric_info

    return any(metric_info(m).evidence == "segments" for m in metrics)


def _evidence_segments(unit: WorkUnit, instance: int) -> tuple[int, ...]:
    if instance not in unit.evidence_segments:  # the plan refuses such data first
        raise InvalidInputError(
            f"experiment {unit.experiment}: the segment_* metrics need each instance's "
            f"evidence segments, which instance {instance} lacks (boolq with passage = "
            '"sentences" gives them)'
        )
    return unit.evidence_segments[instance]


#: the data sets that give evidence words, as the bench refusal names them
EVIDENCE_SOURCES = (
    'blimp; boolq with options = { passage = "window" } (or "sentences"); or a data file '
    "with an evidence column (word indices) or evidence_mask (one 0/1 per word)"
)


def _evidence_words(unit: WorkUnit, instances: Sequence[int], metrics: list[str]) -> list | None:
    """Each instance's evidence words, where the metrics read evidence (None: they do not)."""
    from ..workflows import metric_needs

    if not metric_needs(metrics).evidence:
        return None
    missing = [i for i in instances if i not in unit.evidence]
    if missing:
        raise InvalidInputError(
            f"experiment {unit.experiment}: evidence metrics need evidence words, which "
            f"instance {missing[0]} lacks (read {EVIDENCE_SOURCES})"
        )
    return [unit.evidence[i] for i in instances]


def _target_of(unit: WorkUnit, instance: int, labels: Mapping[int, Any]) -> str | None:
    """What ``instance`` is explained for: the prediction (None), its gold label (as the
    model names it, ``labels``), its foil, or a named label / token."""
    return _output_of(unit, instance, unit.method.target, labels, "target")


def _contrast_of(unit: WorkUnit, instance: int, labels: Mapping[int, Any]) -> str | None:
    """What ``instance``'s target is explained against (None: nothing)."""
    return _output_of(unit, instance, unit.method.contrast, labels, "contrast")


def _output_of(
    unit: WorkUnit, instance: int, wanted: str | None, labels: Mapping[int, Any], role: str
) -> str | None:
    """The output ``wanted`` names for ``instance``: ``label`` (its gold label, from
    ``labels``), ``foil`` (its minimal pair's), a label / token name, or None. ``role``
    (``target`` or ``contrast``) is named when a foil cannot be found."""
    where = f"experiment {unit.experiment}: method {unit.method.display} {role} = {wanted!r}"
    if wanted == "label":  # a name: _check_gold_outputs refused other labels at the start
        return labels.get(instance)
    if wanted == "foil":
        if instance not in unit.foils:
            raise InvalidInputError(
                f"{where} reads each text's foil, which only minimal-pair data sets (blimp) give"
            )
        return unit.foils[instance]
    return wanted


def _check_methods(model: Any, unit: WorkUnit) -> None:
    """Every method of the unit's experiment against the loaded model: a layer it lacks,
    an output it does not have, or a gold label it cannot name is refused before the
    first method is computed, not hours later when the grid reaches the method."""
    specs = [*unit.experiment_methods]
    specs += [unit.method] if unit.method not in specs else []
    if unit.continuations is None:
        _check_gold_indices(model, unit, specs)
    for spec in specs:
        where = f"experiment {unit.experiment}: method {spec.display}"
        _check_layer(model, unit, spec, where)
        _check_reagent(model, spec, where)
        if unit.continuations is None:  # a generation's outputs are checked as it is read
            _check_target(model, spec, where)
            _check_contrast(model, unit, spec, where)
            _check_gold_outputs(model, unit, spec, where)
    if unit.continuations is None:
        _check_gold_label_kinds(model, unit)


def _check_gold_indices(model: Any, unit: WorkUnit, specs: list[MethodSpec]) -> None:
    """A user's file whose gold labels are indices the model lacks (-1, which no
    label-index set names, so no name maps it) is refused naming the index and the
    experiment, as an index past the last is by :func:`gold_labels`, where a method's
    target or contrast or a metric reads the gold labels."""
    from ..evaluation.registry import metric_info

    task = model.task
    if unit.label_names or not task.has_label_set:
        return
    reads = any("label" in (spec.target, spec.contrast) for spec in specs) or any(
        metric_info(m).needs_labels for m in unit.metrics
    )
    count = len(task.labels)
    odd = next(
        (
            (i, label)
            for i, label in sorted(unit.labels.items())
            if isinstance(label, int) and not isinstance(label, bool) and not 0 <= label < count
        ),
        None,
    )
    if not reads or odd is None:
        return
    instance, label = odd
    raise InvalidInputError(
        f"experiment {unit.experiment}: label index {label} (the gold label of instance "
        f"{instance}) does not exist; the model has {count} labels: "
        f"{', '.join(f'{i}={name}' for i, name in enumerate(task.labels))}; write it as a "
        f"label name or an index from 0 to {count - 1}, or leave that text out"
    )


def _check_gold_label_kinds(model: Any, unit: WorkUnit) -> None:
    """A classifier's gold labels, read by a label metric, are label names or whole
    indices: floats (``1.0``) are refused in the config's terms before any method runs
    (``bench status`` refuses them already where the model's head is known unloaded)."""
    from ..evaluation.registry import metric_info

    metric = next((m for m in unit.metrics if metric_info(m).needs_labels), None)
    if metric is None or not model.task.has_label_set:
        return
    odd = next(
        ((i, label) for i, label in sorted(unit.labels.items()) if isinstance(label, float | bool)),
        None,
    )
    if odd is None:
        return
    from .config import toml_phrase

    instance, label = odd
    raise InvalidInputError(
        f"experiment {unit.experiment}: metric {metric} reads each text's gold label, which "
        f"must be a label name or a whole label index; the data gives {toml_phrase(label)} at "
        f"instance {instance}: write them in the file as the model names its labels (or as "
        "whole label indices from 0, e.g. 1, not 1.0), or take it out of the experiment's "
        "metrics"
    )


def _check_reagent(model: Any, spec: MethodSpec, where: str) -> None:
    """A ReAGent whose probes cannot watch this model's outputs (a regressor, a classifier
    of no more labels than its stopping top k): its scores would be random, not the
    model's (a built-in model's is refused when the config is read)."""
    from ..methods import get_method
    from ..methods.reagent import model_refusal

    reason = model_refusal([get_method(spec.name, **spec.options)], model, CONFIG_OPTION_FIX)
    if reason is not None:
        raise InvalidInputError(f"{where}: {reason}")


def _check_layer(model: Any, unit: WorkUnit, spec: MethodSpec, where: str) -> None:
    """A method's layer index is one of the model's; the advice is the config's, which
    takes no negative index, unlike explain --layer."""
    from ..methods.base import method_class

    layer = spec.layer
    if not isinstance(layer, int) or layer <= model.num_layers:
        return
    if not method_class(spec.name).supports_layers:
        return
    raise InvalidInputError(
        f"{where} layer = {layer} does not exist in model {unit.model}; use 0 (embeddings) "
        f'to {model.num_layers} (last), or layer = "all"'
    )


def _check_target(model: Any, spec: MethodSpec, where: str) -> None:
    """A named target is an output of this model (the config could not know its labels
    or vocabulary)."""
    from ..model.targets import output_column

    if spec.target in (None, "label", "foil", ALL):
        return
    try:
        output_column(model, spec.target)
    except InvalidInputError as error:
        advice = without_index_advice(str(error))  # a config's target is a name
        raise InvalidInputError(f"{where} target = {spec.target!r}: {advice}") from None


def _check_contrast(model: Any, unit: WorkUnit, spec: MethodSpec, where: str) -> None:
    """The method's contrast means an output of this model, other than its target."""
    from ..model.targets import output_column
    from ..model.tasks import TaskKind

    contrast = spec.contrast
    if contrast is None:
        return
    where = f"{where} contrast = {contrast!r}"
    if model.task.kind is TaskKind.REGRESSION:
        raise InvalidInputError(
            f"{where}: model {unit.model} is a regressor, whose one output has nothing to "
            "contrast it with; take contrast out of the method"
        )
    if contrast in ("label", "foil"):
        return
    try:
        column = output_column(model, contrast, role="contrast")
    except InvalidInputError as error:  # a config's contrast is a name, never an int
        raise InvalidInputError(f"{where}: {without_index_advice(str(error))}") from None
    if spec.target not in (None, "label", "foil", ALL) and (
        output_column(model, spec.target) == column
    ):
        raise InvalidInputError(
            f"{where} is its target {spec.target!r} too: the difference of an output with "
            "itself is zero at every token, so it explains nothing; contrast it with another "
            "output"
        )


def _check_gold_outputs(model: Any, unit: WorkUnit, spec: MethodSpec, where: str) -> None:
    """``target`` or ``contrast = "label"`` needs each gold label as an output name: a
    classifier reads label indices too, a language model only the token to explain."""
    roles = [role for role in ("target", "contrast") if getattr(spec, role) == "label"]
    if not roles:
        return
    labels = gold_labels(model, unit)
    odd = next((label for label in labels.values() if not isinstance(label, str)), None)
    if odd is None:
        return
    fix = (
        "write them in the file as the model names its labels (or as whole label indices from 0)"
        if model.task.has_label_set
        else "a language model has no label indices: write each one in the file as the token "
        'to explain (e.g. "positive")'
    )
    raise InvalidInputError(
        f"{where} {roles[0]} = 'label' reads each text's gold label, which must be a label or "
        f"token name; this data set's are {type(odd).__name__}s: {fix}"
        + (', or explain the prediction (target = "prediction")' if roles[0] == "target" else "")
    )


def _refuse_metrics_that_do_not_apply(model, unit: WorkUnit) -> None:
    """Stop before explaining anything when a metric means nothing for the model (a
    regressor has no class probabilities): the config is wrong, and explanations made
    first would be computed for nothing."""
    from ..evaluation.registry import first_refusal

    reason = first_refusal(model, unit.metrics)
    if reason is not None:
        raise InvalidInputError(
            f"experiment {unit.experiment}: {reason}; take it out of the experiment's "
            "metrics (`metrics = [...]` under its [[experiments]])"
        )


def _metric_groups(unit: WorkUnit) -> list[tuple[tuple[int, ...], list[str]]]:
    """Metrics wanted for the same instances, together: they run in one evaluate call, so
    metrics that perturb alike (comp_cd and comp_acc) share their forward passes. The
    segment plausibility metrics go apart (their evidence is segment indices, the
    others' token words)."""
    groups: dict[tuple[tuple[int, ...], bool], list[str]] = {}
    for metric, instances in unit.metrics.items():
        if instances:
            kind = _ranks_evidence_segments([metric])
            groups.setdefault((tuple(instances), kind), []).append(metric)
    return [(instances, metrics) for (instances, _), metrics in groups.items()]


def reads_gold_labels(unit: WorkUnit) -> bool:
    """Whether a metric of ``unit`` or its method's target or contrast (``"label"``)
    reads the gold labels: only then are they mapped onto the model's labels (and a file
    that mixes indices and names, or names an index the model lacks, refused)."""
    from ..evaluation.registry import metric_info

    return "label" in (unit.method.target, unit.method.contrast) or any(
        metric_info(m).needs_labels for m in unit.metrics
    )


def gold_labels(model, unit: WorkUnit) -> dict[int, Any]:
    """The gold labels of ``unit`` as the model names them.

    A dataset's label ids are mapped through its label names onto the model's labels (so
    a model whose labels come in another order is scored right); regression scores and a
    user's own labels pass as they are, label indices of a user's file too (the model's
    indices, as ``evaluate`` reads them).
    """
    task = model.task
    if not unit.label_names or not task.has_label_set:
        return dict(unit.labels)
    model_labels = [str(label).lower() for label in task.labels]
    names = [name.lower() for name in unit.label_names]
    generic = all(label == f"label_{i}" for i, label in enumerate(model_labels))
    if generic and len(model_labels) == len(names):
        return dict(unit.labels)  # an unnamed head: the dataset's order is the head's
    indices = tuple(str(i) for i in range(len(names)))
    if tuple(names) == indices and len(names) > len(model_labels):
        largest = len(names) - 1  # a user's file of label indices: one the model lacks
        raise InvalidInputError(
            f"experiment {unit.experiment}: label index {largest} does not exist; model "
            f"{unit.model} has {len(model_labels)} labels: "
            f"{', '.join(f'{i}={name}' for i, name in enumerate(task.labels))}"
        )
    if tuple(names) == indices:
        # a user's file of label indices: the model's own, named (as evaluate reads them)
        return {
            instance: task.labels[label]
            if isinstance(label, int) and not isinstance(label, bool)
            else label
            for instance, label in unit.labels.items()
        }
    missing = [name for name in names if name not in model_labels]
    digits = [name for name in unit.label_names if name.isdigit()]
    if missing and digits and len(digits) < len(names):  # "1" and "positive": both ways
        first = next((name for name in unit.label_names if not name.isdigit()), "")
        raise InvalidInputError(
            f"experiment {unit.experiment}: {unit.source or 'the data set'} gives the gold "
            f"labels both as indices ({digits[0]}) and as names ({first}); write them all one "
            f"way: as model {unit.model} names its labels ({', '.join(map(str, task.labels))}) "
            f"or as their indices (0 to {len(model_labels) - 1})"
        )
    if missing:
        raise InvalidInputError(
            f"experiment {unit.experiment}: the dataset's labels {', '.join(unit.label_names)} "
            f"are not all labels of model {unit.model} ({', '.join(map(str, task.labels))}); "
            "write them as the model names its labels (or as their indices, 0 to "
            f"{len(model_labels) - 1}), or pair the model with a dataset of its task"
        )
    return {
        instance: task.labels[model_labels.index(names[label])]
        if isinstance(label, int) and not isinstance(label, bool)
        else label
        for instance, label in unit.labels.items()
    }


def _number(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if value != value else value  # NaN is stored as NULL


def _text(value: Any) -> str | None:
    return None if value is None or value != value else str(value)


def split_chunks(instances: Sequence[int], size: int) -> list[tuple[int, ...]]:
    """``instances`` in runs of at most ``size``."""
    return [tuple(instances[i : i + size]) for i in range(0, len(instances), size)]
