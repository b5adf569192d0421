"""``load``: a built-in name, a local folder, a hub id, or a ``(model, tokenizer)`` pair."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from .builtin import BUILTIN_MODELS, builtin_model
from .builtin.adapters import adapter_options, is_adapter_folder, load_adapter_folder
from .builtin.damaged import TOKENIZER_JSON, damaged_json, damaged_message, damaged_weights
from .builtin.quiet import quiet_transformers
from .common.errors import (
    InvalidOptionError,
    NormXLogitWarning,
    UnknownModelError,
    UnsupportedModelError,
)
from .common.input_paths import blank_edge_hint
from .common.outputs import type_phrase
from .model.adapter import ExplainableModel
from .model.devices import check_device
from .model.inputs import checked_max_length
from .model.precision import resolve_dtype
from .model.tasks import ChatPrompt, check_prompt

#: ``head=`` values and the transformers auto class each one loads.
HEADS = {
    "classification": "AutoModelForSequenceClassification",
    "regression": "AutoModelForSequenceClassification",
    "masked_lm": "AutoModelForMaskedLM",
    "causal_lm": "AutoModelForCausalLM",
}


def load(
    model: str | Path | tuple[Any, Any],
    *,
    head: str | None = None,
    label_words: dict[str, str] | Sequence[str] | None = None,
    prompt: ChatPrompt | None = None,
    verify: bool = True,
    max_length: int | None = None,
    device: str | None = None,
    dtype: str | torch.dtype | None = None,
    **from_pretrained: Any,
) -> ExplainableModel:
    """Load a model to explain.

    Args:
        model: a built-in name (see :func:`list_models`), a local folder or hub id
            (loaded with ``from_pretrained``), or an already loaded ``(model, tokenizer)``.
        head: which head to load from a folder or hub id when its config does not say:
            ``classification``, ``regression``, ``masked_lm`` or ``causal_lm``.
        label_words: with ``prompt``, make a causal LM a prompted classifier: its label
            words (``{label: word}`` or a list of words).
        prompt: a chat prompt wrapped around every text.
        verify: check that the head reproduces the model's logits (recommended).
        device: move the model there (``"cuda"``, ``"cpu"``...); default: where it is.
        dtype: the precision to compute in: ``float32``, ``float64``, ``bfloat16`` or ``float16``
            (default: as loaded; the built-ins load in float32). A folder or hub id is
            loaded in it directly; anything else is cast after loading.
        **from_pretrained: passed on to ``from_pretrained`` (``revision``...).
    """
    checked_max_length(max_length)  # its kind, before the weights are read (the limit: after)
    check_prompt(prompt)  # likewise
    if dtype is not None:
        dtype = resolve_dtype(dtype)
    if device is not None:  # before the weights are read
        check_device(device, f"device={str(device)!r}")
    options: dict[str, Any] = {
        "verify": verify,
        "max_length": max_length,
        "device": device,
        "dtype": dtype,
    }
    if label_words is not None:
        options["label_words"] = label_words
    if prompt is not None:
        options["prompt"] = prompt
    if isinstance(model, tuple):
        if len(model) != 2:
            raise UnknownModelError("pass a loaded model as a (model, tokenizer) pair")
        _refuse_loading_options("an already loaded (model, tokenizer) pair", head, from_pretrained)
        _check_pair(*model)
        return ExplainableModel(model[0], model[1], **options)
    if not isinstance(model, (str, os.PathLike)):
        raise UnknownModelError(
            "load takes a built-in name, a folder, a hub id (owner/name) or a (model, "
            f"tokenizer) pair; got {type_phrase(model)}"
        )
    name = _folder_name(str(model))
    if not name.strip():  # "" is the current folder to Path, no model anyone names
        raise UnknownModelError(
            f"the model name {name!r} is empty; give a built-in name "
            f"({', '.join(sorted(BUILTIN_MODELS)[:3])}, ...), a folder or a hub id (owner/name)"
        )
    if name in BUILTIN_MODELS:
        _refuse_loading_options(f"the built-in {name!r}", head, from_pretrained)
        entry = builtin_model(name)
        loaded, tokenizer = entry.loader()
        return ExplainableModel(loaded, tokenizer, name=name, **{**entry.options, **options})
    if is_adapter_folder(name):  # written by `normxlogit train`
        _refuse_loading_options(f"the adapter folder {name}", head, from_pretrained)
        loaded, tokenizer = load_adapter_folder(name)
        return ExplainableModel(
            loaded, tokenizer, name=name, **{**adapter_options(name), **options}
        )
    if dtype is not None:  # loaded in it, never in float32 first
        from_pretrained = {**from_pretrained, "dtype": dtype}
    loaded, tokenizer = _from_pretrained(name, head, from_pretrained)
    return ExplainableModel(loaded, tokenizer, name=name, **options)


def _folder_name(name: str) -> str:
    """``name`` without the slash a shell's completion leaves after a folder (``tinybert/``
    names the same model as ``tinybert``, and a record or a bench key should say so)."""
    stripped = name.rstrip("/" + os.sep)
    if stripped and stripped != name and os.path.isdir(name):
        return stripped
    return name


def _refuse_loading_options(what: str, head: str | None, from_pretrained: dict[str, Any]):
    """``head=`` and ``from_pretrained`` options only steer ``from_pretrained``: given for
    a model that is not loaded that way, they would be silently ignored."""
    given = (["head="] if head is not None else []) + [f"{key}=" for key in from_pretrained]
    if given:
        raise InvalidOptionError(
            f"{', '.join(given)} cannot apply to {what}: its head and weights are fixed; "
            "leave them out (they steer loading a folder or hub id with from_pretrained)"
        )


def load_tokenizer(model: str | Path) -> Any:
    """The tokenizer :func:`load` would give ``model`` (a built-in name, an adapter
    folder, a local folder or a hub id), for work that needs no weights, such as building a
    masked LM's inputs. A built-in is loaded whole (its tokenizer may be adapted to it)."""
    name = str(model)
    if name in BUILTIN_MODELS:
        return builtin_model(name).loader()[1]
    if is_adapter_folder(name):
        return load_adapter_folder(name)[1]
    _refuse_missing_folder(name)
    import transformers

    try:
        with quiet_transformers():
            return transformers.AutoTokenizer.from_pretrained(name)
    except Exception as error:  # a damaged tokenizer file's reader raises anything
        raise UnknownModelError(_tokenizer_problem(name, error)) from None


def _refuse_missing_folder(name: str) -> None:
    """A name written as a local path (``./x``, ``../x``, ``/x``, ``~/x``, ``a/b/c``, or
    ending in ``/``) that does not exist is a missing folder, not a hub id to check."""
    looks_local = (
        name.startswith((".", "/", "~", "\\"))
        or name.endswith(("/", "\\"))
        or name.count("/") > 1
        or Path(name).is_absolute()
    )
    if Path(name).expanduser().is_file():
        raise UnknownModelError(
            f"{name!r} is a file; a local model is the folder holding its config.json and "
            "weights (pass the folder)"
        )
    if looks_local and not Path(name).expanduser().exists():
        raise UnknownModelError(
            f"no folder {name!r}{blank_edge_hint(Path(name).expanduser())}: check the path "
            "(a local model is a folder holding "
            "config.json; a hub model is named owner/name)"
        )


def _from_pretrained(name: str, head: str | None, kwargs: dict[str, Any]):
    import transformers

    if head is not None and head not in HEADS:
        raise UnknownModelError(f"head={head!r} is not one of: {', '.join(HEADS)}")
    known = ", ".join(BUILTIN_MODELS)
    _refuse_missing_folder(name)
    if "/" not in name and not Path(name).exists():
        raise UnknownModelError(
            f"unknown model {name!r}{blank_edge_hint(Path(name))}; built-in models: {known}. "
            "For a local model pass its folder; for a hub model its full id (owner/name)"
        )
    try:
        with quiet_transformers():
            config = transformers.AutoConfig.from_pretrained(name, **kwargs)
    except (OSError, ValueError) as error:
        _refuse_no_config(name)
        where = "folder" if Path(name).exists() else "name"
        reason = str(error).splitlines()[0]
        raise UnknownModelError(
            f"{name!r} is not a built-in model ({known}) and the {where} could not be "
            f"loaded as a transformers model: {reason}"
        ) from None
    _check_folder(name)
    if head is not None:
        auto = getattr(transformers, HEADS[head])
    else:
        architectures = getattr(config, "architectures", None) or []
        auto = getattr(transformers, architectures[0], None) if architectures else None
        if auto is None:
            raise UnsupportedModelError(
                f"{name!r} does not say which head it has; pass head= one of: {', '.join(HEADS)}"
            )
    try:
        with quiet_transformers():
            model, info = auto.from_pretrained(name, output_loading_info=True, **kwargs)
    except Exception as error:  # a damaged weights file's reader raises anything
        damaged = damaged_weights(name)
        if damaged is not None:
            fix = "download or save it again (model.save_pretrained(folder))"
            raise UnknownModelError(damaged_message(f"model {name!r}", *damaged, fix)) from None
        extra = set(kwargs) - {"dtype"}
        if isinstance(error, KeyError) or (_mismatched_sizes(error) and not extra):
            raise UnknownModelError(_config_misfit(auto, name, kwargs, error)) from None
        if isinstance(error, TypeError | RuntimeError | ImportError) and set(kwargs) - {"dtype"}:
            # a keyword it lacks, or one it cannot honour (num_labels against the
            # checkpoint's head, an attention kernel that is not installed)
            raise InvalidOptionError(_unknown_keywords(auto.__name__, kwargs, error)) from None
        if not isinstance(error, (OSError, ValueError)):
            raise
        raise UnknownModelError(_weights_problem(name, error)) from None
    _check_missing_weights(model, name, head, info.get("missing_keys", ()))
    _warn_unused_blocks(model, name, info.get("unexpected_keys", ()))
    try:
        with quiet_transformers():
            tokenizer = transformers.AutoTokenizer.from_pretrained(name)
    except Exception as error:  # a damaged tokenizer file's reader raises anything
        raise UnknownModelError(_tokenizer_problem(name, error)) from None
    if len(tokenizer) <= len(set(tokenizer.all_special_tokens)):
        raise UnknownModelError(_no_tokenizer(name, "its tokenizer has only special tokens"))
    return model, tokenizer


#: the end of every refusal of a config.json that does not fit its weights
CONFIG_MISFIT_FIX = "the config.json does not fit the weights: restore it or save the model again"


def _mismatched_sizes(error: Exception) -> bool:
    """Whether ``error`` is transformers' refusal of weights of another shape than the
    config.json asks for (it points at a report that a quiet load hides)."""
    return isinstance(error, RuntimeError) and "ignore_mismatched_sizes" in str(error)


def _shown_keys(keys: Sequence[str]) -> str:
    """The first few parameter names of ``keys``, and how many more there are."""
    ordered = sorted(keys)
    more = f" and {len(ordered) - 3} more" if len(ordered) > 3 else ""
    return ", ".join(ordered[:3]) + more


def _config_misfit(auto: Any, name: str, kwargs: dict[str, Any], error: Exception) -> str:
    """One line naming what in ``name``'s config.json does not fit its weights: an
    unknown value (a misspelt hidden_act) or the parameters whose shapes differ (found by
    loading again, letting them differ, which the failed load's hidden report named)."""
    if isinstance(error, KeyError):
        return (
            f"model {name!r}: its config.json names {error}, a value transformers does not "
            f"know (a misspelt setting such as hidden_act?); {CONFIG_MISFIT_FIX}"
        )
    try:
        with quiet_transformers():
            _, info = auto.from_pretrained(
                name, output_loading_info=True, ignore_mismatched_sizes=True, **kwargs
            )
        mismatched = info.get("mismatched_keys", [])
    except Exception:  # the second load is only for the message
        mismatched = []
    shapes = {key: (tuple(ours), tuple(theirs)) for key, ours, theirs in mismatched}
    listed = "; ".join(
        f"{key}: weights {list(shapes[key][0])}, config.json {list(shapes[key][1])}"
        for key in sorted(shapes)[:3]
    )
    more = f" and {len(shapes) - 3} more" if len(shapes) > 3 else ""
    what = f" ({listed}{more})" if shapes else ""
    lead = f"model {name!r}: parameters have other shapes than its config.json says"
    return f"{lead}{what}; {CONFIG_MISFIT_FIX}"


def _check_missing_weights(model: Any, name: str, head: str | None, missing: Any) -> None:
    """Refuse weights the folder lacks (transformers fills them at random, so each load
    predicts differently), except a head the user asked to add with ``head=``: then warn
    that it is untrained."""
    if not missing:
        return
    prefix = f"{getattr(model, 'base_model_prefix', '')}."
    body = [key for key in missing if prefix == "." or key.startswith(prefix)]
    if head is None or body:
        raise UnknownModelError(
            f"model {name!r}: the folder has no weights for {_shown_keys(body or missing)} "
            f"(they would be random); {CONFIG_MISFIT_FIX}"
        )
    warnings.warn(
        f"model {name!r} has no weights for the head head={head!r} adds "
        f"({_shown_keys(missing)}): it is untrained (random), and its scores mean nothing "
        "until it is trained",
        NormXLogitWarning,
        stacklevel=4,
    )


#: a parameter of a numbered transformer block (``encoder.layer.5.``, ``model.layers.11.``)
_BLOCK_KEY = re.compile(r"\.(?:layer|layers|h|block|blocks)\.(\d+)\.")


def _warn_unused_blocks(model: Any, name: str, unexpected: Any) -> None:
    """Warn where the weights hold blocks past the config.json's layer count: the model
    loaded is shallower than the one saved (transformers drops the rest without a word).
    Warned, not refused: cutting a model's depth this way may be meant."""
    numbers = {int(found[1]) for key in unexpected if (found := _BLOCK_KEY.search(f".{key}"))}
    config = getattr(model, "config", None)
    layers = getattr(
        getattr(config, "get_text_config", lambda: config)(), "num_hidden_layers", None
    )
    if not isinstance(layers, int) or not numbers or max(numbers) < layers:
        return
    warnings.warn(
        f"model {name!r}: its weights hold {max(numbers) + 1} blocks but its config.json "
        f"says num_hidden_layers={layers}, so only the first {layers} are loaded; if that "
        f"is not meant, {CONFIG_MISFIT_FIX}",
        NormXLogitWarning,
        stacklevel=4,
    )


def _refuse_no_config(name: str) -> None:
    """A folder without config.json (a tokenizer alone, an empty folder, the folder above a
    checkpoint) is no model: say so, and name the folders below it that hold one."""
    folder = Path(name).expanduser()
    if not folder.is_dir() or (folder / "config.json").is_file():
        return
    below = sorted(
        {
            str(found.parent)
            for pattern in ("*/config.json", "*/*/config.json")
            for found in folder.glob(pattern)
        }
    )
    lead = f"folder {name!r} has no config.json, so it holds no model"
    if not below:
        raise UnknownModelError(
            f"{lead}; a local model is the folder holding config.json and its weights (pass "
            "that folder)"
        )
    shown = ", ".join(below[:3]) + (f" and {len(below) - 3} more" if len(below) > 3 else "")
    raise UnknownModelError(f"{lead}; folders below it that hold one: {shown} (pass one)")


#: files weights are saved as, and files a tokenizer is saved as (transformers,
#: SentencePiece, BPE, WordPiece, tiktoken)
WEIGHT_FILES = ("*.safetensors", "*.safetensors.index.json", "pytorch_model*.bin*", "*.h5")
TOKENIZER_FILES = ("tokenizer*", "vocab*", "merges.txt", "*.model", "spiece*", "*.tiktoken")


def _has(folder: Path, patterns: tuple[str, ...]) -> bool:
    return any(any(folder.glob(pattern)) for pattern in patterns)


def _check_folder(name: str) -> None:
    """A local folder must hold weights and a tokenizer; say which is missing before loading
    (transformers would build an empty tokenizer that reads every word as unknown)."""
    folder = Path(name)
    if not folder.is_dir():
        return
    if not _has(folder, WEIGHT_FILES):
        raise UnknownModelError(_weights_problem(name, None))
    if not _has(folder, TOKENIZER_FILES):
        raise UnknownModelError(_no_tokenizer(name, "no tokenizer files in the folder"))


def _tokenizer_problem(name: str, error: Exception) -> str:
    """Why the tokenizer of ``name`` did not load: a damaged file of the folder named (a
    cut tokenizer.json reads as "no tokenizer" otherwise), else that none loads. An error
    that is neither (a bug, not the files) is raised as it is."""
    damaged = damaged_json(name, TOKENIZER_JSON) if Path(name).is_dir() else None
    if damaged is not None:
        fix = "download or save it again (tokenizer.save_pretrained(folder))"
        return damaged_message(f"model {name!r}", *damaged, fix, kind="tokenizer file")
    if not isinstance(error, (OSError, ValueError, TypeError)):
        raise error
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return _no_tokenizer(name, f"none loads: {reason}")


def _no_tokenizer(name: str, why: str) -> str:
    return (
        f"{name!r} has a model but no tokenizer ({why}); save it there with "
        "tokenizer.save_pretrained(folder), or pass normxlogit.load((model, tokenizer))"
    )


def _unknown_keywords(auto: str, kwargs: dict[str, Any], error: Exception) -> str:
    """A keyword of ``load`` that is none of its own went on to ``from_pretrained``, which
    refused it: name the keywords and where they went."""
    given = ", ".join(f"{key}=" for key in kwargs if key != "dtype")
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    if "ignore_mismatched_sizes" in reason:  # it points at a report a quiet load hides
        reason = "the checkpoint's head has another size than these keywords ask for"
    fix = (
        "load's own keywords are head=, label_words=, prompt=, verify=, max_length=, device= "
        "and dtype= (batch sizes and the like belong to explain and evaluate)"
        if isinstance(error, TypeError)
        else "leave it out, or give a value this checkpoint and machine can take"
    )
    return f"load passes {given} on to {auto}.from_pretrained, which refused it ({reason}); {fix}"


def _weights_problem(name: str, error: Exception | None) -> str:
    """Why the weights did not load, and what to do about it."""
    if error is None or (Path(name).is_dir() and not _has(Path(name), WEIGHT_FILES)):
        return (
            f"{name!r} has a config.json but no weights (no model.safetensors or "
            "pytorch_model.bin in the folder); save the model there with "
            "model.save_pretrained(folder), or copy its weight files next to config.json"
        )
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"the weights of {name!r} could not be loaded: {reason}"


def _check_pair(model: Any, tokenizer: Any) -> None:
    """Refuse a ``(model, tokenizer)`` pair that is not a transformers model and tokenizer."""
    import torch

    needs = (
        "load((model, tokenizer)) needs a transformers model (e.g. "
        "AutoModelForSequenceClassification.from_pretrained(path)) and its tokenizer "
        "(AutoTokenizer.from_pretrained(path))"
    )
    if not isinstance(model, torch.nn.Module) or getattr(model, "config", None) is None:
        hint = ""
        if isinstance(model, (str, Path)):
            hint = "; to load from a folder or hub id, pass it alone: load(path)"
        raise UnknownModelError(f"{needs}; the model is {type_phrase(model)}{hint}")
    if not (callable(tokenizer) and hasattr(tokenizer, "convert_ids_to_tokens")):
        hint = ""
        if isinstance(tokenizer, (str, Path)):
            hint = "; load it first with AutoTokenizer.from_pretrained"
        raise UnknownModelError(f"{needs}; the tokenizer is {type_phrase(tokenizer)}{hint}")
