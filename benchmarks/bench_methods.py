"""Every attribution method on one model: time and peak memory per instance (paper tables
2 and 7), the largest batch each fits under a memory budget, and integrated gradients
against Captum's own ``LayerIntegratedGradients``.

    python benchmarks/bench_methods.py [--lengths 40 120 360 512] [--budget-mib 4096]

Times are medians of ``--repeats`` runs of one text; peak memory is what torch allocates
during the run (weights and inputs already alive are not counted). The largest batch is
found by running each method on real batches of ``--search-lengths`` tokens and measuring
their peak: from the one-text estimate, up or down by 1.25x until the budget is bracketed,
then bisection to 5%. Integrated gradients is searched with all its steps in one pass (as
Captum runs it by default and the paper measured it); its default chunking bounds memory
at the price of time. The IG comparison runs both with the same steps on the same batch,
prediction included, interleaved.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

import normxlogit
from normxlogit.methods import get_method

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
    "alti",
    "decompx",
    "value_zeroing",
    "gradient_norm",
    "gradient_x_input",
    "deeplift",
    "integrated_gradients",
    "lime",
]


def explain_batch(model, batch, method: str):
    """The explain pipeline on an encoded batch (no tokenisation in the timing)."""
    from normxlogit.explain import _explanations
    from normxlogit.methods import Attribution, Layers
    from normxlogit.targets import resolve_targets

    attribution = get_method(method)
    layers = Layers.resolve(None, model.num_layers)
    forward = model.forward(batch, layers.indices)
    targets = resolve_targets(model, forward, None)
    with torch.enable_grad() if attribution.needs_gradients else torch.no_grad():
        scores = attribution.attribute(model, forward, targets, layers)
    if not isinstance(scores, Attribution):
        scores = Attribution(scores)
    return _explanations(model, forward, targets, layers, scores, attribution)


def median_seconds(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_cell(model, length: int, method: str, repeats: int) -> tuple[float, float]:
    """Median seconds and peak MiB of one text; slow methods are timed on their first run."""
    batch = make_batch(model, length, 1)
    run = functools.partial(explain_batch, model, batch, method)
    first = median_seconds(run, 1)  # also the warm-up
    seconds = first if first > 5 else median_seconds(run, repeats)
    return seconds, peak_bytes(run) / 2**20


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


#: methods searched by default; value_zeroing and lime are left out because a probe of
#: a few texts of 512 tokens takes them minutes (their memory hardly grows with the batch)
SEARCH_METHODS = [
    "normxlogit",
    "attention",
    "gradient_x_input",
    "integrated_gradients",
    "decompx",
]
#: options the search runs a method with: IG's steps all at once (no chunking)
SEARCH_OPTIONS = {"integrated_gradients": {"internal_batch_size": None}}


def repeat_batch(batch, size: int):
    """``batch``'s first text ``size`` times (the memory of a batch of that many texts)."""
    tensors = {
        name: value[:1].expand(size, *value.shape[1:]).contiguous()
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


@dataclasses.dataclass
class Probe:
    size: int
    mib: float
    seconds: float


def probe(model, method, base, size: int) -> Probe:
    """Run ``method`` on ``size`` texts and measure its peak memory."""
    batch = repeat_batch(base, size)
    start = time.perf_counter()
    peak = peak_bytes(functools.partial(explain_batch_with, model, batch, method))
    return Probe(size, peak / 2**20, time.perf_counter() - start)


def largest_batch(
    model, name: str, length: int, budget_mib: float, cap: int, probe_limit: float
) -> tuple[str, list[Probe]]:
    """The largest batch whose measured peak stays under the budget, and the probes run.

    Returns the answer as text: a number, "≥ n" when the cap or the time limit stopped the
    search, or "0" when one text is over the budget.
    """
    method = get_method(name, **SEARCH_OPTIONS.get(name, {}))
    base = make_batch(model, length, 1)
    probes = [probe(model, method, base, 1)]
    if probes[0].mib > budget_mib:
        return "0", probes
    low, high = 1, None
    size = min(cap, max(2, int(budget_mib // max(probes[0].mib, 1e-3))))
    stopped = ""
    while True:
        result = probe(model, method, base, size)
        probes.append(result)
        print(f"  {name} x{size}: {result.mib:.0f} MiB, {result.seconds:.1f} s", file=sys.stderr)
        if result.mib <= budget_mib:
            low = size
        else:
            high = size
        if result.seconds > probe_limit:
            stopped = f" (probe over {probe_limit:.0f} s)"
            break
        if high is None:  # still under the budget: grow
            if low >= cap:
                stopped = f" (cap {cap})"
                break
            size = min(cap, math.ceil(low * 1.25))
        elif high - low <= max(1, 0.05 * low):
            break
        else:
            size = (low + high) // 2
    answer = f"≥ {low}{stopped}" if stopped or high is None else str(low)
    return answer, probes


def search_table(model, lengths, methods, budget_mib, cap, probe_limit) -> tuple[str, dict]:
    lines = [
        "| method | " + " | ".join(f"{n} tokens: texts per batch" for n in lengths) + " |",
        "|---|" + "---:|" * len(lengths),
    ]
    found: dict[tuple[str, int], str] = {}
    for name in methods:
        cells = []
        for length in lengths:
            answer, probes = largest_batch(model, name, length, budget_mib, cap, probe_limit)
            found[name, length] = answer
            tried = ", ".join(
                f"{p.size}: {p.mib:.0f}" for p in sorted(probes, key=lambda p: p.size)
            )
            cells.append(answer)
            print(f"{name} {length}: {answer} (probes, texts: MiB: {tried})", file=sys.stderr)
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines), found


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

    method = get_method("integrated_gradients", steps=steps)

    def ours():
        return explain_batch_with(model, batch, method)

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
        f"interleaved runs); peak memory normxlogit {peak_bytes(ours) / 2**20:.0f} MiB, "
        f"Captum {peak_bytes(captum_run) / 2**20:.0f} MiB"
    )


def explain_batch_with(model, batch, method):
    from normxlogit.methods import Layers
    from normxlogit.targets import resolve_targets

    layers = Layers.resolve(None, model.num_layers)
    forward = model.forward(batch, layers.indices)
    targets = resolve_targets(model, forward, None)
    with torch.enable_grad():
        return method.attribute(model, forward, targets, layers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=normxlogit.DEFAULT_MODEL)
    parser.add_argument("--lengths", type=int, nargs="+", default=[40, 120, 360, 512])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget-mib", type=float, default=4096)
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument(
        "--limit",
        type=float,
        default=60.0,
        help="skip longer inputs once a method takes this many seconds",
    )
    parser.add_argument("--no-captum", action="store_true", help="skip the IG comparison")
    parser.add_argument("--search-lengths", type=int, nargs="*", default=[512])
    parser.add_argument("--search-methods", nargs="+", default=SEARCH_METHODS)
    parser.add_argument("--cap", type=int, default=1024, help="largest batch tried")
    parser.add_argument(
        "--probe-limit", type=float, default=150.0, help="stop a search after a probe this slow"
    )
    parser.add_argument("--no-table", action="store_true", help="skip the per-text table")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    model = normxlogit.load(args.model)
    report = [f"{args.model}, {torch.get_num_threads()} CPU threads"]
    if not args.no_table:
        report += [
            "",
            "per text: median seconds / peak MiB",
            "",
            method_table(model, args.lengths, args.methods, args.repeats, args.limit),
        ]
    if args.search_lengths:
        table, found = search_table(
            model,
            args.search_lengths,
            args.search_methods,
            args.budget_mib,
            args.cap,
            args.probe_limit,
        )
        report += ["", f"largest batch under {args.budget_mib:.0f} MiB (measured)", "", table]
        for length in args.search_lengths:
            ours, ig = (
                found.get(("normxlogit", length)),
                found.get(("integrated_gradients", length)),
            )
            if ours and ig and ours.isdigit() and ig.isdigit() and int(ig) > 0:
                report.append(
                    f"\nat {length} tokens NormXLogit fits {int(ours) / int(ig):.0f}x the batch "
                    "of integrated gradients (steps in one pass) under the same budget"
                )
    if not args.no_captum:
        report += ["", ig_against_captum(model, 120, 8, 50, args.repeats)]
    text = "\n".join(report)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
