"""On a machine with a GPU: every family's scores on CUDA equal those on the CPU.

python scripts/gpu_check.py        # uses the tiny test models of tests/conftest.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import CASES, build_model, fresh_tokenizer  # noqa: E402
from tests.test_families import target_for, texts_for  # noqa: E402

import normxlogit  # noqa: E402


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device; nothing to check")
        return 0
    warnings.simplefilter("ignore")
    failures = 0
    for family, head in CASES:
        results = {}
        for device in ("cpu", "cuda"):
            model = normxlogit.load((build_model(family, head), fresh_tokenizer()), device=device)
            texts = texts_for(model)
            results[device] = model.explain(texts, target=target_for(model), layer="all")
        worst = max(
            float(np.abs(a.scores - b.scores).max() / max(1.0, np.abs(a.scores).max()))
            for a, b in zip(results["cpu"], results["cuda"], strict=True)
        )
        same_labels = [e.label for e in results["cpu"]] == [e.label for e in results["cuda"]]
        ok = worst < 1e-3 and same_labels
        failures += not ok
        print(
            f"{family:12s} {head:15s} max rel diff {worst:.2e} labels equal {same_labels} "
            f"{'ok' if ok else 'FAIL'}"
        )
    print(f"{len(CASES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
