"""Which torch function, and which module, gets which DeepLift rule."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...common.errors import UnsupportedModelError
from .operations import DIVIDE, ELEMENTWISE, MATMUL, MULTIPLY, POWER, SOFTMAXES
from .rules import attention_rule, norm_rule, rescale, ruled, scaled, shapley, softmax_rule

if TYPE_CHECKING:
    from .tracer import Tracer


@dataclass(frozen=True)
class Rule:
    """How one kind of torch operation is followed.

    ``operands`` picks the tensors the rule needs at reference (``None``: the call is
    linear as made, for example a product with a Python number); ``apply`` builds the
    live output from the live operands and their reference values.
    """

    kind: str
    operands: Callable[[tuple, dict], tuple[Tensor, ...] | None]
    apply: Callable[[Tracer, Callable, tuple, dict, tuple, tuple], Tensor]


def is_float_tensor(value: object) -> bool:
    return isinstance(value, Tensor) and value.is_floating_point()


def _first(args: tuple, kwargs: dict) -> tuple[Tensor, ...] | None:
    return (args[0],) if args and is_float_tensor(args[0]) else None


def _pair(args: tuple, kwargs: dict) -> tuple[Tensor, ...] | None:
    if len(args) >= 2 and is_float_tensor(args[0]) and is_float_tensor(args[1]):
        return (args[0], args[1])
    return None


def _division(args: tuple, kwargs: dict) -> tuple[Tensor, ...] | None:
    return None if kwargs.get("rounding_mode") is not None else _pair(args, kwargs)


def _power(args: tuple, kwargs: dict) -> tuple[Tensor, ...] | None:
    """A tensor raised to a number (a tensor exponent is left to the gradient)."""
    if len(args) >= 2 and is_float_tensor(args[0]) and isinstance(args[1], (int, float)):
        return (args[0],)
    return None


def _einsum(args: tuple, kwargs: dict) -> tuple[Tensor, ...] | None:
    operands = args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if len(operands) == 2 and all(is_float_tensor(t) for t in operands):
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

    if tracer.in_norm and func in MULTIPLY:
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
    inverse = ruled(lambda: 1 / b, lambda g: (-g / (b.detach() * b0),), b)

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


#: torch function -> its rule; a function not listed here is followed by its gradient
CATALOGUE: dict[Callable, Rule] = {
    func: rule
    for funcs, rule in (
        (ELEMENTWISE, Rule("rescale", _first, _elementwise)),
        (POWER, Rule("rescale", _power, _elementwise)),
        (MULTIPLY + MATMUL, Rule("shapley", _pair, _product)),
        (DIVIDE, Rule("shapley", _division, _divide)),
        ((torch.einsum,), Rule("shapley", _einsum, _einsum_product)),
        (SOFTMAXES, Rule("softmax", _first, _softmax)),
        ((F.layer_norm, F.rms_norm), Rule("normalisation", _first, _normalisation)),
        ((F.scaled_dot_product_attention,), Rule("attention", _sdpa_operands, _attention)),
    )
    for func in funcs
}


def activation_types() -> tuple[type[nn.Module], ...]:
    """Modules that apply one elementwise function: transformers' activations and torch's."""
    from transformers.activations import ACT2CLS

    found = {entry[0] if isinstance(entry, tuple) else entry for entry in ACT2CLS.values()}
    found |= {
        nn.ReLU, nn.ReLU6, nn.GELU, nn.SiLU, nn.Tanh, nn.Sigmoid, nn.Softplus, nn.ELU,
        nn.LeakyReLU, nn.Mish, nn.Hardswish, nn.Hardtanh, nn.PReLU, nn.SELU, nn.CELU,
        nn.Softsign, nn.Tanhshrink, nn.Hardsigmoid, nn.LogSigmoid,
    }  # fmt: skip
    return tuple(found)


def is_norm(module: nn.Module) -> bool:
    return isinstance(module, (nn.LayerNorm, nn.RMSNorm)) or type(module).__name__.endswith(
        ("LayerNorm", "RMSNorm")
    )
