"""Where a model's attention weights come from, one block at a time.

transformers 5 declares, per architecture, which module's output holds the attention
weights (``_can_record_outputs["attentions"]``: a class, the output's index and, where one
class serves several roles, a name). Catching them there, as each block runs, lets a
method reduce one layer's ``[B, H, T, T]`` before the next is computed instead of holding
every layer's, which is what ``output_attentions=True`` returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn
from transformers import PreTrainedModel


@dataclass(frozen=True)
class AttentionSlot:
    """A module whose forward output holds one block's attention weights at ``index``."""

    module: nn.Module
    index: int


def attention_slots(model: PreTrainedModel, num_layers: int) -> list[AttentionSlot] | None:
    """The self-attention modules of ``model``'s blocks in order, or ``None`` where the
    architecture does not declare them (or not one per block): callers then fall back to
    ``output_attentions``."""
    recorders = getattr(model, "_can_record_outputs", None) or {}
    spec = recorders.get("attentions")
    if spec is None or isinstance(spec, (list, tuple)):
        return None
    target = getattr(spec, "target_class", spec)
    index = getattr(spec, "index", 1)
    layer_name = getattr(spec, "layer_name", None)
    if not isinstance(target, type):
        return None
    wanted = None if layer_name is None else "." + layer_name.strip(".") + "."
    slots = [
        AttentionSlot(module, index)
        for name, module in model.named_modules()
        if isinstance(module, target) and (wanted is None or wanted in f".{name}.")
    ]
    return slots if len(slots) == num_layers else None
