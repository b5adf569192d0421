"""Consoles and progress columns that never read text as rich markup.

Messages name user input (labels, methods, file names) and the project's own hints
(``hub:<dataset>[/<config>]``, ``pip install 'normxlogit[serve]'``); rich would parse any
``[...]`` in them as markup, garbling the text or raising ``MarkupError``. Everything the
package prints goes through these helpers: text is data, and styles are given as
``rich.text.Text`` spans, never as markup inside strings.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

from rich.console import Console
from rich.progress import TextColumn
from rich.text import Text


class GuardedStdout:
    """Standard output whose write failures (a full disk, ``> /dev/full``) become one
    clear :class:`~normxlogit.common.errors.OutputPathError`; a closed pipe (``| head``) stays
    a ``BrokenPipeError``, which ends a command quietly as Unix tools do."""

    def write(self, text: str) -> int:
        return self._guarded(lambda: sys.stdout.write(text))

    def flush(self) -> None:
        self._guarded(sys.stdout.flush)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding: the real stream's
        return getattr(sys.stdout, name)

    @staticmethod
    def _guarded(action):
        try:
            return action()
        except BrokenPipeError:
            raise
        except OSError as error:
            from .errors import OutputPathError

            _discard_stdout()  # what stays buffered must not fail again at exit
            reason = error.strerror or errno.errorcode.get(error.errno or 0, str(error))
            raise OutputPathError(
                f"cannot write to standard output: {reason}; free space there or pass --output FILE"
            ) from None


def _discard_stdout() -> None:
    """Point file descriptor 1 at /dev/null (Python's own advice for broken pipes)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real descriptor (a test's captured stream)
        pass


def plain_console(stderr: bool = False) -> Console:
    """A console whose strings are printed as they are: no markup, no highlighting; on
    stdout, a write that fails is one clear error (see :class:`GuardedStdout`)."""
    if stderr:
        return Console(stderr=True, markup=False, highlight=False)
    return Console(file=GuardedStdout(), markup=False, highlight=False)  # type: ignore[arg-type]


def labelled(label: str, style: str, message: object) -> Text:
    """``label`` in ``style``, then the message as plain text (``error: ...``)."""
    return Text.assemble((f"{label} ", style), str(message))


def description_column() -> TextColumn:
    """A progress column showing a task's description verbatim (labels are user input)."""
    return TextColumn("{task.description}", markup=False)
