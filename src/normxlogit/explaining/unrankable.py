"""Scores of a user's method that evaluate would refuse, said where its explanations are
made: NaN or infinite scores where the model read the tokens rank nothing, and a user who
sees them only in a table (or as NaN segments, which read like truncation) does not know
why. One check for every path (texts, contrast inputs, segments, generations, answers),
on the finished explanations, with evaluate's own test of them."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..common.code_identity import is_builtin
from ..common.errors import NormXLogitWarning
from ..evaluation.context import unrankable
from ..methods.base import AttributionMethod

#: the methods already warned about in the outermost explain call (None: outside one)
_WARNED: ContextVar[set[str] | None] = ContextVar("normxlogit_warned_unrankable", default=None)


@contextmanager
def one_warning_per_method() -> Iterator[None]:
    """Within it (the outermost explain call), each method is warned about once, however
    many batches, target groups or contrast inputs explain again inside it."""
    if _WARNED.get() is not None:
        yield
        return
    token = _WARNED.set(set())
    try:
        yield
    finally:
        _WARNED.reset(token)


def warn_unrankable(method: AttributionMethod, made: Sequence[Any], hook: str) -> None:
    """Warn where a registered method's explanations ``made`` hold scores evaluate refuses
    (:func:`~normxlogit.evaluation.context.unrankable`), naming ``hook``, the code of its
    that made them (``"attribute()"``, ``"combine()"``, ``"token_maps()"``). Built-in
    methods are not checked."""
    if is_builtin(type(method)) or not any(unrankable(item) for item in made):
        return
    warned = _WARNED.get()
    if warned is not None:
        if method.name in warned:
            return
        warned.add(method.name)
    warnings.warn(
        f"the registered method {method.name!r} gave NaN or infinite scores, which rank no "
        f"tokens (evaluate refuses its explanations); fix its {hook}, or explain without it",
        NormXLogitWarning,
        stacklevel=3,
    )
