"""A generation as token ids, and the batches its steps are explained in.

Step ``t`` of a generation predicts token ``y_t`` from the prompt and ``y_0 .. y_{t-1}``:
its input is the prefix ``ids[:P + t]`` (P prompt tokens) and its target ``ids[P + t]``.
A causal model's state at a position does not depend on later tokens, so one forward
pass over the whole sequence holds every step's states; methods that need nothing else
(:attr:`~normxlogit.methods.AttributionMethod.prefix_invariant`) explain all steps from
it. Every other method sees the steps as a batch of prefixes, one row per step (only the
steps asked for: ``explain_steps=`` picks them, e.g. every fifth step, which the pi-Soft
protocol scores).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import torch

from ..common.errors import InvalidInputError
from ..model.adapter import ExplainableModel
from ..model.inputs import Batch

#: how many tokens a generation writes when the caller does not say
DEFAULT_MAX_NEW_TOKENS = 32

Continuation = str | Sequence[int]


@dataclass(frozen=True)
class Generation:
    """Prompt and continuation token ids (``ids = prompt + continuation``)."""

    text: str
    ids: tuple[int, ...]
    prompt_length: int
    #: whether the model wrote the continuation (greedy) or the caller gave it
    generated: bool

    @property
    def steps(self) -> int:
        return len(self.ids) - self.prompt_length

    @property
    def continuation(self) -> tuple[int, ...]:
        return self.ids[self.prompt_length :]


def prompt_ids(model: ExplainableModel, prompt: str) -> list[int]:
    """The prompt's token ids as the model reads them (chat template applied, if any)."""
    chat = model.task.prompt
    tokenizer = model.tokenizer
    if chat is not None:
        rendered = chat.render(tokenizer, prompt)
        return list(tokenizer(rendered, add_special_tokens=False)["input_ids"])
    return list(tokenizer(prompt)["input_ids"])


def continuation_ids(model: ExplainableModel, continuation: Continuation) -> list[int]:
    """A given continuation as ids: a text tokenised on its own (no special tokens), or
    token ids as they are (checked against the vocabulary)."""
    if isinstance(continuation, str):
        if not continuation:
            raise InvalidInputError("the continuation is empty; give the text to explain")
        return list(model.tokenizer(continuation, add_special_tokens=False)["input_ids"])
    ids = list(continuation)
    size = len(model.tokenizer)
    bad = [i for i in ids if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < size]
    if bad or not ids:
        what = f"{bad[0]!r} is not a token id (0..{size - 1})" if bad else "it is empty"
        raise InvalidInputError(f"continuation token ids: {what}; pass a text or token ids")
    return ids


@torch.no_grad()
def greedy_continuation(model: ExplainableModel, ids: list[int], max_new_tokens: int) -> list[int]:
    """What the model writes after ``ids``, greedily (the paper: deterministic, top_p=1),
    stopping after an end-of-sequence token."""
    tokenizer = model.tokenizer
    stop = {i for i in _end_ids(model) if i is not None}
    inputs = torch.tensor([ids], device=model.device)
    output = model.model.generate(
        input_ids=inputs,
        attention_mask=torch.ones_like(inputs),
        max_new_tokens=max_new_tokens,
        do_sample=False,
        num_beams=1,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=sorted(stop) or None,
        top_p=None,
        top_k=None,
        temperature=None,
    )
    new = output[0, len(ids) :].tolist()
    for index, token in enumerate(new):
        if token in stop:
            return new[: index + 1]
    return new


def _end_ids(model: ExplainableModel) -> list[int | None]:
    config = getattr(model.model, "generation_config", None)
    ends = getattr(config, "eos_token_id", None) if config is not None else None
    ends = list(ends) if isinstance(ends, (list, tuple)) else [ends]
    return [*ends, model.tokenizer.eos_token_id]


def build_generation(
    model: ExplainableModel,
    prompt: str,
    continuation: Continuation | None,
    max_new_tokens: int,
) -> Generation:
    """The prompt's ids followed by the continuation's: given, or generated greedily."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidInputError("a generation starts from a prompt: pass a non-empty str")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise InvalidInputError(f"max_new_tokens must be an int, got {max_new_tokens!r}")
    if max_new_tokens < 1:
        raise InvalidInputError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    start = prompt_ids(model, prompt)
    if continuation is not None:
        more = continuation_ids(model, continuation)
    else:
        _check_length(model, len(start) + max_new_tokens, "the prompt and max_new_tokens")
        more = greedy_continuation(model, start, max_new_tokens)
        if not more:
            raise InvalidInputError("the model generated nothing after the prompt")
    _check_length(model, len(start) + len(more), "the prompt and its continuation")
    return Generation(prompt, tuple(start + more), len(start), continuation is None)


def per_prompt_continuations(
    continuation: Continuation | Sequence[Continuation] | None, prompts: int
) -> list[Continuation | None]:
    """One continuation per prompt: ``continuation`` is one for every prompt (a text or
    token ids) or a list of one per prompt (texts or lists of ids)."""
    if continuation is None or isinstance(continuation, str):
        return [continuation] * prompts
    items = list(continuation)
    if all(isinstance(item, int) for item in items):  # token ids: one for every prompt
        return [items] * prompts
    if len(items) != prompts or any(item is None or isinstance(item, int) for item in items):
        raise InvalidInputError(
            f"{prompts} prompts but continuation is a list of {len(items)} items; give one "
            "continuation (a text or token ids) for every prompt, or a list of one per prompt"
        )
    return items


def chosen_steps(generation: Generation, steps: Sequence[int] | None) -> list[int]:
    """The steps to explain: every step (None), or those of ``steps`` the generation has
    (a shorter generation has fewer), sorted; a generation left with none is refused."""
    if steps is None:
        return list(range(generation.steps))
    wanted = list(steps)
    bad = [s for s in wanted if isinstance(s, bool) or not isinstance(s, Integral) or s < 0]
    if bad:
        raise InvalidInputError(f"explain_steps are step numbers (0 is the first), got {bad[0]!r}")
    chosen = sorted({int(s) for s in wanted if s < generation.steps})
    if not chosen:
        raise InvalidInputError(
            f"explain_steps {sorted(set(wanted))} pick no step of a generation of "
            f"{generation.steps} steps (0 .. {generation.steps - 1})"
        )
    return chosen


def _check_length(model: ExplainableModel, total: int, what: str) -> None:
    limit = model.encoder.max_length
    if total > limit:
        raise InvalidInputError(
            f"{what} come to {total} tokens, more than the {limit} this model reads; "
            "shorten the prompt or ask for fewer tokens"
        )


def rows_batch(model: ExplainableModel, rows: Sequence[Sequence[int]], text: str) -> Batch:
    """A padded batch of token-id rows, read at each row's last token."""
    return model.encoder.encode_ids(rows, [text] * len(rows))


def prefix_rows(generation: Generation, steps: Sequence[int]) -> list[tuple[int, ...]]:
    """The input of each of ``steps``: the prompt and the tokens generated before it."""
    return [generation.ids[: generation.prompt_length + step] for step in steps]
