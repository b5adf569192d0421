"""Reading many renderings of one prompt on a causal model, each from the key-value cache
of the prefix it shares with the whole prompt.

Leave-one-out removes one segment at a time: every token before the removed segment is
the whole prompt's, so its keys and values are too. The whole prompt runs once with a
cache; each rendering then runs only its tokens after the shared prefix, the cache cut
back to that prefix first. Renderings go longest prefix first, so every cut only
shortens the cache (a cut also drops what the previous rendering appended). A segment
late in the prompt costs only the tokens after it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..model.adapter import ExplainableModel


def shared_prefix(first: Sequence[int], second: Sequence[int]) -> int:
    """How many leading ids the two sequences share."""
    count = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        count += 1
    return count


@torch.no_grad()
def cached_log_probs(
    view: ExplainableModel,
    whole: Sequence[int],
    renderings: Sequence[Sequence[int]],
    answer: Sequence[int],
) -> tuple[np.ndarray, int]:
    """The log-probability of each ``answer`` token after each rendering's ids ``[N,
    R]`` (after the whole prompt when a rendering equals it), and how many tokens went
    through the model. ``answer`` empty: the renderings' next-token log-probabilities
    over the whole output ``[N, V]`` instead (a prediction read at the last token)."""
    from transformers import DynamicCache

    device = view.device
    network = view.model
    cache = DynamicCache(config=network.config)
    name = _cache_argument(network)
    full = list(whole) + list(answer)
    logits = network(
        input_ids=torch.tensor([full], device=device), **{name: cache}, use_cache=True
    ).logits[0]
    tokens = len(full)
    out: list[np.ndarray | None] = [None] * len(renderings)
    order = sorted(range(len(renderings)), key=lambda i: -_reusable(renderings[i], full, answer))
    for index in order:
        ids = list(renderings[index]) + list(answer)
        if ids == full:
            out[index] = _read(logits, len(whole), answer)
            continue
        keep = _reusable(renderings[index], full, answer)
        cache.crop(-(cache.get_seq_length() - keep))  # a negative count: tokens removed
        rest = torch.tensor([ids[keep:]], device=device)
        suffix = network(input_ids=rest, **{name: cache}, use_cache=True).logits[0]
        tokens += rest.shape[1]
        out[index] = _read(suffix, len(renderings[index]) - keep, answer)
    return np.stack(out), tokens


def _cache_argument(network) -> str:
    """``cache`` where the model's forward takes it (transformers >= 5.24, which
    deprecates ``past_key_values``), else ``past_key_values``."""
    import inspect

    accepted = inspect.signature(network.forward).parameters
    return "cache" if "cache" in accepted else "past_key_values"


def _reusable(rendering: Sequence[int], full: Sequence[int], answer: Sequence[int]) -> int:
    """Cached positions a rendering can reuse: its shared prefix with the whole prompt,
    at most up to its last prompt token, whose logits (predicting the first answer token,
    or the prediction) are computed anew."""
    return min(shared_prefix(list(rendering) + list(answer), full), len(rendering) - 1)


def _read(logits: torch.Tensor, start: int, answer: Sequence[int]) -> np.ndarray:
    """From logits ``[L, V]`` whose row ``start - 1`` predicts the first answer token:
    each answer token's log-probability; without an answer, row ``start - 1``'s."""
    if not answer:
        return F.log_softmax(logits[start - 1].float(), -1).double().cpu().numpy()
    rows = logits[start - 1 : start - 1 + len(answer)].float()
    wanted = torch.as_tensor(list(answer), device=rows.device)[:, None]
    return F.log_softmax(rows, -1).gather(1, wanted)[:, 0].double().cpu().numpy()


def prefix_cacheable(view: ExplainableModel) -> bool:
    """Whether ``view`` reads left to right with a cache that can be cut back: a decoder
    whose every layer attends to every earlier position (no sliding window)."""
    if not view.family.is_decoder:
        return False
    config = view.model.config
    kinds = set(getattr(config, "layer_types", None) or ["full_attention"])
    windowed = getattr(
        config, "use_sliding_window", getattr(config, "sliding_window", None) is not None
    )
    return kinds == {"full_attention"} and not windowed
