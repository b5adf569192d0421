"""ALTI (Ferrando et al., 2022): how much closer to a token's output each source's part is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import Tensor, nn

from .base import register_method
from .decomposition import block_maps, own_attention_sublayer
from .mixing import MixingMethod, normalise_rows

#: the ``eps`` that ``torch.nn.functional.pairwise_distance`` adds to each difference
PAIRWISE_EPS = 1e-6


def alti_map(block: nn.Module, inputs: Tensor) -> Tensor:
    """``max(0, ||y_i||_1 - ||y_ij - y_i + eps||_1)`` over the attention sub-layer: ``[T, T]``.

    ``y_ij`` is token ``j``'s part after attention (value bias inside), residual and LN1;
    ``y_i`` the whole output, biases and shift included. The ``eps`` reproduces the
    reference's ``F.pairwise_distance`` (shifts scores by about 1e-4 relative).
    """
    attended = own_attention_sublayer(block, inputs)
    output = attended.total.unsqueeze(1)  # [T, 1, D]
    distance = (attended.parts - output).add_(PAIRWISE_EPS).abs_().sum(-1)
    return (output.abs().sum(-1) - distance).clamp_min(0)


@register_method
@dataclass
class Alti(MixingMethod):
    """ALTI: L1 proximity of each token's part to the sub-layer output, rows normalised.

    Equal to mt-upc/transformer-contributions @ 4f89039 (``min_sum`` normalisation,
    ``compute_joint_attention`` rollout).
    """

    name: ClassVar[str] = "alti"
    description: ClassVar[str] = "ALTI (Ferrando et al. 2022): L1 proximity of token parts"

    def mixing_maps(self, model, forward):
        maps = block_maps(model, forward, alti_map)
        return normalise_rows(maps, forward.batch.attention_mask.bool().unsqueeze(1))
