"""One progress sink for the whole package.

Work never draws anything: it reports how much is done to a plain callable
(:data:`Report`: units done so far; training also says the total). What shows it is the
caller's choice: a :class:`TerminalBar` on stderr (the command line, ``evaluate`` in a
terminal or a notebook), a page job's fraction, a test's list, or nothing. The bench's
grid view (:class:`~normxlogit.bench.progress.BenchProgress`) draws many bars at once
with the same columns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from .console import description_column, plain_console

#: what work calls as it goes: the units (texts, rows, steps) done so far
Report = Callable[[int], None]


def bar_columns(unit: str = "", *, elapsed: bool = False, width: int | None = None):
    """The columns every bar of the package shows: what it does (verbatim, never markup),
    the bar, the count done (``12/40 rows``, or a percentage without a unit), the elapsed
    time where asked, and the time left."""
    columns: list[ProgressColumn | str] = [description_column(), BarColumn(bar_width=width)]
    if unit:
        columns += [MofNCompleteColumn(), TextColumn(unit)]
    else:
        columns.append(TaskProgressColumn())
    if elapsed:
        columns += [TextColumn("elapsed"), TimeElapsedColumn()]
    columns += [TextColumn("eta"), TimeRemainingColumn()]
    return columns


class TerminalBar:
    """A rich bar on stderr, used as a context manager that yields itself: call it with
    the units done (``bar(12)``), or :meth:`update` the total and description as well.

    It draws nothing where no one would see it (stderr is not a terminal and this is not a
    notebook) unless ``force``, nor for fewer than ``threshold`` units: a handful of texts
    needs no bar.
    """

    def __init__(
        self,
        description: str,
        total: int | None = None,
        *,
        unit: str = "",
        threshold: int = 0,
        force: bool = False,
        elapsed: bool = False,
        transient: bool = True,
        console: Console | None = None,
    ) -> None:
        self.description, self.total = description, total
        self.console = console or plain_console(stderr=True)
        self.threshold, self.force = threshold, force
        self.columns = bar_columns(unit, elapsed=elapsed, width=24 if unit else None)
        self.transient = transient
        self._bar: Progress | None = None
        self._task: Any = None
        self._stopped = False

    @property
    def shown(self) -> bool:
        if self.total is not None and self.total < self.threshold:
            return False
        return self.force or self.console.is_terminal or self.console.is_jupyter

    def __enter__(self) -> TerminalBar:
        if self.total is not None:
            self.update(0)  # a known amount of work shows its bar from the start
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped = True
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, done: int) -> None:
        self.update(done)

    def update(self, done: int, total: int | None = None, description: str | None = None) -> None:
        """Show ``done`` units (of ``total`` where it is new) under ``description``."""
        if total is not None:
            self.total = total
        if description:
            self.description = description
        if self._stopped or not self.shown:
            return
        if self._bar is None:  # drawn on the first report, when the total is known
            self._bar = Progress(*self.columns, console=self.console, transient=self.transient)
            self._bar.start()
            self._task = self._bar.add_task(self.description, total=self.total)
        self._bar.update(self._task, completed=done, total=self.total, description=self.description)
