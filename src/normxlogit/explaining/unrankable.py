"""Scores that evaluate would refuse, said where explanations are made: NaN or infinite
scores where the model read the tokens rank nothing, and a user who sees them only in a
table (or as NaN segments, which read like truncation) does not know why. One check for
every path (texts, contrast inputs, segments, generations, answers), on the finished
explanations, with evaluate's own test of them.

In half precision any method's (a built-in's too) is refused: the model's logits passed
their own check (:meth:`~normxlogit.model.adapter.ExplainableModel.forward`), so the
method's own arithmetic overflowed, and the fix is a wider precision. In float32 a
registered method's is warned about (its code is at fault)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..common.code_identity import is_builtin
from ..common.errors import NormXLogitWarning, UnsupportedModelError
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


#: the precisions whose overflow is the precision's, not the method's code
HALF_PRECISIONS = ("float16", "bfloat16")


def check_unrankable(method: AttributionMethod, made: Sequence[Any], hook: str) -> None:
    """Refuse or warn where explanations ``made`` hold scores evaluate refuses
    (:func:`~normxlogit.evaluation.context.unrankable`). Made in half precision (their
    ``settings["dtype"]``), they are refused in one line naming the method, the precision
    and the fix, whatever the method; else a registered method is warned about, naming
    ``hook``, the code of its that made them (``"attribute()"``, ``"combine()"``,
    ``"token_maps()"``). Built-in methods in float32 are not checked."""
    broken = next((item for item in made if unrankable(item)), None)
    if broken is None:
        return
    dtype = broken.settings.get("dtype")  # recorded where it is not float32
    if dtype in HALF_PRECISIONS:
        raise UnsupportedModelError(_half_precision_refusal(method, broken, dtype))
    if is_builtin(type(method)):
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


def _half_precision_refusal(method: AttributionMethod, item: Any, dtype: str) -> str:
    """One line: ``method`` overflowed ``dtype`` on ``item``'s text (a prompt for a
    generation), though the model's logits were finite; load the model wider."""
    text = repr(getattr(item, "text", None) or getattr(item, "prompt", ""))
    text = text if len(text) <= 60 else text[:57] + "..."
    wider = "float32" if dtype == "bfloat16" else "float32 or bfloat16"
    return (
        f"method {method.name!r} computes NaN or infinite scores in {dtype} for the text "
        f"{text} (the model's logits are finite: the method's own arithmetic overflows "
        f"{dtype}), which rank no tokens; load the model in {wider} (dtype=) to explain it "
        "with this method"
    )
