"""Failures of a user's registered method or metric, told apart from the library's own.

An exception raised by a registered (not built-in) class's own code is the user's to fix:
it is said in one line naming the class and what to fix, chained to the original so a
Python user keeps the traceback. One raised where that code called back into normxlogit
(a forward pass, a cancelled page job) is the library's and keeps its own handling.

Registering a class guards every hook it overrides (:func:`guard_hooks`), so each call
site of ``attribute()``, ``plan()``, ``refusal()``... gets this without a wrapper of its own.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .code_identity import GUARDED, is_builtin
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


def guard_hooks(cls: type, kind: str, name_of: Callable[[Any], str]) -> None:
    """Guard the hooks a user's ``cls`` overrides: every public method (or classmethod) a
    built-in base declares that ``cls``, or an ancestor of its that is not built in,
    defines itself is wrapped where it is defined, so that its own failure is the one-line
    error of :func:`registered_failure` naming the hook ("fix its plan()"). ``name_of``
    reads the registered name off an instance or the class. Built-in classes, and hooks
    already guarded, are left as they are; the user's function stays ``__wrapped__``."""
    if is_builtin(cls):
        return
    declared = {
        name
        for base in cls.__mro__
        if is_builtin(base)
        for name, value in vars(base).items()
        if not name.startswith("_") and isinstance(value, types.FunctionType | classmethod)
    }
    for hook in sorted(declared):
        owner = next(base for base in cls.__mro__ if hook in vars(base))
        if not is_builtin(owner):
            guarded = _guarded(vars(owner)[hook], kind, name_of, f"{hook}()")
            if guarded is not None:
                setattr(owner, hook, guarded)


def _guarded(value: Any, kind: str, name_of: Callable[[Any], str], fix: str) -> Any:
    """``value`` (a function or classmethod) wrapped by :func:`_guard`; None where it is
    something else or already guarded."""
    if isinstance(value, classmethod):
        inner = _guarded(value.__func__, kind, name_of, fix)
        return None if inner is None else classmethod(inner)
    if not isinstance(value, types.FunctionType) or getattr(value, GUARDED, False):
        return None
    return _guard(value, kind, name_of, fix)


def _guard(function: Callable, kind: str, name_of: Callable[[Any], str], fix: str) -> Callable:
    """``function`` raising its own failure as :func:`registered_failure`'s error; an
    iterator it returns (a generator's rows) is read under the same guard, since its code
    runs only as it is read."""

    def refuse(owner: Any, error: Exception) -> None:
        cls = owner if isinstance(owner, type) else type(owner)
        failure = registered_failure(kind, name_of(owner), cls, fix, error)
        if failure is not None:
            raise failure from error

    def read(owner: Any, items: Iterator) -> Iterator:
        try:
            yield from items
        except Exception as error:
            refuse(owner, error)
            raise

    @functools.wraps(function)
    def guarded(owner: Any, /, *args: Any, **kwargs: Any) -> Any:
        try:
            result = function(owner, *args, **kwargs)
        except Exception as error:
            refuse(owner, error)
            raise
        return read(owner, result) if isinstance(result, Iterator) else result

    setattr(guarded, GUARDED, True)
    return guarded
