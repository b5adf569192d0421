"""Reference outputs of ferret 0.4.2's plausibility evaluators, for
``tests/evaluation/test_ferret_plausibility.py``.

ferret is no dependency of the project: this script runs in an environment of its own,
builds synthetic cases (random scores with negatives, ties, all-negative and constant
scores, empty rationales, k from 1 to beyond the text, ferret's ``only_pos`` on and off,
[CLS] ... [SEP] texts with ferret's ``remove_first_last``), calls ferret's own
``compute_evaluation`` of ``Tokenf1_PlausibilityEvaluation``,
``TokenIOU_PlausibilityEvaluation`` and ``AUPRC_PlausibilityEvaluation`` on each, and
writes the inputs and ferret's outputs to
``tests/evaluation/data/ferret_plausibility_reference.json``::

    python3.11 -m venv /tmp/env-ferret
    /tmp/env-ferret/bin/pip install torch==2.13.0 ferret-xai==0.4.2 "pyarrow<20"
    /tmp/env-ferret/bin/python scripts/ferret_plausibility_reference.py

(ferret pins numpy < 2; the newest pyarrow needs numpy 2, hence ``pyarrow<20``.)

ferret ranks with numpy's default ``argsort``, which does not define the order of equal
scores: on a processor with AVX-512 numpy sorts float64 with a sorting network (the order
of ties depends on the data), elsewhere with introsort (stable below 17 elements). Each
case records the order numpy gave here; the test compares a case with ties only where its
own numpy gives the same order.
"""

from __future__ import annotations

import json
import platform
import sys
import types
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "tests" / "evaluation" / "data" / "ferret_plausibility_reference.json"
#: words that are one token each in MiniLM's (BERT uncased) vocabulary, for the cases run
#: end to end through ``normxlogit.evaluate`` on the tests' tiny BERT
WORDS = [
    "the",
    "film",
    "never",
    "lets",
    "go",
    "of",
    "a",
    "gripping",
    "story",
    "and",
    "it",
    "is",
    "dull",
    "but",
    "warm",
    "with",
    "good",
    "acting",
]


def case(name, scores, rationale, k, only_pos, tokens=None):
    """One case: ferret's inputs (scores and rationale over every token)."""
    scores = [round(float(v), 6) for v in scores]
    remove_first_last = tokens is not None
    return {
        "name": name,
        "tokens": tokens or [f"t{i}" for i in range(len(scores))],
        "scores": scores,
        "rationale": [int(v) for v in rationale],
        "top_k_rationale": int(k),
        "only_pos": bool(only_pos),
        "remove_first_last": remove_first_last,
    }


def rationale_of(rng, n, share=0.35):
    marked = (rng.random(n) < share).astype(int)
    if not marked.any():
        marked[rng.integers(n)] = 1
    return marked


def cases():
    rng = np.random.default_rng(40)
    out = []
    for i in range(12):  # signed scores, no ties, ferret's default only_pos=True
        n = int(rng.integers(6, 41))
        k = int(rng.choice([1, 3, 5, 8, 12]))
        out.append(case(f"signed-{i}", rng.normal(size=n), rationale_of(rng, n), k, True))
    for i in range(6):  # the same kind with only_pos=False: the project's default order
        n = int(rng.integers(6, 41))
        k = 1 if i < 3 else int(rng.choice([2, 5, 7]))  # ferret raises for k >= 2
        out.append(case(f"signed-all-{i}", rng.normal(size=n), rationale_of(rng, n), k, False))
    for i in range(8):  # ties: few distinct values
        n = int(rng.integers(5, 17))
        scores = rng.choice([-1.0, 0.0, 0.5, 1.0, 2.0], size=n)
        out.append(case(f"ties-{i}", scores, rationale_of(rng, n), int(rng.integers(2, 6)), True))
    for i in range(3):  # ties in longer texts
        n = int(rng.integers(20, 41))
        scores = rng.choice([-1.0, 0.0, 0.5, 1.0, 2.0], size=n)
        out.append(
            case(f"ties-long-{i}", scores, rationale_of(rng, n), int(rng.integers(3, 9)), True)
        )
    for i in range(3):  # the highest score tied, k = 1: which token wins
        n = int(rng.integers(5, 17))
        scores = rng.choice([-1.0, 0.0, 0.5], size=n)
        scores[rng.choice(n, size=3, replace=False)] = 1.0
        out.append(case(f"ties-first-{i}", scores, rationale_of(rng, n, 0.5), 1, i != 1))
    for i in range(3):  # every score negative: ferret chooses nothing
        n = int(rng.integers(6, 30))
        scores = -np.abs(rng.normal(size=n)) - 0.01
        out.append(case(f"all-negative-{i}", scores, rationale_of(rng, n), 5, True))
    out.append(
        case(
            "all-negative-all", -np.abs(rng.normal(size=12)) - 0.01, rationale_of(rng, 12), 1, False
        )
    )
    for value, only_pos, k in ((0.7, True, 5), (0.0, True, 5), (-0.3, True, 5), (0.7, False, 1)):
        n = 12
        out.append(
            case(
                f"constant-{value}-{only_pos}", np.full(n, value), rationale_of(rng, n), k, only_pos
            )
        )
    for i, (only_pos, k) in enumerate(((True, 5), (False, 1), (True, 3))):  # nothing marked
        n = int(rng.integers(6, 25))
        out.append(case(f"empty-rationale-{i}", rng.normal(size=n), np.zeros(n), k, only_pos))
    for i in range(2):  # k beyond the text
        n = int(rng.integers(4, 9))
        out.append(case(f"k-beyond-{i}", rng.normal(size=n), rationale_of(rng, n), n + 3, True))
    out.append(case("rationale-everything", rng.normal(size=10), np.ones(10), 5, True))
    # three positive scores, rationale on them and two more (the example)
    scores = np.array([0.9, -0.2, 0.6, -0.5, 0.4, -0.1, -0.3, -0.7])
    out.append(case("three-positive", scores, [1, 1, 1, 0, 1, 1, 0, 0], 5, True))
    out.append(case("three-positive-all", scores, [1, 1, 1, 0, 1, 1, 0, 0], 5, False))
    for i in range(6):  # [CLS] words [SEP]: ferret drops the first and last token
        n = int(rng.integers(4, 13))
        words = list(rng.choice(WORDS, size=n))
        tokens = ["[CLS]", *words, "[SEP]"]
        scores = rng.normal(size=n + 2)
        if i == 4:
            scores = np.round(scores)  # ties among at most 16 tokens
        inner = np.zeros(n, dtype=int) if i == 5 else rationale_of(rng, n)
        rationale = [0, *inner, 0]
        out.append(case(f"cls-sep-{i}", scores, rationale, int(rng.integers(2, 6)), True, tokens))
    return out


def ferret_outputs(item, evaluators):
    """ferret's three values for one case, from its own ``compute_evaluation``; an error's
    text where it raises (``only_pos=False`` with k >= 2: ``id_top_k == []`` compares a
    numpy array with a list, which numpy >= 1.25 refuses)."""
    from ferret.explainers.explanation import ExplanationWithRationale

    explanation = ExplanationWithRationale(
        " ".join(item["tokens"]),
        item["tokens"],
        np.array(item["scores"]),
        "case",
        1,
        np.array(item["rationale"]),
    )
    args = {
        "remove_first_last": item["remove_first_last"],
        "only_pos": item["only_pos"],
        "top_k_rationale": item["top_k_rationale"],
    }
    values = {}
    for name, evaluator in evaluators.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 0 / 0 recall, sklearn's no-positive warning
            try:
                values[name] = float(evaluator.compute_evaluation(explanation, 1, **args).score)
            except ValueError as error:
                values[name] = f"{type(error).__name__}: {error}"
    return values


def main() -> None:
    from ferret.datasets import BaseDataset
    from ferret.datasets.datamanagers import HateXplainDataset, MovieReviews, SSTDataset
    from ferret.evaluators.plausibility_measures import (
        AUPRC_PlausibilityEvaluation,
        Tokenf1_PlausibilityEvaluation,
        TokenIOU_PlausibilityEvaluation,
    )

    tokenizer = types.SimpleNamespace(cls_token="[CLS]")  # all remove_first_last reads
    evaluators = {
        "token_f1": Tokenf1_PlausibilityEvaluation(None, tokenizer),
        "token_iou": TokenIOU_PlausibilityEvaluation(None, tokenizer),
        "auprc": AUPRC_PlausibilityEvaluation(None, tokenizer),
    }
    items = cases()
    for item in items:
        item["ferret"] = ferret_outputs(item, evaluators)
        # the order ferret ranks by (numpy's default argsort, which orders equal scores as
        # the processor's sort kernel leaves them): a test compares tie cases only where
        # its own numpy gives the same order
        item["argsort"] = np.array(item["scores"]).argsort().tolist()
    data = {
        "made_by": "scripts/ferret_plausibility_reference.py, in an environment of its own",
        "calls": (
            "ferret.evaluators.plausibility_measures.{Tokenf1,TokenIOU,AUPRC}_"
            "PlausibilityEvaluation(None, tokenizer).compute_evaluation(ExplanationWithRationale"
            "(text, tokens, np.array(scores), 'case', 1, np.array(rationale)), 1, "
            "remove_first_last=..., only_pos=..., top_k_rationale=...); tokenizer.cls_token = "
            "'[CLS]'; the values are the Evaluation's score"
        ),
        "ties": (
            "ferret ranks by np.array(scores).argsort()[-k:][::-1]: numpy's default sort, "
            "which does not define the order of equal scores (with AVX-512, numpy >= 1.26 "
            "sorts float64 with a sorting network, data-dependent; elsewhere introsort, stable "
            "below 17 elements); 'argsort' holds the order numpy gave here"
        ),
        "cpu_avx512": "avx512f" in Path("/proc/cpuinfo").read_text(),
        "benchmark_k": {
            "note": "Benchmark.evaluate_samples sets top_k_rationale = dataset.avg_rationale_size",
            "hatexplain": HateXplainDataset.avg_rationale_size,
            "movie_rationales": MovieReviews.avg_rationale_size,
            "sst": SSTDataset.avg_rationale_size,
            "default": BaseDataset.avg_rationale_size.fget(None),
        },
        "versions": {
            name: version(name) for name in ("ferret-xai", "numpy", "scikit-learn", "torch")
        },
        "python": platform.python_version(),
        "cases": items,
    }
    OUTPUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{len(items)} cases -> {OUTPUT.relative_to(REPO)}", file=sys.stderr)


if __name__ == "__main__":
    main()
