"""Greedy continuations of many prompts decoded together against one prompt at a time.

    python benchmarks/bench_greedy.py [--model smollm2-135m-chat] [--dataset tellmewhy]
        [--prompts 16] [--max-new-tokens 32] [--batch-size 16] [--device cpu]
        [--threads N] [--json FILE]

The generation experiments write each prompt's continuation once, greedily, before they
explain it (``bench generate`` ahead of a GPU run, or the first unit of a slot). This
times the first ``--prompts`` prompts of ``--dataset`` written one prompt at a time
(``greedy_continuation``, what the bench did before) and written ``--batch-size`` at a
time (``greedy_continuations``: left-padded, shortest first, a prompt whose batched
decoding met a near-tie decoded again alone). Reported: the tokens written, the seconds
of each way (one run each, after a one-prompt warm-up), their ratio, how many prompts
were decoded again alone, and whether every continuation is the same token for token.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import normxlogit
import normxlogit.explaining.steps as steps
from normxlogit.data import read_tellmewhy, read_wikibio

READERS = {"tellmewhy": read_tellmewhy, "wikibio": read_wikibio}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-chat")
    parser.add_argument("--dataset", default="tellmewhy", choices=sorted(READERS))
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = normxlogit.load(args.model, device=args.device).language_model_view()
    texts = [example.text for example in READERS[args.dataset](limit=args.prompts)]
    prompts = [steps.prompt_ids(model, text) for text in texts]
    steps.greedy_continuation(model, prompts[0], 2)  # warm-up

    start = time.perf_counter()
    alone = [steps.greedy_continuation(model, ids, args.max_new_tokens) for ids in prompts]
    alone_seconds = time.perf_counter() - start

    again: list[list[int]] = []
    single = steps.greedy_continuation

    def counted(model, ids, max_new_tokens):
        again.append(ids)
        return single(model, ids, max_new_tokens)

    steps.greedy_continuation = counted
    start = time.perf_counter()
    together = steps.greedy_continuations(model, prompts, args.max_new_tokens, args.batch_size)
    together_seconds = time.perf_counter() - start
    steps.greedy_continuation = single

    result = {
        "model": args.model,
        "device": str(model.device),
        "dataset": args.dataset,
        "prompts": len(prompts),
        "prompt_tokens": sum(map(len, prompts)),
        "written_tokens": sum(map(len, alone)),
        "batch_size": args.batch_size,
        "alone_seconds": round(alone_seconds, 2),
        "together_seconds": round(together_seconds, 2),
        "speedup": round(alone_seconds / together_seconds, 2),
        "decoded_again_alone": len(again),
        "same_tokens": together == alone,
    }
    for key, value in result.items():
        print(f"{key}: {value}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(result, file, indent=2)


if __name__ == "__main__":
    main()
