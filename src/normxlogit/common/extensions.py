"""Failures of a user's registered method or metric, told apart from the library's own.

An exception raised by a registered (not built-in) class's own code is the user's to fix:
it is said in one line naming the class and what to fix, chained to the original so a
Python user keeps the traceback. One raised where that code called back into normxlogit
(a forward pass, a cancelled page job) is the library's and keeps its own handling.
"""

from __future__ import annotations

from pathlib import Path

from .code_identity import is_builtin
from .errors import InvalidInputError, NormXLogitError

#: normxlogit's own source folder: a frame there is the library's code
_PACKAGE = str(Path(__file__).resolve().parents[1])


def registered_failure(
    kind: str, name: str, cls: type, fix: str, error: Exception
) -> InvalidInputError | None:
    """The one-line error for ``error``, raised by the registered ``kind`` ("method",
    "metric") ``name`` (class ``cls``) in its own code; None where it is no such failure
    (a built-in class, an error of the library's, or one raised inside normxlogit)."""
    if isinstance(error, NormXLogitError) or is_builtin(cls) or not _raised_outside(error):
        return None
    said = " ".join(str(error).split())
    said = said if len(said) <= 200 else said[:200] + "..."
    return InvalidInputError(
        f"the registered {kind} {name!r} failed ({type(error).__name__}"
        f"{': ' + said if said else ''}); fix its {fix}"
    )


def _raised_outside(error: BaseException) -> bool:
    """Whether ``error`` was raised outside normxlogit's code: past the library's frames
    that called the extension, no frame of the library's follows."""
    frames = []
    trace = error.__traceback__
    while trace is not None:
        frames.append(trace.tb_frame.f_code.co_filename.startswith(_PACKAGE))
        trace = trace.tb_next
    while frames and frames[0]:  # the library's frames that called the extension
        frames.pop(0)
    return bool(frames) and not any(frames)
