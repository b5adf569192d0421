"""What the context-attribution methods cost: leave-one-out from the prefix cache against
reading every rendering whole, and ContextCite against as many bare forward passes.

    python benchmarks/bench_context.py [--model smollm2-135m-chat] [--sources 10]
        [--prompts 3] [--max-new-tokens 16] [--ablations 64] [--batch-size 16]
        [--device cpu] [--threads N] [--json FILE]

Prompts are ContextCite's template (``"Context: {context}\\n\\nQuery: {query}"``) around
``--sources`` consecutive sentences of an ERASER BoolQ document (val rows, from the first
evidence sentence) and the row's question; each answer is the model's greedy one.
Reported, per prompt and in total, one run each:

- leave-one-out: the tokens each way sends through the model (the whole prompt once and
  each rendering's tokens after the prefix it shares with it, against the whole prompt
  and every rendering whole, answers included) and the seconds each way takes; the
  scores of both ways agree (largest difference printed). Target (issue 42): at most half
  the tokens on a 10-source prompt.
- ContextCite: ``--ablations`` ablations explained (renderings read in passes of
  ``--batch-size``, the Lasso fitted) against ``--ablations`` bare forward passes of the
  whole prompt and answer in the same passes. Target: within 2x.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np
import torch

import normxlogit
from normxlogit.explaining.prefix_cache import cached_log_probs
from normxlogit.explaining.steps import build_generations, prompt_ids
from normxlogit.model.segment_values import answer_log_probs
from normxlogit.model.segments import resolve_segments

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "boolq_eraser"
TEMPLATE = "Context: {context}\n\nQuery: {query}"


def prompts(count: int, sources: int) -> list[tuple[str, list[str]]]:
    """``count`` prompts of ``sources`` document sentences each, and their sentences."""
    with gzip.open(DATA / "docs_val_test.jsonl.gz", "rt", encoding="utf-8") as lines:
        documents = {row["docid"]: row["document"] for row in map(json.loads, lines)}
    out = []
    for line in (DATA / "val.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        evidence = row["evidences"][0][0]
        sentences = documents[evidence["docid"]].split("\n")
        start = evidence["start_sentence"]
        window = [s.strip() for s in sentences[start : start + sources] if s.strip()]
        if len(window) == sources and sum(len(s.split()) for s in window) < 300:
            out.append(
                (TEMPLATE.format(context=" ".join(window), query=row["query"] + "?"), window)
            )
        if len(out) == count:
            return out
    raise SystemExit(f"fewer than {count} val rows have {sources} short sentences")


def timed(run, *args, **options):
    """``run(*args, **options)`` and the seconds it took."""
    start = time.perf_counter()
    value = run(*args, **options)
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-chat")
    parser.add_argument("--sources", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--ablations", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = normxlogit.load(args.model, device=args.device)
    rows = []
    for text, sentences in prompts(args.prompts, args.sources):
        segments = resolve_segments(text, sentences)
        (generation,) = build_generations(model, [text], [None], args.max_new_tokens)
        answer = list(generation.continuation)
        whole = list(generation.ids[: generation.prompt_length])
        keep = np.ones((len(sentences) + 1, len(sentences)), dtype=bool)
        keep[np.arange(1, len(sentences) + 1), np.arange(len(sentences))] = False
        renderings = [prompt_ids(model, segments.without(text, k)) for k in keep]
        (cached, tokens), cached_seconds = timed(cached_log_probs, model, whole, renderings, answer)
        whole_reads, read_seconds = timed(
            answer_log_probs, model, [(renderings, None, answer)], args.batch_size, None
        )
        read_tokens = sum(len(r) + len(answer) for r in renderings)
        difference = float(np.abs(cached.sum(-1) - whole_reads[0].sum(-1)).max())
        _, cite_seconds = timed(
            model.explain,
            text,
            method="contextcite",
            ablations=args.ablations,
            segments=sentences,
            continuation=answer,
            batch_size=args.batch_size,
        )
        bare = [whole] * args.ablations
        _, bare_seconds = timed(
            answer_log_probs, model, [(bare, None, answer)], args.batch_size, None
        )
        rows.append(
            {
                "prompt_tokens": len(whole),
                "answer_tokens": len(answer),
                "loo_tokens_cached": tokens,
                "loo_tokens_read": read_tokens,
                "loo_seconds_cached": cached_seconds,
                "loo_seconds_read": read_seconds,
                "loo_largest_difference": difference,
                "contextcite_seconds": cite_seconds,
                "bare_seconds": bare_seconds,
                "bare_tokens": sum(len(row) + len(answer) for row in bare),
            }
        )
        print(
            f"prompt of {len(whole)} tokens, answer {len(answer)}: leave-one-out "
            f"{tokens} / {read_tokens} tokens ({tokens / read_tokens:.2f}), "
            f"{cached_seconds:.1f} / {read_seconds:.1f} s; largest difference "
            f"{difference:.1e}; contextcite {cite_seconds:.1f} s against {bare_seconds:.1f} s "
            f"bare ({cite_seconds / bare_seconds:.2f}x)"
        )
    total = {key: sum(r[key] for r in rows) for key in rows[0] if key != "loo_largest_difference"}
    print(
        f"\ntotal: leave-one-out tokens {total['loo_tokens_cached'] / total['loo_tokens_read']:.2f}"
        f" of reading every rendering whole, seconds "
        f"{total['loo_seconds_cached'] / total['loo_seconds_read']:.2f}; contextcite at "
        f"{args.ablations} ablations {total['contextcite_seconds'] / total['bare_seconds']:.2f}x"
        f" of {args.ablations} bare forward passes ({args.device}, "
        f"{torch.get_num_threads()} threads)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"settings": vars(args), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
