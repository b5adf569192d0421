"""Metric functions on plain arrays, usable without a model.

They are the arithmetic behind :func:`normxlogit.evaluate`: average precision and dot
product against evidence (NormXLogit paper, appendix A.4), the Hellinger distance and the
alpha calibration of the pi-Soft metrics (pi-Soft paper, eqs. 3 and 7), and the curve
summaries (AOPC, AUC). Inputs may be lists, numpy arrays or torch tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import InvalidInputError

__all__ = [
    "aopc",
    "auc",
    "average_precision",
    "calibrate",
    "dot_product",
    "find_alpha",
    "hellinger",
    "pearson",
    "rescale_unit",
]

#: log10 bracket of the alpha search: alpha in [1e-8, 1e8]
_LOG_ALPHA = (-8.0, 8.0)


def _array(values: Any, name: str) -> np.ndarray:
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        raise InvalidInputError(f"{name} is empty")
    return array


def _pair(scores: Any, evidence: Any) -> tuple[np.ndarray, np.ndarray]:
    scores, evidence = _array(scores, "scores"), _array(evidence, "evidence")
    if scores.shape != evidence.shape or scores.ndim != 1:
        raise InvalidInputError(
            f"scores {scores.shape} and evidence {evidence.shape} must be vectors of the same "
            "length: one score and one 0/1 evidence mark per token"
        )
    return scores, evidence


def average_precision(scores: Any, evidence: Any) -> float:
    """Average precision of ranking tokens by ``scores`` against binary ``evidence``.

    Tied scores form one threshold (as scikit-learn counts them). The appendix A.4
    example: scores ``[0.3, 0.1, 0.5, 0.1]``, evidence ``[1, 0, 0, 0]`` give 0.5. NaN when
    no token is evidence (AP is undefined then).
    """
    scores, evidence = _pair(scores, evidence)
    positives = evidence > 0
    if not positives.any():
        return float("nan")
    order = np.argsort(-scores, kind="stable")
    ranked_scores, ranked_hits = scores[order], positives[order]
    hits = np.cumsum(ranked_hits)
    # the last index of each group of tied scores is a threshold
    last_of_tie = np.r_[ranked_scores[1:] != ranked_scores[:-1], True]
    thresholds = np.flatnonzero(last_of_tie)
    precision = hits[thresholds] / (thresholds + 1)
    recall = hits[thresholds] / positives.sum()
    gained = np.diff(np.r_[0.0, recall])
    return float(np.sum(gained * precision))


def dot_product(
    scores: Any,
    evidence: Any,
    softmax: bool = False,
    exclude: int | Sequence[int] | None = None,
) -> float:
    """``sum_i s_i e_i``; ``softmax=True`` softmaxes the scores first (the authors' code).

    ``exclude``: positions (such as the masked target word) removed from both vectors
    before the softmax and the product. Appendix A.4: ``[0.3, 0.1, 0.5, 0.1]`` with
    ``[1, 0, 0, 0]`` gives 0.3.
    """
    scores, evidence = _pair(scores, evidence)
    if exclude is not None:
        drop = np.atleast_1d(np.asarray(exclude, dtype=int))
        scores, evidence = np.delete(scores, drop), np.delete(evidence, drop)
    if softmax:
        shifted = np.exp(scores - scores.max())
        scores = shifted / shifted.sum()
    return float(scores @ evidence)


def hellinger(p: Any, q: Any) -> float | np.ndarray:
    """Hellinger distance ``||sqrt(p) - sqrt(q)||_2 / sqrt(2)`` over the last axis.

    In [0, 1] for probability distributions; leading axes broadcast (arrays give arrays).
    """
    p, q = np.clip(_array(p, "p"), 0, None), np.clip(_array(q, "q"), 0, None)
    distance = np.sqrt(np.sum((np.sqrt(p) - np.sqrt(q)) ** 2, axis=-1)) / np.sqrt(2.0)
    return float(distance) if np.ndim(distance) == 0 else distance


def _masked_mean_power(scores: np.ndarray, mask: np.ndarray, log_alpha: np.ndarray) -> np.ndarray:
    """``mean(scores ** alpha)`` over the masked entries, for alphas ``[..., P]``."""
    alpha = 10.0 ** log_alpha[..., None]  # [..., P, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        powered = np.where(mask[..., None, :], scores[..., None, :] ** alpha, 0.0)
    return powered.sum(-1) / np.maximum(mask.sum(-1), 1)[..., None]


def find_alpha(
    scores: Any,
    pi: float | Sequence[float] | np.ndarray,
    *,
    mask: Any = None,
    tol: float = 1e-6,
    max_iter: int = 200,
) -> float | np.ndarray:
    """The alpha with ``mean(scores ** alpha) == pi`` (pi-Soft eq. 7), by bisection.

    ``scores`` in [0, 1], ``[..., m]``; ``pi`` a number (result ``[...]``) or a vector of
    P targets (result ``[..., P]``); ``mask`` ``[..., m]`` (True = the token counts) limits
    the mean to some tokens. ``mean(s ** alpha)`` falls as alpha grows, so bisection on
    ``log alpha`` over [1e-8, 1e8] finds it. Where a target cannot be met the nearest
    reachable alpha is returned: scores of exactly 0 stay 0 and exactly 1 stay 1 for any
    alpha > 0, so a vector with zeros cannot reach a pi above its share of non-zeros (the
    smallest alpha is returned) and one with ones cannot go below its share of ones (the
    largest). A constant vector ``c`` in (0, 1) gets ``log(pi) / log(c)``.
    """
    values = _array(scores, "scores")
    if np.nanmin(values) < 0 or np.nanmax(values) > 1:
        raise InvalidInputError("find_alpha needs scores in [0, 1]; rescale them first")
    targets = np.asarray(pi, dtype=float)
    if targets.ndim > 1 or not np.all((targets > 0) & (targets < 1)):
        raise InvalidInputError(f"pi must lie strictly between 0 and 1, got {pi}")
    mask = np.ones(values.shape, bool) if mask is None else np.broadcast_to(mask, values.shape)
    vector = np.atleast_1d(targets)
    low = np.full(values.shape[:-1] + vector.shape, _LOG_ALPHA[0])
    high = np.full_like(low, _LOG_ALPHA[1])
    for _ in range(max_iter):
        middle = (low + high) / 2
        mean = _masked_mean_power(values, mask, middle)
        too_high = mean > vector  # keep too much: alpha must grow
        low = np.where(too_high, middle, low)
        high = np.where(too_high, high, middle)
        if np.all(high - low < tol * 1e-3) or np.all(np.abs(mean - vector) < tol):
            break
    alpha = 10.0 ** ((low + high) / 2)
    return alpha[..., 0] if targets.ndim == 0 else alpha


def rescale_unit(scores: Any, mask: Any = None, eps: float = 1e-6) -> np.ndarray:
    """Min-max scores into ``[eps, 1 - eps]`` over the last axis (masked entries only).

    Keeping clear of 0 and 1 lets every pi in (0, 1) be reached by :func:`find_alpha`. A
    constant vector carries no ranking and maps to 0.5 everywhere (equal importance).
    Entries outside ``mask`` come back as 0; callers combine the result with the mask.
    """
    values = _array(scores, "scores")
    mask = np.ones(values.shape, bool) if mask is None else np.broadcast_to(mask, values.shape)
    low = np.where(mask, values, np.inf).min(-1, keepdims=True)
    high = np.where(mask, values, -np.inf).max(-1, keepdims=True)
    span = high - low
    flat = ~(span > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        unit = np.where(flat, 0.5, (values - low) / np.where(flat, 1.0, span))
    unit = eps + (1 - 2 * eps) * unit
    return np.where(mask, unit, 0.0)


def calibrate(scores: Any, pi: float, mask: Any = None) -> np.ndarray:
    """Keep probabilities ``scores ** alpha`` whose (masked) mean is ``pi``; entries
    outside ``mask`` are 1 (always kept)."""
    values = _array(scores, "scores")
    mask = np.ones(values.shape, bool) if mask is None else np.broadcast_to(mask, values.shape)
    alpha = np.asarray(find_alpha(values, pi, mask=mask))
    return np.where(mask, values ** alpha[..., None], 1.0)


def aopc(curve: Any) -> float:
    """Area over the perturbation curve as the NormXLogit paper computes it: the mean of
    the curve's points (the nine ratios 0.1..0.9)."""
    return float(np.mean(_array(curve, "curve")))


def auc(curve: Any, x: Any = None) -> float:
    """Trapezoidal area under ``curve`` at positions ``x`` (default: evenly over [0, 1])."""
    values = _array(curve, "curve")
    positions = np.linspace(0, 1, values.size) if x is None else _array(x, "x")
    if positions.shape != values.shape:
        raise InvalidInputError(f"curve {values.shape} and x {positions.shape} differ in shape")
    if values.size == 1:
        return float(values[0])
    trapezoid = getattr(np, "trapezoid", None) or np.trapz
    return float(trapezoid(values, positions))


def pearson(predictions: Any, gold: Any) -> float:
    """Pearson correlation (the regression accuracy of the NormXLogit paper); NaN when
    either side is constant."""
    a, b = _array(predictions, "predictions"), _array(gold, "gold")
    if a.shape != b.shape:
        raise InvalidInputError(f"predictions {a.shape} and gold {b.shape} differ in shape")
    if a.size < 2 or np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])
