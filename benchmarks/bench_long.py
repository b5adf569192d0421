"""Long inputs: time and peak memory of each method on one text of 1k to 8k tokens,
against a bare forward pass of the same text.

    python benchmarks/bench_long.py [--lengths 1024 2048 4096 8192]
        [--methods normxlogit attention:pi-soft attention_rollout gradient_x_input:pi-soft]
        [--repeats 1] [--inseq-python ENV/bin/python] [--inseq-folder FOLDER]
        [--inseq-limit-gib 16]

The model is the built-in ``smollm2-135m`` explaining its next-token prediction after a
text of exactly ``length`` tokens. The bare forward pass is what that prediction costs
transformers: ``model(ids, logits_to_keep=1)`` without gradients. A method runs the way
``explain`` runs it on an encoded batch: its forward pass (attention weights read block
by block where the method reads them), then its attribution. Peak memory is what torch
allocates during the run beyond what was already alive (the profiler's allocation events
on CPU, the high-water mark on CUDA), measured in a run of its own so the profiler's cost
stays out of the timing. Targets at 4k tokens: attention and rollout within 2 GiB of
growth and 3x a forward pass's time; NormXLogit within 1.1x the forward pass at every
length.

With ``--inseq-python`` (the interpreter of a separate environment with Inseq 0.7.1:
``pip install torch==2.13.0 inseq``; never a dependency), Inseq's ``attention`` and
``input_x_gradient`` explain the same tokens' next-token prediction, in processes whose
address space is capped at ``--inseq-limit-gib`` so that a
method that needs more fails (``MemoryError`` or torch's allocation error) instead of
exhausting the machine; each Inseq method runs in a process of its own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import torch

import normxlogit
from normxlogit.methods import Attribution, Layers, get_method
from normxlogit.model.targets import resolve_targets

sys.path.insert(0, str(Path(__file__).parent))
from bench_methods import median_seconds, peak_mib  # noqa: E402

METHODS = ["normxlogit", "attention:pi-soft", "attention_rollout", "gradient_x_input:pi-soft"]
#: our method -> Inseq 0.7.1's
INSEQ = {"attention": "attention", "gradient_x_input": "input_x_gradient"}
FILLER = (
    "The old lighthouse keeper climbed the winding stairs every evening to light the lamp, "
    "and the ships that passed in the night never knew his name. "
)

#: run by --inseq-python in its own environment, one length per process: times and
#: measures Inseq's next-token attribution of the same ids, and prints JSON
INSEQ_DRIVER = """
import json, resource, sys, time
job = json.loads(sys.argv[1])
limit = int(job["limit_gib"] * 2**30)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import torch
torch.set_num_threads(job["threads"])
from torch.profiler import ProfilerActivity, profile
import inseq

def peak(run):
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    current = top = 0
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        current += event.self_cpu_memory_usage
        top = max(top, current)
    return top / 2**20

out = {}
for ours, name in job["methods"].items():
    try:
        model = inseq.load_model(job["model"], name)
        run = lambda: model.attribute(job["prompt"], generated_texts=job["prompt"] + job["next"],
                                      show_progress=False)
        start = time.perf_counter()
        run()
        seconds = time.perf_counter() - start
        out[ours] = {"seconds": seconds, "peak_mib": peak(run)}
    except MemoryError:
        out[ours] = {"error": f"MemoryError (address space capped at {job['limit_gib']} GiB)"}
    except Exception as error:
        out[ours] = {"error": f"{type(error).__name__}: {str(error)[:120]}"}
    print(f"  Inseq {ours}: {out[ours]}", file=sys.stderr, flush=True)
print(json.dumps(out))
"""


def long_ids(model: normxlogit.ExplainableModel, length: int) -> list[int]:
    """``length`` token ids of English prose, as the encoder would give them."""
    words = FILLER.split()
    text = " ".join(words * (length // len(words) * 2 + 2))
    ids = model.tokenizer(text, add_special_tokens=False)["input_ids"]
    return ids[:length]


def batch_of(model: normxlogit.ExplainableModel, ids: list[int]):
    """A one-text batch holding exactly ``ids`` (the text decoded from them re-encodes to
    the same ids on SmolLM2's tokenizer; checked)."""
    text = model.tokenizer.decode(ids)
    model.encoder.max_length = max(model.encoder.max_length, len(ids))
    batch = model.encode([text])
    if batch.input_ids[0].tolist() != ids:
        raise SystemExit("the filler text does not re-encode to the same ids on this model")
    return batch, text


def parse(spec: str):
    name, _, preset = spec.partition(":")
    return name, get_method(name, preset=preset or None)


def explain_run(model, batch, method) -> Callable[[], object]:
    """What ``explain`` does with an encoded batch: its pass, then the attribution."""
    layers = Layers.resolve(None, model.num_layers)

    def run():
        reader = method.attention_reader(layers, batch.reading_positions[:, None])
        forward = model.forward(batch, layers.indices, reader)
        targets = resolve_targets(model, forward, None)
        with torch.enable_grad() if method.needs_gradients else torch.no_grad():
            scores = method.attribute(model, forward, targets, layers)
        return scores.scores if isinstance(scores, Attribution) else scores

    return run


def bare_run(model, batch) -> Callable[[], object]:
    inputs = model.backbone_inputs(batch.to(model.device))

    @torch.no_grad()
    def run():
        return model.model(**inputs, use_cache=False, logits_to_keep=1).logits

    return run


def inseq_cells(
    python: str, folder: str | None, model, text: str, methods, limit_gib: float
) -> dict:
    from normxlogit.builtin.smollm2 import smollm2_folder

    batch = model.encode([text])
    forward = model.forward(batch)
    next_token = model.tokenizer.decode([int(forward.logits[0].argmax())])
    cells = {}
    for method in [m for m in methods if m in INSEQ]:  # a process each: a fresh address space
        job = {
            "model": folder or str(smollm2_folder()),
            "prompt": text,
            "next": next_token,
            "methods": {method: INSEQ[method]},
            "limit_gib": limit_gib,
            "threads": torch.get_num_threads(),
        }
        done = subprocess.run(
            [python, "-c", INSEQ_DRIVER, json.dumps(job)], stdout=subprocess.PIPE, text=True
        )
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            cells[method] = {"error": f"Inseq's process exited {done.returncode}"}
        else:
            cells.update(json.loads(lines[-1]))
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--inseq-only", action="store_true", help="time Inseq's methods, not ours")
    parser.add_argument(
        "--skip-inseq-beyond", type=int, default=8192, help="no Inseq run above this length"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--inseq-python")
    parser.add_argument("--inseq-limit-gib", type=float, default=16.0)
    parser.add_argument(
        "--inseq-folder",
        help="the model folder Inseq loads (default: the built-in's cached folder; see "
        "bench_generation.py)",
    )
    args = parser.parse_args()

    model = normxlogit.load("smollm2-135m", device=args.device)
    device = model.device
    methods = [parse(spec) for spec in args.methods]
    print(
        f"smollm2-135m on {device} ({torch.get_num_threads()} threads), one text, "
        f"medians of {args.repeats}\n"
    )
    print("| tokens | method | seconds | × forward | peak MiB | growth − forward MiB |")
    print("|---:|---|---:|---:|---:|---:|")
    for length in args.lengths:
        batch, text = batch_of(model, long_ids(model, length))
        bare = bare_run(model, batch)
        bare()  # warm-up
        base_s, base_mib = median_seconds(bare, args.repeats), peak_mib(bare, device)
        print(f"| {length} | forward pass | {base_s:.2f} | 1.00 | {base_mib:.0f} | 0 |", flush=True)
        for spec, (_, method) in zip(args.methods, methods, strict=True):
            if args.inseq_only:
                break
            run = explain_run(model, batch, method)
            took, mib = median_seconds(run, args.repeats), peak_mib(run, device)
            print(
                f"| {length} | `{spec}` | {took:.2f} | {took / base_s:.2f} | {mib:.0f} | "
                f"{mib - base_mib:.0f} |",
                flush=True,
            )
        if args.inseq_python and length <= args.skip_inseq_beyond:
            names = [name for name, _ in methods]
            cells = inseq_cells(
                args.inseq_python, args.inseq_folder, model, text, names, args.inseq_limit_gib
            )
            for name, cell in cells.items():
                if "error" in cell:
                    print(f"| {length} | Inseq `{INSEQ[name]}` | fails: {cell['error']} | | | |")
                    continue
                print(
                    f"| {length} | Inseq `{INSEQ[name]}` | {cell['seconds']:.2f} | "
                    f"{cell['seconds'] / base_s:.2f} | {cell['peak_mib']:.0f} | "
                    f"{cell['peak_mib'] - base_mib:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
