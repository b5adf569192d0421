"""``evaluate``: explanations in, a tidy table of faithfulness and plausibility out."""

from __future__ import annotations

import json
import numbers
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..common.counts import optional_count, positive_count
from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.fields import name_problem, shown_value
from ..common.numbering import text_name, text_names, text_word
from ..common.outputs import lone_item, short_value, type_phrase, unordered_phrase
from ..model.adapter import ExplainableModel, check_model
from ..model.tasks import TaskKind
from .context import (
    Explanations,
    ExplanationSet,
    build_context,
    check_gold_labels,
    check_made_by,
    checked_explanations,
)
from .progress import RowProgress, planned_work
from .protocol import Protocol, given_protocol
from .registry import (
    MetricInfo,
    first_refusal,
    given_metrics,
    list_metrics,
    metric_class,
    metric_info,
    outside_range_warning,
)
from .result import COLUMNS, EvaluationResult
from .unread import warn_unread

DEFAULT_METRICS = ("comp_cd", "suff_cd")
#: a regressor has no class probabilities: its comprehensiveness and sufficiency are the
#: Pearson correlation with gold values (NormXLogit section 4)
REGRESSION_METRICS = ("comp_acc", "suff_acc")


def default_metrics(model: ExplainableModel) -> tuple[str, ...]:
    """What ``evaluate`` scores when not told: the paper's pair for the model's task."""
    return REGRESSION_METRICS if model.task.kind is TaskKind.REGRESSION else DEFAULT_METRICS


#: the plausibility metrics added to the defaults where every text has evidence (a human
#: rationale over its tokens), as the command line adds them for a file with evidence
EVIDENCE_METRICS = ("token_f1", "token_iou", "auprc")
#: the metrics that read evidence given as segment indices
SEGMENT_EVIDENCE_METRICS = ("segment_hit_1", "segment_hit_3", "segment_auprc")


def metrics_for_evidence(
    model: ExplainableModel,
    metrics: Sequence[str] | None,
    evidence: Any,
    segmented: bool = False,
    name: str = "evidence",
    kind: str | None = None,
) -> list[str]:
    """The metrics to score where ``evidence`` may be given: the model's defaults, plus
    :data:`EVIDENCE_METRICS` when metrics are left out and every text has evidence (else
    the given evidence would be dropped unsaid); given metrics as they are. Evidence that
    no metric will read is warned of, naming the metrics that read it. ``segmented``:
    the explanations are over segments, whose evidence (``kind`` None: either kind, as
    ``evaluate`` takes it) the segment metrics read; ``kind="tokens"``: the evidence is
    words, which only the token metrics read, segmented or not."""
    if isinstance(metrics, str):
        metrics = [metrics]
    if metrics is not None and not list(metrics):
        return []  # nothing asked for: refused as such, with no word about the evidence
    entries = _evidence_entries(evidence)
    if metrics is not None or not entries or segmented:
        chosen = list(metrics) if metrics is not None else list(default_metrics(model))
        if entries and not any(reads_evidence(m, kind) for m in chosen):
            readers = EVIDENCE_METRICS if kind == "tokens" or not segmented else None
            readers = readers or SEGMENT_EVIDENCE_METRICS
            warn_unscored(
                name, f"none of the metrics ({', '.join(chosen)}) reads it", readers, chosen
            )
        return chosen
    defaults = list(default_metrics(model))
    lacking = next((i for i, entry in enumerate(entries) if entry is None), None)
    reason = first_refusal(model, list(EVIDENCE_METRICS))
    if lacking is None and reason is None:
        return defaults + list(EVIDENCE_METRICS)
    why = f"{text_name(lacking)} has none" if lacking is not None else reason
    warn_unscored(name, f"the default metrics do not read it ({why})", EVIDENCE_METRICS, defaults)
    return defaults


def metrics_for_segment_evidence(
    model: ExplainableModel,
    metrics: Sequence[str] | None,
    chosen: list[str],
    evidence_segments: Any,
    segmented: bool,
    name: str = "evidence_segments",
) -> list[str]:
    """``chosen``, plus :data:`SEGMENT_EVIDENCE_METRICS` when metrics were left out, every
    text has evidence segments and segments are explained (as evidence words add the token
    metrics); else evidence segments that no chosen metric reads are warned of, saying why
    and what reads them, rather than dropped unsaid."""
    entries = _evidence_entries(evidence_segments)
    if not entries or not chosen or any(reads_evidence(m, "segments") for m in chosen):
        return chosen  # no metrics at all is refused as such, with no word of the evidence
    if not segmented:
        warnings.warn(
            f"{name} is given but not scored: no segments are explained, and the metrics "
            f"that read it ({', '.join(SEGMENT_EVIDENCE_METRICS)}) score explanations over "
            "segments; pass segments= (each text's segments, which evidence_segments number, "
            "or 'sentences') to score it",
            NormXLogitWarning,
            stacklevel=3,
        )
        return chosen
    if metrics is not None:
        why = f"none of the metrics ({', '.join(chosen)}) reads it"
        warn_unscored(name, why, SEGMENT_EVIDENCE_METRICS, chosen)
        return chosen
    lacking = next((i for i, entry in enumerate(entries) if entry is None), None)
    reason = first_refusal(model, list(SEGMENT_EVIDENCE_METRICS))
    words = any(reads_evidence(m, "tokens") for m in chosen)
    if lacking is None and reason is None and not words:
        return chosen + list(SEGMENT_EVIDENCE_METRICS)
    why = f"{text_name(lacking)} has none" if lacking is not None else reason
    why = why or "the token metrics chosen for the evidence words read the other kind"
    warn_unscored(
        name, f"the default metrics do not read it ({why})", SEGMENT_EVIDENCE_METRICS, chosen
    )
    return chosen


def reads_evidence(metric: Any, kind: str | None = None) -> bool:
    """Whether ``metric`` reads human evidence of ``kind`` (``"tokens"``: token vectors or
    words; ``"segments"``: segment indices; None: either)."""
    if not _known(metric) or not metric_info(metric).needs_evidence:
        return False
    return kind is None or (metric_info(metric).evidence == "segments") == (kind == "segments")


def _evidence_entries(evidence: Any) -> list[Any]:
    """The per-text entries of ``evidence`` (empty: none given, or every entry None);
    anything not a sized sequence is left for evaluate's own checks to refuse."""
    if evidence is None or isinstance(evidence, (str, bytes, Mapping)):
        return []
    try:
        entries = list(evidence) if hasattr(evidence, "__len__") else []
    except TypeError:
        return []
    return entries if any(entry is not None for entry in entries) else []


def _known(metric: str) -> bool:
    """Whether ``metric`` is one of normxlogit's (an unknown name is refused later)."""
    return isinstance(metric, str) and metric in list_metrics()


def warn_unscored(
    name: str, why: str, readers: Sequence[str], chosen: Sequence[str], stacklevel: int = 4
) -> None:
    """Evidence given but not scored, with why and what would score it: added to
    ``metrics=``, or in a call of its own where a chosen metric reads the other kind of
    evidence (one call scores one kind)."""
    listed = ", ".join(repr(m) for m in readers)
    kind = "segments" if any(reads_evidence(m, "segments") for m in readers) else "tokens"
    other = "tokens" if kind == "segments" else "segments"
    if any(reads_evidence(m, other) for m in chosen):
        fix = f"score it in a call of its own with metrics=[{listed}] (one call scores one kind)"
    else:
        fix = f"add {listed} to metrics= to score it"
    warnings.warn(
        f"{name} is given but not scored: {why}; {fix}", NormXLogitWarning, stacklevel=stacklevel
    )


def evaluate(
    model: ExplainableModel,
    explanations: Explanations,
    metrics: Sequence[str] | None = None,
    labels: Sequence[Any] | None = None,
    protocol: Protocol | None = None,
    *,
    evidence: Sequence[Any] | None = None,
    layer: int = -1,
    batch_size: int = 16,
    rows_per_forward: int | None = None,
    tokens_per_forward: int | None = None,
    max_tokens_per_batch: int | None = None,
    progress: bool | Callable[[float], None] | None = None,
) -> EvaluationResult:
    """Score explanations for faithfulness and plausibility.

    Args:
        explanations: ``Explanation`` objects of one or more methods on the same texts (a
            list, or ``{name: explanations}`` to name the methods yourself); or generation
            explanations, scored every fifth step (see
            :func:`normxlogit.generation.evaluate_generations` for the step choice).
            Explanations made against a contrast input (``contrast_input=``) explain
            the difference of two inputs' outputs: the metrics that perturb the text
            refuse them; the plausibility metrics score them.
        metrics: names from :func:`list_metrics`: ``comp_cd``, ``comp_acc``, ``suff_cd``,
            ``suff_acc``, ``soft_nc``, ``soft_ns``, ``pi_soft_nc``, ``pi_soft_ns``,
            ``insertion``, ``deletion``, ``evidence_ap``, ``evidence_dot``. Default: each
            paper's pair for the task: ``comp_cd`` and ``suff_cd`` (``comp_acc`` and
            ``suff_acc`` for a regressor, with ``labels``; ``pi_soft_nc`` and
            ``pi_soft_ns`` for generations), with ``token_f1``, ``token_iou`` and
            ``auprc`` added when ``evidence`` is given for every text (as the command line
            adds them for a file with evidence). A metric that means nothing for the model
            is refused before any work.
        labels: gold labels (names or indices; numbers for regression), one per text in
            the order texts first appear among the explanations; the ``*_acc`` metrics
            need them.
        protocol: how inputs are perturbed (default: each paper's own settings).
        evidence: binary evidence vectors over each text's tokens (``token_f1``,
            ``token_iou``, ``auprc``, ``evidence_*``); evidence no chosen metric reads is
            warned of.
        layer: which layer of per-layer explanations the faithfulness metrics use
            (evidence metrics score every layer).
        batch_size: texts encoded together (texts of similar length are put together:
            chunks are formed in order of length, results keep the texts' order).
        tokens_per_forward: perturbed copies of the chunk's texts are packed, shortest
            first, into forward passes of at most this many tokens (copies x the pass's
            longest text; default 4,096 on a CPU, 65,536 on a GPU).
            ``rows_per_forward``: a cap on the copies per pass besides (default none).
        max_tokens_per_batch: a memory budget: a perturbed pass holds at most this many
            tokens, so long texts run fewer copies at a time (at least one). None of
            these sizes changes a score.
        progress: a progress bar on stderr (with an ETA) that moves with every forward
            pass over the perturbed rows of every metric. ``None`` (default): shown when
            stderr is a terminal or in a notebook; ``True``/``False``: always / never; a
            callable: called instead with the work done so far in texts (a float out of
            the number of texts, rising steadily to it; what the command line's bar uses).
    """
    check_model(model, "evaluate")
    protocol = given_protocol(protocol)
    metrics = given_metrics(metrics)  # a number or bytes refused, a generator read once
    if _holds_generations(explanations):
        from .generations import evaluate_generations

        if labels is not None or evidence is not None:
            raise InvalidInputError(
                "a generation explained step by step has no gold labels or evidence to pass "
                "(each step is its own prediction); to score evidence segments of a whole "
                "answer, explain it with a segment method and generate= or continuation= "
                "(leave_one_out, contextcite), then evaluate those explanations"
            )
        return evaluate_generations(
            model,
            explanations,  # type: ignore[arg-type]
            metrics,
            protocol,
            layer=layer,
            batch_size=batch_size,
            rows_per_forward=rows_per_forward,
            tokens_per_forward=tokens_per_forward,
            max_tokens_per_batch=max_tokens_per_batch,
            progress=progress,
        )
    explanations = checked_explanations(explanations)  # its shape, before any work
    metrics = metrics_for_evidence(model, metrics, evidence, _has_segments(explanations))
    metrics = list(dict.fromkeys(metrics))
    if not metrics:
        raise InvalidInputError("no metrics asked for; see normxlogit.evaluation.list_metrics()")
    classes = [metric_class(name) for name in metrics]
    reason = first_refusal(model, metrics)
    if reason is not None:
        raise InvalidInputError(reason)
    warn_unread(protocol.to_dict(), metrics)  # a setting no metric reads changes nothing
    batch_size = positive_count(batch_size, "batch_size")
    rows_per_forward = optional_count(rows_per_forward, "rows_per_forward")
    tokens_per_forward = optional_count(tokens_per_forward, "tokens_per_forward")
    max_tokens_per_batch = optional_count(max_tokens_per_batch, "max_tokens_per_batch")
    protocol = protocol.resolved(model)
    explained = ExplanationSet.build(explanations)
    for name in explained.methods:  # the rows' method: a saved result must load again
        if not name.strip():
            raise InvalidInputError(
                f"method name {name!r} is empty; name the method, e.g. "
                "{'normxlogit': explanations}"
            )
        if (problem := name_problem(name)) is not None:
            raise InvalidInputError(f"method name {name!r}, {problem}")
    check_made_by(model, explained)
    layer = lone_item(layer)  # np.array(-1), torch.tensor(1): the index held
    _check_layer(layer, explained)
    _check_layer_axes(explained, metrics, classes)
    _check_answers(model, explained, metrics, classes)
    made_by = {item.method for items in explained.by_method.values() for item in items}
    made = [item for items in explained.by_method.values() for item in items]
    for cls in classes:
        if (reason := cls.explanation_refusal(sorted(made_by))) is not None:
            raise InvalidInputError(reason)
        if (reason := cls.run_refusal(model, made)) is not None:
            raise InvalidInputError(reason)
    check_contrast_inputs(explained, metrics, classes)
    count = len(explained.texts)
    check_aligned("labels", labels, count, any(c.info.needs_labels for c in classes))
    check_aligned("evidence", evidence, count, any(c.info.needs_evidence for c in classes))
    labels, evidence = _positional(labels), _positional(evidence)
    _check_evidence(evidence, classes, explained)
    needs_labels = any(c.info.needs_labels for c in classes)
    # what the chunks would refuse, refused before any model work; labels no metric reads
    # are neither checked nor used, as evaluate_texts and explain_and_evaluate leave them
    if not needs_labels:
        labels = None
    if labels is not None:
        check_gold_labels(model, labels)
    check_evidence_kinds(metrics)
    _check_segments(model, explained, metrics, classes, evidence, layer, protocol)
    if model.task.kind is TaskKind.REGRESSION:
        _warn_undefined_correlations(
            metrics, classes, [] if labels is None else list(labels), count
        )
    rows: list[dict] = []
    outside: dict[str, list[str]] = {}  # metric: where its values left the declared range
    curves: dict[str, bool] = {}  # metric: whether its rows' x are numbers
    rowed: dict[str, set[str]] = {}  # metric: the methods it gave rows for
    forward_rows = 0
    left_out = set(_left_out_contrasting_themselves(explained, count))
    _warn_unexplained_predictions(explained, left_out)
    contrastive = contrastive_methods(explained)
    chunks = [
        kept
        for chunk in length_buckets(explained, batch_size)
        if (kept := [i for i in chunk if i not in left_out])
    ]
    scorers = [cls() for cls in classes]
    plan = [planned_work(scorers, protocol, len(explained.methods), len(chunk)) for chunk in chunks]
    with RowProgress(progress, sum(sum(steps) for steps in plan), count) as tracker:
        for chunk, steps in zip(chunks, plan, strict=True):
            where = f"{len(chunk)} texts of {count}"
            tracker.step(steps[0], f"clean pass, {where}")
            ctx = build_context(
                model,
                protocol,
                explained,
                chunk,
                labels,
                evidence,
                layer,
                rows_per_forward,
                max_tokens_per_batch,
                tokens_per_forward,
            )
            ctx.runner.on_rows = tracker.advance
            for name, scorer, weight in zip(metrics, scorers, steps[1:], strict=True):
                tracker.step(weight, f"{name}, {where}")
                info = scorer.info
                check = _RowCheck(
                    name, info, ctx.instances, ctx.methods, curves, rowed.setdefault(name, set())
                )
                ranged = {side: type(scorer).ranged_info(side) for side in (False, True)}
                for position, row in enumerate(_metric_rows(scorer, ctx, check)):
                    check(position, row)
                    judged = ranged[row["method"] in contrastive]
                    if (problem := _check_value(name, judged, row)) is not None:
                        outside.setdefault(name, []).append(problem)
                    row.update(
                        metric=name, axis=info.axis, text=_shown(explained.texts[row["instance"]])
                    )
                    rows.append(row)
            tracker.step(0, "")
            forward_rows += ctx.runner.forward_rows
    for scorer in scorers:  # once, over every chunk (e.g. how many texts were left out)
        scorer.finish(protocol)
    _warn_missing_methods(metrics, explained.methods, rowed)
    for name, problems in outside.items():
        warnings.warn(
            outside_range_warning(name, problems, "they are reported as computed"),
            NormXLogitWarning,
            stacklevel=2,
        )
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["gold"] = frame["gold"].astype(float)
    order = {
        "metric": {name: i for i, name in enumerate(metrics)},
        "method": {name: i for i, name in enumerate(explained.methods)},
    }
    frame = frame.sort_values(
        ["metric", "method", "instance"],
        key=lambda column: column.map(order[column.name]) if column.name in order else column,
        kind="stable",
    ).reset_index(drop=True)
    return EvaluationResult(
        frame,
        protocol,
        metrics,
        model.name,
        forward_rows,
        {name: shared_settings(items) for name, items in explained.by_method.items()},
    )


def shared_settings(explanations: Sequence[Any]) -> dict[str, Any]:
    """The settings every explanation of one method holds alike (its options, the layer,
    the precision; not a per-text target), JSON-able, for the saved result."""
    if not explanations:
        return {}
    first = explanations[0].settings
    shared = {}
    for key, value in first.items():
        text = json.dumps(value, default=str, sort_keys=True)
        if all(
            key in item.settings
            and json.dumps(item.settings[key], default=str, sort_keys=True) == text
            for item in explanations[1:]
        ):
            shared[key] = json.loads(text)
    return shared


def _warn_missing_methods(
    metrics: Sequence[str], methods: Sequence[str], rowed: dict[str, set[str]]
) -> None:
    """Warn, once per metric, about explained methods its rows() gave no row for: the
    summary would leave them out without a word (the values it gave are kept)."""
    for name in metrics:
        missing = [method for method in methods if method not in rowed.get(name, set())]
        if missing:
            warnings.warn(
                f"metric {name!r} gave no rows for {_listed(missing)}; rows() returns one "
                "row per instance and method, so the summary leaves them out",
                NormXLogitWarning,
                stacklevel=3,
            )


def _metric_rows(scorer: Any, ctx: Any, check: _RowCheck) -> list[dict]:
    """``scorer.rows(ctx)`` as a list, refused in one line unless it is an iterable (a
    registered metric's own failure is said by its guard, see ``register_metric``)."""
    return list(check.iterable(scorer.rows(ctx)))


#: what a metric's row holds, said in every refusal of one
_ROW_FORM = (
    "a row is a dict with instance (one of ctx.instances), method (one of ctx.methods), "
    "x (the curve point, or None) and value"
)


class _RowCheck:
    """What one metric's ``rows()`` returns for one chunk, checked row by row before it
    enters the table: an iterable of dicts, each naming one of the chunk's texts (by its
    number in ``ctx.instances``) and one of the explained methods, with a ``value``, ``x``
    and ``gold`` numbers or None, and one row per instance, method and curve point.
    Cheap: a few lookups per row."""

    def __init__(
        self,
        name: str,
        info: MetricInfo,
        instances: Sequence[int],
        methods: Sequence[str],
        curves: dict[str, bool],
        rowed: set[str],
    ) -> None:
        self.name, self.info = name, info
        # over every chunk: whether the metric's rows have x numbers, the methods with rows
        self.curves, self.rowed = curves, rowed
        self.instances, self.methods = set(instances), set(methods)
        self.shown_instances = _listed(instances)
        self.shown_methods = _listed(methods)
        self.seen: dict[tuple, int] = {}

    def iterable(self, rows: Any) -> Any:
        """``rows`` if it is an iterable of rows; a refusal naming the metric if not."""
        if isinstance(rows, dict | str | bytes) or not hasattr(rows, "__iter__"):
            raise InvalidInputError(
                f"metric {self.name!r}: rows() returned {_shown_value(rows)}; it returns an "
                f"iterable of dicts, one per instance x method (x curve point): {_ROW_FORM}"
            )
        return rows

    def __call__(self, position: int, row: Any) -> None:
        if not isinstance(row, dict):
            self._refuse(position, row, f"is no dict; {_ROW_FORM}")
        instance = row.get("instance")
        if instance is None:
            self._refuse(position, row, f"has no 'instance'; {_ROW_FORM}")
        if not isinstance(instance, numbers.Integral) or isinstance(instance, bool):
            self._refuse(
                position,
                row,
                f"has instance {_shown_value(instance)}; an instance is an int, one of "
                f"ctx.instances {self.shown_instances}",
            )
        if instance not in self.instances:
            self._refuse(
                position,
                row,
                f"has instance {int(instance)}, not one of this chunk's texts (ctx.instances "
                f"{self.shown_instances}); use the ids in ctx.instances (each text's number "
                "in the evaluation), not a position in the chunk nor -1",
            )
        row["instance"] = int(instance)
        method = row.get("method")
        if method is None:
            self._refuse(
                position,
                row,
                f"has no 'method'; name the explained method, one of ctx.methods "
                f"{self.shown_methods}",
            )
        if not isinstance(method, str) or method not in self.methods:
            self._refuse(
                position,
                row,
                f"has method {_shown_value(method)}, not one of the explained methods "
                f"(ctx.methods {self.shown_methods})",
            )
        if "value" not in row:
            keys = ", ".join(str(key) for key in row)
            self._refuse(
                position,
                row,
                f"has no 'value' (its keys: {keys}); put the metric's number under 'value' "
                "(NaN where there is none)",
            )
        x = row.get("x")
        for field in ("x", "gold"):
            if (problem := self.info.number_refusal(row.get(field))) is not None:
                what = "the curve point" if field == "x" else "the gold value"
                self._refuse(position, row, f"has {field} ({what}) that {problem}")
        point = None if x is None or x != x else float(x)
        if (problem := self.info.x_refusal(x, self.curves.get(self.name))) is not None:
            self._refuse(position, row, f"has x that {problem}")
        self.curves[self.name] = point is not None
        self.rowed.add(method)
        first = self.seen.setdefault((instance, method, point), position)
        if first != position:
            self._refuse(
                position,
                row,
                f"repeats row {first}: the same instance {int(instance)}, method {method!r} "
                f"and x {point}; give one row per instance, method and curve point",
            )

    def _refuse(self, position: int, row: Any, problem: str) -> None:
        raise InvalidInputError(
            f"metric {self.name!r}: row {position} of its rows() ({_shown_value(row)}) {problem}"
        )


def _listed(values: Sequence[Any], limit: int = 10) -> str:
    """``[0, 1, 2]``: the first ``limit`` values, an ellipsis for the rest."""
    shown = ", ".join(repr(value) for value in list(values)[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def _shown_value(value: Any) -> str:
    """``value`` named in a refusal of a metric's row (a longer repr than elsewhere: a row)."""
    return shown_value(value, limit=80)


def check_evidence_kinds(metrics: Sequence[str]) -> None:
    """Refuse token-evidence and segment-evidence metrics in one call: their evidence is
    of two kinds (``explain_and_evaluate`` asks before explaining, ``evaluate`` before
    scoring)."""
    kinds = {info.evidence for info in map(metric_info, metrics) if info.needs_evidence}
    if len(kinds) > 1:
        raise InvalidInputError(
            "segment plausibility (segment_*) takes evidence as segment indices, the token "
            "metrics as token vectors or words: evaluate them in separate calls"
        )


def _check_value(name: str, info: MetricInfo, row: dict) -> str | None:
    """Refuse a row whose value is no number; say where a value lies outside the metric's
    declared range (ranges are true bounds: the tables colour by them), for one warning per
    metric that keeps the values: a run's work is never thrown away for it. An accuracy
    metric's rows on a regression model (with gold values) hold the model's predictions:
    their correlation is what lies in the range."""
    value = row.get("value")
    where = f"method {row.get('method')!r} on {text_name(row.get('instance', 0))}"
    if (problem := info.number_refusal(value)) is not None:
        raise InvalidInputError(f"metric {name!r}: its value for {where} {problem}")
    problem = info.row_range_problem(row)
    return None if problem is None else f"for {where} {problem}"


def _check_segments(
    model: ExplainableModel,
    explained: ExplanationSet,
    metrics: list[str],
    classes: list,
    evidence: Sequence[Any] | None,
    layer: int,
    protocol: Protocol,
) -> None:
    """What the segment metrics would refuse chunk by chunk, refused before any model
    work: an explanation without segments, segment scores that rank nothing (NaN or
    infinite where the model read the segment), evidence that is no list of indices, and
    a masked LM's segment that holds the mask a metric would remove (the prediction is
    read there: removing it reads another position, or none)."""
    needing = [n for n, c in zip(metrics, classes, strict=True) if c.needs_segments]
    if protocol.unit == "segment":
        needing.append("unit='segment'")
    if not needing:
        return
    from ..model.segment_values import mask_segment
    from .context import segment_vector
    from .segment_checks import SegmentCheck
    from .segment_plausibility import segment_evidence
    from .units import check_segment_scores, read_segments

    removing = [n for n, c in zip(metrics, classes, strict=True) if issubclass(c, SegmentCheck)]
    by_segments = any(c.info.needs_evidence and c.info.evidence == "segments" for c in classes)
    left_out = set(explained.contrast_is_target)  # NaN by design: left out of every metric
    for name, items in explained.by_method.items():
        for index, item in enumerate(items):
            if index in left_out:
                continue
            if item.segments is None:
                raise InvalidInputError(
                    f"{needing[0]} reads segments, and the {name!r} explanation of "
                    f"{text_name(index)} has none: explain with segments='sentences' (or "
                    "the texts' segments)"
                )
            scores = np.asarray(segment_vector(item, layer), dtype=np.float64)
            check_segment_scores(scores, read_segments(item.segments), name, index)
            if by_segments and evidence is not None:
                segment_evidence(evidence[index], len(item.segments.texts), f"evidence[{index}]")
            if not removing:
                continue
            held = mask_segment(model, explained.texts[index], item.segments.token_segments)
            if held is not None:
                raise InvalidInputError(
                    f"{removing[0]} removes segments, and segment {held} of "
                    f"{text_name(index)} holds the {model.tokenizer.mask_token} the prediction "
                    "is read at; explain with segments that leave the mask out (the context's "
                    "sentences as strings), or score the segments with the other metrics"
                )


def _check_answers(
    model: ExplainableModel, explained: ExplanationSet, metrics: list[str], classes: list
) -> None:
    """An explanation of a whole answer has no one prediction to perturb: only the
    metrics that read answers score it; the others are refused before any work, and so
    are answer ids this model has no token for (loading checks all but the range)."""
    size = len(model.tokenizer)
    for name, items in explained.by_method.items():
        for index, item in enumerate(items):
            if bad := [i for i in item.settings.get("answer_ids", ()) if not 0 <= i < size]:
                raise InvalidInputError(
                    f"the {name!r} explanation of {text_name(index)}: 'settings.answer_ids' "
                    f"holds {bad[0]}, not a token id of this model (0..{size - 1}); evaluate "
                    "with the model that made it"
                )
    answers = [
        i
        for i in range(len(explained.texts))
        if any("answer_ids" in items[i].settings for items in explained.by_method.values())
    ]
    refused = [name for name, cls in zip(metrics, classes, strict=True) if not cls.reads_answers]
    if answers and refused:
        reading = ", ".join(n for n in list_metrics() if metric_class(n).reads_answers)
        raise InvalidInputError(
            f"{text_names(answers)} explain a whole answer (a segment method with generate= "
            f"or continuation=), which {', '.join(refused)} cannot score: it reads one "
            f"prediction. Metrics of whole answers: {reading}; or explain the generation "
            "step by step with a token method"
        )


def length_buckets(explained: ExplanationSet, batch_size: int) -> list[list[int]]:
    """The texts (indices) in chunks of ``batch_size`` texts of similar length: sorted by
    token count (stable), so a chunk's padding and its forward passes' widths stay small."""
    first = next(iter(explained.by_method.values()))
    order = sorted(range(len(first)), key=lambda i: len(first[i].tokens))
    return [sorted(order[s : s + batch_size]) for s in range(0, len(order), batch_size)]


def _warn_undefined_correlations(
    metrics: Sequence[str], classes: Sequence[Any], labels: Sequence[Any], count: int
) -> None:
    """Say why a regressor's ``*_acc`` will be n/a, or mean little: a Pearson correlation
    across texts needs two texts or more, and gold values that differ; over exactly two
    texts it is +1 or -1 whatever the explanation."""
    correlated = [
        name
        for name, cls in zip(metrics, classes, strict=True)
        if cls.info.across_instances == "accuracy"
    ]
    if not correlated or not labels:
        return
    gold = [float(v) for v in labels if isinstance(v, (int, float)) and not isinstance(v, bool)]
    lead = (
        f"{', '.join(correlated)} of a regressor are Pearson correlations with the gold values "
        "across texts"
    )
    advice = "evaluate three texts or more (better: many) with different gold values"
    if count < 2:
        said = f"{lead}, and one text has none: they will be n/a; {advice}"
    elif gold and len(set(gold)) < 2:
        said = f"{lead}, and every gold value is {gold[0]:g}: they will be n/a; {advice}"
    elif count == 2:
        said = (
            f"{lead}, and a correlation of two texts is +1 or -1 whatever the explanation: "
            f"at every ratio the values tell methods apart only by sign; {advice}"
        )
    else:
        return
    warnings.warn(said, NormXLogitWarning, stacklevel=3)


def contrastive_methods(explained: ExplanationSet) -> set[str]:
    """The methods whose explanations read a contrast (``contrast=``): their probability
    metrics measure p(target) - p(contrast), whose range is the metric's contrastive one."""
    return {name for name, items in explained.by_method.items() if any(i.contrasts for i in items)}


def check_contrast_inputs(explained: ExplanationSet, metrics: list[str], classes: list) -> None:
    """Refuse, before any work, the metrics that perturb the text for explanations made
    against a contrast input: their scores explain f(x) - f(x'), and a perturbation of x
    alone reads f(x), so the number would measure something the scores do not explain."""
    perturbing = [n for n, c in zip(metrics, classes, strict=True) if c.perturbs_input]
    if not perturbing:
        return
    for name, items in explained.by_method.items():
        for index, item in enumerate(items):
            if "contrast_input" not in item.settings:
                continue
            other = _shown(item.settings["contrast_input"])
            raise InvalidInputError(
                f"the {name!r} explanation of {text_name(index)} was made against a "
                f"contrast input ({other!r:.60}): its scores explain the difference of the "
                f"output under the two inputs, and {', '.join(perturbing)} "
                f"{'perturbs' if len(perturbing) == 1 else 'perturb'} the text alone; "
                "explain without contrast_input= to evaluate faithfulness; plausibility "
                "metrics read the scores alone"
            )


def _warn_unexplained_predictions(explained: ExplanationSet, left_out: set[int]) -> None:
    """Warn once about the texts whose explanation has several columns, none of them the
    predicted label's (the column evaluated): the first is evaluated, and the warning
    names it. With ``target="all"`` and a contrast, a text predicted as the contrast is
    one: the contrast's own label has no column."""
    missed: dict[int, str] = {}
    contrasted: set[int] = set()  # predicted as their contrast
    for items in explained.by_method.values():
        for index, item in enumerate(items):
            several = len(item.targets) > 1 and "answer_ids" not in item.settings
            if several and index not in left_out and item.label not in item.targets:
                missed.setdefault(index, item.column_titles[0])
                if item.label in item.contrasts:
                    contrasted.add(index)
    if not missed:
        return
    columns = ", ".join(map(repr, dict.fromkeys(missed.values())))
    which = "" if contrasted == set(missed) else f"{text_names(sorted(contrasted))} "
    why = (
        f" ({which}predicted as the contrast, whose own label has no column)" if contrasted else ""
    )
    warnings.warn(
        f"{len(missed)} of {len(explained.texts)} {text_word()} ({text_names(sorted(missed))}) are "
        f"predicted as a label none of their explanation's columns explains{why}, so their "
        f"first column is evaluated ({columns}), not the prediction's; put the label to "
        "evaluate first in target=, or explain them for their prediction",
        NormXLogitWarning,
        stacklevel=3,
    )


def _left_out_contrasting_themselves(explained: ExplanationSet, count: int) -> list[int]:
    """The texts whose explanation contrasts a target with itself (it explains nothing):
    left out with a warning that names them; refused when that is every text."""
    left_out = explained.contrast_is_target
    if not left_out:
        return []
    rule = "the difference of an output with itself is zero at every token"
    if len(left_out) == count:
        raise InvalidInputError(
            f"every explanation contrasts its target with itself ({rule}): nothing to "
            "evaluate; explain the texts against another contrast, or for another target"
        )
    warnings.warn(
        f"{len(left_out)} of {count} {text_word()} ({text_names(left_out)}) are left out of every "
        f"metric: their explanation contrasts its target with itself ({rule}), so it "
        "explains nothing (Explanation.contrast_is_target)",
        NormXLogitWarning,
        stacklevel=3,
    )
    return left_out


def _holds_generations(explanations: Any) -> bool:
    """Whether ``explanations`` are generation explanations (scored per step)."""
    from ..explanations.generation import GenerationExplanation

    items = explanations.values() if isinstance(explanations, dict) else [explanations]
    for item in items:
        first = next(iter(item), None) if isinstance(item, (list, tuple)) else item
        if isinstance(first, GenerationExplanation):
            return True
    return False


def is_dataframe(values: Any) -> bool:
    """A pandas DataFrame (known by its columns, without importing pandas here)."""
    return type(values).__name__ == "DataFrame" and hasattr(values, "columns")


def refuse_mapping(name: str, values: Any, order: str = "the texts' order") -> None:
    """Per-text values given as a mapping (``df["label"].to_dict()``), refused: iterating
    one yields its keys, which would be read as the values), or as a pandas DataFrame,
    whose iteration yields its column names."""
    if is_dataframe(values):
        raise InvalidInputError(
            f"{name} is a pandas DataFrame; give one of its columns as a list, one entry per "
            f'text in {order} (e.g. list(df["label"])): a DataFrame is read by its column '
            "names"
        )
    if unordered := unordered_phrase(values):
        raise InvalidInputError(
            f"{name} is {unordered}, which has no order, so its entries would be paired with "
            f"the texts at random; give a list with one entry per text, in {order}"
        )
    if isinstance(values, Mapping):
        raise InvalidInputError(
            f"{name} is {type_phrase(values)}; give a list with one entry per text, in "
            f'{order} (e.g. list(df["label"]), or [d[i] for i in range(len(texts))] for a '
            "dict keyed by text number): a mapping is read by its keys"
        )


def check_aligned(
    name: str,
    values: Sequence[Any] | None,
    count: int,
    needed: bool,
    order: str = "the order the texts first appear among the explanations",
) -> None:
    """``values`` (``name``: labels, evidence) as one entry per text, ``count`` of them,
    in ``order``; refused also where no metric reads them (``needed`` False), since a
    count that differs means they were paired with the wrong texts."""
    if values is None:
        if needed:
            raise InvalidInputError(
                f"the metrics asked for need {name}: pass {name}=[...] with one entry per text"
            )
        return
    given = values
    values = lone_item(values)  # np.array(1): refused as the 1 it holds
    refuse_mapping(name, values, order)
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        said = (  # torch.tensor(1) is no int: named as what was given
            f"a 0-d {type(given).__name__} holding {values!r:.40}"
            if values is not given
            else f"{type_phrase(values)} {' '.join(repr(values).split()):.40}"
        )
        raise InvalidInputError(f"{name} must be a list with one entry per text, got {said}")
    if len(values) != count:
        raise InvalidInputError(
            f"{len(values)} {name} for {count} texts; give one per text, in {order}"
        )


def _check_evidence(
    evidence: list[Any] | None, classes: Sequence[Any], explained: ExplanationSet
) -> None:
    """The token evidence vectors (a text's ``None``, a wrong length, a value not 0 or 1,
    text), refused naming the text before any model work: the evidence metrics would
    refuse them only after the others ran, and that work would be lost."""
    from .evidence import checked_evidence, missing_evidence

    if evidence is None or not any(
        c.info.needs_evidence and c.info.evidence == "tokens" for c in classes
    ):
        return
    missing = next((n for n, given in enumerate(evidence) if given is None), None)
    if missing is not None:
        raise InvalidInputError(missing_evidence(missing))
    if _has_segments(explained.by_method):  # evidence over segments: read by their metrics
        return
    for items in explained.by_method.values():
        for number, item in enumerate(items):
            checked_evidence(evidence[number], number, len(item.tokens))


def _has_segments(explanations: Any) -> bool:
    """Whether any of the checked ``explanations`` is over segments (its evidence then
    names segments, which the token evidence metrics do not read)."""
    lists = explanations.values() if isinstance(explanations, Mapping) else [explanations]
    return any(getattr(item, "segments", None) is not None for items in lists for item in items)


def _positional(values: Sequence[Any] | None) -> list[Any] | None:
    """``values`` as a list read by position, numpy scalars made Python's: a pandas Series
    is indexed by its labels (a filtered one's start past 0), and ``np.int64(1)`` is no
    ``int`` to the label checks."""
    if values is None:
        return None
    return [lone_item(value) for value in values]  # a 0-d array or tensor: its value


def _shown(text) -> str:
    return " [SEP] ".join(text) if isinstance(text, tuple) else text


def _check_layer_axes(explained: ExplanationSet, metrics: list[str], classes: list) -> None:
    """A metric whose curve runs over the layers (the evidence metrics) scores a per-layer
    explanation at every layer and another once: with both in one call its rows would be
    half curve, half number. Refused naming the methods of each kind and the fix."""
    over_layers = [n for n, c in zip(metrics, classes, strict=True) if c.info.axis == "layer"]
    if not over_layers:
        return
    layered = [n for n, items in explained.by_method.items() if any(i.has_layers for i in items)]
    final = [n for n, items in explained.by_method.items() if not all(i.has_layers for i in items)]
    if layered and final:
        raise InvalidInputError(
            f"{over_layers[0]} scores per-layer explanations at every layer and the others "
            f"once: {', '.join(map(repr, layered))} explained with layer='all', "
            f"{', '.join(map(repr, final))} without; evaluate them in separate calls, or "
            "explain every method with layer='all'"
        )


def _check_layer(layer: Any, explained: ExplanationSet) -> None:
    """``layer`` picks a layer of per-layer explanations: an int within every method's
    layers; explanations with one set of scores (no per-layer axis) have none to pick."""
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
        raise InvalidInputError(
            f"layer={short_value(layer)} is {type_phrase(layer)}; give the index of a layer of "
            "per-layer explanations (an int; -1, the default, is the last)"
        )
    for name, items in explained.by_method.items():
        for item in items:
            if not item.has_layers:
                if layer != -1:
                    raise InvalidInputError(
                        f"layer={short_value(layer)} picks a layer of per-layer explanations, but "
                        f"the {name!r} explanations hold one set of scores each (made without "
                        "layer='all'), so there is no layer to pick; leave layer at -1, or "
                        "explain with layer='all'"
                    )
                continue
            count = len(item.layers)
            if not -count <= layer < count:
                raise InvalidInputError(
                    f"layer={short_value(layer)} is out of range: the {name!r} explanations have "
                    f"{count} layers (0 to {count - 1}; -1, the default, is the last)"
                )
