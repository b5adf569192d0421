"""ReAGent's explaining time, and its probe steps, on SST-2 with the pi-Soft settings.

    python benchmarks/bench_reagent.py [--device cuda] [--texts 16] [--batch-size 8]
        [--model smollm2-sst2-prompted] [--sampler pos]

ReAGent (the ``pi-soft`` preset: 2 probes, at most 32 steps, keep the top 3, replace a
quarter) explains ``--texts`` SST-2 dev sentences ``--batch-size`` at a time. Reported: the
seconds (one run, after a warm-up text), the mean probe steps taken and the seconds per
probe step. Run it against an older checkout (``PYTHONPATH=old/src``) to compare: its
draws were made on the host one step at a time, with three host-built transfers and two
device syncs per step; now they are made eight steps at a time, sent in one transfer, and a
step looks at the device once.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import normxlogit
from normxlogit.data import read_sst2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-sst2-prompted")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--texts", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sampler", default="pos")
    args = parser.parse_args()

    model = normxlogit.load(args.model, device=args.device)
    texts = [example.text for example in read_sst2("dev")[: args.texts]]
    options = dict(method="reagent", preset="pi-soft", sampler=args.sampler)
    model.explain(texts[:1], **options)  # warm-up: the sampler's groups, the kernels
    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)
    start = time.perf_counter()
    made = model.explain(texts, batch_size=args.batch_size, **options)
    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)
    seconds = time.perf_counter() - start
    steps = float(np.mean([e.diagnostics["probe_steps"][0] for e in made]))
    batches = -(-len(texts) // args.batch_size)
    print(
        f"{args.model} on {model.device}: {len(texts)} SST-2 texts, {args.batch_size} a batch, "
        f"sampler {args.sampler}: {seconds:.1f} s, {steps:.1f} probe steps a text, "
        f"{seconds / (batches * steps):.3f} s a batch's step"
    )


if __name__ == "__main__":
    main()
