"""Segments on explanations: each explained text's segments resolved, its tokens placed in
them, and a token method's scores reduced over each (``explain(..., segments=...)``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..common.errors import InvalidInputError
from ..common.numbering import text_name
from ..explanations.explanation import Explanation
from ..explanations.generation import GenerationExplanation
from ..explanations.segments import SegmentScores
from ..model.adapter import ExplainableModel
from ..model.inputs import TextInput
from ..model.segment_values import mask_segment
from ..model.segments import Segments, resolve_segments


def segment_specs(spec: Any, items: Sequence[TextInput], single: bool) -> list[Any]:
    """One segment spec per text: ``spec`` itself for one text (and ``"sentences"`` or a
    :class:`Segments` for every text); else a list of one per text."""
    if single or isinstance(spec, (str, Segments)):
        return [spec] * len(items)
    if not isinstance(spec, Sequence) or len(spec) != len(items):
        raise InvalidInputError(
            f"segments= for {len(items)} texts: give 'sentences' (every text split into "
            "sentences) or a list of one entry per text (each 'sentences', a list of the "
            "text's segments, or (start, end) spans)"
        )
    return list(spec)


def resolved(model: ExplainableModel, items: Sequence[TextInput], specs: list[Any], single: bool):
    """Each text's :class:`Segments` (checked before any work) and its tokens' segments."""
    out = []
    for index, (text, spec) in enumerate(zip(items, specs, strict=True)):
        where = "segments" if single else f"segments[{index}]"
        segments = resolve_segments(text, spec, where)
        _, places = model.encoder.token_places(text)
        members = segments.token_segments(places)
        read = {m for m in members if m is not None}
        if not read:
            raise InvalidInputError(
                f"{where}: the model reads no token of any segment of {text_name(index)} (a text "
                "truncated before its segments?)"
            )
        out.append((segments, members))
    return out


def refuse_removing_the_mask(
    model: ExplainableModel, items: Sequence[TextInput], layout: list[tuple[Segments, list]]
) -> None:
    """Removing the segment that holds a masked LM's mask would read the prediction at
    another mask or at none: refused before any pass, naming the text and segment."""
    for index, (text, (_, members)) in enumerate(zip(items, layout, strict=True)):
        held = mask_segment(model, text, members)
        if held is not None:
            raise InvalidInputError(
                f"segments[{held}] of {text_name(index)} holds the {model.tokenizer.mask_token} "
                "the prediction is read at; leave the mask out of the segments"
            )


def with_segments(
    model: ExplainableModel,
    explanations: list[Explanation] | list[GenerationExplanation],
    items: Sequence[TextInput],
    layout: list[tuple[Segments, list[int | None]]],
    how: str,
) -> list[Any]:
    """``explanations`` with their token scores reduced over each text's segments."""
    out = []
    for explanation, text, (segments, members) in zip(explanations, items, layout, strict=True):
        if isinstance(explanation, GenerationExplanation):
            members = members + [None] * (len(explanation.tokens) - len(members))
            axis = 2 if explanation.has_layers else 1
        else:
            axis = 1 if explanation.has_layers else 0
        if len(members) != len(explanation.tokens):
            raise InvalidInputError(
                "the segments' tokens do not line up with the explanation's; explain "
                "token-level (without aggregate=) when giving segments"
            )
        scores = SegmentScores.reduced(segments.texts(text), members, explanation.scores, axis, how)
        out.append(replace(explanation, segments=scores))
    return out
