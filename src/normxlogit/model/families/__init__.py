"""Architecture families: where each model keeps its head-on-top (see ``registry``)."""

from . import decoders, encoders, generic  # noqa: F401  (families register on import)
from .registry import (
    Family,
    HeadFn,
    Reading,
    families_declaring,
    list_families,
    padding_idx_offset,
    resolve_family,
)
from .relevance import RelevanceLayout

__all__ = [
    "Family",
    "HeadFn",
    "Reading",
    "RelevanceLayout",
    "families_declaring",
    "list_families",
    "padding_idx_offset",
    "resolve_family",
]
