"""Segments on explanations: each explained text's segments resolved, its tokens placed in
them, and a token method's scores reduced over each (``explain(..., segments=...)``)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..common.errors import InvalidInputError, NormXLogitWarning
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
    """Each text's :class:`Segments` (checked before any work) and its tokens' segments;
    segments the model reads no token of are named in one warning (their scores are NaN)."""
    out = []
    past: dict[int, tuple[list[str], int]] = {}  # text: its segments past the truncation
    tokenless: dict[int, tuple[list[str], int]] = {}  # text: segments inside others' tokens
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
        ends: dict[int, int] = {}  # each part's last character read
        for place in places:
            if place is not None:
                ends[place[0]] = max(ends.get(place[0], 0), place[2])
        shown = segments.texts(text)
        for i, (part, start, _) in enumerate(segments.spans):
            if i not in read:
                into = past if start >= ends.get(part, 0) else tokenless
                into.setdefault(index, ([], len(segments)))[0].append(shown[i])
        out.append((segments, members))
    if past:
        why = f"past the {model.encoder.max_length} tokens the model reads (truncated)"
        warnings.warn(unread_message(past, why), NormXLogitWarning, stacklevel=4)
    if tokenless:
        why = "inside tokens of the segment before (a token is its first character's segment's)"
        warnings.warn(unread_message(tokenless, why), NormXLogitWarning, stacklevel=4)
    return out


def unread_message(unread: dict[int, tuple[list[str], int]], why: str) -> str:
    """The warning about segments the model reads no token of: how many, and per text how
    many of its segments and which (their text, cut short)."""
    count = sum(len(texts) for texts, _ in unread.values())
    named = "; ".join(
        f"{text_name(index)}: {len(texts)} of {total} ("
        + ", ".join(repr(_short(t)) for t in texts[:3])
        + (", ..." if len(texts) > 3 else "")
        + ")"
        for index, (texts, total) in list(unread.items())[:10]
    ) + ("; ..." if len(unread) > 10 else "")
    one = count == 1
    return (
        f"{count} {'segment lies' if one else 'segments lie'} {why}, so the model read no "
        f"token of {'it' if one else 'them'}: {named}. "
        f"{'Its score is' if one else 'Their scores are'} NaN (shown as 'not read'), and the "
        f"segment metrics leave {'it' if one else 'them'} out"
    )


def _short(text: str, width: int = 40) -> str:
    """``text``, cut to ``width`` characters."""
    return text if len(text) <= width else text[: width - 1] + "…"


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
