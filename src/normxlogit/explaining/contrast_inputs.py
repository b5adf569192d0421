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

from ..common.errors import InvalidInputError, refuse_surrogate
from ..common.outputs import type_phrase
from ..explanations.explanation import Explanation
from ..explanations.generation import GenerationExplanation
from ..model.adapter import ExplainableModel
from ..model.targets import recorded_column, recorded_target
from ..model.tasks import TaskKind


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


def contrast_texts(
    texts: Sequence[Any], contrast_input: Any, single: bool, prompts: bool = False
) -> list[Any]:
    """One contrast input per text, of the text's kind: for one text, one text (a str;
    a pair for a sentence pair); for several, a list of as many. ``prompts``: contrast
    prompts of a generation, each a str."""
    if single:
        _check_contrast_input(contrast_input, texts[0], "contrast_input", prompts)
        return [contrast_input]
    if isinstance(contrast_input, str) or _is_pair(contrast_input):
        raise InvalidInputError(
            f"{len(texts)} texts but contrast_input is one text; give a list of "
            f"{len(texts)} contrast inputs, one per text"
        )
    if not isinstance(contrast_input, (list, tuple)):
        raise InvalidInputError(
            f"contrast_input is {_kind(contrast_input)}; give a list of {len(texts)} contrast "
            "inputs, one per text" + _decode_hint(contrast_input)
        )
    if len(contrast_input) != len(texts):
        given = len(contrast_input)
        raise InvalidInputError(
            f"{len(texts)} texts but {given} contrast input{'' if given == 1 else 's'}; give "
            "one per text"
        )
    for index, (other, text) in enumerate(zip(contrast_input, texts, strict=True)):
        _check_contrast_input(other, text, f"contrast_input[{index}]", prompts)
    return list(contrast_input)


def refuse_unchanged(
    tokenizer: Any, texts: Sequence[Any], others: Sequence[Any], single: bool, prompts: bool = False
) -> None:
    """Refuse a contrast input that the model reads as the very tokens of its text
    (the same text, or one that differs only in what the tokenizer drops: case for an
    uncased model, spacing): every token would be aligned with itself, so every score is
    its own minus itself, zero, an explanation of nothing."""
    for index, (text, other) in enumerate(zip(texts, others, strict=True)):
        parts = text if isinstance(text, tuple) else (text,)
        theirs = other if isinstance(other, tuple) else (other,)
        if len(parts) != len(theirs):
            continue
        if all(
            _ids(tokenizer, a) == _ids(tokenizer, b) for a, b in zip(parts, theirs, strict=True)
        ):
            where = "contrast_input" if single else f"contrast_input[{index}]"
            what = "prompt" if prompts else "text"
            raise InvalidInputError(
                f"{where} ({other!r:.80}) reads as the same tokens as the {what} it contrasts "
                f"with: every token is aligned with itself, so every score would be zero, an "
                f"explanation of nothing; give a contrast input that differs (the edited {what})"
            )


def _ids(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _check_contrast_input(other: Any, text: Any, where: str, prompt: bool) -> None:
    """``other`` is a contrast input for ``text``: a non-empty text of its kind."""
    one = "a contrast prompt (a str)" if prompt else "a text (a str, or a pair for a pair)"
    if isinstance(other, str) or (_is_pair(other) and not prompt):
        parts = (other,) if isinstance(other, str) else other
        if any(not part.strip() for part in parts):
            raise InvalidInputError(
                f"{where} is empty or blank ({other!r}); give "
                + ("the prompt to explain the continuation after" if prompt else "the edited text")
            )
        for part in parts:
            refuse_surrogate(part, where)
        if isinstance(other, tuple) != isinstance(text, tuple):
            mine, theirs = (
                ("a pair", "one text") if isinstance(text, tuple) else ("one text", "a pair")
            )
            raise InvalidInputError(
                f"{where} is {theirs} but the text explained is {mine}; give {mine} as its "
                "contrast input"
            )
        return
    if isinstance(other, (list, tuple)):
        raise InvalidInputError(
            f"{where} is {_kind(other)}; for one text it is {one} (a list of contrast inputs "
            "goes with a list of texts)"
        )
    raise InvalidInputError(f"{where} is {_kind(other)}; give {one}" + _decode_hint(other))


def _is_pair(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value)


def _kind(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, (list, tuple)):
        return f"{type_phrase(value)} of {len(value)}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"the {type(value).__name__} {value!r}"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _decode_hint(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return " (decode bytes first: data.decode('utf-8'))"
    return ""


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
    regression = model.task.kind is TaskKind.REGRESSION
    # a text whose target is its contrast has nothing explained (NaN): left as it is
    kept = [row for row, e in enumerate(made) if not e.contrast_is_target]
    again = explain_again(
        [others[row] for row in kept],
        [None if regression else recorded_target(model, made[row].targets) for row in kept],
        [recorded_target(model, made[row].contrasts) for row in kept],
    )
    # read where the scores were read: a masked LM's mask_position, when one was given
    position = made[0].settings.get("mask_position") if made else None
    clean = _distributions(model, [made[row].text for row in kept], position)
    shifted = _distributions(model, [others[row] for row in kept], position)
    out = list(made)
    for at, (row, theirs) in enumerate(zip(kept, again, strict=True)):
        mine = made[row]
        partner = align_tokens(mine.tokens, theirs.tokens)
        scores = aligned_difference(mine.scores_3d(), theirs.scores_3d(), partner)
        scores = scores if mine.has_layers else scores[0]
        if not mine.has_targets_axis:
            scores = scores[..., 0]
        p, q = clean[at], shifted[at]
        if regression:  # one output, a value: the value under both inputs
            shift = {"target_value": [float(p[0])], "contrast_input_value": [float(q[0])]}
        else:
            columns = [recorded_column(model, name) for name in mine.targets]
            probabilities = p.softmax(-1), q.softmax(-1)
            shift = {
                "target_probability": [float(probabilities[0][c]) for c in columns],
                "contrast_input_probability": [float(probabilities[1][c]) for c in columns],
                "kl_divergence": [kl_divergence(*probabilities)] * len(columns),
            }
        out[row] = replace(
            mine,
            scores=scores,
            settings={
                **mine.settings,
                "contrast_input": _plain(others[row]),
                "contrast_input_tokens": theirs.tokens,
                "contrast_alignment": partner,
            },
            diagnostics={**mine.diagnostics, **shift},
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
    kl = (logp.exp() * (logp - logq)).sum(-1).clamp_min(0)  # rounding: never below 0
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
    """KL(p || q) of two probability vectors (0 log 0 = 0), at least 0: float rounding
    of two almost equal distributions gives -1e-7, which no divergence is."""
    p, q = p.double(), q.double()
    kept = p > 0
    return max(0.0, float((p[kept] * (p[kept].log() - q[kept].clamp_min(1e-300).log())).sum()))


@torch.no_grad()
def _distributions(
    model: ExplainableModel,
    texts: Sequence[Any],
    mask_position: int | None = None,
    batch_size: int = 16,
) -> Tensor:
    """The outputs ``[N, C]`` for each text (class or vocabulary logits; a regressor's
    value; a masked LM's at ``mask_position``, or its first mask), a batch of
    ``batch_size`` texts per pass."""
    parts = [torch.empty(0)]
    for start in range(0, len(texts), batch_size):
        chunk = list(texts[start : start + batch_size])
        batch = model.encode(chunk, mask_position=mask_position, first_index=start)
        parts.append(model.forward(batch).logits.float().cpu())
    return torch.cat(parts) if len(parts) > 1 else parts[0]


def _plain(text: Any) -> Any:
    return list(text) if isinstance(text, tuple) else text
