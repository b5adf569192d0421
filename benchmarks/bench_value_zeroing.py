"""Value zeroing from the reading row alone against the whole maps: seconds and agreement.

    python benchmarks/bench_value_zeroing.py [--model smollm2-sst2-prompted] [--sst2 16]
        [--imdb 4] [--device cpu] [--threads N] [--batch-size 16] [--json FILE]

Explains the first ``--sst2`` SST-2 dev sentences and the first ``--imdb`` IMDb test
reviews with value zeroing and the ``pi-soft`` preset (Inseq 0.7.1's: each block's own
map, the mean over blocks), once computing every block's whole ``T x T`` map (``T``
re-runs of each block, the path before the reading-row one; forced with the method's
``whole_maps`` flag) and once computing each block's reading row alone (one re-run per
block). Reported per data set: the seconds of each (one run each, the whole map first),
their ratio, and the largest absolute difference of any score. A data set whose files
are not staged is skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.data import read_imdb, read_sst2
from normxlogit.methods import get_method


def explained(model, texts: list[str], whole_maps: bool, batch_size: int):
    """The explanations and the seconds they took (the flag picks the path)."""
    method = get_method("value_zeroing", preset="pi-soft")
    method.whole_maps = whole_maps
    start = time.perf_counter()
    explanations = model.explain(texts, method=method, batch_size=batch_size)
    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)
    return explanations, time.perf_counter() - start


def compare(model, texts: list[str], batch_size: int) -> dict[str, float]:
    """Seconds of both paths, their ratio, and the largest difference of their scores."""
    before, whole = explained(model, texts, True, batch_size)
    after, row = explained(model, texts, False, batch_size)
    difference = max(
        float(np.abs(np.asarray(a.scores) - np.asarray(b.scores)).max())
        for a, b in zip(before, after, strict=True)
    )
    tokens = sum(len(e.tokens) for e in before)
    return {
        "texts": len(texts),
        "tokens": tokens,
        "whole_maps_s": whole,
        "reading_row_s": row,
        "ratio": whole / row,
        "max_abs_difference": difference,
    }


def data_sets(sst2: int, imdb: int) -> dict[str, list[str]]:
    """The texts of each data set asked for whose files are staged."""
    readers = {"sst2-dev": (read_sst2, "dev", sst2), "imdb-test": (read_imdb, "test", imdb)}
    texts = {}
    for name, (reader, split, count) in readers.items():
        if count <= 0:
            continue
        try:
            texts[name] = [example.text for example in reader(split, limit=count)]
        except InvalidInputError as error:  # not staged here
            print(f"{name}: skipped ({error})")
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-sst2-prompted")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--sst2", type=int, default=16, help="SST-2 dev sentences")
    parser.add_argument("--imdb", type=int, default=4, help="IMDb test reviews")
    parser.add_argument("--batch-size", type=int, default=16, help="texts per explain batch")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads or torch.get_num_threads())

    model = normxlogit.load(args.model, device=args.device)
    results = {}
    for name, texts in data_sets(args.sst2, args.imdb).items():
        results[name] = row = compare(model, texts, args.batch_size)
        print(
            f"{name}: {row['texts']} texts, {row['tokens']} tokens: whole maps "
            f"{row['whole_maps_s']:.1f} s, reading row {row['reading_row_s']:.1f} s, "
            f"ratio {row['ratio']:.1f}x, max |difference| {row['max_abs_difference']:.1e}"
        )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"model": args.model, "device": args.device, **results}, handle, indent=2)


if __name__ == "__main__":
    main()
