"""Value zeroing (Mohebbi et al., 2023): how much a block's output changes without token j.

For block ``l`` and token ``j``, the value vector of ``j`` is set to zero in every head and
the block is run again on its original input; the cosine distance between each token's
original and altered output, normalised over ``j``, is the context-mixing map of block
``l``. Scores are the reading position's row of one block's map, or of their rollout.

Only the block itself is re-run, on inputs caught during one clean pass: for every block,
all ``T`` perturbations of a text go through it as one batch (in chunks of ``batch_size``
rows). Where a model keeps its value vectors is declared by its family.

Scores that read each block's own map (no rollout) need its reading row alone, and that
row costs one block call, not ``T`` (:func:`reading_rows`): zeroing token ``j``'s value
changes the reading position's attention output by ``-w_j v_j`` (the weights do not
depend on the values), and everything after attention in a block is position-wise. So the
block is re-run once on the reading position's input copied to every position, with the
attention output at position ``j`` replaced by the reading row's without token ``j``'s
value: its output at ``j`` is the reading position's output with ``j`` zeroed. This needs
the model to route attention through transformers' AttentionInterface; other models
(DeBERTa-v2, MPNet) and rollout keep the whole maps.

Two options reproduce Inseq's reading (the pi-Soft paper ran Inseq 0.7.1): Inseq compares
the last block's outputs after the model's final norm (it reads them from the model's
``hidden_states``, whose last entry is normed: ``last_block_normed``), and computes the
distance as ``1 - cosine_similarity`` in float32 (``cosine="one_minus"``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..common.errors import InvalidInputError, UnsupportedModelError
from ..model.adapter import ExplainableModel, ForwardResult
from ..model.families.heads import module_at
from ..model.routing import substituted_attention
from .base import Layers, broadcast_targets, check_choice, register_method
from .blocks import caught_block_calls
from .mixing import LayerMapReader, MixingMethod, normalise_rows


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
    computes that cancelling form (Inseq's), to reproduce it. Half-precision states are
    compared in float32 (a map is accumulated in float32 for them), so that the small
    changes are not lost to half precision's rounding.
    """
    dtype = _at_least_float32(torch.promote_types(a.dtype, b.dtype))
    a, b = a.to(dtype), b.to(dtype)
    if form == "one_minus":
        return 1 - F.cosine_similarity(a, b.expand_as(a), dim=-1)
    difference = F.normalize(a, dim=-1) - F.normalize(b, dim=-1)
    return 0.5 * difference.pow(2).sum(-1)


def _check_values(model: ExplainableModel) -> None:
    """Refuse models whose family does not say where the value vectors are."""
    family = model.family
    if model.blocks is None or family.value_projection is None:
        raise UnsupportedModelError(
            f"value zeroing needs to know where {type(model.model).__name__}'s value vectors "
            f"are; family {family.name!r} declares no value_projection"
        )


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
    _check_values(model)
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
        dtype = _at_least_float32(clean.dtype)
        layer_map = torch.zeros(rows, length, length, dtype=dtype, device=real.device)
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


def _scores(scores: Tensor, mask: Tensor | None, scaling: float, softcap: float | None) -> Tensor:
    """Attention weights (at least float32) from raw scores ``q k``, as eager attention
    computes them; ``mask`` is additive (transformers' eager mask, which our attention
    function gets)."""
    scores = scores * scaling
    if softcap:
        scores = softcap * torch.tanh(scores / softcap)
    if mask is not None:
        scores = scores + mask
    return F.softmax(scores, dim=-1, dtype=_at_least_float32(scores.dtype))


def _at_least_float32(dtype: torch.dtype) -> torch.dtype:
    """float32 for half precision, else the dtype itself (a float64 model stays exact)."""
    return torch.promote_types(dtype, torch.float32)


def _reading_weights(
    query: Tensor,
    key: Tensor,
    mask: Tensor | None,
    scaling: float,
    softcap: float | None,
    rows: Tensor,
) -> Tensor:
    """Each head's weights ``[B, H, T]`` (at least float32) of the query at ``rows[b]``."""
    index = rows.view(-1, 1, 1, 1).expand(-1, query.shape[1], 1, query.shape[-1])
    scores = torch.matmul(query.gather(2, index), key.transpose(2, 3))  # [B, H, 1, T]
    if mask is not None:
        mask = mask.expand(query.shape[0], -1, -1, -1)
        mask = mask.gather(2, rows.view(-1, 1, 1, 1).expand(-1, mask.shape[1], 1, mask.shape[-1]))
    return _scores(scores, mask, scaling, softcap).squeeze(2)


def _clean_output(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None,
    scaling: float,
    softcap: float | None,
) -> Tensor:
    """A clean call's output ``[B, H, T, d]``: SDPA's, or eager's where the scores are
    softcapped (which SDPA cannot do)."""
    if not softcap:
        return F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scaling)
    weights = _scores(torch.matmul(query, key.transpose(2, 3)), mask, scaling, softcap)
    return torch.matmul(weights.to(value.dtype), value)


def without_each_value(weights: Tensor, value: Tensor) -> Tensor:
    """The reading row's attention output ``[B, H, T, d]`` with, at position ``j``, token
    ``j``'s value zeroed: ``sum_i w_i v_i - w_j v_j`` (at least in float32, so that a
    half-precision model's small changes are not lost to the subtraction)."""
    dtype = _at_least_float32(value.dtype)
    weights, values = weights.to(dtype), value.to(dtype)
    context = torch.einsum("bht,bhtd->bhd", weights, values)
    return (context.unsqueeze(2) - weights.unsqueeze(-1) * values).to(value.dtype)


class _ReadingRowAttention:
    """Our attention function for :func:`reading_rows`. On the clean pass it keeps each
    call's reading-row weights and values and computes the usual output; on a block's
    re-run (``zeroing`` set to that block's kept pair) the output at position ``j`` is the
    reading row's without token ``j``'s value, whatever the re-run's own q, k, v are."""

    def __init__(self, rows: Tensor):
        self.rows = rows
        self.kept: list[tuple[Tensor, Tensor]] = []
        self.zeroing: tuple[Tensor, Tensor] | None = None
        self.calls = 0

    def __call__(self, query, key, value, mask, scaling, softcap=None) -> Tensor:
        self.calls += 1
        if self.zeroing is not None:
            return without_each_value(*self.zeroing)
        weights = _reading_weights(query, key, mask, scaling, softcap, self.rows)
        self.kept.append((weights, value))
        return _clean_output(query, key, value, mask, scaling, softcap)


def _at(states: Tensor, rows: Tensor) -> Tensor:
    """Each text's state at its position ``rows[b]``: ``[B, D]``."""
    return states[torch.arange(states.shape[0], device=states.device), rows]


def _zeroed_block(block: nn.Module, call: dict[str, Any], rows: Tensor) -> Tensor:
    """The block re-run on the reading position's input copied to every position (the
    attention function supplies the zeroed outputs): ``[B, T, D]``."""
    hidden, *rest = call["args"]
    spread = _at(hidden, rows).unsqueeze(1).expand_as(hidden).contiguous()
    altered = block(spread, *rest, **call["kwargs"])
    return altered[0] if isinstance(altered, tuple) else altered


def reading_rows(
    model: ExplainableModel,
    forward: ForwardResult,
    min_distance: float = 0.0,
    last_block_normed: bool = False,
    cosine: str = "stable",
) -> Tensor | None:
    """Each block's reading row ``[B, L, T]`` of :func:`mixing_maps` (the same numbers, to
    float32 rounding), one block call per block; ``None`` where the model does not route
    attention through transformers' AttentionInterface (then only whole maps are had)."""
    _check_values(model)
    attention = _ReadingRowAttention(forward.batch.reading_positions)
    with ExitStack() as stack:
        try:
            stack.enter_context(substituted_attention(model, attention))
        except UnsupportedModelError:
            return None
        distances = _reading_distances(model, forward, attention, last_block_normed, cosine)
    if distances is None:
        return None
    if min_distance > 0:
        distances = distances.masked_fill(distances < min_distance, 0.0)
    real = forward.batch.attention_mask.bool().unsqueeze(1)
    distances = distances * real  # padding columns; the reading row itself is real
    return distances / distances.sum(-1, keepdim=True).clamp_min(1e-12)


@torch.no_grad()
def _reading_distances(
    model: ExplainableModel,
    forward: ForwardResult,
    attention: _ReadingRowAttention,
    last_block_normed: bool,
    cosine: str,
) -> Tensor | None:
    """Cosine distances ``[B, L, T]`` of the reading position's block output with each
    token's value zeroed; ``None`` where the blocks do not make one attention call each
    through ``attention`` (then its outputs would not be the block's)."""
    rows = forward.batch.reading_positions
    with caught_block_calls(model.blocks) as calls:
        model.run_backbone(**model.backbone_inputs(forward.batch))
    if len(attention.kept) != len(model.blocks):
        return None
    final_norm = model.family.final_norm(model.model) if last_block_normed else None
    found = []
    for index, (block, call) in enumerate(zip(model.blocks, calls, strict=True)):
        attention.zeroing, before = attention.kept[index], attention.calls
        altered = _zeroed_block(block, call, rows)
        if attention.calls != before + 1:
            return None
        clean = _at(call["output"], rows)
        if final_norm is not None and index == len(model.blocks) - 1:
            altered, clean = final_norm(altered), final_norm(clean)
        found.append(cosine_distance(altered, clean.unsqueeze(1), cosine))
    return torch.stack(found, dim=1)


def read_rows(rows: Tensor, forward: ForwardResult, layers: Layers, mean: bool) -> Tensor:
    """Blocks' reading rows ``[B, L, T]`` to the chosen layers' ``[B, len(layers), T]``:
    each block's own row, or (``mean``) the mean of blocks 1..l's (layer 0: the token
    itself)."""
    reader = LayerMapReader(
        layers.indices, rollout=False, mean=mean, rows=forward.batch.reading_positions[:, None]
    )
    for block_row in rows.unbind(dim=1):
        reader(block_row.unsqueeze(1))
    return reader.result()[:, :, 0]


@register_method
@dataclass
class ValueZeroing(MixingMethod):
    """Value zeroing from the reading position: one block's map, or their rollout."""

    name: ClassVar[str] = "value_zeroing"
    description: ClassVar[str] = "value zeroing (Mohebbi et al. 2023), rolled out by default"

    #: perturbed tokens per block call (rows per call = texts x batch_size) where whole
    #: maps are computed; the reading row alone re-runs a block once, at a pass's memory
    batch_size: int = 64
    #: cosine distances below this count as zero (Inseq: 1e-5, below which its float32
    #: ``1 - cos`` is rounding noise); 0 keeps every distance, as the authors' code
    min_distance: float = 0.0
    #: the last block's outputs compared after the final norm (Inseq reads them so)
    last_block_normed: bool = False
    #: "stable" (precise for tiny distances) or "one_minus" (Inseq's float32 1 - cos)
    cosine: str = "stable"

    #: each zeroed token's block call is computed alone, however many share a call
    execution_options: ClassVar[frozenset[str]] = frozenset({"batch_size"})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("cosine", self.cosine, COSINE_FORMS)
        if not 0 <= self.min_distance < 1:
            raise InvalidInputError(
                f"value_zeroing: min_distance must lie in [0, 1), got {self.min_distance!r}"
            )

    #: compute whole maps even where the scores read one row (benchmarks and tests
    #: compare the two paths); set on an instance
    whole_maps: ClassVar[bool] = False

    def attribute(self, model, forward, targets, layers):
        """Without rollout, each block's reading row alone (:func:`reading_rows`)."""
        rows = None
        if not (self.rollout or self.whole_maps):
            rows = reading_rows(
                model, forward, self.min_distance, self.last_block_normed, self.cosine
            )
        if rows is None:
            return super().attribute(model, forward, targets, layers)
        return broadcast_targets(read_rows(rows, forward, layers, self.layer_mean), targets)

    def mixing_maps(self, model, forward):
        return mixing_maps(
            model,
            forward,
            max(1, self.batch_size),
            self.min_distance,
            self.last_block_normed,
            self.cosine,
        )
