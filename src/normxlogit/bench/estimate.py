"""How many GPU slots each queue entry still takes: a cost model, not a measurement.

Per entry: the instance x method pairs its store lacks (as ``bench status`` counts them),
the perturbed rows one pair runs (from the metrics and the protocol: pi-Soft's samples x
values of pi, insertion/deletion's steps, comprehensiveness/sufficiency's ratios; a
generation repeats them at every scored step), the tokens of one row (measured on the
entry's own instances with the model's tokenizer and prompt), the explaining passes of
each method, and the padding the batching before issue 39 added. Tokens over a rate
(tokens per second that a slot reaches) give minutes, and minutes over a slot's compute
give slots, three ways: *today* as the first slot ran (padded passes, every step of a
generation explained, value zeroing's whole maps); *now*, what is built (no padding, only
the scored steps explained, value zeroing's reading row) at the same measured kernel rate;
*after*, the same work at bfloat16's measured speed-up. The rates and padding are inputs:
the docs say which were measured where.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..common.errors import InvalidInputError, NormXLogitError
from ..common.fields import markdown_text
from ..common.options import number_text
from .queue import GpuQueue, QueueEntry, check_environment, entry_config
from .slot import (
    CALIBRATION_SECONDS,
    CALIBRATIONS,
    COMMAND_SECONDS,
    COMPUTE_RESERVES,
    compute_seconds,
)

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


#: padded tokens per second the first H200 slot reached (float32, 2026-11-26), from the
#: seconds its 1,272 stored SST-2 cells took. Measured once: the store now also holds cells
#: the issue-39 code computed (no padding), so it no longer gives the old code's rate.
FIRST_SLOT_RATE = 128_306.0
#: bfloat16's speed-up over float32 on the H200 (the slot's bench_dtype, 2026-11-28: 15.0 s
#: against 10.8 s on 8 SST-2 sentences at the paper's protocol, explaining included).
BF16_SPEEDUP = 1.39


@dataclass(frozen=True)
class EntryCost:
    """What an entry still needs and what it costs at the given rates."""

    entry: str
    pairs_left: int
    pairs_total: int
    tokens: float  # real tokens still to run (perturbed rows and explaining), as before
    padded_tokens: float  # as the batching before issue 39 padded them
    minutes_today: float
    minutes_after: float
    slots_today: float
    slots_after: float
    #: real tokens with what is built now: only the scored steps explained, value
    #: zeroing's reading row; no padding
    tokens_now: float = 0.0
    minutes_now: float = 0.0
    slots_now: float = 0.0


#: metrics that send no perturbed row through the model: they compare the scores with
#: evidence, or read the keep probabilities pi-Soft draws from
NO_ROWS = frozenset({"expected_retained"})


def rows_per_instance(metrics: tuple[str, ...], protocol: dict[str, Any]) -> float:
    """Perturbed rows one instance runs for ``metrics`` (one scored step of a generation).
    ``segment_drop`` reads the text with every segment and without the top k, for each k
    of ``drop_k``; ``segment_lds`` its ``lds_ablations`` held-out subsets."""
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
    if "segment_drop" in metrics:
        rows += len(settings.drop_k) + 1
    if "segment_lds" in metrics:
        rows += settings.lds_ablations
    return rows


#: the metrics :func:`rows_per_instance` counts
PRICED_METRICS = frozenset(
    {
        "pi_soft_ns",
        "pi_soft_nc",
        "soft_ns",
        "soft_nc",
        "deletion",
        "insertion",
        "comp_cd",
        "comp_acc",
        "suff_cd",
        "suff_acc",
        "segment_drop",
        "segment_lds",
    }
)


def unpriced_metrics(metrics: tuple[str, ...]) -> list[str]:
    """The metrics whose rows the cost model does not count (priced as none): not those
    it counts, nor those that read no model (evidence against scores)."""
    from ..evaluation.registry import metric_info

    out = []
    for name in metrics:
        if name in PRICED_METRICS or name in NO_ROWS:
            continue
        try:
            if metric_info(name).needs_evidence:  # scores against evidence: no rows
                continue
        except NormXLogitError:
            pass
        out.append(name)
    return out


def _segment_method(method: Any) -> Any | None:
    """The segment method ``method`` (a :class:`MethodSpec`) builds, or None where it is
    a token method."""
    from ..methods.base import get_method, method_class
    from ..methods.segment_methods import SegmentMethod

    if not issubclass(method_class(method.name), SegmentMethod):
        return None
    return get_method(method.name, **dict(method.options))


def segment_passes(method: Any, segments: list[int] | None) -> float | None:
    """Forward passes a segment method takes to explain one text, averaged over texts of
    ``segments`` segments each (the method's own ``forward_passes``: leave-one-out and
    feature ablation S + 1, Shapley sampling up to samples x S + 1, ContextCite
    ablations + 1); None where the counts are not known."""
    if not segments:
        return None
    built = _segment_method(method)
    return sum(built.forward_passes(count) for count in segments) / len(segments)


def counted_passes(
    method: Any, tokens: float, now: bool = False, segments: list[int] | None = None
) -> float | None:
    """Forward-pass equivalents of explaining one text of ``tokens`` tokens, where the
    cost model counts them (``now``: with value zeroing's reading row where it reads no
    rollout: explain's pass, its clean pass and one re-run of every block; before, a
    re-run per token); a segment method's over texts of ``segments`` segments each
    (:func:`segment_passes`); None where it cannot count them."""
    from ..methods.base import method_class

    if method.name == "integrated_gradients":
        return 3.0 * float(method.options.get("steps", 50))
    if method.name == "value_zeroing":
        reading_row = now and not method.options.get("rollout", True)
        return 3.0 if reading_row else tokens + 1.0
    if method.name in EXPLAIN_PASSES:
        return EXPLAIN_PASSES[method.name]
    if _segment_method(method) is not None:
        return segment_passes(method, segments)
    if method_class(method.name).single_forward:  # the pass explain already runs
        return 1.0
    return None


def explain_passes(
    method: Any, tokens: float, now: bool = False, segments: list[int] | None = None
) -> float:
    """:func:`counted_passes`, with 3 (a forward and a backward pass) for a method the
    model cannot count (named by :func:`unpriced`)."""
    passes = counted_passes(method, tokens, now, segments)
    return 3.0 if passes is None else passes


def unpriced_method(method: Any, segments: list[int] | None) -> bool:
    """Whether :func:`explain_passes` guesses ``method``'s passes (3) rather than
    counting them."""
    return counted_passes(method, 0.0, segments=segments) is None


def unpriced(experiment: Any, segments: list[int] | None) -> str | None:
    """One line naming the methods and metrics of ``experiment`` the cost model cannot
    price (None: it prices them all)."""
    methods = [m.display for m in experiment.methods if unpriced_method(m, segments)]
    metrics = unpriced_metrics(tuple(experiment.metrics))
    parts = []
    if methods:
        parts.append(
            f"method{'s' if len(methods) > 1 else ''} {', '.join(methods)} (counted "
            "as 3 passes a text)"
        )
    if metrics:
        parts.append(
            f"metric{'s' if len(metrics) > 1 else ''} {', '.join(metrics)} (counted as no rows)"
        )
    if not parts:
        return None
    return (
        f"warning: the cost model does not price {' nor '.join(parts)} of experiment "
        f"{experiment.name!r}: its slots are a guess"
    )


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
    segments: dict[str, list[int]] | None = None,
) -> EntryCost:
    """The cost of what ``store`` lacks of ``entry``. ``tokens_per_instance``, ``padding``
    and ``segments`` (each instance's segment count, where it has segments) are keyed by
    experiment name (a generation's: the prefix at a scored step);
    ``rate_today``: tokens per second the device ran, padding counted (what *now* is priced
    at too, on real tokens); ``rate_after``: real tokens per second in bfloat16."""
    from .results import status_frame

    config = entry_config(queue, entry)
    frame = status_frame(config, store, entry.limit)
    left = total = 0
    tokens = padded = now = 0.0
    for experiment in config.experiments:
        rows = rows_per_instance(experiment.metrics, dict(experiment.protocol))
        per_row = tokens_per_instance[experiment.name]
        steps = math.ceil(experiment.max_new_tokens / experiment.evaluate_every)
        scored = steps if experiment.generation else 1
        pad = padding.get(experiment.name, 1.0)
        counts = (segments or {}).get(experiment.name)
        for method in experiment.methods:
            cells = frame[
                (frame["experiment"] == experiment.name) & (frame["method"] == method.display)
            ]
            todo = int((cells["total"] - cells["done"]).sum())
            left += todo
            total += int(cells["total"].sum())
            explain = explain_passes(method, per_row, segments=counts)
            explained_today = explained_steps_today if experiment.generation else 1
            evaluate = todo * scored * rows * per_row
            tokens += evaluate + todo * explained_today * explain * per_row
            padded += pad * (evaluate + todo * explained_today * explain * per_row)
            now += (
                evaluate
                + todo
                * scored
                * explain_passes(method, per_row, now=True, segments=counts)
                * per_row
            )
    minutes_today = padded / rate_today / 60
    minutes_now = now / rate_today / 60
    minutes_after = now / rate_after / 60
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
        tokens_now=now,
        minutes_now=minutes_now,
        slots_now=minutes_now * 60 / slot_seconds,
    )


def measure(experiment: Any, limit: int | None) -> tuple[float, float, list[int] | None]:
    """(mean tokens of a row, today's padding, each instance's segment count) on the
    experiment's first 200 instances, with its model's tokenizer and prompt; padding as
    batches of ``batch_size`` texts in data-set order pad them (a generation's rows of one
    step share a length: none); segment counts where the experiment's methods explain
    segments (None: they explain none)."""
    from .. import load
    from .runner import load_examples

    count = min(limit or 10**9, 200)
    data = load_examples(experiment.dataset, count)
    model = load(experiment.model_to_load)
    texts = [data.texts[i] for i in sorted(data.texts)]
    if experiment.generation:
        model = model.language_model_view()
    lengths = model.encode(texts).attention_mask.sum(1).tolist()
    if experiment.generation:  # the prefix at a scored step: the prompt and half the answer
        lengths = [n + experiment.max_new_tokens / 2 for n in lengths]
    size = experiment.batch_size
    groups = [lengths[i : i + size] for i in range(0, len(lengths), size)]
    padded = sum(max(g) * len(g) for g in groups)
    pad = 1.0 if experiment.generation else padded / sum(lengths)
    return sum(lengths) / len(lengths), pad, segment_counts(experiment, data)


def segment_counts(experiment: Any, data: Any) -> list[int] | None:
    """Each instance's segment count, as the experiment's methods split it: the data
    set's own segments (``"data"``) or the text's sentences; None: no segments."""
    from ..model.segments import resolve_segments

    kind = next((m.segments for m in experiment.methods if m.segments is not None), None)
    if kind is None:
        return None
    counts = []
    for i in sorted(data.texts):
        if kind == "data":
            if i in data.segments:
                counts.append(len(data.segments[i]))
            continue
        try:
            counts.append(len(resolve_segments(data.texts[i], "sentences").spans))
        except NormXLogitError:  # a blank text: refused by the run, no segment
            continue
    return counts or None


def main(argv: list[str] | None = None) -> int:
    """``scripts/gpu/estimate``: the queue's entries as a Markdown table of slots."""
    import argparse

    root = Path(__file__).resolve().parents[3]
    parser = argparse.ArgumentParser(
        prog="scripts/gpu/estimate", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--queue", type=Path, default=root / "experiments" / "gpu-queue.toml")
    parser.add_argument(
        "--rate-today",
        type=str,
        default=None,
        help=f"padded tokens/s (default: the first H200 slot's, {FIRST_SLOT_RATE:,.0f})",
    )
    parser.add_argument(
        "--rate-after",
        type=str,
        default=None,
        help=f"tokens/s in bfloat16 (default: {BF16_SPEEDUP}x the rate today, as measured)",
    )
    parser.add_argument(
        "--slot-seconds",
        type=str,
        default=None,
        help="seconds a slot computes (default: the queue's deadline less the slot's start, "
        "the export and a run's grace)",
    )
    args = parser.parse_args(argv)
    try:
        check_environment("scripts/gpu/estimate")
        for option, value, unit in (
            ("--rate-today", args.rate_today, "tokens/s"),
            ("--rate-after", args.rate_after, "tokens/s"),
            ("--slot-seconds", args.slot_seconds, "seconds"),
        ):
            if value is None:
                continue
            try:  # ASCII digits, as the bench's options: float() takes "٣٠٠" and "1_000"
                number = number_text(value)
            except ValueError:
                raise InvalidInputError(
                    f"{option} {value!r}: must be a number of {unit} above 0, written in "
                    "ASCII digits (e.g. 300)"
                ) from None
            if not math.isfinite(number):  # inf: no rate, no slot
                raise InvalidInputError(
                    f"{option} {value}: must be a finite number of {unit} above 0"
                )
            if not number > 0:  # 1e-400 is 0: said as written
                raise InvalidInputError(f"{option} {value}: must be a number of {unit} above 0")
            if unit == "tokens/s" and number < MINIMUM_RATE:  # 1e-300: 300-digit minutes
                raise InvalidInputError(
                    f"{option} {value}: under {MINIMUM_RATE:g} tokens/s (a token in 11 days), "
                    f"no device's rate (the first H200 slot's was {FIRST_SLOT_RATE:,.0f}); "
                    "give the rate in padded tokens a second"
                )
            setattr(args, option[2:].replace("-", "_"), number)
        if args.slot_seconds is not None and not args.slot_seconds < COMMAND_SECONDS:
            raise InvalidInputError(  # as pack refuses such a queue deadline
                f"--slot-seconds {args.slot_seconds:g} is not under a device command's limit "
                f"of {COMMAND_SECONDS:.0f} s: no slot computes that long (left out, a slot "
                f"computes its queue's deadline {COMPUTE_RESERVES})"
            )
        return _estimate(args)
    except NormXLogitError as error:  # a queue or a store in one line, as pack says it
        print(f"error: {error}", file=sys.stderr)
        return 2


#: the smallest ``--rate-today`` / ``--rate-after`` taken (a token in 11 days): far
#: below, minutes and slots run to hundreds of digits (1e-300)
MINIMUM_RATE = 1e-6


def rate_text(rate: float) -> str:
    """A rate as the table's header says it: whole tokens a second, or three digits
    where under 100 (0.001 is not "0 tokens/s")."""
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


def _estimate(args) -> int:
    """The table of :func:`main`, for checked arguments."""
    from .queue import limit_notes, load_queue

    queue = load_queue(args.queue)
    slot_seconds, computes = slot_compute(queue, args.slot_seconds)
    for note in [*limit_notes(queue), *missing_store_notes(queue)]:
        print(note, file=sys.stderr)
    measured: dict[str, tuple[float, float, list[int] | None]] = {}
    warned: set[str] = set()
    for entry in queue.entries:
        for experiment in entry_config(queue, entry).experiments:
            if experiment.name not in measured:
                measured[experiment.name] = measure(experiment, entry.limit)
            warning = unpriced(experiment, measured[experiment.name][2])
            if warning is not None and warning not in warned:
                warned.add(warning)
                print(warning, file=sys.stderr)
    per_row = {name: value[0] for name, value in measured.items()}
    padding = {name: value[1] for name, value in measured.items()}
    counts = {name: value[2] for name, value in measured.items() if value[2] is not None}
    rate = FIRST_SLOT_RATE if args.rate_today is None else args.rate_today
    after = rate * BF16_SPEEDUP if args.rate_after is None else args.rate_after
    print(
        f"today's rate: {rate_text(rate)} padded tokens/s"
        + (" (the first H200 slot's, float32)" if args.rate_today is None else "")
        + f"; now: the same rate on real tokens; bfloat16: {rate_text(after)} tokens/s"
        + (
            f" ({BF16_SPEEDUP}x, bench_dtype's speed-up on the H200; not adopted)"
            if args.rate_after is None
            else ""
        )
        + f"; {computes}\n"
    )
    print(
        "| entry | pairs left of | tokens per row | padding before | GPU minutes today | slots "
        "today | GPU minutes now | slots now | GPU minutes bf16 | slots bf16 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    added = ("minutes_today", "slots_today", "minutes_now", "slots_now")
    added += ("minutes_after", "slots_after", "pairs_left", "pairs_total")
    totals = dict.fromkeys(added, 0.0)
    for entry in queue.entries:
        config = entry_config(queue, entry)
        with _store(entry.store) as store:
            cost = entry_cost(
                queue,
                entry,
                store,
                per_row,
                padding,
                rate_today=rate,
                rate_after=after,
                slot_seconds=slot_seconds,
                segments=counts,
            )
        names = [e.name for e in config.experiments]
        tokens = " / ".join(f"{per_row[n]:.0f}" for n in names)
        pads = " / ".join(f"{padding[n]:.2f}" for n in names)
        for name in added:
            totals[name] += getattr(cost, name)
        print(
            f"| {markdown_text(entry.name)} | {cost.pairs_left:,} of {cost.pairs_total:,} "
            f"| {tokens} | {pads} "
            f"| {cost.minutes_today:.0f} | {cost.slots_today:.1f} | {cost.minutes_now:.0f} "
            f"| {cost.slots_now:.1f} | {cost.minutes_after:.1f} | {cost.slots_after:.2f} |"
        )
    # the totals as precise as the rows they add up (whole slots hid up to half a slot)
    print(
        f"| all | {totals['pairs_left']:,.0f} of {totals['pairs_total']:,.0f} | | "
        f"| {totals['minutes_today']:.0f} | {totals['slots_today']:.1f} "
        f"| {totals['minutes_now']:.0f} | {totals['slots_now']:.1f} "
        f"| {totals['minutes_after']:.1f} | {totals['slots_after']:.2f} |"
    )
    return 0


def missing_store_notes(queue: GpuQueue) -> list[str]:
    """One note per entry whose store does not exist: it is priced as all left to do,
    right for a first run, and a typo in ``store`` must not pass for one unseen."""
    return [
        f"note: entry {entry.name}: no store yet at {entry.store}: everything counted as left to do"
        for entry in queue.entries
        if not entry.store.exists()
    ]


def slot_compute(queue: GpuQueue, asked: float | None) -> tuple[float, str]:
    """(seconds a slot of ``queue`` computes, that said in words): its deadline's, or
    ``--slot-seconds`` where given; more than the deadline allows is refused, since the
    slots needed would be under-counted."""
    allowed = compute_seconds(queue.deadline)
    calibration = (
        f"a fresh machine's calibration takes up to {len(CALIBRATIONS) * CALIBRATION_SECONDS:.0f}"
        " s of its first slot, not counted"
    )
    if asked is None:
        return allowed, (
            f"a slot computes {allowed:g} s (the queue's {queue.deadline:g} s deadline "
            f"{COMPUTE_RESERVES}; {calibration})"
        )
    if asked > allowed:
        raise InvalidInputError(
            f"--slot-seconds {asked:g} is more than the {allowed:g} s a slot of {queue.path}'s "
            f"{queue.deadline:g} s deadline computes ({COMPUTE_RESERVES}); give at most "
            f"{allowed:g}, or leave it out"
        )
    return asked, f"a slot computes {asked:g} s (--slot-seconds; {calibration})"


class _store:
    """The entry's committed store, read-only (an empty one where none is committed)."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        import tempfile

        from .archive import readable_store
        from .store import ResultStore

        if self.path.exists():
            self._context = readable_store(self.path)
            plain = self._context.__enter__()
        else:
            self._context = tempfile.TemporaryDirectory()
            plain = Path(self._context.__enter__()) / "empty.sqlite"
        self._store = ResultStore(plain)
        return self._store

    def __exit__(self, *exc):
        self._store.close()
        self._context.__exit__(*exc)
