"""Benchmarks of attribution methods: a grid from a TOML config into a resumable store.

``load_config`` reads the grid, ``run_bench`` computes what the :class:`ResultStore`
lacks (with the local engine, or Ray's), and :mod:`~normxlogit.bench.report` renders the
papers' tables and figures from the store alone. The command line is ``normxlogit bench``.

Names are imported on first use, so ``normxlogit --help`` does not pay for pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "BenchConfig": "config",
    "load_config": "config",
    "LocalEngine": "engines",
    "get_engine": "engines",
    "BenchReport": "runner",
    "plan": "runner",
    "run_bench": "runner",
    "ResultStore": "store",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
