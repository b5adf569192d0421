"""Evaluation throughput against the device's limit, in tokens: the real (unpadded) tokens
per second that ``evaluate`` pushes through the model on a pi-Soft chunk, against a bare
forward pass over the same texts with no padding at all.

    python benchmarks/bench_gpu.py [--device cuda] [--dtype bfloat16] [--data sst2 imdb]
        [--texts 16 8] [--samples 15] [--pis 19] [--tokens 4096 16384 65536]
        [--model smollm2-sst2-prompted] [--json FILE]

The chunk is the pi-Soft classification experiment's: the prompted SmolLM2, NormXLogit
explanations, ``pi_soft_nc`` and ``pi_soft_ns`` (default: the paper's 15 samples x 19
values of pi; ``--samples 3 --pis 5`` is the CPU runs' lighter Monte Carlo, which changes
the seconds, not the ratios), texts encoded 8 at a time as the grids run them. Every
``--tokens`` (the token budget of a forward pass) is tried and the fastest reported: the
benchmark chooses it. The bare pass runs each text alone: copies of its word embeddings
through the backbone and the head at its reading position, as many copies as ``evaluate``
ran for it, in passes of the same budget. It is what the evaluation cannot avoid.

Run against an older checkout (``PYTHONPATH=old/src python benchmarks/bench_gpu.py``) the
script measures that code as it ran: 64 rows a pass, whatever ``--tokens`` says ("today").

Targets (issue 39): on the CPU evaluate at >= 0.9 of the bare pass and >= 2x today's
tokens/s on IMDb; on a GPU >= 0.8 of the bare pass.
"""

from __future__ import annotations

import argparse
import inspect
import json
import time
from pathlib import Path

import torch

import normxlogit
from normxlogit.data import read_imdb, read_sst2
from normxlogit.evaluation import Protocol

METRICS = ["pi_soft_nc", "pi_soft_ns"]
READERS = {"sst2": lambda n: read_sst2("dev")[:n], "imdb": lambda n: read_imdb(limit=n)}
PI_GRIDS = {19: [round(0.05 * k, 2) for k in range(1, 20)], 5: [0.1, 0.3, 0.5, 0.7, 0.9]}
#: what the grids use: texts encoded together
BATCH_SIZE = 8


def synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def packs_by_tokens() -> bool:
    """Whether this checkout's ``evaluate`` sizes its passes by tokens (issue 39)."""
    return "tokens_per_forward" in inspect.signature(normxlogit.evaluate).parameters


class Counter:
    """Wraps ``run_backbone``: real and padded tokens of every perturbed pass."""

    def __init__(self, model):
        self.model, self.real, self.padded, self.passes = model, 0, 0, 0
        self.original = model.run_backbone

    def __enter__(self):
        def counting(**inputs):
            mask = inputs.get("attention_mask")
            first = inputs.get("inputs_embeds", inputs.get("input_ids"))
            self.padded += first.shape[0] * first.shape[1]
            self.real += int(mask.sum()) if mask is not None else first.shape[0] * first.shape[1]
            self.passes += 1
            return self.original(**inputs)

        self.model.run_backbone = counting
        return self

    def __exit__(self, *exc):
        del self.model.run_backbone


def evaluate_speed(model, explanations, protocol, tokens: int) -> dict:
    """Real tokens per second of one whole ``evaluate`` call, and its padding."""
    sizes = {"tokens_per_forward": tokens} if packs_by_tokens() else {"rows_per_forward": 64}
    with Counter(model) as counter:
        synchronise(model.device)
        start = time.perf_counter()
        normxlogit.evaluate(
            model,
            explanations,
            METRICS,
            protocol=protocol,
            batch_size=BATCH_SIZE,
            progress=False,
            **sizes,
        )
        synchronise(model.device)
        seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "real_tokens": counter.real,
        "padded_tokens": counter.padded,
        "passes": counter.passes,
        "tokens_per_second": counter.real / seconds,
    }


@torch.no_grad()
def bare_speed(model, texts, rows_per_text: int, tokens: int) -> float:
    """Real tokens per second of plain forward passes: each text alone (no padding),
    ``rows_per_text`` copies of its embeddings in passes of about ``tokens`` tokens."""
    table = model.model.get_input_embeddings()
    synchronise(model.device)
    done, start = 0, time.perf_counter()
    for text in texts:
        batch = model.encode([text]).to(model.device)
        width = batch.input_ids.shape[1]
        embeddings = table(batch.input_ids)
        inputs = {k: v for k, v in model.backbone_inputs(batch).items() if k != "input_ids"}
        per_pass = max(1, tokens // width)
        for first in range(0, rows_per_text, per_pass):
            count = min(per_pass, rows_per_text - first)
            rows = {k: v.expand(count, -1) for k, v in inputs.items()}
            states = model.run_backbone(
                inputs_embeds=embeddings.expand(count, -1, -1), **rows
            ).last_hidden_state
            model.output_logits(states[:, int(batch.reading_positions[0])])
            done += count * width
    synchronise(model.device)
    return done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-sst2-prompted")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--data", nargs="+", default=["sst2", "imdb"], choices=sorted(READERS))
    parser.add_argument("--texts", type=int, nargs="+", default=[16, 8], help="per --data")
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--pis", type=int, default=19, choices=sorted(PI_GRIDS))
    parser.add_argument("--tokens", type=int, nargs="+", default=None)
    parser.add_argument("--json", help="also write the measurements to this file")
    args = parser.parse_args()

    model = normxlogit.load(args.model, device=args.device, dtype=args.dtype)
    budgets = args.tokens or ([4096] if model.device.type == "cpu" else [16384, 65536, 262144])
    if not packs_by_tokens():
        budgets = budgets[:1]  # an older checkout: 64 rows a pass, whatever the budget
    protocol = Protocol(seed=0).with_options(samples=args.samples, pis=PI_GRIDS[args.pis])
    code = "by tokens" if packs_by_tokens() else "64 rows a pass (today)"
    print(
        f"{args.model} on {model.device} ({model.dtype}, {torch.get_num_threads()} threads), "
        f"{', '.join(METRICS)}, {args.samples} samples x {args.pis} pis, passes {code}\n"
    )
    print("| data | texts | tokens a pass | evaluate tokens/s | padding | bare tokens/s | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    results = []
    counts = dict(zip(args.data, args.texts + [args.texts[-1]] * len(args.data), strict=False))
    for name in args.data:
        texts = [example.text for example in READERS[name](counts[name])]
        explanations = model.explain(texts, method="normxlogit", batch_size=BATCH_SIZE)
        best = None
        for tokens in budgets:
            try:
                measured = evaluate_speed(model, explanations, protocol, tokens)
            except torch.OutOfMemoryError:
                print(f"| {name} | {len(texts)} | {tokens} | out of memory | | | |")
                break
            rows_per_text = round(_rows(model, texts, measured))
            bare = bare_speed(model, texts, rows_per_text, tokens)
            measured.update(data=name, texts=len(texts), tokens_per_forward=tokens)
            measured.update(bare_tokens_per_second=bare, ratio=measured["tokens_per_second"] / bare)
            padding = measured["padded_tokens"] / measured["real_tokens"]
            print(
                f"| {name} | {len(texts)} | {tokens} | {measured['tokens_per_second']:.0f} | "
                f"{padding:.2f} | {bare:.0f} | {measured['ratio']:.3f} |",
                flush=True,
            )
            results.append(measured)
            if best is None or measured["tokens_per_second"] > best["tokens_per_second"]:
                best = measured
        if best is not None:
            print(f"\n{name}: fastest at {best['tokens_per_forward']} tokens a pass\n")
        if args.json:
            write_json(args.json, args, model, results)


def _rows(model, texts, measured: dict) -> float:
    """Perturbed rows per text that evaluate ran (its real tokens over the texts')."""
    lengths = [int(model.encode([t]).attention_mask.sum()) for t in texts]
    return measured["real_tokens"] / sum(lengths)


def write_json(path: str, args, model, results: list[dict]) -> None:
    """What a GPU slot reads back: every size's speeds and, per data set, the fastest."""
    fastest: dict[str, dict] = {}
    for row in results:
        if (
            row["data"] not in fastest
            or row["tokens_per_second"] > fastest[row["data"]]["tokens_per_second"]
        ):
            fastest[row["data"]] = row
    content = {
        "model": args.model,
        "device": str(model.device),
        "device_name": torch.cuda.get_device_name(model.device)
        if model.device.type == "cuda"
        else "cpu",
        "dtype": str(model.dtype).removeprefix("torch."),
        "measured": results,
        "tokens_per_forward": max(fastest.values(), key=lambda r: r["tokens_per_second"])[
            "tokens_per_forward"
        ]
        if fastest
        else None,
        "fastest": fastest,
    }
    Path(path).write_text(json.dumps(content, indent=1))


if __name__ == "__main__":
    main()
