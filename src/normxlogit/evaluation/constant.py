"""Explanations that rank nothing: every unit a metric may perturb scored alike.

The hard and soft metrics each find them in a chunk and warn once per evaluation, in
their own words about what such an explanation scores; this is what they share."""

from __future__ import annotations

from collections.abc import Iterable

from torch import Tensor

from ..common.numbering import text_word
from .context import EvaluationContext


def constant_by_method(
    ctx: EvaluationContext, allowed: Tensor, scores: Tensor
) -> dict[str, set[int]]:
    """Per method, the context's instances whose ``scores`` (``[M, B, T]``) are all alike
    over the ``allowed`` units (more than one: a single unit ranks trivially)."""
    allowed = allowed.to(scores.device).expand_as(scores)
    high = scores.masked_fill(~allowed, float("-inf")).amax(-1)
    low = scores.masked_fill(~allowed, float("inf")).amin(-1)
    flat = (high == low) & (allowed.sum(-1) > 1)  # [M, B]
    found: dict[str, set[int]] = {}
    for m, b in flat.nonzero().tolist():
        found.setdefault(ctx.methods[m], set()).add(ctx.instances[b])
    return found


def constant_which(found: Iterable[dict[str, set[int]] | None]) -> str | None:
    """The chunks' findings merged, as a warning names them ("'random' on 2 texts");
    None where no chunk found one."""
    merged: dict[str, set[int]] = {}
    for chunk in found:
        for method, instances in (chunk or {}).items():
            merged.setdefault(method, set()).update(instances)
    if not merged:
        return None
    return ", ".join(
        f"{method!r} on {len(texts)} {text_word(len(texts))}" for method, texts in merged.items()
    )
