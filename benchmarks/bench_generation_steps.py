"""Explaining only the scored steps of a generation against explaining every step.

    python benchmarks/bench_generation_steps.py [--model smollm2-135m-chat]
        [--dataset tellmewhy] [--prompts 4] [--max-new-tokens 32] [--every 5]
        [--method gradient_x_input] [--preset pi-soft] [--batch-size 8] [--alone]
        [--device cpu] [--threads N] [--json FILE]

The pi-Soft protocol scores every ``--every``-th step of a generation (0, 5, ..., 30 of
32), so the bench explains only those (``explain_steps=``). Each of the first
``--prompts`` prompts of ``--dataset`` (TellMeWhy's test split or WikiBio's) gets its
continuation written once, greedily (``--max-new-tokens``); the method (with
``--preset``, as the pi-Soft experiments run it) then explains those continuations as
the bench's workers do (``workflows.explain_generations``, every prompt in one call),
once at every step and once at the scored steps. Reported: the prompts' tokens, the
steps each run explains, the seconds of each (one run each, every step first, after a
small warm-up), their ratio, and the largest absolute difference of a scored step's
score. ``--alone`` also times the scored steps explained one prompt at a time (what the
bench did before prompts shared passes).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import normxlogit
from normxlogit.data import read_tellmewhy, read_wikibio
from normxlogit.explaining.steps import build_generation
from normxlogit.methods import get_method
from normxlogit.workflows import explain_generations

READERS = {"tellmewhy": read_tellmewhy, "wikibio": read_wikibio}


def continuations(model, prompts: list[str], max_new_tokens: int) -> list[list[int]]:
    """What the model writes after each prompt, greedily (what the bench explains)."""
    view = model.language_model_view()
    return [
        list(build_generation(view, prompt, None, max_new_tokens).continuation)
        for prompt in prompts
    ]


def timed(model, prompts, written, method, batch_size: int, steps, alone: bool = False):
    """The explanations and the seconds they took: every prompt in one call (the bench's
    workers), or one call per prompt with ``alone``."""
    start = time.perf_counter()
    groups = [[i] for i in range(len(prompts))] if alone else [list(range(len(prompts)))]
    made = []
    for group in groups:
        explained = explain_generations(
            model,
            [prompts[i] for i in group],
            {"method": method},
            [written[i] for i in group],
            batch_size=batch_size,
            explain_steps=steps,
        )
        made += explained.explanations["method"]
    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)
    return made, time.perf_counter() - start


def largest_difference(every, scored) -> float:
    """The largest absolute difference of a score at a step both explain."""
    worst = 0.0
    for a, b in zip(every, scored, strict=True):
        steps = b.steps_with_scores
        worst = max(worst, float(np.nanmax(np.abs(a.scores[steps] - b.scores[steps]))))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-chat")
    parser.add_argument("--dataset", choices=sorted(READERS), default="tellmewhy")
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--every", type=int, default=5, help="score every N-th step")
    parser.add_argument("--method", default="gradient_x_input")
    parser.add_argument("--preset", default="pi-soft", help="the method's preset ('' for none)")
    parser.add_argument("--batch-size", type=int, default=8, help="prefixes per pass")
    parser.add_argument("--alone", action="store_true", help="also time one prompt at a time")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    model = normxlogit.load(args.model, device=args.device)
    method = get_method(args.method, **({"preset": args.preset} if args.preset else {}))
    prompts = [e.text for e in READERS[args.dataset]("test", limit=args.prompts)]
    written = continuations(model, prompts, args.max_new_tokens)
    scored = list(range(0, args.max_new_tokens, args.every))
    timed(model, prompts[:1], [written[0][:2]], method, args.batch_size, None)  # warm-up
    every, every_s = timed(model, prompts, written, method, args.batch_size, None)
    chosen, chosen_s = timed(model, prompts, written, method, args.batch_size, scored)
    row = {
        "prompts": len(prompts),
        "tokens": sum(len(e.tokens) for e in every),
        "steps_every": sum(e.steps for e in every),
        "steps_scored": sum(len(e.steps_with_scores) for e in chosen),
        "every_step_s": every_s,
        "scored_steps_s": chosen_s,
        "ratio": every_s / chosen_s,
        "max_abs_difference": largest_difference(every, chosen),
    }
    print(
        f"{args.dataset}, {args.method} ({args.preset or 'no preset'}) on {args.model}, "
        f"{args.device}: {row['prompts']} prompts, {row['tokens']} tokens; every step "
        f"({row['steps_every']}) {every_s:.1f} s, scored steps ({row['steps_scored']}) "
        f"{chosen_s:.1f} s, ratio {row['ratio']:.2f}x, max |difference| "
        f"{row['max_abs_difference']:.1e}"
    )
    if args.alone:
        _, alone_s = timed(model, prompts, written, method, args.batch_size, scored, alone=True)
        row["scored_steps_alone_s"] = alone_s
        print(f"scored steps one prompt at a time: {alone_s:.1f} s")
    if args.json:
        with open(args.json, "w") as handle:
            settings = {"model": args.model, "device": args.device, "method": args.method}
            json.dump({**settings, "preset": args.preset, args.dataset: row}, handle, indent=2)


if __name__ == "__main__":
    main()
