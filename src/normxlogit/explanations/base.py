"""What every explanation kind shares: reading and checking its saved dict, JSON, files,
a tidy frame's last columns, and the renderings it hands to ``render``.

A kind (:class:`~normxlogit.explanations.explanation.Explanation` for a text,
:class:`~normxlogit.explanations.generation.GenerationExplanation` for a generation)
declares its ``KIND`` (the ``"kind"`` key of its saved dict; None for a text, whose files
predate the key), its ``REQUIRED`` and ``OPTIONAL`` fields, and how it is built from a
checked dict; :mod:`.io` reads any kind back from a file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
import pandas as pd

from ..common.errors import InvalidInputError
from ..common.fields import check_diagnostics, check_fields, check_scores
from ..common.outputs import json_text

Kind = TypeVar("Kind", bound="ExplanationBase")


class ExplanationBase:
    """The base of every explanation kind (a dataclass each)."""

    #: the "kind" key of the saved dict (None: a text explanation, saved without one)
    KIND: ClassVar[str | None] = None
    #: the fields a saved dict must have, and the ones it may have, with their checks
    REQUIRED: ClassVar[dict[str, Any]] = {}
    OPTIONAL: ClassVar[dict[str, Any]] = {}

    method: str
    model: str

    # ------------------------------------------------------------- subclasses
    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def _missing(cls, missing: list[str], data: dict[str, Any]) -> str:
        """What to say when a saved dict lacks required fields."""
        return f"not a {cls.__name__}: no {', '.join(repr(k) for k in missing)}"

    @classmethod
    def _from_checked(cls: type[Kind], data: dict[str, Any], scores: np.ndarray) -> Kind:
        """The explanation from a dict whose fields passed their checks."""
        raise NotImplementedError

    # ----------------------------------------------------------------- shared
    @classmethod
    def from_dict(cls: type[Kind], data: dict[str, Any]) -> Kind:
        """An explanation from :meth:`to_dict`'s output; anything else is refused with what
        is missing or does not fit (an :class:`~normxlogit.common.errors.InvalidInputError`)."""
        if not isinstance(data, dict):
            raise InvalidInputError(
                f"a JSON {type(data).__name__} where an explanation object belongs"
            )
        if cls.KIND is not None and data.get("kind") != cls.KIND:
            raise InvalidInputError(f'not a {cls.KIND} explanation (no "kind": "{cls.KIND}")')
        missing = [key for key in cls.REQUIRED if key not in data]
        if missing:
            raise InvalidInputError(cls._missing(missing, data))
        check_fields(data, cls.REQUIRED, cls.OPTIONAL)
        check_diagnostics(data.get("diagnostics"))
        check_contrast_input_recorded(data.get("settings"))
        return cls._from_checked(data, score_array(data["scores"], "scores"))

    def to_json(self, indent: int | None = None) -> str:
        return json_text(self.to_dict(), indent=indent)

    def save(self, path: str | os.PathLike) -> Path:
        """Write this explanation to a JSON file (a name ending in .json), atomically;
        :meth:`to_html` gives the page."""
        from .io import save_explanations

        return save_explanations([self], path)

    @classmethod
    def load(cls: type[Kind], path: str | os.PathLike) -> Kind:
        """The one explanation of this kind saved in ``path``."""
        from .io import load_explanations

        loaded = load_explanations(path)
        if len(loaded) != 1:
            raise InvalidInputError(
                f"{path} holds {len(loaded)} explanations, not one; load them all with "
                "normxlogit.load_explanations"
            )
        if not isinstance(loaded[0], cls):
            kind = type(loaded[0]).__name__
            raise InvalidInputError(
                f"{path} holds {_a(kind)}, not {_a(cls.__name__)}; load it with "
                f"normxlogit.{kind}.load"
            )
        return loaded[0]

    def _finish_frame(self, frame: pd.DataFrame, has_layers: bool, **columns: Any) -> pd.DataFrame:
        """A tidy frame's common ending: no layer column without layers, then the
        explanation's method, ``columns`` and model on every row."""
        if not has_layers:
            frame = frame.drop(columns="layer")
        return frame.assign(method=self.method, **columns, model=self.model)


def score_array(value: Any, name: str) -> np.ndarray:
    """Saved scores (the field ``name``) as float32, null as NaN; refused where numpy
    would misread them (:func:`~normxlogit.common.fields.check_scores`) or they are no
    rectangular array."""
    check_scores(value, name)
    try:
        return np.array(value, dtype=np.float32)  # null -> NaN
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"{name!r} is not a rectangular array of numbers (rows of different lengths, "
            "or values that are not numbers)"
        ) from None


def _a(name: str) -> str:
    """``name`` with its indefinite article."""
    return f"{'an' if name[0] in 'AEIOU' else 'a'} {name}"


#: what explaining against a contrast input adds to an explanation's settings beside it
CONTRAST_INPUT_FIELDS = ("contrast_input_tokens", "contrast_alignment")


def check_contrast_input_recorded(settings: Any) -> None:
    """A file's contrast-input fields agree: scores made against a contrast input explain
    f(x) - f(x'), and read without ``settings.contrast_input`` they would be evaluated as
    plain scores of f(x), while the file's tokens and alignment still say otherwise."""
    if not isinstance(settings, dict):
        return
    kept = [key for key in CONTRAST_INPUT_FIELDS if key in settings]
    other = settings.get("contrast_input")
    given = isinstance(other, str | list) and bool(other)
    if given and len(kept) == len(CONTRAST_INPUT_FIELDS):
        return
    if not kept and "contrast_input" not in settings:
        return
    missing = [k for k in ("contrast_input", *CONTRAST_INPUT_FIELDS) if k not in settings]
    said = f"settings lack {', '.join(missing)}" if missing else "settings.contrast_input is empty"
    raise InvalidInputError(
        f"this explanation's contrast-input record is incomplete ({said}): its scores "
        "explain the output's difference under the text and a contrast input, and without "
        "all of contrast_input, contrast_input_tokens and contrast_alignment they would be "
        "read as plain scores; restore the file as saved, or explain the text again"
    )
