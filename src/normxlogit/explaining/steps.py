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
from numbers import Integral, Real

import torch

from ..common.counts import positive_count, step_numbers
from ..common.errors import InvalidInputError, refuse_surrogate
from ..common.numbering import text_name, texts_are_named
from ..common.outputs import lone_item, short_value, type_phrase
from ..model.adapter import ExplainableModel
from ..model.inputs import Batch
from ..model.segment_values import prompt_ids

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


#: what to give for each kind of token sequence, for messages
_SEQUENCES = {
    "continuation": "the text to explain (or its token ids)",
    "contrast": "a contrast continuation with one token per step (a text, or token ids)",
}


def check_continuation(value: object, what: str = "continuation") -> None:
    """Refuse, before any model work, what is neither a text nor a list of token ids
    (``what``: ``continuation`` or ``contrast``, named in the message)."""
    give = _SEQUENCES.get(what, "a text or token ids")
    if isinstance(value, str):
        if not value:
            raise InvalidInputError(f"the {what} is empty; give {give}")
        refuse_surrogate(value, f"the {what} {value!r}")
        return
    if isinstance(value, (bytes, bytearray)):
        raise InvalidInputError(
            f"the {what} is bytes; give {give}: decode the bytes first (data.decode('utf-8'))"
        )
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        value = value.item()  # a 0-d tensor or array: the one number it holds
    if isinstance(value, Integral) and not isinstance(value, bool):
        raise InvalidInputError(
            f"the {what} is the int {value}; give {give}: a list of ids, [{value}] for the "
            f"one token {value}"
        )
    if not isinstance(value, Sequence) and not hasattr(value, "tolist"):
        raise InvalidInputError(f"the {what} is {_kind(value)}; give {give}")
    items = value.tolist() if hasattr(value, "tolist") else list(value)
    items = [_plain_id(item) for item in items]  # [np.array(7)]: the id it holds
    if not items:
        raise InvalidInputError(f"the {what} is empty; give {give}")
    if any(isinstance(item, str) for item in items):
        raise InvalidInputError(
            f"the {what} is a list of texts; give one {what} for the prompt, as a text or a "
            "list of token ids (explain prompts with different contrasts one at a time)"
            if what == "contrast"
            else f"the {what} is a list of texts; give a text or a list of token ids"
        )
    bad = [i for i in items if isinstance(i, bool) or not isinstance(i, Integral)]
    if bad:
        raise InvalidInputError(
            f"{what} token ids: {short_value(bad[0])} is not a token id; give a text or a "
            "list of ints"
        )


def _kind(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, float):
        return f"the float {value!r}"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def continuation_ids(
    model: ExplainableModel, continuation: Continuation, what: str = "continuation"
) -> list[int]:
    """A given continuation as ids: a text tokenised on its own (no special tokens), or
    token ids as they are (checked against the vocabulary). ``what`` names it in messages."""
    check_continuation(continuation, what)
    if isinstance(continuation, str):
        ids = list(model.tokenizer(continuation, add_special_tokens=False)["input_ids"])
        if not ids:
            raise InvalidInputError(
                f"the {what} {continuation!r} has no tokens; give {_SEQUENCES.get(what, what)}"
            )
        return ids
    items = continuation.tolist() if hasattr(continuation, "tolist") else list(continuation)
    ids = [int(_plain_id(i)) for i in items]
    size = len(model.tokenizer)
    bad = [i for i in ids if not 0 <= i < size]
    if bad:
        raise InvalidInputError(
            f"{what} token ids: {short_value(bad[0])} is not a token id (0..{size - 1}); "
            "pass a text or token ids"
        )
    return ids


#: prompts generated together in one batch (left-padded to the longest of them)
GREEDY_BATCH = 16
#: a batched step whose best two scores lie closer than this (in float32; in units of the
#: scores' rounding step times their size in half precision) is generated again alone:
#: padding may move a score by rounding, and no near-tie may decide a token
GREEDY_TIE_MARGIN = 1e-3


def greedy_continuation(model: ExplainableModel, ids: list[int], max_new_tokens: int) -> list[int]:
    """What the model writes after ``ids``, greedily (the paper: deterministic, top_p=1),
    stopping after an end-of-sequence token."""
    return _greedy_batch(model, [ids], max_new_tokens, margins=False)[0][0]


def greedy_continuations(
    model: ExplainableModel,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    batch_size: int = GREEDY_BATCH,
) -> list[list[int]]:
    """:func:`greedy_continuation` of each prompt, ``batch_size`` prompts of similar length
    at a time (left-padded, shortest first): one decoding loop for many prompts, a GPU's
    way. The same tokens as one prompt at a time: a prompt whose batched decoding met a
    near-tie (top two logits within :data:`GREEDY_TIE_MARGIN`) is decoded again alone."""
    batch_size = positive_count(batch_size, "batch_size")
    made: list[list[int] | None] = [None] * len(prompts)
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    for start in range(0, len(order), batch_size):
        group = order[start : start + batch_size]
        if len(group) == 1:
            made[group[0]] = greedy_continuation(model, list(prompts[group[0]]), max_new_tokens)
            continue
        continuations, close = _greedy_batch(
            model, [list(prompts[i]) for i in group], max_new_tokens, margins=True
        )
        for i, tokens, tied in zip(group, continuations, close, strict=True):
            made[i] = (
                greedy_continuation(model, list(prompts[i]), max_new_tokens) if tied else tokens
            )
    return [tokens or [] for tokens in made]


@torch.no_grad()
def _greedy_batch(
    model: ExplainableModel, prompts: list[list[int]], max_new_tokens: int, *, margins: bool
) -> tuple[list[list[int]], list[bool]]:
    """Greedy continuations of left-padded ``prompts`` in one ``generate`` call, each cut
    after its first end token, and (with ``margins``) whether a step it kept was a
    near-tie."""
    tokenizer = model.tokenizer
    stop = {i for i in _end_ids(model) if i is not None}
    pad = tokenizer.pad_token_id
    pad = pad if pad is not None else (min(stop) if stop else 0)
    width = max(len(ids) for ids in prompts)
    inputs = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask = torch.zeros_like(inputs)
    for row, ids in enumerate(prompts):
        inputs[row, width - len(ids) :] = torch.tensor(ids)
        mask[row, width - len(ids) :] = 1
    output = model.model.generate(
        input_ids=inputs.to(model.device),
        attention_mask=mask.to(model.device),
        max_new_tokens=max_new_tokens,
        do_sample=False,
        num_beams=1,
        pad_token_id=pad,
        eos_token_id=sorted(stop) or None,
        top_p=None,
        top_k=None,
        temperature=None,
        output_scores=margins,
        return_dict_in_generate=True,
    )
    new = output.sequences[:, width:].tolist()
    kept = [_cut_at_end(tokens, stop) for tokens in new]
    if not margins:
        return kept, [False] * len(prompts)
    scores = torch.stack(output.scores, dim=1)  # rows x steps x vocabulary, as greedy chose
    top = scores.float().topk(2, dim=-1).values
    gaps = (top[..., 0] - top[..., 1]).cpu()
    largest = torch.nan_to_num(top[..., 0], posinf=0.0, neginf=0.0).abs().max().item()
    margin = _tie_margin(scores.dtype, largest)
    tied = [bool((gaps[row, : len(tokens)] < margin).any()) for row, tokens in enumerate(kept)]
    return kept, tied


def _tie_margin(dtype: torch.dtype, largest: float) -> float:
    """How close two scores of ``dtype`` may lie before padding could swap them."""
    if dtype in (torch.float32, torch.float64):
        return GREEDY_TIE_MARGIN
    return max(GREEDY_TIE_MARGIN, 4 * torch.finfo(dtype).eps * largest)


def _cut_at_end(tokens: list[int], stop: set[int]) -> list[int]:
    for index, token in enumerate(tokens):
        if token in stop:
            return tokens[: index + 1]
    return tokens


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
    return build_generations(model, [prompt], [continuation], max_new_tokens)[0]


def build_generations(
    model: ExplainableModel,
    prompts: Sequence[str],
    continuations: Sequence[Continuation | None],
    max_new_tokens: int,
) -> list[Generation]:
    """:func:`build_generation` of each prompt; the prompts without a continuation are
    generated together (:func:`greedy_continuations`), every input checked first."""
    max_new_tokens = positive_count(max_new_tokens, "max_new_tokens")
    starts: list[list[int]] = []
    for prompt in prompts:
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidInputError("a generation starts from a prompt: pass a non-empty str")
        starts.append(prompt_ids(model, prompt))
    given = [
        None if wanted is None else continuation_ids(model, wanted) for wanted in continuations
    ]
    asked = [i for i, more in enumerate(given) if more is None]
    for start, more in zip(starts, given, strict=True):
        if more is None:
            _check_length(model, len(start) + max_new_tokens, "the prompt and max_new_tokens")
        else:
            _check_length(model, len(start) + len(more), "the prompt and its continuation")
    written = greedy_continuations(model, [starts[i] for i in asked], max_new_tokens)
    for i, more in zip(asked, written, strict=True):
        if not more:
            raise InvalidInputError("the model generated nothing after the prompt")
        given[i] = more
    return [
        Generation(prompt, tuple(start + (more or [])), len(start), wanted is None)
        for prompt, start, more, wanted in zip(prompts, starts, given, continuations, strict=True)
    ]


def _is_id(item: object) -> bool:
    """Whether ``item`` is a token id: an int, never a bool."""
    return isinstance(item, int) and not isinstance(item, bool)


def _plain_id(item: object) -> object:
    """A numpy or torch integer as Python's int (a token id), anything else as it is."""
    if isinstance(item, Integral) and not isinstance(item, bool):
        return int(item)
    if getattr(item, "ndim", None) == 0 and hasattr(item, "item"):
        return _plain_id(item.item())
    return item


def per_prompt_continuations(
    continuation: Continuation | Sequence[Continuation] | None, prompts: int
) -> list[Continuation | None]:
    """One continuation per prompt: ``continuation`` is one for every prompt (a text or
    token ids) or a list of one per prompt (texts or lists of ids)."""
    continuation = lone_item(continuation)  # np.array(" good"): the text it holds
    if continuation is None or isinstance(continuation, str):
        return [continuation] * prompts
    listed = hasattr(continuation, "tolist") and not isinstance(continuation, (list, tuple))
    items = continuation.tolist() if listed else None
    # an array, tensor or Series holds the list it lists (one continuation per prompt, as
    # explain_generations reads it), unless it is one continuation's ids (a 1-d of numbers)
    if not isinstance(continuation, (list, tuple)) and not (
        isinstance(items, list) and not all(isinstance(item, Real) for item in items)
    ):
        check_continuation(continuation)  # an int, bytes, a dict...: refused with the fix
    if items is None:
        items = list(continuation)
    items = [_plain_id(item) for item in items]
    if all(_is_id(item) for item in items):  # token ids: one for every prompt
        return [items] * prompts
    numbers = [i for i, v in enumerate(items) if isinstance(v, Real) and not _is_id(v)]
    if numbers and any(_is_id(item) for item in items):  # ids with a float or bool, say
        at, stray = numbers[0], items[numbers[0]]
        raise InvalidInputError(
            f"continuation holds token ids and, at [{at}], {type_phrase(stray)} {stray!r:.40}; "
            "token ids are whole numbers (ints): give a text or a list of ints"
        )
    if len(items) == prompts:  # one per prompt: an entry that is none is named
        for index, item in enumerate(items):
            if item is None:
                raise InvalidInputError(
                    f"continuation[{index}] is None; give each prompt's continuation (a text "
                    "or token ids), or leave continuation out and pass generate=True"
                )
            if _is_id(item):
                shown = [[v] if _is_id(v) else v for v in items]
                raise InvalidInputError(
                    f"continuation[{index}] is the int {item}; each prompt's continuation is "
                    f"a text or a list of token ids (e.g. continuation={shown!r:.80})"
                )
        return items
    raise InvalidInputError(
        f"{_counted(prompts, 'prompt')} but continuation is a list of "
        f"{_counted(len(items), 'item')}; give one continuation (a text or token ids) for "
        "every prompt, or a list of one per prompt"
    )


def _counted(count: int, word: str) -> str:
    """``count`` and ``word``, plural unless the count is 1 ("1 item", "2 items")."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def checked_explain_steps(steps: object) -> list[int] | None:
    """``explain_steps`` as a list of step numbers, read once (a generator too): None, or
    a list, tuple, range or array of ints >= 0; one number, a text or a mapping is refused
    with the fix (``explain_steps=2`` means ``[2]``), as evaluate's ``steps=`` is. An
    empty list (a filter that kept no step) is refused: it would explain nothing."""
    wanted = step_numbers(steps, "explain_steps")
    if wanted == []:
        raise InvalidInputError(
            "explain_steps is empty: give at least one step number (0 is the first), or "
            "leave it out to explain every step"
        )
    return wanted


def chosen_steps(generation: Generation, steps: Sequence[int] | None) -> list[int]:
    """The steps to explain: every step (None), or those of ``steps`` the generation has
    (a shorter generation has fewer, maybe none: see :func:`steps_past_end`), sorted."""
    if steps is None:
        return list(range(generation.steps))
    wanted = checked_explain_steps(steps) or []
    return sorted({s for s in wanted if s < generation.steps})


def steps_past_end(
    generations: Sequence[Generation], steps: Sequence[int] | None, max_new_tokens: int
) -> list[int]:
    """The generations (indices) that have none of ``explain_steps`` ``steps`` (checked),
    as they ended before the first: refused, before any explaining, when that is every
    generation (naming why each ended there and the fix); else the caller explains the
    others and warns (:func:`past_end_words`)."""
    if steps is None:
        return []
    empty = [i for i, g in enumerate(generations) if not chosen_steps(g, steps)]
    if len(empty) < len(generations):
        return empty
    wanted = sorted(set(steps))
    if len(generations) == 1 and texts_are_named() and text_name(0) != "the text":
        # one prompt of a caller's several (explain_generations explains each alone)
        why = (
            f"pick no step: {past_end_words(generations, [0], wanted, max_new_tokens)}; "
            f"{_fix(generations[0], max_new_tokens)}"
        )
    elif len(generations) == 1:
        g = generations[0]
        why = (
            f"pick no step of the generation: it {_ended(g, wanted[0], max_new_tokens)}; "
            f"{_fix(g, max_new_tokens)}"  # _ended says its steps: said once
        )
    else:
        named = past_end_words(generations, empty, wanted, max_new_tokens)
        why = f"pick no step of any generation: {named}; pick an earlier step"
    raise InvalidInputError(f"explain_steps {steps_phrase(wanted)} {why}")


def past_end_words(
    generations: Sequence[Generation],
    indices: Sequence[int],
    steps: Sequence[int],
    max_new_tokens: int,
) -> str:
    """Why each of ``indices`` has none of ``steps``: ``the generation of text 2 ('The
    capital...') ended at step 1 (end-of-sequence), before step 5``."""
    first = min(steps)
    parts = []
    for i in indices:
        g = generations[i]
        text = g.text if len(g.text) <= 40 else g.text[:37] + "..."
        whose = "generation of" if g.generated else "continuation given for"
        parts.append(f"the {whose} {text_name(i)} ({text!r}) {_ended(g, first, max_new_tokens)}")
    return "; ".join(parts)


def steps_phrase(steps: Sequence[int]) -> str:
    """``steps`` for a message, sorted, each shortened as :func:`short_value` does (a
    step of 400 digits is named by its count of digits)."""
    return f"[{', '.join(short_value(step) for step in sorted(set(steps)))}]"


def _ended(generation: Generation, step: int, max_new_tokens: int) -> str:
    """Why ``generation`` ends before ``step``, as a predicate."""
    last = generation.steps - 1
    if not generation.generated:
        held = "1 step (step 0)" if last == 0 else f"{generation.steps} steps (0 .. {last})"
        return f"has {held}, none from step {short_value(step)}"
    if generation.steps < max_new_tokens:
        return f"ended at step {last} (end-of-sequence), before step {short_value(step)}"
    steps = "step 0 only" if last == 0 else f"steps 0 .. {last}"
    return (
        f"stopped at max_new_tokens={short_value(max_new_tokens)} ({steps}), before step "
        f"{short_value(step)}"
    )


def _fix(generation: Generation, max_new_tokens: int) -> str:
    if not generation.generated:
        return "pick an earlier step, or give a longer continuation"
    if generation.steps < max_new_tokens:
        return "pick an earlier step (more max_new_tokens cannot help: the model ended it)"
    return "pick an earlier step, or ask for more max_new_tokens"


def _check_length(model: ExplainableModel, total: int, what: str) -> None:
    limit = model.encoder.max_length
    if total > limit:
        raise InvalidInputError(
            f"{what} come to {short_value(total)} tokens, more than the {limit} this model "
            "reads; "
            "shorten the prompt or ask for fewer tokens"
        )


def rows_batch(model: ExplainableModel, rows: Sequence[Sequence[int]], text: str) -> Batch:
    """A padded batch of token-id rows, read at each row's last token."""
    return model.encoder.encode_ids(rows, [text] * len(rows))


def prefix_rows(generation: Generation, steps: Sequence[int]) -> list[tuple[int, ...]]:
    """The input of each of ``steps``: the prompt and the tokens generated before it."""
    return [generation.ids[: generation.prompt_length + step] for step in steps]
