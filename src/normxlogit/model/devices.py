"""Torch devices named by users, checked before any work: ``cuda`` on a machine without
one would otherwise fail inside torch, after the weights were read."""

from __future__ import annotations

from typing import Any

from ..common.errors import InvalidInputError


def check_device(device: Any, shown: str) -> None:
    """``device`` names a torch device this machine has; ``shown`` is how the user wrote
    it (``--device gpu``, ``device='gpu'``), named in the refusal."""
    import torch

    try:
        chosen = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise InvalidInputError(
            f"{shown} is no torch device; use cpu, cuda, cuda:N or mps"
        ) from None
    if chosen.type == "meta":
        raise InvalidInputError(
            f"{shown}: the meta device holds shapes, not weights, so no model runs there; use "
            "cpu, cuda, cuda:N or mps"
        )
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise InvalidInputError(f"{shown}: this machine has no CUDA GPU; leave it out")
    if chosen.type == "cuda" and (chosen.index or 0) >= torch.cuda.device_count():
        raise InvalidInputError(
            f"{shown}: this machine has {torch.cuda.device_count()} CUDA GPU(s)"
        )
    if chosen.type == "mps" and not torch.backends.mps.is_available():
        raise InvalidInputError(f"{shown}: this machine has no MPS device")
    if chosen.type not in ("cpu", "cuda", "mps") and not _usable(chosen.type):
        raise InvalidInputError(
            f"{shown}: this machine has no usable {chosen.type} device; use one it has "
            f"({', '.join(available_devices())}) or leave it out"
        )


def _usable(kind: str) -> bool:
    """Whether torch can run on a device type other than cpu/cuda/mps (xpu, hpu...) here:
    where it cannot, torch fails with its own assertion or import error."""
    import torch

    try:
        return bool(getattr(torch, kind).is_available())
    except Exception:  # no such backend module, or one that cannot say
        return False


def available_devices() -> list[str]:
    """The device types this machine can run a model on (cpu always)."""
    import torch

    names = ["cpu"]
    if torch.cuda.is_available():
        names.append("cuda")
    if torch.backends.mps.is_available():
        names.append("mps")
    return names
