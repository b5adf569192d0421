"""Metric functions on plain arrays, usable without a model.

They are the arithmetic behind :func:`normxlogit.evaluate`, kept separate so that they
can be checked by hand and reused on scores from anywhere: average precision and dot
product against evidence (NormXLogit paper, section 5.2 and appendix A.4), the Hellinger
distance and the alpha calibration of the pi-Soft metrics (pi-Soft paper, section 3.1,
eqs. 3 and 7), and the curve summaries (AOPC, AUC) and Pearson correlation. Inputs may be
lists, numpy arrays or torch tensors; results are floats or numpy arrays.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .common.errors import InvalidInputError
from .common.outputs import lone_item, short_value, type_phrase

__all__ = [
    "ALPHA_MAX",
    "ALPHA_MIN",
    "aopc",
    "auc",
    "average_precision",
    "calibrate",
    "dot_product",
    "find_alpha",
    "hellinger",
    "pearson",
    "rescale_unit",
    "spearman",
    "top_k_overlap",
]

#: log10 bracket of the alpha search: alpha in [1e-10, 1e18]. The top end is wide enough
#: to drive any float64 score below 1 (at most 1 - 1.1e-16) to about 0; the bottom end
#: keeps even the smallest positive float64 (5e-324) at about 1.
_LOG_ALPHA = (-10.0, 18.0)
#: the smallest and largest alpha find_alpha returns (for unreachable targets)
ALPHA_MIN, ALPHA_MAX = 10.0 ** _LOG_ALPHA[0], 10.0 ** _LOG_ALPHA[1]


def _untensored(values: Any) -> Any:
    """``values`` with torch tensors made NumPy arrays: one tensor, or a list of them (the
    0-d tensors iterating a tensor gives). NumPy cannot read bfloat16, so it is widened
    to float32 first (exact: every bfloat16 is a float32)."""
    if hasattr(values, "detach"):
        tensor = values.detach().cpu()
        return (tensor.float() if str(tensor.dtype) == "torch.bfloat16" else tensor).numpy()
    if isinstance(values, (list, tuple)) and any(hasattr(item, "detach") for item in values):
        return [_untensored(item) for item in values]
    return values


def _array(values: Any, name: str, *, min_ndim: int = 0) -> np.ndarray:
    """A float numpy array from a list, array or torch tensor (any dtype, any device)."""
    if hasattr(values, "detach"):  # torch: numpy() cannot read bfloat16, so widen first
        values = values.detach().cpu().double().numpy()
    values = _untensored(values)  # a list of (bfloat16) 0-d tensors
    try:
        array = np.asarray(values, dtype=float)
    except OverflowError:  # a Python int past 1.8e308
        raise InvalidInputError(
            f"{name} holds a number too large for a float64 (beyond about 1.8e308); pass "
            "values within that range (scale them down, or give float('inf'))"
        ) from None
    except (TypeError, ValueError) as error:
        raise InvalidInputError(
            f"{name} must be numbers (a list, array or tensor): {error}"
        ) from None
    plain = isinstance(values, np.ndarray) and values.dtype.kind not in "OUS"
    text = (
        None
        if plain
        else next(
            (
                item
                for item in np.asarray(values, dtype=object).ravel()
                if isinstance(item, (str, bytes, np.str_, np.bytes_))
            ),
            None,
        )
    )
    if text is not None:  # numpy reads "0.5" as 0.5: a text is no number
        raise InvalidInputError(
            f"{name} holds the text {str(text)!r:.40}; pass numbers, not texts (float(...) "
            "converts a text you mean as a number)"
        )
    if (
        not (isinstance(values, np.ndarray) and values.dtype != object)
        and np.isnan(array).any()
        and any(item is None for item in np.asarray(values, dtype=object).ravel())
    ):  # float(None) would be NaN: a missing value is no number
        raise InvalidInputError(
            f"{name} holds None; pass numbers only (float('nan') for a point that is missing)"
        )
    if array.size == 0:
        raise InvalidInputError(f"{name} is empty; pass at least one value")
    if array.ndim < min_ndim:
        raise InvalidInputError(
            f"{name} must have at least {min_ndim} axis (one value per token), got a scalar"
        )
    return array


def _shown(value: Any) -> str:
    """``value`` for a message: what it is and, short, its value ("a float 1.5")."""
    if value is None:
        return "None"
    return f"{type_phrase(value)} {_short(value)}"


_short = short_value  # the shared form: one line, a long int by its count of digits


def _whole(value: Any, name: str, least: int) -> int:
    """``value`` (the argument ``name``) as a whole number >= ``least``: a float (1.5
    would be cut to 1), a bool, None or a text is refused in one line; a 0-d array or
    tensor is read as the number it holds."""
    held = lone_item(value)
    if isinstance(held, bool) or not isinstance(held, numbers.Integral) or held < least:
        raise InvalidInputError(
            f"{name} must be a whole number >= {least} (an int), got {_shown(held)}"
        )
    return int(held)


def _real(value: Any, name: str, valid: Callable[[float], bool], wanted: str) -> float:
    """``value`` (the argument ``name``) as a finite number for which ``valid`` holds,
    else refused in one line saying it must be ``wanted``."""
    held = lone_item(value)
    number = isinstance(held, numbers.Real) and not isinstance(held, bool)
    try:
        value = float(held) if number else math.nan
    except OverflowError:  # 10**400, Fraction(10**400): beyond a float64
        value = math.nan
    if not number or not math.isfinite(value) or not valid(value):
        raise InvalidInputError(f"{name} must be {wanted}, got {_shown(held)}")
    return value


def _flag(value: Any, name: str) -> bool:
    """``value`` as True or False: a text ("no") or a number would be read by its
    truth, so only a bool (NumPy's too, or a 0-d array holding one) is taken."""
    held = lone_item(value)
    if not isinstance(held, (bool, np.bool_)):
        raise InvalidInputError(f"{name} must be True or False, got {_shown(held)}")
    return bool(held)


def _positions(exclude: Any, n: int) -> list[int]:
    """``exclude`` (a position or a list of them) as whole positions inside ``n`` tokens."""
    held = _untensored(lone_item(exclude))  # a bfloat16 tensor: its (float) values
    if hasattr(held, "tolist") and not isinstance(held, numbers.Number):
        held = held.tolist()
    items = held if isinstance(held, (list, tuple, range)) else [held]
    wanted = f"exclude must be positions inside the {n} tokens (whole numbers, 0..{n - 1})"
    for item in items:
        item = lone_item(item)
        if isinstance(item, bool) or not isinstance(item, numbers.Integral):
            whole = isinstance(item, float) and item.is_integer()
            fix = "; give ints (tensor.long(), array.astype(int) or int(...) on each)"
            raise InvalidInputError(
                f"{wanted}; got {_shown(item)} in {_short(exclude)}{fix if whole else ''}"
            )
        if not -n <= item < n:
            raise InvalidInputError(f"{wanted}; got {_short(int(item))} in {_short(exclude)}")
    return [int(lone_item(item)) for item in items]


def _mask(mask: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A boolean mask of ``shape`` (all True when None): True/False (or 1/0) values; a
    None or a text inside (every non-empty text, "0" too, would read as True) refused."""
    if mask is None:
        return np.ones(shape, bool)
    mask = _untensored(mask)  # numpy() cannot read bfloat16: 0/1 are exact in float32
    try:
        raw = np.asarray(mask)
    except ValueError:  # ragged
        raise InvalidInputError(
            f"mask does not fit scores {shape}; pass one True/False per score"
        ) from None
    if raw.dtype.kind != "b":
        stray = next(
            (
                v
                for v in raw.ravel().tolist()
                if not isinstance(v, (bool, np.bool_))
                and not (isinstance(v, numbers.Real) and v in (0, 1))
            ),
            raw,
        )
        if stray is not raw:
            raise InvalidInputError(
                f"mask holds {_shown(stray)}; pass True/False values, one per score (a "
                "text, even '0', or any other value would be read by its truth)"
            )
    mask = raw.astype(bool)
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        raise InvalidInputError(
            f"mask {mask.shape} does not fit scores {shape}; pass one True/False per score"
        ) from None


def _vectors(first: Any, second: Any, names: tuple[str, str], hint: str):
    """Two float vectors of one length, or an InvalidInputError naming both and ``hint``."""
    a, b = _array(first, names[0]), _array(second, names[1])
    if a.shape != b.shape or a.ndim != 1:
        raise InvalidInputError(
            f"{names[0]} {a.shape} and {names[1]} {b.shape} must be vectors of the same "
            f"length: {hint}"
        )
    return a, b


def _pair(scores: Any, evidence: Any) -> tuple[np.ndarray, np.ndarray]:
    hint = "one score and one 0/1 evidence mark per token"
    return _vectors(scores, evidence, ("scores", "evidence"), hint)


def average_precision(scores: Any, evidence: Any) -> float:
    """Average precision of ranking tokens by ``scores`` (descending) against ``evidence``.

    It rewards putting evidence tokens first whatever the score scale (paper eq. 9:
    ``sum_k (R_k - R_{k-1}) P_k``). Tied scores form one threshold, as scikit-learn's
    ``average_precision_score`` counts them; NaN scores rank last. Appendix A.4: scores
    ``[0.3, 0.1, 0.5, 0.1]``, evidence ``[1, 0, 0, 0]`` give 0.5; a perfect ranking gives 1.
    Returns NaN when no token is evidence (AP is undefined then): average with ``nanmean``.
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
    """``sum_i s_i e_i``: the total attribution given to the evidence tokens.

    ``softmax=True`` softmaxes the scores first, as the authors' code does, so that
    methods on different scales become comparable. ``exclude``: a position or positions
    (such as the masked target word) removed from both vectors before the softmax and the
    product. Appendix A.4: ``[0.3, 0.1, 0.5, 0.1]`` with ``[1, 0, 0, 0]`` gives 0.3.
    """
    scores, evidence = _pair(scores, evidence)
    softmax = _flag(softmax, "softmax")
    if exclude is not None:
        drop = _positions(exclude, scores.size)
        scores, evidence = np.delete(scores, drop), np.delete(evidence, drop)
        if scores.size == 0:
            raise InvalidInputError("exclude removed every token; leave at least one")
    if softmax:
        shifted = np.exp(scores - scores.max())
        scores = shifted / shifted.sum()
    with np.errstate(over="ignore", invalid="ignore"):
        plain = float(scores @ evidence)
    if math.isfinite(plain) or not (np.all(np.isfinite(scores)) and np.all(np.isfinite(evidence))):
        return plain  # a NaN score: NaN, as before
    # scaled to at most 1 first, as pearson is: values near the float64 limit (1e308)
    # overflow in the sum although the product fits
    big_s, big_e = float(np.max(np.abs(scores))), float(np.max(np.abs(evidence)))
    if big_s == 0 or big_e == 0:
        return 0.0
    with np.errstate(over="ignore"):
        total = float((scores / big_s) @ (evidence / big_e)) * big_s * big_e
    if not math.isfinite(total):
        raise InvalidInputError(
            "the dot product overflows float64 (scores near 1e308); rescale the scores first"
        )
    return total


def hellinger(p: Any, q: Any) -> float | np.ndarray:
    """Hellinger distance ``||sqrt(p) - sqrt(q)||_2 / sqrt(2)`` over the last axis.

    The pi-Soft metrics use it to measure how far a perturbed output distribution moved
    (eq. 3): it is bounded, in [0, 1] for probability distributions (0 identical, 1
    disjoint). Tiny negatives from rounding are clipped to 0. Leading axes broadcast:
    batched input returns an array of the leading shape, 1-D input a float.
    """
    p = np.clip(_array(p, "p", min_ndim=1), 0, None)
    q = np.clip(_array(q, "q", min_ndim=1), 0, None)
    try:
        difference = np.sqrt(p) - np.sqrt(q)
    except ValueError:
        raise InvalidInputError(
            f"p {p.shape} and q {q.shape} must broadcast; give both the same last axis"
        ) from None
    with np.errstate(over="ignore"):
        distance = np.sqrt(np.sum(difference**2, axis=-1)) / np.sqrt(2.0)
    # per row: another row's NaN leaves this one's overflow to be rescaled
    overflowed = np.isinf(distance) & np.all(np.isfinite(difference), axis=-1)
    if np.any(overflowed):
        # scaled to at most 1 first, as pearson is: differences near sqrt(1e308)
        # overflow in the sum of squares although the distance fits
        with np.errstate(invalid="ignore", over="ignore"):
            scale = np.max(np.abs(difference), axis=-1, keepdims=True)
            scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
            root = np.sqrt(np.sum((difference / scale) ** 2, axis=-1))
        distance = np.where(overflowed, scale[..., 0] * root / np.sqrt(2.0), distance)
    return float(distance) if np.ndim(distance) == 0 else distance


def _scaled_first(values: np.ndarray, summary: Callable[[np.ndarray], Any]) -> float:
    """``summary(values)`` (a mean, an area: linear in ``values``), computed on the values
    scaled to at most 1 where it overflows although every value is finite (points near
    1e308, whose sum passes the float64 limit though their mean fits)."""
    with np.errstate(over="ignore", invalid="ignore"):
        found = float(summary(values))
    if math.isfinite(found) or not np.all(np.isfinite(values)):
        return found
    scale = float(np.max(np.abs(values)))
    with np.errstate(over="ignore", invalid="ignore"):
        return float(summary(values / scale)) * scale


def _outside_value(pi: Any, index: tuple[int, ...]) -> Any:
    """The value ``pi`` holds at ``index`` as given (10**400, not inf), else as read."""
    item = pi
    try:
        for i in index:
            item = item[i]
    except (TypeError, IndexError, KeyError):
        return float(_array(pi, "pi")[index])
    item = lone_item(item)
    return item if isinstance(item, numbers.Number) else float(_array(pi, "pi")[index])


def find_alpha(
    scores: Any,
    pi: float | Sequence[float] | np.ndarray,
    *,
    mask: Any = None,
    tol: float = 1e-6,
    max_iter: int = 200,
) -> float | np.ndarray:
    """The alpha >= 0 with ``mean(scores ** alpha) == pi`` (pi-Soft eq. 7).

    It puts every method at the same expected share of kept tokens, so that soft
    perturbation compares rankings rather than score scales.

    Shapes: ``scores`` ``[..., m]`` with values in [0, 1] (use :func:`rescale_unit`).
    A scalar ``pi`` gives ``[...]`` (a float for one vector). An array ``pi`` has its
    targets on its last axis and broadcasts against ``scores.shape[:-1] + (1,)``. So ``pi``
    ``[P]`` gives ``[..., P]`` (every vector at every target), and ``[B, P]`` with scores
    ``[B, m]`` gives ``[B, P]`` (one list of targets per row). Every pi must lie in (0, 1).
    ``mask`` ``[..., m]`` (True = the token counts) restricts the mean to the counted
    tokens (padding and protected tokens are left out); entries outside it are never read.

    Method: ``mean(s ** alpha)`` does not increase with alpha, so bisect on ``log10 alpha``
    over [ALPHA_MIN, ALPHA_MAX] = [1e-10, 1e18]. That slope is at most ln(10)/e < 1 in
    size, so the reached mean is within ``tol`` of pi once the bracket is narrower than
    ``tol``. That takes about ``log2(28 / tol)`` steps (25 for 1e-6), capped at
    ``max_iter``. With the bracket that wide, every pi is reachable when all the counted
    scores lie strictly inside (0, 1).

    Degenerate inputs never raise and never give NaN. The result is finite and
    non-increasing in pi:

    - ties are fine; a constant ``c`` in (0, 1) gives ``log(pi) / log(c)``;
    - a score of exactly 0 stays 0 for every alpha > 0, so the mean never exceeds the
      share of non-zero scores. A higher pi gets exactly ALPHA_MIN = 1e-10 (the nearest
      reachable mean). All zeros, or a row with no counted token, always gets ALPHA_MIN;
    - a score of exactly 1 stays 1, so the mean never falls below the share of ones. A
      lower pi gets exactly ALPHA_MAX = 1e18 (the nearest reachable mean). All ones
      always gets ALPHA_MAX.
    """
    values = _array(scores, "scores", min_ndim=1)
    counted = _mask(mask, values.shape)
    inside = values[counted]
    if not np.all(np.isfinite(inside)):
        raise InvalidInputError("find_alpha got NaN or infinite scores; mask them out or fix them")
    if inside.size and (inside.min() < 0 or inside.max() > 1):
        raise InvalidInputError(
            "find_alpha needs scores in [0, 1]; rescale them first (metrics.rescale_unit)"
        )
    targets = _array(pi, "pi")
    outside = np.argwhere(~((targets > 0) & (targets < 1)))
    if len(outside):
        first = tuple(int(i) for i in outside[0])
        where = f" at pi[{', '.join(map(str, first))}]" if first else ""
        raise InvalidInputError(
            f"pi must lie strictly between 0 and 1, got {_short(_outside_value(pi, first))}"
            f"{where} ({len(outside)} of {targets.size} outside)"
            if targets.ndim
            else f"pi must lie strictly between 0 and 1, got {_short(lone_item(pi))}"
        )
    tol = _real(tol, "tol", lambda v: v > 0, "a number > 0")
    max_iter = _whole(max_iter, "max_iter", 1)
    lead = values.shape[:-1] + (1,)
    try:
        shape = np.broadcast_shapes(lead, targets.shape)
    except ValueError:
        raise InvalidInputError(
            f"pi {targets.shape} does not broadcast against scores {values.shape}: give a "
            "number, a vector of targets [P], or targets [..., P] matching the leading axes"
        ) from None
    goal = np.broadcast_to(targets, shape)
    with np.errstate(divide="ignore"):
        logs = np.where(counted, np.log(np.where(counted, values, 1.0)), 0.0)[..., None, :]
    weights = counted[..., None, :]
    count = np.maximum(counted.sum(-1), 1)[..., None]

    def mean_power(log_alpha: np.ndarray) -> np.ndarray:
        alpha = (10.0**log_alpha)[..., None]
        powered = np.where(weights, np.exp(alpha * logs), 0.0)  # exp(-inf) = 0 for zeros
        return powered.sum(-1) / count

    bottom, top = _LOG_ALPHA
    low, high = np.full(shape, bottom), np.full(shape, top)
    steps = min(max_iter, math.ceil(math.log2((top - bottom) / tol)))
    for _ in range(steps):
        middle = (low + high) / 2
        keeps_too_much = mean_power(middle) > goal  # alpha must grow
        low = np.where(keeps_too_much, middle, low)
        high = np.where(keeps_too_much, high, middle)
    log_alpha = (low + high) / 2
    # a bracket end that never moved: the target is out of reach (or within tol of it)
    narrow = high - low < tol
    log_alpha = np.where(narrow & (low == bottom), bottom, log_alpha)
    log_alpha = np.where(narrow & (high == top), top, log_alpha)
    alpha = 10.0**log_alpha
    if targets.ndim == 0:
        alpha = alpha[..., 0]
    return float(alpha) if alpha.ndim == 0 else alpha


def rescale_unit(scores: Any, mask: Any = None, eps: float = 1e-6) -> np.ndarray:
    """Min-max the counted scores into ``[eps, 1 - eps]`` over the last axis.

    The result can be used as keep probabilities. Keeping clear of 0 and 1 means every pi
    in (0, 1) is reachable by :func:`find_alpha`. A constant vector (or one counted token)
    carries no ranking and maps to 0.5 everywhere (equal importance). Entries outside
    ``mask`` come back as 0.0; combine the result with the mask yourself. Leading axes
    are independent vectors.
    """
    values = _array(scores, "scores", min_ndim=1)
    eps = _real(eps, "eps", lambda v: 0 <= v < 0.5, "a number in [0, 0.5)")
    counted = _mask(mask, values.shape)
    if not np.all(np.isfinite(values[counted])):
        raise InvalidInputError("rescale_unit got NaN or infinite scores; mask them out first")
    low = np.where(counted, values, np.inf).min(-1, keepdims=True)
    high = np.where(counted, values, -np.inf).max(-1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        span = high - low
    if np.any(np.isposinf(span)):
        # scaled to at most 1 first, as pearson is (the min-max is the same): a spread
        # near the float64 limit (1e308 and -1e308) overflows to inf and gave NaN
        scale = np.where(counted, np.abs(values), 0.0).max(-1, keepdims=True)
        values = values / np.where(scale > 0, scale, 1.0)
        low = np.where(counted, values, np.inf).min(-1, keepdims=True)
        high = np.where(counted, values, -np.inf).max(-1, keepdims=True)
        span = high - low
    flat = ~(span > 0)  # constant, or nothing counted (span is -inf)
    with np.errstate(invalid="ignore"):
        unit = np.where(flat, 0.5, (values - low) / np.where(flat, 1.0, span))
    unit = eps + (1 - 2 * eps) * unit
    return np.where(counted, unit, 0.0)


def calibrate(
    scores: Any, pi: float | Sequence[float] | np.ndarray, mask: Any = None
) -> np.ndarray:
    """Keep probabilities ``scores ** alpha`` whose mean over the counted tokens is ``pi``.

    This is pi-Soft eq. 7 in one call (see :func:`find_alpha` for shapes and degenerate
    cases). Entries outside ``mask`` are 1.0: protected tokens are always kept. A scalar
    ``pi`` gives the shape of ``scores``; an array ``pi`` gives ``find_alpha``'s shape plus
    the token axis, e.g. scores ``[B, m]`` with pi ``[P]`` give ``[B, P, m]``.
    """
    values = _array(scores, "scores", min_ndim=1)
    counted = _mask(mask, values.shape)
    alpha = np.asarray(find_alpha(values, pi, mask=counted))
    if np.ndim(pi) > 0:  # the pi axis sits before the token axis
        values, counted = values[..., None, :], counted[..., None, :]
    safe = np.where(counted, values, 1.0)
    return np.where(counted, safe ** alpha[..., None], 1.0)


def aopc(curve: Any) -> float:
    """Area over the perturbation curve as the NormXLogit paper computes it.

    It is the mean of the curve's points (the nine ratios 0.1..0.9), so it is comparable
    across curves with the same points. Any NaN point gives NaN.
    """
    return _scaled_first(_array(curve, "curve", min_ndim=1), np.mean)


def auc(curve: Any, x: Any = None) -> float:
    """Trapezoidal area under ``curve`` at positions ``x`` (default: evenly over [0, 1]).

    The pi-Soft paper summarises its pi curve this way. A single point has no width, so its
    value is returned: the area of a constant curve over [0, 1]. Any NaN point gives NaN.
    """
    values = _array(curve, "curve", min_ndim=1)
    positions = np.linspace(0, 1, values.size) if x is None else _array(x, "x", min_ndim=1)
    if positions.shape != values.shape or values.ndim != 1:
        raise InvalidInputError(
            f"curve {values.shape} and x {positions.shape} must be vectors of the same length"
        )
    if x is not None and (step := np.flatnonzero(np.diff(positions) < 0)).size:
        at = int(step[0]) + 1
        raise InvalidInputError(
            f"x must be in increasing order, but x[{at}]={positions[at]:g} comes after "
            f"x[{at - 1}]={positions[at - 1]:g}; sort the points by x first, e.g. "
            "order = np.argsort(x); auc(np.asarray(curve)[order], np.asarray(x)[order])"
        )
    if values.size == 1:
        return float(values[0])
    trapezoid = getattr(np, "trapezoid", None) or np.trapz
    if not np.all(np.isfinite(positions)):
        return float(trapezoid(values, positions))
    return _scaled_first(values, lambda scaled: trapezoid(scaled, positions))


def pearson(predictions: Any, gold: Any, *, float32_outputs: bool | None = None) -> float:
    """Pearson correlation: the accuracy of a regression model in the NormXLogit paper.

    Returns NaN when either side is constant or has fewer than two values (the
    correlation is undefined then). Predictions that are a model's float32 outputs
    (``float32_outputs``; by default: float32, float16 or bfloat16 values, or float64
    values each exactly a float32 one, as a model's outputs widened are) count as
    constant where they differ by no more than float32 rounding (see
    :func:`alike_to_float32`); other float64 values (a user's ``[1000.0, 1000.0001]``)
    correlate at any spread.
    """
    float32_outputs = lone_item(float32_outputs)  # a 0-d array, as every other flag
    if float32_outputs is not None and not isinstance(float32_outputs, (bool, np.bool_)):
        raise InvalidInputError(
            f"float32_outputs={float32_outputs!r:.40} is {type_phrase(float32_outputs)}; give "
            "True, False, or None (decided from the predictions)"
        )
    a, b = _array(predictions, "predictions"), _array(gold, "gold")
    if a.shape != b.shape:
        raise InvalidInputError(f"predictions {a.shape} and gold {b.shape} differ in shape")
    a, b = a.ravel(), b.ravel()
    if float32_outputs is None:
        float32_outputs = _float32_valued(predictions, a)
    with np.errstate(over="ignore", invalid="ignore"):  # 1e308 and -1e308: inf, not 0
        constant = a.size < 2 or np.ptp(a) == 0 or np.std(b) == 0
    if constant:
        return float("nan")
    if float32_outputs and alike_to_float32(a):
        return float("nan")
    # scaled to at most 1 first (the correlation is the same): values near the float64
    # limit (1e308) would overflow in the sums of squares and read -0.0
    with np.errstate(over="ignore", invalid="ignore"):
        a, b = a / np.max(np.abs(a)), b / np.max(np.abs(b))
    return float(np.corrcoef(a, b)[0, 1])


def _float32_valued(given: Any, values: np.ndarray) -> bool:
    """Whether ``given`` (read as ``values``) holds float32 (or narrower) numbers: its
    dtype says so, or every value is exactly a float32 one."""
    dtype = str(getattr(given, "dtype", ""))
    if dtype.removeprefix("torch.") in ("float32", "float16", "bfloat16", "half", "float"):
        return True
    finite = values[np.isfinite(values)]
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.all(finite.astype(np.float32).astype(float) == finite))


#: the spread, relative to the largest magnitude, within which a model's float32 outputs
#: are one value: a batch's rows of one input come out a last bit apart (the kernels'
#: order of summation depends on the row's place), and a correlation of such noise reads
#: as +1 or -1
FLOAT32_SPREAD = 16 * float(np.finfo(np.float32).eps)


def alike_to_float32(values: Any) -> bool:
    """Whether ``values`` (a model's predictions) are one value to float32 precision:
    equal, or apart by no more than rounding (:data:`FLOAT32_SPREAD` of their largest
    magnitude); then nothing correlates with them."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return True
    return bool(np.ptp(values) <= FLOAT32_SPREAD * np.abs(values).max())


def _two_explanations(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    hint = "two explanations compare over the same tokens"
    return _vectors(a, b, ("scores", "other scores"), hint)


def spearman(a: Any, b: Any) -> float:
    """Spearman's rank correlation of two score vectors (ties share their mean rank);
    NaN where either vector is constant (no ranking to compare)."""
    x, y = _two_explanations(a, b)
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def top_k_overlap(a: Any, b: Any, k: int) -> float:
    """The share of ``a``'s ``k`` highest-scoring positions that are among ``b``'s (ties
    broken by position): 1 when both explanations pick the same tokens."""
    x, y = _two_explanations(a, b)
    k = min(_whole(k, "k", 1), len(x))
    first = set(np.argsort(-x, kind="stable")[:k].tolist())
    second = set(np.argsort(-y, kind="stable")[:k].tolist())
    return len(first & second) / k
