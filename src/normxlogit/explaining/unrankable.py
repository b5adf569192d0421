"""Scores that evaluate would refuse, said where explanations are made: NaN or infinite
scores where the model read the tokens rank nothing, and a user who sees them only in a
table (or as NaN segments, which read like truncation) does not know why. One check for
every path (texts, contrast inputs, segments, generations, answers), on the finished
explanations, with evaluate's own test of them.

In half precision any method's (a built-in's too) is refused: the model's logits passed
their own check (:meth:`~normxlogit.model.adapter.ExplainableModel.forward`), so the
method's own arithmetic overflowed, and the fix is a wider precision. In float32 a
registered method's is warned about (its code is at fault), and a built-in's too (an
option allowed it: ReAGent's ``on_no_convergence="nan"``), naming the options changed.

Scores that rank nothing although finite are said too: an explanation giving every token
the same score (value zeroing with a large ``min_distance``, a saturated model) looks like a
result on the page and in a table; evaluate flags such explanations as constant, and
explain says so once per method."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from ..common.code_identity import is_builtin
from ..common.errors import NormXLogitWarning, UnsupportedModelError
from ..evaluation.context import unrankable
from ..explanations.generation import GenerationExplanation
from ..methods.base import AttributionMethod, changed_options

#: inside :func:`rankless_said_elsewhere`: a built-in's scores that rank nothing are not
#: warned about here (a sanity check explains randomised models, whose constant or NaN
#: scores are its result, reported with its own reasons)
_SAID_ELSEWHERE: ContextVar[bool] = ContextVar("normxlogit_rankless_said", default=False)


@contextmanager
def rankless_said_elsewhere() -> Iterator[None]:
    """Within it, explain does not warn about a built-in method's constant or NaN scores
    (a registered method's NaN, and half precision's refusal, stay)."""
    token = _SAID_ELSEWHERE.set(True)
    try:
        yield
    finally:
        _SAID_ELSEWHERE.reset(token)


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
    ``"token_maps()"``), and a built-in one naming the options changed from its defaults.
    Finite explanations that score every token alike are warned about too."""
    broken = next((item for item in made if unrankable(item)), None)
    quiet = _SAID_ELSEWHERE.get() and is_builtin(type(method))
    if broken is None:
        if not quiet:
            _check_constant(method, made)
        return
    dtype = broken.settings.get("dtype")  # recorded where it is not float32
    if dtype in HALF_PRECISIONS:
        raise UnsupportedModelError(_half_precision_refusal(method, broken, dtype))
    if quiet or not _first_warning(method):
        return
    if is_builtin(type(method)):
        changed = _options_note(method)
        advice = (
            f"; explain with its default options (see `normxlogit methods {method.name}`)"
            if changed
            else ""
        )
        message = (
            f"method {method.name!r} gave NaN or infinite scores{changed}, which rank no "
            f"tokens (evaluate refuses these explanations){advice}"
        )
    else:
        message = (
            f"the registered method {method.name!r} gave NaN or infinite scores, which rank "
            f"no tokens (evaluate refuses its explanations); fix its {hook}, or explain "
            "without it"
        )
    warnings.warn(message, NormXLogitWarning, stacklevel=3)


def _first_warning(method: AttributionMethod) -> bool:
    """Whether ``method`` is not yet warned about in the outermost explain call (and is
    now marked as warned)."""
    warned = _WARNED.get()
    if warned is None:
        return True
    if method.name in warned:
        return False
    warned.add(method.name)
    return True


def _check_constant(method: AttributionMethod, made: Sequence[Any]) -> None:
    """Warn once per method where an explanation (a generation's step) scores every token
    it read alike."""
    flags = [flag for item in made for flag in _constant_flags(item)]
    constant = sum(flags)
    if not constant or not _first_warning(method):
        return
    word = "step" if any(isinstance(item, GenerationExplanation) for item in made) else "text"
    which = f"the {word}" if len(flags) == 1 else f"{constant} of {len(flags)} {word}s"
    warnings.warn(
        f"method {method.name!r} gave every token the same score on {which}"
        f"{_options_note(method)}, which ranks no tokens (evaluate flags these explanations "
        "as constant)",
        NormXLogitWarning,
        stacklevel=4,
    )


def _constant_flags(item: Any) -> list[bool]:
    """Per unit explained (the text, or each explained step of a generation): whether it
    gives all its non-special tokens, two or more, one score for some target at its last
    layer. Read from the stored scores (a step's are its row up to its prefix's end)."""
    if item.settings.get("layer") == 0 and item.layers is None:
        return [False]  # a map method's identity there: explain says so in its own words
    if not isinstance(item, GenerationExplanation):
        if item.contrast_is_target:
            return [False]
        return [_constant(item.scores_3d()[-1], item.special)]
    flags = []
    for index in item.steps_with_scores:
        end = item.prompt_length + index
        row = item.scores[index][-1] if item.has_layers else item.scores[index]
        flags.append(_constant(row[..., :end].T, item.special[:end]))
    return flags


def _constant(scores: np.ndarray, special: Sequence[bool]) -> bool:
    """Whether ``scores`` ``[T]`` or ``[T, K]`` are one value over the non-special tokens
    (two or more) in some column."""
    special = np.asarray(special or [False] * scores.shape[0], dtype=bool)
    read = scores[~special]
    if read.shape[0] < 2:
        return False
    return bool((read.max(axis=0) == read.min(axis=0)).any())


def _options_note(method: AttributionMethod) -> str:
    """`` (with min_distance=0.99)``: the options changed from their defaults, the likely
    cause of scores that rank nothing; empty when none is."""
    changed = changed_options(method, sorted(method.execution_options))
    return f" (with {', '.join(changed)})" if changed else ""


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
