"""How far float32 rounding alone moves each gradient step of the Inseq reference inputs,
for ``tests/methods/test_inseq_reference.py``.

The reference (``shared/reference/smollm2-inseq-pisoft.json``) is Inseq's float32 output on
one machine. Where the target's probability is close to 1 (0.9 and above on these inputs),
the gradient of that probability is a small difference of two nearly equal vectors, and a
float32 result depends on the order in which a CPU's kernels add: the same code on another
CPU lands up to 1e-3 of the step's largest score away, and the exact value (float64) lies
between. This script measures, per input, method and step, the distance between our float32
scores and our float64 scores (both scaled to sum 1, relative to the step's largest reference
score, as the test compares), so the test allows each step its own measured rounding instead
of one tolerance too tight for the ill-conditioned steps or too loose for the others::

    .venv/bin/python scripts/inseq_float32_spread.py tests/methods/data/smollm2-float32-spread.json
"""

from __future__ import annotations

import json
import platform
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch

import normxlogit

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference" / "smollm2-inseq-pisoft.json"

#: Inseq's name -> ours, for the methods whose scores are gradients
GRADIENT_METHODS = {
    "saliency": "gradient_norm",
    "input_x_gradient": "gradient_x_input",
    "integrated_gradients": "integrated_gradients",
    "deeplift": "deeplift",
}


def scores(explainer, item: dict, method: str) -> np.ndarray:
    """Our ``[S, T]`` scores for the reference item with the pi-Soft preset."""
    if item["kind"] == "generation":
        made = explainer.explain(
            item["text"], method=method, continuation=item["continuation_ids"], preset="pi-soft"
        )
        return np.asarray(made.scores, dtype=np.float64)
    made = explainer.explain(
        item["text"], method=method, target=item["target_label"], preset="pi-soft"
    )
    return np.asarray(made.scores, dtype=np.float64)[None, :]


def step_spreads(item: dict, name: str, single: np.ndarray, double: np.ndarray) -> list[float]:
    """Per step: max |float32 - float64| of the scaled scores over the step's largest
    reference score."""
    theirs = item["attributions"][name]["aggregated"]
    spreads = []
    for step in range(item["steps"]):
        seen = item["prompt_length"] + step
        low = single[step, :seen] / np.abs(single[step, :seen]).sum()
        high = double[step, :seen] / np.abs(double[step, :seen]).sum()
        scale = max(abs(v) for v in theirs[step][:seen])
        spreads.append(float(np.abs(low - high).max() / scale))
    return spreads


def main(target: Path) -> None:
    torch.set_num_threads(1)
    reference = json.loads(REFERENCE.read_text())
    spread: dict[str, dict[str, list[float]]] = {}
    loaded: dict[tuple[str, str], object] = {}
    for item in reference["inputs"]:
        spread[item["id"]] = {}
        for name, method in GRADIENT_METHODS.items():
            made = {}
            for dtype in ("float32", "float64"):
                key = (item["project_model"], dtype)
                if key not in loaded:
                    loaded[key] = normxlogit.load(item["project_model"], dtype=dtype)
                made[dtype] = scores(loaded[key], item, method)
            spread[item["id"]][name] = step_spreads(item, name, made["float32"], made["float64"])
            print(item["id"], name, " ".join(f"{v:.1e}" for v in spread[item["id"]][name]))
    record = {
        "description": "per input, Inseq method and step: max |float32 - float64| of our "
        "pi-Soft preset's scores (each step scaled to sum 1), over the step's largest score "
        "in shared/reference/smollm2-inseq-pisoft.json",
        "made_by": "scripts/inseq_float32_spread.py",
        "versions": {"torch": torch.__version__, "transformers": version("transformers")},
        "machine": {
            "processor": platform.processor() or platform.machine(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": 1,
        },
        "spread": spread,
    }
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(record, indent=1) + "\n")
    partial.replace(target)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: inseq_float32_spread.py OUTPUT.json")
    main(Path(sys.argv[1]))
