"""Measure a built-in model's dev score (docs/guide/models.md, the built-in models table).

python scripts/evaluate_builtin.py minilm-sst2 [--limit N]
python scripts/evaluate_builtin.py smollm2-135m-sentiment   # SST-2 dev, prompted
python scripts/evaluate_builtin.py minilm-stsb               # STS-B dev, Pearson
python scripts/evaluate_builtin.py minilm-mnli               # MNLI odd rows (held out)

A model trained by `normxlogit train` is scored on its recipe's evaluation split (the
split its manifest's score is measured on); the others on SST-2 dev.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import normxlogit
from normxlogit.data import read_sst2
from normxlogit.training import READERS, RECIPES


def evaluation_split(name: str):
    """The examples a built-in is scored on: its recipe's evaluation split, else SST-2 dev."""
    if name in RECIPES:
        recipe = RECIPES[name]
        return READERS[recipe.dataset](recipe.eval_split), recipe.eval_split
    return read_sst2("dev"), "dev"


def predictions(model, texts, batch_size: int) -> np.ndarray:
    outputs = []
    for start in range(0, len(texts), batch_size):
        batch = model.encode(texts[start : start + batch_size])
        outputs.append(model.forward(batch).logits.float().numpy())
    return np.concatenate(outputs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", choices=normxlogit.list_models())
    parser.add_argument("--limit", type=int, default=None, help="first N dev examples only")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    model = normxlogit.load(args.model)
    examples, split = evaluation_split(args.model)
    examples = examples[: args.limit]
    start = time.time()
    logits = predictions(model, [e.text for e in examples], args.batch_size)
    gold = np.array([e.label for e in examples])
    if model.task.kind is normxlogit.TaskKind.REGRESSION:
        score = f"pearson {np.corrcoef(logits[:, 0], gold)[0, 1]:.4f}"
    else:
        predicted = logits.argmax(-1)
        rate = ", ".join(
            f"{name} {np.mean(predicted == i):.3f}" for i, name in enumerate(model.labels)
        )
        score = f"accuracy {np.mean(predicted == gold):.4f} (predicted: {rate})"
    print(f"{args.model}: {score} on {len(examples)} {split} examples ({time.time() - start:.0f}s)")


if __name__ == "__main__":
    main()
