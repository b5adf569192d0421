"""DeepLift (Shrikumar et al. 2017) at the word embeddings, from a baseline embedding.

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
normalisation rule. The catalogue, one rule per kind of operation (``CATALOGUE`` in
``catalogue.py``):

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

Options beside the exact rules: the reference may be another baseline than the zero
embedding (``baseline``, ``baseline_keeps_eos``: see :mod:`..baselines`), the target's
probability may be explained instead of its logit (``attributed_fn``), and
``rules="captum"`` runs Captum's own DeepLift on the model, as Inseq (and so the pi-Soft
paper) ran it: rules only at the activation modules Captum knows (ReLU, ELU, sigmoid,
tanh, softmax and max-pool modules), the gradient everywhere else. On LLaMA-like models it
meets none of them, so it is the gradient at the input times (input - baseline).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from ...common.errors import UnsupportedModelError
from ...common.options import token_field
from ...model.adapter import ExplainableModel
from ...model.inputs import Batch
from ...model.targets import Targets
from ..base import Attribution, AttributionMethod, check_choice, register_method
from ..baselines import baseline_embeddings
from ..gradient import (
    REDUCTIONS,
    ReadingOutput,
    check_attributed_fn,
    contrasted,
    frozen_parameters,
    reading_output,
    word_embeddings,
)
from .catalogue import CATALOGUE, Rule
from .rules import attention_rule, norm_rule, rescale, scaled, shapley, softmax_rule
from .tracer import discard, mismatch, traced

__all__ = [
    "CATALOGUE",
    "DeepLift",
    "Rule",
    "attention_rule",
    "deeplift_attributions",
    "norm_rule",
    "rescale",
    "scaled",
    "shapley",
    "softmax_rule",
]

#: attention implementations whose operations torch (and so the tracer) sees
_TRACEABLE_ATTENTION = (None, "eager", "sdpa")


def _check_attention(model: ExplainableModel) -> None:
    implementation = getattr(model.model.config, "_attn_implementation", None)
    if implementation not in _TRACEABLE_ATTENTION:
        raise UnsupportedModelError(
            f"deeplift follows attention computed with torch operations, but this model uses "
            f"{implementation!r}; load it with attn_implementation='sdpa' (or 'eager')"
        )


#: how DeepLift propagates: the project's exact rules, or Captum's (Inseq's) shortcut
RULES = ("exact", "captum")


def deeplift_attributions(
    model: ExplainableModel,
    batch: Batch,
    columns: Tensor,
    baseline: Tensor | None = None,
    attributed_fn: str = "logit",
    rules: str = "exact",
    contrast: Tensor | None = None,
) -> Iterator[tuple[Tensor, Tensor]]:
    """DeepLift from ``baseline`` (word embeddings ``[B, T, D]``; ``None``: the zero
    embedding), one target column at a time.

    Yields, for each column ``k`` of ``columns`` ``[B, K]``, the attributions ``[B, T, D]``
    (multipliers x (word embedding - baseline)) and the summation-to-delta error ``[B]``:
    ``attributions.sum() - (f(x) - f(x0))`` per text (Captum's convergence delta with
    ``rules="captum"``). With ``contrast`` ``[B, K]``, column ``k``'s output minus
    contrast column ``k``'s is explained.
    """
    function, extra = reading_output(model, batch, attributed_fn)
    embeds = word_embeddings(model, batch).detach()
    start = torch.zeros_like(embeds) if baseline is None else baseline.detach()
    targets = Targets(columns.to(embeds.device), [], False, contrast)
    if rules == "captum":
        yield from _captum_rules(function, extra, embeds, start, targets)
        return
    _check_attention(model)
    yield from _exact_rules(model, function, extra, embeds, start, targets)


def _exact_rules(
    model: ExplainableModel,
    function: ReadingOutput,
    extra: tuple,
    embeds: Tensor,
    start: Tensor,
    targets: Targets,
) -> Iterator[tuple[Tensor, Tensor]]:
    """The exact rules: one reference and one input forward pass serve every column;
    each column costs one backward pass."""
    with traced(model.model) as tracer:
        with (
            tracer,
            torch.enable_grad(),
            torch.autograd.graph.saved_tensors_hooks(discard, discard),
        ):
            reference = function(start.clone().requires_grad_(True), *extra).detach()
        tracer.recording = False
        with tracer, torch.enable_grad():
            live = embeds.clone().requires_grad_(True)
            outputs = function(live, *extra)
        if tracer.tape:
            raise mismatch("ran fewer nonlinear operations from the input than from the reference")
    change = outputs.detach() - reference
    width = targets.columns.shape[1]
    for k in range(width):
        target = targets.pick(outputs, k).sum()
        (multipliers,) = torch.autograd.grad(target, live, retain_graph=k + 1 < width)
        attributions = multipliers * (embeds - start)  # multipliers x Δembedding
        delta = attributions.sum((1, 2)) - targets.pick(change, k)
        yield attributions.detach(), delta.detach()


def _captum_rules(
    function: ReadingOutput, extra: tuple, embeds: Tensor, start: Tensor, targets: Targets
) -> Iterator[tuple[Tensor, Tensor]]:
    """Captum's DeepLift on the model, as Inseq runs it: one Captum call per column."""
    import captum.attr

    with frozen_parameters(function.network), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Captum announces the hooks it sets
        for k in range(targets.columns.shape[1]):
            differentiated, arguments = contrasted(function, extra, targets, k)
            attributions, delta = captum.attr.DeepLift(differentiated).attribute(
                embeds.clone().requires_grad_(True),
                baselines=start,
                target=targets.columns[:, k],
                additional_forward_args=arguments,
                return_convergence_delta=True,
            )
            yield attributions.detach(), delta.detach()


@register_method
@dataclass
class DeepLift(AttributionMethod):
    """DeepLift from a baseline word embedding (zero by default) through every operation
    of the model (see the module docstring for the rule of each kind of operation), or,
    with ``rules="captum"``, Captum's DeepLift as Inseq ran it."""

    name: ClassVar[str] = "deeplift"
    description: ClassVar[str] = (
        "DeepLift from a baseline embedding: rescale rule on activations, Shapley split of "
        "products, exact softmax and normalisation rules (rules='captum': Captum's)"
    )
    needs_gradients: ClassVar[bool] = True
    single_forward: ClassVar[bool] = False
    signed: ClassVar[bool] = False

    #: the hidden dimension's reduction: "l1", "l2" or a signed "sum"
    reduce: str = "l1"
    #: what is explained: the target's "logit" or its "probability"
    attributed_fn: str = "logit"
    #: "zero", "unk", "pad", "mask", a token id (an int, or "id:N" as text) or a token
    #: (see ``baselines``): text is never read as an id
    baseline: str | int = token_field("zero")
    #: end-of-sequence positions keep their own embedding (Inseq's default)
    baseline_keeps_eos: bool = False
    #: "exact" (every operation ruled) or "captum" (Captum's module rules, as Inseq runs)
    rules: str = "exact"

    def attribute(self, model, forward, targets, layers):
        check_choice("reduce", self.reduce, tuple(REDUCTIONS))
        check_choice("rules", self.rules, RULES)
        check_attributed_fn(model, self.attributed_fn)
        batch = forward.batch
        embeds = word_embeddings(model, batch).detach()
        start = baseline_embeddings(model, batch, embeds, self.baseline, self.baseline_keeps_eos)
        scores, deltas = [], []
        run = deeplift_attributions(
            model, batch, targets.columns, start, self.attributed_fn, self.rules, targets.contrast
        )
        for attributions, delta in run:
            scores.append(REDUCTIONS[self.reduce](attributions))
            deltas.append(delta)
        return Attribution(
            torch.stack(scores, dim=-1).unsqueeze(1),  # [B, 1, T, K]
            {"convergence_delta": torch.stack(deltas, dim=-1)},
        )
