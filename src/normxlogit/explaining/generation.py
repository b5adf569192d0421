"""``explain_generation``: a prompt in, every generated step explained.

Two kinds of method explain all S steps from one pass over prompt + continuation, on a
causal model where a position's state depends only on the tokens up to it:

- prefix-invariant ones (NormXLogit, LogAt, the l2 norm: a token's score for a target
  depends only on the tokens up to it) take the S generated tokens as S target columns;
- row-reading ones (attention, rollout, value zeroing: the score is the reading
  position's row of token-to-token maps) read step t from the row of the position that
  predicts it.

Every other method explains the steps as a batch of prefixes, ``batch_size`` steps per
pass, each row read at its last token with the step's token as target: exactly what
explaining each prefix alone gives. A method that reads only token ids (the random
baseline) gets its prefixes without a pass over them, and the steps' logits from one pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..common.errors import InvalidInputError
from ..explanations.generation import GenerationExplanation
from ..methods import Attribution, AttributionMethod, Layers
from ..model.adapter import ExplainableModel, ForwardResult
from ..model.inputs import pack_by_width
from ..model.precision import precision_settings
from ..model.targets import Targets
from .contrast_inputs import generation_against
from .steps import (
    DEFAULT_MAX_NEW_TOKENS,
    Continuation,
    Generation,
    build_generation,
    continuation_ids,
    prefix_rows,
    rows_batch,
)


def explain_generation(
    model: ExplainableModel,
    prompt: str,
    attribution: AttributionMethod,
    layers: Layers,
    *,
    continuation: Continuation | None = None,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    batch_size: int = 16,
    max_tokens_per_batch: int | None = None,
    one_pass: bool = True,
    progress: Callable[[int], None] | None = None,
    contrast: Continuation | None = None,
    contrast_prompt: str | None = None,
) -> GenerationExplanation:
    """Explain what ``model`` writes after ``prompt`` (or the given ``continuation``).

    ``contrast``: a contrast continuation with one token per step (a text or ids): step
    ``t`` then explains why the model wrote its token rather than the contrast's ``t``-th,
    both read after the same prefix (Yin and Neubig's contrastive explanations).

    ``contrast_prompt``: explain the same continuation after this prompt too; the scores
    are the aligned differences, and the step scores gain the KL divergence, P-CXMI and
    the probability under the contrast prompt (:mod:`.contrast_inputs`).

    ``one_pass=False`` explains prefix-invariant methods step by step too, and runs a
    pass per prefix for a method that reads token ids only (the slow paths that the fast
    results must equal; for tests and benchmarks).
    """
    view = model.language_model_view()
    generation = build_generation(view, prompt, continuation, max_new_tokens)
    settings = dict(
        attribution=attribution,
        layers=layers,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        max_tokens_per_batch=max_tokens_per_batch,
        one_pass=one_pass,
        contrast=contrast,
    )
    mine, logits = _explained(model, view, generation, progress=progress, **settings)
    if contrast_prompt is None:
        return mine
    again = build_generation(view, contrast_prompt, generation.continuation, max_new_tokens)
    theirs, other_logits = _explained(model, view, again, progress=None, **settings)
    return generation_against(view, mine, theirs, logits, other_logits, contrast_prompt)


def _explained(
    model: ExplainableModel,
    view: ExplainableModel,
    generation: Generation,
    *,
    attribution: AttributionMethod,
    layers: Layers,
    max_new_tokens: int,
    batch_size: int,
    max_tokens_per_batch: int | None,
    one_pass: bool,
    contrast: Continuation | None,
    progress: Callable[[int], None] | None,
) -> tuple[GenerationExplanation, Tensor]:
    """One generation explained, and its steps' vocabulary logits ``[S, V]``."""
    foils = contrast_steps(view, generation, contrast)
    if one_pass and (attribution.prefix_invariant or attribution.reads_rows):
        scores, diagnostics, logits = _one_pass(view, generation, attribution, layers, foils)
        if progress is not None:
            progress(generation.steps)
    else:
        skip_passes = one_pass and attribution.reads_token_ids_only
        steps = step_batches(generation, batch_size, max_tokens_per_batch)
        scores, diagnostics, logits = _by_steps(
            view, generation, attribution, layers, steps, progress, skip_passes, foils
        )
        if logits is None:  # the prefixes ran no pass: read the steps from one
            logits = _step_logits(view, generation)
    step_scores = scores_of_steps(logits, generation.continuation, foils)
    probs = step_scores["probability"]
    predicted = logits.argmax(-1).cpu().tolist()
    tokenizer = view.tokenizer
    ids = list(generation.ids)
    tokens = tokenizer.convert_ids_to_tokens(ids)
    special = tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
    explained = GenerationExplanation(
        prompt=generation.text,
        tokens=tokens,
        prompt_length=generation.prompt_length,
        scores=scores if layers.axis else scores[:, 0],
        method=attribution.name,
        step_probs=probs,
        predicted=tokenizer.convert_ids_to_tokens(predicted),
        generated_by_model=generation.generated,
        settings={
            **attribution.settings(),
            "max_new_tokens": max_new_tokens,
            **({"contrast": _names(view, foils)} if foils is not None else {}),
            **precision_settings(model.dtype),
        },
        layers=list(layers.indices) if layers.axis else None,
        special=[bool(s) for s in special],
        model=model.name,
        diagnostics=diagnostics,
        token_texts=view.encoder.texts(tokens),
        input_ids=ids,
        step_scores=step_scores,
        contrasts=[] if foils is None else _names(view, foils),
        contrast_texts=[] if foils is None else view.encoder.texts(_names(view, foils)),
    )
    return explained, logits


def contrast_steps(
    model: ExplainableModel, generation: Generation, contrast: Continuation | None
) -> list[int] | None:
    """The contrast token of every step (None: no contrast): a continuation with as many
    tokens as the explained one, aligned step by step."""
    if contrast is None:
        return None
    ids = continuation_ids(model, contrast)
    if len(ids) != generation.steps:
        shown = ", ".join(model.tokenizer.convert_ids_to_tokens(ids))
        raise InvalidInputError(
            f"the contrast is {len(ids)} tokens ({shown}) but the continuation explained is "
            f"{generation.steps}; a contrast gives one token per step (pass continuation= "
            "to fix the explained text)"
        )
    return ids


def scores_of_steps(
    logits: Tensor, continuation: Sequence[int], foils: Sequence[int] | None
) -> dict[str, list[float]]:
    """What a user reads to choose the steps worth explaining, from the steps' logits
    ``[S, V]``: each step token's probability, the entropy of the next-token distribution
    and, with contrast tokens, theirs and the difference (Inseq's ``contrast_prob_diff``)."""
    logp = logits.float().log_softmax(-1)
    chosen = torch.tensor(list(continuation), device=logits.device).unsqueeze(-1)
    probability = logp.gather(-1, chosen).squeeze(-1).exp()
    scores = {
        "probability": probability.cpu().tolist(),
        "entropy": (-(logp.exp() * logp).nansum(-1)).cpu().tolist(),
    }
    if foils is not None:
        other = torch.tensor(list(foils), device=logits.device).unsqueeze(-1)
        contrast = logp.gather(-1, other).squeeze(-1).exp()
        scores["contrast_probability"] = contrast.cpu().tolist()
        scores["contrast_prob_diff"] = (probability - contrast).cpu().tolist()
    return scores


def _one_pass(
    model: ExplainableModel,
    generation: Generation,
    attribution: AttributionMethod,
    layers: Layers,
    foils: list[int] | None = None,
) -> tuple[np.ndarray, dict[str, list[float]], Tensor]:
    """Every step from one forward pass: the S generated tokens as S target columns, or
    (row-reading methods) step t from the row that predicts it. Also returns each step's
    vocabulary logits ``[S, V]``, read from the same pass."""
    batch = rows_batch(model, [generation.ids], generation.text)
    forward = model.forward(batch, layers.indices, attribution.attention_reader(layers))
    logits = _logits_of_steps(model, generation, forward)
    steps, total = generation.steps, len(generation.ids)
    scores = np.full((steps, len(layers.indices), total), np.nan, dtype=np.float32)
    if not attribution.prefix_invariant:  # reads rows: step t is row first + t
        with torch.set_grad_enabled(attribution.needs_gradients):
            maps = attribution.token_maps(model, forward, layers)[0].float().cpu().numpy()
        for step in range(steps):
            end = generation.prompt_length + step
            scores[step, :, :end] = maps[:, end - 1, :end]
        return scores, {}, logits
    columns = torch.tensor([generation.continuation])
    targets = Targets(columns, [_names(model, generation.continuation)], single=False)
    if foils is not None:
        targets = replace(
            targets, contrast=torch.tensor([foils]), contrast_names=[_names(model, foils)]
        )
    with torch.set_grad_enabled(attribution.needs_gradients):
        result = _as_attribution(attribution.attribute(model, forward, targets, layers))
    values = result.scores[0].float().cpu().numpy()  # [L, T, S]
    for step in range(steps):
        end = generation.prompt_length + step
        scores[step, :, :end] = values[:, :end, step]
    diagnostics = {k: v[0].float().cpu().tolist() for k, v in result.diagnostics.items()}
    return scores, diagnostics, logits


def _step_logits(model: ExplainableModel, generation: Generation) -> Tensor:
    """Each step's vocabulary logits ``[S, V]`` from one pass over the whole sequence."""
    batch = rows_batch(model, [generation.ids], generation.text)
    return _logits_of_steps(model, generation, model.forward(batch))


def _logits_of_steps(
    model: ExplainableModel, generation: Generation, forward: ForwardResult
) -> Tensor:
    """The vocabulary logits ``[S, V]`` at the positions that predict the S steps."""
    first = generation.prompt_length - 1  # the position that predicts step 0
    with torch.no_grad():
        reading = forward.final_states[0, first : first + generation.steps]
        return model.all_logits(reading).float()


def _by_steps(
    model: ExplainableModel,
    generation: Generation,
    attribution: AttributionMethod,
    layers: Layers,
    batches: list[list[int]],
    progress: Callable[[int], None] | None,
    skip_passes: bool = False,
    foils: list[int] | None = None,
) -> tuple[np.ndarray, dict[str, list[float]], Tensor | None]:
    """The steps as batches of prefixes (``batches``: the steps of each pass; and each
    step's vocabulary logits ``[S, V]``, read from the same passes). ``skip_passes``, for a
    method that reads token ids only: the prefixes run no pass, and the logits are None."""
    steps, total = generation.steps, len(generation.ids)
    scores = np.full((steps, len(layers.indices), total), np.nan, dtype=np.float32)
    diagnostics: dict[str, list[float]] = {}
    logits = []
    for chosen in batches:
        batch = rows_batch(model, prefix_rows(generation, chosen), generation.text)
        if skip_passes:
            forward = ForwardResult(batch.to(model.device), states={}, logits=torch.empty(0))
        else:
            reader = attribution.attention_reader(layers, batch.reading_positions[:, None])
            forward = model.forward(batch, layers.indices, reader)
            logits.append(forward.logits.float())  # the vocabulary at each row's last token
        wanted = [generation.continuation[step] for step in chosen]
        columns = torch.tensor(wanted).unsqueeze(-1)
        targets = Targets(columns, [[name] for name in _names(model, wanted)], single=True)
        if foils is not None:
            others = [foils[step] for step in chosen]
            targets = replace(
                targets,
                contrast=torch.tensor(others).unsqueeze(-1),
                contrast_names=[[name] for name in _names(model, others)],
            )
        with torch.set_grad_enabled(attribution.needs_gradients):
            result = _as_attribution(attribution.attribute(model, forward, targets, layers))
        values = result.scores[..., 0].float().cpu().numpy()  # [b, L, T]
        for row, step in enumerate(chosen):
            real = batch.real_positions(row).cpu().numpy()
            scores[step, :, : len(real)] = values[row][:, real]
        for key, value in result.diagnostics.items():
            diagnostics.setdefault(key, []).extend(value[:, 0].float().cpu().tolist())
        if progress is not None:
            progress(chosen[-1] + 1)
    return scores, diagnostics, torch.cat(logits) if logits else None


def step_batches(
    generation: Generation, batch_size: int, max_tokens: int | None = None
) -> list[list[int]]:
    """The steps in passes of at most ``batch_size`` prefixes and, with ``max_tokens``, at
    most that many tokens (prefixes x the longest, which is the pass's last step's)."""
    widths = [generation.prompt_length + step for step in range(generation.steps)]
    return pack_by_width(widths, batch_size, max_tokens)  # step t: the prompt and t tokens


def _as_attribution(result: Tensor | Attribution) -> Attribution:
    return result if isinstance(result, Attribution) else Attribution(result)


def _names(model: ExplainableModel, ids: Sequence[int]) -> list[str]:
    return list(model.tokenizer.convert_ids_to_tokens(list(ids)))


def explain_generations(
    model: ExplainableModel,
    prompts: Sequence[str],
    attribution: AttributionMethod,
    layers: Layers,
    contrast_prompts: Sequence[str] | None = None,
    **settings: Any,
) -> list[GenerationExplanation]:
    """:func:`explain_generation` for each prompt (against its contrast prompt, if any)."""
    others = contrast_prompts or [None] * len(prompts)
    return [
        explain_generation(model, p, attribution, layers, contrast_prompt=other, **settings)
        for p, other in zip(prompts, others, strict=True)
    ]
