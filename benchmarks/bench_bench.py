"""What `normxlogit bench` costs on top of the work it runs, and what Ray's workers buy.

1. Overhead: the same explanations and evaluations run (a) directly, with the library's
   ``explain`` and ``evaluate`` on chunks of texts, and (b) through ``run_bench`` into a
   fresh SQLite store (planning, store writes and progress included; model loading left
   out of both). Interleaved repeats; the ratio of medians is reported. Target: <= 1.05.
2. Ray, strong scaling: one grid of ``--ray-texts`` sentences (several minutes of work)
   through the Ray engine with 1 and with 2 actors of one CPU thread each, on a local
   cluster (``--ray``; needs ``pip install 'normxlogit[ray]'``). Each timing is the whole
   run: actors started, models loaded, every unit computed and stored. Target: >= 1.8x.

    python benchmarks/bench_bench.py [--texts 64] [--repeats 3] [--ray] [--ray-texts 384]
        [--ray-only]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

import normxlogit
from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.runner import load_examples
from normxlogit.evaluation import Protocol, evaluate
from normxlogit.explaining.texts import explain
from normxlogit.methods import get_method

CONFIG = """
title = "bench overhead"
seeds = [0]
batch_size = 16
chunk_size = {chunk}
metrics = ["comp_cd", "suff_cd", "pi_soft_nc"]
methods = ["normxlogit", {{name = "integrated_gradients", options = {{steps = 20}}}}]

[protocol]
samples = 3
pis = [0.1, 0.3, 0.5, 0.7, 0.9]

[[experiments]]
model = "minilm-sst2"
dataset = "sst2"
split = "dev"
limit = {texts}
"""


def direct(model, config) -> float:
    """The explain + evaluate calls the bench makes, without the bench."""
    (experiment,) = config.experiments
    data = load_examples(experiment.dataset, experiment.dataset.limit)
    instances = sorted(data.texts)
    start = time.perf_counter()
    for spec in experiment.methods:
        method = get_method(spec.name, **spec.options)
        for first in range(0, len(instances), config.chunk_size):
            chunk = instances[first : first + config.chunk_size]
            made = explain(model, [data.texts[i] for i in chunk], method=method, batch_size=16)
            evaluate(  # one call for all metrics, as the bench makes it
                model,
                {spec.display: made},
                list(experiment.metrics),
                protocol=Protocol(seed=0).with_options(**experiment.protocol),
                batch_size=16,
                progress=False,
            )
    return time.perf_counter() - start


def through_bench(config, engine=None) -> tuple[float, float]:
    """Wall seconds of run_bench into a fresh store (model loading left out), and the
    explain + evaluate seconds inside it."""
    with tempfile.TemporaryDirectory() as folder, ResultStore(Path(folder) / "r.sqlite") as store:
        report = run_bench(config, store, engine)
    return report.wall_seconds - report.load_seconds, report.compute_seconds


def ray_scaling(config, texts: int, repeats: int) -> None:
    """Wall seconds of the whole grid on 1 and on 2 one-thread actors, interleaved."""
    import ray

    from normxlogit.bench.ray_engine import RayEngine

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        times: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(repeats):
            for workers in (1, 2):
                start = time.perf_counter()
                through_bench(config, RayEngine(workers=workers, cpus_per_worker=1))
                times[workers].append(time.perf_counter() - start)
                print(f"  ray, {workers} actor(s): {times[workers][-1]:.1f} s", flush=True)
    finally:
        ray.shutdown()
    print(f"{texts} SST-2 texts x 2 methods x 3 metrics, actors of one thread each")
    for workers, seconds in times.items():
        print(
            f"ray, {workers} actor(s): median {statistics.median(seconds):.1f} s "
            f"(actor start and model loads incl.) {[round(t, 1) for t in seconds]}"
        )
    speedup = statistics.median(times[1]) / statistics.median(times[2])
    print(f"ray speed-up, 2 actors over 1: {speedup:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=32)
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ray", action="store_true", help="also time Ray with 1 and 2 workers")
    parser.add_argument("--ray-texts", type=int, default=384)
    parser.add_argument("--ray-only", action="store_true", help="skip the overhead part")
    args = parser.parse_args()
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as folder:
        if args.ray or args.ray_only:
            path = Path(folder) / "ray.toml"
            path.write_text(CONFIG.format(texts=args.ray_texts, chunk=args.chunk))
            ray_scaling(load_config(path), args.ray_texts, args.repeats)
        if args.ray_only:
            return
        path = Path(folder) / "grid.toml"
        path.write_text(CONFIG.format(texts=args.texts, chunk=args.chunk))
        config = load_config(path)
        model = normxlogit.load("minilm-sst2")
        direct(model, config)  # warm-up: first calls allocate
        plain, benched, inside = [], [], []
        for _ in range(args.repeats):  # interleaved, so drifts hit both alike
            plain.append(direct(model, config))
            wall, compute = through_bench(config)
            benched.append(wall)
            inside.append(compute)
        ratio = statistics.median(benched) / statistics.median(plain)
        print(f"{args.texts} SST-2 texts x 2 methods x 3 metrics, chunks of {args.chunk}")
        print(f"direct explain + evaluate: median {statistics.median(plain):.2f} s {plain}")
        print(f"run_bench (store writes incl.): median {statistics.median(benched):.2f} s")
        print(f"explain + evaluate inside run_bench: median {statistics.median(inside):.2f} s")
        print(f"bench / direct: {ratio:.3f}")
        overhead = statistics.median(w / c for w, c in zip(benched, inside, strict=True))
        print(f"bench wall / explain + evaluate inside it: {overhead:.4f}")


if __name__ == "__main__":
    main()
