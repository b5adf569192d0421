"""Reference outputs of lxt 2.1's efficient AttnLRP, for ``tests/methods/test_attnlrp.py``.

lxt (the AttnLRP authors' implementation, PyPI ``lxt``) patches transformers 4.x modules,
so it runs in an environment of its own; this script has two stages.

1. ``prepare``, in the project's environment: saves each model's weights (the built-ins
   ``minilm-sst2`` and ``smollm2-sst2-prompted``, and the tiny random models of the test)
   to a folder outside the repository, with the token ids the project feeds it for each
   text, the targets' output columns and the project's logits (the reference stage checks
   it runs the same model)::

       .venv/bin/python scripts/lxt_reference.py prepare /tmp/attnlrp-models

2. ``reference``, in lxt's environment: patches transformers with
   ``lxt.efficient.monkey_patch`` (lxt's default AttnLRP map of the architecture's
   module), loads each folder in float32 with eager attention, and for each text and
   target runs lxt's documented usage: the model from ``inputs_embeds`` (the word
   embeddings of the ids, requiring gradients), backward from the target's logit at the
   reading position, relevance ``(inputs_embeds * inputs_embeds.grad).sum(-1)``. Writes
   ``tests/data/attnlrp/<model>.json``::

       /tmp/lxtenv/bin/python scripts/lxt_reference.py reference /tmp/attnlrp-models

The reference environment (``python3.11 -m venv /tmp/lxtenv``, then)::

    /tmp/lxtenv/bin/pip install torch==2.6.0 torchvision==0.21.0 "numpy<2.3"
    /tmp/lxtenv/bin/pip install transformers==4.52.4
    /tmp/lxtenv/bin/pip install --no-deps lxt==2.1 zennit==0.5.1

lxt 2.1, torch 2.6.0 (PyPI's build, run on the CPU), transformers 4.52.4, Python 3.11.7:
the versions lxt's README says it was tested with. lxt's other declared dependencies
(accelerate, bitsandbytes, matplotlib, open_clip_torch, tabulate) serve its examples and
quantised models, not ``lxt.efficient``; torchvision is needed only because
``lxt.efficient`` imports its vision-transformer patches.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "attnlrp"

#: model -> (texts, targets as the project's explain takes them)
CASES = {
    "tiny-bert": (["a gripping film that never lets go", "it is what it is , and fine"], [0, 2]),
    "tiny-llama": (["a gripping film that never lets go", "it is what it is , and fine"], None),
    "minilm-sst2": (
        [
            "A gripping, beautifully acted film that never lets go.",
            "The plot is thin and the jokes fall flat.",
            "Not bad at all, though a little long.",
        ],
        [0, 1],
    ),
    "smollm2-sst2-prompted": (
        [
            "A gripping, beautifully acted film that never lets go.",
            "The plot is thin and the jokes fall flat.",
        ],
        [0, 1],
    ),
}
#: the causal LM's targets when none are given: the predicted token and this one
OTHER_TOKEN = 1000


# --------------------------------------------------------------------------- prepare
def prepare(folder: Path) -> None:
    """In the project's environment: weights, ids, columns and logits of every case."""
    sys.path.insert(0, str(REPO))
    import torch
    from tests.conftest import fresh_tokenizer
    from tests.methods.test_attnlrp import TINY, tiny_network

    import normxlogit
    from normxlogit.model.targets import output_column

    folder.mkdir(parents=True, exist_ok=True)
    cases = []
    for name, (texts, targets) in CASES.items():
        if name in TINY:
            explainer = normxlogit.load((tiny_network(name), fresh_tokenizer()))
        else:
            explainer = normxlogit.load(name)
        weights = folder / name
        explainer.model.save_pretrained(weights)
        explainer.tokenizer.save_pretrained(weights)
        _readable_by_transformers_4(weights / "config.json")
        items = []
        for text in texts:
            batch = explainer.encode([text])
            with torch.no_grad():
                forward = explainer.forward(batch)
            wanted = targets or [int(forward.logits[0].argmax()), OTHER_TOKEN]
            columns = [output_column(explainer, t) for t in wanted]
            full = explainer.full_output_columns(torch.tensor([columns]))[0].tolist()
            items.append(
                {
                    "text": text,
                    "input_ids": batch.input_ids[0].tolist(),
                    "token_type_ids": None
                    if batch.token_type_ids is None
                    else batch.token_type_ids[0].tolist(),
                    "reading_position": int(batch.reading_positions[0]),
                    "targets": [
                        {"target": t, "column": c, "logit": float(forward.logits[0, label])}
                        for t, c, label in zip(wanted, full, columns, strict=True)
                    ],
                }
            )
        cases.append(
            {
                "model": name,
                "class": type(explainer.model).__name__,
                "over_vocabulary": explainer.task.over_vocabulary,
                "items": items,
            }
        )
        print(f"{name}: saved to {weights}")
    (folder / "inputs.json").write_text(json.dumps(cases, indent=1))


def _readable_by_transformers_4(config: Path) -> None:
    """transformers 5 writes RoPE's base inside ``rope_parameters``; transformers 4.52
    reads ``rope_theta`` (else takes 10000): copy it out."""
    values = json.loads(config.read_text())
    rope = values.get("rope_parameters") or {}
    if "rope_theta" in rope and "rope_theta" not in values:
        values["rope_theta"] = rope["rope_theta"]
        config.write_text(json.dumps(values, indent=2))


# ------------------------------------------------------------------------- reference
def reference(folder: Path) -> None:
    """In lxt's environment: lxt's relevance for every text and target."""
    from importlib.metadata import version

    import torch
    import transformers
    from lxt.efficient import monkey_patch
    from transformers.models.bert import modeling_bert
    from transformers.models.llama import modeling_llama

    torch.set_num_threads(2)
    # lxt's default AttnLRP maps: BERT's module is replaced by lxt's copy of it; LLaMA's
    # MLP, RMSNorm and attention functions are patched in place. Both maps patch
    # nn.Dropout, so the second warns that it already is (eval mode runs none anyway)
    monkey_patch(modeling_bert)
    monkey_patch(modeling_llama)
    assert modeling_bert.BertForSequenceClassification.__module__ == "lxt.efficient.models.bert"
    assert modeling_llama.LlamaMLP.forward.__module__ == "lxt.efficient.patches"
    versions = {
        "lxt": version("lxt"),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    DATA.mkdir(parents=True, exist_ok=True)
    for case in json.loads((folder / "inputs.json").read_text()):
        module = modeling_bert if case["class"].startswith("Bert") else modeling_llama
        network, info = getattr(module, case["class"]).from_pretrained(
            folder / case["model"],
            torch_dtype=torch.float32,
            attn_implementation="eager",
            output_loading_info=True,
        )
        if info["missing_keys"] or info["mismatched_keys"]:
            raise SystemExit(f"{case['model']}: weights not loaded as saved: {info}")
        network.eval()
        for item in case["items"]:
            for entry in item["targets"]:
                logit, relevance = _lxt_relevance(network, case, item, entry["column"])
                if abs(logit - entry["logit"]) > 1e-4 * max(1.0, abs(entry["logit"])):
                    raise SystemExit(
                        f"{case['model']}: lxt's model computes {logit} where the project's "
                        f"computes {entry['logit']}: not the same model"
                    )
                entry["logit"] = logit
                entry["relevance"] = [float(f"{v:.9g}") for v in relevance]
            item.pop("token_type_ids")
        out = {
            "model": case["model"],
            "made_by": "scripts/lxt_reference.py (lxt.efficient.monkey_patch, eager attention)",
            **versions,
            "items": case["items"],
        }
        (DATA / f"{case['model']}.json").write_text(json.dumps(out, indent=1) + "\n")
        print(f"{case['model']}: {DATA / (case['model'] + '.json')}")


def _lxt_relevance(network, case: dict, item: dict, column: int) -> tuple[float, list[float]]:
    """lxt's README usage: forward from inputs_embeds, backward from the target logit."""
    import torch

    ids = torch.tensor([item["input_ids"]])
    inputs = {"attention_mask": torch.ones_like(ids)}
    if item["token_type_ids"] is not None:
        inputs["token_type_ids"] = torch.tensor([item["token_type_ids"]])
    embeds = network.get_input_embeddings()(ids).detach().requires_grad_(True)
    logits = network(inputs_embeds=embeds, **inputs).logits
    if case["over_vocabulary"]:
        logit = logits[0, item["reading_position"], column]
    else:
        logit = logits[0, column]
    logit.backward()
    relevance = (embeds * embeds.grad).sum(-1)[0]
    return float(logit), relevance.tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("stage", choices=("prepare", "reference"))
    parser.add_argument("folder", type=Path, help="where the weights and inputs go")
    args = parser.parse_args()
    (prepare if args.stage == "prepare" else reference)(args.folder)


if __name__ == "__main__":
    main()
