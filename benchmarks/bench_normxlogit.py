"""NormXLogit against a bare forward pass: time and peak memory, as ratios.

The paper's claim is that NormXLogit costs one forward pass. For each input length and
batch size this script times, on the same model and the same batch,

- ``forward``: the model's own forward (logits only), under ``torch.no_grad``;
- ``normxlogit``: the full attribution (forward, prediction, head on every token, norms),

interleaving the two and taking medians, and measures the peak memory each allocates
(torch's allocation events, so model weights and inputs already alive are not counted).

    python benchmarks/bench_normxlogit.py [--model minilm-sst2] [--repeats 5]

Prints a Markdown table; ``--output FILE`` also writes it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

import normxlogit
from normxlogit.methods import Layers, get_method
from normxlogit.model.targets import resolve_targets

LENGTHS = (40, 120, 360, 512)
BATCH_SIZES = (1, 32)
FILLER = (
    "the film is a gripping , beautifully acted story that never lets go , although its "
    "second half drags and some of the dialogue feels flat and forced . "
)


def make_batch(model: normxlogit.ExplainableModel, length: int, size: int):
    """A batch of ``size`` texts of exactly ``length`` tokens (specials included)."""
    words = (FILLER * (length // 8 + 2)).split()
    texts = []
    for row in range(size):
        shifted = words[row % 7 :] + words[: row % 7]
        text, count = "", 0
        while count < length:
            text = " ".join(shifted[: len(text.split()) + 1])
            count = len(model.tokenizer(text)["input_ids"])
        texts.append(text)
    model.encoder.max_length = length
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = model.encode(texts)
    assert batch.input_ids.shape == (size, length), batch.input_ids.shape
    return batch


def peak_bytes(run: Callable[[], object]) -> int:
    """Peak bytes allocated by torch while ``run`` executes (allocations minus frees)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    events = sorted(prof.events(), key=lambda e: e.time_range.start)
    current = peak = 0
    for event in events:
        current += event.self_cpu_memory_usage
        peak = max(peak, current)
    return peak


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def measure(model, length: int, size: int, repeats: int) -> dict:
    batch = make_batch(model, length, size)
    method = get_method("normxlogit")
    layers = Layers.resolve(None, model.num_layers)
    inputs = model.backbone_inputs(batch)

    @torch.no_grad()
    def bare():
        return model.model(**inputs).logits

    @torch.no_grad()
    def attribution():
        forward = model.forward(batch, layers.indices)
        targets = resolve_targets(model, forward, None)
        return method.attribute(model, forward, targets, layers)

    bare(), attribution()  # warm up
    times = {"forward": [], "normxlogit": []}
    for _ in range(repeats):  # interleaved, so drifts in machine load hit both
        times["forward"].append(timed(bare))
        times["normxlogit"].append(timed(attribution))
    forward_s = statistics.median(times["forward"])
    method_s = statistics.median(times["normxlogit"])
    forward_mb = peak_bytes(bare) / 2**20
    method_mb = peak_bytes(attribution) / 2**20
    return {
        "length": length,
        "batch": size,
        "forward_ms": forward_s * 1e3,
        "normxlogit_ms": method_s * 1e3,
        "time_ratio": method_s / forward_s,
        "forward_mb": forward_mb,
        "normxlogit_mb": method_mb,
        "memory_ratio": method_mb / forward_mb if forward_mb else float("nan"),
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| length | batch | forward ms | NormXLogit ms | time ratio | forward MiB "
        "| NormXLogit MiB | memory ratio |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['length']} | {r['batch']} | {r['forward_ms']:.1f} | {r['normxlogit_ms']:.1f} "
            f"| {r['time_ratio']:.3f} | {r['forward_mb']:.1f} | {r['normxlogit_mb']:.1f} "
            f"| {r['memory_ratio']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=normxlogit.DEFAULT_MODEL)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=list(BATCH_SIZES))
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    model = normxlogit.load(args.model)
    rows = []
    for length in args.lengths:
        for size in args.batch_sizes:
            rows.append(measure(model, length, size, args.repeats))
            print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    threads = torch.get_num_threads()
    report = f"{args.model}, {threads} CPU threads, median of {args.repeats}\n\n{table(rows)}\n"
    print(report)
    if args.output:
        args.output.write_text(report)
    worst_time = max(r["time_ratio"] for r in rows)
    worst_memory = max(r["memory_ratio"] for r in rows)
    print(f"worst time ratio {worst_time:.3f}, worst memory ratio {worst_memory:.3f} (target 1.10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
