"""Context-mixing methods: per-layer token-to-token maps, read from the reading position.

A mixing method computes, for every layer, a map ``[B, T, T]`` whose row ``i`` says how
much token ``i``'s output draws on each token ``j`` (rows sum to 1, except where the
published method multiplies raw maps, as GlobEnc does). Scores are the reading
position's row of one layer's map, or of the maps multiplied up to that layer (rollout).
Layer 0 is the identity: before any mixing each token is only itself. Padding rows and
columns are zero, so a text scores the same alone or in a padded batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from ..common.errors import InvalidInputError
from ..model.adapter import ExplainableModel, ForwardResult
from ..model.targets import Targets
from .base import AttributionMethod, Layers, broadcast_targets, rows_at


class LayerMapReader:
    """Reduces per-layer maps ``[B, T, T]``, fed in block order, to the chosen layers' maps
    ``[B, len(layers), T, T]``: layer 0 is the identity, layer ``l`` block ``l``'s own map,
    the product up to it (``rollout``), or the mean of blocks 1..l's maps (``mean``).

    It holds only the running product or sum and the chosen layers' maps, never every
    layer's: a pass can feed it layer by layer (attention weights caught as the model
    runs), so memory grows with the layers asked for, not the model's depth.
    """

    def __init__(
        self,
        layers: Sequence[int],
        rollout: bool,
        mean: bool = False,
        rows: Tensor | None = None,
    ):
        if rollout and rows is not None:
            raise ValueError("a rollout multiplies whole maps; it cannot keep rows alone")
        self.layers = tuple(layers)
        self.rollout = rollout
        self.mean = mean
        #: positions ``[B, R]`` whose rows alone are fed and kept (None: whole maps)
        self.rows = rows
        self._kept: dict[int, Tensor] = {}
        self._running: Tensor | None = None
        self._fed = 0
        self._shape: tuple[torch.Size, torch.dtype, torch.device] | None = None

    @property
    def spec(self) -> tuple[str, tuple[int, ...], bool, bool]:
        """What the reader keeps: two readers with equal specs give equal maps."""
        return type(self).__name__, self.layers, self.rollout, self.mean

    @property
    def fed(self) -> int:
        """How many blocks' maps it has taken."""
        return self._fed

    def __call__(self, block_map: Tensor) -> None:
        """Take the next block's map ``[B, T, T]`` (with ``rows``: its rows ``[B, R, T]``;
        half precision is summed and multiplied in float32: 30 layers of bfloat16 would
        lose the small weights)."""
        block_map = block_map.float()
        self._fed += 1
        self._shape = (block_map.shape, block_map.dtype, block_map.device)
        if self.rollout:
            running = block_map if self._running is None else self.product(block_map, self._running)
        elif self.mean:
            running = block_map if self._running is None else self._running + block_map
        else:
            running = block_map
        needed = self._fed < max(self.layers, default=0)  # a later layer builds on it
        if self.rollout or self.mean:
            self._running = running if needed else None
        if self._fed in self.layers:
            self._kept[self._fed] = running / self._fed if self.mean else running

    def product(self, block_map: Tensor, running: Tensor) -> Tensor:
        """``block_map @ running``: one more layer of a rollout."""
        return block_map @ running

    def result(self) -> Tensor:
        """The chosen layers' maps ``[B, len(layers), T, T]``."""
        if self._shape is None:
            raise ValueError("no layer's map was fed to the reader")
        missing = [layer for layer in self.layers if layer > self._fed]
        if missing:
            raise ValueError(f"layers {missing} were asked for, but {self._fed} maps were fed")
        shape, dtype, device = self._shape
        if self.rows is None:
            identity = torch.eye(shape[-1], dtype=dtype, device=device).expand(shape)
        else:  # each row is its own token before any mixing
            identity = torch.nn.functional.one_hot(self.rows.to(device), shape[-1]).to(dtype)
        return torch.stack([self._kept.get(layer, identity) for layer in self.layers], dim=1)

    def matches(self, other: LayerMapReader) -> bool:
        """Whether ``other`` keeps what this reader keeps (layers, reduction and rows)."""
        if self.spec != other.spec or (self.rows is None) != (other.rows is None):
            return False
        return self.rows is None or torch.equal(self.rows.cpu(), other.rows.cpu())


def layer_maps(maps: Tensor, layers: Layers, rollout: bool, mean: bool = False) -> Tensor:
    """Maps ``[B, L, T, T]`` to the chosen layers' maps ``[B, len(layers), T, T]`` (see
    :class:`LayerMapReader`; ``mean`` is Inseq's default for per-layer scores)."""
    reader = LayerMapReader(layers.indices, rollout, mean)
    for block_map in maps.unbind(dim=1):
        reader(block_map)
    return reader.result()


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
    """Zero padding rows and columns, then make each row sum to 1 (half precision in
    float32: there the floor ``1e-12`` of an all-zero padding row's sum rounds to 0, and
    its ``0 / 0`` would spread NaN through a rollout)."""
    maps = maps.to(torch.promote_types(maps.dtype, torch.float32))
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
        super().__post_init__()
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
