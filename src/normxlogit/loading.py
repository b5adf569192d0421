"""``load``: a built-in name, a local folder, a hub id, or a ``(model, tokenizer)`` pair."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .adapter import ExplainableModel
from .builtin import BUILTIN_MODELS, builtin_model
from .builtin.quiet import quiet_transformers
from .errors import UnknownModelError, UnsupportedModelError
from .tasks import ChatPrompt

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
    **from_pretrained: Any,
) -> ExplainableModel:
    """Load a model to explain.

    Args:
        model: a built-in name (see :func:`list_models`), a local folder or hub id
            (loaded with ``from_pretrained``), or an already loaded ``(model, tokenizer)``.
        head: which head to load from a folder or hub id when its config does not say:
            ``classification``, ``regression``, ``masked_lm`` or ``causal_lm``.
        label_words / prompt: make a causal LM a prompted classifier.
        verify: check that the head reproduces the model's logits (recommended).
        device: move the model there (``"cuda"``, ``"cpu"``...); default: where it is.
        **from_pretrained: passed on to ``from_pretrained`` (``revision``, ``dtype``...).
    """
    options: dict[str, Any] = {"verify": verify, "max_length": max_length, "device": device}
    if label_words is not None:
        options["label_words"] = label_words
    if prompt is not None:
        options["prompt"] = prompt
    if isinstance(model, tuple):
        if len(model) != 2:
            raise UnknownModelError("pass a loaded model as a (model, tokenizer) pair")
        return ExplainableModel(model[0], model[1], **options)
    name = str(model)
    if name in BUILTIN_MODELS:
        entry = builtin_model(name)
        loaded, tokenizer = entry.loader()
        return ExplainableModel(loaded, tokenizer, name=name, **{**entry.options, **options})
    loaded, tokenizer = _from_pretrained(name, head, from_pretrained)
    return ExplainableModel(loaded, tokenizer, name=name, **options)


def _from_pretrained(name: str, head: str | None, kwargs: dict[str, Any]):
    import transformers

    if head is not None and head not in HEADS:
        raise UnknownModelError(f"head={head!r} is not one of: {', '.join(HEADS)}")
    known = ", ".join(BUILTIN_MODELS)
    if "/" not in name and not Path(name).exists():
        raise UnknownModelError(
            f"unknown model {name!r}; built-in models: {known}. For a local model pass its "
            "folder; for a hub model its full id (owner/name)"
        )
    try:
        with quiet_transformers():
            config = transformers.AutoConfig.from_pretrained(name, **kwargs)
    except (OSError, ValueError) as error:
        where = "folder" if Path(name).exists() else "name"
        reason = str(error).splitlines()[0]
        raise UnknownModelError(
            f"{name!r} is not a built-in model ({known}) and the {where} could not be "
            f"loaded as a transformers model: {reason}"
        ) from None
    if head is not None:
        auto = getattr(transformers, HEADS[head])
    else:
        architectures = getattr(config, "architectures", None) or []
        auto = getattr(transformers, architectures[0], None) if architectures else None
        if auto is None:
            raise UnsupportedModelError(
                f"{name!r} does not say which head it has; pass head= one of: {', '.join(HEADS)}"
            )
    with quiet_transformers():
        model = auto.from_pretrained(name, **kwargs)
        tokenizer = transformers.AutoTokenizer.from_pretrained(name)
    return model, tokenizer
