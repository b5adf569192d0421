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
from .base import register_method
from .mixing import MixingMethod, normalise_rows
from .value_zeroing import caught_block_calls


@dataclass
class Decomposition:
    """One text's attention sub-layer output, split per source token."""

    parts: Tensor  # [T, T, D]: y_ij
    rest: Tensor  # [T, D]: bias, LayerNorm shift and bias
    output: Tensor  # [T, D]: y_i, what the block's attention sub-layer returned


def decompose_block(block: nn.Module, inputs: Tensor, real: Tensor) -> Decomposition:
    """Split the attention sub-layer of one BERT-layout block for one text ``[T, D]``."""
    attention, projection = block.attention.self, block.attention.output
    heads = attention.num_attention_heads
    width = inputs.shape[-1] // heads
    length = inputs.shape[0]

    def split(linear: nn.Linear) -> Tensor:  # [H, T, d]
        return linear(inputs).view(length, heads, width).transpose(0, 1)

    scores = split(attention.query) @ split(attention.key).transpose(1, 2) / width**0.5
    weights = scores.masked_fill(~real.view(1, 1, -1), float("-inf")).softmax(-1)  # [H, T, T]
    values = (inputs @ attention.value.weight.T).view(length, heads, width)  # no bias
    w_out = projection.dense.weight.T.view(heads, width, -1)  # [H, d, D]
    transformed = torch.einsum("jhd,hdD->hjD", values, w_out)  # [H, T, D]
    parts = torch.einsum("hij,hjD->ijD", weights, transformed)  # z_ij without residual
    parts = parts + torch.diag_embed(inputs.T).permute(1, 2, 0)  # + x_i on the diagonal
    bias = attention.value.bias @ projection.dense.weight.T + projection.dense.bias  # sum_j a=1
    total = parts.sum(1) + bias
    norm = projection.LayerNorm
    std = (total.var(-1, unbiased=False, keepdim=True) + norm.eps).sqrt()  # [T, 1]
    centred = parts - parts.mean(-1, keepdim=True)
    scaled = norm.weight * centred / std.unsqueeze(1)
    rest = norm.weight * (bias - bias.mean()) / std + norm.bias
    output = norm(total)
    return Decomposition(scaled, rest, output)


def block_decompositions(model: ExplainableModel, forward: ForwardResult):
    """Per block, per text: :class:`Decomposition` (padding dropped)."""
    if model.blocks is None or not model.family.bert_layout:
        raise UnsupportedModelError(
            f"GlobEnc, ALTI and DecompX decompose BERT-layout encoders (BERT, RoBERTa, "
            f"XLM-R, ELECTRA); {type(model.model).__name__} is not one"
        )
    batch = forward.batch
    with caught_block_calls(model.blocks) as calls, torch.no_grad():
        model.run_backbone(**model.backbone_inputs(batch))
    real = batch.attention_mask.bool()
    for call, block in zip(calls, model.blocks, strict=True):
        hidden = call["args"][0]
        with torch.no_grad():
            yield [decompose_block(block, hidden[row], real[row]) for row in range(len(batch))]


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
