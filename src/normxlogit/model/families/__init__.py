"""Architecture families: where each model keeps its head-on-top (see ``registry``)."""

from . import decoders, encoders, generic  # noqa: F401  (families register on import)
from .registry import Family, HeadFn, Reading, list_families, padding_idx_offset, resolve_family

__all__ = [
    "Family",
    "HeadFn",
    "Reading",
    "list_families",
    "padding_idx_offset",
    "resolve_family",
]
