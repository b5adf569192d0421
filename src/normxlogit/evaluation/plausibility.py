"""Plausibility: agreement of an explanation with a human rationale (ERASER; ferret).

The human rationale is the evidence vector over the explanation's tokens (1: a token a
person marked as the reason), as for evidence alignment. Only the tokens of the text
itself take part: special tokens, a chat prompt's own tokens (its system message, the
template around the text) and a masked LM's target position are left out of both
vectors, as ferret drops the first and last token, since no person could mark them.

- ``token_f1``: the F1 of the explanation's chosen tokens against the rationale, per text
  (ERASER's token-level F1, macro-averaged). The protocol's ``discretize`` chooses them:
  the ``top_k`` highest-scoring (ferret's way, k = 5), as many as the rationale has
  (precision = recall), or those scoring at least ``score_threshold`` of the highest;
- ``token_iou``: their intersection over union (ERASER's token-level IOU);
- ``auprc``: the area under the precision-recall curve of the scores against the
  rationale (ERASER's soft-score metric: scikit-learn's curve, trapezoid area).

Like the evidence metrics, they read the explanations alone: no model runs.
"""

from __future__ import annotations

import numpy as np

from .context import EvaluationContext
from .evidence import with_evidence
from .protocol import Protocol
from .registry import Metric, MetricInfo, register_metric


def top_k_tokens(scores: np.ndarray, k: int) -> np.ndarray:
    """A 0/1 vector marking the ``k`` highest scores (ties: the earlier token first)."""
    order = np.argsort(-scores, kind="stable")[:k]
    chosen = np.zeros(len(scores))
    chosen[order] = 1.0
    return chosen


def threshold_tokens(scores: np.ndarray, share: float) -> np.ndarray:
    """A 0/1 vector marking the scores at least ``share`` times the highest (none when no
    score is positive: a threshold relative to a non-positive peak selects nothing)."""
    peak = float(scores.max()) if len(scores) else 0.0
    if peak <= 0:
        return np.zeros(len(scores))
    return (scores >= share * peak).astype(float)


def chosen_tokens(scores: np.ndarray, rationale: np.ndarray, protocol: Protocol) -> np.ndarray:
    """The explanation's discrete rationale, as the protocol's ``discretize`` says."""
    if protocol.discretize == "threshold":
        return threshold_tokens(scores, protocol.score_threshold)
    k = int(rationale.sum()) if protocol.discretize == "rationale" else protocol.top_k
    return top_k_tokens(scores, k)


def token_f1(chosen: np.ndarray, rationale: np.ndarray) -> float:
    """F1 of the chosen tokens against the rationale (0 when either is empty)."""
    overlap = float((chosen * rationale).sum())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / chosen.sum(), overlap / rationale.sum()
    return 2 * precision * recall / (precision + recall)


def token_iou(chosen: np.ndarray, rationale: np.ndarray) -> float:
    """Intersection over union of the chosen tokens and the rationale."""
    union = float(np.maximum(chosen, rationale).sum())
    return 0.0 if union == 0 else float((chosen * rationale).sum()) / union


def auprc(scores: np.ndarray, rationale: np.ndarray) -> float:
    """Area under the precision-recall curve of ``scores`` against the rationale; NaN
    when the rationale marks no token (no curve exists)."""
    from sklearn.metrics import auc, precision_recall_curve

    if rationale.sum() == 0:
        return float("nan")
    precision, recall, _ = precision_recall_curve(rationale, scores)
    return float(auc(recall, precision))


class PlausibilityMetric(Metric):
    """Scores and rationale over the tokens a person could mark: no special token, no
    masked target; one value per text (and layer)."""

    protocol_settings = ("discretize", "top_k", "score_threshold")

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        out = []
        for m, b, item, rationale, excluded, layers in with_evidence(ctx):
            kept = _text_tokens(ctx, item)
            if excluded is not None:
                kept[excluded] = False
            for layer, scores in layers:
                out.append(ctx.row(m, b, layer, self.judge(ctx, scores[kept], rationale[kept])))
        return out

    def judge(self, ctx: EvaluationContext, scores: np.ndarray, rationale: np.ndarray) -> float:
        raise NotImplementedError


def _text_tokens(ctx: EvaluationContext, item) -> np.ndarray:
    """Which of the explanation's tokens belong to a word of its text (not a special
    token, not a chat prompt's own token)."""
    kept = np.ones(len(item.tokens), dtype=bool)
    if item.special:
        kept &= ~np.asarray(item.special, dtype=bool)
    if item.input_ids is None:  # the text's own tokenisation: its words are known
        # once per text for the three metrics and every method
        key = ("token_words", repr(item.text))
        words = ctx.cached(key, lambda: ctx.model.encoder.token_words(item.text))
        if len(words) == len(item.tokens):
            kept &= np.array([word is not None for word in words])
    return kept


def _info(name: str, description: str) -> MetricInfo:
    return MetricInfo(name, description, True, (0, 1), "layer", "last", needs_evidence=True)


@register_metric
class TokenF1(PlausibilityMetric):
    info = _info("token_f1", "F1 of the top tokens against the human rationale (ERASER)")

    def judge(self, ctx, scores, rationale):
        return token_f1(chosen_tokens(scores, rationale, ctx.protocol), rationale)


@register_metric
class TokenIOU(PlausibilityMetric):
    info = _info("token_iou", "intersection over union of the top tokens and the rationale")

    def judge(self, ctx, scores, rationale):
        return token_iou(chosen_tokens(scores, rationale, ctx.protocol), rationale)


@register_metric
class AUPRC(PlausibilityMetric):
    info = _info("auprc", "area under the precision-recall curve of the scores (ERASER)")
    protocol_settings = ()

    def judge(self, ctx, scores, rationale):
        return auprc(scores, rationale)
