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

    def __init__(self, worker: Worker | None = None, device: str | None = None):
        if worker is None:
            worker = Worker(load=None if device is None else _loader(device))
        self.worker = worker
        if device is not None:  # recorded with each run in the store
            self.name = f"local ({device})"

    def run(self, units: Iterable[WorkUnit], deliver: Callable[[UnitResult], None]) -> None:
        for unit in units:
            deliver(self.worker.run(unit))


def _loader(device: str) -> Callable[[str], Any]:
    def load_on_device(name: str):
        from .. import load

        return load(name, device=device)

    return load_on_device


def get_engine(name: str, **options: Any) -> Engine:
    """``"local"`` (option: ``device``) or ``"ray"`` (options: ``address``, ``workers``,
    ``gpus_per_worker``)."""
    if name == "local":
        device = options.pop("device", None)
        if options:
            raise InvalidInputError(
                f"the local engine takes no options ({', '.join(options)}); they are for "
                "--engine ray"
            )
        return LocalEngine(device=device)
    if name == "ray":
        from .ray_engine import RayEngine

        return RayEngine(**options)
    raise InvalidInputError(f"unknown engine {name!r}; choose local (default) or ray")
