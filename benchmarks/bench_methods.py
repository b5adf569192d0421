"""Every attribution method on one model: time and peak memory per instance (paper tables
2 and 7), the batch each fits under a memory budget, and integrated gradients against
Captum's own ``LayerIntegratedGradients``.

    python benchmarks/bench_methods.py [--lengths 40 120 360 512] [--budget-mib 4096]

Times are medians of ``--repeats`` runs of one text; peak memory is what torch allocates
during the run (weights and inputs already alive are not counted); "batch under budget"
is the budget divided by that per-text peak (methods run texts independently or scale
linearly with the batch). The IG comparison runs both with the same steps on the same
batch, prediction included, interleaved.
"""

from __future__ import annotations

import argparse
import functools
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


def method_table(model, lengths, methods, repeats: int, budget_mib: float, limit: float) -> str:
    lines = [
        "| method | " + " | ".join(f"{n} tokens: s / MiB / batch" for n in lengths) + " |",
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
            cells.append(f"{seconds:.3f} / {mib:.0f} / {int(budget_mib // max(mib, 1e-3))}")
            print(f"{method} {length}: {cells[-1]}", file=sys.stderr, flush=True)
        lines.append(f"| `{method}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    model = normxlogit.load(args.model)
    report = [
        f"{args.model}, {torch.get_num_threads()} CPU threads; per text: median seconds / "
        f"peak MiB / texts per batch under {args.budget_mib:.0f} MiB",
        "",
        method_table(model, args.lengths, args.methods, args.repeats, args.budget_mib, args.limit),
    ]
    if not args.no_captum:
        report += ["", ig_against_captum(model, 120, 8, 50, args.repeats)]
    text = "\n".join(report)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
