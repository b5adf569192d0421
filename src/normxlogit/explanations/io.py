"""Explanations in files: one JSON object for one explanation, a list for several, any
kind among them (a saved dict's ``"kind"`` says which class reads it back)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..common.counts import whole_number
from ..common.errors import InvalidFileError, InvalidInputError
from ..common.input_paths import check_saved_file, json_problem, read_text, refuse_binary_file
from ..common.outputs import check_json_name, json_text, type_phrase, write_atomically
from ..common.saved_kinds import (
    EXPLANATION_LOADER,
    EXPLANATIONS_LOADER,
    data_file_refusal,
    other_loader_hint,
    table_refusal,
)
from .base import ExplanationBase
from .explanation import Explanation
from .generation import GenerationExplanation

#: saved "kind" -> the class that reads it (a dict without "kind" is a text explanation)
KINDS: dict[str | None, type[ExplanationBase]] = {
    None: Explanation,
    GenerationExplanation.KIND: GenerationExplanation,
}


def save_explanations(
    explanations: ExplanationBase | Iterable[ExplanationBase], path: str | os.PathLike
) -> Path:
    """Save to JSON (one object for one explanation, else a list); generation explanations
    (:class:`~normxlogit.generation.GenerationExplanation`) too. One explanation may be
    given alone, as ``explanation.save`` does; either way it loads back as a list of one.
    A name not ending in .json is refused: the file would be JSON whatever its suffix."""
    listed = _listed(explanations)
    check_json_name(
        path,
        "explanations are",
        "explanations.json",
        {".html": "to_html() writes the page", ".htm": "to_html() writes the page"},
    )
    data = [e.to_dict() for e in listed]
    return write_atomically(path, json_text(data[0] if len(data) == 1 else data))


#: both names of the loader of explanations, as a refusal of another writer's table says
_EITHER_LOADER = f"{EXPLANATION_LOADER} / {EXPLANATIONS_LOADER.removeprefix('normxlogit.')}"


def load_explanations(path: str | os.PathLike) -> list[Any]:
    """Explanations saved by :func:`save_explanations` or :meth:`Explanation.save`
    (generation explanations come back as
    :class:`~normxlogit.generation.GenerationExplanation`).

    A file that is not UTF-8, not complete JSON (cut off), not explanations (another
    program's JSON), or whose scores do not fit its tokens, targets or layers is refused
    with an :class:`~normxlogit.common.errors.InvalidFileError` naming the file and the problem.
    """
    path = check_saved_file(
        path, "a saved explanation", "pass the path of a file written by Explanation.save"
    )
    if (refusal := table_refusal(path, EXPLANATION_LOADER, _EITHER_LOADER)) is not None:
        raise InvalidFileError(refusal)  # a .csv / .parquet table: not JSON, nor cut short
    refuse_binary_file(  # a .png figure, a data .parquet: no encoding makes them text
        path,
        "a saved explanation",
        "pass the path of a file written by Explanation.save or save_explanations",
    )
    content = read_text(path)
    try:
        data = json.loads(content, parse_int=whole_number)
    except json.JSONDecodeError as error:
        if (refusal := data_file_refusal(path, "a saved explanation")) is not None:
            raise InvalidFileError(refusal) from None  # e.tsv: not an explanation cut short
        if error.pos >= len(content.rstrip()):
            reason = "it ends in the middle (the file is cut off)"
        else:
            reason = json_problem(error)
        raise InvalidFileError(
            f"{path} is not complete JSON: {reason}; write it again with Explanation.save "
            "or save_explanations"
        ) from None
    items = data if isinstance(data, list) else [data]
    if not items:
        raise InvalidFileError(f"{path} holds an empty list, no explanations")
    explanations = []
    for index, item in enumerate(items):
        try:
            explanations.append(load_payload(item))
        except InvalidInputError as error:
            where = f" (explanation {index})" if isinstance(data, list) else ""
            raise InvalidFileError(
                f"{path}{where}: {error}; load files written by Explanation.save or "
                "save_explanations"
            ) from None
    return explanations


def load_payload(item: Any) -> Any:
    """An explanation of any kind from its ``to_dict()``."""
    kind = item.get("kind") if isinstance(item, dict) else None
    if kind not in KINDS:
        hint = other_loader_hint(item, EXPLANATION_LOADER)
        if hint:  # another of normxlogit's files (a sanity result), not a newer kind
            raise InvalidInputError(f"not an explanation{hint}")
        raise InvalidInputError(
            f"an explanation of kind {kind!r}, which this version does not know (known: "
            f"{', '.join(k for k in KINDS if k)} and plain text explanations)"
        )
    return KINDS[kind].from_dict(item)


def _refuse_explained(value: Any) -> None:
    """An ``Explained`` (explain_texts' result) holds a list per method: point to one
    method's list or to all of them as one flat list, which a file holds; an ``Evaluated``
    (explain_and_evaluate's) holds its Explained as ``.explained``. One whose every method
    was skipped holds nothing to save: said so, pointing to ``.skipped``."""
    kind = type(value).__name__
    where = "explained"
    if kind == "Evaluated" and type(getattr(value, "explained", None)).__name__ == "Explained":
        value, where = value.explained, "evaluated.explained"
    groups = getattr(value, "explanations", None)
    if type(value).__name__ != "Explained" or not isinstance(groups, Mapping):
        return
    lead = "save_explanations takes what explain returned (one explanation or a list of them), " + (
        "not an Evaluated (what explain_and_evaluate returns)"
        if where != "explained"
        else "not an Explained (what explain_texts and explain_generations return)"
    )
    skipped = getattr(value, "skipped", None) or {}
    if not any(groups.values()) and skipped:
        raise InvalidInputError(
            f"{lead}; nor does it hold any explanation to save: every method was skipped "
            f"({', '.join(map(repr, skipped))}; {where}.skipped says why)"
        )
    names = ", ".join(repr(name) for name in list(groups)[:3]) + (
        ", ..." if len(groups) > 3 else ""
    )
    raise InvalidInputError(
        f"{lead}; save one method's list, {where}.explanations[name] (names: "
        f"{names or 'none'}), or all as one flat list: [e for items in "
        f"{where}.explanations.values() for e in items]"
    )


def _listed(explanations: Any) -> list[ExplanationBase]:
    """One explanation, or an iterable of them, as a list; anything else (a path given
    first, a dict of runs) refused in one line before a file is written."""
    if isinstance(explanations, ExplanationBase):
        return [explanations]
    _refuse_explained(explanations)
    if isinstance(explanations, Mapping):  # {method: [explanations]}, as Explained holds
        names = ", ".join(repr(name) for name in list(explanations)[:3]) + (
            ", ..." if len(explanations) > 3 else ""
        )
        values = list(explanations.values())
        if values and all(isinstance(v, ExplanationBase) for v in values):
            # {method: explanation}, one text's: its values are the list a file holds
            raise InvalidInputError(
                "save_explanations takes what explain returned (one explanation or a list "
                f"of them), not {type_phrase(explanations)} of single explanations (keys: "
                f"{names}); save them as one list: list(d.values())"
            )
        raise InvalidInputError(
            "save_explanations takes what explain returned (one explanation or a list of "
            f"them), not {type_phrase(explanations)}; save one entry's list, d[name] (keys: "
            f"{names or 'none'}), or all as one flat list: [e for items in d.values() for e "
            "in items]"
        )
    if isinstance(explanations, (str, bytes, dict)) or not isinstance(explanations, Iterable):
        given = type_phrase(explanations)
    else:
        items = list(explanations)
        # by index, not by value: a stray None must not read as "no stray found"
        stray = next((i for i, e in enumerate(items) if not isinstance(e, ExplanationBase)), None)
        if not items:
            given = "an empty list"
        elif stray is None:
            return items
        else:
            shown = type_phrase(items[stray])
            given = f"a list holding {shown} (item {stray})"
    raise InvalidInputError(
        f"save_explanations takes what explain returned (one explanation or a list of them), "
        f"not {given}"
    )
