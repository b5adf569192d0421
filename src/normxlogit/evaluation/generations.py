"""Faithfulness of generation explanations, step by step (the pi-Soft paper, section 4.2).

Each evaluated step is a next-token prediction in its own right: its input is the prompt
and the tokens generated before it, its output the distribution of the step's token over
the vocabulary, and its scores the step's row. The metrics perturb that context as the
step's scores say and compare distributions, exactly as for a prompted classifier; the
paper evaluates every fifth step and averages over the steps of a generation, then over
generations (what :meth:`EvaluationResult.summary` does when the frame has a ``step``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from numbers import Integral
from typing import Any

from ..common.counts import step_numbers
from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.numbering import text_name, texts_are_named, texts_called, texts_named
from ..common.outputs import with_article
from ..explanations.explanation import Explanation
from ..explanations.generation import GenerationExplanation
from ..model.adapter import ExplainableModel
from . import EvaluationResult, Protocol, evaluate
from .context import check_one_setting, explained_groups
from .protocol import given_protocol
from .registry import given_metrics, metric_info

GENERATION_METRICS = ("pi_soft_nc", "pi_soft_ns")

Generations = Sequence[GenerationExplanation] | Mapping[str, Sequence[GenerationExplanation]]


def evaluated_steps(
    explanation: GenerationExplanation, every: int = 5, steps: Sequence[int] | None = None
) -> list[int]:
    """The steps scored: ``steps`` as given (those the generation has), else every
    ``every``-th step from the first (0, 5, 10, ...)."""
    steps = step_numbers(steps, "steps")
    if steps is not None:
        return sorted({s for s in steps if s < explanation.steps})
    return list(range(0, explanation.steps, every))


def evaluate_generations(
    model: ExplainableModel,
    explanations: Generations,
    metrics: Sequence[str] | None = None,
    protocol: Protocol | None = None,
    *,
    every: int = 5,
    steps: Sequence[int] | None = None,
    layer: int = -1,
    batch_size: int = 16,
    rows_per_forward: int | None = None,
    tokens_per_forward: int | None = None,
    max_tokens_per_batch: int | None = None,
    progress: bool | Callable[[float], None] | None = None,
) -> EvaluationResult:
    """Score generation explanations per step; the frame gains a ``step`` column and its
    ``instance`` numbers the generations.

    Args:
        explanations: generation explanations of one or more methods of the same
            generations (a list, or ``{name: explanations}``).
        metrics: default ``pi_soft_nc`` and ``pi_soft_ns``, the pi-Soft paper's.
        every: score every ``every``-th step (the paper: 5).
        steps: these steps instead of every ``every``-th.

    The other arguments are those of :func:`normxlogit.evaluate`.
    """
    if isinstance(every, bool) or not isinstance(every, Integral) or every < 1:
        raise InvalidInputError(f"every must be a whole number of steps >= 1, got {every!r}")
    every = int(every)
    steps = step_numbers(steps, "steps")  # read once, as explain_steps= is
    protocol = given_protocol(protocol)
    groups = _by_method(explanations)
    metrics = given_metrics(metrics)
    if metrics is None:
        metrics = list(GENERATION_METRICS)
    for name in metrics:
        info = metric_info(name)
        if info.needs_labels or info.needs_evidence:
            raise InvalidInputError(
                f"metric {name!r} needs gold labels or evidence, which a generation does not "
                f"have; use {', '.join(GENERATION_METRICS)}, soft_nc, soft_ns, comp_cd, ..."
            )
    first = next(iter(groups.values()))
    chosen = [evaluated_steps(g, every, steps) for g in first]
    if not any(chosen):
        raise InvalidInputError(_no_step_message(first, steps))
    _warn_missing_steps(first, chosen, steps)
    chosen = _without_same_steps(groups, chosen)
    by_method = {
        name: [g.step(t) for g, ts in zip(items, chosen, strict=True) for t in ts]
        for name, items in groups.items()
    }
    where = [(g, t) for g, ts in enumerate(chosen) for t in ts]
    # evaluate sees each step as a text: its messages count steps, and name the step and
    # its generation (as the caller names it: a file's line)
    owners = [
        text_name(g) if texts_are_named() else "" if len(first) == 1 else f"generation {g}"
        for g in range(len(first))
    ]
    with (
        texts_called("step"),
        texts_named(
            lambda i: " of ".join(filter(None, [f"step {where[i][1]}", owners[where[i][0]]]))
        ),
    ):
        result = evaluate(
            model.language_model_view(),
            by_method,
            metrics,
            protocol=protocol,
            layer=layer,
            batch_size=batch_size,
            rows_per_forward=rows_per_forward,
            tokens_per_forward=tokens_per_forward,
            max_tokens_per_batch=max_tokens_per_batch,
            progress=progress,
        )
    frame = result.frame.copy()
    frame.insert(1, "step", [where[i][1] for i in frame["instance"]])
    frame["instance"] = [where[i][0] for i in frame["instance"]]
    return replace(result, frame=frame)


def _no_step_message(
    generations: Sequence[GenerationExplanation], steps: Sequence[int] | None
) -> str:
    """Why nothing is scored: the steps asked for against the steps the generations
    have (numbered from 0), so the caller sees which numbers exist."""
    longest = max((g.steps for g in generations), default=0)
    if longest == 0:
        return "no step to evaluate: the generations have no steps"
    return (
        f"no step to evaluate among steps {list(steps or [])}: the generations' steps are "
        f"numbered 0 to {longest - 1}; give steps in that range"
    )


def _warn_missing_steps(
    generations: Sequence[GenerationExplanation],
    chosen: list[list[int]],
    steps: Sequence[int] | None,
) -> None:
    """Say, once, which generations lack ``steps`` asked for (too short): one with none of
    them is left out of the means, one with some of them is scored at those alone, so
    each step's mean covers fewer generations than were asked for."""
    if steps is None:
        return
    parts = [
        part
        for part in (
            _none_of_steps(generations, chosen, steps),
            _some_of_steps(generations, chosen, steps),
        )
        if part is not None
    ]
    if parts:
        warnings.warn("; ".join(parts), NormXLogitWarning, stacklevel=3)


def _none_of_steps(
    generations: Sequence[GenerationExplanation], chosen: list[list[int]], steps: Sequence[int]
) -> str | None:
    """The generations with none of ``steps``, said as the warning's clause."""
    missing = [g for g, ts in enumerate(chosen) if not ts]
    if not missing:
        return None
    lengths = [(_generation_name(g), generations[g].steps) for g in missing]
    if len(missing) == 1:
        which = f"has none of steps {list(steps)} ({lengths[0][0]} has {lengths[0][1]} steps)"
    else:
        shown = ", ".join(f"{shown}: {count} steps" for shown, count in lengths[:10])
        more = ", ..." if len(lengths) > 10 else ""
        which = f"have none of steps {list(steps)} ({shown}{more})"
    return f"{len(missing)} of {len(generations)} generations {which}: left out of the means"


def _some_of_steps(
    generations: Sequence[GenerationExplanation], chosen: list[list[int]], steps: Sequence[int]
) -> str | None:
    """The generations with some of ``steps`` but not all, and the steps each lacks,
    said as the warning's clause."""
    asked = sorted(set(step_numbers(steps, "steps") or ()))
    lacking = [
        (g, [s for s in asked if s not in ts])
        for g, ts in enumerate(chosen)
        if 0 < len(ts) < len(asked)
    ]
    if not lacking:
        return None
    shown = ", ".join(
        f"{_generation_name(g)} ({generations[g].steps} steps) lacks "
        f"step{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))}"
        for g, gone in lacking[:10]
    )
    more = ", ..." if len(lacking) > 10 else ""
    verb = "lacks" if len(lacking) == 1 else "lack"
    return (
        f"{len(lacking)} of {len(generations)} generations {verb} some of steps {asked} "
        f"({shown}{more}): those steps are left out for them, so a step's mean covers fewer "
        "generations"
    )


def _generation_name(index: int) -> str:
    """A generation as messages name it: as its caller names it (a file's line), else
    by its number."""
    return text_name(index) if texts_are_named() else f"generation {index}"


def _without_same_steps(
    groups: Mapping[str, Sequence[GenerationExplanation]], chosen: list[list[int]]
) -> list[list[int]]:
    """The chosen steps but those whose token is the contrast's own in some method's
    explanation (the difference of an output with itself explains nothing): left out
    with a warning that names them, refused when no step is left."""
    same = [
        sorted({t for items in groups.values() for t in same_steps(items[g])} & set(steps))
        for g, steps in enumerate(chosen)
    ]
    if not any(same):
        return chosen
    if all(len(s) == len(steps) for s, steps in zip(same, chosen, strict=True)):
        raise InvalidInputError(
            "every step evaluated has the contrast's own token (the difference of an output "
            "with itself explains nothing): nothing to evaluate; explain against a contrast "
            "that differs"
        )
    named = "; ".join(
        f"generation {g}: step {', '.join(map(str, s))}" for g, s in enumerate(same) if s
    )
    warnings.warn(
        f"{sum(map(len, same))} evaluated step(s) are left out of every metric ({named}): "
        "their token is the contrast's own, so their explanation explains nothing",
        NormXLogitWarning,
        stacklevel=3,
    )
    return [[t for t in steps if t not in s] for steps, s in zip(chosen, same, strict=True)]


def same_steps(explanation: GenerationExplanation) -> list[int]:
    """The steps whose token is the contrast's own (an explanation saved before these
    were flagged too: its contrast tokens say so)."""
    pairs = zip(explanation.contrasts, explanation.generated, strict=False)
    return [step for step, (contrast, token) in enumerate(pairs) if contrast == token]


#: what evaluate_generations takes, said where it is given something else
_EXPECTED_GENERATIONS = (
    "give a list of GenerationExplanation (explain with generate=True or continuation=...), "
    "or a dict {method name: list of GenerationExplanation}"
)


def _listed(items: Any, where: str) -> list[Any]:
    """``items`` as a list, or refused in one line where it is no list of them (one
    explanation under a method's name, a string, a number)."""
    if isinstance(items, (str, bytes, GenerationExplanation)) or not isinstance(items, Iterable):
        shown = (
            "one GenerationExplanation, not a list"
            if isinstance(items, GenerationExplanation)
            else with_article(type(items).__name__)
        )
        raise InvalidInputError(f"{where} is {shown}; {_EXPECTED_GENERATIONS}")
    return list(items)


def _by_method(explanations: Generations) -> dict[str, list[GenerationExplanation]]:
    """Generation explanations grouped by method; every method explains the same
    generations (the same token ids), in the same order; what explain_generations
    returns is read as its explanations by method."""
    explanations = explained_groups(explanations)
    if isinstance(explanations, GenerationExplanation):
        explanations = [explanations]
    if isinstance(explanations, Mapping):
        groups = {
            str(name): _listed(items, f"explanations[{name!r}]")
            for name, items in explanations.items()
        }
    else:
        groups = {}
        for item in _listed(explanations, "explanations"):
            groups.setdefault(getattr(item, "method", "?"), []).append(item)
    if not groups or not any(groups.values()):
        raise InvalidInputError("no generation explanations to evaluate")
    for items in groups.values():
        for item in items:
            if isinstance(item, Explanation):  # explain_texts' or model.explain's result
                raise InvalidInputError(
                    "expected GenerationExplanation objects, got Explanations of texts; score "
                    "them with normxlogit.evaluate (workflows.evaluate_texts)"
                )
            if isinstance(item, (list, tuple)):  # the context's own refusal, for generations
                raise InvalidInputError(
                    f"explanations holds {with_article(type(item).__name__)} (one list per "
                    "method?); pass a dict {method name: list of GenerationExplanation} to "
                    "name each method, or one flat list"
                )
            if not isinstance(item, GenerationExplanation):
                raise InvalidInputError(
                    f"expected GenerationExplanation objects (explain with generate=True or "
                    f"continuation=...), got {with_article(type(item).__name__)}"
                )
            if item.input_ids is None:
                raise InvalidInputError(
                    "a generation explanation without its token ids (saved by an older "
                    "version?) cannot be evaluated; explain the generation again"
                )
    if not isinstance(explanations, Mapping):  # grouped by name alone: one setting each
        for name, items in groups.items():
            check_one_setting(name, items, named=False)
    reference = [item.input_ids for item in next(iter(groups.values()))]
    for name, items in groups.items():
        if [item.input_ids for item in items] != reference:
            raise InvalidInputError(
                f"method {name!r} explains other generations than the first method (or in "
                "another order); every method must explain the same generations: give each "
                "the same continuation (continuation=... with the token ids)"
            )
    return groups
