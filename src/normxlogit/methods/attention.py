"""Attention baselines: raw attention from the reading position, and attention rollout.

transformers 5 returns attention weights only from the eager attention path. These methods
say so with ``reads_attention``: explain's own forward pass then runs eager attention and
returns the weights, so they cost that one pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from ..adapter import ExplainableModel, ForwardResult
from .base import AttributionMethod, register_method
from .mixing import MixingMethod, layer_maps, reading_scores


def attention_maps(model: ExplainableModel, forward: ForwardResult) -> Tensor:
    """Head-averaged attention ``[B, L, T, T]`` of every layer (row: query, column: key):
    from ``forward`` when its pass returned them, else from a pass of its own."""
    maps = forward.attentions
    if maps is None:  # a pass that did not keep them: one more, that does
        maps = model.forward(forward.batch, attentions=True).attentions
    if maps is None:
        raise NotImplementedError(f"{type(model.model).__name__} returns no attention weights")
    return maps


@register_method
@dataclass
class Attention(AttributionMethod):
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
    reads_attention: ClassVar[bool] = True

    #: layer l scores the mean of blocks 1..l's maps instead of block l's own
    layer_mean: bool = False

    def attribute(self, model, forward, targets, layers):
        maps = attention_maps(model, forward)
        return reading_scores(maps, forward, layers, targets, rollout=False, mean=self.layer_mean)

    def token_maps(self, model, forward, layers):
        maps = attention_maps(model, forward)
        return layer_maps(maps, layers, rollout=False, mean=self.layer_mean)


@register_method
@dataclass
class AttentionRollout(MixingMethod):
    """Attention rollout (Abnar & Zuidema, 2020): residual-aware products of attention."""

    name: ClassVar[str] = "attention_rollout"
    description: ClassVar[str] = "attention rollout: (A + I) / 2, multiplied over layers"
    single_forward: ClassVar[bool] = True  # the weights come with explain's own pass
    reads_attention: ClassVar[bool] = True

    def mixing_maps(self, model, forward):
        maps = attention_maps(model, forward)
        identity = torch.eye(maps.shape[-1], dtype=maps.dtype, device=maps.device)
        mixed = 0.5 * maps + 0.5 * identity
        return mixed / mixed.sum(dim=-1, keepdim=True)
