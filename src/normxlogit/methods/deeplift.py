"""DeepLift (Shrikumar et al. 2017) at the word embeddings, from the zero embedding.

DeepLift explains ``f(x) - f(x0)`` by propagating *multipliers* ``m = Δout / Δin``
(differences between the input run and the reference run) instead of gradients: the
chain rule for multipliers gives each word-embedding unit a contribution ``m * Δx``, and
those contributions add up to ``f(x) - f(x0)`` exactly (summation-to-delta).

Why not Captum: Captum replaces gradients by multipliers only at ``nn.Module``
nonlinearities of a few types, hooked from outside. In transformers models GELU and SiLU
are modules of other types, and products, softmax and normalisation are plain tensor
operations, so Captum took the ordinary gradient at all of them: on LLaMA-like models
its "DeepLift" was exactly gradient x input.

How: every torch operation the model runs passes through a ``TorchFunctionMode``. The
model runs twice: from the zero embedding (the reference pass records the operands of
every nonlinear operation that depends on the embeddings) and from the real embeddings
(each such operation returns its ordinary value, but with a gradient that is the
DeepLift multiplier built from its operands at input and at reference). One backward
pass per target then gives ``multipliers x Δembedding``. The reference is the zero word
embedding at every position, special tokens included; position and segment embeddings
are kept. Activation modules are caught with module hooks and ruled as one function;
normalisation modules are marked with hooks so that the product inside them gets the
normalisation rule. The catalogue, one rule per kind of operation (``CATALOGUE`` below):

- elementwise activations (GELU, SiLU, tanh, sigmoid, ReLU, exp, square, rsqrt, ...; an
  activation module such as GPT-2's tanh-GELU counts as one function): the **rescale
  rule**, ``m = Δy/Δx``, and the derivative where ``|Δx|`` is too small to divide by
  (Captum's convention); a secant whose ``Δx`` is small for float32 is redone in float64;
- products of two embedding-dependent tensors (the gate x up of gated MLPs, q.kᵀ,
  attention x values, and ``a / b``): the **Shapley split** (DeepSHAP's rule for
  two-input operations), ``Δ(ab) = Δa·(b + b0)/2 + (a + a0)/2·Δb``, exact for any
  bilinear operation; a product with a constant reduces to the gradient;
- softmax (``F.softmax`` and inside scaled-dot-product attention): ``p = exp(z - lse z)``
  with the rescale rule on ``exp``, and for ``lse`` the mixture ``w = λ p + (1 - λ) p0``
  of its gradients at input and reference that reproduces ``Δlse`` (``λ`` in [0, 1] by
  convexity). The multipliers are bounded, and a shift of all logits, which leaves the
  softmax unchanged, gets no contribution. (Captum's ``nn.Softmax`` rule subtracts a
  mean taken over the whole tensor, batch included: it is not exact, and a text's
  scores would depend on its batch.);
- normalisation (LayerNorm, RMSNorm): ``y = w ⊙ u·r(u) + b`` with ``u`` the (centred)
  input and ``r = (mean(u²) + eps)^-1/2``. The product is split as
  ``Δ(u r) = r·Δu + u0·Δr``: the vector's change at the input's scale, the scale's
  change at the reference vector (``Δr`` follows by the rescale rule through the
  inverse square root and the square). The symmetric split would weigh ``r0``, which at
  a zero reference is ``eps^-1/2``, an artefact; with a zero input to the norm this rule
  is the usual linearisation at the input's scale. ``F.layer_norm`` / ``F.rms_norm`` are
  taken apart this way; a norm module written out (LLaMA's ``x * rsqrt(mean(x²) +
  eps)``) meets the same rule through the product of a vector and its per-row scale;
- scaled-dot-product attention: taken apart into the operations above;
- everything else the models run (linear layers, additions, reshapes, RoPE rotations,
  dropout in eval mode): linear in the embeddings, so the gradient is exact.

An operation outside this list that is nonlinear in the embeddings would fall back to
its gradient and break summation-to-delta; the gap is reported per text and target as
``diagnostics["convergence_delta"]`` (``sum(attributions) - (f(x) - f(x0))``).
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from ..adapter import ExplainableModel
from ..errors import UnsupportedModelError
from ..inputs import Batch
from .base import Attribution, AttributionMethod, check_choice, register_method
from .gradient import REDUCTIONS, reading_output, word_embeddings

#: below this relative |Δx| the rescale rule takes the derivative instead (float64)
_TINY = {torch.float64: 1e-9, torch.float32: 1e-4}
#: below this relative |Δx| a float32 secant loses digits: it is redone in float64
_LOOSE = {torch.float32: 1e-3}

#: attention implementations whose operations torch (and so the tracer) sees
_TRACEABLE_ATTENTION = (None, "eager", "sdpa")

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


def _ruled(compute: Callable[[], Tensor], transpose, *inputs: Tensor) -> Tensor:
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
    return _ruled(lambda: value, lambda g: (g * slope,), x)


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
    if op in _MULTIPLY:

        def transpose(g):
            return _fit(g * mean_b, a), _fit(g * mean_a, b)

    elif op in _MATMUL and a.dim() >= 2 and b.dim() >= 2:

        def transpose(g):
            return _fit(g @ mean_b.mT, a), _fit(mean_a.mT @ g, b)

    else:  # any other bilinear operation: its own vector-Jacobian products

        def transpose(g):
            with torch.enable_grad():
                left, right = a.detach().requires_grad_(True), b.detach().requires_grad_(True)
                (ga,) = torch.autograd.grad(op(left, mean_b), left, g)
                (gb,) = torch.autograd.grad(op(mean_a, right), right, g)
            return ga, gb

    return _ruled(compute or (lambda: op(a, b)), transpose, a, b)


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

    return _ruled(compute or (lambda: u * r), transpose, u, r)


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

    return _ruled(compute or (lambda: z.softmax(dim)), transpose, z)


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


# ---------------------------------------------------------------------------- catalogue


@dataclass(frozen=True)
class Rule:
    """How one kind of torch operation is followed.

    ``operands`` picks the tensors the rule needs at reference (``None``: the call is
    linear as made, for example a product with a Python number); ``apply`` builds the
    live output from the live operands and their reference values.
    """

    kind: str
    operands: Callable[[tuple, dict], tuple[Tensor, ...] | None]
    apply: Callable[[_Tracer, Callable, tuple, dict, tuple, tuple], Tensor]


def _is_float_tensor(value: object) -> bool:
    return isinstance(value, Tensor) and value.is_floating_point()


def _first(args: tuple, kwargs: dict) -> tuple[Tensor, ...] | None:
    return (args[0],) if args and _is_float_tensor(args[0]) else None


def _pair(args: tuple, kwargs: dict) -> tuple[Tensor, ...] | None:
    if len(args) >= 2 and _is_float_tensor(args[0]) and _is_float_tensor(args[1]):
        return (args[0], args[1])
    return None


def _division(args: tuple, kwargs: dict) -> tuple[Tensor, ...] | None:
    return None if kwargs.get("rounding_mode") is not None else _pair(args, kwargs)


def _power(args: tuple, kwargs: dict) -> tuple[Tensor, ...] | None:
    """A tensor raised to a number (a tensor exponent is left to the gradient)."""
    if len(args) >= 2 and _is_float_tensor(args[0]) and isinstance(args[1], (int, float)):
        return (args[0],)
    return None


def _einsum(args: tuple, kwargs: dict) -> tuple[Tensor, ...] | None:
    operands = args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if len(operands) == 2 and all(_is_float_tensor(t) for t in operands):
        return tuple(operands)
    return None


def _elementwise(tracer, func, args, kwargs, live, refs) -> Tensor:
    rest = args[1:]
    return rescale(
        lambda t: func(t, *rest, **kwargs), live[0], refs[0], lambda: func(*args, **kwargs)
    )


def _per_row_scale(vector: Tensor, scale: Tensor) -> bool:
    return vector.dim() >= 1 and scale.shape[-1:] == (1,) and vector.shape[-1] > 1


def _product(tracer, func, args, kwargs, live, refs) -> Tensor:
    (a, b), (a0, b0) = live, refs
    if not (a.requires_grad and b.requires_grad):
        return func(*args, **kwargs)  # linear in the one operand that depends on the input

    def compute():
        return func(*args, **kwargs)

    if tracer.in_norm and func in _MULTIPLY:
        if _per_row_scale(a, b):
            return scaled(a, b, a0, compute)
        if _per_row_scale(b, a):
            return scaled(b, a, b0, compute)
    op = func if len(args) == 2 and not kwargs else lambda x, y: func(x, y, *args[2:], **kwargs)
    return shapley(op, a, b, a0, b0, compute)


def _divide(tracer, func, args, kwargs, live, refs) -> Tensor:
    """``a / b`` as ``a · (1/b)``; ``Δ(1/b) = -Δb / (b b0)`` exactly."""
    (a, b), (a0, b0) = live, refs
    if not b.requires_grad:
        return func(*args, **kwargs)
    inverse = _ruled(lambda: 1 / b, lambda g: (-g / (b.detach() * b0),), b)

    def compute():
        return func(*args, **kwargs)

    if tracer.in_norm and _per_row_scale(a, b):
        return scaled(a, inverse, a0, compute)
    return shapley(torch.mul, a, inverse, a0, 1 / b0, compute)


def _einsum_product(tracer, func, args, kwargs, live, refs) -> Tensor:
    (a, b), (a0, b0) = live, refs
    if not (a.requires_grad and b.requires_grad):
        return func(*args, **kwargs)
    return shapley(lambda x, y: func(args[0], x, y), a, b, a0, b0, lambda: func(*args, **kwargs))


_SOFTMAX = inspect.signature(lambda input, dim=None, dtype=None: None)
_F_SOFTMAX = inspect.signature(lambda input, dim=None, _stacklevel=3, dtype=None: None)


def _softmax(tracer, func, args, kwargs, live, refs) -> Tensor:
    bound = (_F_SOFTMAX if func is F.softmax else _SOFTMAX).bind(*args, **kwargs).arguments
    z, z0 = live[0], refs[0]
    dtype = bound.get("dtype")
    if dtype is not None:
        z, z0 = z.to(dtype), z0.to(dtype)
    dim = bound.get("dim")
    if dim is None:  # torch's legacy implicit dimension
        dim = 0 if z.dim() in (0, 1, 3) else 1
    return softmax_rule(z, z0, dim, lambda: func(*args, **kwargs))


_LAYER_NORM = inspect.signature(
    lambda input, normalized_shape, weight=None, bias=None, eps=1e-5: None
)
_RMS_NORM = inspect.signature(lambda input, normalized_shape, weight=None, eps=None: None)


def _normalisation(tracer, func, args, kwargs, live, refs) -> Tensor:
    centre = func is F.layer_norm
    bound = (_LAYER_NORM if centre else _RMS_NORM).bind(*args, **kwargs).arguments
    x = live[0]
    eps = bound.get("eps")
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    dims = tuple(range(-len(bound["normalized_shape"]), 0))
    weight = bound.get("weight")
    return norm_rule(x, refs[0], dims, eps, centre, weight, lambda: func(*args, **kwargs))


def _sdpa_signature(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
    enable_gqa=False,
): ...  # fmt: skip


_SDPA = inspect.signature(_sdpa_signature)


def _sdpa_operands(args: tuple, kwargs: dict) -> tuple[Tensor, ...] | None:
    bound = _SDPA.bind(*args, **kwargs).arguments
    return (bound["query"], bound["key"], bound["value"])


def _attention(tracer, func, args, kwargs, live, refs) -> Tensor:
    bound = _SDPA.bind(*args, **kwargs)
    bound.apply_defaults()
    options = bound.arguments
    if options["dropout_p"]:
        raise UnsupportedModelError(
            "deeplift needs a deterministic model: attention dropout is on; put the model in "
            "eval mode (model.eval())"
        )
    return attention_rule(
        *live,
        *refs,
        options["attn_mask"],
        bool(options["is_causal"]),
        options["scale"],
        bool(options["enable_gqa"]),
        lambda: func(*args, **kwargs),
    )


_MULTIPLY = (torch.mul, torch.Tensor.mul, torch.Tensor.__mul__, torch.Tensor.__rmul__)
_MATMUL = (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.bmm, torch.Tensor.bmm)
_DIVIDE = (torch.div, torch.Tensor.div, torch.Tensor.__truediv__, torch.true_divide)
_POWER = (torch.pow, torch.Tensor.pow, torch.Tensor.__pow__)
_SOFTMAXES = (F.softmax, torch.softmax, torch.Tensor.softmax)
_ELEMENTWISE = (
    F.gelu, F.silu, F.relu, F.elu, F.leaky_relu, F.softplus, F.mish, F.hardswish,
    torch.tanh, torch.Tensor.tanh, torch.sigmoid, torch.Tensor.sigmoid, torch.relu,
    torch.Tensor.relu, torch.exp, torch.Tensor.exp, torch.log, torch.Tensor.log,
    torch.erf, torch.Tensor.erf, torch.rsqrt, torch.Tensor.rsqrt, torch.sqrt,
    torch.Tensor.sqrt, torch.reciprocal, torch.Tensor.reciprocal, torch.square,
    torch.Tensor.square, torch.Tensor.__rtruediv__, torch.Tensor.__rdiv__,
)  # fmt: skip

#: torch function -> its rule; a function not listed here is followed by its gradient
CATALOGUE: dict[Callable, Rule] = {
    func: rule
    for funcs, rule in (
        (_ELEMENTWISE, Rule("rescale", _first, _elementwise)),
        (_POWER, Rule("rescale", _power, _elementwise)),
        (_MULTIPLY + _MATMUL, Rule("shapley", _pair, _product)),
        (_DIVIDE, Rule("shapley", _division, _divide)),
        ((torch.einsum,), Rule("shapley", _einsum, _einsum_product)),
        (_SOFTMAXES, Rule("softmax", _first, _softmax)),
        ((F.layer_norm, F.rms_norm), Rule("normalisation", _first, _normalisation)),
        ((F.scaled_dot_product_attention,), Rule("attention", _sdpa_operands, _attention)),
    )
    for func in funcs
}


def _activation_types() -> tuple[type[nn.Module], ...]:
    """Modules that apply one elementwise function: transformers' activations and torch's."""
    from transformers.activations import ACT2CLS

    found = {entry[0] if isinstance(entry, tuple) else entry for entry in ACT2CLS.values()}
    found |= {
        nn.ReLU, nn.ReLU6, nn.GELU, nn.SiLU, nn.Tanh, nn.Sigmoid, nn.Softplus, nn.ELU,
        nn.LeakyReLU, nn.Mish, nn.Hardswish, nn.Hardtanh, nn.PReLU, nn.SELU, nn.CELU,
        nn.Softsign, nn.Tanhshrink, nn.Hardsigmoid, nn.LogSigmoid,
    }  # fmt: skip
    return tuple(found)


def _is_norm(module: nn.Module) -> bool:
    return isinstance(module, (nn.LayerNorm, nn.RMSNorm)) or type(module).__name__.endswith(
        ("LayerNorm", "RMSNorm")
    )


# ------------------------------------------------------------------------------ tracing


@dataclass
class _Record:
    tensors: tuple[Tensor, ...]
    versions: tuple[int, ...]


class _Tracer(TorchFunctionMode):
    """Sees every torch call; records reference operands, then applies the rules."""

    def __init__(self) -> None:
        super().__init__()
        self.recording = True
        self.tape: deque[_Record] = deque()
        self.paused = 0  # inside an activation module, which is ruled as one function
        self.in_norm = 0  # inside a normalisation module

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rule = None if self.paused else CATALOGUE.get(func)
        operands = rule.operands(args, kwargs) if rule is not None else None
        if not operands or not any(t.requires_grad for t in operands):
            return func(*args, **kwargs)
        references = self.exchange(operands)
        if references is None:
            return func(*args, **kwargs)
        return rule.apply(self, func, args, kwargs, operands, references)

    def exchange(self, operands: tuple[Tensor, ...]) -> tuple[Tensor, ...] | None:
        """Reference pass: store the operands (returns None). Input pass: their reference."""
        if self.recording:
            self.tape.append(
                _Record(tuple(t.detach() for t in operands), tuple(t._version for t in operands))
            )
            return None
        if not self.tape:
            raise _mismatch("ran more nonlinear operations from the input than from the reference")
        record = self.tape.popleft()
        if any(t._version != v for t, v in zip(record.tensors, record.versions, strict=True)):
            raise _mismatch("changed a recorded tensor in place")
        if tuple(t.shape for t in record.tensors) != tuple(t.shape for t in operands):
            raise _mismatch("ran different operations from the input and from the reference")
        return record.tensors

    # modules ruled as a whole --------------------------------------------------------
    def before_activation(self, module: nn.Module, args: tuple) -> None:
        self.paused += 1

    def after_activation(self, module: nn.Module, args: tuple, output: Any) -> Tensor | None:
        try:
            x = args[0] if args else None
            if self.paused > 1:  # inside another activation module, which rules it all
                return None
            if not (_is_float_tensor(x) and x.requires_grad and isinstance(output, Tensor)):
                return None
            references = self.exchange((x,))
            if references is None:
                return None
            # a module without weights applies one function to any shape of input
            free = next(iter(module.parameters()), None) is None
            free = free and next(iter(module.buffers()), None) is None
            value = output.detach()
            return rescale(module.forward, x, references[0], lambda: value, gather=free)
        finally:
            self.paused -= 1

    def before_norm(self, module: nn.Module, args: tuple) -> None:
        self.in_norm += 1

    def after_norm(self, module: nn.Module, args: tuple, output: Any) -> None:
        self.in_norm -= 1


def _mismatch(what: str) -> UnsupportedModelError:
    return UnsupportedModelError(
        f"deeplift cannot follow this model: it {what}; its forward must run the same "
        "operations whatever the embeddings (use integrated_gradients instead)"
    )


def _discard(tensor: Tensor) -> None:
    """Saved-tensor hook of the reference pass, which never runs backward."""
    return None


@contextmanager
def _traced(network: nn.Module) -> Iterator[_Tracer]:
    """A tracer with the network's activation and norm modules hooked, its parameters
    frozen (so that ``requires_grad`` means "depends on the embeddings") and in-place
    activations made out-of-place; everything is restored on exit."""
    tracer = _Tracer()
    frozen = [(p, p.requires_grad) for p in network.parameters()]
    inplace = [m for m in network.modules() if getattr(m, "inplace", False) is True]
    handles = []
    activations = _activation_types()
    try:
        for parameter, _ in frozen:
            parameter.requires_grad_(False)
        for module in inplace:
            module.inplace = False
        for module in network.modules():
            if isinstance(module, activations):
                handles.append(module.register_forward_pre_hook(tracer.before_activation))
                handles.append(module.register_forward_hook(tracer.after_activation))
            elif _is_norm(module):
                handles.append(module.register_forward_pre_hook(tracer.before_norm))
                handles.append(module.register_forward_hook(tracer.after_norm))
        yield tracer
    finally:
        for handle in handles:
            handle.remove()
        for module in inplace:
            module.inplace = True
        for parameter, flag in frozen:
            parameter.requires_grad_(flag)


def _check_attention(model: ExplainableModel) -> None:
    implementation = getattr(model.model.config, "_attn_implementation", None)
    if implementation not in _TRACEABLE_ATTENTION:
        raise UnsupportedModelError(
            f"deeplift follows attention computed with torch operations, but this model uses "
            f"{implementation!r}; load it with attn_implementation='sdpa' (or 'eager')"
        )


def deeplift_attributions(
    model: ExplainableModel, batch: Batch, columns: Tensor
) -> Iterator[tuple[Tensor, Tensor]]:
    """DeepLift from the zero word embedding, one target column at a time.

    Yields, for each column ``k`` of ``columns`` ``[B, K]``, the attributions ``[B, T, D]``
    (multipliers x word embedding) and the summation-to-delta error ``[B]``:
    ``attributions.sum() - (f(x) - f(0))`` per text. One reference and one input forward
    pass serve every column; each column costs one backward pass.
    """
    _check_attention(model)
    function, extra = reading_output(model, batch)
    embeds = word_embeddings(model, batch).detach()
    columns = columns.to(embeds.device)
    with _traced(model.model) as tracer:
        with (
            tracer,
            torch.enable_grad(),
            torch.autograd.graph.saved_tensors_hooks(_discard, _discard),
        ):
            reference = function(torch.zeros_like(embeds).requires_grad_(True), *extra).detach()
        tracer.recording = False
        with tracer, torch.enable_grad():
            live = embeds.clone().requires_grad_(True)
            outputs = function(live, *extra)
        if tracer.tape:
            raise _mismatch("ran fewer nonlinear operations from the input than from the reference")
    change = outputs.detach() - reference
    for k in range(columns.shape[1]):
        column = columns[:, k : k + 1]
        target = outputs.gather(1, column).sum()
        (multipliers,) = torch.autograd.grad(target, live, retain_graph=k + 1 < columns.shape[1])
        attributions = multipliers * embeds  # Δembedding = embedding - 0
        delta = attributions.sum((1, 2)) - change.gather(1, column).squeeze(1)
        yield attributions.detach(), delta.detach()


@register_method
@dataclass
class DeepLift(AttributionMethod):
    """DeepLift from the zero word embedding through every operation of the model (see
    the module docstring for the rule of each kind of operation)."""

    name: ClassVar[str] = "deeplift"
    description: ClassVar[str] = (
        "DeepLift from a zero embedding: rescale rule on activations, Shapley split of "
        "products, exact softmax and normalisation rules"
    )
    needs_gradients: ClassVar[bool] = True
    single_forward: ClassVar[bool] = False
    signed: ClassVar[bool] = False

    reduce: str = "l1"

    def attribute(self, model, forward, targets, layers):
        check_choice("reduce", self.reduce, tuple(REDUCTIONS))
        scores, deltas = [], []
        for attributions, delta in deeplift_attributions(model, forward.batch, targets.columns):
            scores.append(REDUCTIONS[self.reduce](attributions))
            deltas.append(delta)
        return Attribution(
            torch.stack(scores, dim=-1).unsqueeze(1),  # [B, 1, T, K]
            {"convergence_delta": torch.stack(deltas, dim=-1)},
        )
