"""A model as a bench store keys it: its name, and the precision when one is chosen.

``smollm2-sst2@bfloat16`` is ``smollm2-sst2`` loaded in bfloat16. Every stored result is
keyed by this reference, so results of two precisions are two models to the store (their
weights' fingerprints differ too), never one.
"""

from __future__ import annotations

from ..model.precision import DTYPE_NAMES, dtype_name

SEPARATOR = "@"


def model_ref(name: str, dtype: str | None) -> str:
    """``name``, with ``@dtype`` when a precision is chosen."""
    return name if dtype is None else f"{name}{SEPARATOR}{dtype_name(dtype)}"


def split_model_ref(ref: str) -> tuple[str, str | None]:
    """A reference's model name and precision (None: as loaded)."""
    name, separator, tail = ref.rpartition(SEPARATOR)
    if separator and tail in DTYPE_NAMES:
        return name, tail
    return ref, None
