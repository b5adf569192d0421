"""What metrics read: explanations lined up with the texts they explain, a chunk at a time.

``ExplanationSet`` gathers explanations by method and checks that every method explains
the same texts. ``EvaluationContext`` holds one chunk of those texts encoded for the model,
its clean forward pass, every method's scores in padded coordinates ``[M, B, T]`` and the
target columns, plus a cache so that metrics sharing perturbations (``comp_cd`` and
``comp_acc``) run them once.
"""

from __future__ import annotations

import json
import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.numbering import text_name
from ..common.outputs import lone_item, short_value, type_phrase, with_article
from ..explanations.base import RECORDED_NOT_OPTIONS
from ..explanations.explanation import Explanation
from ..explanations.generation import GenerationExplanation
from ..explanations.segments import SegmentScores
from ..model.adapter import ExplainableModel, ForwardResult
from ..model.inputs import Batch, TextInput
from ..model.targets import _column, recorded_column
from ..model.tasks import TaskKind
from .protocol import Protocol
from .runner import PerturbationRunner
from .units import Units, check_segment_scores, read_segments

Explanations = Sequence[Explanation] | Mapping[str, Sequence[Explanation]]

#: what ``evaluate`` takes as its explanations, said when it is given something else
EXPECTED_EXPLANATIONS = (
    "give a list of Explanation (model.explain(...) results, one or more methods), or a "
    "dict {method name: list of Explanation}"
)


def _kind(value: Any) -> str:
    """``value``'s type for a message, with its items' for a list: 'a list of str'."""
    name = type(value).__name__
    if isinstance(value, (list, tuple)) and value:
        inner = {type(item).__name__ for item in value}
        return f"a {name} of {', '.join(sorted(inner))}"
    return "None" if value is None else with_article(name)


def explained_groups(value: Any) -> Any:
    """What the workflows' explain functions return (an ``Explained``, a floor above,
    known by its dict of explanations by method) as that dict, so their result passes
    straight on; anything else as it is."""
    groups = getattr(value, "explanations", None)
    if type(value).__name__ == "Explained" and isinstance(groups, Mapping):
        skipped = getattr(value, "skipped", None)
        if not any(groups.values()) and isinstance(skipped, Mapping) and skipped:
            why = "; ".join(f"{name}: {reason}" for name, reason in skipped.items())
            raise InvalidInputError(
                f"no explanations to evaluate: every method was skipped (Explained.skipped "
                f"says why: {why:.300})"
            )
        return groups
    if type(value).__name__ == "Evaluated" and hasattr(value, "explained"):
        raise InvalidInputError(
            "explanations is an Evaluated (what explain_and_evaluate returns): it is scored "
            "already (.result); pass its .explained to score it again"
        )
    return value


def _checked_items(items: Any, where: str) -> list[Any]:
    """``items`` (one method's, or all of a list's) as a list of Explanation, or refused in
    one line naming what ``where`` holds."""
    if isinstance(items, Explanation):
        return [items]
    if items is None or isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise InvalidInputError(f"{where} is {_kind(items)}; {EXPECTED_EXPLANATIONS}")
    given, items = items, list(items)  # a generator read once
    for item in items:
        if isinstance(item, (list, tuple)):
            raise InvalidInputError(
                f"{where} is {_kind(given)} (one list per method?); pass a dict {{method "
                "name: list of Explanation} to name each method, or one flat list"
            )
        if isinstance(item, GenerationExplanation):  # explain_generations' result
            raise InvalidInputError(
                f"{where} holds GenerationExplanations (explanations of generations); score "
                "them with normxlogit.evaluate_generations"
            )
        if not isinstance(item, Explanation):
            raise InvalidInputError(
                f"{where} holds {_kind(item)}, not an Explanation; {EXPECTED_EXPLANATIONS}"
            )
    return items


def checked_explanations(explanations: Any) -> list[Explanation] | dict[Any, list[Explanation]]:
    """``evaluate``'s explanations checked for shape before any work: a list of
    Explanation (one lone Explanation included), or a dict of such lists by method name;
    anything else is refused in one line naming what was given. What the workflows'
    explain functions return is read as its explanations by method."""
    explanations = explained_groups(explanations)
    if isinstance(explanations, Mapping):
        checked = {}
        for name, items in explanations.items():
            if isinstance(items, Explanation):
                raise InvalidInputError(
                    f"explanations[{name!r}] is one Explanation, not a list; give "
                    f"{{{name!r}: [explanation, ...]}}"
                )
            checked[name] = _checked_items(items, f"explanations[{name!r}]")
        return checked
    return _checked_items(explanations, "explanations")


def unrankable(item: Explanation | GenerationExplanation) -> bool:
    """Whether evaluate refuses ``item`` (any explained step of a generation's): NaN or
    infinite scores rank no tokens (one that contrasts its target with itself explains
    nothing and is left out instead)."""
    if isinstance(item, GenerationExplanation):
        return any(unrankable(item.step(index)) for index in item.steps_with_scores)
    return not item.contrast_is_target and not np.isfinite(item.scores).all()


@dataclass
class ExplanationSet:
    """Explanations by method, each list aligned with ``texts``."""

    texts: list[TextInput]
    by_method: dict[str, list[Explanation]]

    @property
    def methods(self) -> list[str]:
        return list(self.by_method)

    @property
    def contrast_is_target(self) -> list[int]:
        """The texts (indices) some method explains against its own target: nothing is
        explained there (``Explanation.contrast_is_target``), so they are not evaluated."""
        return sorted(
            {
                index
                for items in self.by_method.values()
                for index, item in enumerate(items)
                if item.contrast_is_target
            }
        )

    @classmethod
    def build(cls, explanations: Explanations) -> ExplanationSet:
        """Group by method (a mapping names the methods itself); texts in first-seen order."""
        explanations = checked_explanations(explanations)
        if isinstance(explanations, Mapping):
            groups = {str(name): list(items) for name, items in explanations.items()}
        else:
            groups = {}
            for item in explanations:
                groups.setdefault(item.method, []).append(item)
        if not groups or not any(groups.values()):
            raise InvalidInputError("no explanations to evaluate; pass model.explain(...) results")
        for name, items in groups.items():
            check_one_setting(name, items, named=isinstance(explanations, Mapping))
            for index, item in enumerate(items):
                _refuse_no_text(name, index, item)
                if unrankable(item):
                    raise InvalidInputError(
                        f"explanation {index} of method {name!r} ({item.text!r:.60}) holds "
                        "NaN or infinite scores, which rank no tokens; explain it again, or "
                        "leave it out"
                    )
        orders = [[item.text for item in items] for items in groups.values()]
        if all(order == orders[0] for order in orders):
            # lists that explain the same texts in the same order align by position, so a
            # dataset that holds a text twice (STS-B does) is scored once per instance
            return cls(orders[0], groups)
        first_seen: dict[TextInput, None] = {}  # an ordered set
        for order in orders:
            for text in order:
                first_seen.setdefault(text, None)
        texts = list(first_seen)
        aligned = {}
        for name, items in groups.items():
            by_text = {}
            for item in items:
                if item.text in by_text:
                    raise InvalidInputError(
                        f"method {name!r} explains the same text twice (e.g. with different "
                        "settings); pass a dict {name: explanations} to tell them apart"
                    )
                by_text[item.text] = item
            missing = [t for t in texts if t not in by_text]
            if missing:
                raise InvalidInputError(
                    f"method {name!r} has no explanation for {len(missing)} text(s), e.g. "
                    f"{missing[0]!r}; every method must explain the same texts"
                )
            aligned[name] = [by_text[t] for t in texts]
        return cls(texts, aligned)


def _refuse_no_text(name: str, index: int, item: Explanation) -> None:
    """An explanation loaded from a file without its "text" cannot be scored: the metrics
    run the model on the text again, and an empty one was refused as the user's text."""
    parts = item.text if isinstance(item.text, tuple) else (item.text,)
    if all(isinstance(part, str) and part.strip() for part in parts):
        return
    raise InvalidInputError(
        f"explanation {index} of method {name!r} records no text (its file gave no "
        '"text"), so the model cannot read it again to score it; explain the text again'
    )


def _differing_option(items: Sequence[Explanation]) -> tuple[str, Any, Any] | None:
    """The first method option (not a per-text key: target, layer...) two explanations of
    one method record with different values, and the two values; None where all agree."""
    first = getattr(items[0], "settings", None) or {}
    for item in items[1:]:
        settings = getattr(item, "settings", None) or {}
        for key, value in first.items():
            if key in RECORDED_NOT_OPTIONS or key not in settings:
                continue
            if _same(value, settings[key]):
                continue
            return key, value, settings[key]
    return None


def _explained_input(item: Explanation | GenerationExplanation) -> Any:
    """What an explanation explains: its text, or a generation's token ids."""
    if isinstance(item, GenerationExplanation):
        return item.input_ids
    return item.text


def _same(one: Any, other: Any) -> bool:
    """Whether two recorded setting values are equal, as JSON (a tuple saved is a list)."""
    return json.dumps(one, default=str, sort_keys=True) == json.dumps(
        other, default=str, sort_keys=True
    )


def check_one_setting(
    name: str, items: Sequence[Explanation | GenerationExplanation], named: bool
) -> None:
    """One method's explanations made with different options (``steps=3`` and ``steps=5``)
    would be averaged as one method and the option dropped from the result's settings: a
    flat list is refused (its explanations are grouped by method name alone), a dict's
    list warned about (the caller named it). Generations are told apart by their tokens."""
    if len(items) < 2 or (differ := _differing_option(items)) is None:
        return
    key, one, other = differ
    thing = "generation" if isinstance(items[0], GenerationExplanation) else "text"
    inputs = [repr(_explained_input(item)) for item in items]
    twice = f"the same {thing} twice" if len(set(inputs)) < len(inputs) else f"its {thing}s"
    if not named:
        raise InvalidInputError(
            f"method {name!r} explains {twice} with different settings ({key}={one!r} and "
            f"{key}={other!r}); pass a dict {{name: explanations}} to tell them apart"
        )
    warnings.warn(
        f"explanations[{name!r}] were made with different settings ({key}={one!r} and "
        f"{key}={other!r}): they are scored as one method and the result records no {key}; "
        "give each setting its own name in the dict",
        NormXLogitWarning,
        stacklevel=4,
    )


@dataclass
class EvaluationContext:
    """One chunk of texts, encoded, with the clean prediction and every method's scores."""

    model: ExplainableModel
    protocol: Protocol
    batch: Batch  # on the model's device
    runner: PerturbationRunner
    instances: list[int]  # global index of each row
    methods: list[str]
    scores: Tensor  # [M, B, T], padded coordinates, NaN on padding
    targets: Tensor  # [M, B] columns of the output space each explanation is about
    #: [M, B] the column each target is contrasted with (-1: none); a contrastive
    #: explanation's probability metrics read p(target) - p(contrast)
    contrasts: Tensor
    gold: Tensor | None  # [B]: label columns, or values for regression
    evidence: list[np.ndarray | None]
    explanations: dict[str, list[Explanation]]
    #: the layer of per-layer explanations that ``scores`` holds (an index of their axis)
    layer: int = -1
    #: the segments the metrics rank and perturb (``Protocol(unit="segment")``), or None
    units: Units | None = None
    _cache: dict[Any, Any] = field(default_factory=dict)
    _forward: ForwardResult | None = None

    @property
    def forward(self) -> ForwardResult:
        """The clean pass, run when a metric first reads it: metrics that read only the
        explanations (evidence, plausibility) run no model at all."""
        if self._forward is None:
            self._forward = self.model.forward(self.batch)
        return self._forward

    @property
    def predicted(self) -> Tensor:
        """The clean prediction's column per text ``[B]``."""
        return self.forward.logits.argmax(-1)

    @property
    def is_regression(self) -> bool:
        return self.model.task.kind is TaskKind.REGRESSION

    def explained_probability(self, probs: Tensor, rows: Tensor | None = None) -> Tensor:
        """The explained quantity from probabilities ``[N, C]``: the target's probability,
        minus the contrast's for a contrastive explanation. ``rows`` ``[N]``: the flat
        (method x text) index of each row of ``probs``; None: ``probs`` is ``[B, C]`` and
        every method's value is read from it (``[M, B]``)."""
        if rows is None:
            texts = torch.arange(probs.shape[0], device=probs.device)[None, :]
            targets, contrasts = self.targets, self.contrasts
            picked = probs[texts, targets]
            other = probs[texts, contrasts.clamp_min(0)]
        else:
            targets, contrasts = self.targets.reshape(-1)[rows], self.contrasts.reshape(-1)[rows]
            picked = probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            other = probs.gather(-1, contrasts.clamp_min(0).unsqueeze(-1)).squeeze(-1)
        return torch.where(contrasts >= 0, picked - other, picked)

    def cached(self, key: Any, compute: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def row(self, method: int, row: int, x: float | None, value: float, **extra) -> dict:
        """A tidy result row."""
        return {
            "instance": self.instances[row],
            "method": self.methods[method],
            "x": np.nan if x is None else float(x),
            "value": float(value),
            **extra,
        }


def check_made_by(model: ExplainableModel, explained: ExplanationSet) -> None:
    """Refuse explanations stamped with other weights than ``model``'s at its dtype: their
    scores would be evaluated on a model they do not explain (names and tokenizers do not
    tell models apart). Explanations without a stamp, or made at another dtype, pass."""
    own = model.weights_signature()
    dtype = own.partition(":")[0]
    for name, items in explained.by_method.items():
        other = [
            i
            for i, item in enumerate(items)
            if item.model_signature.partition(":")[0] == dtype and item.model_signature != own
        ]
        if other:
            made_by = items[other[0]].model or "an unnamed model"
            shown = ", ".join(map(str, other[:5])) + (", ..." if len(other) > 5 else "")
            raise InvalidInputError(
                f"the {name!r} explanations of texts {shown} were made by other weights than "
                f"this model's ({made_by!r}, weights {items[other[0]].model_signature}; this "
                f"model {model.name!r}, weights {own}): evaluate with the model that made them"
            )


def build_context(
    model: ExplainableModel,
    protocol: Protocol,
    explanations: ExplanationSet,
    instances: list[int],
    gold: Sequence[Any] | None,
    evidence: Sequence[Any] | None,
    layer: int,
    rows_per_forward: int | None,
    max_tokens_per_batch: int | None = None,
    tokens_per_forward: int | None = None,
) -> EvaluationContext:
    """Encode a chunk of texts and line the scores up with it (the clean pass runs when a
    metric first reads ``forward``)."""
    texts = [explanations.texts[i] for i in instances]
    chunk = {name: [items[i] for i in instances] for name, items in explanations.by_method.items()}
    ids = [item.input_ids for item in next(iter(chunk.values()))]
    if all(row is not None for row in ids):  # steps of a generation: their own token ids
        batch = model.encoder.encode_ids(ids, texts)
    else:  # read where each was explained (a masked LM's mask_position, if one was given)
        positions = [item.settings.get("mask_position") for item in next(iter(chunk.values()))]
        given = positions if any(p is not None for p in positions) else None
        batch = model.encode(texts, mask_position=given, first_index=instances)
    batch = batch.to(model.device)
    scores = torch.full((len(chunk), len(texts), batch.input_ids.shape[1]), float("nan"))
    targets = torch.zeros(len(chunk), len(texts), dtype=torch.long)
    contrasts = torch.full_like(targets, -1)
    for m, (name, items) in enumerate(chunk.items()):
        for row, item in enumerate(items):
            real = batch.real_positions(row).cpu()
            tokens = model.tokenizer.convert_ids_to_tokens(batch.input_ids[row, real].tolist())
            if tokens != item.tokens:
                raise InvalidInputError(
                    f"the {name!r} explanation of {text_name(instances[row])} has tokens that "
                    "differ from this model's tokenisation; evaluate with the model that made "
                    "it, and before merging subwords into words"
                )
            scores[m, row, real] = torch.as_tensor(score_vector(item, layer), dtype=torch.float)
            if "answer_ids" in item.settings:  # a whole answer: no one target column
                continue
            targets[m, row] = _target_column(model, item)
            if item.contrasts:
                contrasts[m, row] = recorded_column(model, item.contrasts[_target_index(item)])
    units = segment_units(chunk, batch, layer, instances) if protocol.unit == "segment" else None
    return EvaluationContext(
        model=model,
        protocol=protocol,
        batch=batch,
        runner=PerturbationRunner(
            model, batch, rows_per_forward, max_tokens_per_batch, tokens_per_forward
        ),
        instances=instances,
        methods=list(chunk),
        scores=scores.to(model.device),
        targets=targets.to(model.device),
        contrasts=contrasts.to(model.device),
        gold=_gold_tensor(model, [gold[i] for i in instances]) if gold is not None else None,
        evidence=[evidence[i] for i in instances] if evidence is not None else [None] * len(texts),
        explanations=chunk,
        layer=layer,
        units=units,
    )


def segment_units(
    chunk: dict[str, list[Explanation]], batch: Batch, layer: int, instances: Sequence[int]
) -> Units:
    """The chunk's segments as units: each text's segments must be the same in every
    method's explanation (a token method's reduced, a segment method's own); ``instances``
    are the texts' numbers, for messages. A segment the model did not read (truncated
    away) has no token, so it is never ranked, kept or perturbed."""
    items = next(iter(chunk.values()))
    width = max(len(item.segments.texts) if item.segments else 0 for item in items)
    members = torch.full(batch.input_ids.shape, -1, dtype=torch.long)
    scores = torch.full((len(chunk), len(items), width), float("nan"))
    count = torch.zeros(len(items), dtype=torch.long)
    for m, (name, explained) in enumerate(chunk.items()):
        for row, item in enumerate(explained):
            if item.segments is None:
                raise InvalidInputError(
                    f"unit='segment' scores segments, and the {name!r} explanation of "
                    f"{text_name(instances[row])} has none: explain with segments='sentences' "
                    "(or the texts' segments)"
                )
            first = items[row].segments
            check_same_segments(item, first, name, instances[row])
            vector = segment_vector(item, layer)
            check_segment_scores(vector, read_segments(item.segments), name, instances[row])
            scores[m, row, : len(first.texts)] = torch.as_tensor(vector, dtype=torch.float)
    for row, item in enumerate(items):
        real = batch.real_positions(row).cpu()
        inside = [-1 if s is None else s for s in item.segments.token_segments]
        members[row, real] = torch.as_tensor(inside, dtype=torch.long)
        count[row] = len(item.segments.texts)
    device = batch.input_ids.device
    return Units(members.to(device), scores.to(device), count)


def check_same_segments(item: Explanation, first: SegmentScores, name: str, instance: int) -> None:
    """Refuse ``item`` (the ``name`` method's explanation of text ``instance``) when its
    segments are not the first method's segments (``first``) of the same text: scores,
    evidence indices and removals are read per segment index, which must mean the same
    segment in every method."""
    if (item.segments.texts, item.segments.token_segments) != (
        first.texts,
        first.token_segments,
    ):
        raise InvalidInputError(
            f"the {name!r} explanation of {text_name(instance)} has other "
            "segments than the first method's; explain every method with the same segments="
        )


def segmented(ctx: EvaluationContext, metric: str, doing: str):
    """Each explanation of the context with segments, as ``(method index, row,
    explanation, its segment scores, which segments the model read)``; one without is
    refused, naming what ``metric`` does with segments (``doing``), and so is one whose
    segments read hold NaN or infinite scores (they rank nothing), and one whose segments
    differ from the first method's for the same text (one evidence list, one segment
    index, must mean the same segment in every method). A segment the model did
    not read (truncated away) scores NaN (a token method's) or nothing it saw (a segment
    method's): the metrics rank only the segments read."""
    for m, name in enumerate(ctx.methods):
        for b, item in enumerate(ctx.explanations[name]):
            if item.segments is None:
                raise InvalidInputError(
                    f"{metric} {doing}, and the {name!r} explanation of "
                    f"{text_name(ctx.instances[b])} has none: explain with segments=..."
                )
            first = ctx.explanations[ctx.methods[0]][b].segments  # refused above if None
            check_same_segments(item, first, name, ctx.instances[b])
            scores = np.asarray(segment_vector(item, ctx.layer), dtype=np.float64)
            read = read_segments(item.segments)
            check_segment_scores(scores, read, name, ctx.instances[b])
            yield m, b, item, scores, read


def segment_vector(item: Explanation, layer: int) -> np.ndarray:
    """The explanation's segment scores for the target :func:`score_vector` reads."""
    scores = item.segments.scores
    if item.has_layers:
        scores = scores[layer]
    if item.has_targets_axis:
        scores = scores[:, _target_index(item)]
    return scores


def score_vector(item: Explanation, layer: int) -> np.ndarray:
    """The explanation's scores for its first target (its prediction by default)."""
    scores = item.scores_3d()  # [L, T, K]
    return scores[layer, :, _target_index(item)]


def _target_index(item: Explanation) -> int:
    """The score column to evaluate: the predicted label's, when there are several."""
    return item.targets.index(item.label) if item.label in item.targets else 0


def _target_column(model: ExplainableModel, item: Explanation) -> int:
    if model.task.kind is TaskKind.REGRESSION:
        return 0
    return recorded_column(model, item.targets[_target_index(item)])


def check_gold_labels(model: ExplainableModel, labels: list[Any]) -> None:
    """Refuse gold labels the model has no output for (or, for a regressor, no number),
    as scoring would: callers check them before explaining. NumPy's scalars are read as
    the Python values they hold, as evaluate reads them. A classifier's gold label that
    is no label at all (None, a bool, a float, a list), or a regressor's gold value that
    is no finite number (None, NaN, inf, a bool, a str), is named by its position."""
    plain = [lone_item(v) for v in labels]  # np.int64(1), np.array(1), torch.tensor(1)
    check = _not_a_value if model.task.kind is TaskKind.REGRESSION else _not_a_label
    for number, label in enumerate(plain):
        if (problem := check(model, label, number)) is not None:
            raise InvalidInputError(problem)
    _gold_tensor(model, plain)


def _not_a_value(model: ExplainableModel, label: Any, number: int) -> str | None:
    """Why ``label``, a regressor's gold value for text ``number``, is no finite number
    (None: it is one). NaN or inf would make every correlation NaN, so every accuracy
    cell n/a; a bool is no score; a string is not read as a number."""
    where = f"of {text_name(number)} (labels[{number}])"
    fix = f"a regressor ({model.task.labels[0]!r}) is scored against finite numbers"
    if isinstance(label, numbers.Real) and not isinstance(label, bool):
        try:
            value = float(label)
        except OverflowError:  # 10**400: beyond a float64, no score to correlate with
            return f"gold value {short_value(label)} {where} is beyond a float64; {fix}"
        if math.isnan(value):
            return (
                f"the gold value {where} is NaN, a missing value; {fix}: give it a value "
                "or leave the text out"
            )
        if math.isinf(value):
            return f"gold value {value} {where} is not finite; {fix}"
        return None
    if label is None or type(label).__name__ == "NAType":  # pandas' NA
        return f"the gold value {where} is missing ({label}); {fix}"
    hint = ""
    if isinstance(label, str):
        try:
            float(label)
            hint = f": float({label!r}) if the values were read as text"
        except ValueError:
            pass
    return f"gold value {label!r:.40} {where} is {type_phrase(label)}; {fix}{hint}"


def _not_a_label(model: ExplainableModel, label: Any, number: int) -> str | None:
    """Why ``label``, the gold label of text ``number``, is no label name or index (None:
    it is one of those kinds; whether the model has it is checked after)."""
    if isinstance(label, str) or (isinstance(label, int) and not isinstance(label, bool)):
        return None
    task = model.task
    if task.has_label_set:
        shown = [f"{i}={name}" for i, name in enumerate(task.labels[:6])]
        choices = ", ".join(shown) + (", ..." if len(task.labels) > 6 else "")
        fix = f"give a label name or an int index ({choices})"
    else:
        fix = "give a token string or an int vocabulary id"
    where = f"of {text_name(number)} (labels[{number}])"
    if label is None or type(label).__name__ == "NAType":  # pandas' NA (an Int64 column)
        return f"the gold label {where} is missing ({label}); {fix}"
    if isinstance(label, float) and label != label:
        return f"the gold label {where} is NaN, a missing label; {fix}"
    hint = ""
    if isinstance(label, float) and label.is_integer():
        hint = f": int({label!r}) if the labels were read as floats (a column with blanks)"
    return f"gold label {label!r:.40} {where} is {type_phrase(label)}; {fix}{hint}"


def _gold_tensor(model: ExplainableModel, labels: list[Any]) -> Tensor:
    if model.task.kind is TaskKind.REGRESSION:
        try:
            return torch.tensor([float(v) for v in labels])
        except (TypeError, ValueError):
            raise InvalidInputError("regression gold labels must be numbers") from None
    return torch.tensor([_column(model, label) for label in labels])
