"""Reference outputs of Quantus 0.6.0's MPRT, for ``tests/sanity/test_quantus_mprt.py``.

Quantus runs in an environment of its own (it is no dependency of the project); this
script has two stages.

1. ``prepare``, in the project's environment: saves ``minilm-sst2``'s merged weights to a
   folder outside the repository, with the token ids the project feeds it for each text,
   the trained model's prediction (the target explained) and the project's gradient x
   input (``reduce="sum"``), which the reference stage checks it reproduces::

       .venv/bin/python scripts/quantus_reference.py prepare /tmp/quantus-mprt

2. ``reference``, in Quantus's environment: loads the weights with transformers
   (float32), and per text calls ``quantus.MPRT(layer_order=..., seed=42,
   disable_warnings=True)`` with its other defaults (``abs=True``, ``normalise=True``:
   ``normalise_by_max``, ``similarity_func=correlation_spearman``) on
   ``model=<BertForSequenceClassification>``, ``x_batch=<the ids, [1, T]>``,
   ``y_batch=<the target>``, ``channel_first=True``, ``batch_size=1`` and
   ``explain_func=gradient_x_input``: the model run from ``inputs_embeds`` (the word
   embeddings of the ids, requiring gradients), backward from the target's logit,
   ``(inputs_embeds * grad).sum(-1)``, every token. One text per call, so no padding
   enters the correlation. Writes ``tests/sanity/data/quantus-mprt-minilm-sst2.json``::

       /tmp/env-quantus/bin/python scripts/quantus_reference.py reference /tmp/quantus-mprt

The reference environment (``python3.11 -m venv /tmp/env-quantus``, then)::

    /tmp/env-quantus/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
    /tmp/env-quantus/bin/pip install quantus==0.6.0 transformers==5.24.0 safetensors
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "tests" / "sanity" / "data" / "quantus-mprt-minilm-sst2.json"
MODEL = "minilm-sst2"
SEED = 42
TEXTS = [
    "An honest, warm little film with a terrific lead.",
    "Two hours of noise and nothing to say.",
    "It wants to be clever but mostly feels tired.",
]
#: Quantus's layer orders run here: cascading for every text, independent for the first
ORDERS = {"top_down": TEXTS, "independent": TEXTS[:1]}


# --------------------------------------------------------------------------- prepare
def prepare(folder: Path) -> None:
    """In the project's environment: weights, ids, targets and the trained scores."""
    import normxlogit
    from normxlogit.model.targets import output_column

    folder.mkdir(parents=True, exist_ok=True)
    explainer = normxlogit.load(MODEL)
    explainer.model.save_pretrained(folder / MODEL)
    method = normxlogit.get_method("gradient_x_input", reduce="sum")
    items = []
    for text, explanation in zip(TEXTS, explainer.explain(TEXTS, method), strict=True):
        items.append(
            {
                "text": text,
                "input_ids": explainer.encode([text]).input_ids[0].tolist(),
                "target": output_column(explainer, explanation.targets[0]),
                "scores": explanation.scores_3d()[-1, :, 0].tolist(),
            }
        )
    (folder / "inputs.json").write_text(json.dumps(items, indent=1))
    print(f"{MODEL}: saved to {folder}")


# ------------------------------------------------------------------------- reference
def gradient_x_input(model, inputs, targets, **kwargs):
    """Quantus's ``explain_func``: gradient x word embedding summed over the hidden
    dimension, for the target's logit, at every token."""
    import torch

    ids = torch.as_tensor(inputs, dtype=torch.long)
    embeds = model.get_input_embeddings()(ids).detach().requires_grad_(True)
    logits = model(inputs_embeds=embeds, attention_mask=torch.ones_like(ids)).logits
    rows = torch.arange(len(ids))
    logits[rows, torch.as_tensor(targets, dtype=torch.long)].sum().backward()
    return (embeds * embeds.grad).sum(-1).detach().numpy()


def reference(folder: Path) -> None:
    """In Quantus's environment: MPRT's per-layer similarities for every text."""
    from importlib.metadata import version

    import numpy as np
    import quantus
    import torch
    from transformers import AutoModelForSequenceClassification

    items = json.loads((folder / "inputs.json").read_text())
    model = AutoModelForSequenceClassification.from_pretrained(
        folder / MODEL, dtype=torch.float32
    ).eval()
    for item in items:  # the same model and explanation as the project's
        found = gradient_x_input(model, np.array([item["input_ids"]]), [item["target"]])
        np.testing.assert_allclose(found[0], item["scores"], rtol=1e-4, atol=1e-6)
    runs = []
    for order, texts in ORDERS.items():
        for item in (i for i in items if i["text"] in texts):
            metric = quantus.MPRT(layer_order=order, seed=SEED, disable_warnings=True)
            scores = metric(
                model=model,
                x_batch=np.array([item["input_ids"]]),
                y_batch=np.array([item["target"]]),
                channel_first=True,
                explain_func=gradient_x_input,
                batch_size=1,
            )
            runs.append(
                {
                    "text": item["text"],
                    "layer_order": order,
                    "layers": [name for name in scores if name != "original"],
                    "original": float(scores["original"][0]),
                    "similarities": [float(v[0]) for k, v in scores.items() if k != "original"],
                }
            )
            print(f"{order}: {item['text']!r}, {len(runs[-1]['layers'])} layers")
    header = {
        "made_by": "scripts/quantus_reference.py (prepare, then reference)",
        "call": (
            f"quantus.MPRT(layer_order=<order>, seed={SEED}, disable_warnings=True)(model, "
            "x_batch=ids[1, T], y_batch=[target], channel_first=True, "
            "explain_func=gradient_x_input, batch_size=1); other settings Quantus's defaults "
            "(abs=True, normalise=True with normalise_by_max, correlation_spearman)"
        ),
        "explain_func": "(word embeddings * grad of the target's logit).sum(-1), every token",
        "versions": {
            name: version(name) for name in ("quantus", "torch", "transformers", "numpy", "scipy")
        },
        "python": sys.version.split()[0],
    }
    data = {
        **header,
        "model": MODEL,
        "seed": SEED,
        "items": [{k: i[k] for k in ("text", "input_ids", "target")} for i in items],
        "runs": runs,
    }
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=("prepare", "reference"))
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    (prepare if args.stage == "prepare" else reference)(args.folder)


if __name__ == "__main__":
    main()
