"""MiniLM adapters: all-MiniLM-L6-v2 plus a LoRA adapter and head trained by this project.

The built-ins ship their adapter folders inside the package; ``normxlogit train`` writes
the same kind of folder anywhere else, and :func:`normxlogit.load` accepts it by path.
Adapters of every base are loaded by :mod:`normxlogit.builtin.adapters`; the names here
are kept for the code that imports them from this module.
"""

from __future__ import annotations

from .adapters import (
    MANIFEST,
    MINILM_BASE,
    is_adapter_folder,
    load_adapter_folder,
    load_builtin_adapter,
)

__all__ = ["MANIFEST", "MINILM_BASE", "is_adapter_folder", "load_adapter_folder", "load_minilm"]


def load_minilm(name: str, train_command: str | None = None):
    """A built-in MiniLM model: the base encoder + its shipped adapter, merged."""
    return load_builtin_adapter(name)
