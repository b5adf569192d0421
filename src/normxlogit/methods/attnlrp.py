"""AttnLRP (Achtibat et al., ICML 2024): layer-wise relevance propagation through attention.

LRP hands the explained output back to the inputs layer by layer, each operation by a
rule. AttnLRP's rules can all be written as gradients that are changed at a few
operations, so that gradient x input at the word embeddings *is* the relevance (the
"efficient" form of the reference implementation, lxt 2.x, after Arras et al. 2025). The
model runs from its word embeddings with its own values everywhere; only the gradients
of these operations are replaced:

- normalisation (LayerNorm, RMSNorm; ``y = w ⊙ c(x)·r + b`` with ``c`` the centring for
  LayerNorm and ``r = (mean(c(x)²) + eps)^-1/2`` the row's scale): the **identity rule**,
  the gradient with the scale ``r`` held constant (``w·r``, centred for LayerNorm);
- elementwise activation modules (GELU, SiLU, the pooler's tanh): the **identity rule**,
  the gradient ``f(x) / (x + 1e-10)``;
- the products of self-attention (``q·kᵀ`` and ``softmax·v``): the **uniform rule**, each
  product's two factors get half of its relevance. The softmax between them keeps its own
  gradient (AttnLRP's softmax rule is its Taylor expansion at the input), so the query and
  key projections' outputs get 1/4 of their gradient and the value projection's 1/2;
- the gated MLP's ``act(gate) * up`` (LLaMA): the uniform rule, 1/2 to each factor;
- everything else (linear layers, embeddings, residual additions, rotary embeddings,
  masks): linear, the plain gradient.

Relevance of a token: ``Σ_d e_td · ∂f/∂e_td`` over its word embedding ``e_t`` under these
gradients, ``f`` the target's logit at the reading position (minus the contrast's). A
family says where the attention projections and the gated product are
(:class:`~normxlogit.model.families.RelevanceLayout`); normalisation and activation
modules are found by type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor, nn

from ..common.errors import UnsupportedModelError
from ..model.adapter import ExplainableModel
from ..model.families import RelevanceLayout, families_declaring
from ..model.families.heads import module_at
from .base import Attribution, AttributionMethod, check_choice, register_method
from .deeplift.catalogue import activation_types, is_norm
from .gradient import REDUCTIONS, frozen_parameters, reading_output, word_embeddings

#: lxt's ``identity_rule_implicit``: the gradient of ``f`` is ``f(x) / (x + EPSILON)``
EPSILON = 1e-10
#: the uniform rule's shares: q·kᵀ then softmax·v halve the query's and key's relevance
#: twice, the value's once; the gated product halves both of its factors'
QUERY_KEY_SHARE = 0.25
VALUE_SHARE = 0.5
GATE_SHARE = 0.5


class _Ruled(torch.autograd.Function):
    """``value`` forward (an operation's own output); backward, the output's gradient
    mapped to the gradient of ``x`` (the operation's input) by ``transpose``."""

    @staticmethod
    def forward(ctx, x: Tensor, value: Tensor, transpose: Callable[[Tensor], Tensor]) -> Tensor:
        ctx.transpose = transpose
        return value

    @staticmethod
    def backward(ctx, grad: Tensor):
        return ctx.transpose(grad), None, None


def ruled(x: Tensor, value: Tensor, transpose: Callable[[Tensor], Tensor]) -> Tensor:
    """``value`` whose gradient reaches ``x`` through ``transpose`` alone."""
    return _Ruled.apply(x, value.detach(), transpose)


def scaled_gradient(x: Tensor, share: float) -> Tensor:
    """``x`` whose gradient is multiplied by ``share`` (the uniform rule's split)."""
    return ruled(x, x, lambda grad: grad * share)


def identity_rule(x: Tensor, y: Tensor) -> Tensor:
    """``y = f(x)`` elementwise, its gradient ``f(x) / (x + 1e-10)``: the relevance
    ``x·grad`` passes through ``f`` unchanged."""
    ratio = y.detach() / (x.detach() + EPSILON)
    return ruled(x, y, lambda grad: grad * ratio)


def norm_rule(module: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """``y`` (the norm module's output for ``x``) with the gradient of ``w ⊙ c(x)·r``, the
    row's scale ``r`` held constant (LayerNorm: ``c`` centres; RMSNorm: ``c(x) = x``)."""
    centred = isinstance(module, nn.LayerNorm) or type(module).__name__.endswith("LayerNorm")
    dims = tuple(range(-len(getattr(module, "normalized_shape", (0,))), 0))
    values = x.detach().float()
    if centred:
        values = values - values.mean(dims, keepdim=True)
    eps = getattr(module, "variance_epsilon", None) or getattr(module, "eps", None)
    if eps is None:  # torch's RMSNorm without eps: the dtype's
        eps = torch.finfo(x.dtype).eps
    scale = torch.rsqrt(values.square().mean(dims, keepdim=True) + eps)
    weight = getattr(module, "weight", None)

    def transpose(grad: Tensor) -> Tensor:
        slope = grad.float() * scale
        if weight is not None:
            slope = slope * weight.detach().float()
        if centred:
            slope = slope - slope.mean(dims, keepdim=True)
        return slope.to(grad.dtype)

    return ruled(x, y, transpose)


def relevance_layout(model: ExplainableModel) -> RelevanceLayout:
    """The family's layout, or an :class:`UnsupportedModelError` naming the families
    that declare one."""
    layout = model.family.relevance
    if layout is None:
        supported = ", ".join(families_declaring("relevance"))
        raise UnsupportedModelError(
            f"attnlrp has rules for the {supported} families; {type(model.model).__name__} "
            f"(family {model.family.name!r}) is not one of them: use another method, or "
            "declare its RelevanceLayout in normxlogit.model.families"
        )
    if model.blocks is None:
        raise UnsupportedModelError(
            f"attnlrp rules each transformer block, and {type(model.model).__name__} shares "
            "one block's weights across layers; use another method"
        )
    return layout


class _Rules:
    """Hooks that put AttnLRP's rules into the network's forward; ``check()`` after a
    pass says whether every declared attention projection and gated product was met."""

    def __init__(self, model: ExplainableModel, layout: RelevanceLayout):
        self.handles: list = []
        self.declared: dict[nn.Module, str] = {}
        self.met: set[nn.Module] = set()
        self.inplace = [m for m in model.model.modules() if getattr(m, "inplace", False) is True]
        for index, block in enumerate(model.blocks):
            for path, share in (
                (layout.query, QUERY_KEY_SHARE),
                (layout.key, QUERY_KEY_SHARE),
                (layout.value, VALUE_SHARE),
            ):
                module = self._declared(block, index, path)
                self.handles.append(module.register_forward_hook(self._output_share(share)))
            if layout.gated_product is not None:
                module = self._declared(block, index, layout.gated_product)
                self.handles.append(module.register_forward_pre_hook(self._input_share))
        activations = activation_types()
        ruled_activations: list[str] = []
        for name, module in model.model.named_modules():
            if is_norm(module):
                self.handles.append(module.register_forward_hook(self._norm))
            elif isinstance(module, activations):
                if any(name.startswith(outer + ".") for outer in ruled_activations):
                    continue  # inside another activation module, which is ruled as a whole
                ruled_activations.append(name)
                self.handles.append(module.register_forward_hook(self._activation))
        for module in self.inplace:  # the identity rule reads the activation's input
            module.inplace = False

    def _declared(self, block: nn.Module, index: int, path: str) -> nn.Module:
        module = module_at(block, path)
        if module is None:
            raise UnsupportedModelError(
                f"attnlrp expects a module at {path!r} in every block, and block {index} has "
                "none; correct the family's RelevanceLayout in normxlogit.model.families"
            )
        self.declared[module] = f"block {index} {path}"
        return module

    def _output_share(self, share: float):
        def hook(module: nn.Module, args: tuple, output):
            if not (isinstance(output, Tensor) and output.requires_grad):
                return None
            self.met.add(module)
            return scaled_gradient(output, share)

        return hook

    def _input_share(self, module: nn.Module, args: tuple):
        if not (args and isinstance(args[0], Tensor) and args[0].requires_grad):
            return None
        self.met.add(module)
        return (scaled_gradient(args[0], GATE_SHARE), *args[1:])

    @staticmethod
    def _norm(module: nn.Module, args: tuple, output):
        x = args[0] if args else None
        if not (isinstance(x, Tensor) and x.requires_grad and isinstance(output, Tensor)):
            return None
        return norm_rule(module, x, output)

    @staticmethod
    def _activation(module: nn.Module, args: tuple, output):
        x = args[0] if args else None
        if not (isinstance(x, Tensor) and x.requires_grad and isinstance(output, Tensor)):
            return None
        return identity_rule(x, output)

    def check(self) -> None:
        missed = [where for module, where in self.declared.items() if module not in self.met]
        if missed:
            raise UnsupportedModelError(
                f"attnlrp's rules never met {missed[0]} (and {len(missed) - 1} more) in the "
                "model's forward: the family's RelevanceLayout does not match how this model "
                "runs; correct it in normxlogit.model.families"
            )

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        for module in self.inplace:
            module.inplace = True


@contextmanager
def attnlrp_rules(model: ExplainableModel) -> Iterator[_Rules]:
    """Inside, the model's forward carries AttnLRP's rules in its gradients (its values are
    unchanged); every hook is removed on exit."""
    rules = _Rules(model, relevance_layout(model))
    try:
        yield rules
    finally:
        rules.remove()


@register_method
@dataclass
class AttnLRP(AttributionMethod):
    """AttnLRP (Achtibat et al., ICML 2024) at the word embeddings, one backward pass per
    target.

    Rules: identity rule at LayerNorm/RMSNorm (the row's scale held constant) and at
    elementwise activations (GELU, SiLU, tanh: gradient ``f(x)/(x + 1e-10)``); uniform
    rule at the products of two embedding-dependent factors (``q·kᵀ`` and
    ``softmax·v``: 1/4 of the gradient to queries and keys, 1/2 to values; the gated MLP's
    ``act(gate)·up``: 1/2 to each); the softmax and everything linear keep their gradient.
    See the module docstring.

    The scores equal lxt 2.1's efficient AttnLRP (``lxt.efficient.monkey_patch``, then
    ``(inputs_embeds * inputs_embeds.grad).sum(-1)``) to 1e-4 on the BERT family (MiniLM)
    and the LLaMA family (SmolLM2): ``tests/methods/test_attnlrp.py`` compares them with
    lxt's outputs (``tests/data/attnlrp``, made by ``scripts/lxt_reference.py``). The
    other model types of the llama family (Mistral, Qwen2/3, OLMo, Granite, SmolLM3) are
    laid out alike and get the same rules; other families are refused.

    ``diagnostics["conservation_gap"]``: a text's total relevance (the signed sum over its
    tokens and the hidden dimension) minus the explained output. The rules conserve
    relevance everywhere but at biases and at the softmax, whose Taylor rule does not.
    """

    name: ClassVar[str] = "attnlrp"
    description: ClassVar[str] = (
        "AttnLRP (Achtibat et al. 2024): relevance through every operation (identity rule "
        "at norms and activations, uniform rule at attention's and gates' products), as lxt "
        "2.1's efficient AttnLRP; BERT and LLaMA families"
    )
    needs_gradients: ClassVar[bool] = True
    single_forward: ClassVar[bool] = False
    signed: ClassVar[bool] = True

    #: the hidden dimension's reduction: a signed "sum" (lxt's, the default), "l1" or "l2"
    reduce: str = "sum"

    def attribute(self, model, forward, targets, layers):
        check_choice("reduce", self.reduce, tuple(REDUCTIONS))
        batch = forward.batch
        function, extra = reading_output(model, batch)
        real = batch.attention_mask.bool()
        scores, gaps = [], []
        width = targets.columns.shape[1]
        with frozen_parameters(model.model), torch.enable_grad():
            with attnlrp_rules(model) as rules:
                embeds = word_embeddings(model, batch).detach().requires_grad_(True)
                outputs = function(embeds, *extra)
            rules.check()
            for k in range(width):
                explained = targets.pick(outputs, k)
                (grad,) = torch.autograd.grad(explained.sum(), embeds, retain_graph=k + 1 < width)
                relevance = (embeds * grad).detach()
                scores.append(REDUCTIONS[self.reduce](relevance))
                total = relevance.sum(-1).masked_fill(~real, 0).sum(-1)
                gaps.append(total - explained.detach())
        return Attribution(
            torch.stack(scores, dim=-1).unsqueeze(1),  # [B, 1, T, K]
            {"conservation_gap": torch.stack(gaps, dim=-1)},
        )
