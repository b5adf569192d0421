"""A contrast equal to its target: the one rule every entry point applies.

The difference of an output with itself is zero at every token, so "why A rather than A"
explains nothing, and an all-zero explanation would rank tokens as if it did. Hence:

- a contrast spelt as its own target (``target="negative", contrast="negative"``, or a
  list pairing a target with itself) is refused before any work;
- ``target="all"`` with a contrast explains every *other* label against it: the
  contrast's own label is left out of the columns;
- where the target is each text's own (the prediction, a bench's gold label), a text
  whose target is its contrast is **flagged**: its scores are NaN and
  ``settings["contrast_is_target"]`` is True, and a warning names how many and which.
  When that is every text of the call (one text, say), the call is refused instead;
- a generation's step whose token is the contrast's own is flagged the same way (NaN
  scores, ``settings["contrast_is_target_steps"]``, a warning naming the steps); a
  contrast equal to the continuation at every step explained is refused;
- ``evaluate`` leaves flagged explanations out (a warning says which), the bench leaves
  them out of its metrics and says how many, and the page refuses (it explains one text).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..common.numbering import text_names
from ..common.targets import SAME_RULE

#: the setting that marks an explanation whose target is its own contrast (NaN scores)
CONTRAST_IS_TARGET = "contrast_is_target"

_FLAG_ONLY: ContextVar[bool] = ContextVar("flag_only", default=False)


@contextmanager
def flagging_contrast_is_target() -> Iterator[None]:
    """Inside, explaining marks the texts (and steps) whose target is their contrast and
    neither refuses nor warns: for a caller that explains its input a batch at a time and
    reports once, over all of it."""
    token = _FLAG_ONLY.set(True)
    try:
        yield
    finally:
        _FLAG_ONLY.reset(token)


def flag_only() -> bool:
    """Whether explaining runs inside :func:`flagging_contrast_is_target`."""
    return _FLAG_ONLY.get()


def contrast_is_target_refusal(explanations: Sequence[Any], predicted: bool) -> str:
    """Why explanations whose every target is its contrast are refused (``predicted``:
    the target was the prediction), and what to do instead."""
    first = explanations[0]
    pairs = [c for t, c in zip(first.targets, first.contrasts, strict=True) if t == c]
    shown = first.text_of(pairs[0]) if pairs else "?"
    if predicted:
        whom = "this text" if len(explanations) == 1 else f"each of the {len(explanations)} texts"
        return (
            f"the model predicts {shown!r} for {whom}, and that is the contrast: {SAME_RULE}, "
            "so there is nothing to explain; pass another contrast, or the target to explain "
            "against it (target=...)"
        )
    return (
        f"target {shown!r} is contrasted with itself: {SAME_RULE}, so there is nothing to "
        "explain; contrast it with another label or token"
    )


def contrast_is_target_warning(
    count: int, flagged: Sequence[int], where: str = "", explanations: Sequence[Any] = ()
) -> str:
    """The warning for ``flagged`` (text numbers) of ``count`` texts: how many, which, and
    what they hold (the outputs, from ``explanations``, all of them, when given). ``where``
    leads it (a method's name, say)."""
    shown = text_names(flagged)
    lead = f"{where}: " if where else ""
    outputs = (
        dict.fromkeys(
            explanations[i].text_of(c)
            for i in flagged
            for t, c in zip(explanations[i].targets, explanations[i].contrasts, strict=False)
            if t == c
        )
        if explanations
        else {}
    )
    named = f" ({', '.join(map(repr, outputs))})" if outputs else ""
    return (
        f"{lead}{len(flagged)} of {count} texts ({shown}) have their contrast as target{named}: "
        f"{SAME_RULE}, so they are not explained: their scores are NaN and "
        "settings['contrast_is_target'] is True (evaluate leaves them out); explain them "
        "for another target, or against another contrast"
    )
