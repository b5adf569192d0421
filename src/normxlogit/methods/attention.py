"""Attention baselines: raw attention from the reading position, and attention rollout.

transformers 5 returns attention weights only from the eager attention path, so these
methods switch the model to eager attention for their own forward pass and back after.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from ..adapter import ExplainableModel, ForwardResult
from .base import AttributionMethod, register_method


@contextmanager
def eager_attention(model: ExplainableModel) -> Iterator[None]:
    """Run the model with eager attention (the only path that returns weights)."""
    config = model.model.config
    previous = getattr(config, "_attn_implementation", None)
    if previous in (None, "eager"):
        yield
        return
    model.model.set_attn_implementation("eager")
    try:
        yield
    finally:
        model.model.set_attn_implementation(previous)


def attention_maps(model: ExplainableModel, forward: ForwardResult) -> Tensor:
    """Head-averaged attention ``[B, L, T, T]`` of every layer (row: query, column: key)."""
    with eager_attention(model), torch.no_grad():
        outputs = model.run_backbone(**model.backbone_inputs(forward.batch), output_attentions=True)
    if not outputs.attentions or outputs.attentions[0] is None:
        raise NotImplementedError(f"{type(model.model).__name__} returns no attention weights")
    return torch.stack([layer.mean(dim=1) for layer in outputs.attentions], dim=1)


def reading_rows(maps: Tensor, forward: ForwardResult) -> Tensor:
    """Rows of the reading positions: ``[B, L, T, T]`` -> ``[B, L, T]``."""
    index = forward.batch.reading_positions.view(-1, 1, 1, 1).expand(
        -1, maps.shape[1], 1, maps.shape[-1]
    )
    return maps.gather(2, index).squeeze(2)


def with_identity_layer(rows: Tensor, forward: ForwardResult) -> Tensor:
    """Prepend layer 0 (the embeddings): each token attends only to itself."""
    start = torch.nn.functional.one_hot(forward.batch.reading_positions, rows.shape[-1])
    return torch.cat([start.to(rows.dtype).unsqueeze(1), rows], dim=1)


@dataclass
class AttentionMethod(AttributionMethod):
    """Scores read off attention maps: one extra eager forward pass, label-independent."""

    per_label: ClassVar[bool] = False
    signed: ClassVar[bool] = False
    supports_layers: ClassVar[bool] = True
    single_forward: ClassVar[bool] = False

    def layer_scores(self, maps: Tensor, forward: ForwardResult) -> Tensor:
        """``[B, L, T, T]`` head-averaged maps to scores ``[B, L + 1, T]``."""
        raise NotImplementedError

    def attribute(self, model, forward, targets, layers):
        scores = self.layer_scores(attention_maps(model, forward), forward)
        picked = scores[:, list(layers.indices)]
        return picked.unsqueeze(-1).expand(-1, -1, -1, targets.columns.shape[1])


@register_method
@dataclass
class Attention(AttentionMethod):
    """Head-averaged attention weights from the reading position ([CLS] or last token)."""

    name: ClassVar[str] = "attention"
    description: ClassVar[str] = "attention from the reading position, mean over heads"

    def layer_scores(self, maps, forward):
        return with_identity_layer(reading_rows(maps, forward), forward)


@register_method
@dataclass
class AttentionRollout(AttentionMethod):
    """Attention rollout (Abnar & Zuidema, 2020): residual-aware products of attention."""

    name: ClassVar[str] = "attention_rollout"
    description: ClassVar[str] = "attention rollout: (A + I) / 2, multiplied over layers"

    def layer_scores(self, maps, forward):
        identity = torch.eye(maps.shape[-1], dtype=maps.dtype, device=maps.device)
        mixed = 0.5 * maps + 0.5 * identity
        mixed = mixed / mixed.sum(dim=-1, keepdim=True)
        rolled = [identity.expand_as(mixed[:, 0])]
        for layer in range(mixed.shape[1]):
            rolled.append(mixed[:, layer] @ rolled[-1])
        return reading_rows(torch.stack(rolled, dim=1), forward)  # [B, L+1, T]
