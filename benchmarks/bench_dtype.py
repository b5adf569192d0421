"""How far half precision moves attributions and pi-Soft AUCs from float32, and what it
saves in time.

    python benchmarks/bench_dtype.py [--device cuda] [--dtype bfloat16] [--texts 100]
        [--samples 15] [--pis 19]

The prompted SmolLM2 of the pi-Soft classification experiment explains SST-2 dev
sentences with each method (the ``pi-soft`` preset where it has one) and scores them with
``pi_soft_nc`` and ``pi_soft_ns``, once in float32 and once in ``--dtype``. Reported per
method: the Spearman correlation of the two precisions' scores (mean over texts), and per
metric the largest difference of one text's AUC and the difference of the mean AUC; then
the seconds of each precision. A CPU without bfloat16 matrix instructions runs bfloat16
slower, not faster; one with them (this project's CI machine) about 3x faster.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from scipy.stats import spearmanr

import normxlogit
from normxlogit.data import read_sst2
from normxlogit.evaluation import Protocol

METHODS = [
    ("normxlogit", None),
    ("attention", "pi-soft"),
    ("gradient_x_input", "pi-soft"),
    ("integrated_gradients", "pi-soft"),
    ("value_zeroing", "pi-soft"),
    ("grad_ellm", None),
]
METRICS = ["pi_soft_nc", "pi_soft_ns"]


def run(model, texts, protocol, methods, rows_per_forward: int = 64):
    """Explanations and per-text AUCs of every method, and the seconds it all took."""
    start = time.perf_counter()
    explained = {name: model.explain(texts, method=name, preset=preset) for name, preset in methods}
    result = normxlogit.evaluate(
        model,
        explained,
        METRICS,
        protocol=protocol,
        progress=False,
        rows_per_forward=rows_per_forward,
    )
    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)
    return explained, result.instance_summaries(), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-sst2-prompted")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--texts", type=int, default=100)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--pis", type=int, default=19)
    parser.add_argument("--methods", nargs="+", help="names, or name:preset")
    parser.add_argument("--json", help="also write the table to this file")
    parser.add_argument("--rows-per-forward", type=int, default=64, help="perturbed rows per pass")
    args = parser.parse_args()

    methods = METHODS
    if args.methods:
        methods = [(m.partition(":")[0], m.partition(":")[2] or None) for m in args.methods]
    pis = [round(k / (args.pis + 1), 4) for k in range(1, args.pis + 1)]
    protocol = Protocol(seed=0).with_options(samples=args.samples, pis=pis)
    texts = [example.text for example in read_sst2("dev")[: args.texts]]
    results = {}
    for dtype in ("float32", args.dtype):
        model = normxlogit.load(args.model, device=args.device, dtype=dtype)
        results[dtype] = run(model, texts, protocol, methods, args.rows_per_forward)
        del model
    (full, full_auc, full_s), (half, half_auc, half_s) = results.values()
    print(
        f"{args.model} on {args.device}: {len(texts)} SST-2 texts, {args.samples} samples x "
        f"{len(pis)} pis; float32 against {args.dtype}\n"
    )
    header = " | ".join(f"{m}: largest Δ, Δ mean" for m in METRICS)
    print(f"| method | Spearman (mean over texts) | {header} |")
    print("|---|---:|" + "---:|" * len(METRICS))
    rows = {}
    for name, _ in methods:
        rho = np.nanmean(
            [
                spearmanr(a.scores, b.scores).statistic
                for a, b in zip(full[name], half[name], strict=True)
            ]
        )
        cells = []
        for metric in METRICS:
            a = full_auc.loc[name][metric].to_numpy(float)
            b = half_auc.loc[name][metric].to_numpy(float)
            cells.append(f"{np.nanmax(np.abs(a - b)):.4f}, {np.nanmean(b) - np.nanmean(a):+.4f}")
            rows.setdefault(name, {"spearman": float(rho)})[metric] = {
                "largest_change": float(np.nanmax(np.abs(a - b))),
                "mean_change": float(np.nanmean(b) - np.nanmean(a)),
                "mean_float32": float(np.nanmean(a)),
                "standard_error_float32": float(
                    np.nanstd(a, ddof=1) / np.sqrt(np.isfinite(a).sum())
                ),
            }
        print(f"| `{name}` | {rho:.3f} | " + " | ".join(cells) + " |")
    print(f"\nseconds: float32 {full_s:.1f}, {args.dtype} {half_s:.1f} ({full_s / half_s:.2f}x)")
    if args.json:
        import json
        from pathlib import Path

        content = {
            "model": args.model,
            "device": args.device,
            "dtype": args.dtype,
            "texts": len(texts),
            "samples": args.samples,
            "pis": len(pis),
            "methods": rows,
            "seconds": {"float32": full_s, args.dtype: half_s},
        }
        Path(args.json).write_text(json.dumps(content, indent=1))


if __name__ == "__main__":
    main()
