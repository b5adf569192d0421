"""Scale-out on Ray (``pip install 'normxlogit[ray]'``; ``normxlogit bench --engine ray``).

Units go to Ray actors, each a :class:`~normxlogit.bench.work.Worker` that keeps its model
loaded; a free actor is given a unit of the model it already holds when there is one, so
models are loaded once per actor, not once per unit. Results stream back through
``ray.wait`` as they finish, and the driver (the one process that owns the store) writes
each in its own transaction, exactly as the local engine's. Killed, the next run resumes
from the store like a local run. Where the cluster has GPUs each actor asks for one and
runs its model there.
"""

from __future__ import annotations

import os
import socket
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ..common.errors import InvalidInputError
from .work import UnitResult, Worker, WorkUnit


class _Actor:
    """The body of a Ray actor: a worker pinned to a device and a thread count."""

    def __init__(self, device: str | None, threads: int):
        import torch

        torch.set_num_threads(max(1, threads))
        self.device = device
        self.worker = Worker(load=self._load)

    def _load(self, name: str, **options):
        from .. import load

        return load(name, device=self.device, **options)

    def run(self, unit: WorkUnit) -> UnitResult:
        return self.worker.run(unit)


#: seconds to wait for a cluster's port before calling its address unreachable
CONNECT_TIMEOUT = 3.0
#: addresses ray.init reads as no host: find a running cluster, or start a new one
_NO_HOST = ("auto", "local", "")


def _host_port(address: str) -> tuple[str, int] | None:
    """``address``'s host and port (``ray://`` or not; None: it names no port, and Ray
    says what it makes of it)."""
    text = address.strip().removeprefix("ray://")
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _unreachable(host: str, port: int) -> str | None:
    """Why nothing can be reached at ``host:port`` (None: a connection opened)."""
    if port > 65535:
        return f"{port} is no port (0 to 65535)"
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT):
            return None
    except socket.gaierror:
        return f"the host {host!r} is not known"
    except OSError as error:  # refused, timed out, unreachable network
        return f"nothing answers at port {port} ({error.strerror or 'timed out'})"


def check_reachable(address: str | None, source: str) -> None:
    """Refuse a cluster address nothing answers at, in one line naming ``source`` (the
    flag or variable that gave it): ``ray.init`` would retry it without end."""
    if address is None or address.strip().lower() in _NO_HOST:
        return
    parsed = _host_port(address)
    if parsed is None or (problem := _unreachable(*parsed)) is None:
        return
    leave = "leave --address out" if source == "--address" else "unset $RAY_ADDRESS"
    raise InvalidInputError(
        f"Ray cluster address {address} ({source}): {problem}; start the cluster with "
        f"`ray start --head`, or {leave} to start a local one"
    )


class RayEngine:
    """Units over ``workers`` Ray actors (default: one per GPU, else one per CPU)."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        gpus_per_worker: float | None = None,
        cpus_per_worker: int | None = None,
    ):
        try:
            import ray  # noqa: F401
        except ImportError:
            raise InvalidInputError(
                "--engine ray needs Ray: pip install 'normxlogit[ray]' (or use the default "
                "local engine)"
            ) from None
        if address is not None:
            check_reachable(address, "--address")
        else:  # ray.init(address=None) joins the cluster $RAY_ADDRESS names
            check_reachable(os.environ.get("RAY_ADDRESS"), "$RAY_ADDRESS")
        self.address = address
        self.workers = workers
        self.gpus_per_worker = gpus_per_worker
        self.cpus_per_worker = cpus_per_worker

    def _start(self):
        import ray

        if not ray.is_initialized():
            ray.init(
                address=self.address,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        cpus = max(1, int(resources.get("CPU", 1)))
        use_gpu = gpus > 0 if self.gpus_per_worker is None else self.gpus_per_worker > 0
        gpu_share = (self.gpus_per_worker or 1.0) if use_gpu else 0.0
        workers = self.workers or (max(1, int(gpus / gpu_share)) if use_gpu else cpus)
        threads = self.cpus_per_worker or max(1, cpus // workers)
        actor = ray.remote(num_cpus=threads, num_gpus=gpu_share)(_Actor)
        device = "cuda" if use_gpu else None
        return [actor.remote(device, threads) for _ in range(workers)]

    def run(self, units: Iterable[WorkUnit], deliver: Callable[[UnitResult], None]) -> None:
        import ray

        actors = self._start()
        queue: deque[WorkUnit] = deque(units)
        holding: dict[int, str | None] = {index: None for index in range(len(actors))}
        running: dict[Any, int] = {}

        def give(index: int) -> None:
            if not queue:
                return
            # prefer a unit of the model this actor already holds
            model = holding[index]
            chosen = next((u for u in queue if u.model == model), None) if model else None
            if chosen is None:
                chosen = queue[0]
            queue.remove(chosen)
            holding[index] = chosen.model
            running[actors[index].run.remote(chosen)] = index

        try:
            for index in range(len(actors)):
                give(index)
            while running:
                finished, _ = ray.wait(list(running), num_returns=1)
                index = running.pop(finished[0])
                try:
                    result = ray.get(finished[0])
                except ray.exceptions.RayTaskError as error:
                    raise error.as_instanceof_cause() from None  # the worker's own error
                deliver(result)
                if result.skipped is not None:  # the cell's other units are not worth running
                    for unit in [u for u in queue if u.cell == result.unit.cell]:
                        queue.remove(unit)
                give(index)
        finally:
            for handle in actors:
                ray.kill(handle)
