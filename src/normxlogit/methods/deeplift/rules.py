"""DeepLift's multiplier maths: each rule as an operation whose gradient is its multiplier."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .operations import MATMUL, MULTIPLY

#: below this relative |Δx| the rescale rule takes the derivative instead (float64)
_TINY = {torch.float64: 1e-9, torch.float32: 1e-4}
#: below this relative |Δx| a float32 secant loses digits: it is redone in float64
_LOOSE = {torch.float32: 1e-3}

# ----------------------------------------------------------------------------- numerics


class _Ruled(torch.autograd.Function):
    """An operation's own value forward, its DeepLift multipliers backward.

    ``compute()`` gives the value; ``transpose(grad)`` maps the output's gradient to one
    gradient per input (the transposed multiplier map).
    """

    @staticmethod
    def forward(ctx, compute: Callable[[], Tensor], transpose, *inputs: Tensor) -> Tensor:
        ctx.transpose = transpose
        return compute()

    @staticmethod
    def backward(ctx, grad: Tensor):
        wanted = ctx.needs_input_grad[2:]
        grads = ctx.transpose(grad)
        return (None, None, *(g if w else None for g, w in zip(grads, wanted, strict=True)))


def ruled(compute: Callable[[], Tensor], transpose, *inputs: Tensor) -> Tensor:
    return _Ruled.apply(compute, transpose, *inputs)


def _fit(grad: Tensor, like: Tensor) -> Tensor:
    """Undo broadcasting: sum ``grad`` down to the shape of ``like``."""
    return grad if grad.shape == like.shape else grad.sum_to_size(like.shape)


def _derivative(f: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """``f'(x)`` of an elementwise ``f``."""
    with torch.enable_grad():
        point = x.detach().requires_grad_(True)
        (slope,) = torch.autograd.grad(f(point).sum(), point)
    return slope


def _exact_secant(f: Callable[[Tensor], Tensor], x: Tensor, x0: Tensor) -> Tensor:
    """The secant where ``x`` and ``x0`` may be close: float64 where the device has it, the
    derivative where they are closer than float64 can divide by."""
    dtype = torch.float32 if x.device.type == "mps" else torch.float64
    x, x0 = x.to(dtype), x0.to(dtype)
    change = x - x0
    small = ~(change.abs() > _TINY[dtype] * (1 + x.abs()))  # NaN counts as small
    slope = (f(x) - f(x0)) / torch.where(small, torch.ones_like(change), change)
    if not bool(small.any()):
        return slope
    return torch.where(small, _derivative(f, x), slope)


def _secant(
    f: Callable[[Tensor], Tensor], x: Tensor, x0: Tensor, fx: Tensor, gather: bool
) -> Tensor:
    """``(f(x) - f(x0)) / (x - x0)`` elementwise (``fx`` is ``f(x)``): the rescale rule's
    multiplier.

    Computed at float32 (or the input's precision, if higher); where ``|x - x0|`` is too
    small for that precision, again at float64: on those entries alone when ``f`` may be
    applied to any shape (``gather``), with the derivative where even float64 cannot
    divide. (Computing everything at float64 would spare the device syncs, but launches
    more kernels, which is what limits the speed here.)
    """
    x, x0 = x.detach(), x0.detach()
    work = torch.promote_types(x.dtype, torch.float32)
    x, x0 = x.to(work), x0.to(work)
    change = x - x0
    slope = (fx.detach().to(work) - f(x0)) / change
    close = ~(change.abs() > _LOOSE.get(work, 0.0) * (1 + x.abs()))
    if not bool(close.any()):
        return slope
    if not gather:
        return torch.where(close, _exact_secant(f, x, x0).to(work), slope)
    where = close.nonzero(as_tuple=True)
    slope[where] = _exact_secant(f, x[where], x0[where]).to(work)
    return slope


# -------------------------------------------------------------------------------- rules
# Each rule takes "live" tensors (true values, gradients following the DeepLift chain)
# and their values in the reference pass, and returns the operation's live output: its
# true value forward, the rule's multipliers backward.


def rescale(
    f: Callable[[Tensor], Tensor],
    x: Tensor,
    x0: Tensor,
    compute: Callable[[], Tensor] | None = None,
    gather: bool = True,
) -> Tensor:
    """Elementwise ``f``: multiplier ``Δf/Δx`` (the rescale rule)."""
    with torch.no_grad():
        value = compute() if compute is not None else f(x)
    slope = _secant(f, x, x0, value, gather).to(x.dtype)
    return ruled(lambda: value, lambda g: (g * slope,), x)


def shapley(
    op: Callable[[Tensor, Tensor], Tensor],
    a: Tensor,
    b: Tensor,
    a0: Tensor,
    b0: Tensor,
    compute: Callable[[], Tensor] | None = None,
) -> Tensor:
    """Bilinear ``op``: ``Δa`` at the mean of ``b`` and ``b0``, ``Δb`` at the mean of ``a``
    and ``a0`` (the Shapley value of the two operands; exact for bilinear operations)."""
    mean_a, mean_b = (a.detach() + a0) / 2, (b.detach() + b0) / 2
    if op in MULTIPLY:

        def transpose(g):
            return _fit(g * mean_b, a), _fit(g * mean_a, b)

    elif op in MATMUL and a.dim() >= 2 and b.dim() >= 2:

        def transpose(g):
            return _fit(g @ mean_b.mT, a), _fit(mean_a.mT @ g, b)

    else:  # any other bilinear operation: its own vector-Jacobian products

        def transpose(g):
            with torch.enable_grad():
                left, right = a.detach().requires_grad_(True), b.detach().requires_grad_(True)
                (ga,) = torch.autograd.grad(op(left, mean_b), left, g)
                (gb,) = torch.autograd.grad(op(mean_a, right), right, g)
            return ga, gb

    return ruled(compute or (lambda: op(a, b)), transpose, a, b)


def scaled(
    u: Tensor,
    r: Tensor,
    u0: Tensor,
    compute: Callable[[], Tensor] | None = None,
    weight: Tensor | None = None,
) -> Tensor:
    """A vector times its own per-row scale (normalisation), then an optional elementwise
    ``weight``: ``Δ(u r) = r·Δu + u0·Δr``."""
    scale, vector = r.detach(), u0
    if weight is not None:
        scale, vector = scale * weight, vector * weight

    def transpose(g):
        return _fit(g * scale, u), _fit(g * vector, r)

    return ruled(compute or (lambda: u * r), transpose, u, r)


def softmax_rule(
    z: Tensor, z0: Tensor, dim: int, compute: Callable[[], Tensor] | None = None
) -> Tensor:
    """``softmax = exp(z - lse z)``: rescale on ``exp``; ``lse`` at the mixture of its
    gradients (``p``, ``p0``) that reproduces its change."""
    dtype = torch.float32 if z.device.type == "mps" else torch.float64
    x, x0 = z.detach().to(dtype), z0.detach().to(dtype)
    finite = torch.isfinite(x) & torch.isfinite(x0)
    change = torch.where(finite, x - x0, 0.0)
    logp, logp0 = x.log_softmax(dim), x0.log_softmax(dim)
    p, p0 = logp.exp(), logp0.exp()
    # rescale rule on exp, between the log-probabilities
    step = torch.where(finite, logp - logp0, 0.0)
    small = ~(step.abs() > _TINY[dtype] * (1 + logp.abs()))
    slope = torch.where(small, p, (p - p0) / torch.where(small, 1.0, step))
    # lse: weights w = lam p + (1 - lam) p0 with w . Δz = Δlse
    shift = torch.logsumexp(x, dim, keepdim=True) - torch.logsumexp(x0, dim, keepdim=True)
    high = (p * change).sum(dim, keepdim=True)
    low = (p0 * change).sum(dim, keepdim=True)
    gap = high - low  # >= 0: lse is convex
    tight = gap <= _TINY[dtype] * (high.abs() + low.abs()) + torch.finfo(dtype).tiny
    lam = torch.where(tight, 0.5, (shift - low) / torch.where(tight, 1.0, gap)).clamp(0, 1)
    weights = (lam * p + (1 - lam) * p0).to(z.dtype)
    slope = slope.to(z.dtype)

    def transpose(g):
        flow = slope * g
        return (flow - weights * flow.sum(dim, keepdim=True),)

    return ruled(compute or (lambda: z.softmax(dim)), transpose, z)


def norm_rule(
    x: Tensor,
    x0: Tensor,
    dims: tuple[int, ...],
    eps: float,
    centre: bool,
    weight: Tensor | None,
    compute: Callable[[], Tensor],
) -> Tensor:
    """LayerNorm (``centre``) or RMSNorm over ``dims``: ``w ⊙ u·(mean(u²)+eps)^-1/2``."""
    u = x - x.mean(dims, keepdim=True) if centre else x
    u0 = x0 - x0.mean(dims, keepdim=True) if centre else x0
    variance = rescale(torch.square, u, u0).mean(dims, keepdim=True)
    variance0 = u0.square().mean(dims, keepdim=True)
    scale = rescale(lambda t: torch.rsqrt(t + eps), variance, variance0)
    return scaled(u, scale, u0, compute, None if weight is None else weight.detach())


def attention_rule(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    q0: Tensor,
    k0: Tensor,
    v0: Tensor,
    mask: Tensor | None,
    causal: bool,
    scale: float | None,
    gqa: bool,
    compute: Callable[[], Tensor],
) -> Tensor:
    """Scaled-dot-product attention taken apart: q.kᵀ and weights x values by the Shapley
    split, the mask added, softmax by its rule."""
    if gqa and k.shape[-3] != q.shape[-3]:
        groups = q.shape[-3] // k.shape[-3]
        k, k0, v, v0 = (t.repeat_interleave(groups, dim=-3) for t in (k, k0, v, v0))
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    keys, keys0 = k.transpose(-2, -1), k0.transpose(-2, -1)
    scores = shapley(torch.matmul, q * scale, keys, q0 * scale, keys0)
    scores0 = torch.matmul(q0 * scale, keys0)
    bias = _additive_mask(mask, causal, scores0)
    if bias is not None:
        scores, scores0 = scores + bias, scores0 + bias
    weights = softmax_rule(scores, scores0, -1)
    return shapley(torch.matmul, weights, v, scores0.softmax(-1), v0, compute)


def _additive_mask(mask: Tensor | None, causal: bool, scores: Tensor) -> Tensor | None:
    """SDPA's boolean / additive mask and causal flag as one additive mask (finite
    minimum instead of -inf, so that fully masked padding rows stay finite)."""
    lowest = torch.finfo(scores.dtype).min
    bias = None
    if causal:
        rows, cols = scores.shape[-2:]
        allowed = torch.ones(rows, cols, dtype=torch.bool, device=scores.device).tril()
        bias = torch.zeros(rows, cols, dtype=scores.dtype, device=scores.device)
        bias = bias.masked_fill(~allowed, lowest)
    if mask is not None:
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=scores.dtype, device=mask.device).masked_fill(
                ~mask, lowest
            )
        bias = mask if bias is None else (bias + mask).clamp_min(lowest)
    return bias
