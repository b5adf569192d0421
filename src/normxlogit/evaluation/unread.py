"""Protocol settings the chosen metrics do not read: said, so a setting that changes no
number (``score_threshold`` under ``discretize="top_k"``, ``routing`` with token F1 alone)
is not mistaken for one that does.

A setting counts when it differs from its default (a default changes nothing, so it is
never named). ``seed`` is left out: it seeds the methods too. Each metric says what it
reads (``protocol_settings``, less ``keyed_at_defaults``, which is how a bench store keys
its values), so the warning and the store agree on what a metric depends on.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import fields
from typing import Any

from ..common.errors import NormXLogitWarning
from .protocol import DISCRETIZATIONS, Protocol
from .registry import Metric, list_metrics, metric_class

#: settings never named: ``seed`` also seeds the methods (``--seed``, a bench's seeds)
NOT_NAMED = ("seed",)
#: the words every such warning starts with
UNREAD_START = "protocol settings that none of the chosen metrics read"

_CHECKED: ContextVar[bool] = ContextVar("protocol_settings_checked", default=False)


@contextmanager
def settings_checked() -> Iterator[None]:
    """Within it, ``evaluate`` does not warn about unread settings: the caller checked
    them against every metric it will ask for (a bench evaluates a few at a time)."""
    token = _CHECKED.set(True)
    try:
        yield
    finally:
        _CHECKED.reset(token)


def metric_reads(cls: type[Metric], settings: Mapping[str, Any]) -> set[str]:
    """The settings a metric's values depend on under ``settings`` (``Protocol.to_dict``)."""
    every = {f.name for f in fields(Protocol)}
    read = every if cls.protocol_settings is None else set(cls.protocol_settings)
    return read - set(cls.keyed_at_defaults(settings))


def changed_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of ``settings`` that differ from their defaults (``seed`` left out)."""
    defaults = Protocol().to_dict()
    full = Protocol().with_options(**settings).to_dict()
    return {
        name: value
        for name, value in full.items()
        if name in settings and value != defaults[name] and name not in NOT_NAMED
    }


def _why(name: str, settings: Mapping[str, Any], classes: Sequence[type[Metric]]) -> str:
    """Why no chosen metric reads ``name``: the ``discretize`` it needs, or the metrics
    that would read it."""
    for cls in classes:
        if name not in (cls.protocol_settings or ()):
            continue
        needs = [
            d for d in DISCRETIZATIONS if name in metric_reads(cls, {**settings, "discretize": d})
        ]
        if needs:
            return f"{name} is read only with " + " or ".join(f"discretize={d}" for d in needs)
    readers = [
        n
        for n in list_metrics()
        if (p := metric_class(n).protocol_settings) is not None and name in p
    ]
    if not readers:
        return f"{name} is read by no metric of evaluate (it sets the sanity checks)"
    shown = ", ".join(readers[:6]) + (", ..." if len(readers) > 6 else "")
    return f"{name} is read only by {shown}"


def unread_message(settings: Mapping[str, Any], metrics: Sequence[str]) -> str | None:
    """The warning naming each setting of ``settings`` changed from its default that none
    of ``metrics`` reads, and why (None: every one is read)."""
    changed = changed_settings(settings)
    if not changed:
        return None
    full = Protocol().with_options(**settings).to_dict()
    classes = [metric_class(name) for name in metrics]
    read = set().union(*(metric_reads(cls, full) for cls in classes))
    unread = [name for name in changed if name not in read]
    if not unread:
        return None
    said = "; ".join(
        f"Protocol({name}={changed[name]!r}): {_why(name, full, classes)}" for name in unread
    )
    return f"{UNREAD_START} ({', '.join(metrics)}), so they change no value: {said}"


def warn_unread(settings: Mapping[str, Any], metrics: Sequence[str], stacklevel: int = 3) -> None:
    """Warn once about the settings none of ``metrics`` reads (see :func:`unread_message`),
    unless the caller checked them (:func:`settings_checked`)."""
    if _CHECKED.get():
        return
    if (message := unread_message(settings, metrics)) is not None:
        warnings.warn(message, NormXLogitWarning, stacklevel=stacklevel)
