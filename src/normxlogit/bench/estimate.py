"""How many GPU slots each queue entry still takes: a cost model, not a measurement.

Per entry: the instance x method pairs its store lacks (as ``bench status`` counts them),
the perturbed rows one pair runs (from the metrics and the protocol: pi-Soft's samples x
values of pi, insertion/deletion's steps, comprehensiveness/sufficiency's ratios; a
generation repeats them at every scored step), the tokens of one row (measured on the
entry's own instances with the model's tokenizer and prompt), the explaining passes of
each method, and the padding today's batching adds. Tokens over a rate (tokens per second
that a slot reaches) give minutes, and minutes over a slot's compute give slots. The
rates and padding are inputs: the docs say which were measured where.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .queue import GpuQueue, QueueEntry, entry_config

#: forward passes (a backward counted as two) a method takes to explain one text of T
#: tokens, by name; IG and value zeroing depend on their settings and the length
EXPLAIN_PASSES = {
    "random": 0.0,
    "attention": 1.0,
    "normxlogit": 1.0,
    "logat": 1.0,
    "l2_norm": 0.0,
    "gradient_norm": 3.0,
    "gradient_x_input": 3.0,
    "grad_ellm": 3.0,
    "attnlrp": 3.0,
    "deeplift": 6.0,
    "reagent": 130.0,
}


@dataclass(frozen=True)
class EntryCost:
    """What an entry still needs and what it costs at the given rates."""

    entry: str
    pairs_left: int
    pairs_total: int
    tokens: float  # real tokens still to run (perturbed rows and explaining)
    padded_tokens: float  # as today's batching pads them
    minutes_today: float
    minutes_after: float
    slots_today: float
    slots_after: float


def rows_per_instance(metrics: tuple[str, ...], protocol: dict[str, Any]) -> float:
    """Perturbed rows one instance runs for ``metrics`` (one scored step of a generation)."""
    from ..evaluation import Protocol

    settings = Protocol().with_options(**protocol)
    rows = 0.0
    soft = {"pi_soft_ns", "pi_soft_nc"} & set(metrics)
    rows += len(soft) * (settings.samples * len(settings.pis) + 1.5)
    rows += len({"soft_ns", "soft_nc"} & set(metrics)) * settings.samples
    rows += len({"deletion", "insertion"} & set(metrics)) * settings.steps
    rows += len({"comp_cd", "comp_acc", "suff_cd", "suff_acc"} & set(metrics)) * len(
        settings.ratios
    )
    return rows


def explain_passes(method: Any, tokens: float) -> float:
    """Forward-pass equivalents of explaining one text of ``tokens`` tokens."""
    if method.name == "integrated_gradients":
        return 3.0 * float(method.options.get("steps", 50))
    if method.name == "value_zeroing":
        return tokens + 1.0
    return EXPLAIN_PASSES.get(method.name, 3.0)


def entry_cost(
    queue: GpuQueue,
    entry: QueueEntry,
    store: Any,
    tokens_per_instance: dict[str, float],
    padding: dict[str, float],
    *,
    rate_today: float,
    rate_after: float,
    slot_seconds: float,
    explained_steps_today: int = 32,
) -> EntryCost:
    """The cost of what ``store`` lacks of ``entry``. ``tokens_per_instance`` and
    ``padding`` are keyed by experiment name (a generation's: the prefix at a scored step);
    rates are real tokens per second today and after issue 39 (no padding, only the
    scored steps explained)."""
    from .results import status_frame

    config = entry_config(queue, entry)
    frame = status_frame(config, store, entry.limit)
    left = total = 0
    tokens = padded = after = 0.0
    for experiment in config.experiments:
        rows = rows_per_instance(experiment.metrics, dict(experiment.protocol))
        per_row = tokens_per_instance[experiment.name]
        steps = math.ceil(experiment.max_new_tokens / experiment.evaluate_every)
        scored = steps if experiment.generation else 1
        pad = padding.get(experiment.name, 1.0)
        for method in experiment.methods:
            cells = frame[
                (frame["experiment"] == experiment.name) & (frame["method"] == method.display)
            ]
            todo = int((cells["total"] - cells["done"]).sum())
            left += todo
            total += int(cells["total"].sum())
            explain = explain_passes(method, per_row)
            explained_today = explained_steps_today if experiment.generation else 1
            evaluate = todo * scored * rows * per_row
            tokens += evaluate + todo * explained_today * explain * per_row
            padded += pad * (evaluate + todo * explained_today * explain * per_row)
            after += evaluate + todo * scored * explain * per_row
    minutes_today = padded / rate_today / 60
    minutes_after = after / rate_after / 60
    return EntryCost(
        entry=entry.name,
        pairs_left=left,
        pairs_total=total,
        tokens=tokens,
        padded_tokens=padded,
        minutes_today=minutes_today,
        minutes_after=minutes_after,
        slots_today=minutes_today * 60 / slot_seconds,
        slots_after=minutes_after * 60 / slot_seconds,
    )
