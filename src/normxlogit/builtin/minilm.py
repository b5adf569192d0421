"""MiniLM built-ins: all-MiniLM-L6-v2 plus a LoRA adapter and head trained by this project."""

from __future__ import annotations

import json

from ..errors import UnknownModelError
from .quiet import quiet_transformers
from .sources import WEIGHTS_DIR, minilm_dir


def load_minilm(name: str, train_command: str):
    """Base encoder + the shipped adapter of ``name``, merged into plain BERT weights."""
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = WEIGHTS_DIR / name
    manifest_path = folder / "normxlogit.json"
    if not manifest_path.is_file():
        raise UnknownModelError(
            f"the adapter of {name!r} is missing from {folder}; rebuild it with "
            f"`normxlogit train {train_command}`"
        )
    manifest = json.loads(manifest_path.read_text())
    labels = manifest["labels"]
    with quiet_transformers():
        model = AutoModelForSequenceClassification.from_pretrained(
            minilm_dir(),
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={label: i for i, label in enumerate(labels)},
            problem_type="regression" if manifest["task"] == "regression" else None,
        )
        model = PeftModel.from_pretrained(model, folder).merge_and_unload()
        tokenizer = AutoTokenizer.from_pretrained(minilm_dir())
    model.name_or_path = name
    return model, tokenizer
