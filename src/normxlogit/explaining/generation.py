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

import warnings
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor

from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.targets import SAME_RULE
from ..common.tokens import token_names
from ..explanations.generation import GenerationExplanation
from ..methods import AttributionMethod, Layers
from ..methods.base import guard_method, method_settings, run_attribute, run_token_maps
from ..model.adapter import ExplainableModel, ForwardResult
from ..model.inputs import pack_by_width, special_mask
from ..model.precision import precision_settings
from ..model.targets import Targets
from .contrast_inputs import generation_against
from .contrast_rule import flag_only
from .contrast_sequences import inseq_prob_diff
from .steps import (
    DEFAULT_MAX_NEW_TOKENS,
    Continuation,
    Generation,
    build_generations,
    check_continuation,
    checked_explain_steps,
    chosen_steps,
    continuation_ids,
    past_end_words,
    per_prompt_continuations,
    rows_batch,
    steps_past_end,
    steps_phrase,
)
from .unrankable import check_unrankable

#: a generation's scores ``[S, L, T]``, diagnostics per step, and every step's logits
#: ``[S, V]`` (None: the passes did not give them all)
_Found = tuple[np.ndarray, dict[str, list[float]], Tensor | None]

#: a prefix to explain: (the generation's index, the step)
Row = tuple[int, int]


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
    explain_steps: Sequence[int] | None = None,
) -> GenerationExplanation:
    """Explain what ``model`` writes after ``prompt`` (or the given ``continuation``).

    ``contrast``: a contrast continuation with one token per step (a text or ids): step
    ``t`` then explains why the model wrote its token rather than the contrast's ``t``-th,
    both read after the same prefix (Yin and Neubig's contrastive explanations). The step
    scores gain ``same_prefix_prob_diff`` (that difference of probabilities) and Inseq's
    ``contrast_prob_diff`` (the contrast token read after the contrast's own prefix).

    ``contrast_prompt``: explain the same continuation after this prompt too; the scores
    are the aligned differences, and the step scores gain the KL divergence, P-CXMI,
    the probability under the contrast prompt (:mod:`.contrast_inputs`) and Inseq's
    ``contrast_prob_diff`` against the contrast prompt and the (contrast) continuation.

    ``explain_steps``: explain only these steps (those the generation has; e.g. ``range(0, 32,
    5)``, the steps the pi-Soft protocol scores), so a prefix method runs only their
    prefixes. The others' token scores are NaN and the explanation's ``explained_steps``
    lists the chosen ones; every step's probability and step scores are still there.

    ``one_pass=False`` explains prefix-invariant methods step by step too, and runs a
    pass per prefix for a method that reads token ids only (the slow paths that the fast
    results must equal; for tests and benchmarks).
    """
    (explained,) = explain_generations(
        model,
        [prompt],
        attribution,
        layers,
        None if contrast_prompt is None else [contrast_prompt],
        continuation=[continuation] if continuation is not None else None,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        max_tokens_per_batch=max_tokens_per_batch,
        one_pass=one_pass,
        progress=progress,
        contrast=contrast,
        explain_steps=explain_steps,
    )
    return explained


def explain_generations(
    model: ExplainableModel,
    prompts: Sequence[str],
    attribution: AttributionMethod,
    layers: Layers,
    contrast_prompts: Sequence[str | None] | None = None,
    *,
    continuation: Continuation | Sequence[Continuation] | None = None,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    batch_size: int = 16,
    max_tokens_per_batch: int | None = None,
    one_pass: bool = True,
    progress: Callable[[int], None] | None = None,
    contrast: Continuation | None = None,
    explain_steps: Sequence[int] | None = None,
) -> list[GenerationExplanation]:
    """:func:`explain_generation` for each prompt (against its contrast prompt, if any).

    ``continuation``: one for every prompt, or a list of one per prompt. A prefix method
    explains the prompts' steps together, ``batch_size`` prefixes of any prompts per pass
    (and ``max_tokens_per_batch`` tokens at most), shortest first: what explaining each
    prompt alone gives. ``progress`` is called with the steps explained so far, over all
    prompts.
    """
    guard_method(type(attribution))  # an instance of a class never registered: its hooks too
    view = model.language_model_view()
    given = per_prompt_continuations(continuation, len(prompts))
    others = list(contrast_prompts) if contrast_prompts is not None else [None] * len(prompts)
    if len(others) != len(prompts):
        raise InvalidInputError(
            f"{len(prompts)} prompts but {len(others)} contrast prompts; give one per prompt"
        )
    explain_steps = checked_explain_steps(explain_steps)  # read once, before any generation
    if contrast is not None:
        check_continuation(contrast, "contrast")
    generations = build_generations(view, prompts, given, max_new_tokens)
    _warn_steps_past_end(generations, explain_steps, max_new_tokens)
    if contrast is not None:
        _refuse_or_warn_same_steps(view, generations, contrast, explain_steps)
    settings = dict(
        attribution=attribution,
        layers=layers,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        max_tokens_per_batch=max_tokens_per_batch,
        one_pass=one_pass,
        contrast=contrast,
        explain_steps=explain_steps,
    )
    against = [i for i, other in enumerate(others) if other is not None]
    again = build_generations(
        view,
        [others[i] for i in against],
        [generations[i].continuation for i in against],
        max_new_tokens,
    )
    mine = _explained(model, view, generations, progress=progress, **settings)
    made = [explanation for explanation, _ in mine]
    if against:
        theirs = _explained(model, view, again, progress=None, **settings)
        for i, (other, other_logits) in zip(against, theirs, strict=True):
            made[i] = generation_against(view, made[i], other, mine[i][1], other_logits, others[i])
    heads = {i: g.ids[: g.prompt_length] for i, g in zip(against, again, strict=True)}
    results = [
        _with_contrast_prob_diff(view, explained, generation, contrast, heads.get(i))
        for i, (explained, generation) in enumerate(zip(made, generations, strict=True))
    ]
    check_unrankable(attribution, results, _scoring_hook(attribution, one_pass))
    return results


def _warn_steps_past_end(
    generations: Sequence[Generation], explain_steps: list[int] | None, max_new_tokens: int
) -> None:
    """Refuse ``explain_steps`` that no generation has (before any explaining); warn,
    naming them, about the generations that ended before the steps: they are explained
    with no step (NaN scores), the others as asked."""
    empty = steps_past_end(generations, explain_steps, max_new_tokens)
    if not empty or explain_steps is None:
        return
    named = past_end_words(generations, empty, explain_steps, max_new_tokens)
    warnings.warn(
        f"explain_steps {steps_phrase(explain_steps)}: {named}; so no step of "
        f"{'it' if len(empty) == 1 else 'them'} is explained (NaN scores; the probabilities "
        "and step scores are there), the other generations are",
        NormXLogitWarning,
        stacklevel=5,
    )


def _scoring_hook(attribution: AttributionMethod, one_pass: bool) -> str:
    """The method's code that gave a generation's token scores: a row-reader's
    ``token_maps()`` where one pass explains every step (:func:`_one_pass`), else its
    ``attribute()``."""
    reads_maps = one_pass and attribution.reads_rows and not attribution.prefix_invariant
    return "token_maps()" if reads_maps else "attribute()"


def same_steps(
    view: ExplainableModel, generation: Generation, contrast: Continuation, steps: Sequence[int]
) -> list[int]:
    """The steps of ``steps`` whose token is the contrast's own: nothing to explain there
    (the difference of an output with itself is zero at every token)."""
    foils = contrast_steps(view, generation, contrast) or []
    return [step for step in steps if foils[step] == generation.continuation[step]]


def _refuse_or_warn_same_steps(
    view: ExplainableModel,
    generations: Sequence[Generation],
    contrast: Continuation,
    explain_steps: Sequence[int] | None,
) -> None:
    """Refuse a contrast equal to the continuation at every step explained; warn (which
    steps) when it is so at some: those steps are not explained (NaN)."""
    chosen = [chosen_steps(generation, explain_steps) for generation in generations]
    same = [
        same_steps(view, g, contrast, steps) for g, steps in zip(generations, chosen, strict=True)
    ]
    if all(len(s) == len(c) for s, c in zip(same, chosen, strict=True)):
        raise InvalidInputError(
            f"the contrast equals the continuation at every step explained: {SAME_RULE}, so "
            "there is nothing to explain; give a contrast continuation that differs (one "
            "token per step)"
        )
    if any(same) and not flag_only():
        for index, (generation, steps) in enumerate(zip(generations, same, strict=True)):
            if not steps:
                continue
            tokens = token_names(view.tokenizer, [generation.continuation[s] for s in steps])
            words = ", ".join(repr(t) for t in view.encoder.texts(tokens))
            whose = "" if len(generations) == 1 else f"generation {index}: "
            warnings.warn(
                f"{whose}step(s) {', '.join(map(str, steps))} ({words}) have the contrast's own "
                f"token: {SAME_RULE}, so they are not explained (their scores are NaN; "
                "evaluate leaves them out)",
                NormXLogitWarning,
                stacklevel=5,
            )


def _with_contrast_prob_diff(
    view: ExplainableModel,
    explained: GenerationExplanation,
    generation: Generation,
    contrast: Continuation | None,
    contrast_prompt_ids: Sequence[int] | None,
) -> GenerationExplanation:
    """``explained`` with Inseq's ``contrast_prob_diff`` step score against the contrast
    sequence: the contrast prompt (or the prompt), then the contrast continuation (or the
    continuation). Unchanged when there is neither contrast."""
    if contrast is None and contrast_prompt_ids is None:
        return explained
    prompt = generation.ids[: generation.prompt_length]
    head = list(prompt if contrast_prompt_ids is None else contrast_prompt_ids)
    tail = contrast_steps(view, generation, contrast) or list(generation.continuation)
    total = len(generation.ids)
    diff = inseq_prob_diff(view, explained.step_probs, total, generation.prompt_length, head + tail)
    step_scores = {**explained.step_scores, "contrast_prob_diff": diff}
    return replace(explained, step_scores=step_scores)


def _explained(
    model: ExplainableModel,
    view: ExplainableModel,
    generations: Sequence[Generation],
    *,
    attribution: AttributionMethod,
    layers: Layers,
    max_new_tokens: int,
    batch_size: int,
    max_tokens_per_batch: int | None,
    one_pass: bool,
    contrast: Continuation | None,
    explain_steps: Sequence[int] | None,
    progress: Callable[[int], None] | None,
) -> list[tuple[GenerationExplanation, Tensor]]:
    """Each generation explained at its chosen steps, and its steps' vocabulary logits
    ``[S, V]`` (every step's, explained or not)."""
    foils = [contrast_steps(view, generation, contrast) for generation in generations]
    chosen = [chosen_steps(generation, explain_steps) for generation in generations]
    if one_pass and (attribution.prefix_invariant or attribution.reads_rows):
        found = _each_in_one_pass(view, generations, attribution, layers, foils, chosen, progress)
    else:
        skip_passes = one_pass and attribution.reads_token_ids_only
        batches = row_batches(generations, chosen, batch_size, max_tokens_per_batch)
        found = _by_steps(
            view, generations, attribution, layers, batches, progress, skip_passes, foils
        )
    made = []
    for generation, (scores, diagnostics, logits), foil, picked in zip(
        generations, found, foils, chosen, strict=True
    ):
        if logits is None:  # the prefixes did not give every step's: read them from one pass
            logits = _step_logits(view, generation)
        parts = _Parts(scores, diagnostics, logits, foil, picked, max_new_tokens)
        explained = _explanation(model, view, generation, attribution, layers, parts)
        made.append((explained, logits))
    return made


@dataclass(frozen=True)
class _Parts:
    """What explaining a generation found: token scores ``[S, L, T]``, the method's
    diagnostics per step, each step's vocabulary logits ``[S, V]``, the contrast tokens
    (None: none), the steps explained and the ``max_new_tokens`` asked for."""

    scores: np.ndarray
    diagnostics: dict[str, list[float]]
    logits: Tensor
    foils: list[int] | None
    steps: list[int]
    max_new_tokens: int


def _explanation(
    model: ExplainableModel,
    view: ExplainableModel,
    generation: Generation,
    attribution: AttributionMethod,
    layers: Layers,
    parts: _Parts,
) -> GenerationExplanation:
    """The generation explanation of what :func:`_explained` found."""
    foils, logits = parts.foils, parts.logits
    step_scores = scores_of_steps(logits, generation.continuation, foils)
    same = [t for t in parts.steps if foils is not None and foils[t] == generation.continuation[t]]
    scores = parts.scores.copy()
    scores[same] = np.nan  # a token against itself: nothing explained (not "all zero")
    diagnostics = {
        key: [float("nan") if step in same else value for step, value in enumerate(values)]
        for key, values in parts.diagnostics.items()
    }
    predicted = logits.argmax(-1).cpu().tolist()
    tokenizer = view.tokenizer
    ids = list(generation.ids)
    tokens = token_names(tokenizer, ids)
    special = special_mask(tokenizer, ids)
    return GenerationExplanation(
        prompt=generation.text,
        tokens=tokens,
        prompt_length=generation.prompt_length,
        scores=scores if layers.axis else scores[:, 0],
        method=attribution.name,
        step_probs=step_scores["probability"],
        predicted=token_names(tokenizer, predicted),
        generated_by_model=generation.generated,
        settings={
            **method_settings(attribution, final_layer=layers.is_final_layer(model.num_layers)),
            "max_new_tokens": parts.max_new_tokens,
            **({"contrast": _names(view, foils)} if foils is not None else {}),
            **({"contrast_is_target_steps": same} if same else {}),
            **precision_settings(model.dtype),
        },
        layers=list(layers.indices) if layers.axis else None,
        special=[bool(s) for s in special],
        model=model.name,
        model_signature=model.weights_signature(),
        diagnostics=diagnostics,
        token_texts=view.encoder.texts(tokens),
        input_ids=ids,
        step_scores=step_scores,
        contrasts=[] if foils is None else _names(view, foils),
        contrast_texts=[] if foils is None else view.encoder.texts(_names(view, foils)),
        explained_steps=parts.steps,
    )


#: the argument that fixes the explained text, as the caller names it (explain's
#: ``continuation=``; explain_generations sets ``continuations=``), in the refusal below
CONTINUATION_ARGUMENT: ContextVar[str] = ContextVar("continuation_argument", default="continuation")


def contrast_steps(
    model: ExplainableModel, generation: Generation, contrast: Continuation | None
) -> list[int] | None:
    """The contrast token of every step (None: no contrast): a continuation with as many
    tokens as the explained one, aligned step by step."""
    if contrast is None:
        return None
    ids = continuation_ids(model, contrast, "contrast")
    if len(ids) != generation.steps:
        # as text, as every view shows a token (' b', not the tokenizer's 'Ġb')
        shown = ", ".join(repr(t) for t in model.encoder.texts(token_names(model.tokenizer, ids)))
        raise InvalidInputError(
            f"the contrast is {len(ids)} token{'' if len(ids) == 1 else 's'} ({shown}) but "
            f"the continuation explained is {generation.steps}; a contrast gives one token per "
            f"step (pass {CONTINUATION_ARGUMENT.get()}= to fix the explained text)"
        )
    return ids


def scores_of_steps(
    logits: Tensor, continuation: Sequence[int], foils: Sequence[int] | None
) -> dict[str, list[float]]:
    """What a user reads to choose the steps worth explaining, from the steps' logits
    ``[S, V]``: each step token's probability, the entropy of the next-token distribution
    and, with contrast tokens, theirs after the same prefix and the difference
    (``same_prefix_prob_diff``: what a contrastive attribution explains; Inseq's
    ``contrast_prob_diff`` reads the contrast after its own prefix, :mod:`.contrast_sequences`)."""
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
        scores["same_prefix_prob_diff"] = (probability - contrast).cpu().tolist()
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
            maps = run_token_maps(attribution, model, forward, layers)[0].float().cpu().numpy()
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
        result = run_attribute(attribution, model, forward, targets, layers)
    values = result.scores[0].float().cpu().numpy()  # [L, T, S]
    for step in range(steps):
        end = generation.prompt_length + step
        scores[step, :, :end] = values[:, :end, step]
    diagnostics = {k: v[0].float().cpu().tolist() for k, v in result.diagnostics.items()}
    return scores, diagnostics, logits


def _each_in_one_pass(
    model: ExplainableModel,
    generations: Sequence[Generation],
    attribution: AttributionMethod,
    layers: Layers,
    foils: Sequence[list[int] | None],
    chosen: Sequence[list[int]],
    progress: Callable[[int], None] | None,
) -> list[_Found]:
    """:func:`_one_pass` for each generation, keeping only its chosen steps' scores (the
    pass scores every step at once; the others are left out, as a prefix method's)."""
    found: list[_Found] = []
    done = 0
    for generation, foil, picked in zip(generations, foils, chosen, strict=True):
        scores, diagnostics, logits = _one_pass(model, generation, attribution, layers, foil)
        left_out = sorted(set(range(generation.steps)) - set(picked))
        scores[left_out] = np.nan
        for values in diagnostics.values():
            for step in left_out:
                values[step] = float("nan")
        found.append((scores, diagnostics, logits))
        done += len(picked)
        if progress is not None:
            progress(done)
    return found


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
    generations: Sequence[Generation],
    attribution: AttributionMethod,
    layers: Layers,
    batches: list[list[Row]],
    progress: Callable[[int], None] | None,
    skip_passes: bool = False,
    foils: Sequence[list[int] | None] | None = None,
) -> list[_Found]:
    """The chosen steps as batches of prefixes (``batches``: the rows of each pass, of any
    generations). ``skip_passes``, for a method that reads token ids only: the prefixes
    run no pass, and no logits come back."""
    foils = foils if foils is not None else [None] * len(generations)
    width = len(layers.indices)
    scores = [np.full((g.steps, width, len(g.ids)), np.nan, np.float32) for g in generations]
    diagnostics: list[dict[str, list[float]]] = [{} for _ in generations]
    logits: list[dict[int, Tensor]] = [{} for _ in generations]
    done = 0
    for rows in batches:
        batch = model.encoder.encode_ids(
            [generations[g].ids[: generations[g].prompt_length + step] for g, step in rows],
            [generations[g].text for g, _ in rows],
        )
        if skip_passes:
            forward = ForwardResult(batch.to(model.device), states={}, logits=torch.empty(0))
        else:
            reader = attribution.attention_reader(layers, batch.reading_positions[:, None])
            forward = model.forward(batch, layers.indices, reader)
            for (g, step), row_logits in zip(rows, forward.logits.float(), strict=True):
                logits[g][step] = row_logits  # the vocabulary at the row's last token
        targets = _row_targets(model, generations, rows, foils)
        with torch.set_grad_enabled(attribution.needs_gradients):
            result = run_attribute(attribution, model, forward, targets, layers)
        values = result.scores[..., 0].float().cpu().numpy()  # [b, L, T]
        # a diagnostic (IG's convergence delta) may hold gradients: plain numbers here
        reported = {
            k: v[:, 0].detach().float().cpu().tolist() for k, v in result.diagnostics.items()
        }
        for index, (g, step) in enumerate(rows):
            real = batch.real_positions(index).cpu().numpy()
            scores[g][step, :, : len(real)] = values[index][:, real]
            for key, value in reported.items():
                steps = diagnostics[g].setdefault(key, [float("nan")] * generations[g].steps)
                steps[step] = value[index]
        done += len(rows)
        if progress is not None:
            progress(done)
    return [
        (scores[g], diagnostics[g], _every_step(logits[g], generation.steps))
        for g, generation in enumerate(generations)
    ]


def _row_targets(
    model: ExplainableModel,
    generations: Sequence[Generation],
    rows: Sequence[Row],
    foils: Sequence[list[int] | None],
) -> Targets:
    """One target per row: its step's token (against the step's contrast token)."""
    wanted = [generations[g].continuation[step] for g, step in rows]
    targets = Targets(
        torch.tensor(wanted).unsqueeze(-1), [[name] for name in _names(model, wanted)], True
    )
    if all(foils[g] is None for g, _ in rows):
        return targets
    others = [foils[g][step] for g, step in rows]  # type: ignore[index]
    return replace(
        targets,
        contrast=torch.tensor(others).unsqueeze(-1),
        contrast_names=[[name] for name in _names(model, others)],
    )


def _every_step(logits: dict[int, Tensor], steps: int) -> Tensor | None:
    """The steps' logits ``[S, V]`` in order, if the passes read every step (else None)."""
    if len(logits) != steps:
        return None
    return torch.stack([logits[step] for step in range(steps)])


def row_batches(
    generations: Sequence[Generation],
    chosen: Sequence[Sequence[int]],
    batch_size: int,
    max_tokens: int | None = None,
) -> list[list[Row]]:
    """The chosen steps of every generation, shortest prefix first, in passes of at most
    ``batch_size`` prefixes and, with ``max_tokens``, at most that many tokens (prefixes x
    the longest, padding included)."""
    rows = [(g, step) for g, steps in enumerate(chosen) for step in steps]
    rows.sort(key=lambda row: generations[row[0]].prompt_length + row[1])  # stable
    widths = [generations[g].prompt_length + step for g, step in rows]
    return [[rows[i] for i in batch] for batch in pack_by_width(widths, batch_size, max_tokens)]


def step_batches(
    generation: Generation,
    batch_size: int,
    max_tokens: int | None = None,
    steps: Sequence[int] | None = None,
) -> list[list[int]]:
    """The steps (all, or ``steps``) in passes of at most ``batch_size`` prefixes and, with
    ``max_tokens``, at most that many tokens (prefixes x the longest, which is the pass's
    last step's)."""
    chosen = list(range(generation.steps)) if steps is None else sorted(steps)
    return [
        [step for _, step in rows]
        for rows in row_batches([generation], [chosen], batch_size, max_tokens)
    ]


def _names(model: ExplainableModel, ids: Sequence[int]) -> list[str]:
    return token_names(model.tokenizer, ids)
