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
from collections.abc import Callable
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


#: names no option may have: the settings keys an explanation writes beside the method's
#: options (explaining/texts.py, generation.py, segment_games.py, contrast_inputs.py;
#: explanations/: aggregate, step), which would overwrite the option's recorded value, and
#: get_method's own parameters, which would never reach the method
RECORDED_NOT_OPTIONS = frozenset(
    {
        "aggregate",
        "answer_ids",
        "contrast",
        "contrast_alignment",
        "contrast_input",
        "contrast_input_tokens",
        "contrast_is_target",
        "contrast_is_target_steps",
        "dropped_tokens",
        "dtype",
        "generated_by_model",
        "layer",
        "mask_position",
        "max_new_tokens",
        "name",
        "preset",
        "step",
        "target",
    }
)


#: what explaining against a contrast input adds to an explanation's settings beside it
CONTRAST_INPUT_FIELDS = ("contrast_input_tokens", "contrast_alignment")


def _contrast_input_problem(settings: dict[str, Any]) -> str | None:
    """What of a complete contrast-input record does not hold what explaining wrote (a
    text or text pair, the contrast's tokens, an index or null per token into them),
    said as what it holds: a number where the text belongs is no empty text."""
    other = settings["contrast_input"]
    tokens, alignment = settings["contrast_input_tokens"], settings["contrast_alignment"]
    if other == "" or other == []:
        return "settings.contrast_input is empty"
    if not (isinstance(other, str) or _is_text_pair(other)):
        return f"settings.contrast_input {_held(other, 'text (or a pair of texts)')}"
    if (problem := _list_problem(tokens, lambda t: isinstance(t, str), "text")) is not None:
        return f"settings.contrast_input_tokens {problem}"
    if not tokens:  # a contrast input has tokens; an empty list leaves no index to align
        return "settings.contrast_input_tokens is empty"
    positions = range(len(tokens))
    index = f"a token index (0 to {len(tokens) - 1}) or null"
    if (problem := _list_problem(alignment, lambda a: _index_in(a, positions), index)) is not None:
        return f"settings.contrast_alignment {problem}"
    return None


def _is_text_pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)


def _index_in(value: Any, positions: range) -> bool:
    """Whether ``value`` is null or an index in ``positions`` (a bool is no index)."""
    return value is None or (type(value) is int and value in positions)


def _list_problem(values: Any, fits: Callable[[Any], bool], wanted: str) -> str | None:
    """Where ``values`` is no list of items that fit: what it is, or its first misfit."""
    if not isinstance(values, list):
        return _held(values, f"a list (each item {wanted})")
    misfit = next((i for i, value in enumerate(values) if not fits(value)), None)
    if misfit is None:
        return None
    return f"holds {values[misfit]!r:.40} at {misfit}, not {wanted}"


def _held(value: Any, wanted: str) -> str:
    """``value``'s kind against what belongs there, e.g. ``is an int (5), not text``."""
    kind = type(value).__name__
    article = "an" if kind[0].lower() in "aeiou" else "a"
    return f"is {article} {kind} ({value!r:.40}), not {wanted}"


def check_contrast_input_recorded(settings: Any) -> None:
    """A file's contrast-input fields agree: scores made against a contrast input explain
    f(x) - f(x'), and read without ``settings.contrast_input`` they would be evaluated as
    plain scores of f(x), while the file's tokens and alignment still say otherwise."""
    if not isinstance(settings, dict):
        return
    kept = [key for key in CONTRAST_INPUT_FIELDS if key in settings]
    if not kept and "contrast_input" not in settings:
        return
    missing = [k for k in ("contrast_input", *CONTRAST_INPUT_FIELDS) if k not in settings]
    said = f"settings lack {', '.join(missing)}" if missing else _contrast_input_problem(settings)
    if said is None:
        return
    state = "incomplete" if missing or said.endswith("is empty") else "not as saved"
    raise InvalidInputError(
        f"this explanation's contrast-input record is {state} ({said}): its scores "
        "explain the output's difference under the text and a contrast input, and without "
        "all of contrast_input, contrast_input_tokens and contrast_alignment they would be "
        "read as plain scores; restore the file as saved, or explain the text again"
    )
