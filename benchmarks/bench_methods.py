"""Every attribution method on one model: time and peak memory per instance (paper tables
2 and 7), the largest batch each fits under a memory budget, and integrated gradients
against Captum's own ``LayerIntegratedGradients``.

    python benchmarks/bench_methods.py [--lengths 40 120 360 512] [--budget-mib 4096]
    python benchmarks/bench_methods.py --only-search --search-lengths 512

Times are medians of ``--repeats`` runs of one text; peak memory is what torch allocates
during the run (weights and inputs already alive are not counted; on CUDA, the device's
high-water mark). The largest batch under ``--budget-mib`` is found, never estimated: each
method runs on real batches of ``--search-lengths`` tokens and their peak is measured,
from the one-text estimate up or down by 1.25x until the budget is bracketed, then by
bisection to 5%. A search stops early, reporting "≥ n", at ``--cap`` texts or when a probe
takes (or, from the probes so far, would take) over ``--probe-limit`` seconds.

Integrated gradients is searched as the paper's table 7 ran it, all its steps for the
whole batch in one pass (``tokens_per_pass=None``, Captum's default), and also with
the library's default passes (at most ``tokens_per_pass`` tokens each), which bound its
memory. The IG
comparison runs both implementations with the same steps on the same batch, prediction
included, interleaved.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

import normxlogit
from normxlogit.methods import AttributionMethod, get_method

sys.path.insert(0, str(Path(__file__).parent))
from bench_normxlogit import make_batch, peak_bytes  # noqa: E402

METHODS = [
    "random",
    "l2_norm",
    "logat",
    "normxlogit",
    "attention",
    "attention_rollout",
    "globenc",
    "n_resln",
    "alti",
    "decompx",
    "value_zeroing",
    "gradient_norm",
    "gradient_x_input",
    "deeplift",
    "integrated_gradients",
    "lime",
]

#: methods searched by default, as ``name`` or ``name:option=value,...``. Left out:
#: ``random``, ``logat`` (the same single pass as ``l2_norm``), ``attention_rollout``,
#: ``gradient_norm`` (the same passes as ``gradient_x_input``), ``deeplift`` (two forward
#: passes and one backward, like ``gradient_x_input`` plus a reference pass), and
#: ``globenc`` / ``alti`` / ``n_resln`` (per-text loops like ``decompx``).
SEARCH_METHODS = [
    "normxlogit",
    "l2_norm",
    "attention",
    "gradient_x_input",
    "integrated_gradients:tokens_per_pass=None",
    "integrated_gradients",
    "decompx",
    "value_zeroing",
    "lime",
]

#: the setting of the paper's table 7 that the NormXLogit / IG ratio is taken against
IG_TABLE_7 = "integrated_gradients:tokens_per_pass=None"


def peak_mib(run: Callable[[], object], device: torch.device) -> float:
    """Peak MiB torch allocates while ``run`` executes, beyond what was already alive.

    CUDA keeps its own high-water mark, which is exact and free; on CPU the profiler's
    allocation events are summed (``bench_normxlogit.peak_bytes``).
    """
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        run()
        torch.cuda.synchronize(device)
        return (torch.cuda.max_memory_allocated(device) - before) / 2**20
    return peak_bytes(run) / 2**20


def explain_batch(model, batch, method: AttributionMethod, *, explanations: bool = True):
    """The explain pipeline on an encoded batch (no tokenisation in the timing).

    Gradients are enabled only for methods that need them, as ``model.explain`` does, so
    a forward-only method is not charged for an autograd graph it never uses.
    """
    from normxlogit.explaining.texts import _explanations
    from normxlogit.methods import Attribution, Layers
    from normxlogit.model.targets import resolve_targets

    layers = Layers.resolve(None, model.num_layers)
    forward = model.forward(batch, layers.indices)
    targets = resolve_targets(model, forward, None)
    with torch.enable_grad() if method.needs_gradients else torch.no_grad():
        scores = method.attribute(model, forward, targets, layers)
    if not explanations:
        return scores
    if not isinstance(scores, Attribution):
        scores = Attribution(scores)
    return _explanations(model, forward, targets, layers, scores, method)


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_cell(model, length: int, method: str, repeats: int) -> tuple[float, float]:
    """Median seconds and peak MiB of one text; slow methods are timed on their first run."""
    batch = make_batch(model, length, 1)
    run = functools.partial(explain_batch, model, batch, get_method(method))
    first = median_seconds(run, 1)  # also the warm-up
    seconds = first if first > 5 else median_seconds(run, repeats)
    return seconds, peak_mib(run, model.device)


def method_table(model, lengths, methods, repeats: int, limit: float) -> str:
    lines = [
        "| method | " + " | ".join(f"{n} tokens: s / MiB" for n in lengths) + " |",
        "|---|" + "---:|" * len(lengths),
    ]
    for method in methods:
        cells, too_slow = [], False
        for length in lengths:
            if too_slow:
                cells.append(f"over {limit:.0f} s")
                continue
            seconds, mib = measure_cell(model, length, method, repeats)
            too_slow = seconds > limit
            cells.append(f"{seconds:.3f} / {mib:.0f}")
            print(f"{method} {length}: {cells[-1]}", file=sys.stderr, flush=True)
        lines.append(f"| `{method}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ----------------------------------------------------------------- largest batch search


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name:option=value,..."`` -> the method's name and options (values as literals)."""
    name, _, rest = spec.partition(":")
    options: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, _, text = item.partition("=")
        try:
            options[key.strip()] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            options[key.strip()] = text.strip()
    return name.strip(), options


def repeat_batch(batch, size: int, device: torch.device):
    """``batch``'s first text ``size`` times, on ``device``: a batch of that many texts.

    Every text of a given length costs the same memory, so copies of one text measure a
    batch of distinct ones without tokenising hundreds of texts per probe.
    """
    tensors = {
        name: value[:1].expand(size, *value.shape[1:]).contiguous().to(device)
        for name, value in vars(batch).items()
        if isinstance(value, torch.Tensor)
    }
    word_ids = batch.word_ids[:1] * size if batch.word_ids else None
    return dataclasses.replace(
        batch,
        texts=batch.texts[:1] * size,
        dropped=batch.dropped[:1] * size,
        word_ids=word_ids,
        **tensors,
    )


@dataclasses.dataclass(frozen=True)
class Probe:
    """One measured run: ``size`` texts peaked at ``mib`` and took ``seconds``."""

    size: int
    mib: float
    seconds: float


@dataclasses.dataclass
class Search:
    """What a search found: the answer as reported, and every probe it ran."""

    answer: str
    largest: int  # the largest batch measured under the budget (0: not even one text)
    exact: bool  # False when the search stopped before bracketing the limit to 5%
    probes: list[Probe]

    def growth_mib(self) -> float | None:
        """Measured MiB per extra text, between one text and the largest batch under budget."""
        sizes = {p.size: p.mib for p in self.probes}
        if self.largest < 2 or 1 not in sizes:
            return None
        return (sizes[self.largest] - sizes[1]) / (self.largest - 1)


def probe(model, method: AttributionMethod, base, size: int) -> Probe:
    """Run ``method`` on ``size`` texts and measure its peak memory and wall time."""
    batch = repeat_batch(base, size, model.device)
    run = functools.partial(explain_batch, model, batch, method)
    start = time.perf_counter()
    mib = peak_mib(run, model.device)
    return Probe(size, mib, time.perf_counter() - start)


def largest_batch(
    model,
    method: AttributionMethod,
    length: int,
    budget_mib: float,
    cap: int = 1024,
    time_limit: float = 150.0,
    log: Callable[[str], None] = lambda line: None,
) -> Search:
    """The largest batch of ``length``-token texts whose measured peak stays under budget.

    Each probe runs the method on a whole batch, so they are spent sparingly: one text
    gives the estimate ``budget / peak``; from there the size grows (or shrinks) by 1.25x
    until one probe is under the budget and one over, then bisection stops when the two
    are within 5% (or 1 text). The search stops early at ``cap`` texts, after a probe over
    ``time_limit`` seconds, or when the next probe would take longer than that at the
    slowest seconds per text seen so far (its size is first cut to what fits in time).
    """
    base = make_batch(model, length, 1)
    probes: list[Probe] = []

    def run(size: int) -> Probe:
        result = probe(model, method, base, size)
        probes.append(result)
        log(f"{size} texts: {result.mib:.0f} MiB, {result.seconds:.1f} s")
        return result

    def stopped(low: int, high: int | None, why: str) -> Search:
        below = f", < {high}" if high is not None else ""
        return Search(f"≥ {low}{below} (search stopped: {why})", low, False, probes)

    first = run(1)
    if first.mib > budget_mib:
        return Search("0 (one text is over the budget)", 0, True, probes)
    if first.seconds > time_limit:
        return stopped(1, None, f"probe over {time_limit:.0f} s")
    low, high = 1, None
    size = min(cap, max(2, math.floor(budget_mib / max(first.mib, 1e-6))))
    going_down = False  # the estimate was over: step down until a probe is under
    while True:
        per_text = max(p.seconds / p.size for p in probes)
        affordable = math.floor(time_limit / per_text)
        if affordable < size:
            size = affordable
            if size <= low:
                return stopped(
                    low,
                    high,
                    f"{low + 1} texts would take about {(low + 1) * per_text:.0f} s, "
                    f"over the {time_limit:.0f} s probe limit",
                )
        result = run(size)
        if result.mib <= budget_mib:
            low, going_down = size, False
        else:
            high = size
            going_down = going_down or low == 1 and len(probes) == 2
        if result.seconds > time_limit:
            return stopped(low, high, f"probe over {time_limit:.0f} s")
        if high is None:
            if low >= cap:
                return Search(f"≥ {cap} (cap reached)", cap, False, probes)
            size = min(cap, max(low + 1, math.floor(low * 1.25)))
        elif high - low <= max(1, 0.05 * low):
            return Search(str(low), low, True, probes)
        elif going_down and math.floor(high / 1.25) > low:
            size = math.floor(high / 1.25)
        else:
            size = (low + high) // 2


def search_table(
    model,
    lengths: Sequence[int],
    specs: Sequence[str],
    budget_mib: float,
    cap: int,
    probe_limit: float,
) -> tuple[str, dict[tuple[str, int], Search]]:
    """The search for every method and length as a Markdown table, and the searches."""
    lines = [
        "| method | tokens | largest batch | peak MiB at it | MiB per extra text "
        "| probes, texts: MiB (s) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    found: dict[tuple[str, int], Search] = {}
    for spec in specs:
        name, options = parse_spec(spec)
        method = get_method(name, **options)
        shown = f"`{name}`" + (
            " (" + ", ".join(f"{k}={v}" for k, v in options.items()) + ")" if options else ""
        )
        for length in lengths:
            print(f"{spec} {length} tokens:", file=sys.stderr, flush=True)
            search = largest_batch(
                model,
                method,
                length,
                budget_mib,
                cap,
                probe_limit,
                log=lambda line: print("  " + line, file=sys.stderr, flush=True),
            )
            found[spec, length] = search
            sizes = {p.size: p for p in search.probes}
            at = f"{sizes[search.largest].mib:.0f}" if search.largest in sizes else "-"
            growth = search.growth_mib()
            tried = ", ".join(
                f"{p.size}: {p.mib:.0f} ({p.seconds:.0f} s)"
                for p in sorted(search.probes, key=lambda p: p.size)
            )
            lines.append(
                f"| {shown} | {length} | {search.answer} | {at} "
                f"| {'-' if growth is None else f'{growth:.1f}'} | {tried} |"
            )
            print(f"  -> {search.answer}", file=sys.stderr, flush=True)
    return "\n".join(lines), found


def search_notes(found: dict[tuple[str, int], Search], lengths: Sequence[int]) -> list[str]:
    """The NormXLogit / integrated gradients ratio per length, and what to read into rows."""
    notes = []
    for length in lengths:
        ours, ig = found.get(("normxlogit", length)), found.get((IG_TABLE_7, length))
        if ours is None or ig is None:
            continue
        if ig.largest == 0:
            ratio = "integrated gradients does not fit one text"
        elif not ig.exact:
            ratio = f"not determined (integrated gradients: {ig.answer})"
        else:
            bound = "" if ours.exact else "≥ "
            ratio = f"{bound}{ours.largest / ig.largest:.0f}x ({ours.answer} / {ig.answer} texts)"
        notes.append(
            f"at {length} tokens, NormXLogit batch / integrated_gradients batch (steps in "
            f"one pass) under the same budget: {ratio}"
        )
    flat = sorted(
        {
            spec
            for (spec, _), search in found.items()
            if (growth := search.growth_mib()) is not None and growth < 0.02 * search.probes[0].mib
        }
    )
    if flat:
        notes.append(
            f"memory hardly grows with the batch for {', '.join(flat)} (they loop over the "
            "texts), so their limit is time, not memory: the search stops at the probe limit"
        )
    if any(spec.startswith("integrated_gradients") for spec, _ in found):
        notes.append(
            "integrated_gradients by default runs passes of at most tokens_per_pass=2048 "
            "tokens (rows x length): its memory is about one pass's whatever the batch, and "
            "its limit is time; tokens_per_pass=None runs every step of every text at once"
        )
    return notes


# ----------------------------------------------------------------- Captum comparison


def ig_against_captum(model, length: int, size: int, steps: int, repeats: int) -> str:
    """Our integrated gradients vs Captum's LayerIntegratedGradients, prediction included."""
    from captum.attr import LayerIntegratedGradients

    batch = make_batch(model, length, size)
    inputs = model.backbone_inputs(batch)
    embedding = model.model.get_input_embeddings()

    def captum_run():
        with torch.no_grad():
            predicted = model.model(**inputs).logits.argmax(-1)
        engine = LayerIntegratedGradients(
            lambda ids, mask, types: (
                model.model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
            ),
            embedding,
        )
        baseline = torch.zeros_like(batch.input_ids)  # [PAD]: Captum's usual text baseline
        return engine.attribute(
            batch.input_ids,
            baselines=baseline,
            target=predicted,
            n_steps=steps,
            additional_forward_args=(batch.attention_mask, batch.token_type_ids),
        )

    ours = functools.partial(
        explain_batch,
        model,
        batch,
        get_method("integrated_gradients", steps=steps),
        explanations=False,
    )
    captum_run(), ours()
    mine, theirs = [], []
    for _ in range(repeats):
        mine.append(median_seconds(ours, 1))
        theirs.append(median_seconds(captum_run, 1))
    ratio = statistics.median(mine) / statistics.median(theirs)
    return (
        f"integrated gradients, {steps} steps, batch {size} x {length} tokens: normxlogit "
        f"{statistics.median(mine):.2f} s, Captum LayerIntegratedGradients "
        f"{statistics.median(theirs):.2f} s, ratio {ratio:.3f} (median of {repeats} "
        f"interleaved runs); peak memory normxlogit {peak_mib(ours, model.device):.0f} MiB, "
        f"Captum {peak_mib(captum_run, model.device):.0f} MiB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=normxlogit.DEFAULT_MODEL)
    parser.add_argument("--lengths", type=int, nargs="+", default=[40, 120, 360, 512])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument(
        "--limit",
        type=float,
        default=60.0,
        help="skip longer inputs once a method takes this many seconds",
    )
    parser.add_argument("--no-captum", action="store_true", help="skip the IG comparison")
    parser.add_argument("--no-table", action="store_true", help="skip the per-text table")
    parser.add_argument("--only-search", action="store_true", help="only the largest-batch search")
    parser.add_argument(
        "--search-lengths",
        type=int,
        nargs="*",
        default=[512],
        help="lengths the largest batch is searched at (none: no search)",
    )
    parser.add_argument(
        "--search-methods",
        nargs="+",
        default=SEARCH_METHODS,
        help="methods searched, as name or name:option=value,...",
    )
    parser.add_argument("--budget-mib", type=float, default=4096)
    parser.add_argument("--cap", type=int, default=1024, help="largest batch tried")
    parser.add_argument(
        "--probe-limit",
        type=float,
        default=150.0,
        help="stop a search at a probe that takes (or would take) longer, in seconds",
    )
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    model = normxlogit.load(args.model)
    where = f"{torch.get_num_threads()} CPU threads" if model.device.type == "cpu" else ""
    report = [f"{args.model} on {model.device} {where}".rstrip()]
    if not (args.no_table or args.only_search):
        report += [
            "",
            "per text: median seconds / peak MiB",
            "",
            method_table(model, args.lengths, args.methods, args.repeats, args.limit),
        ]
    if args.search_lengths:
        search_started = time.perf_counter()
        table, found = search_table(
            model,
            args.search_lengths,
            args.search_methods,
            args.budget_mib,
            args.cap,
            args.probe_limit,
        )
        report += [
            "",
            f"largest batch under {args.budget_mib:.0f} MiB, found by measured search "
            f"(cap {args.cap} texts, probe limit {args.probe_limit:.0f} s; "
            f"{time.perf_counter() - search_started:.0f} s)",
            "",
            table,
            "",
            *search_notes(found, args.search_lengths),
        ]
    if not (args.no_captum or args.only_search):
        report += ["", ig_against_captum(model, 120, 8, 50, args.repeats)]
    report += ["", f"total {time.perf_counter() - started:.0f} s"]
    text = "\n".join(report)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
