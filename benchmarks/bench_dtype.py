"""How far half precision (or TF32) moves attributions and pi-Soft AUCs from float32,
whether it changes any method's rank, and what it saves in time.

    python benchmarks/bench_dtype.py [--device cuda] [--dtype bfloat16|float16|tf32]
        [--data sst2 imdb] [--texts 100 20] [--samples 15] [--pis 19]
        [--methods normxlogit attention:pi-soft ...] [--json FILE] [--checkpoint DIR]

The prompted SmolLM2 of the pi-Soft classification experiment explains SST-2 dev sentences
and IMDb reviews with each method (the ``pi-soft`` preset where it has one) and scores them
with ``pi_soft_nc`` and ``pi_soft_ns``, once in float32 and once in ``--dtype`` (``tf32``:
float32 weights with TF32 matrix products, a GPU's). Reported per data set, method and
metric: the Spearman correlation of the two precisions' scores (mean over texts), the
largest change of one text's AUC, the change of the mean AUC against the float32 cell's
standard error, and each method's rank in both; then the verdict the issue asks for:
adopt ``--dtype`` for the GPU queue only if no rank changes and every change of a cell is
below its standard error. A CPU without bfloat16 matrix instructions runs bfloat16
slower; this project's CI machine has them.
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

import normxlogit
from normxlogit.data import read_imdb, read_sst2
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
READERS = {"sst2": lambda n: read_sst2("dev")[:n], "imdb": lambda n: read_imdb(limit=n)}


@contextmanager
def tf32(enabled: bool):
    """TF32 matrix products (and cuDNN convolutions) while inside, when ``enabled``."""
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def run(model, texts, protocol, methods, tokens_per_forward, checkpoint: Path | None = None):
    """Explanations and per-text AUCs of every method, and the seconds it all took; with
    ``checkpoint`` (a folder), each method's part is kept there once done and read back
    on a rerun, so a long run killed part-way resumes method by method."""
    import pandas as pd

    explained, tables, seconds = {}, [], 0.0
    for name, preset in methods:
        done = _restored(checkpoint, name) if checkpoint else None
        if done is None:
            start = time.perf_counter()
            made = model.explain(texts, method=name, preset=preset, batch_size=8)
            result = normxlogit.evaluate(
                model,
                {name: made},
                METRICS,
                protocol=protocol,
                progress=False,
                batch_size=8,
                tokens_per_forward=tokens_per_forward,
            )
            if model.device.type == "cuda":
                torch.cuda.synchronize(model.device)
            done = (made, result.instance_summaries(), time.perf_counter() - start)
            if checkpoint:
                _keep(checkpoint, name, *done)
        explained[name], table, took = done
        tables.append(table)
        seconds += took
    return explained, pd.concat(tables), seconds


def _keep(folder: Path, name: str, made, table, seconds: float) -> None:
    """One method's explanations, AUC table and seconds, written whole (table last)."""
    folder.mkdir(parents=True, exist_ok=True)
    normxlogit.save_explanations(made, folder / f"{name}.json")
    (folder / f"{name}.seconds").write_text(repr(seconds))
    table.to_pickle(folder / f".{name}.pkl")
    (folder / f".{name}.pkl").replace(folder / f"{name}.pkl")


def _restored(folder: Path, name: str):
    import pandas as pd

    if not (folder / f"{name}.pkl").exists():
        return None
    made = normxlogit.load_explanations(folder / f"{name}.json")
    seconds = float((folder / f"{name}.seconds").read_text())
    return made, pd.read_pickle(folder / f"{name}.pkl"), seconds


def compare(full, half, methods) -> dict:
    """Per method and metric: changes, standard errors and ranks of the two runs."""
    (full_explained, full_auc, _), (half_explained, half_auc, _) = full, half
    rows: dict = {}
    for metric in METRICS:
        means = {}
        for which, table in (("float32", full_auc), ("other", half_auc)):
            means[which] = {name: float(np.nanmean(table.loc[name][metric])) for name, _ in methods}
        ranks = {
            which: {name: r for r, name in enumerate(sorted(m, key=m.get, reverse=True), 1)}
            for which, m in means.items()
        }
        for name, _ in methods:
            a = full_auc.loc[name][metric].to_numpy(float)
            b = half_auc.loc[name][metric].to_numpy(float)
            error = float(np.nanstd(a, ddof=1) / np.sqrt(np.isfinite(a).sum()))
            rows.setdefault(name, {})[metric] = {
                "largest_change": float(np.nanmax(np.abs(a - b))),
                "mean_change": means["other"][name] - means["float32"][name],
                "mean_float32": means["float32"][name],
                "standard_error_float32": error,
                "rank_float32": ranks["float32"][name],
                "rank_other": ranks["other"][name],
            }
    for name, _ in methods:
        rows[name]["spearman"] = float(
            np.nanmean(
                [
                    spearmanr(x.scores, y.scores).statistic
                    for x, y in zip(full_explained[name], half_explained[name], strict=True)
                ]
            )
        )
    return rows


def verdict(rows: dict) -> tuple[bool, list[str]]:
    """Adopt only if no rank changes and every cell moves less than its standard error."""
    reasons = []
    for name, metrics in rows.items():
        for metric in METRICS:
            cell = metrics[metric]
            if cell["rank_float32"] != cell["rank_other"]:
                reasons.append(
                    f"{name} {metric}: rank {cell['rank_float32']} -> {cell['rank_other']}"
                )
            if abs(cell["mean_change"]) >= cell["standard_error_float32"]:
                reasons.append(
                    f"{name} {metric}: mean moved {cell['mean_change']:+.4f}, standard error "
                    f"{cell['standard_error_float32']:.4f}"
                )
    return not reasons, reasons


def print_table(name: str, texts: int, rows: dict) -> None:
    print(f"\n{name} ({texts} texts)\n")
    header = " | ".join(f"{m}: largest Δ, Δ mean (SE), rank" for m in METRICS)
    print(f"| method | Spearman | {header} |")
    print("|---|---:|" + "---:|" * len(METRICS))
    for method, cells in rows.items():
        parts = []
        for metric in METRICS:
            c = cells[metric]
            parts.append(
                f"{c['largest_change']:.4f}, {c['mean_change']:+.4f} "
                f"({c['standard_error_float32']:.4f}), {c['rank_float32']} → {c['rank_other']}"
            )
        print(f"| `{method}` | {cells['spearman']:.3f} | " + " | ".join(parts) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-sst2-prompted")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--data", nargs="+", default=["sst2", "imdb"], choices=sorted(READERS))
    parser.add_argument("--texts", type=int, nargs="+", default=[100, 20], help="per --data")
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--pis", type=int, default=19)
    parser.add_argument("--methods", nargs="+", help="names, or name:preset")
    parser.add_argument("--tokens-per-forward", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", help="also write the tables to this file")
    parser.add_argument(
        "--checkpoint",
        help="a folder: each data set, precision and method is kept there once done, and a "
        "rerun with the same folder and settings resumes from it",
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    methods = METHODS
    if args.methods:
        methods = [(m.partition(":")[0], m.partition(":")[2] or None) for m in args.methods]
    pis = [round(k / (args.pis + 1), 4) for k in range(1, args.pis + 1)]
    protocol = Protocol(seed=0).with_options(samples=args.samples, pis=pis)
    counts = dict(zip(args.data, args.texts + [args.texts[-1]] * len(args.data), strict=False))
    other = "float32" if args.dtype == "tf32" else args.dtype
    print(
        f"{args.model} on {args.device}: {args.samples} samples x {len(pis)} pis; float32 "
        f"against {args.dtype}"
    )
    content: dict = {"model": args.model, "device": args.device, "dtype": args.dtype}
    content.update(samples=args.samples, pis=len(pis), data={})
    adopt = True
    for data in args.data:
        texts = [example.text for example in READERS[data](counts[data])]
        results = []
        for dtype, fast in (("float32", False), (other, args.dtype == "tf32")):
            model = normxlogit.load(args.model, device=args.device, dtype=dtype)
            folder = None
            if args.checkpoint:
                setting = f"{args.model}-{data}{len(texts)}-{args.samples}x{len(pis)}"
                folder = Path(args.checkpoint) / setting / (args.dtype if fast else dtype)
            with tf32(fast):
                results.append(
                    run(model, texts, protocol, methods, args.tokens_per_forward, folder)
                )
            del model
        rows = compare(*results, methods)
        ok, reasons = verdict(rows)
        adopt &= ok
        print_table(data, len(texts), rows)
        seconds = results[0][2], results[1][2]
        print(
            f"\nseconds: float32 {seconds[0]:.1f}, {args.dtype} {seconds[1]:.1f} "
            f"({seconds[0] / seconds[1]:.2f}x)"
            + (
                "; with --checkpoint these sum runs made at other times (a run paused or "
                "sharing the machine counts its waits): not a timing to report"
                if args.checkpoint
                else ""
            )
        )
        for reason in reasons:
            print(f"  not below a cell's standard error, or a rank moved: {reason}")
        content["data"][data] = {
            "texts": len(texts),
            "methods": rows,
            "seconds": {"float32": seconds[0], args.dtype: seconds[1]},
            "reasons": reasons,
        }
        if args.json:
            Path(args.json).write_text(json.dumps({**content, "adopt": adopt}, indent=1))
    said = f"adopt {args.dtype}" if adopt else f"keep float32 (not {args.dtype})"
    print(f"\nverdict: {said} for the GPU queue")


if __name__ == "__main__":
    main()
