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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .code_identity import GUARDED, is_builtin
from .errors import InvalidInputError, NormXLogitError
from .fields import shown_value

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


#: what a hook returns, for its guard to check: whether a result is one, and what it is
#: (said in the refusal of another)
Returns = tuple[Callable[[Any], bool], str]


def guard_hooks(
    cls: type,
    kind: str,
    name_of: Callable[[Any], str],
    returns: Mapping[str, Returns] | None = None,
) -> None:
    """Guard the hooks a user's ``cls`` overrides: every public method (classmethod or
    staticmethod) a built-in base declares that ``cls``, or an ancestor of its that is not
    built in, defines itself is wrapped where it is defined, so that its own failure is
    the one-line error of :func:`registered_failure` naming the hook ("fix its plan()"),
    and a result ``returns`` says it is not is refused in one line naming the hook and
    what it returns. ``name_of`` reads the registered name off an instance or the class
    (``cls``'s where the call gives neither: a staticmethod). A plain function written
    where the base has a classmethod or staticmethod (called on the class) is refused
    here. Built-in classes, and hooks already guarded, are left as they are; the user's
    function stays ``__wrapped__``."""
    if is_builtin(cls):
        return
    declared = {
        name: value
        for base in reversed(cls.__mro__)
        if is_builtin(base)
        for name, value in vars(base).items()
        if not name.startswith("_") and isinstance(value, _HOOK_FORMS)
    }
    overridden = {}
    for hook in sorted(declared):
        home = next(base for base in cls.__mro__ if hook in vars(base))
        if not is_builtin(home):
            overridden[hook] = home
            _check_form(cls, kind, name_of, hook, vars(home)[hook], declared[hook])
    for hook, home in overridden.items():
        guard = _Guard(kind, name_of, hook, home, cls, (returns or {}).get(hook))
        guarded = guard.wrapped(vars(home)[hook])
        if guarded is not None:
            setattr(home, hook, guarded)


#: what a built-in base declares as a hook
_HOOK_FORMS = (types.FunctionType, classmethod, staticmethod)


def _check_form(
    cls: type, kind: str, name_of: Callable[[Any], str], hook: str, value: Any, declared: Any
) -> None:
    """Refuse a plain function overriding a hook the built-in base calls on the class (a
    classmethod or staticmethod): called there, it would get the wrong arguments."""
    if isinstance(value, types.FunctionType) and isinstance(declared, classmethod | staticmethod):
        form = type(declared).__name__
        base = next(b.__name__ for b in cls.__mro__ if is_builtin(b) and hook in vars(b))
        raise InvalidInputError(
            f"{kind} {_safe_name(name_of, cls)!r}: define {hook} as a @{form}, as {base} "
            "does (it is called on the class)"
        )


def _safe_name(name_of: Callable[[Any], str], owner: Any) -> str:
    """``name_of(owner)``, or the class's name where that fails: a guard never fails
    itself."""
    try:
        return str(name_of(owner))
    except Exception:
        return owner.__name__ if isinstance(owner, type) else type(owner).__name__


@dataclass(frozen=True)
class _Guard:
    """What one guarded hook's failures name: the registered ``kind`` and name, the hook,
    and what it returns (``returns``); ``home`` defines it, ``registered`` is the class
    being registered, named where the call gives no instance or subclass of ``home``."""

    kind: str
    name_of: Callable[[Any], str]
    hook: str
    home: type
    registered: type
    returns: Returns | None

    def wrapped(self, value: Any) -> Any:
        """``value`` (a function, classmethod or staticmethod) wrapped by :meth:`guard`;
        None where it is something else or already guarded."""
        if isinstance(value, classmethod | staticmethod):
            inner = value.__func__
            if getattr(inner, GUARDED, False):
                return None
            return type(value)(self.guard(inner, static=isinstance(value, staticmethod)))
        if not isinstance(value, types.FunctionType) or getattr(value, GUARDED, False):
            return None
        return self.guard(value, static=False)

    def guard(self, function: Callable, static: bool) -> Callable:
        """``function`` raising its own failure as :func:`registered_failure`'s error; an
        iterator it returns (a generator's rows) is read under the same guard, since its
        code runs only as it is read. ``static``: it takes no instance nor class."""

        def read(owner: Any, items: Iterator) -> Iterator:
            try:
                yield from items
            except Exception as error:
                self.refuse(owner, error)
                raise

        @functools.wraps(function)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            owner = self.registered if static or not args else args[0]
            try:
                result = function(*args, **kwargs)
            except Exception as error:
                self.refuse(owner, error)
                raise
            self.check(owner, result)
            return read(owner, result) if isinstance(result, Iterator) else result

        setattr(guarded, GUARDED, True)
        return guarded

    def owner(self, given: Any) -> Any:
        """``given`` where it is an instance or subclass of ``home``; else the class being
        registered (a plain function called on the class gets its first argument there)."""
        mine = isinstance(given, self.home) or (
            isinstance(given, type) and issubclass(given, self.home)
        )
        return given if mine else self.registered

    def refuse(self, given: Any, error: Exception) -> None:
        owner = self.owner(given)
        cls = owner if isinstance(owner, type) else type(owner)
        name = _safe_name(self.name_of, owner)
        failure = registered_failure(self.kind, name, cls, f"{self.hook}()", error)
        if failure is not None:
            raise failure from error

    def check(self, given: Any, result: Any) -> None:
        """Refuse a result that is not what the hook returns, naming it and the hook."""
        if self.returns is not None and not self.returns[0](result):
            name = _safe_name(self.name_of, self.owner(given))
            shown = "None" if result is None else shown_value(result)
            raise InvalidInputError(
                f"{self.kind} {name!r}: {self.hook}() returned {shown}; it returns "
                f"{self.returns[1]}"
            )


def is_reason(value: Any) -> bool:
    """A refusal hook's result: None (no refusal), or a non-blank string saying why."""
    return value is None or (isinstance(value, str) and bool(value.strip()))


#: what a refusal hook (``refusal()``, ``excess_draws()``...) returns, said when it does not
REASON = "None, or a string saying why"
