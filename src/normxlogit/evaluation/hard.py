"""Hard perturbation metrics: comprehensiveness and sufficiency (NormXLogit paper, eqs.
5-8) and insertion and deletion (pi-Soft paper, appendix E).

All four perturb whole tokens by rank. Comprehensiveness and deletion perturb the top
``int(len * k)`` tokens; sufficiency and insertion perturb every other eligible token.
Every method's, text's and ratio's perturbed copy of a chunk goes through the model in
batched forward passes, and metrics that share perturbations share the passes.

Where ``int(len * k)`` is 0 (a short text, a small ratio; segments with
``Protocol(unit="segment")``), comprehensiveness and deletion perturb nothing and
sufficiency and insertion everything, whatever the ranking: the authors' convention, kept,
with one warning per evaluation that counts those texts per ratio (their values are the
same for every method).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.numbering import text_word
from ..metrics import alike_to_float32
from .constant import constant_by_method, constant_which
from .context import (
    EvaluationContext,
    ExplanationSet,
    check_made_by,
    score_vector,
    segment_units,
)
from .perturb import counts, eligible, hard_masks, ranks
from .protocol import Protocol, given_protocol
from .registry import Metric, MetricInfo, metric_class, register_metric
from .runner import metric_precision


@dataclass
class HardOutcome:
    """Outputs of the perturbed copies, each ``[M, B, R]``."""

    fractions: tuple[float, ...]
    #: the explained label's probability (minus its contrast's; NaN for regression)
    target_probability: Tensor
    predicted: Tensor  # the predicted column (classifiers), or the value (regression)
    #: ``[B, R]`` the tokens (or segments) perturbed at each fraction: 0 perturbs none
    #: (top) or every one (the rest), alike for every method
    counts: Tensor


def hard_outcome(ctx: EvaluationContext, fractions: tuple[float, ...], top: bool) -> HardOutcome:
    """Run (once per context) the perturbations of every method at every fraction."""
    return ctx.cached(("hard", fractions, top), lambda: _run_hard(ctx, fractions, top))


def _run_hard(ctx: EvaluationContext, fractions: tuple[float, ...], top: bool) -> HardOutcome:
    batch = ctx.batch
    allowed = eligible(batch, ctx.protocol.protect)
    if ctx.units is None:
        rank = ranks(ctx.scores, allowed)
        count = counts(batch.attention_mask.sum(-1), fractions, allowed.sum(-1))
        masks = hard_masks(rank, allowed, count, top)  # [M, B, R, T]
    else:  # segments ranked, counted and perturbed whole (see .units)
        units = ctx.units.allowed(allowed)
        rank = ranks(ctx.units.scores, units)
        count = counts(ctx.units.count, fractions, units.sum(-1))
        masks = ctx.units.to_tokens(hard_masks(rank, units, count, top), allowed)
    methods, texts, ratios = masks.shape[:3]
    source = torch.arange(texts, device=masks.device)[None, :, None].expand(methods, -1, ratios)
    # each perturbed copy's (method x text) row of the context's targets and contrasts
    pairs = torch.arange(methods * texts, device=masks.device)
    owner = pairs[:, None].expand(-1, ratios).reshape(-1)
    regression = ctx.is_regression

    def reduce(logits: Tensor, rows: Tensor) -> Tensor:
        if regression:
            return torch.stack([torch.full_like(logits[:, 0], float("nan")), logits[:, 0]], -1)
        probs = logits.softmax(-1)
        chosen = ctx.explained_probability(probs, owner[rows])
        return torch.stack([chosen, probs.argmax(-1).to(probs.dtype)], -1)

    out = ctx.runner.replaced(
        source.reshape(-1), masks.reshape(-1, masks.shape[-1]), ctx.protocol.replacement, reduce
    ).reshape(methods, texts, ratios, 2)
    return HardOutcome(fractions, out[..., 0].cpu(), out[..., 1].cpu(), count.cpu())


def clean_target_probability(ctx: EvaluationContext) -> Tensor:
    """The explained label's probability (minus its contrast's) on the clean text ``[M, B]``."""
    probs = metric_precision(ctx.forward.logits).softmax(-1)  # [B, C]
    return ctx.explained_probability(probs).cpu()  # [M, B]


@dataclass
class Unperturbed:
    """One chunk's texts at whose fractions ``int(n * k)`` is 0, by hard metric: shared by
    the chunk's hard metrics (``ctx.cached``), so an evaluation warns once, not once per
    metric or chunk."""

    texts: int  # the chunk's texts
    unit: str  # "token" or "segment"
    #: metric: (perturbs the top, the Protocol setting of its fractions, {k: instances})
    by_metric: dict[str, tuple[bool, str, dict[float, set[int]]]] = field(default_factory=dict)
    told: bool = False  # the evaluation's warning was given
    #: method -> the chunk's instances whose explanation gives every unit the same score
    constant: dict[str, set[int]] | None = None
    #: a regressor's accuracy metric -> (methods, fractions, predictions [M, B, R], gold [B])
    predictions: dict[str, tuple[list[str], tuple[float, ...], np.ndarray, np.ndarray]] = field(
        default_factory=dict
    )


def unperturbed_message(chunks: list[Unperturbed]) -> str | None:
    """The warning about fractions that perturb no token (or segment) of some texts: how
    many texts, at which fractions of which metrics; None when there are none."""
    merged: dict[str, tuple[bool, str, dict[float, set[int]]]] = {}
    for chunk in chunks:
        for name, (top, setting, hits) in chunk.by_metric.items():
            _, _, into = merged.setdefault(name, (top, setting, {}))
            for k, instances in hits.items():
                into.setdefault(k, set()).update(instances)
    texts = {i for _, _, hits in merged.values() for found in hits.values() for i in found}
    if not texts:
        return None
    groups: dict[tuple, list[str]] = {}  # metrics of the same fractions' texts, together
    for name, (_, _, hits) in merged.items():
        if hits:
            key = tuple(sorted((k, tuple(sorted(found))) for k, found in hits.items()))
            groups.setdefault(key, []).append(name)
    where = "; ".join(
        f"{', '.join(names)} at k="
        + ", ".join(f"{k:g} ({len(found)} {text_word(len(found))})" for k, found in key)
        for key, names in groups.items()
    )
    unit = chunks[0].unit
    named = [n for n, (_, _, hits) in merged.items() if hits]
    tops = [n for n in named if merged[n][0]]
    rest = [n for n in named if not merged[n][0]]
    said = " and ".join(
        ([f"{_listed(tops)} {_perturb(tops)} no {unit}"] if tops else [])
        + ([f"{_listed(rest)} {_perturb(rest)} every {unit}"] if rest else [])
    )
    settings = " or ".join(f"Protocol({s}=...)" for s in sorted({merged[n][1] for n in named}))
    counted = f"their n {unit}s" + (", special tokens counted" if unit == "token" else "")
    return (
        f"{len(texts)} of {sum(c.texts for c in chunks)} {text_word()} have ratios k at which "
        f"int(n·k) = 0 of {counted}: {where}. There {said}, whatever the "
        "ranking: those values are the same for every method and tell none apart (the "
        f"authors' int(n·k), kept); larger {settings}, or longer texts, perturb at least one"
    )


def constant_explanations(ctx: EvaluationContext) -> dict[str, set[int]]:
    """Per method, the context's instances whose explanation scores every unit the hard
    metrics may perturb alike: they rank nothing, and ties keep text order."""
    allowed = eligible(ctx.batch, ctx.protocol.protect)
    if ctx.units is None:
        scores = ctx.scores
    else:
        allowed, scores = ctx.units.allowed(allowed), ctx.units.scores
    return constant_by_method(ctx, allowed, scores)


def constant_message(chunks: list[Unperturbed]) -> str | None:
    """The warning about explanations that score every unit alike (None: there are none):
    the hard metrics then perturb units in text order, which no method chose."""
    which = constant_which(chunk.constant for chunk in chunks)
    if which is None:
        return None
    unit = chunks[0].unit
    return (
        f"constant explanations ({which}): "
        f"every {unit} has the same score, so comprehensiveness, sufficiency, deletion and "
        f"insertion perturb their {unit}s in text order (the tie order), not by any ranking; "
        "their values are kept in the means"
    )


def same_predictions_message(chunks: list[Unperturbed]) -> str | None:
    """The warning about a regressor's fractions at which every text's prediction is the
    same (None: there are none): the Pearson correlation with the gold values is undefined
    there, so the metric's AOPC is n/a."""
    found: dict[str, tuple[set[str], set[float]]] = {}
    for name in dict.fromkeys(n for chunk in chunks for n in chunk.predictions):
        parts = [chunk.predictions[name] for chunk in chunks if name in chunk.predictions]
        methods, fractions = parts[0][0], parts[0][1]
        predicted = np.concatenate([part[2] for part in parts], axis=1)  # [M, B, R]
        gold = np.concatenate([part[3] for part in parts])
        known = np.isfinite(gold)
        if known.sum() < 2 or np.ptp(gold[known]) == 0:  # said before any work
            continue
        for m, method in enumerate(methods):
            for r, fraction in enumerate(fractions):
                values = predicted[m, known, r]
                if np.isfinite(values).all() and alike_to_float32(values):
                    names, where = found.setdefault(name, (set(), set()))
                    names.add(method)
                    where.add(fraction)
    if not found:
        return None
    said = "; ".join(
        f"{name} at k=" + ", ".join(f"{k:g}" for k in sorted(where)) + f" ({', '.join(sorted(m))})"
        for name, (m, where) in found.items()
    )
    return (
        f"a regressor's {', '.join(found)} are n/a: every {text_word(1)}'s prediction is "
        f"the same at some ratios ({said}), as when texts of equal length have every token "
        "replaced there, so the Pearson correlation with the gold values is undefined at "
        "that ratio and so is the AOPC over the ratios; evaluate texts of different lengths, "
        "or leave those ratios out (Protocol(ratios=[...]))"
    )


def _perturb(names: list[str]) -> str:
    """The verb that agrees with ``names``: one metric perturbs, several perturb."""
    return "perturbs" if len(names) == 1 else "perturb"


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join(filter(None, [", ".join(names[:-1]), *names[-1:]]))


class HardMetric(Metric):
    """Shared loop: one row per method x text x fraction."""

    #: comprehensiveness and sufficiency read ``ratios``; deletion and insertion (Flip)
    #: read ``step`` and ``steps`` instead
    protocol_settings = ("replacement", "protect", "ratios", "unit")
    #: every hard metric's values were once keyed by all three fraction settings
    keyed_at_default = ("step", "steps")
    perturbs_input = True

    top: bool  # perturb the top-ranked tokens (True) or all the others
    #: the Protocol setting that sets the fractions (named by the warning)
    fraction_setting = "ratios"

    def __init__(self) -> None:
        self._chunks: list[Unperturbed] = []  # shared with the other hard metrics

    def fractions(self, protocol: Protocol) -> tuple[float, ...]:
        return protocol.ratios

    def planned_rows(self, protocol: Protocol, methods: int, texts: int) -> dict:
        """One perturbed copy per method, text and fraction (shared with the metric of the
        same fractions and side: comp_cd and comp_acc run them once)."""
        fractions = self.fractions(protocol)
        return {("hard", fractions, self.top): methods * texts * len(fractions)}

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        self.check(ctx)
        outcome = hard_outcome(ctx, self.fractions(ctx.protocol), self.top)
        values, gold = self.values(ctx, outcome)
        self._note_unperturbed(ctx, outcome)
        out = []
        for m in range(len(ctx.methods)):
            for b in range(len(ctx.instances)):
                for r, fraction in enumerate(outcome.fractions):
                    extra = {} if gold is None else {"gold": float(gold[b])}
                    out.append(ctx.row(m, b, fraction, values[m, b, r], **extra))
        return out

    def _note_unperturbed(self, ctx: EvaluationContext, outcome: HardOutcome) -> None:
        """Note the chunk's texts whose count is 0 at a fraction (for :meth:`finish`)."""
        unit = "token" if ctx.units is None else "segment"
        chunk = ctx.cached(("hard", "unperturbed"), lambda: Unperturbed(len(ctx.instances), unit))
        self._chunks.append(chunk)
        none = (outcome.counts == 0).tolist()  # [B, R]
        hits: dict[float, set[int]] = {}
        for b, row in enumerate(none):
            for fraction, empty in zip(outcome.fractions, row, strict=True):
                if empty:
                    hits.setdefault(fraction, set()).add(ctx.instances[b])
        chunk.by_metric[self.info.name] = (self.top, self.fraction_setting, hits)
        if chunk.constant is None:
            chunk.constant = constant_explanations(ctx)

    def finish(self, protocol: Protocol) -> None:
        """Warn once per evaluation (by the first hard metric to finish, for them all)
        about the fractions that perturb no token of some texts."""
        if not self._chunks or any(chunk.told for chunk in self._chunks):
            return
        for chunk in self._chunks:
            chunk.told = True
        if (message := unperturbed_message(self._chunks)) is not None:
            warnings.warn(message, NormXLogitWarning, stacklevel=3)
        if (message := constant_message(self._chunks)) is not None:
            warnings.warn(message, NormXLogitWarning, stacklevel=3)
        if (message := same_predictions_message(self._chunks)) is not None:
            warnings.warn(message, NormXLogitWarning, stacklevel=3)

    def check(self, ctx: EvaluationContext) -> None:
        """Refuse contexts the metric means nothing for."""
        reason = self.refusal(ctx.model)
        if reason is not None:
            raise InvalidInputError(reason)

    def values(self, ctx: EvaluationContext, outcome: HardOutcome) -> tuple[Tensor, Tensor | None]:
        raise NotImplementedError


class ConfidenceDrop(HardMetric):
    """``p(y | x) - p(y | perturbed x)`` for the explained label ``y`` (eqs. 5 and 7)."""

    regression_refusal = (
        "needs class probabilities; a regression model is scored by accuracy only "
        "(comp_acc / suff_acc: Pearson correlation with the gold values)"
    )
    #: p(target) - p(contrast) lies in [-1, 1], so its drop in [-2, 2]
    contrast_range = (-2.0, 2.0)

    def values(self, ctx, outcome):
        clean = clean_target_probability(ctx)
        return clean.unsqueeze(-1) - outcome.target_probability, None


class Accuracy(HardMetric):
    """Accuracy against gold labels (eqs. 6 and 8); Pearson correlation for regression."""

    def values(self, ctx, outcome):
        if ctx.gold is None:
            raise InvalidInputError(f"{self.info.name} needs gold labels: pass labels=[...]")
        gold = ctx.gold.cpu()
        if ctx.is_regression:  # noted for the warning on ratios of one prediction
            unit = "token" if ctx.units is None else "segment"
            chunk = ctx.cached(
                ("hard", "unperturbed"), lambda: Unperturbed(len(ctx.instances), unit)
            )
            chunk.predictions[self.info.name] = (
                list(ctx.methods),
                tuple(outcome.fractions),
                metric_precision(outcome.predicted).cpu().numpy(),
                gold.float().numpy(),
            )
            return outcome.predicted, gold
        return (outcome.predicted == gold[None, :, None].to(outcome.predicted)).float(), None


class Flip(HardMetric):
    """Whether the prediction differs from the clean one, at 5% steps (appendix E)."""

    regression_refusal = (
        "counts prediction flips, which needs a label set; a regression model has none"
    )

    fraction_setting = "step"
    protocol_settings = ("replacement", "protect", "step", "steps", "unit")
    keyed_at_default = ("ratios",)

    def fractions(self, protocol):
        return protocol.step_fractions

    def values(self, ctx, outcome):
        clean = ctx.predicted.cpu()[None, :, None].to(outcome.predicted)
        return (outcome.predicted != clean).float(), None


def _info(name, description, higher, value_range, axis="ratio", summary="aopc", **extra):
    return MetricInfo(name, description, higher, value_range, axis, summary, **extra)


@register_metric
class CompCD(ConfidenceDrop):
    info = _info("comp_cd", "comprehensiveness: confidence drop, top-k removed", True, (-1, 1))
    top = True


@register_metric
class SuffCD(ConfidenceDrop):
    info = _info("suff_cd", "sufficiency: confidence drop, only top-k kept", False, (-1, 1))
    top = False


def _accuracy_info(name: str, which: str, higher: bool) -> MetricInfo:
    return _info(
        name,
        f"{which}: accuracy (Pearson for regression)",
        higher,
        (-1, 1),
        across_instances="accuracy",
        needs_labels=True,
    )


@register_metric
class CompAcc(Accuracy):
    info = _accuracy_info("comp_acc", "comprehensiveness, top-k removed", False)
    top = True


@register_metric
class SuffAcc(Accuracy):
    info = _accuracy_info("suff_acc", "sufficiency, only top-k kept", True)
    top = False


@register_metric
class Deletion(Flip):
    info = _info(
        "deletion", "flip probability as top tokens are removed", True, (0, 1), "step", "auc"
    )
    top = True


@register_metric
class Insertion(Flip):
    info = _info(
        "insertion", "flip probability as top tokens are put back", False, (0, 1), "step", "auc"
    )
    top = False


def perturbed_tokens(
    model,
    explanation,
    metric: str,
    fraction: float,
    protocol: Protocol | None = None,
    layer: int = -1,
) -> list[bool]:
    """Which of ``explanation``'s tokens the hard ``metric`` perturbs at ``fraction``: the
    same ranking, count and protected tokens as :func:`normxlogit.evaluate` (so a page can
    show what a curve's point measured)."""
    cls = metric_class(metric)
    if not issubclass(cls, HardMetric):
        raise InvalidInputError(
            f"{metric!r} does not perturb whole tokens; choose comp_*, suff_*, insertion or "
            "deletion"
        )
    if not 0.0 <= fraction <= 1.0:
        raise InvalidInputError(f"the ratio is a fraction in [0, 1], got {fraction}")
    from .evaluate import check_contrast_inputs  # evaluate reads this module's metrics

    explained = ExplanationSet.build([explanation])
    check_made_by(model, explained)
    # made against a contrast input: evaluate refuses the metric, so no point of it is shown
    check_contrast_inputs(explained, [metric], [cls])
    protocol = given_protocol(protocol).resolved(model)
    if explanation.input_ids is not None:
        batch = model.encoder.encode_ids([explanation.input_ids], [explanation.text])
    else:
        position = explanation.settings.get("mask_position")
        batch = model.encode([explanation.text], mask_position=position)
    tokens = model.tokenizer.convert_ids_to_tokens(batch.input_ids[0].tolist())
    if tokens != explanation.tokens:
        raise InvalidInputError(
            "the explanation's tokens differ from this model's tokenisation; use the model "
            "that made it, before merging subwords into words"
        )
    allowed = eligible(batch, protocol.protect)
    if protocol.unit == "segment":  # segments ranked, counted and spread over their tokens
        units = segment_units({explanation.method: [explanation]}, batch, layer, [0])
        segments = units.allowed(allowed)
        rank = ranks(units.scores[0], segments)
        count = counts(units.count, (float(fraction),), segments.sum(-1))
        chosen = hard_masks(rank[None], segments, count, cls.top)
        return units.to_tokens(chosen, allowed)[0, 0, 0].tolist()
    scores = torch.as_tensor(score_vector(explanation, layer), dtype=torch.float)[None]
    rank = ranks(scores, allowed)
    count = counts(batch.attention_mask.sum(-1), (float(fraction),), allowed.sum(-1))
    return hard_masks(rank[None], allowed, count, cls.top)[0, 0, 0].tolist()
