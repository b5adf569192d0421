"""Which tokens a protocol may perturb, in which order, and how many at each ratio.

Everything here works on whole batches: scores ``[M, B, T]`` (methods x texts x padded
positions) become boolean perturbation masks ``[M, B, R, T]`` (R ratios) in one go.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..common.errors import InvalidInputError
from ..model.inputs import Batch

NOT_RANKED = torch.iinfo(torch.long).max


def protected(batch: Batch, policy: str) -> Tensor:
    """Real positions never perturbed ``[B, T]``: the reading position, and special tokens
    as ``policy`` says (``"first"``: a special first token such as [CLS]; ``"special"``:
    all; ``"none"``)."""
    real = batch.attention_mask.bool()
    rows = torch.arange(len(batch), device=real.device)
    kept = torch.zeros_like(real)
    kept[rows, batch.reading_positions] = True
    special = batch.special_tokens_mask.bool() & real
    if policy == "special":
        kept |= special
    elif policy == "first":
        first = real.long().argmax(-1)
        kept[rows, first] |= special[rows, first]
    return kept & real


def eligible(batch: Batch, policy: str) -> Tensor:
    """Positions a protocol may rank and perturb ``[B, T]``."""
    return batch.attention_mask.bool() & ~protected(batch, policy)


def ranks(scores: Tensor, allowed: Tensor) -> Tensor:
    """Each allowed position's rank by descending score ``[..., B, T]`` (0 = most
    important; ties keep text order); positions not allowed get ``NOT_RANKED``."""
    if torch.isnan(scores.masked_fill(~allowed, 0.0)).any():
        raise InvalidInputError("an explanation has NaN scores; it cannot be evaluated")
    masked = scores.masked_fill(~allowed, float("-inf"))
    order = torch.sort(masked, dim=-1, descending=True, stable=True).indices
    rank = torch.empty_like(order)
    positions = torch.arange(order.shape[-1], device=order.device).expand_as(order)
    rank.scatter_(-1, order, positions)
    return rank.masked_fill(~allowed.expand_as(rank), NOT_RANKED)


def counts(lengths: Tensor, fractions: tuple[float, ...], available: Tensor) -> Tensor:
    """Tokens perturbed per text and fraction ``[B, R]``: ``int(len * k)`` with ``len``
    counting special tokens (Python's float product, as the authors computed it), capped
    at the tokens that may be perturbed."""
    table = [[int(int(n) * k) for k in fractions] for n in lengths.tolist()]
    return torch.minimum(torch.tensor(table, dtype=torch.long), available.cpu().unsqueeze(-1))


def hard_masks(rank: Tensor, allowed: Tensor, count: Tensor, top: bool) -> Tensor:
    """Positions to perturb ``[M, B, R, T]``: the ``count`` top-ranked (``top=True``,
    comprehensiveness and deletion) or every allowed position but those (sufficiency and
    insertion)."""
    rank, count = rank.unsqueeze(2), count.to(rank.device)[None, :, :, None]
    chosen = rank < count
    if not top:
        chosen = allowed[None, :, None, :] & ~chosen
    return chosen


def compact(tensors: dict[str, Tensor], keep: Tensor) -> tuple[dict[str, Tensor], Tensor]:
    """Delete the positions not in ``keep`` ``[N, T]`` from every ``[N, T]`` tensor.

    Rows are right-padded again (zeros after the kept tokens) and cut to the longest; the
    new attention mask is returned with them. Returns the tensors and ``new_index`` ``[N,
    T]``: where each old position went (-1 if deleted).
    """
    order = torch.sort((~keep).to(torch.int8), dim=-1, stable=True).indices
    lengths = keep.sum(-1)
    width = int(lengths.max())
    order = order[:, :width]
    mask = torch.arange(width, device=keep.device) < lengths.unsqueeze(-1)
    moved = {name: value.gather(-1, order) * mask for name, value in tensors.items()}
    moved["attention_mask"] = mask.long()
    new_index = torch.where(keep, keep.long().cumsum(-1) - 1, torch.full_like(order[:, :1], -1))
    return moved, new_index
