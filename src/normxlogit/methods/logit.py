"""The methods of the NormXLogit paper (section 3): l2 norm, LogAt and NormXLogit.

All three reuse the single forward pass that ``explain`` runs: no gradients, no extra
passes. The head-on-top is applied to every token's state in one batched call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from ..model.adapter import ExplainableModel, ForwardResult
from ..model.targets import Targets
from ..model.tasks import TaskKind
from .base import (
    AttributionMethod,
    Layers,
    broadcast_targets,
    check_choice,
    register_method,
    rows_at,
)

EMBEDDINGS = ("output", "word")


def embedding_norms(model: ExplainableModel, forward: ForwardResult, source: str) -> Tensor:
    """``||x_i^0||_2`` ``[B, T]``: the embedding layer's output (default) or the word row."""
    check_choice("embedding", source, EMBEDDINGS)
    if source == "word":
        rows = model.model.get_input_embeddings()(forward.batch.input_ids)
        return rows.norm(dim=-1)
    return forward.embeddings.norm(dim=-1)


def layer_norms(forward: ForwardResult, layers: Layers) -> Tensor:
    """``||x_i^l||_2`` ``[B, len(layers), T]`` of the raw residual stream at each layer."""
    return torch.stack([forward.state(i).norm(dim=-1) for i in layers.indices], dim=1)


def logit_attribution(
    model: ExplainableModel, forward: ForwardResult, targets: Targets, layers: Layers
) -> Tensor:
    """LogAt ``[B, len(layers), T, K]``: the head-on-top applied to each token (eq. 2-3);
    contrastive targets give the difference of the target's and the contrast's LogAt."""
    states = model.layer_states(forward, layers.indices)
    if targets.contrastive:  # both columns from one application of the head
        both = model.head_logits(states, torch.cat([targets.columns, targets.contrast], 1))
        width = targets.columns.shape[1]
        return both[..., :width] - both[..., width:]
    logits = model.head_logits(states, targets.columns)
    if model.task.kind is TaskKind.REGRESSION:
        at_reading = rows_at(logits, forward.batch.reading_positions)  # HoT([CLS]) per layer
        return (logits - at_reading.unsqueeze(2)).abs()
    return logits


@register_method
@dataclass
class L2Norm(AttributionMethod):
    """``||x_i||_2`` of the input embedding (or of a layer's states with ``layer=``)."""

    name: ClassVar[str] = "l2_norm"
    description: ClassVar[str] = "l2 norm of each token's input embedding (paper sec. 3.2)"
    per_label: ClassVar[bool] = False
    signed: ClassVar[bool] = False
    supports_layers: ClassVar[bool] = True
    prefix_invariant: ClassVar[bool] = True

    embedding: str = "output"

    def attribute(self, model, forward, targets, layers) -> Tensor:
        if layers.is_final_only and layers.indices[0] == model.num_layers:
            norms = embedding_norms(model, forward, self.embedding).unsqueeze(1)
        else:
            norms = layer_norms(forward, layers)
        return broadcast_targets(norms, targets)


@register_method
@dataclass
class LogAt(AttributionMethod):
    """The head-on-top's logit for the target at each token's final state."""

    name: ClassVar[str] = "logat"
    description: ClassVar[str] = "logit of the target from the head-on-top at each token (eq. 2-3)"
    supports_layers: ClassVar[bool] = True
    prefix_invariant: ClassVar[bool] = True

    def attribute(self, model, forward, targets, layers) -> Tensor:
        return logit_attribution(model, forward, targets, layers)


@register_method
@dataclass
class NormXLogit(AttributionMethod):
    """``||x_i^0||_2 x LogAt(x_i)`` (eq. 4); per layer, the norm at the same layer by default."""

    name: ClassVar[str] = "normxlogit"
    description: ClassVar[str] = "input-embedding norm x LogAt, one forward pass (eq. 4)"
    supports_layers: ClassVar[bool] = True
    prefix_invariant: ClassVar[bool] = True

    embedding: str = "output"
    #: with layer=...: "layer" multiplies by the norm at that layer (the authors'
    #: EachLayerNormXLogit); "embedding" always uses the input-embedding norm.
    norm: str = "layer"

    def final_layer_settings(self, settings):
        # at the final layer only, the score is eq. 4's, with the input-embedding norm,
        # whatever ``norm`` says: the explanation records the norm it used
        return {**settings, "norm": "embedding"} if settings.get("norm") == "layer" else settings

    def attribute(self, model, forward, targets, layers) -> Tensor:
        check_choice("norm", self.norm, ("layer", "embedding"))
        logat = logit_attribution(model, forward, targets, layers)
        if layers.is_final_layer(model.num_layers) or self.norm == "embedding":
            norms = embedding_norms(model, forward, self.embedding).unsqueeze(1)
        else:
            norms = layer_norms(forward, layers)
        return norms.unsqueeze(-1) * logat
