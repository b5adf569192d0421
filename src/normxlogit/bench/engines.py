"""Engines run units of work and hand each result back as it is done.

The local engine (the default) runs them one after another in this process. The Ray
engine (``normxlogit[ray]``, :mod:`normxlogit.bench.ray_engine`) spreads them over actors.
Both call ``deliver`` in this process, which alone writes the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ..common.errors import InvalidInputError
from .work import UnitResult, Worker, WorkUnit


class Engine(Protocol):
    """Something that computes units and delivers their results, in any order."""

    name: str

    def run(self, units: Iterable[WorkUnit], deliver: Callable[[UnitResult], None]) -> None: ...


class LocalEngine:
    """Units one after another in this process; a model is loaded once per run of units."""

    name = "local"

    def __init__(
        self, worker: Worker | None = None, device: str | None = None, threads: int | None = None
    ):
        if worker is None:
            worker = Worker(load=None if device is None else _loader(device))
        self.worker = worker
        #: torch's CPU threads while running (None: torch's default, one per core). Two
        #: processes that each take every core slow each other down many times over (their
        #: threads spin waiting for each other), so each should take its share.
        self.threads = threads
        if device is not None:  # recorded with each run in the store
            self.name = f"local ({device})"

    def run(self, units: Iterable[WorkUnit], deliver: Callable[[UnitResult], None]) -> None:
        import torch

        before = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        try:
            for unit in units:
                deliver(self.worker.run(unit))
        finally:
            torch.set_num_threads(before)


def _loader(device: str) -> Callable[[str], Any]:
    def load_on_device(name: str, **options: Any):
        from .. import load

        return load(name, device=device, **options)

    return load_on_device


def get_engine(name: str, **options: Any) -> Engine:
    """``"local"`` (options: ``device``, ``threads``) or ``"ray"`` (options: ``address``,
    ``workers``, ``gpus_per_worker``, ``cpus_per_worker``)."""
    if name == "local":
        device = options.pop("device", None)
        threads = options.pop("threads", None)
        if options:
            raise InvalidInputError(
                f"the local engine takes no options ({', '.join(options)}); they are for "
                "--engine ray"
            )
        return LocalEngine(device=device, threads=threads)
    if name == "ray":
        from .ray_engine import RayEngine

        return RayEngine(**options)
    raise InvalidInputError(f"unknown engine {name!r}; choose local (default) or ray")
