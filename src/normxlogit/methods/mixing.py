"""Context-mixing methods: per-layer token-to-token maps, read from the reading position.

A mixing method computes, for every layer, a map ``[B, T, T]`` whose row ``i`` says how
much token ``i``'s output draws on each token ``j`` (rows sum to 1, except where the
published method multiplies raw maps, as GlobEnc does). Scores are the reading
position's row of one layer's map, or of the maps multiplied up to that layer (rollout).
Layer 0 is the identity: before any mixing each token is only itself. Padding rows and
columns are zero, so a text scores the same alone or in a padded batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from ..adapter import ExplainableModel, ForwardResult
from ..errors import InvalidInputError
from ..targets import Targets
from .base import AttributionMethod, Layers, broadcast_targets, rows_at


def layer_maps(maps: Tensor, layers: Layers, rollout: bool, mean: bool = False) -> Tensor:
    """Maps ``[B, L, T, T]`` to the chosen layers' maps ``[B, len(layers), T, T]``: layer 0
    is the identity, layer ``l`` block ``l``'s own map, the product up to it (rollout), or
    the mean of blocks 1..l's own maps (``mean``: Inseq's default for per-layer scores)."""
    identity = torch.eye(maps.shape[-1], dtype=maps.dtype, device=maps.device)
    per_layer = [identity.expand_as(maps[:, 0])]
    if rollout:
        for layer in range(maps.shape[1]):
            per_layer.append(maps[:, layer] @ per_layer[-1])
    else:
        if mean:
            blocks = torch.arange(1, maps.shape[1] + 1, dtype=maps.dtype, device=maps.device)
            maps = maps.cumsum(dim=1) / blocks[None, :, None, None]
        per_layer.extend(maps.unbind(dim=1))
    return torch.stack([per_layer[index] for index in layers.indices], dim=1)


def reading_scores(
    maps: Tensor,
    forward: ForwardResult,
    layers: Layers,
    targets: Targets,
    rollout: bool,
    mean: bool = False,
) -> Tensor:
    """Maps ``[B, L, T, T]`` to scores ``[B, len(layers), T, K]`` at the reading rows."""
    rows = rows_at(layer_maps(maps, layers, rollout, mean), forward.batch.reading_positions)
    return broadcast_targets(rows, targets)


def normalise_rows(maps: Tensor, real: Tensor) -> Tensor:
    """Zero padding rows and columns, then make each row sum to 1."""
    maps = maps * real.unsqueeze(-1) * real.unsqueeze(-2)
    return maps / maps.sum(-1, keepdim=True).clamp_min(1e-12)


@dataclass
class MixingMethod(AttributionMethod):
    """Base of methods defined by per-layer mixing maps (rolled out by default)."""

    per_label: ClassVar[bool] = False
    signed: ClassVar[bool] = False
    supports_layers: ClassVar[bool] = True
    single_forward: ClassVar[bool] = False
    reads_rows: ClassVar[bool] = True

    #: True: maps multiplied up to each layer (rollout); False: each layer's own map
    rollout: bool = True
    #: with rollout off, layer l scores the mean of blocks 1..l's own maps (the last
    #: layer: the mean over all blocks, what Inseq reports for per-layer scores)
    layer_mean: bool = False

    def __post_init__(self) -> None:
        if self.layer_mean and self.rollout:
            raise InvalidInputError(
                f"{self.name}: layer_mean averages each block's own map; set rollout=false "
                "with it (rollout multiplies the maps instead)"
            )

    def mixing_maps(self, model: ExplainableModel, forward: ForwardResult) -> Tensor:
        """Maps ``[B, L, T, T]``, zero at padding (rows normalised unless stated)."""
        raise NotImplementedError

    def attribute(self, model, forward, targets, layers):
        maps = self.mixing_maps(model, forward)
        return reading_scores(maps, forward, layers, targets, self.rollout, self.layer_mean)

    def token_maps(self, model, forward, layers):
        return layer_maps(self.mixing_maps(model, forward), layers, self.rollout, self.layer_mean)
