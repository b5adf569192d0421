"""Progress of a bench run: a bar per grid cell and one for the whole grid, with ETAs."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.text import Text

from ..common.console import plain_console
from ..common.progress import bar_columns


def _key(cell: Any) -> Any:
    """A cell's own bar: two experiments on one model and data set share a store cell
    (``cell.key``) yet each has its plan, its label and its total."""
    experiment = getattr(cell, "experiment", None)
    return (getattr(experiment, "name", None), cell.key)


class BenchProgress:
    """Rich bars: ``grid`` counts every instance of every cell; each cell its own.

    Cells already complete in the store start full; a skipped cell (method not
    applicable to the model) says so. The ETA comes from the work done in this run.
    Where the output is not a terminal (a log file, ``nohup``), bars cannot redraw: a
    plain line is printed instead whenever a cell finishes and at most every
    ``log_every`` seconds.
    """

    def __init__(self, console: Console | None = None, log_every: float = 60.0):
        self.console = console or plain_console(stderr=True)
        self.log_every = log_every
        self._logged = 0.0
        self._started = 0.0
        self.progress = Progress(
            *bar_columns("instances", elapsed=True),
            console=self.console,
            transient=False,
        )
        self._tasks: dict[Any, Any] = {}
        self._grid = None

    def start(self, cells: Sequence[Any]) -> None:
        self._started = time.monotonic()
        if self.console.is_terminal:
            self.progress.start()
        total = sum(cell.total for cell in cells)
        done = sum(cell.done for cell in cells if not cell.skipped)
        self._grid = self.progress.add_task(
            f"grid ({len(cells)} cells)", total=total, completed=done
        )
        for cell in cells:
            if cell.skipped:
                self.progress.add_task(f"{cell.label}: N/A", total=1, completed=1)
                self.progress.advance(self._grid, cell.total)
                continue
            self._tasks[_key(cell)] = self.progress.add_task(
                cell.label, total=cell.total, completed=cell.done
            )

    def advance(self, cell: Any, count: int) -> None:
        task = self._tasks.get(_key(cell))
        if cell.skipped and task is not None:
            remaining = self.progress.tasks[task].remaining or 0
            self.progress.update(task, description=f"{cell.label}: N/A")
            self.progress.advance(task, remaining)
            self.progress.advance(self._grid, remaining)
            self._tasks.pop(_key(cell))
            return
        if task is not None:
            self.progress.advance(task, count)
        self.progress.advance(self._grid, count)
        if not self.console.is_terminal:
            self._log(cell, task)

    def _log(self, cell: Any, task: Any) -> None:
        """A plain progress line for logs: the cell, the grid and an ETA."""
        now = time.monotonic()
        finished = task is not None and self.progress.tasks[task].finished
        if not finished and now - self._logged < self.log_every:
            return
        self._logged = now
        grid = self.progress.tasks[self._grid]
        own = self.progress.tasks[task] if task is not None else None
        remaining = grid.time_remaining
        eta = f", eta {remaining / 60:.0f} min" if remaining else ""
        cell_part = f"{cell.label} {own.completed:.0f}/{own.total:.0f}; " if own else ""
        self.console.print(
            Text(
                f"{cell_part}grid {grid.completed:.0f}/{grid.total:.0f} "
                f"after {(now - self._started) / 60:.1f} min{eta}"
            ),
            soft_wrap=True,
        )

    def finish(self) -> None:
        if self.console.is_terminal:
            self.progress.stop()
