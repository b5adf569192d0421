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
import re
from collections.abc import Sequence

from .errors import InvalidInputError
from .outputs import lone_item, type_phrase, zero_d_phrase

TargetSpec = None | int | str | Sequence[int | str]
ALL = "all"


TARGET_HELP = (
    "pass a label name or token string, an int (a label index; a vocabulary id for language "
    "models), 'all', or a list of these"
)


def check_target(target: object, what: str = "target") -> TargetSpec:
    """``target`` with numpy integers made ints, or an InvalidInputError if it means nothing
    (``what`` names it in the message: ``target`` or ``contrast``).

    Needs no model: the command line calls it before loading one.
    """
    helps = TARGET_HELP if what == "target" else CONTRAST_HELP
    target = lone_item(target)  # np.array(2), torch.tensor(2): the one value it holds
    if target is None or _is_item(target):
        return _item(target) if target is not None else None
    if isinstance(target, (list, tuple)):
        if not target:
            raise InvalidInputError(f"an empty {what} list; {helps}")
        given = target
        # a 0-d array or tensor item (list(torch.tensor([2, 0]))): the value it holds
        target = [lone_item(item) for item in target]
        for number, item in enumerate(target):
            if not _is_item(item):
                held = zero_d_phrase(given[number])  # named as given: a 0-d array holding None
                said = held or type_phrase(item)
                decode = (
                    " (decode it first: value.decode('utf-8'))"
                    if isinstance(item, (bytes, bytearray))
                    else ""
                )
                shown = " ".join(repr(item).split())
                raise InvalidInputError(
                    f"{what} list item [{number}] ({shown:.40}) is {said}{decode}; {helps}"
                )
        return [_item(item) for item in target]
    if hasattr(target, "shape") and hasattr(target, "__len__"):  # a Series, an ndarray
        kind = type(target).__name__
        said = f"a pandas {kind}" if kind in ("Series", "DataFrame") else type_phrase(target)
        plural = "targets" if what == "target" else "contrasts"
        if getattr(target, "size", None) == 1 or (hasattr(target, "numel") and target.numel() == 1):
            said += f" (for the one value it holds: {what}={what}.item())"
        raise InvalidInputError(
            f"{what} is {said}; {helps}. For one {what} per text, pass a list to "
            f"workflows.explain_texts(model, texts, methods, {plural}=list(...)) (e.g. "
            f'{plural}=list(df["label"]))'
        )
    shown = " ".join(repr(target).split())  # one line, whatever the repr
    raise InvalidInputError(f"{what} {shown:.60} is {type_phrase(target)}; {helps}")


CONTRAST_HELP = (
    "pass a label name or token string, an int (a label index; a vocabulary id for language "
    "models), or a list of these, one per target"
)


def check_contrast(contrast: object) -> TargetSpec:
    """A contrast ("why the target rather than this"): what :func:`check_target` accepts
    but ``"all"``, which names no single output to contrast with."""
    checked = check_target(contrast, "contrast")
    items = [checked] if isinstance(checked, (str, int)) else list(checked or [])
    if ALL in items:
        raise InvalidInputError(
            "contrast='all' names no single output; pass the label or token to contrast the "
            "target with (or a list, one per target)"
        )
    if "" in items:
        raise InvalidInputError(f"an empty contrast ''; {CONTRAST_HELP}")
    return checked


#: the rule for a contrast equal to its target, which every refusal and warning states
SAME_RULE = "the difference of an output with itself is zero at every token"


def check_pairing(
    target: TargetSpec, contrast: TargetSpec, where: str = "", same: bool = True
) -> None:
    """Refuse, without a model, a contrast that cannot go with ``target`` (both checked):
    a count that matches neither one for every target nor one per target, or (``same``)
    a contrast spelt as its own target (``target="negative", contrast="negative"``), which
    explains nothing (:data:`SAME_RULE`). The prediction and ``"all"`` are resolved later,
    against the model's outputs. ``where`` leads the message (a config's method, say)."""
    if contrast is None:
        return
    lead = f"{where}: " if where else ""
    versus = [contrast] if isinstance(contrast, (str, int)) else list(contrast)
    if target is None or target == ALL:
        wanted = None if target == ALL else [None]
    else:
        wanted = [target] if isinstance(target, (str, int)) else list(target)
    if wanted is not None and len(versus) not in (1, len(wanted)):
        described = "the prediction" if target is None else ", ".join(map(repr, wanted))
        raise InvalidInputError(
            f"{lead}{len(versus)} contrasts for {_count(len(wanted), 'target')} "
            f"({described}); give one contrast for every target, or one per target"
        )
    if wanted is None or target is None or not same:
        return
    pairs = zip(wanted, versus * len(wanted) if len(versus) == 1 else versus, strict=True)
    for mine, theirs in pairs:
        if type(mine) is type(theirs) and mine == theirs:  # aliases are the model's to find
            raise InvalidInputError(
                f"{lead}target {mine!r} is contrasted with itself ({theirs!r}): {SAME_RULE}, "
                "so there is nothing to explain; contrast it with another label or token"
            )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


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


def index_advice(index: int, role: str = "target") -> str:
    """How to give label index ``index`` as the ``role`` (target or contrast) in Python and
    on the command line: the contrast has its own option, which keeps the target. The
    bench and the page, which take names only, drop it (:func:`without_index_advice`)."""
    flag = "--contrast-id" if role == "contrast" else "--label-id"
    return f"(or the number {index}: an int in Python, {flag} {index} on the command line)"


def token_id_advice(role: str = "target", what: str = "its id") -> str:
    """How to give a vocabulary id as the ``role`` in Python and on the command line. The
    bench and the page, whose boxes and keys take text only (a number there is a word),
    drop it (:func:`without_index_advice`)."""
    flag = "--contrast-id" if role == "contrast" else "--label-id"
    return f"(or {what}: an int in Python, {flag} ID on the command line)"


#: :func:`index_advice` and :func:`token_id_advice` in a message
_INDEX_ADVICE = re.compile(
    r" \(or (?:the number \d+|its id|a token id): an int in Python, --(?:label|contrast)-id "
    r"(?:\d+|ID) on the command line\)"
)


def without_index_advice(message: str) -> str:
    """``message`` without :func:`index_advice` or :func:`token_id_advice`: for the bench
    and the page, whose targets and contrasts are names only (the name the message gives
    is their fix)."""
    return _INDEX_ADVICE.sub("", message)
