"""How far an evaluation is, in rows through the model: each chunk's planned work, and
its report to a terminal bar, a callable or nowhere."""

from __future__ import annotations

from collections.abc import Callable

from ..common.progress import TerminalBar
from .protocol import Protocol


def planned_work(scorers: list, protocol: Protocol, methods: int, texts: int) -> list[int]:
    """The work of one chunk in rows through the model: its clean pass, then each metric's
    perturbed rows (rows a metric shares with an earlier one count once; a metric that
    cannot say counts one row per explanation)."""
    steps, seen = [texts], set()
    for scorer in scorers:
        planned = scorer.planned_rows(protocol, methods, texts)
        if planned is None:
            steps.append(methods * texts)
            continue
        steps.append(sum(rows for key, rows in planned.items() if key not in seen))
        seen.update(planned)
    return steps


class RowProgress:
    """Counts the work done in rows through the model and reports it: to a terminal bar,
    to a callable (in texts), or nowhere. A step's rows are counted as its forward passes
    run, never past the step's planned end, so the count only rises and ends at the total."""

    def __init__(self, progress: bool | Callable[[float], None] | None, total: int, texts: int):
        self.total, self.texts = max(total, 1), texts
        self.done = self.end = 0
        self.callback: Callable[[float], None] | None = None
        self.bar: TerminalBar | None = None
        if callable(progress):
            self.callback = progress
        elif progress is None or progress is True:
            self.bar = TerminalBar("evaluating", self.total, unit="rows", force=progress is True)

    def __enter__(self) -> RowProgress:
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def step(self, weight: int, description: str) -> None:
        """Close the current step (its planned rows are done) and open the next."""
        self._report(self.end)
        self.end = self.done + weight
        if self.bar is not None and description:
            self.bar.update(self.done, description=description)

    def advance(self, rows: int) -> None:
        self._report(min(self.done + rows, self.end))

    def _report(self, done: int) -> None:
        if done == self.done:
            return
        self.done = done
        if self.callback is not None:
            self.callback(self.texts * done / self.total)
        elif self.bar is not None:
            self.bar(done)
