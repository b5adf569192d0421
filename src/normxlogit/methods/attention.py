"""Attention baselines: raw attention from the reading position, and attention rollout.

transformers 5 returns attention weights only from the eager attention path. These methods
say so with ``reads_attention``: explain's own forward pass then runs eager attention and
hands each block's head-averaged weights to the method's :class:`LayerMapReader` as the
block runs, so they cost that one pass, and memory holds one block's weights and the
layers asked for, never every layer's ``[H, T, T]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from ..adapter import ExplainableModel, ForwardResult
from .base import AttributionMethod, Layers, broadcast_targets, register_method, rows_at
from .mixing import LayerMapReader, MixingMethod


def read_attention(
    model: ExplainableModel, forward: ForwardResult, reader: LayerMapReader
) -> Tensor:
    """The maps ``reader`` keeps ``[B, len(layers), T, T]``: from ``forward`` when its pass
    fed a reader asking the same, else from a pass of its own that feeds ``reader``."""
    fed = forward.attention_sink
    if isinstance(fed, LayerMapReader) and fed.spec == reader.spec:
        return fed.result()
    if forward.attentions is not None:  # every layer's maps, from a pass that kept them all
        for block_map in forward.attentions.unbind(dim=1):
            reader(block_map)
        return reader.result()
    model.forward(forward.batch, attentions=reader)
    if not reader.fed:
        raise NotImplementedError(f"{type(model.model).__name__} returns no attention weights")
    return reader.result()


class _ReadsAttention(AttributionMethod):
    """A method scored from the reading row of a :class:`LayerMapReader`'s maps."""

    reads_attention: ClassVar[bool] = True

    def attribute(self, model, forward, targets, layers):
        maps = read_attention(model, forward, self.attention_reader(layers))
        return broadcast_targets(rows_at(maps, forward.batch.reading_positions), targets)

    def token_maps(self, model, forward, layers):
        return read_attention(model, forward, self.attention_reader(layers))


@register_method
@dataclass
class Attention(_ReadsAttention):
    """Head-averaged attention weights from the reading position ([CLS] or last token).

    By default a layer scores its own attention map (the last layer unless ``layers`` says
    otherwise). ``layer_mean`` scores the mean of blocks 1..l's maps instead: for the last
    layer the mean over layers and heads, Inseq's default aggregation of its ``attention``
    method, which the pi-Soft paper ran (the ``pi-soft`` preset).
    """

    name: ClassVar[str] = "attention"
    description: ClassVar[str] = "attention from the reading position, mean over heads"
    per_label: ClassVar[bool] = False
    signed: ClassVar[bool] = False
    supports_layers: ClassVar[bool] = True
    single_forward: ClassVar[bool] = True  # the weights come with explain's own pass
    reads_rows: ClassVar[bool] = True

    #: layer l scores the mean of blocks 1..l's maps instead of block l's own
    layer_mean: bool = False

    def attention_reader(self, layers: Layers) -> LayerMapReader:
        return LayerMapReader(layers.indices, rollout=False, mean=self.layer_mean)


class _RolloutReader(LayerMapReader):
    """Rolls out ``(A + I) / 2`` with rows renormalised (Abnar & Zuidema's residual)."""

    def __call__(self, block_map: Tensor) -> None:
        identity = torch.eye(block_map.shape[-1], dtype=block_map.dtype, device=block_map.device)
        mixed = 0.5 * block_map + 0.5 * identity
        super().__call__(mixed / mixed.sum(dim=-1, keepdim=True))


@register_method
@dataclass
class AttentionRollout(_ReadsAttention, MixingMethod):
    """Attention rollout (Abnar & Zuidema, 2020): residual-aware products of attention."""

    name: ClassVar[str] = "attention_rollout"
    description: ClassVar[str] = "attention rollout: (A + I) / 2, multiplied over layers"
    single_forward: ClassVar[bool] = True  # the weights come with explain's own pass

    def attention_reader(self, layers: Layers) -> LayerMapReader:
        return _RolloutReader(layers.indices, self.rollout, self.layer_mean)
