"""Does ``torch.compile`` pay inside a GPU slot? Eager against compiled (dynamic shapes)
forward passes of the shapes the packed evaluation runs, compile time counted.

    python benchmarks/bench_compile.py [--device cuda] [--dtype bfloat16]
        [--model smollm2-sst2-prompted] [--tokens 65536] [--widths 40 68 120 334]
        [--mode default] [--backend inductor] [--passes 20] [--slot 540] [--json FILE]

The packed evaluation sends passes of about ``--tokens`` tokens: copies of texts of one
length, so a pass is ``[tokens // width, width]`` word embeddings without padding. For each
``--widths`` the script times ``--passes`` such passes (the backbone and the head at the
last position) eagerly, then through ``torch.compile(dynamic=True, mode=--mode)``: the
first compiled call of each width is the compile (and any recompile), the rest the steady
state. Reported: tokens/s of both, the compile seconds, and what a ``--slot``-second slot
would gain: its compute at the compiled speed after paying the compile, against eager. Adopt
only what wins inside a slot (issue 39).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

import normxlogit


def synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_forward(model):
    """The pass the evaluation runs: embeddings in, the head's logits at the last token."""
    backbone, head = model.backbone, model.all_logits

    def forward(embeddings: torch.Tensor) -> torch.Tensor:
        states = backbone(inputs_embeds=embeddings, use_cache=False).last_hidden_state
        return head(states[:, -1])

    return forward


@torch.no_grad()
def timed(forward, inputs: list[torch.Tensor], device) -> list[float]:
    """Seconds of each call."""
    seconds = []
    for embeddings in inputs:
        synchronise(device)
        start = time.perf_counter()
        forward(embeddings)
        synchronise(device)
        seconds.append(time.perf_counter() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-sst2-prompted")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--tokens", type=int, default=65536)
    parser.add_argument("--widths", type=int, nargs="+", default=[40, 68, 120, 334])
    parser.add_argument("--mode", default="default")
    parser.add_argument("--backend", default="inductor", help="eager: checks the script only")
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--slot", type=float, default=540.0, help="a slot's compute seconds")
    parser.add_argument("--json", help="also write the measurements to this file")
    args = parser.parse_args()

    model = normxlogit.load(args.model, device=args.device, dtype=args.dtype)
    table = model.model.get_input_embeddings()
    generator = torch.Generator().manual_seed(0)
    vocabulary = table.weight.shape[0]
    shapes = {}
    for width in args.widths:
        rows = max(1, args.tokens // width)
        ids = torch.randint(vocabulary, (rows, width), generator=generator).to(model.device)
        with torch.no_grad():
            shapes[width] = [table(ids)] * args.passes
    eager = make_forward(model)
    compiled = torch.compile(
        make_forward(model), dynamic=True, mode=args.mode, backend=args.backend
    )
    print(
        f"{args.model} on {model.device} ({model.dtype}), {args.tokens} tokens a pass, "
        f"torch.compile(dynamic=True, mode={args.mode!r})\n"
    )
    print("| width | eager tokens/s | compiled tokens/s | first compiled call s | speed-up |")
    print("|---:|---:|---:|---:|---:|")
    rows_out, compile_seconds, eager_total, compiled_total, tokens_total = [], 0.0, 0.0, 0.0, 0
    for width, inputs in shapes.items():
        tokens = inputs[0].shape[0] * width
        eager_s = timed(eager, inputs, model.device)[1:]  # the first call warms the kernels
        compiled_s = timed(compiled, inputs, model.device)
        first, steady = compiled_s[0], compiled_s[1:]
        compile_seconds += first
        eager_rate = tokens * len(eager_s) / sum(eager_s)
        compiled_rate = tokens * len(steady) / sum(steady)
        eager_total += sum(eager_s)
        compiled_total += sum(steady)
        tokens_total += tokens * len(steady)
        print(
            f"| {width} | {eager_rate:.0f} | {compiled_rate:.0f} | {first:.1f} | "
            f"{compiled_rate / eager_rate:.2f}x |",
            flush=True,
        )
        rows_out.append(
            {"width": width, "eager": eager_rate, "compiled": compiled_rate, "first_call": first}
        )
        summary = summarise(args, compile_seconds, eager_total, compiled_total)
        if args.json:  # after each width: a slot that stops the run keeps what it measured
            write_json(args, model, rows_out, summary, tokens_total)
    print(
        f"\ncompile (first calls) {compile_seconds:.1f} s; steady speed-up "
        f"{summary['speed_up']:.2f}x; a {args.slot:.0f} s slot does "
        f"{summary['slot_work_ratio']:.2f}x the eager work "
        f"({'adopt' if summary['slot_work_ratio'] > 1 else 'keep eager'})"
    )


def summarise(args, compile_seconds: float, eager: float, compiled: float) -> dict:
    """The steady speed-up, and a slot's work compiled (compile paid first) over eager."""
    speed_up = eager / compiled
    done_compiled = max(0.0, args.slot - compile_seconds) * speed_up
    return {
        "compile_seconds": compile_seconds,
        "speed_up": speed_up,
        "slot_work_ratio": done_compiled / args.slot,
    }


def write_json(args, model, widths: list, summary: dict, tokens: int) -> None:
    content = {
        "model": args.model,
        "device": str(model.device),
        "dtype": str(model.dtype).removeprefix("torch."),
        "mode": args.mode,
        "widths": widths,
        "tokens": tokens,
        **summary,
    }
    Path(args.json).write_text(json.dumps(content, indent=1))


if __name__ == "__main__":
    main()
