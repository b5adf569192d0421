"""Inseq's ``contrast_prob_diff``: the step token's probability minus a contrast sequence's.

Inseq 0.7.1's step function of that name takes ``contrast_targets``, a whole alternative
sequence (for a decoder, its prompt included), and reads each step's contrast token after
the contrast's *own* prefix: step ``t`` (position ``i = P + t``) scores
``p(y_i | y_<i) - p(c_j | c_<j)``. With no alignment given, Inseq pairs the positions 1:1
from the end of both sequences (``j = len(c) - (len(y) - i)``, or the contrast's last
token where that is not > 0), so a contrast of another length is right-aligned.

The project's other difference, ``same_prefix_prob_diff``, reads both tokens after the
explained prefix (``p(y_i | y_<i) - p(c_t | y_<i)``): the quantity a contrastive
attribution explains (and what Inseq's attribution itself uses, which keeps the original
inputs). The two agree at a step whose prefixes are equal.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ..common.errors import InvalidInputError
from ..model.adapter import ExplainableModel
from .steps import Continuation, continuation_ids, rows_batch


def inseq_aligned_positions(total: int, prompt_length: int, contrast_length: int) -> list[int]:
    """The contrast position Inseq 0.7.1 reads for each step (positions ``prompt_length ..
    total - 1``) when no ``contrast_targets_alignments`` are given: 1:1 from the end of
    both sequences, the contrast's last token where it runs out."""
    positions = []
    for position in range(prompt_length, total):
        aligned = contrast_length - (total - position)
        positions.append(aligned if aligned > 0 else contrast_length - 1)
    return positions


def contrast_prob_diff(
    model: ExplainableModel,
    ids: Sequence[int],
    prompt_length: int,
    contrast: Continuation,
) -> list[float]:
    """Inseq's ``contrast_prob_diff`` of each generated step of ``ids`` (the prompt's
    ``prompt_length`` tokens, then the continuation; e.g. a generation explanation's
    ``input_ids`` and ``prompt_length``) against ``contrast``: a whole contrast sequence
    of any length, prompt included, as token ids or a text (tokenised with no special
    tokens, as Inseq reads ``contrast_targets``). Two passes, no gradients."""
    view = model.language_model_view()
    ids = continuation_ids(view, ids)
    contrast_ids = continuation_ids(view, contrast, "contrast sequence")
    if not 0 < prompt_length < len(ids):
        raise InvalidInputError(
            f"prompt_length {prompt_length} leaves no prompt or no generated token of the "
            f"{len(ids)} ids; give 1 .. {len(ids) - 1}"
        )
    steps = range(prompt_length, len(ids))
    probability = sequence_probabilities(view, ids, steps)
    return inseq_prob_diff(view, probability, len(ids), prompt_length, contrast_ids)


def inseq_prob_diff(
    model: ExplainableModel,
    probability: Sequence[float] | Tensor,
    total: int,
    prompt_length: int,
    contrast_ids: Sequence[int],
) -> list[float]:
    """The steps' probabilities (``total - prompt_length`` of them, ``model``: a language
    model view) minus each aligned contrast token's after its own prefix."""
    if len(contrast_ids) < 2:
        raise InvalidInputError(
            f"the contrast sequence is {len(contrast_ids)} token(s); Inseq reads each contrast "
            "token after its own prefix, so it needs at least 2"
        )
    limit = model.encoder.max_length
    if len(contrast_ids) > limit:
        raise InvalidInputError(
            f"the contrast sequence is {len(contrast_ids)} tokens, more than the {limit} this "
            "model reads; shorten it"
        )
    positions = inseq_aligned_positions(total, prompt_length, len(contrast_ids))
    contrast = sequence_probabilities(model, contrast_ids, positions)
    mine = torch.as_tensor(probability, dtype=torch.float32)
    return (mine - contrast).tolist()


@torch.no_grad()
def sequence_probabilities(
    model: ExplainableModel, ids: Sequence[int], positions: Sequence[int]
) -> Tensor:
    """``p(ids[j] | ids[:j])`` for each ``j`` of ``positions`` (all > 0), from one pass
    over ``ids`` (a causal model: a position reads only the tokens before it)."""
    batch = rows_batch(model, [list(ids)], "")
    states = model.forward(batch).final_states[0]
    reading = torch.tensor([j - 1 for j in positions], device=states.device)
    logp = model.all_logits(states[reading]).float().log_softmax(-1)
    chosen = torch.tensor([ids[j] for j in positions], device=logp.device).unsqueeze(-1)
    return logp.gather(-1, chosen).squeeze(-1).exp().cpu()
