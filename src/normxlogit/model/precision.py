"""Floating-point precision a model runs in: the names users give and what they mean.

Half precision (bfloat16, float16) halves a model's memory and, on a GPU, multiplies its
speed; it also moves attributions and metrics by rounding. A result therefore records the
precision it was computed in whenever that is not float32 (``settings["dtype"]`` of an
explanation; the model's key in a bench store), so results of two precisions never pass
for one another. Torch is imported only to resolve a name, so configs and the command
line can check a name cheaply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..common.errors import InvalidOptionError

if TYPE_CHECKING:
    import torch

#: the names accepted for ``dtype`` (each is also the name of a torch type)
DTYPE_NAMES = ("float32", "bfloat16", "float16", "float64")
_ALIASES = {
    "fp32": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "half": "float16",
    "fp64": "float64",
    "double": "float64",
}


def dtype_name(value: Any) -> str:
    """The canonical name of a precision given as a name, an alias (``bf16``) or a torch
    type; anything else is refused with the names that are accepted."""
    text = str(value).removeprefix("torch.").lower()
    name = _ALIASES.get(text, text)
    if name not in DTYPE_NAMES:
        raise InvalidOptionError(f"dtype {value!r} is not one of: {', '.join(DTYPE_NAMES)}")
    return name


def resolve_dtype(value: Any) -> torch.dtype:
    """The torch type of a precision (see :func:`dtype_name`)."""
    import torch

    return getattr(torch, dtype_name(value))


def precision_settings(dtype: torch.dtype) -> dict[str, str]:
    """What an explanation records about precision: nothing for float32 (the default),
    else ``{"dtype": name}``."""
    name = dtype_name(dtype)
    return {} if name == "float32" else {"dtype": name}
