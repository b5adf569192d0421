"""Attention baselines: raw attention from the reading position, and attention rollout.

These methods say so with ``reads_attention``: explain's own forward pass hands each
block's head-averaged weights to the method's :class:`LayerMapReader` as the block runs,
so they cost that one pass. Attention needs only the reading row, which each layer computes
beside SDPA's output; rollout multiplies whole maps, which each layer computes beside SDPA
a tile of rows at a time (:func:`normxlogit.model.routing.read_attention_maps`), so memory holds
one map, the running product and the layers asked for, never an ``[H, T, T]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from ..model.adapter import ExplainableModel, ForwardResult
from ..model.routing import rows_of
from .base import AttributionMethod, Layers, broadcast_targets, register_method, rows_at
from .mixing import LayerMapReader, MixingMethod


def read_attention(
    model: ExplainableModel, forward: ForwardResult, reader: LayerMapReader
) -> Tensor:
    """The maps ``reader`` keeps ``[B, len(layers), T, T]`` (its rows ``[B, len(layers),
    R, T]`` when it names rows): from ``forward`` when its pass fed a reader asking the
    same, else from a pass of its own that feeds ``reader``."""
    fed = forward.attention_sink
    if isinstance(fed, LayerMapReader) and fed.matches(reader):
        return fed.result()
    if forward.attentions is not None:  # every layer's maps, from a pass that kept them all
        for block_map in forward.attentions.unbind(dim=1):
            reader(block_map if reader.rows is None else rows_of(block_map, reader.rows))
        return reader.result()
    model.forward(forward.batch, attentions=reader)
    if not reader.fed:
        raise NotImplementedError(f"{type(model.model).__name__} returns no attention weights")
    return reader.result()


class _ReadsAttention(AttributionMethod):
    """A method scored from the reading row of a :class:`LayerMapReader`'s maps."""

    reads_attention: ClassVar[bool] = True

    def attention_reader(self, layers: Layers, rows: Tensor | None = None) -> LayerMapReader:
        raise NotImplementedError

    def attribute(self, model, forward, targets, layers):
        reading = forward.batch.reading_positions
        reader = self.attention_reader(layers, reading.unsqueeze(-1))
        maps = read_attention(model, forward, reader)
        if reader.rows is None:  # whole maps: the reading position's row
            return broadcast_targets(rows_at(maps, reading), targets)
        return broadcast_targets(maps[:, :, 0], targets)

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

    def attention_reader(self, layers: Layers, rows: Tensor | None = None) -> LayerMapReader:
        """Keeps the rows ``rows`` ``[B, R]`` alone when given (a reading position's scores
        need only its row: computed beside SDPA, no ``[H, T, T]`` at all)."""
        return LayerMapReader(layers.indices, rollout=False, mean=self.layer_mean, rows=rows)


class _RolloutReader(LayerMapReader):
    """Rolls out ``(A + I) / 2`` with rows renormalised (Abnar & Zuidema's residual).

    A causal model's maps are lower triangular, and so are their products: their blocks
    above the diagonal are skipped (:func:`lower_triangular_product`), a quarter of the
    multiplications of a dense product at 4k tokens."""

    #: whether every map fed so far is lower triangular (then so is their product)
    _triangular: bool = True

    def __call__(self, block_map: Tensor) -> None:
        mixed = 0.5 * block_map.float()  # a new tensor: the caller's map stays as it was
        mixed.diagonal(dim1=-2, dim2=-1).add_(0.5)
        mixed /= mixed.sum(dim=-1, keepdim=True)
        if mixed.shape[-1] >= TILE and self._triangular:
            self._triangular = not _above_diagonal(mixed)
        super().__call__(mixed)

    def product(self, block_map: Tensor, running: Tensor) -> Tensor:
        if block_map.shape[-1] >= TILE and self._triangular:
            return lower_triangular_product(block_map, running)
        return block_map @ running


#: tile width of the triangular product (below it a dense product is as fast)
TILE = 512


def _above_diagonal(maps: Tensor, tile: int = TILE) -> bool:
    """Whether ``maps`` ``[..., T, T]`` hold anything above the diagonal (read a band of
    rows at a time, without a copy of the map)."""
    size = maps.shape[-1]
    for top in range(0, size, tile):
        bottom = min(top + tile, size)
        if bool(torch.triu(maps[..., top:bottom, top:], diagonal=1).any()):
            return True
    return False


def lower_triangular_product(a: Tensor, b: Tensor, tile: int = TILE) -> Tensor:
    """``a @ b`` for lower-triangular ``[..., T, T]`` maps, tile by tile: tile (I, J) of
    the product sums only tiles J..I of the shared index, and tiles above the diagonal
    are zero."""
    size = a.shape[-1]
    out = torch.zeros_like(a)
    edges = list(range(0, size, tile))
    for i, top in enumerate(edges):
        bottom = min(top + tile, size)
        for left in edges[: i + 1]:
            right = min(left + tile, size)
            out[..., top:bottom, left:right] = (
                a[..., top:bottom, left:bottom] @ b[..., left:bottom, left:right]
            )
    return out


@register_method
@dataclass
class AttentionRollout(_ReadsAttention, MixingMethod):
    """Attention rollout (Abnar & Zuidema, 2020): residual-aware products of attention."""

    name: ClassVar[str] = "attention_rollout"
    description: ClassVar[str] = "attention rollout: (A + I) / 2, multiplied over layers"
    single_forward: ClassVar[bool] = True  # the weights come with explain's own pass

    def attention_reader(self, layers: Layers, rows: Tensor | None = None) -> LayerMapReader:
        """Whole maps always: a rollout multiplies them, so one row needs every other."""
        return _RolloutReader(layers.indices, self.rollout, self.layer_mean)
