"""The random baseline: seeded uniform scores, the floor every method must beat."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import AttributionMethod, broadcast_targets, register_method


@register_method
@dataclass
class RandomScores(AttributionMethod):
    """Uniform random scores in [0, 1).

    Each text draws from a generator seeded by ``seed`` and its own token ids, so a text
    gets the same scores alone or inside any batch, and a different seed gives others.
    """

    name: ClassVar[str] = "random"
    description: ClassVar[str] = "seeded uniform random scores (baseline)"
    per_label: ClassVar[bool] = False
    signed: ClassVar[bool] = False
    supports_layers: ClassVar[bool] = True
    reads_token_ids_only: ClassVar[bool] = True

    seed: int = 0

    def attribute(self, model, forward, targets, layers):
        batch = forward.batch
        scores = torch.zeros(*batch.input_ids.shape, dtype=torch.float32)
        for row in range(len(batch)):
            real = batch.real_positions(row).cpu()
            ids = batch.input_ids[row, real].cpu().numpy().astype("int64").tobytes()
            generator = torch.Generator().manual_seed(zlib.crc32(ids, self.seed & 0xFFFFFFFF))
            scores[row, real] = torch.rand(len(real), generator=generator)
        per_layer = scores.to(batch.input_ids.device)[:, None].expand(-1, len(layers.indices), -1)
        return broadcast_targets(per_layer, targets)
