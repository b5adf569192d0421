"""The cost of an evaluation against the forward passes it needs.

    python benchmarks/bench_evaluate.py [--texts 32] [--metrics comp_cd suff_cd ...]

For each metric, ``normxlogit.evaluate`` scores the explanations of two methods on SST-2
dev sentences with ``minilm-sst2``. The time spent inside the model's forward passes (the
backbone and the head on every perturbed copy) is measured by wrapping the backbone
call; the ratio is the whole evaluation's wall time over that. Everything else (building
perturbations, the alpha search, bookkeeping, the result table) is the overhead, and the
target is a ratio of at most 1.2.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import torch

import normxlogit
from normxlogit.data import read_sst2

DEFAULT_METRICS = [
    "comp_cd",
    "suff_cd",
    "deletion",
    "insertion",
    "soft_nc",
    "pi_soft_ns",
    "pi_soft_nc",
]


class ForwardClock:
    """Adds up the seconds spent inside ``model.run_backbone`` (and the rows it saw)."""

    def __init__(self, model):
        self.model, self.seconds, self.rows = model, 0.0, 0
        self.original = model.run_backbone

    def __enter__(self):
        def timed(**inputs):
            start = time.perf_counter()
            outputs = self.original(**inputs)
            self.seconds += time.perf_counter() - start
            first = inputs.get("input_ids", inputs.get("inputs_embeds"))
            self.rows += first.shape[0]
            return outputs

        self.model.run_backbone = timed
        return self

    def __exit__(self, *exc):
        del self.model.run_backbone


def measure(model, explanations, metric: str, labels, protocol) -> dict:
    with ForwardClock(model) as clock:
        start = time.perf_counter()
        result = normxlogit.evaluate(
            model, explanations, [metric], labels=labels, protocol=protocol
        )
        total = time.perf_counter() - start
    return {
        "metric": metric,
        "seconds": total,
        "forward_seconds": clock.seconds,
        "rows": clock.rows,
        "ratio": total / clock.seconds,
        "summary": result.summary().values[metric].to_dict(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=normxlogit.DEFAULT_MODEL)
    parser.add_argument("--texts", type=int, default=32)
    parser.add_argument("--methods", nargs="+", default=["normxlogit", "random"])
    parser.add_argument("--metrics", nargs="+", default=DEFAULT_METRICS)
    parser.add_argument("--samples", type=int, default=15, help="Monte Carlo samples")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    model = normxlogit.load(args.model)
    examples = read_sst2("dev")[: args.texts]
    texts = [e.text for e in examples]
    labels = [e.label for e in examples]
    explanations = {m: model.explain(texts, method=m) for m in args.methods}
    protocol = normxlogit.Protocol(samples=args.samples)
    print(
        f"{args.model}, {len(texts)} SST-2 dev sentences, methods {', '.join(args.methods)}, "
        f"{torch.get_num_threads()} CPU threads\n"
    )
    print("| metric | perturbed rows | evaluate s | forward passes s | ratio |")
    print("|---|---:|---:|---:|---:|")
    worst = 0.0
    for metric in args.metrics:
        row = measure(model, explanations, metric, labels, protocol)
        worst = max(worst, row["ratio"])
        print(
            f"| `{metric}` | {row['rows']} | {row['seconds']:.2f} | "
            f"{row['forward_seconds']:.2f} | {row['ratio']:.3f} |",
            flush=True,
        )
        print(f"  {row['summary']}", file=sys.stderr)
    print(f"\nworst ratio: {worst:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
