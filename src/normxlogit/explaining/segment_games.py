"""Explaining with a segment method: each text's segment subsets (what the method plans)
read in batched forward passes, shortest texts together, and combined into segment
scores.

The value of a subset is the target's log-probability given the text with the other
segments removed (a label's or token's at the reading position; an answer's tokens
summed after the prompt); a regressor's output itself. Every token of a segment carries
its segment's score (tokens of no segment 0), so token views and evaluation see the
segment scores; ``Explanation.segments`` holds them exactly (``how = "native"``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
import torch

from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.fields import shown_value
from ..common.numbering import text_name, text_names
from ..common.tokens import token_names
from ..explanations.explanation import Explanation
from ..explanations.segments import NATIVE, SegmentScores
from ..methods.base import Attribution, Layers, method_settings
from ..methods.segment_methods import SegmentMethod, SegmentPlan
from ..model.adapter import ExplainableModel
from ..model.inputs import TextInput, nothing_read, special_mask
from ..model.precision import precision_settings
from ..model.segment_values import (
    answer_log_probs,
    prompt_ids,
    read_values,
    rendering_ids,
    values_at,
)
from ..model.segments import Segments
from ..model.targets import TargetSpec, resolve_targets
from ..model.tasks import TaskKind
from .prefix_cache import cached_log_probs, prefix_cacheable
from .segments import refuse_removing_the_mask
from .steps import (
    DEFAULT_MAX_NEW_TOKENS,
    build_generations,
    per_prompt_continuations,
)

Layout = list[tuple[Segments, list[int | None]]]


def explain_predictions(
    model: ExplainableModel,
    items: Sequence[TextInput],
    method: SegmentMethod,
    layout: Layout,
    target: TargetSpec,
    build: Callable,
    batch_size: int = 16,
    max_tokens: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Explanation]:
    """Segment scores of each text's prediction (or ``target``): ``build`` turns a batch's
    forward pass, targets and token scores into explanations (explain's own)."""
    method = method.for_task(model.task.kind)
    refuse_removing_the_mask(model, items, layout)
    layers = Layers.resolve(None, model.num_layers)
    results: list[Explanation] = []
    for start in range(0, len(items), batch_size):
        chunk = list(items[start : start + batch_size])
        batch = model.encode(chunk, first_index=start)
        forward = model.forward(batch, layers.indices)
        targets = resolve_targets(model, forward, target, None)
        plans = [checked_plan(method, len(s)) for s, _ in layout[start : start + len(chunk)]]
        requests = []
        for row, ((segments, _), plan) in enumerate(
            zip(layout[start : start + len(chunk)], plans, strict=True)
        ):
            masks, inverse = np.unique(plan.masks, axis=0, return_inverse=True)
            texts = [segments.without(chunk[row], keep, method.replacement) for keep in masks]
            requests.append((texts, inverse.reshape(-1), targets.columns[row]))
        if method.reuses_prefix and prefix_cacheable(model) and not regression(model):
            values = [
                cached_values(model, text, texts, columns)
                for text, (texts, _, columns) in zip(chunk, requests, strict=True)
            ]
        else:
            values = _read_unless_whole(
                model, chunk, forward, targets, requests, batch_size, max_tokens
            )
        scores = torch.zeros(*batch.input_ids.shape, targets.columns.shape[1])
        native = []
        for row, (plan, (_, inverse, _), value) in enumerate(
            zip(plans, requests, values, strict=True)
        ):
            combined = checked_combine(method, plan, value[inverse])  # [S, K]
            members = layout[start + row][1]
            combined[unread_segments(len(combined), members)] = np.nan
            real = batch.real_positions(row).cpu()
            for position, member in zip(real.tolist(), members, strict=True):
                if member is not None:
                    scores[row, position] = torch.as_tensor(combined[member], dtype=torch.float)
            native.append(combined)
        made = build(model, forward, targets, layers, Attribution(scores[:, None]), method)
        for row, (explanation, combined) in enumerate(zip(made, native, strict=True)):
            segments, members = layout[start + row]
            values_shape = combined if not targets.single else combined[:, 0]
            explanation.segments = SegmentScores(
                segments.texts(chunk[row]), members, values_shape, NATIVE
            )
            results.append(explanation)
        if progress is not None:
            progress(len(results))
    return results


def checked_plan(method: SegmentMethod, count: int) -> SegmentPlan:
    """``method.plan(count)``, refused in one line naming the method unless it is a
    :class:`SegmentPlan` whose masks are True/False ``[N, count]`` with N at least 1 (else
    it fails in numpy, as though the library had)."""
    plan = method.plan(count)
    masks = getattr(plan, "masks", None)
    if (
        isinstance(masks, np.ndarray)
        and masks.dtype == bool
        and masks.ndim == 2
        and masks.shape[0] >= 1
        and masks.shape[1] == count
    ):
        return plan
    got = f"masks that are {_array(masks)}" if isinstance(plan, SegmentPlan) else shown_value(plan)
    raise InvalidInputError(
        f"method {method.name!r}: plan({count}) returned {got}; it returns a SegmentPlan "
        f"whose masks are a NumPy array of True/False [subsets, segments] = [N, {count}], "
        "N at least 1 (True: the segment is kept)"
    )


def checked_combine(
    method: SegmentMethod, plan: SegmentPlan, values: np.ndarray, tokens: int = 1
) -> np.ndarray:
    """``method.combine(...)``: scores ``[segments, targets]`` of real numbers, as floats
    (an unread segment's is set to NaN); anything else is refused in one line naming the
    method, what it returned and what it returns instead."""
    result = method.combine(plan, values, tokens)
    expected = [plan.masks.shape[1], values.shape[1]]
    if not (isinstance(result, np.ndarray) and list(result.shape) == expected):
        raise InvalidInputError(
            f"method {method.name!r}: combine() returned {_array(result)}; it returns a NumPy "
            f"array of scores [segments, targets] = {expected}: one per segment and target"
        )
    if result.dtype.kind not in "iuf":
        raise InvalidInputError(
            f"method {method.name!r}: combine() returned scores of dtype {result.dtype}; "
            "scores are real numbers"
        )
    return result if result.dtype.kind == "f" else result.astype(np.float64)


def _array(value: object) -> str:
    """An array named by its shape and dtype (anything else by its type)."""
    if not isinstance(value, np.ndarray):
        return shown_value(value)
    return f"an array of shape {list(value.shape)} ({value.dtype})"


def unread_segments(count: int, members: Sequence[int | None]) -> list[int]:
    """The segments none of whose tokens the model read (past a text's truncation): their
    removal changes nothing the model reads, which says nothing of them, so they are
    scored NaN (as token methods leave them), not 0."""
    read = {m for m in members if m is not None}
    return [s for s in range(count) if s not in read]


def _read_unless_whole(model, chunk, forward, targets, requests, batch_size, max_tokens):
    """:func:`read_values` of the requests' renderings, but a rendering that is its whole
    text (every segment kept) takes its value from the explained text's own pass."""
    rows = torch.arange(len(chunk), device=forward.final_states.device)
    reading = forward.final_states[rows, forward.batch.reading_positions.to(rows.device)]
    clean = values_at(model, reading, targets.columns)  # [B, K]
    pairs = zip(chunk, requests, strict=True)
    others = [[t for t in texts if t != text] for text, (texts, _, _) in pairs]
    read = read_values(model, others, [r[2] for r in requests], batch_size, max_tokens)
    values = []
    for row, (text, (texts, _, _), rest) in enumerate(zip(chunk, requests, read, strict=True)):
        rest = iter(rest)
        values.append(np.stack([clean[row] if t == text else next(rest) for t in texts]))
    return values


def regression(model: ExplainableModel) -> bool:
    return model.task.kind is TaskKind.REGRESSION


def cached_values(
    model: ExplainableModel, text: TextInput, renderings: Sequence[TextInput], columns
) -> np.ndarray:
    """:func:`read_values` of one text's renderings on a causal model, each read from the
    cache of the prefix it shares with the whole text (see :mod:`.prefix_cache`)."""
    whole = rendering_ids(model, text)
    rows = [rendering_ids(model, rendering) for rendering in renderings]
    log_probs = cached_log_probs(model, whole, rows, [])[0]  # [N, V]
    wanted = model.full_output_columns(columns.cpu()[None]).numpy()[0]
    return log_probs[:, wanted]


def explain_answers(
    model: ExplainableModel,
    prompts: Sequence[TextInput],
    method: SegmentMethod,
    layout: Layout,
    continuation,
    max_new_tokens: int | None,
    batch_size: int = 16,
    max_tokens: int | None = None,
) -> list[Explanation]:
    """Segment scores of each prompt's whole answer (generated greedily, or the given
    ``continuation``): the value of a subset is the log-probability of the answer's
    tokens, summed, after the prompt with the other segments removed. Each explanation's
    target is the answer (its text; its ids in ``settings["answer_ids"]``)."""
    if any(isinstance(prompt, tuple) for prompt in prompts):
        raise InvalidInputError("a generation starts from one prompt text, not a pair")
    method = method.for_task(model.task.kind)
    view = model.language_model_view()
    given = per_prompt_continuations(continuation, len(prompts))
    steps = DEFAULT_MAX_NEW_TOKENS if max_new_tokens is None else max_new_tokens
    plans, renderings = [], []
    for index, (prompt, (segments, _)) in enumerate(zip(prompts, layout, strict=True)):
        plan = checked_plan(method, len(segments))
        everything = np.ones((1, len(segments)), dtype=bool)
        masks, inverse = np.unique(
            np.concatenate([everything, plan.masks]), axis=0, return_inverse=True
        )
        rows = [
            prompt_ids(view, segments.without(prompt, keep, method.replacement)) for keep in masks
        ]
        if any(not row for row in rows):  # refused before any pass, as a text without one
            raise InvalidInputError(
                nothing_read(f"the prompt of {text_name(index)} with its segments removed")
            )
        plans.append(plan)
        renderings.append((rows, inverse.reshape(-1)))
    generations = build_generations(view, list(prompts), given, steps)
    requests = [
        (rows, inverse, list(generation.continuation))
        for (rows, inverse), generation in zip(renderings, generations, strict=True)
    ]
    if method.reuses_prefix and prefix_cacheable(view):
        log_probs = [
            cached_log_probs(view, list(g.ids[: g.prompt_length]), rows, answer)[0]
            for (rows, _, answer), g in zip(requests, generations, strict=True)
        ]
    else:
        log_probs = answer_log_probs(view, requests, batch_size, max_tokens)
    results = []
    for prompt, plan, (segments, members), generation, (_, inverse, answer), values in zip(
        prompts, plans, layout, generations, requests, log_probs, strict=True
    ):
        totals = values.sum(-1, keepdims=True)[inverse]  # [1 + N, 1]: everything first
        combined = checked_combine(method, plan, totals[1:], len(answer))[:, 0]
        results.append(
            _answer_explanation(
                model, view, prompt, generation, method, segments, members, combined, totals[0, 0]
            )
        )
    return results


def _answer_explanation(
    model: ExplainableModel,
    view: ExplainableModel,
    prompt: str,
    generation,
    method: SegmentMethod,
    segments: Segments,
    members: list[int | None],
    combined: np.ndarray,
    full_log_prob: float,
) -> Explanation:
    tokenizer = view.tokenizer
    ids = list(generation.ids[: generation.prompt_length])
    tokens = token_names(tokenizer, ids)
    if len(members) != len(tokens):
        raise InvalidInputError(
            "the segments' tokens do not line up with the prompt's; give segments of the "
            "prompt text itself"
        )
    answer = tokenizer.decode(list(generation.continuation))
    special = special_mask(tokenizer, ids)
    token_scores = np.array([0.0 if m is None else combined[m] for m in members])
    return Explanation(
        text=prompt,
        tokens=tokens,
        token_texts=view.encoder.texts(tokens),
        scores=token_scores.astype(np.float32),
        targets=[answer],
        label=answer,
        probs={answer: float(np.exp(full_log_prob))},
        method=method.name,
        settings={
            **method_settings(method),
            "target": [answer],
            "answer_ids": list(generation.continuation),
            "generated_by_model": generation.generated,
            **precision_settings(model.dtype),
        },
        special=[bool(s) for s in special],
        model=model.name,
        model_signature=model.weights_signature(),
        input_ids=ids,
        segments=SegmentScores(segments.texts(prompt), members, combined, NATIVE),
    )


def check_segment_method(
    method: SegmentMethod, layout: Layout | None, layer, contrast_input, segment_reduce: str
) -> None:
    """Refuse what a segment method cannot do, before any work."""
    if layout is None:
        raise InvalidInputError(
            f"{method.name!r} scores segments; pass segments='sentences' (or a list of the "
            "text's segments) to explain"
        )
    if layer is not None:
        raise InvalidInputError(
            f"{method.name!r} reads the model's output, not a layer; leave layer= out"
        )
    if contrast_input is not None:
        raise InvalidInputError(
            f"{method.name!r} has no contrast_input=; compare two explanations instead"
        )
    if segment_reduce != "sum":
        raise InvalidInputError(
            f"{method.name!r} scores segments itself; segment_reduce= is for token methods"
        )
    for index, (segments, _) in enumerate(layout):
        if (excess := method.excess_draws(len(segments))) is not None:
            raise InvalidInputError(excess if len(layout) == 1 else f"{text_name(index)}: {excess}")
    warn_unvaried_draws(method, [len(segments) for segments, _ in layout])


def warn_unvaried_draws(method: SegmentMethod, counts: Sequence[int]) -> None:
    """Warn, once per segment count, where the method's draws leave some segments the
    same in every draw: their scores read as 'no effect' though nothing was measured."""
    texts: dict[int, list[int]] = {}
    for index, count in enumerate(counts):
        texts.setdefault(count, []).append(index)
    for count, indices in texts.items():
        if (unvaried := method.unvaried_draws(count)) is None:
            continue
        named = "" if len(counts) == 1 else f"{text_names(indices)}: "
        warnings.warn(named + unvaried, NormXLogitWarning, stacklevel=4)
