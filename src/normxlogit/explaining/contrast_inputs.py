"""Contrastive inputs: the same target explained under two inputs, tokens aligned.

Inseq's ``contrast_sources`` asks how an output depends on a change of the input ("the
doctor said" against "the nurse said"). Here every method explains the target under the
input and under the contrast input, their tokens are aligned (the longest matching runs of
token ids, :func:`align_tokens`), and an aligned token's score is its score under the
input minus its partner's under the contrast input; a token with no partner (what the
edit changed) keeps its own score. For an additive method (NormXLogit's norm x LogAt,
DeepLift, integrated gradients) the aligned differences split ``f(x) - f(x')``.

What the output does is reported beside the scores: the target's probability under both
inputs and the KL divergence between the two output distributions (for a generation, per
step, with P-CXMI: the log-probability the input adds over the contrast input).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from difflib import SequenceMatcher
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..common.errors import InvalidInputError
from ..common.targets import as_target
from ..explanations.explanation import Explanation
from ..explanations.generation import GenerationExplanation
from ..model.adapter import ExplainableModel
from ..model.targets import output_column


def align_tokens(ids: Sequence[Hashable], other: Sequence[Hashable]) -> list[int | None]:
    """For each position of ``ids``, the position of its partner in ``other`` (None: none),
    from the longest runs of equal tokens (order kept, each token matched once)."""
    partner: list[int | None] = [None] * len(ids)
    matcher = SequenceMatcher(None, list(ids), list(other), autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            partner[block.a + offset] = block.b + offset
    return partner


def aligned_difference(
    scores: np.ndarray, other: np.ndarray, partner: list[int | None]
) -> np.ndarray:
    """``scores`` ``[..., T, K]`` minus each token's partner's in ``other`` ``[..., T', K]``;
    a token without a partner keeps its score."""
    out = scores.copy()
    for position, match in enumerate(partner):
        if match is not None:
            out[..., position, :] -= other[..., match, :]
    return out


def contrast_texts(texts: Sequence[Any], contrast_input: Any, single: bool) -> list[Any]:
    """One contrast input per text: ``contrast_input`` is one text (for one text) or a
    list of as many."""
    items = [contrast_input] if single else contrast_input
    if not isinstance(items, (list, tuple)) or len(items) != len(texts):
        raise InvalidInputError(
            f"{len(texts)} texts but contrast_input is not a list of as many; give one "
            "contrast input per text"
        )
    return list(items)


def with_contrast_inputs(
    model: ExplainableModel,
    made: list[Explanation],
    others: list[Any],
    explain_again: Callable[..., list[Explanation]],
) -> list[Explanation]:
    """``made`` (explanations of the inputs) turned contrastive against ``others``: each
    target (and contrast) is explained again under the contrast input, by
    ``explain_again(texts, targets, contrasts)``, and the scores are the aligned
    differences."""
    again = explain_again(
        others, [as_target(e.targets) for e in made], [as_target(e.contrasts) for e in made]
    )
    clean = _distributions(model, [e.text for e in made])
    shifted = _distributions(model, others)
    out = []
    for row, (mine, theirs) in enumerate(zip(made, again, strict=True)):
        partner = align_tokens(mine.tokens, theirs.tokens)
        scores = aligned_difference(mine.scores_3d(), theirs.scores_3d(), partner)
        scores = scores if mine.has_layers else scores[0]
        if not mine.has_targets_axis:
            scores = scores[..., 0]
        columns = [output_column(model, name) for name in mine.targets]
        p, q = clean[row], shifted[row]
        out.append(
            replace(
                mine,
                scores=scores,
                settings={
                    **mine.settings,
                    "contrast_input": _plain(others[row]),
                    "contrast_input_tokens": theirs.tokens,
                    "contrast_alignment": partner,
                },
                diagnostics={
                    **mine.diagnostics,
                    "target_probability": [float(p[c]) for c in columns],
                    "contrast_input_probability": [float(q[c]) for c in columns],
                    "kl_divergence": [kl_divergence(p, q)] * len(columns),
                },
            )
        )
    return out


def generation_against(
    model: ExplainableModel,
    mine: GenerationExplanation,
    theirs: GenerationExplanation,
    logits: Tensor,
    other_logits: Tensor,
    contrast_prompt: str,
) -> GenerationExplanation:
    """``mine`` made contrastive against the same continuation after ``contrast_prompt``
    (``theirs``): per step, aligned score differences, and the steps' KL divergence,
    P-CXMI and probability under the contrast prompt (``logits``: the steps' ``[S, V]``)."""
    ids, other = list(mine.input_ids or []), list(theirs.input_ids or [])
    partner = align_tokens(ids[: mine.prompt_length], other[: theirs.prompt_length])
    shift = theirs.prompt_length - mine.prompt_length
    partner += [position + shift for position in range(mine.prompt_length, len(ids))]
    scores = mine.scores if mine.has_layers else mine.scores[:, None]
    theirs_scores = theirs.scores if theirs.has_layers else theirs.scores[:, None]
    # steps x layers x tokens: move tokens next to an axis of one "target" per step
    difference = aligned_difference(
        scores.transpose(1, 2, 0)[None], theirs_scores.transpose(1, 2, 0)[None], partner
    )[0].transpose(2, 0, 1)
    logp, logq = logits.float().log_softmax(-1), other_logits.float().log_softmax(-1)
    chosen = torch.tensor(mine.input_ids[mine.prompt_length :]).unsqueeze(-1)
    pcxmi = (logp.gather(-1, chosen) - logq.gather(-1, chosen)).squeeze(-1)
    kl = (logp.exp() * (logp - logq)).sum(-1)
    return replace(
        mine,
        scores=difference if mine.has_layers else difference[:, 0],
        settings={
            **mine.settings,
            "contrast_input": contrast_prompt,
            "contrast_input_tokens": theirs.tokens,
            "contrast_alignment": partner,
        },
        step_scores={
            **mine.step_scores,
            "contrast_input_probability": logq.gather(-1, chosen).squeeze(-1).exp().tolist(),
            "kl_divergence": kl.tolist(),
            "pcxmi": pcxmi.tolist(),
        },
    )


def kl_divergence(p: Tensor, q: Tensor) -> float:
    """KL(p || q) of two probability vectors (0 log 0 = 0)."""
    p, q = p.double(), q.double()
    kept = p > 0
    return float((p[kept] * (p[kept].log() - q[kept].clamp_min(1e-300).log())).sum())


@torch.no_grad()
def _distributions(model: ExplainableModel, texts: Sequence[Any], batch_size: int = 16) -> Tensor:
    """The output distribution ``[N, C]`` for each text (classes or the vocabulary), a
    batch of ``batch_size`` texts per pass."""
    parts = []
    for start in range(0, len(texts), batch_size):
        batch = model.encode(list(texts[start : start + batch_size]), first_index=start)
        parts.append(model.forward(batch).logits.float().softmax(-1).cpu())
    return torch.cat(parts)


def _plain(text: Any) -> Any:
    return list(text) if isinstance(text, tuple) else text
