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
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..explanations.generation import GenerationExplanation
from ..methods import Attribution, AttributionMethod, Layers
from ..model.adapter import ExplainableModel, ForwardResult
from ..model.inputs import pack_by_width
from ..model.precision import precision_settings
from ..model.targets import Targets
from .steps import (
    DEFAULT_MAX_NEW_TOKENS,
    Continuation,
    Generation,
    build_generation,
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
) -> GenerationExplanation:
    """Explain what ``model`` writes after ``prompt`` (or the given ``continuation``).

    ``one_pass=False`` explains prefix-invariant methods step by step too, and runs a
    pass per prefix for a method that reads token ids only (the slow paths that the fast
    results must equal; for tests and benchmarks).
    """
    view = model.language_model_view()
    generation = build_generation(view, prompt, continuation, max_new_tokens)
    if one_pass and (attribution.prefix_invariant or attribution.reads_rows):
        scores, diagnostics, logits = _one_pass(view, generation, attribution, layers)
        if progress is not None:
            progress(generation.steps)
    else:
        skip_passes = one_pass and attribution.reads_token_ids_only
        steps = step_batches(generation, batch_size, max_tokens_per_batch)
        scores, diagnostics, logits = _by_steps(
            view, generation, attribution, layers, steps, progress, skip_passes
        )
        if logits is None:  # the prefixes ran no pass: read the steps from one
            logits = _step_logits(view, generation)
    chosen = torch.tensor(generation.continuation, device=logits.device)
    probs = logits.softmax(-1).gather(-1, chosen.unsqueeze(-1)).squeeze(-1).cpu().tolist()
    predicted = logits.argmax(-1).cpu().tolist()
    tokenizer = view.tokenizer
    ids = list(generation.ids)
    tokens = tokenizer.convert_ids_to_tokens(ids)
    special = tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
    return GenerationExplanation(
        prompt=prompt,
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
            **precision_settings(model.dtype),
        },
        layers=list(layers.indices) if layers.axis else None,
        special=[bool(s) for s in special],
        model=model.name,
        diagnostics=diagnostics,
        token_texts=view.encoder.texts(tokens),
        input_ids=ids,
    )


def _one_pass(
    model: ExplainableModel,
    generation: Generation,
    attribution: AttributionMethod,
    layers: Layers,
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
    **settings: Any,
) -> list[GenerationExplanation]:
    """:func:`explain_generation` for each prompt."""
    return [explain_generation(model, p, attribution, layers, **settings) for p in prompts]
