"""``normxlogit metrics``, ``models`` and ``methods``: what the registries hold."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from .app import app, out
from .helpers import friendly, once_each


@app.command(cls=once_each())
@friendly
def metrics() -> None:
    """List the evaluation metrics and how to read them."""
    from ..evaluation import list_metrics, metric_info
    from ..evaluation.registry import metric_class

    table = Table("name", "description", "better", "range", "curve over", "summary")
    for name in list_metrics():
        info = metric_info(name)
        low, high = info.value_range
        shown = f"[{low:g}, {high:g}]"
        contrastive = metric_class(name).ranged_info(True).value_range
        if tuple(contrastive) != tuple(info.value_range):  # p(target) - p(contrast) read
            shown += f" (contrastive: [{contrastive[0]:g}, {contrastive[1]:g}])"
        table.add_row(
            name,
            info.description,
            {True: "higher", False: "lower", None: "-"}[info.higher_is_better],
            shown,
            info.axis or "-",
            info.summary,
        )
    out.print(table)


@app.command(cls=once_each())
@friendly
def models() -> None:
    """List the built-in models."""
    from ..builtin import BUILTIN_MODELS, DEFAULT_MODEL

    table = Table("name", "task", "description", "weights from")
    for entry in BUILTIN_MODELS.values():
        name = entry.name + (" (default)" if entry.name == DEFAULT_MODEL else "")
        table.add_row(name, entry.task, entry.description, f"pip: {entry.package}")
    out.print(table)


#: capability flags of a method: the attribute, its letter in the list, its words
METHOD_FLAGS = (
    ("per_label", "L", "a score per label (target)"),
    ("signed", "S", "signed scores (for and against)"),
    ("supports_layers", "Y", "per-layer scores (--layer all)"),
    ("needs_gradients", "G", "uses gradients"),
    ("single_forward", "1", "one forward pass"),
)


@app.command(cls=once_each())
@friendly
def methods(
    name: Annotated[
        str | None,
        typer.Argument(help="A method: show its description, capabilities and options."),
    ] = None,
) -> None:
    """List the attribution methods (one line each), or describe one in full."""
    from ..methods import list_methods, method_class

    if name is not None:
        _describe_method(method_class(name))
        return
    names = list_methods()
    width = max(len(method) for method in names)
    for method in names:
        cls = method_class(method)
        flags = "".join(letter if getattr(cls, attr) else "." for attr, letter, _ in METHOD_FLAGS)
        line = f"{method:<{width}}  {flags}  {cls.description}"
        # one line per method on a terminal, cut to fit; whole lines into pipes and files
        if out.is_terminal:
            out.print(line, no_wrap=True, overflow="ellipsis", crop=True)
        else:
            out.print(line, soft_wrap=True)
    legend = ", ".join(f"{letter} {words}" for _, letter, words in METHOD_FLAGS)
    out.print(f"flags: {legend}.")
    out.print("Options and more: normxlogit methods NAME")


def _plain_doc(text: str) -> str:
    """A docstring paragraph without reST roles and literals (``x``, :mod:`~a.b`)."""
    import re

    text = re.sub(r":\w+:`~?(?:[\w.]+\.)?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def _describe_method(cls: Any) -> None:
    """Everything about one method: what it computes, can do and accepts."""
    import dataclasses
    import inspect

    from ..methods.presets import presets_for

    out.print(f"{cls.name}: {cls.description}")
    doc = inspect.getdoc(cls) or ""
    if doc:
        out.print()
        out.print(_plain_doc(doc.split("\n\n")[0]))
    out.print()
    for attr, _, words in METHOD_FLAGS:
        out.print(f"  {'yes' if getattr(cls, attr) else 'no ':3}  {words}")
    fields = dataclasses.fields(cls)
    out.print()
    out.print(
        "options (--option NAME=VALUE; Python: keyword arguments):" if fields else "no options"
    )
    for field in fields:
        kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
        out.print(f"  {field.name} = {field.default!r}  ({kind})")
    for preset, options in presets_for(cls.name).items():
        values = ", ".join(f"{k}={v!r}" for k, v in options.items())
        out.print(f"preset {preset!r}: {values}")
