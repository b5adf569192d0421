"""Which loader reads a saved JSON file, so a file opened with the wrong one is refused
naming the right one (the loaders live on floors that cannot import each other)."""

from __future__ import annotations

from typing import Any

#: what a saved sanity result says it is (its ``"kind"``)
SANITY_KIND = "normxlogit sanity result"

EXPLANATION_LOADER = "normxlogit.Explanation.load"
EVALUATION_LOADER = "normxlogit.EvaluationResult.load"
SANITY_LOADER = "normxlogit.sanity.SanityResult.load"


def saved_kind(data: Any) -> tuple[str, str] | None:
    """``(what the file is, its loader)`` for a parsed JSON file one of normxlogit's savers
    wrote, read from the keys each writes; None when it looks like none of them."""
    if not isinstance(data, dict):
        return None
    if data.get("kind") == SANITY_KIND:
        return "a sanity result", SANITY_LOADER
    if {"metrics", "protocol", "rows"} <= data.keys():
        return "an evaluation result", EVALUATION_LOADER
    if "scores" in data and "tokens" in data:
        return "an explanation", EXPLANATION_LOADER
    return None


def other_loader_hint(data: Any, loader: str) -> str:
    """``"; it is a sanity result: use normxlogit.sanity.SanityResult.load"`` when ``data``
    is a file another loader reads (empty when it is ``loader``'s own kind or none)."""
    found = saved_kind(data[0] if isinstance(data, list) and data else data)
    if found is None or found[1] == loader:
        return ""
    what, right = found
    return f"; it is {what}: use {right}"
