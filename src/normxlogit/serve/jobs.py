"""Long work off the request path: each job runs in a worker thread, reports progress,
and can be cancelled.

The page starts a job (``POST``), then polls it; the server's event loop never waits
on a model, so the page stays responsive while a model loads or IG runs. Cancelling
sets a flag that the job's progress callbacks check: the work stops at its next
batch (a forward pass already under way finishes first). What the library warns about
during a job (texts left out of a metric, values that cannot tell methods apart) is kept
with the job, so the page shows it beside the result, not only in the server's log.
"""

from __future__ import annotations

import itertools
import threading
import time
import traceback
import warnings
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.errors import NormXLogitError, NormXLogitWarning
from .phrasing import for_the_page

#: finished jobs kept for the page to read (the oldest are forgotten first)
KEPT_JOBS = 64


class Cancelled(Exception):
    """Raised inside a job's work when the user cancelled it."""


@dataclass
class Job:
    """One piece of work and what the page may read of it."""

    id: str
    kind: str
    state: str = "queued"  # queued, running, done, failed, cancelled
    progress: float = 0.0  # 0..1
    message: str = ""
    result: Any = None
    error: str | None = None
    #: the library's warnings while the job ran, each once, in order
    warnings: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    def report(self, progress: float | None = None, message: str | None = None) -> None:
        """Move the progress bar; raises :class:`Cancelled` once the user cancelled."""
        if self._cancel.is_set():
            raise Cancelled
        if progress is not None:
            self.progress = min(max(float(progress), 0.0), 1.0)
        if message is not None:
            self.message = message

    def cancel(self) -> None:
        self._cancel.set()
        if self.state == "queued":
            self.state = "cancelled"

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def view(self) -> dict[str, Any]:
        """What ``GET /api/jobs/{id}`` answers."""
        return {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "progress": round(self.progress, 4),
            "message": self.message,
            "error": self.error,
            "warnings": list(self.warnings),
            "result": self.result if self.state == "done" else None,
            "seconds": round(time.time() - self.started, 2),
        }


class JobRunner:
    """Runs jobs on a small pool of threads (one by default: a CPU has no room for two
    models computing at once) and remembers the latest :data:`KEPT_JOBS`."""

    def __init__(self, workers: int = 1):
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="normxlogit-job")
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def submit(self, kind: str, work: Callable[[Job], Any]) -> Job:
        """Start ``work(job)``; its return value becomes the job's result."""
        job = Job(id=f"{next(self._ids)}", kind=kind)
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > KEPT_JOBS:
                self._jobs.popitem(last=False)
        self._pool.submit(self._run, job, work)
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def shutdown(self) -> None:
        with self._lock:
            for job in self._jobs.values():
                job.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)

    @staticmethod
    def _run(job: Job, work: Callable[[Job], Any]) -> None:
        if job.cancelled:
            job.state = "cancelled"
            return
        job.state = "running"
        try:
            result = _warnings_kept(job, work)
        except Cancelled:
            job.state, job.message = "cancelled", "cancelled"
            return
        except NormXLogitError as error:  # bad input: the message says what to change
            job.state, job.error = "failed", str(error)
            return
        except Exception as error:  # a fault of ours: a short message, the trace in the log
            traceback.print_exc()
            job.state = "failed"
            job.error = f"internal error ({type(error).__name__}): {error}"
            return
        if job.cancelled:  # cancelled during the last step: drop the result
            job.state, job.message = "cancelled", "cancelled"
            return
        job.result, job.progress, job.state = result, 1.0, "done"


def _warnings_kept(job: Job, work: Callable[[Job], Any]) -> Any:
    """``work(job)``, the library's warnings kept on the job (each once, every time: a
    page asks the same thing again and must be told again); others go on to the log.

    Recording warnings is process-wide in Python, so with several workers a warning
    could land on another job running at the same time; the server runs one by default.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = work(job)
        finally:
            job.warnings = list(
                dict.fromkeys(for_the_page(str(w.message)) for w in caught if _ours(w))
            )
    for other in caught:
        if not _ours(other):
            warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
    return result


def _ours(caught: warnings.WarningMessage) -> bool:
    """A warning of the library's (its category, or raised from its code)."""
    return issubclass(caught.category, NormXLogitWarning) or (
        issubclass(caught.category, UserWarning) and _PACKAGE in str(caught.filename)
    )


_PACKAGE = str(Path(__file__).resolve().parents[1])
