"""How much of a pi-Soft cell's standard error is Monte Carlo noise, and what a cheaper
per-instance protocol changes in the rankings.

    python benchmarks/bench_monte_carlo.py [--store STORE] [--texts 16]
        [--seeds 6] [--methods attention value_zeroing random] [--threads 2]

A pi-Soft value of one instance is a mean over 15 Monte Carlo samples of keep masks at
each of 19 values of pi; a cell is the mean over instances. Its squared standard error is
the variance over instances divided by n, and that variance holds the instances' true
spread plus each instance's Monte Carlo variance (a sample's AUC varies from draw to draw;
the mean of 15 varies 15 times less). This script measures the second part: for the first
``--texts`` SST-2 instances of the store and each of ``--methods`` (their stored
explanations), it scores ``--seeds`` independent single-sample draws (``samples = 1``, the
protocol seed varied, all 19 values of pi) and takes the variance of a one-sample AUC per
instance. Reported per method and metric: the stored variance over instances of the
15-sample AUC (n the stored instances), the Monte Carlo variance of a 15-sample AUC
(mean over instances of the one-sample variance / 15) and its share of the former; the
same for each method's difference from the first method (draws are shared by methods, so
much of the noise cancels in a difference). Then, from the stored values alone, the
rankings of every stored method with 19 values of pi against 5 (0.1, 0.3, ..., 0.9, the
CPU runs' grid), and against single-sample draws where this run has them. ``--store``:
default the pi-Soft classification store (SST-2, 15 samples x 19 values of pi, H200).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import normxlogit
from normxlogit.bench.archive import readable_store
from normxlogit.evaluation import EvaluationResult, Protocol
from normxlogit.explanations.io import load_payload

METRICS = ["pi_soft_ns", "pi_soft_nc"]
PAPER_SAMPLES = 15
FIVE_PIS = (0.1, 0.3, 0.5, 0.7, 0.9)
ROOT = Path(__file__).resolve().parents[1]


def stored_values(db: sqlite3.Connection) -> pd.DataFrame:
    """Every stored pi-Soft value: method name, instance, metric, pi, value."""
    rows = db.execute(
        "SELECT e.method, e.instance, e.metric, v.x, v.value FROM evaluations e JOIN "
        "metric_values v ON v.evaluation = e.id WHERE e.metric IN ('pi_soft_ns', 'pi_soft_nc')"
    ).fetchall()
    frame = pd.DataFrame(rows, columns=["key", "instance", "metric", "x", "value"])
    frame["method"] = [json.loads(key)["name"] for key in frame["key"]]
    return frame.drop(columns="key")


def aucs(frame: pd.DataFrame, pis: tuple[float, ...] | None = None) -> pd.DataFrame:
    """Each (method, instance)'s AUC of each metric, over ``pis`` (None: every stored pi),
    as the tables compute it."""
    if pis is not None:
        frame = frame[np.isclose(frame["x"].to_numpy()[:, None], pis).any(1)]
    tidy = frame.assign(axis="pi", gold=np.nan, text="")
    result = EvaluationResult(tidy, Protocol(), METRICS)
    return result.instance_summaries()


def explanations_of(db: sqlite3.Connection, method: str, instances: list[int]) -> list:
    """The stored explanations of ``method`` (its first stored options) for ``instances``."""
    keys = [k for (k,) in db.execute("SELECT DISTINCT method FROM explanations")]
    key = next(k for k in keys if json.loads(k)["name"] == method)
    rows = dict(
        db.execute(
            "SELECT instance, payload FROM explanations WHERE method = ? AND instance IN "
            f"({', '.join('?' * len(instances))})",
            (key, *instances),
        ).fetchall()
    )
    return [load_payload(json.loads(rows[i])) for i in instances]


def single_draws(model, explanations: dict, seeds: int) -> pd.DataFrame:
    """One-sample AUCs per seed: rows (seed, method, instance) x metrics."""
    tables = []
    for seed in range(seeds):
        protocol = Protocol(seed=seed).with_options(samples=1)
        result = normxlogit.evaluate(model, explanations, METRICS, protocol=protocol, batch_size=8)
        table = result.instance_summaries().reset_index()
        tables.append(table.assign(seed=seed))
    return pd.concat(tables, ignore_index=True)


def share_table(full: pd.DataFrame, draws: pd.DataFrame, methods: list[str]) -> str:
    """Markdown: per method (and difference from the first) and metric, the variance over
    instances of the stored 15-sample AUC, the Monte Carlo part, and its share."""
    lines = [
        "| method | metric | n | variance over instances | Monte Carlo variance (15 samples) "
        "| Monte Carlo share |",
        "|---|---|---:|---:|---:|---:|",
    ]
    first = methods[0]
    for method in methods:
        for metric in METRICS:
            for paired in (False, True):
                if paired and method == first:
                    continue
                stored = _series(full, method, metric, first if paired else None)
                draw = draws.pivot_table(
                    index=["instance", "seed"], columns="method", values=metric
                )
                one = draw[method] - draw[first] if paired else draw[method]
                monte_carlo = one.groupby(level="instance").var(ddof=1).mean() / PAPER_SAMPLES
                total = stored.var(ddof=1)
                name = f"{method} − {first}" if paired else method
                lines.append(
                    f"| {name} | {metric} | {len(stored)} | {total:.5f} | {monte_carlo:.5f} | "
                    f"{monte_carlo / total:.1%} |"
                )
    return "\n".join(lines)


def _series(full: pd.DataFrame, method: str, metric: str, versus: str | None) -> pd.Series:
    values = full[metric].unstack("method")
    values = values[[method] + ([versus] if versus else [])].dropna()
    return values[method] - values[versus] if versus else values[method]


def ranking_table(full: pd.DataFrame, five: pd.DataFrame) -> str:
    """Markdown: each metric's ranking of the stored methods (instances every method has)
    with 19 and with 5 values of pi."""
    lines = ["| metric | 19 values of pi | 5 values of pi |", "|---|---|---|"]
    for metric in METRICS:
        orders = []
        for table in (full, five):
            values = table[metric].unstack("method").dropna()
            means = values.mean().sort_values(ascending=False)
            orders.append(", ".join(f"{m} {v:.3f}" for m, v in means.items()))
        lines.append(f"| {metric} (n = {len(values)}) | {orders[0]} | {orders[1]} |")
    return "\n".join(lines)


def draws_ranking(draws: pd.DataFrame, full: pd.DataFrame, methods: list[str]) -> str:
    """Markdown: the chosen methods' order from the stored 15-sample values against the
    order each single-sample seed gives (same instances)."""
    instances = sorted(draws["instance"].unique())
    lines = ["| metric | 15 samples (stored) | one sample: orders over seeds |", "|---|---|---|"]
    for metric in METRICS:
        stored = full[metric].unstack("method").loc[instances, methods].mean()
        stored_order = ", ".join(stored.sort_values(ascending=False).index)
        per_seed = draws.pivot_table(index="seed", columns="method", values=metric)[methods]
        orders = per_seed.apply(lambda row: ", ".join(row.sort_values(ascending=False).index), 1)
        counted = orders.value_counts()
        shown = "; ".join(f"{order} ({count}/{len(orders)})" for order, count in counted.items())
        lines.append(f"| {metric} | {stored_order} | {shown} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    kept = ROOT / "experiments/stores/pisoft-classification-gpu-tf517.sqlite.xz"
    parser.add_argument("--store", type=Path, default=kept)
    parser.add_argument("--model", default="smollm2-sst2-prompted")
    parser.add_argument("--texts", type=int, default=16)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--methods", nargs="+", default=["attention", "value_zeroing", "random"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    with readable_store(args.store) as path, sqlite3.connect(path) as db:
        stored = stored_values(db)
        instances = list(range(args.texts))
        explanations = {m: explanations_of(db, m, instances) for m in args.methods}
    full, five = aucs(stored), aucs(stored, FIVE_PIS)
    print(f"{args.store.name}: stored pi-Soft values of {stored['method'].nunique()} methods\n")
    print("Rankings with 19 and with 5 values of pi (stored 15-sample values):\n")
    print(ranking_table(full, five), "\n", flush=True)
    if args.seeds < 2:
        return
    model = normxlogit.load(args.model, device=args.device)
    draws = single_draws(model, explanations, args.seeds)
    print(f"Monte Carlo share ({args.texts} instances x {args.seeds} single-sample seeds):\n")
    print(share_table(full, draws, args.methods), "\n")
    print(draws_ranking(draws, full, args.methods))


if __name__ == "__main__":
    main()
