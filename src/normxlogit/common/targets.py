"""How a target is written, checked without a model (or torch): the command line and a
bench config check it before anything loads.

- ``None``: the prediction (a request may write ``""`` or ``"prediction"``);
- a ``str`` is always a name (a label or a token), ``"4"`` included;
- an ``int`` is always a position (a label index, a vocabulary id);
- ``"all"``: every label;
- a list or tuple of names and positions, one score column each.

:mod:`normxlogit.model.targets` resolves a checked target against a model's outputs.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

from .errors import InvalidInputError

TargetSpec = None | int | str | Sequence[int | str]
ALL = "all"


TARGET_HELP = (
    "pass a label name or token string, an int (a label index; a vocabulary id for language "
    "models), 'all', or a list of these"
)


def check_target(target: object) -> TargetSpec:
    """``target`` with numpy integers made ints, or an InvalidInputError if it means nothing.

    Needs no model: the command line calls it before loading one.
    """
    if target is None or _is_item(target):
        return _item(target) if target is not None else None
    if isinstance(target, (list, tuple)):
        if not target:
            raise InvalidInputError(f"an empty target list; {TARGET_HELP}")
        for item in target:
            if not _is_item(item):
                raise InvalidInputError(
                    f"target list item {item!r} is a {type(item).__name__}; {TARGET_HELP}"
                )
        return [_item(item) for item in target]
    raise InvalidInputError(f"target {target!r} is a {type(target).__name__}; {TARGET_HELP}")


def check_contrast(contrast: object) -> TargetSpec:
    """A contrast ("why the target rather than this"): what :func:`check_target` accepts
    but ``"all"``, which names no single output to contrast with."""
    checked = check_target(contrast)
    items = [checked] if isinstance(checked, (str, int)) else list(checked or [])
    if ALL in items:
        raise InvalidInputError(
            "contrast='all' names no single output; pass the label or token to contrast the "
            "target with (or a list, one per target)"
        )
    return checked


def as_target(names: Sequence[str]) -> TargetSpec:
    """An explanation's target (or contrast) names as a target to explain them again: one
    name, several as a tuple (hashable, so explanations can be grouped by it), none as
    None."""
    if not names:
        return None
    return names[0] if len(names) == 1 else tuple(names)


#: what a request (the page's field, a bench config's ``target =``) writes for the prediction
PREDICTION = "prediction"


def requested_target(raw: object, where: str = "target") -> TargetSpec:
    """A target as a request writes it: ``None``, ``""`` or ``"prediction"`` for the
    prediction; otherwise what :func:`check_target` accepts (a blank name is refused)."""
    if raw is None or raw == "" or raw == PREDICTION:
        return None
    if isinstance(raw, str) and not raw.strip():
        raise InvalidInputError(f"{where} {raw!r} is blank; {TARGET_HELP} (or 'prediction')")
    return check_target(raw)


def _is_item(item: object) -> bool:
    if isinstance(item, bool):
        return False
    return isinstance(item, (str, numbers.Integral))


def _item(item: int | str) -> int | str:
    return item if isinstance(item, str) else int(item)
