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
