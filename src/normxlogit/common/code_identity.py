"""What a registered class's code is, as a short hash: the bench keys the stored results
of a method or metric that is not built in by it, so a class that changes (its source
edited, or registered again with ``replace=True``) is computed again, and an unchanged one
reuses what was stored. Built-in classes have none: their keys change only with their
``revision``."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import types
from typing import Any

#: how deep the closures of a class without source are followed (a function returning a
#: function returning one)
_DEPTH = 4
#: set on the wrapper registering puts around a user's hook
#: (:func:`~normxlogit.common.extensions.guard_hooks`); the user's own function is its
#: ``__wrapped__``, and is what the fingerprint reads
GUARDED = "__normxlogit_guarded__"


def own_function(value: Any) -> Any:
    """``value``, or the user's function a hook's guard wraps: wrapping a class's hooks
    when it is registered must not change its fingerprint."""
    return value.__wrapped__ if getattr(value, GUARDED, False) else value


def is_builtin(cls: type) -> bool:
    """Whether ``cls`` is one of normxlogit's own classes (defined in its package)."""
    module = getattr(cls, "__module__", None) or ""
    return module == "normxlogit" or module.startswith("normxlogit.")


def code_fingerprint(cls: type) -> str | None:
    """A short hash of what ``cls`` (and every class it derives from that is not built in)
    computes with: its module and qualified name, its source where Python finds it (else
    its functions' code, constants included), its attributes' values and what its
    functions close over (a class a function makes, with another value each time). None
    for a built-in class. What the class calls outside itself (a module's helper) is not
    part of it."""
    if is_builtin(cls):
        return None
    return _fingerprint(cls)


def forget_fingerprints() -> None:
    """Compute every fingerprint again from now on: called when a class is registered,
    since its attributes (or a base's) may have changed since it was last computed."""
    _fingerprint.cache_clear()


@functools.cache
def _fingerprint(cls: type) -> str:
    digest = hashlib.sha256()
    for base in cls.__mro__:
        if base is object or is_builtin(base):
            continue
        digest.update(f"{base.__module__}.{base.__qualname__}\0".encode())
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):  # made by type(), in a REPL, or by exec
            source = None
        if source is not None:
            digest.update(source.encode())
        for name, value in sorted(vars(base).items()):
            if name.startswith("__") and name not in ("__init__", "__call__"):
                continue
            digest.update(f"\0{name}=".encode())
            # with its source, a function's code is known: what it closes over is not
            # (a class a function makes, with another value each time)
            _feed(digest, value, _DEPTH, code=source is None)
    return digest.hexdigest()[:16]


def _feed(digest: Any, value: Any, depth: int, code: bool = True) -> None:
    """Add ``value`` to ``digest``: a function by its code (``code``), defaults and
    closure; a class by its name; a constant by its repr; anything else by its type."""
    if isinstance(value, staticmethod | classmethod):
        value = value.__func__
    elif isinstance(value, property):
        value = value.fget
    value = own_function(value)
    if isinstance(value, types.FunctionType):
        if code:
            _feed_code(digest, value.__code__)
        if depth <= 0:
            return
        for item in (*(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values()):
            _feed(digest, item, depth - 1)
        for cell in value.__closure__ or ():
            try:
                item = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            _feed(digest, item, depth - 1)
    elif isinstance(value, type):  # the class itself (super()'s cell), or another
        digest.update(f"{value.__module__}.{value.__qualname__}".encode())
    elif value is None or isinstance(value, bool | int | float | complex | str | bytes):
        digest.update(repr(value).encode())
    elif isinstance(value, tuple | list | frozenset | set) and depth > 0:
        digest.update(type(value).__name__.encode())
        for item in sorted(value, key=repr) if isinstance(value, set | frozenset) else value:
            _feed(digest, item, depth - 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type) and depth > 0:
        digest.update(type(value).__qualname__.encode())
        for field in dataclasses.fields(value):
            digest.update(f"\0{field.name}=".encode())
            _feed(digest, getattr(value, field.name), depth - 1)
    elif isinstance(value, dict) and depth > 0:
        for key, item in sorted(value.items(), key=lambda pair: repr(pair[0])):
            digest.update(repr(key).encode())
            _feed(digest, item, depth - 1)
    else:
        digest.update(type(value).__qualname__.encode())


def _feed_code(digest: Any, code: types.CodeType) -> None:
    """A code object's instructions, names and constants (nested code included); not
    its line numbers, which move when code above it does."""
    digest.update(code.co_code)
    digest.update(repr((code.co_names, code.co_varnames, code.co_freevars)).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _feed_code(digest, const)
        elif isinstance(const, frozenset):  # `x in {...}`: its order varies by process
            digest.update(repr(sorted(const, key=repr)).encode())
        else:
            digest.update(repr(const).encode())
