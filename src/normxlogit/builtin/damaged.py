"""Weight, tokenizer and adapter files that cannot be read, named in one line instead of
a loader's traceback or a vague "no tokenizer".

transformers and peft let a damaged file's reader raise what it raises (safetensors'
``SafetensorError``, torch's ``UnpicklingError`` or zip error, even a ``KeyError``; a
tokenizer that cannot load is "not found"), so after a failed load the folder's files
are read here one by one and the first that cannot be read is named. Called only on
that failure: a healthy load pays nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from ..common.input_paths import json_problem

#: the files a folder's weights are saved in (transformers' and peft's names)
WEIGHT_FILES = ("*.safetensors", "pytorch_model*.bin", "adapter_model.bin")
#: a saved tokenizer's JSON files (``tokenizer.save_pretrained``)
TOKENIZER_JSON = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
)


def damaged_weights(folder: str | Path) -> tuple[Path, str] | None:
    """The first weight file of ``folder`` that cannot be read, with why; ``None`` when
    every one reads (or ``folder`` is no folder)."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    files = sorted({path for pattern in WEIGHT_FILES for path in folder.glob(pattern)})
    for path in files:
        reason = _unreadable(path)
        if reason is not None:
            return path, reason
    return None


def damaged_json(folder: str | Path, names: Iterable[str]) -> tuple[Path, str] | None:
    """The first of the JSON files ``names`` in ``folder`` that cannot be read, with why;
    ``None`` when every one there reads (a missing one is not looked at)."""
    for name in names:
        path = Path(folder) / name
        if not path.is_file():
            continue
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            return path, "not UTF-8 text"
        except json.JSONDecodeError as error:
            # an unterminated string runs to the end: raw newlines are no string's
            cut = error.pos >= len(error.doc.rstrip()) or error.msg.startswith("Unterminated")
            return path, "cut short: it ends in the middle" if cut else json_problem(error)
        except OSError as error:
            return path, error.strerror or str(error)
    return None


def damaged_message(
    what: str, path: Path, reason: str, fix: str, kind: str = "weights file"
) -> str:
    """One line: ``what`` (e.g. "model 'm'") cannot load, which file (a ``kind``) is
    damaged, ``fix``."""
    return f"{what}: its {kind} {path.name} cannot be read ({reason}); {fix}"


def _unreadable(path: Path) -> str | None:
    """Why ``path`` cannot be read as weights, else ``None``."""
    try:
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), framework="pt") as weights:
                for key in weights.keys():  # noqa: SIM118 (safe_open is no dict)
                    weights.get_slice(key)
        else:
            import torch

            torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a damaged file's reader raises anything
        return _reason(error)
    return None


def _reason(error: Exception) -> str:
    """The first sentence of ``error``, short (torch's run to a paragraph, and its advice
    to load with ``weights_only=False`` is no fix for a damaged file)."""
    import pickle

    if isinstance(error, (pickle.UnpicklingError, KeyError, EOFError, IndexError)):
        return "not a PyTorch checkpoint, or cut short"
    lines = str(error).strip().splitlines()
    first = lines[0].split(". ")[0].rstrip(".") if lines else type(error).__name__
    return first if len(first) <= 100 else first[:97] + "..."
