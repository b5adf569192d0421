"""Value zeroing (Mohebbi et al., 2023): how much a block's output changes without token j.

For block ``l`` and token ``j``, the value vector of ``j`` is set to zero in every head and
the block is run again on its original input; the cosine distance between each token's
original and altered output, normalised over ``j``, is the context-mixing map of block
``l``. Scores are the reading position's row of one block's map, or of their rollout.

Only the block itself is re-run, on inputs caught during one clean pass: for every block,
all ``T`` perturbations of a text go through it as one batch (in chunks of ``batch_size``
rows). Where a model keeps its value vectors is declared by its family.

Two options reproduce Inseq's reading (the pi-Soft paper ran Inseq 0.7.1): Inseq compares
the last block's outputs after the model's final norm (it reads them from the model's
``hidden_states``, whose last entry is normed: ``last_block_normed``), and computes the
distance as ``1 - cosine_similarity`` in float32 (``cosine="one_minus"``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..common.errors import InvalidInputError, UnsupportedModelError
from ..model.adapter import ExplainableModel, ForwardResult
from ..model.families.heads import module_at
from .base import check_choice, register_method
from .blocks import caught_block_calls
from .mixing import MixingMethod, normalise_rows


def _repeat(value: Any, rows: int, copies: int) -> Any:
    """Repeat per-row tensors (first dim ``rows``, 2-D or more) ``copies`` times each.

    With one text, leading dimensions of 1 are left to broadcast: relative-position
    tables and masks shared by all rows have that shape too.
    """
    if isinstance(value, Tensor) and value.ndim >= 2 and value.shape[0] == rows > 1:
        return value.repeat_interleave(copies, dim=0)
    if isinstance(value, tuple):
        return tuple(_repeat(item, rows, copies) for item in value)
    if isinstance(value, dict):
        return {key: _repeat(item, rows, copies) for key, item in value.items()}
    return value


@contextmanager
def zeroed_values(module: nn.Module, tokens: Tensor, part: tuple[int, int]) -> Iterator[None]:
    """Zero, in row ``r`` of the module's output, the value channels of token ``tokens[r]``."""

    def hook(module, args, output):
        width = output.shape[-1] // part[1]
        start = part[0] * width
        rows = torch.arange(output.shape[0], device=output.device)
        output = output.clone()
        output[rows, tokens, start : start + width] = 0.0
        return output

    handle = module.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


#: how a cosine distance is computed: the stable form, or Inseq's ``1 - cos``
COSINE_FORMS = ("stable", "one_minus")


def cosine_distance(a: Tensor, b: Tensor, form: str = "stable") -> Tensor:
    """``1 - cos(a, b)`` over the last axis, as ``||a/|a| - b/|b|||^2 / 2``.

    The changes value zeroing measures can be tiny; this form keeps their precision
    where ``1 - cosine_similarity`` would cancel to float32 noise; ``form="one_minus"``
    computes that cancelling form (Inseq's), to reproduce it.
    """
    if form == "one_minus":
        return 1 - F.cosine_similarity(a, b.expand_as(a), dim=-1)
    difference = F.normalize(a, dim=-1) - F.normalize(b, dim=-1)
    return 0.5 * difference.pow(2).sum(-1)


def mixing_maps(
    model: ExplainableModel,
    forward: ForwardResult,
    chunk: int,
    min_distance: float = 0.0,
    last_block_normed: bool = False,
    cosine: str = "stable",
) -> Tensor:
    """Value-zeroing maps ``[B, L, T, T]`` (row i: how much token i's output needs token j);
    distances below ``min_distance`` count as zero before rows are normalised.
    ``last_block_normed``: the last block's outputs are compared after the model's final
    norm (a no-op for models without one)."""
    family = model.family
    if model.blocks is None or family.value_projection is None:
        raise UnsupportedModelError(
            f"value zeroing needs to know where {type(model.model).__name__}'s value vectors "
            f"are; family {family.name!r} declares no value_projection"
        )
    batch = forward.batch
    with caught_block_calls(model.blocks) as calls, torch.no_grad():
        model.run_backbone(**model.backbone_inputs(batch))
    rows, length = batch.input_ids.shape
    real = batch.attention_mask.bool()
    final_norm = model.family.final_norm(model.model) if last_block_normed else None
    maps = []
    for index, (block, call) in enumerate(zip(model.blocks, calls, strict=True)):
        normed = final_norm if index == len(model.blocks) - 1 else None
        clean = call["output"] if normed is None else normed(call["output"])
        values = module_at(block, family.value_projection)
        layer_map = torch.zeros(rows, length, length, device=real.device)
        for start in range(0, length, chunk):
            tokens = torch.arange(start, min(start + chunk, length), device=real.device)
            copies = len(tokens)
            hidden, *rest = call["args"]  # the block's input states always get copies
            args = (hidden.repeat_interleave(copies, dim=0), *_repeat(tuple(rest), rows, copies))
            kwargs = _repeat(call["kwargs"], rows, copies)
            with zeroed_values(values, tokens.repeat(rows), family.value_part), torch.no_grad():
                altered = block(*args, **kwargs)
            altered = (altered[0] if isinstance(altered, tuple) else altered).view(
                rows, copies, length, -1
            )
            if normed is not None:
                altered = normed(altered)
            distance = cosine_distance(altered, clean.unsqueeze(1), cosine)
            layer_map[:, :, tokens] = distance.transpose(1, 2)  # [B, i, j]
        if min_distance > 0:
            layer_map = layer_map.masked_fill(layer_map < min_distance, 0.0)
        maps.append(normalise_rows(layer_map, real))
    return torch.stack(maps, dim=1)


@register_method
@dataclass
class ValueZeroing(MixingMethod):
    """Value zeroing from the reading position: one block's map, or their rollout."""

    name: ClassVar[str] = "value_zeroing"
    description: ClassVar[str] = "value zeroing (Mohebbi et al. 2023), rolled out by default"

    #: perturbed tokens per block call (rows per call = texts x batch_size)
    batch_size: int = 64
    #: cosine distances below this count as zero (Inseq: 1e-5, below which its float32
    #: ``1 - cos`` is rounding noise); 0 keeps every distance, as the authors' code
    min_distance: float = 0.0
    #: the last block's outputs compared after the final norm (Inseq reads them so)
    last_block_normed: bool = False
    #: "stable" (precise for tiny distances) or "one_minus" (Inseq's float32 1 - cos)
    cosine: str = "stable"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("cosine", self.cosine, COSINE_FORMS)
        if not 0 <= self.min_distance < 1:
            raise InvalidInputError(
                f"value_zeroing: min_distance must lie in [0, 1), got {self.min_distance!r}"
            )

    def mixing_maps(self, model, forward):
        return mixing_maps(
            model,
            forward,
            max(1, self.batch_size),
            self.min_distance,
            self.last_block_normed,
            self.cosine,
        )
