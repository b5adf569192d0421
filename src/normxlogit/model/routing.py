"""Running a model with our own attention function: recording it, or replaying it.

transformers 5 sends every attention call of most architectures through its
``AttentionInterface``. One function is registered there: eager attention that records
q, k, v, the weights and the output of every call (Grad-ELLM reads them; fixed routing
keeps the weights) and that, while weights are being replayed, uses those instead of
softmax(q k): the pi-Soft paper's fixed routing, where softly perturbed inputs are read
with the attention maps of the clean pass, so only the value/content path changes.

Recording and replaying switch the model's attention implementation for the duration of
a ``with`` block and restore it after. Models that do not use the interface (DeBERTa-v2, MPNet) are
refused with a clear message.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..common.errors import InvalidInputError, UnsupportedModelError

OURS = "normxlogit_attention"
_RECORDS: list[list[dict[str, Tensor]]] = []  # the innermost active recorder is last
_REPLAYS: list[dict[str, Any]] = []  # {"weights": [...], "next": call index}
#: {"rows": [B, R] positions, or None for whole maps, "sink": callable}
_READERS: list[dict[str, Any]] = []
#: functions that compute a call's output ``[B, H, T, d]`` themselves, from (query, key,
#: value, mask, scaling, softcap), keys and values repeated to the query's heads
_SUBSTITUTES: list[Callable[..., Tensor]] = []


def _repeat_heads(tensor: Tensor, heads: int) -> Tensor:
    """Grouped-query attention: repeat key/value heads up to the query heads."""
    return tensor.repeat_interleave(heads // tensor.shape[1], dim=1)


def _record(**tensors: Tensor) -> None:
    if _RECORDS:
        _RECORDS[-1].append(tensors)


def _attention(
    module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attention_mask: Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    softcap: float | None = None,
    **kwargs: Any,
):
    """Eager attention (heads first) that records q, k, v, weights and output; inside
    :func:`replayed_attention` the weights are the replayed ones instead; inside
    :func:`read_attention_maps` the output is SDPA's and the head-averaged weights are
    computed beside it, tile by tile or for the chosen rows alone; inside
    :func:`substituted_attention` the caller's function computes the output."""
    key, value = _repeat_heads(key, query.shape[1]), _repeat_heads(value, query.shape[1])
    if _SUBSTITUTES:
        mask = None if attention_mask is None else attention_mask[..., : key.shape[-2]]
        output = _SUBSTITUTES[-1](query, key, value, mask, scaling, softcap)
        return output.transpose(1, 2).contiguous(), None
    if _READERS and not _REPLAYS and not softcap:
        return _beside_sdpa(query, key, value, attention_mask, scaling, _READERS[-1])
    if _REPLAYS and _REPLAYS[-1]["groups"] is not None:
        output = _replayed_by_group(query, value)
        return output.transpose(1, 2).contiguous(), None
    if _REPLAYS:
        weights = _next_replayed(query, value)
    else:
        scores = torch.matmul(query, key.transpose(2, 3)) * scaling
        if softcap:
            scores = softcap * torch.tanh(scores / softcap)
        if attention_mask is not None:
            scores = scores + attention_mask[..., : key.shape[-2]]
        weights = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
        if _READERS:  # softcapped scores, which SDPA cannot compute: the sink reads eager's
            mean, rows = weights.float().mean(dim=1), _READERS[-1]["rows"]
            _READERS[-1]["sink"](mean if rows is None else rows_of(mean, rows))
    output = torch.matmul(weights, value)
    _record(query=query, key=key, value=value, weights=weights, output=output)
    return output.transpose(1, 2).contiguous(), weights


def _beside_sdpa(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attention_mask: Tensor | None,
    scaling: float,
    reading: dict[str, Any],
):
    """The attention output from SDPA (no ``[B, H, T, T]`` kept), and the head-averaged
    weights handed to ``reading["sink"]``: of the rows ``reading["rows"]`` ``[B, R]``
    alone, or (rows ``None``) the whole ``[B, T, T]`` map computed a tile of rows at a
    time. Either is the same softmax of the same scores as eager attention computes."""
    mask = None if attention_mask is None else attention_mask[..., : key.shape[-2]]
    causal = _is_causal(mask, reading.setdefault("causal", {}))
    if causal:  # SDPA's kernel skips the future
        output = F.scaled_dot_product_attention(query, key, value, is_causal=True, scale=scaling)
    else:
        output = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scaling)
    rows = reading["rows"]
    if rows is None:
        reading["sink"](_head_mean_map(query, key, mask, scaling, causal))
    else:
        reading["sink"](_head_mean_rows(query, key, mask, scaling, rows.to(query.device)))
    return output.transpose(1, 2).contiguous(), None


def _is_causal(mask: Tensor | None, seen: dict[tuple, bool]) -> bool:
    """Whether ``mask`` ``[B, h, T, T]`` is the causal mask in every row (no padding): SDPA
    then computes the same output with its causal kernel, at half the cost. Every block of
    a pass shares one mask, so the answer is kept in ``seen``."""
    if mask is None or mask.shape[-2] != mask.shape[-1]:
        return False
    key = (mask.data_ptr(), tuple(mask.shape), mask.dtype)
    if key not in seen:
        size = mask.shape[-1]
        future = torch.ones(size, size, dtype=torch.bool, device=mask.device).triu(1)
        seen[key] = bool((_blocked(mask) == future).all())
    return seen[key]


def _blocked(mask: Tensor) -> Tensor:
    """Where a mask (boolean: True attends; additive: the dtype's minimum blocks) blocks."""
    if mask.dtype == torch.bool:
        return ~mask
    return mask <= torch.finfo(mask.dtype).min / 2


def _head_mean_rows(
    query: Tensor, key: Tensor, mask: Tensor | None, scaling: float, rows: Tensor
) -> Tensor:
    """Head-averaged weights ``[B, R, T]`` of the query positions ``rows`` ``[B, R]``."""
    index = rows[:, None, :, None].expand(-1, query.shape[1], -1, query.shape[-1])
    scores = torch.matmul(query.gather(2, index), key.transpose(2, 3)) * scaling  # [B, H, R, T]
    if mask is not None:
        expanded = rows[:, None, :, None].expand(-1, mask.shape[1], -1, mask.shape[-1])
        scores = scores + mask.gather(2, expanded)
    return F.softmax(scores, dim=-1, dtype=torch.float32).mean(dim=1)


def rows_of(maps: Tensor, rows: Tensor) -> Tensor:
    """Rows ``rows`` ``[B, R]`` (positions) of maps ``[B, T, T]``: ``[B, R, T]``."""
    index = rows.to(maps.device)[..., None].expand(-1, -1, maps.shape[-1])
    return maps.gather(1, index)


#: query rows per tile of a whole map: holds ``[B, H, TILE, T]`` scores at a time
MAP_TILE = 512


def _head_mean_map(
    query: Tensor, key: Tensor, mask: Tensor | None, scaling: float, causal: bool = False
) -> Tensor:
    """Head-averaged weights ``[B, T, S]``, a tile of query rows at a time. Keys that every
    row of a tile masks out (a causal model's future) are skipped: their weight is zero,
    and a causal map costs half the scores of a dense one. ``causal``: the mask is exactly
    causal, so a tile sees the keys up to its last row without reading the mask."""
    batch, _, length, _ = query.shape
    keys = key.shape[-2]
    maps = torch.zeros(batch, length, keys, dtype=torch.float32, device=query.device)
    for top in range(0, length, MAP_TILE):
        bottom = min(top + MAP_TILE, length)
        tile_mask = None if mask is None else mask[..., top:bottom, :]
        end = bottom if causal else _visible_keys(tile_mask, keys)
        scores = torch.matmul(query[:, :, top:bottom], key[:, :, :end].transpose(2, 3))
        scores.mul_(scaling)  # in place: a tile's scores are the largest tensor here
        if tile_mask is not None:
            scores += tile_mask[..., :end]
        maps[:, top:bottom, :end] = F.softmax(scores, dim=-1, dtype=torch.float32).mean(dim=1)
    return maps


def _visible_keys(mask: Tensor | None, keys: int) -> int:
    """One past the last of ``keys`` that some row of ``mask`` ``[B, h, R, S]`` can see
    (no mask, or a fully masked row, sees every key: softmax spreads it evenly, as eager
    does)."""
    if mask is None:
        return keys
    seen = (~_blocked(mask)).flatten(0, -2)  # [B * h * R, S]
    if not bool(seen.any(dim=-1).all()):
        return keys
    columns = seen.any(dim=0).nonzero()
    return int(columns[-1]) + 1


def _next_replayed(query: Tensor, value: Tensor) -> Tensor:
    """The replayed weights of this call, checked against its shape."""
    replay = _REPLAYS[-1]
    index = replay["next"]
    if index >= len(replay["weights"]):
        raise InvalidInputError(
            f"the model made more attention calls than the {len(replay['weights'])} replayed "
            "maps; they come from a different model"
        )
    weights = replay["weights"][index]
    expected = (query.shape[0], query.shape[1], query.shape[2], value.shape[2])
    if tuple(weights.shape) != expected:
        raise InvalidInputError(
            f"replayed attention map {index} is {tuple(weights.shape)} but this call needs "
            f"{expected}; the maps come from a different batch or text length"
        )
    replay["next"] = index + 1
    return weights.to(value.dtype)


def _replayed_by_group(query: Tensor, value: Tensor) -> Tensor:
    """The attention output ``[N, H, T, d]`` with each group's one replayed map
    ``[H, T, T]`` applied to all of its rows: a map is broadcast over its rows (one
    batched product per group), never copied once per row."""
    replay = _REPLAYS[-1]
    maps = _next_replayed(query[: len(replay["groups"])], value[: len(replay["groups"])])
    outputs = [
        torch.einsum("hqk,nhkd->nhqd", maps[group], value[start:stop])
        for group, (start, stop) in enumerate(replay["groups"])
    ]
    if replay["groups"][-1][1] != value.shape[0]:
        raise InvalidInputError(
            f"replayed maps cover {replay['groups'][-1][1]} rows but the pass has "
            f"{value.shape[0]}; the groups come from a different pass"
        )
    return torch.cat(outputs)


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(OURS, _attention)
    AttentionMaskInterface.register(OURS, eager_mask)


@contextmanager
def _attention_function(model, purpose: str) -> Iterator[None]:
    """Run ``model`` (an ExplainableModel) with our attention function."""
    _register()
    network = model.model
    previous = getattr(network.config, "_attn_implementation", None)
    refusal = (
        f"{type(network).__name__} does not route attention through transformers' "
        f"AttentionInterface, which {purpose} needs"
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # transformers warns, then carries on unchanged
            network.set_attn_implementation(OURS)
    except (ValueError, KeyError, AttributeError) as error:
        raise UnsupportedModelError(f"{refusal} ({error})") from None
    if getattr(network.config, "_attn_implementation", None) != OURS:
        raise UnsupportedModelError(refusal)
    try:
        yield
    finally:
        if previous is not None:
            network.set_attn_implementation(previous)


@contextmanager
def attention_records() -> Iterator[list[dict[str, Tensor]]]:
    """Collect what our attention functions compute, without switching any model."""
    _RECORDS.append([])
    try:
        yield _RECORDS[-1]
    finally:
        _RECORDS.pop()


@contextmanager
def recorded_attention(model, purpose: str = "this") -> Iterator[list[dict[str, Tensor]]]:
    """Run the model with the capturing attention; yields the calls in layer order."""
    with attention_records() as calls, _attention_function(model, purpose):
        yield calls


@contextmanager
def replayed_attention(
    model, weights: Sequence[Tensor], groups: Sequence[tuple[int, int]] | None = None
) -> Iterator[None]:
    """Run the model with fixed attention: call ``i`` uses ``weights[i]`` ``[N, H, T, T]``.

    ``groups``: the weights hold one map per group ``[G, H, T, T]``, and group ``g``'s
    map serves the rows ``groups[g]`` (start, stop) of the pass: many perturbed copies of
    one text share its map without copies. Without groups, inside,
    :func:`attention_records` collects the weights actually used.
    """
    _REPLAYS.append({"weights": list(weights), "next": 0, "groups": groups})
    try:
        with _attention_function(model, "fixed routing"):
            yield
    finally:
        _REPLAYS.pop()


@contextmanager
def read_attention_maps(model, rows: Tensor | None, sink) -> Iterator[None]:
    """Run the model with SDPA outputs, handing ``sink`` each layer's head-averaged
    attention weights: of the rows ``rows`` ``[B, R]`` (positions) as ``[B, R, T]``, what
    reading-row methods need, at a forward pass's memory; or (``rows=None``) whole maps
    ``[B, T, T]``, computed a tile of rows at a time, never ``[B, H, T, T]``. Refused
    (UnsupportedModelError) for models outside transformers' AttentionInterface."""
    _READERS.append({"rows": rows, "sink": sink})
    try:
        with _attention_function(model, "reading attention weights"):
            yield
    finally:
        _READERS.pop()


@contextmanager
def substituted_attention(model, attend: Callable[..., Tensor]) -> Iterator[None]:
    """Run the model with ``attend(query, key, value, mask, scaling, softcap)`` computing
    every attention call's output ``[B, H, T, d]`` (heads first; the mask additive, cut to
    the keys): a method that needs one row's attention, or a changed one, computes just
    that. Refused (UnsupportedModelError) for models outside transformers'
    AttentionInterface."""
    _SUBSTITUTES.append(attend)
    try:
        with _attention_function(model, "computing attention outputs of its own"):
            yield
    finally:
        _SUBSTITUTES.pop()


@torch.no_grad()
def clean_attention(model, **backbone_inputs: Tensor) -> list[Tensor]:
    """The attention weights ``[B, H, T, T]`` of every layer on a clean forward pass."""
    with recorded_attention(model, "fixed routing") as calls:
        model.run_backbone(**backbone_inputs)
    return [call["weights"] for call in calls]


def expand_rows(weights: Sequence[Tensor], rows: Tensor) -> list[Tensor]:
    """Each layer's maps for rows ``[N]`` (indices into the clean batch)."""
    return [layer[rows.to(layer.device)] for layer in weights]
