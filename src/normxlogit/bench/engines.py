"""Engines run units of work and hand each result back as it is done.

The local engine (the default) runs them one after another in this process. The Ray
engine (``normxlogit[ray]``, :mod:`normxlogit.bench.ray_engine`) spreads them over actors.
Both call ``deliver`` in this process, which alone writes the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ..errors import InvalidInputError
from .work import UnitResult, Worker, WorkUnit


class Engine(Protocol):
    """Something that computes units and delivers their results, in any order."""

    name: str

    def run(self, units: Iterable[WorkUnit], deliver: Callable[[UnitResult], None]) -> None: ...


class LocalEngine:
    """Units one after another in this process; a model is loaded once per run of units."""

    name = "local"

    def __init__(self, worker: Worker | None = None):
        self.worker = worker or Worker()

    def run(self, units: Iterable[WorkUnit], deliver: Callable[[UnitResult], None]) -> None:
        for unit in units:
            deliver(self.worker.run(unit))


def get_engine(name: str, **options: Any) -> Engine:
    """``"local"`` or ``"ray"`` (options: ``address``, ``workers``, ``gpus_per_worker``)."""
    if name == "local":
        if options:
            raise InvalidInputError(
                f"the local engine takes no options ({', '.join(options)}); they are for "
                "--engine ray"
            )
        return LocalEngine()
    if name == "ray":
        from .ray_engine import RayEngine

        return RayEngine(**options)
    raise InvalidInputError(f"unknown engine {name!r}; choose local (default) or ray")
