"""Text a user wrote (method labels, experiment names, titles) drawn in a matplotlib
figure as written.

matplotlib reads ``$...$`` in a text as math (a label ``IG $\\frac$`` fails to draw, a
balanced ``$x$`` turns italic) and leaves out of a legend every line whose label starts
with ``_``. Labels are data, not markup: the figures pass :data:`PLAIN_TEXT` with every
such text and build legends with :func:`plain_legend`. matplotlib is imported by the
caller; nothing here imports it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

#: held while a figure is drawn: matplotlib (its pyplot state, its mathtext parser that
#: lays out a log axis' ``2×10^-3`` ticks) is not thread-safe, and the page draws each
#: figure it is asked for in a worker thread, several at once
DRAWING = threading.RLock()

#: the Text properties of a text drawn as written: no ``$...$`` math (the numbers on a
#: log axis, matplotlib's own math, keep theirs)
PLAIN_TEXT: dict[str, Any] = {"parse_math": False}


def plain_legend(axis: Any, handles: Sequence[Any], labels: Sequence[str], **options: Any) -> Any:
    """``axis``'s legend naming each of ``handles`` by its label as written: given
    explicitly, so a label starting with ``_`` is listed (matplotlib skips those when it
    gathers labels itself), and not read as math."""
    legend = axis.legend(list(handles), list(labels), **options)
    for text in legend.get_texts():
        text.set_parse_math(False)
    return legend
