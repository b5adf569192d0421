"""Norm-based context mixing: GlobEnc and Kobayashi et al.'s N-ResLN.

Both score how large token ``j``'s part of token ``i``'s output is (``||y_ij||_2``, the
value bias inside each token's part, biases and LayerNorm shifts left out) and roll
the per-block maps out over layers. They differ in how far through the block they follow
the parts and in whether rows are normalised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import Tensor, nn

from .base import register_method
from .decomposition import block_maps, feed_forward_input, own_attention_sublayer
from .mixing import MixingMethod, normalise_rows


def globenc_map(block: nn.Module, inputs: Tensor) -> Tensor:
    """``||y_ij||`` after attention, residual, LN1 and LN2 (feed-forward skipped): ``[T, T]``.

    The second LayerNorm scales by the spread of what it really sees (feed-forward output
    plus residual), as GlobEnc's code does.
    """
    attended = own_attention_sublayer(block, inputs)
    seen = feed_forward_input(block, attended.total)
    return attended.layer_norm(block.output.LayerNorm, scale_of=seen).parts.norm(dim=-1)


def n_resln_map(block: nn.Module, inputs: Tensor) -> Tensor:
    """``||y_ij||`` after attention, residual and LN1: ``[T, T]``."""
    return own_attention_sublayer(block, inputs).parts.norm(dim=-1)


@register_method
@dataclass
class GlobEnc(MixingMethod):
    """GlobEnc (Modarressi et al., 2022): whole-encoder-layer norms, rolled out.

    Each block's map is ``||y_ij||_2`` of token ``j``'s part of token ``i``'s layer
    output, followed through attention, residual, the first and the second LayerNorm
    (the feed-forward block is skipped), the value bias inside each token's part. Rows
    are not normalised: the maps are multiplied as they are (mohsenfayyaz/GlobEnc
    @ a26b38b), so scores grow with depth and compare within a layer.
    """

    name: ClassVar[str] = "globenc"
    description: ClassVar[str] = "GlobEnc (Modarressi et al. 2022): ||attn+res+LN1+LN2 part||"

    def mixing_maps(self, model, forward):
        return block_maps(model, forward, globenc_map)


@register_method
@dataclass
class NResLN(MixingMethod):
    """N-ResLN (Kobayashi et al., 2021): norms after attention, residual and LN1.

    Rows are normalised to sum to 1 before rolling out (the form GlobEnc's paper
    compares against).
    """

    name: ClassVar[str] = "n_resln"
    description: ClassVar[str] = "N-ResLN (Kobayashi et al. 2021): ||attn+res+LN1 part||"

    def mixing_maps(self, model, forward):
        maps = block_maps(model, forward, n_resln_map)
        return normalise_rows(maps, forward.batch.attention_mask.bool().unsqueeze(1))
