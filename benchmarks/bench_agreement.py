"""Does a device compute the same pi-Soft values as this CPU? And if not, what moves them?

    python benchmarks/bench_agreement.py --write-reference     # here: the CPU's values
    python benchmarks/bench_agreement.py --device cuda [--json out.json]   # on the device

The first GPU slot's SST-2 cells differed from the same cells computed on this CPU by up to
0.013 of a sentence's AUC (0.04 at one value of pi), though the explanations were equal to
4e-8 and insertion/deletion exactly: more than float32 rounding should give. This scores
random explanations (equal on every device: seeded on the CPU) of the first two SST-2 dev
sentences with the prompted SmolLM2 at the paper's protocol, as the bench does, and
compares them with the committed CPU values, in variants that isolate a cause: the
device as it comes; the device with TF32 off and SDPA's exact (math) kernel; one text per
forward pass; and this process's CPU (the device's torch and transformers on a CPU).
"""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path

import numpy as np
import torch

import normxlogit
from normxlogit.data import read_sst2
from normxlogit.evaluation import Protocol

REFERENCE = Path(__file__).with_name("agreement_reference.json")
METRICS = ["pi_soft_nc", "pi_soft_ns"]
TEXTS = 2


def values(model, rows_per_forward: int, batch_size: int) -> dict[str, list[float]]:
    texts = [e.text for e in read_sst2("dev")[:TEXTS]]
    explained = {"random": model.explain(texts, method="random", seed=0)}
    result = normxlogit.evaluate(
        model,
        explained,
        METRICS,
        protocol=Protocol(seed=0),
        progress=False,
        rows_per_forward=rows_per_forward,
        batch_size=batch_size,
    )
    frame = result.frame.sort_values(["metric", "instance", "x"])
    return {m: frame[frame["metric"] == m]["value"].astype(float).tolist() for m in METRICS}


@contextlib.contextmanager
def exact_kernels():
    """TF32 off everywhere and SDPA's math kernel: float32 as the CPU computes it."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        with sdpa_kernel(SDPBackend.MATH):
            yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def settings() -> dict[str, object]:
    """What decides float32 precision on this machine."""
    import transformers

    found: dict[str, object] = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
    }
    for name in ("fp32_precision",):
        for where, module in (("cuda.matmul", torch.backends.cuda.matmul), ("", torch.backends)):
            if hasattr(module, name):
                found[f"{where}.{name}".strip(".")] = getattr(module, name)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--write-reference", action="store_true")
    parser.add_argument("--json", help="also write the differences to this file")
    args = parser.parse_args()
    if args.write_reference:
        model = normxlogit.load("smollm2-sst2-prompted")
        content = {"settings": settings(), "values": values(model, 64, 8)}
        REFERENCE.write_text(json.dumps(content, indent=1))
        print(f"wrote {REFERENCE}")
        return
    reference = json.loads(REFERENCE.read_text())["values"]
    report: dict[str, object] = {"settings": settings(), "reference": reference, "variants": {}}
    variants = [
        ("device as it comes, 1024 rows a pass", args.device, contextlib.nullcontext, 1024, 8),
        ("device, TF32 off, SDPA math kernel", args.device, exact_kernels, 1024, 8),
        ("device, one text a pass, 64 rows", args.device, contextlib.nullcontext, 64, 1),
        ("this machine's CPU", "cpu", contextlib.nullcontext, 64, 8),
    ]
    print(f"{report['settings']}\n")
    print("| variant | largest difference from the reference CPU | mean |")
    print("|---|---:|---:|")
    loaded = {}
    for name, device, context, rows, batch in variants:
        if device not in loaded:
            loaded[device] = normxlogit.load("smollm2-sst2-prompted", device=device)
        with context():
            found = values(loaded[device], rows, batch)
        differences = np.concatenate([np.abs(np.subtract(found[m], reference[m])) for m in METRICS])
        report["variants"][name] = {  # type: ignore[index]
            "values": found,
            "largest": float(differences.max()),
            "mean": float(differences.mean()),
        }
        print(f"| {name} | {differences.max():.2e} | {differences.mean():.2e} |", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
