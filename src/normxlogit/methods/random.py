"""The random baseline: seeded uniform scores, the floor every method must beat.

``equal=True`` gives every token the same score instead: the NormXLogit paper's random
baseline for evidence alignment ("tokens are attributed equal scores", section 5.1), which
ties every token, so its average precision is the share of evidence tokens.
"""

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
    #: every real token scores 1 (the NormXLogit paper's evidence baseline) instead of a draw
    equal: bool = False

    def attribute(self, model, forward, targets, layers):
        batch = forward.batch
        scores = torch.zeros(*batch.input_ids.shape, dtype=torch.float32)
        for row in range(len(batch)):
            real = batch.real_positions(row).cpu()
            scores[row, real] = 1.0 if self.equal else self.draw(batch.input_ids[row, real])
        per_layer = scores.to(batch.input_ids.device)[:, None].expand(-1, len(layers.indices), -1)
        return broadcast_targets(per_layer, targets)

    def draw(self, ids: torch.Tensor) -> torch.Tensor:
        """Uniform scores for one text's real tokens, seeded by ``seed`` and the ids (the
        same text draws the same scores in any batch)."""
        key = ids.cpu().numpy().astype("int64").tobytes()
        generator = torch.Generator().manual_seed(zlib.crc32(key, self.seed & 0xFFFFFFFF))
        return torch.rand(len(ids), generator=generator)
