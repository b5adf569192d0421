"""How messages name a text by its position: ``text 0`` in Python, a file's line in the CLI.

The library numbers texts as Python does (from 0, in the order given). A command that
read the texts from a file knows better: its messages should point at the file's lines.
It says so once, around its call, with :func:`texts_named`; every message that names a
text by position goes through :func:`text_name`, so no message counts differently from
another for the same text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

_NAMER: ContextVar[Callable[[int], str] | None] = ContextVar("text_namer", default=None)
#: what a count of texts calls them: a generation's steps are texts to ``evaluate``
_WORD: ContextVar[str] = ContextVar("text_word", default="text")


def text_name(index: int) -> str:
    """The words naming the text at ``index`` (0-based) in a message."""
    namer = _NAMER.get()
    return namer(int(index)) if namer is not None else f"text {int(index)}"


def texts_are_named() -> bool:
    """Whether a caller named the texts (:func:`texts_named`): else they are ``text i``."""
    return _NAMER.get() is not None


def text_names(indices: Sequence[int], limit: int = 10) -> str:
    """``text 0, text 3, ...``: the first ``limit`` texts named, an ellipsis for the rest."""
    shown = ", ".join(text_name(i) for i in list(indices)[:limit])
    return shown + (", ..." if len(indices) > limit else "")


def text_word(count: int = 2) -> str:
    """What a message counting ``count`` texts calls them: ``texts`` (``text`` for one),
    or what a caller counts as texts (:func:`texts_called`: a generation's steps)."""
    word = _WORD.get()
    return word if count == 1 else f"{word}s"


@contextmanager
def texts_called(word: str) -> Iterator[None]:
    """Inside, messages that count texts call them ``word`` (``"step"``: a caller that
    evaluates a generation's steps as texts), so "2 of 2 texts" is not read as prompts."""
    token = _WORD.set(word)
    try:
        yield
    finally:
        _WORD.reset(token)


@contextmanager
def texts_named(namer: Callable[[int], str] | None) -> Iterator[None]:
    """Inside, messages name the text at index ``i`` as ``namer(i)`` (a file's line);
    ``None`` leaves the naming as it is (a text given on the command line)."""
    if namer is None:
        yield
        return
    token = _NAMER.set(namer)
    try:
        yield
    finally:
        _NAMER.reset(token)


@contextmanager
def one_text_named(single: bool) -> Iterator[None]:
    """Inside, a text given alone (not in a list) is "the text" in messages, as there is
    no other to tell it from; unless a caller has named the texts already."""
    if not single or _NAMER.get() is not None:
        yield
        return
    with texts_named(lambda _: "the text"):
        yield


def regrouped(indices: Sequence[int]) -> Callable[[int], str]:
    """A namer for a group of the texts (``indices`` into them) explained in one call:
    the text at ``i`` in the group is named as the caller names ``indices[i]``."""
    outer = _NAMER.get()

    def name(index: int) -> str:
        whole = indices[index] if 0 <= index < len(indices) else index
        return outer(int(whole)) if outer is not None else f"text {int(whole)}"

    return name


def lines_of(source: str, lines: Sequence[int | None]) -> Callable[[int], str]:
    """A namer for texts read from ``source``, the text at ``i`` being on ``lines[i]``
    (1-based; ``None``: the line is unknown, the text is named by its position)."""

    def name(index: int) -> str:
        line = lines[index] if 0 <= index < len(lines) else None
        return f"{source} line {line}" if line is not None else f"text {index}"

    return name
