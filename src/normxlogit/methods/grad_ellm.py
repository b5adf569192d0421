"""Grad-ELLM (pi-Soft paper, section 3.3 and appendix B) for decoder-only LLMs.

For each of the last ``aggregate_layers`` decoder layers ``k``:

- channel weights ``w_c``: the gradient of the target logit (or, with
  ``attributed_fn="probability"``, its probability) with respect to the attention output
  ``o_t`` at the reading (last) position;
- token weights ``lambda_i``: the min-max normalised query-key similarities ``q_t . k_i``
  of the reading position (or, with ``token_weights="softmax"``, its attention weights);
- features: the value vectors ``v_i``;

``H_i = ReLU(sum_c w_c lambda_i v_ic)`` (summed over heads), added over the layers and
min-max normalised. The query, key and value tensors are caught where transformers hands
them to its attention function: a capturing function is registered with transformers'
``AttentionInterface``, so every model that uses that interface is covered without
per-architecture code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor

from ..common.errors import InvalidInputError, UnsupportedModelError
from ..model.routing import recorded_attention
from .base import AttributionMethod, check_choice, register_method
from .gradient import attributed_outputs, check_attributed_fn


def _min_max(values: Tensor, valid: Tensor) -> Tensor:
    """Min-max normalise over the last axis where ``valid``; invalid entries become 0."""
    low = values.masked_fill(~valid, float("inf")).amin(-1, keepdim=True)
    high = values.masked_fill(~valid, float("-inf")).amax(-1, keepdim=True)
    scaled = (values - low) / (high - low).clamp_min(1e-12)
    return scaled.masked_fill(~valid, 0.0)


@register_method
@dataclass
class GradELLM(AttributionMethod):
    """Gradient channel weights x query-key token weights x values, for decoders."""

    name: ClassVar[str] = "grad_ellm"
    description: ClassVar[str] = "Grad-ELLM: gradient x normalised q.k x values (decoders)"
    signed: ClassVar[bool] = False
    needs_gradients: ClassVar[bool] = True
    single_forward: ClassVar[bool] = False

    #: how many of the last layers to add up: a number (1, 4, 8, 16...) or "all"
    aggregate_layers: int | str = 8
    #: "minmax" (loosened q.k similarities, the paper's choice) or "softmax" (attention)
    token_weights: str = "minmax"
    #: what the channel weights differentiate: the target's "logit" or its "probability"
    attributed_fn: str = "logit"

    def _layer_count(self, total: int) -> int:
        if self.aggregate_layers == "all":
            return total
        if isinstance(self.aggregate_layers, int) and self.aggregate_layers >= 1:
            return min(self.aggregate_layers, total)
        raise InvalidInputError(
            f"aggregate_layers={self.aggregate_layers!r}: give a positive number or 'all'"
        )

    def attribute(self, model, forward, targets, layers):
        check_choice("token_weights", self.token_weights, ("minmax", "softmax"))
        check_attributed_fn(model, self.attributed_fn)
        if not model.family.is_decoder:
            raise UnsupportedModelError("grad_ellm explains decoder-only models")
        batch = forward.batch
        rows = torch.arange(len(batch), device=batch.input_ids.device)
        reading = batch.reading_positions
        inputs = model.backbone_inputs(batch)
        # the gradients flow from the word embeddings, so they exist whether or not the
        # weights require gradients (a built-in adapter's are frozen), and the weights
        # never collect any
        embeds = model.model.get_input_embeddings()(inputs.pop("input_ids")).detach()
        with recorded_attention(model, "grad_ellm") as calls:
            states = model.run_backbone(
                inputs_embeds=embeds.requires_grad_(True), **inputs
            ).last_hidden_state
            logits = attributed_outputs(model, states[rows, reading], self.attributed_fn)
        chosen = calls[-self._layer_count(len(calls)) :]
        outputs = [call["output"] for call in chosen]  # [B, H, T, d] each
        positions = torch.arange(batch.input_ids.shape[1], device=rows.device)
        valid = batch.attention_mask.bool() & (positions <= reading.unsqueeze(-1))  # [B, T]
        scores = []
        for k in range(targets.columns.shape[1]):
            target = targets.pick(logits, k).sum()
            gradients = torch.autograd.grad(target, outputs, retain_graph=True)
            total = torch.zeros_like(valid, dtype=states.dtype)
            for call, gradient in zip(chosen, gradients, strict=True):
                weight = gradient[rows, :, reading]  # w_c at the reading position, [B, H, d]
                total = total + F.relu(self._layer_map(call, weight, rows, reading, valid))
            scores.append(_min_max(total, valid))
        return torch.stack(scores, dim=-1).unsqueeze(1).detach()  # [B, 1, T, K]

    def _layer_map(self, call, weight: Tensor, rows, reading, valid) -> Tensor:
        """``sum_c w_c lambda_i v_ic`` ``[B, T]`` for one layer (heads summed)."""
        if self.token_weights == "softmax":
            lam = call["weights"][rows, :, reading]  # [B, H, T]
        else:
            query = call["query"][rows, :, reading]  # [B, H, d]
            similarity = torch.einsum("bhd,bhid->bhi", query, call["key"])
            lam = _min_max(similarity, valid.unsqueeze(1))
        return torch.einsum("bhd,bhi,bhid->bi", weight, lam, call["value"])
