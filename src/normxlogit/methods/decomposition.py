"""Vector-based context mixing for BERT-layout encoders: GlobEnc and ALTI.

Each block's attention sub-layer (self-attention, output projection, residual, first
LayerNorm) is linear in its input vectors once the attention weights and the LayerNorm's
scale are fixed, so its output ``y_i`` splits exactly into one vector per input token:

    y_i = sum_j y_ij + (bias terms),
    y_ij = gamma * (z_ij - mean(z_ij)) / std_i,
    z_ij = sum_h a^h_ij (x_j W_v^h) W_o^h + [i == j] x_i.

GlobEnc (Modarressi et al., 2022) scores ``||y_ij||_2``; ALTI (Ferrando et al., 2022)
scores ``max(0, ||y_i||_1 - ||y_i - y_ij||_1)``; both normalise rows and roll out over
layers. The block inputs are caught during one clean forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor, nn

from ..adapter import ExplainableModel, ForwardResult
from ..errors import UnsupportedModelError
from ..families.heads import module_at
from .base import AttributionMethod, register_method
from .blocks import caught_block_calls
from .mixing import MixingMethod, normalise_rows


@dataclass
class Decomposed:
    """Vectors ``[T, D]`` split over ``K`` sources: ``parts`` ``[T, K, D]`` plus ``rest``."""

    parts: Tensor
    rest: Tensor  # biases and LayerNorm shifts: owned by no token

    @property
    def total(self) -> Tensor:
        return self.parts.sum(1) + self.rest

    @classmethod
    def own(cls, vectors: Tensor) -> Decomposed:
        """Each token's vector is entirely its own."""
        parts = torch.diag_embed(vectors.T).permute(1, 2, 0)  # [i, i, :] = x_i
        return cls(parts, torch.zeros_like(vectors))

    def linear(self, layer: nn.Linear) -> Decomposed:
        return Decomposed(self.parts @ layer.weight.T, self.rest @ layer.weight.T + layer.bias)

    def activation(self, function) -> Decomposed:
        """``f`` applied through the ratio ``f(a) / a`` of the total: exact on the total."""
        total = self.total
        safe = torch.where(total.abs() < 1e-6, torch.full_like(total, 1e-6), total)
        ratio = function(safe) / safe
        return Decomposed(self.parts * ratio.unsqueeze(1), self.rest * ratio)

    def layer_norm(self, norm: nn.LayerNorm) -> Decomposed:
        """LayerNorm with the total's scale shared by all parts (exact on the total)."""
        total = self.total
        std = (total.var(-1, unbiased=False, keepdim=True) + norm.eps).sqrt()
        parts = norm.weight * (self.parts - self.parts.mean(-1, keepdim=True)) / std.unsqueeze(1)
        rest = norm.weight * (self.rest - self.rest.mean(-1, keepdim=True)) / std + norm.bias
        return Decomposed(parts, rest)

    def __add__(self, other: Decomposed) -> Decomposed:
        return Decomposed(self.parts + other.parts, self.rest + other.rest)


def _attention_weights(attention: nn.Module, inputs: Tensor, real: Tensor) -> Tensor:
    """Head attention weights ``[H, T, T]`` of one text, padding keys masked out."""
    heads = attention.num_attention_heads
    length, width = inputs.shape[0], inputs.shape[-1] // heads

    def split(linear: nn.Linear) -> Tensor:  # [H, T, d]
        return linear(inputs).view(length, heads, width).transpose(0, 1)

    scores = split(attention.query) @ split(attention.key).transpose(1, 2) / width**0.5
    return scores.masked_fill(~real.view(1, 1, -1), float("-inf")).softmax(-1)


def attention_sublayer(block: nn.Module, inputs: Tensor, state: Decomposed, real: Tensor):
    """Self-attention, output projection, residual and LayerNorm of one BERT-layout block.

    ``inputs`` ``[T, D]`` are the block's real input (they set the attention weights);
    ``state`` is the same vectors, decomposed over ``K`` sources.
    """
    attention, projection = block.attention.self, block.attention.output
    weights = _attention_weights(attention, inputs, real)  # [H, T, T]
    heads, length = weights.shape[0], inputs.shape[0]
    values = state.linear(attention.value)
    parts = values.parts.view(length, values.parts.shape[1], heads, -1)  # [T(j), K, H, d]
    rest = values.rest.view(length, heads, -1)
    mixed_parts = torch.einsum("hij,jkhd->ikhd", weights, parts).flatten(2)
    mixed_rest = torch.einsum("hij,jhd->ihd", weights, rest).flatten(1)
    mixed = Decomposed(mixed_parts, mixed_rest).linear(projection.dense)
    return (mixed + state).layer_norm(projection.LayerNorm)


def own_attention_sublayer(block: nn.Module, inputs: Tensor, real: Tensor) -> Decomposed:
    """:func:`attention_sublayer` for a state where each token is only itself.

    Then part ``k`` of token ``i`` is ``sum_h a^h_ik (x_k W_v^h) W_o^h`` (+ ``x_i`` when
    ``i == k``): ``O(T^2 D)`` instead of the general ``O(T^3 D)``.
    """
    attention, projection = block.attention.self, block.attention.output
    weights = _attention_weights(attention, inputs, real)  # [H, T, T]
    heads, length = weights.shape[0], inputs.shape[0]
    values = (inputs @ attention.value.weight.T).view(length, heads, -1)  # no bias
    w_out = projection.dense.weight.T.view(heads, values.shape[-1], -1)  # [H, d, D]
    transformed = torch.einsum("khd,hdD->hkD", values, w_out)  # [H, T, D]
    parts = torch.einsum("hik,hkD->ikD", weights, transformed)
    parts = parts + Decomposed.own(inputs).parts  # the residual
    bias = attention.value.bias @ projection.dense.weight.T + projection.dense.bias
    rest = bias.expand(length, -1)  # attention weights sum to 1 over k
    return Decomposed(parts, rest).layer_norm(projection.LayerNorm)


def feed_forward(block: nn.Module, state: Decomposed) -> Decomposed:
    """The block's feed-forward sub-layer, residual and LayerNorm, decomposed."""
    hidden = state.linear(block.intermediate.dense).activation(
        block.intermediate.intermediate_act_fn
    )
    return (hidden.linear(block.output.dense) + state).layer_norm(block.output.LayerNorm)


@dataclass
class Decomposition:
    """One text's attention sub-layer output, split per source token (GlobEnc, ALTI)."""

    parts: Tensor  # [T, T, D]: y_ij
    rest: Tensor  # [T, D]: biases, LayerNorm shift
    output: Tensor  # [T, D]: y_i


def decompose_block(block: nn.Module, inputs: Tensor, real: Tensor) -> Decomposition:
    """Split the attention sub-layer of one BERT-layout block for one text ``[T, D]``."""
    state = own_attention_sublayer(block, inputs, real)
    return Decomposition(state.parts, state.rest, state.total)


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


def block_decompositions(model: ExplainableModel, forward: ForwardResult):
    """Per block, per text: :class:`Decomposition` of its attention sub-layer."""
    real = forward.batch.attention_mask.bool()
    for hidden, block in zip(block_inputs(model, forward), model.blocks, strict=True):
        with torch.no_grad():
            yield [decompose_block(block, hidden[row], real[row]) for row in range(len(real))]


def _maps(model, forward, score) -> Tensor:
    real = forward.batch.attention_mask.bool()
    layers = [
        torch.stack([score(part) for part in per_text])
        for per_text in block_decompositions(model, forward)
    ]
    return normalise_rows(torch.stack(layers, dim=1), real.unsqueeze(1))


@register_method
@dataclass
class GlobEnc(MixingMethod):
    """GlobEnc: norms of the per-token parts after residual and LayerNorm, rolled out."""

    name: ClassVar[str] = "globenc"
    description: ClassVar[str] = "GlobEnc (Modarressi et al. 2022): ||attention+res+LN part||"

    def mixing_maps(self, model, forward):
        return _maps(model, forward, lambda d: d.parts.norm(dim=-1))


@register_method
@dataclass
class Alti(MixingMethod):
    """ALTI: how much closer to the output each token's part is (L1), rolled out."""

    name: ClassVar[str] = "alti"
    description: ClassVar[str] = "ALTI (Ferrando et al. 2022): L1 proximity of token parts"

    def mixing_maps(self, model, forward):
        def proximity(d: Decomposition) -> Tensor:
            output = d.output.unsqueeze(1)  # [T, 1, D]
            closer = output.abs().sum(-1) - (output - d.parts).abs().sum(-1)
            return closer.clamp_min(0)

        return _maps(model, forward, proximity)


@register_method
@dataclass
class DecompX(AttributionMethod):
    """DecompX (Modarressi et al., 2023): every token's share of the output logits.

    Each token's vector is followed through every block (attention, residual and
    LayerNorms exactly; the feed-forward activation through the ratio ``f(a)/a`` of the
    real pre-activation) and through the classification head, so the per-token logits
    plus the biases' share add up to the model's logits exactly.
    """

    name: ClassVar[str] = "decompx"
    description: ClassVar[str] = "DecompX: per-token decomposition through blocks and head"

    def attribute(self, model, forward, targets, layers):
        head = model.family.head_mlp
        if head is None or model.task.over_vocabulary:
            raise UnsupportedModelError(
                "decompx decomposes a classification or regression head of a BERT-layout "
                f"encoder; {type(model.model).__name__} has none it knows"
            )
        inputs = block_inputs(model, forward)
        batch = forward.batch
        columns = targets.columns.to(batch.input_ids.device)
        scores = torch.zeros(*batch.input_ids.shape, columns.shape[1], device=columns.device)
        for row in range(len(batch)):
            logits = decomposed_logits(model, inputs, forward, row)
            scores[row] = logits.parts[0][:, columns[row]]  # [T, K]
        return scores.unsqueeze(1)


@torch.no_grad()
def decomposed_logits(
    model: ExplainableModel, inputs: list[Tensor], forward: ForwardResult, row: int
) -> Decomposed:
    """One text's logits split per token: parts ``[1, T, C]``, biases in ``rest``."""
    real = forward.batch.attention_mask[row].bool()
    state = Decomposed.own(inputs[0][row])
    for hidden, block in zip(inputs, model.blocks, strict=True):
        state = feed_forward(block, attention_sublayer(block, hidden[row], state, real))
    return head_contributions(model, state, int(forward.batch.reading_positions[row]))


def head_contributions(model: ExplainableModel, state: Decomposed, reading: int) -> Decomposed:
    """The classification head on the reading token's decomposed state: parts ``[1, T, C]``."""
    first, activation, second = (
        torch.tanh if path == "tanh" else module_at(model.model, path)
        for path in model.family.head_mlp
    )
    token = Decomposed(state.parts[reading : reading + 1], state.rest[reading : reading + 1])
    return token.linear(first).activation(activation).linear(second)
