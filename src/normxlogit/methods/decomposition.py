"""Vector decomposition of BERT-layout encoder blocks, shared by GlobEnc, ALTI and DecompX.

Once the attention weights, the LayerNorms' scales and the feed-forward activation's
slope are fixed at their values in the real forward pass, a block is linear in its input
vectors, so every vector it produces splits exactly into one part per source token:

    z_ik = sum_h sum_j a^h_ij (p_jk W_v^h) W_o^h + p_ik,   (attention + residual)
    y_ik = gamma * (z_ik - mean(z_ik)) / std(z_i),          (LayerNorm: the real scale)

where ``p_jk`` is token ``j``'s part from source ``k``. Biases (and the LayerNorms'
shifts) belong to no token: :class:`Decomposed` keeps them apart in ``rest`` or spreads
each one over the parts in proportion to ``|<part, bias>|`` (DecompX's ``absdot``).
The methods built on this differ only in what they keep and score; see ``globenc``,
``alti`` and ``decompx``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import torch
from torch import Tensor, nn

from ..common.errors import UnsupportedModelError
from ..model.adapter import ExplainableModel, ForwardResult
from .base import check_choice
from .blocks import caught_block_calls

#: where biases go: ``apart`` (in ``rest``) or ``absdot`` (spread over the parts)
BIAS_RULES = ("apart", "absdot")


@dataclass
class Decomposed:
    """Vectors ``[T, D]`` split over ``K`` sources: ``parts`` ``[T, K, D]`` plus ``rest``.

    ``bias`` says where every bias added later goes: ``apart`` keeps it in ``rest``;
    ``absdot`` gives each part the share ``|<part, b>| / sum_k |<part_k, b>|`` of it (as
    DecompX does), so ``rest`` stays zero and the parts alone add up to the total.
    """

    parts: Tensor
    rest: Tensor  # biases and LayerNorm shifts: owned by no token
    bias: str = "apart"

    @property
    def total(self) -> Tensor:
        return self.parts.sum(1) + self.rest

    @classmethod
    def own(cls, vectors: Tensor, bias: str = "apart") -> Decomposed:
        """Each token's vector is entirely its own."""
        check_choice("bias", bias, BIAS_RULES)
        parts = torch.diag_embed(vectors.T).permute(1, 2, 0)  # [i, i, :] = x_i
        return cls(parts, torch.zeros_like(vectors), bias)

    def _with(self, parts: Tensor, rest: Tensor) -> Decomposed:
        return replace(self, parts=parts, rest=rest)

    def rows(self, index: slice | Tensor) -> Decomposed:
        """Only the vectors at ``index``, with all their sources."""
        return self._with(self.parts[index], self.rest[index])

    def matmul(self, weight: Tensor) -> Decomposed:
        """A linear map without bias: ``v @ weight.T`` for every part and the rest."""
        return self._with(self.parts @ weight.T, self.rest @ weight.T)

    def add_bias(self, bias: Tensor, in_place: bool = False) -> Decomposed:
        """Add ``bias`` ``[D]`` to every vector, placed by the ``bias`` rule.

        ``in_place``: the parts are a fresh tensor nobody else holds, so ``absdot`` adds
        the shares into it instead of allocating another ``[T, K, D]`` (which, after the
        feed-forward's first linear map, is four times the model's width).
        """
        if self.bias == "apart":
            return self._with(self.parts, self.rest + bias)
        # in at least float32: half precision rounds the floor 1e-12 to 0 (0 / 0 where a
        # vector's parts are all orthogonal to the bias) and can overflow the dot products
        wide = torch.promote_types(self.parts.dtype, torch.float32)
        weights = (self.parts.to(wide) @ bias.to(wide)).abs()  # [T, K]
        shares = (weights / (weights.sum(-1, keepdim=True) + 1e-12)).unsqueeze(-1)
        shares = shares.to(self.parts.dtype)
        add = self.parts.addcmul_ if in_place else partial(torch.addcmul, self.parts)
        return self._with(add(shares, bias), self.rest)

    def linear(self, layer: nn.Linear) -> Decomposed:
        moved = self.matmul(layer.weight)
        return moved if layer.bias is None else moved.add_bias(layer.bias, in_place=True)

    def activation(self, function: Callable[[Tensor], Tensor]) -> Decomposed:
        """``f`` through its zero-origin slope ``f(a) / a`` at the total: exact on the total."""
        total = self.total
        safe = torch.where(total.abs() < 1e-6, torch.full_like(total, 1e-6), total)
        ratio = function(safe) / safe
        return self._with(self.parts * ratio.unsqueeze(1), self.rest * ratio)

    def layer_norm(self, norm: nn.LayerNorm, scale_of: Tensor | None = None) -> Decomposed:
        """LayerNorm with one scale for all parts: the total's, or that of ``scale_of``.

        Exact on the total; ``scale_of`` (the vectors the real LayerNorm saw) lets a
        method follow only some of what entered it (GlobEnc skips the feed-forward).
        """
        reference = self.total if scale_of is None else scale_of
        std = (reference.var(-1, unbiased=False, keepdim=True) + norm.eps).sqrt()

        def normed(v: Tensor, scale: Tensor) -> Tensor:  # one [T, K, D] temporary, not three
            out = v - v.mean(-1, keepdim=True)
            return out.mul_(norm.weight).div_(scale)

        scaled = self._with(normed(self.parts, std.unsqueeze(1)), normed(self.rest, std))
        return scaled.add_bias(norm.bias, in_place=True)

    def __add__(self, other: Decomposed) -> Decomposed:
        return self._with(self.parts + other.parts, self.rest + other.rest)


def attention_weights(attention: nn.Module, inputs: Tensor, real: Tensor | None) -> Tensor:
    """Head attention weights ``[H, T, T]`` of one text, padding keys (``~real``) masked out."""
    heads = attention.num_attention_heads
    length, width = inputs.shape[0], inputs.shape[-1] // heads

    def split(linear: nn.Linear) -> Tensor:  # [H, T, d]
        return linear(inputs).view(length, heads, width).transpose(0, 1)

    scores = split(attention.query) @ split(attention.key).transpose(1, 2) / width**0.5
    if real is not None:
        scores = scores.masked_fill(~real.view(1, 1, -1), float("-inf"))
    return scores.softmax(-1)


def attention_sublayer(
    block: nn.Module,
    inputs: Tensor,
    state: Decomposed,
    real: Tensor | None = None,
    value_bias_in_tokens: bool = False,
    queries: slice | Tensor = slice(None),
) -> Decomposed:
    """Self-attention, output projection, residual and LayerNorm of one BERT-layout block.

    ``inputs`` ``[T, D]`` are the block's real input (they set the attention weights;
    ``real`` marks the tokens that are not padding, all when ``None``); ``state`` is the
    same vectors, decomposed over ``K`` sources. The value bias of
    token ``j``'s value vector goes with source ``j`` (weighted by the attention paid to
    ``j``) when ``value_bias_in_tokens`` (only meaningful when the sources are the
    tokens themselves, ``K == T``); otherwise, projected by ``W_o``, it joins the output
    projection's bias. ``queries`` limits the output to those rows (a head that reads
    one token needs only its row from the last block).
    """
    attention, projection = block.attention.self, block.attention.output
    weights = attention_weights(attention, inputs, real)[:, queries]  # [H, T', T]
    heads, length = weights.shape[0], inputs.shape[0]
    values = state.matmul(attention.value.weight)
    bias = projection.dense.bias
    if value_bias_in_tokens:  # token j's value bias belongs to source j
        values = values + Decomposed.own(attention.value.bias.expand(length, -1))
    else:
        bias = attention.value.bias @ projection.dense.weight.T + bias
    parts = values.parts.view(length, values.parts.shape[1], heads, -1)  # [T(j), K, H, d]
    rest = values.rest.view(length, heads, -1)
    mixed = values._with(
        torch.einsum("hij,jkhd->ikhd", weights, parts).flatten(2),
        torch.einsum("hij,jhd->ihd", weights, rest).flatten(1),
    ).matmul(projection.dense.weight)
    mixed = mixed + state.rows(queries)
    return mixed.add_bias(bias, in_place=True).layer_norm(projection.LayerNorm)


def own_attention_sublayer(
    block: nn.Module, inputs: Tensor, real: Tensor | None = None
) -> Decomposed:
    """:func:`attention_sublayer` for a state where each token is only itself.

    Part ``k`` of token ``i`` is ``sum_h a^h_ik (x_k W_v^h + b_v^h) W_o^h`` (+ ``x_i``
    when ``i == k``): ``O(T^2 D)`` instead of the general ``O(T^3 D)``. The value bias
    stays in each token's part, as Kobayashi et al.'s, GlobEnc's and ALTI's code keep
    it; the output projection's bias and the LayerNorm's shift are in ``rest``.
    """
    attention, projection = block.attention.self, block.attention.output
    weights = attention_weights(attention, inputs, real)  # [H, T, T]
    heads, length = weights.shape[0], inputs.shape[0]
    values = attention.value(inputs).view(length, heads, -1)  # bias included
    w_out = projection.dense.weight.T.view(heads, values.shape[-1], -1)  # [H, d, D]
    transformed = torch.einsum("khd,hdD->hkD", values, w_out)  # [H, T, D]
    parts = torch.einsum("hik,hkD->ikD", weights, transformed)
    parts.diagonal(dim1=0, dim2=1).add_(inputs.T)  # the residual: token i's own part
    rest = projection.dense.bias.expand(length, -1)
    return Decomposed(parts, rest).layer_norm(projection.LayerNorm)


def feed_forward(block: nn.Module, state: Decomposed) -> Decomposed:
    """The block's feed-forward sub-layer, residual and LayerNorm, decomposed.

    The activation goes through its zero-origin slope at the real pre-activation
    (DecompX's ``GeLU_ZO``).
    """
    hidden = state.linear(block.intermediate.dense).activation(
        block.intermediate.intermediate_act_fn
    )
    return (hidden.linear(block.output.dense) + state).layer_norm(block.output.LayerNorm)


def feed_forward_input(block: nn.Module, hidden: Tensor) -> Tensor:
    """What the block's second LayerNorm sees: feed-forward output plus residual."""
    return block.output.dense(block.intermediate(hidden)) + hidden


def block_inputs(model: ExplainableModel, forward: ForwardResult) -> list[Tensor]:
    """Each BERT-layout block's input ``[B, T, D]``, caught in one clean pass."""
    if model.blocks is None or not model.family.bert_layout:
        raise UnsupportedModelError(
            f"GlobEnc, ALTI and DecompX decompose BERT-layout encoders (BERT, RoBERTa, "
            f"XLM-R, ELECTRA); {type(model.model).__name__} is not one"
        )
    with caught_block_calls(model.blocks) as calls, torch.no_grad():
        model.run_backbone(**model.backbone_inputs(forward.batch))
    return [call["args"][0] for call in calls]


#: one block's token-to-token map of one text from its real input ``[t, D]``: ``[t, t]``
BlockMap = Callable[[nn.Module, Tensor], Tensor]


@torch.no_grad()
def block_maps(model: ExplainableModel, forward: ForwardResult, block_map: BlockMap) -> Tensor:
    """``block_map`` of every block for every text: ``[B, L, T, T]``, zero at padding.

    Each text is decomposed over its real tokens only, so it gets the same map alone or
    in a padded batch.
    """
    real = forward.batch.attention_mask.bool()
    inputs = block_inputs(model, forward)
    rows, length = real.shape
    maps = inputs[0].new_zeros(rows, len(inputs), length, length)
    for row in range(rows):
        keep = real[row].nonzero().squeeze(-1)
        grid = (keep.unsqueeze(-1), keep.unsqueeze(0))
        for layer, (hidden, block) in enumerate(zip(inputs, model.blocks, strict=True)):
            maps[row, layer][grid] = block_map(block, hidden[row, keep])
    return maps
