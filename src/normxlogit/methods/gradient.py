"""Gradient baselines: saliency, gradient x input, integrated gradients, DeepLift.

Attribution is taken at the word-embedding layer: the model is run from
``inputs_embeds`` (the word-embedding rows), so it adds position and segment embeddings
itself and computes exactly the function ``model(input_ids)`` computes (the authors' code
fed the embedding layer's *output* back in, adding positions twice and dropping segment
ids). Captum is the engine; scores are reduced over the hidden dimension (L1 by default).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from ..adapter import ExplainableModel, ForwardResult
from ..errors import InvalidInputError
from ..inputs import Batch
from ..targets import Targets
from .base import Attribution, AttributionMethod, Layers, check_choice, register_method

REDUCTIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "l1": lambda grads: grads.abs().sum(-1),
    "l2": lambda grads: grads.norm(dim=-1),
    "sum": lambda grads: grads.sum(-1),
}


class ReadingOutput(nn.Module):
    """``inputs_embeds`` -> the head's outputs ``[B, C]`` at each row's reading position.

    The rest of the batch (attention mask, reading positions, segment and position ids)
    comes as extra arguments, so Captum repeats it along with the inputs it expands.
    """

    def __init__(self, model: ExplainableModel, extra_names: tuple[str, ...]):
        super().__init__()
        self.explainable = model
        # registered as a submodule so that Captum's DeepLift finds the nonlinearities
        self.transformer = model.model
        self.extra_names = extra_names

    def forward(self, embeds: Tensor, mask: Tensor, reading: Tensor, *extra: Tensor) -> Tensor:
        inputs = dict(zip(self.extra_names, extra, strict=True))
        states = self.explainable.run_backbone(
            inputs_embeds=embeds, attention_mask=mask, **inputs
        ).last_hidden_state
        rows = torch.arange(states.shape[0], device=states.device)
        return self.explainable.output_logits(states[rows, reading])


def word_embeddings(model: ExplainableModel, batch: Batch) -> Tensor:
    """The word-embedding rows of the batch ``[B, T, D]``, the point of attribution."""
    return model.model.get_input_embeddings()(batch.input_ids)


def reading_output(model: ExplainableModel, batch: Batch) -> tuple[ReadingOutput, tuple]:
    """The function Captum differentiates, and its extra arguments for ``batch``."""
    inputs = model.backbone_inputs(batch)
    names = tuple(n for n in ("token_type_ids", "position_ids") if n in inputs)
    extra = (batch.attention_mask, batch.reading_positions, *(inputs[n] for n in names))
    return ReadingOutput(model, names), extra


@dataclass
class GradientMethod(AttributionMethod):
    """Shared machinery: one Captum attribution per target column, then a reduction."""

    needs_gradients: ClassVar[bool] = True
    single_forward: ClassVar[bool] = False
    signed: ClassVar[bool] = False

    reduce: str = "l1"

    #: the Captum attribution class this method runs
    captum_class: ClassVar[str]

    def captum_options(self, function: ReadingOutput, embeds: Tensor) -> dict[str, Any]:
        """Keyword arguments for the Captum class's ``attribute``."""
        return {}

    def captum_attribute(
        self, function: ReadingOutput, embeds: Tensor, target: Tensor, extra: tuple[Tensor, ...]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Attributions ``[B, T, D]`` for one target column, and diagnostics ``[B]``."""
        import captum.attr

        engine = getattr(captum.attr, self.captum_class)(function)
        with warnings.catch_warnings():  # Captum announces the hooks it sets
            warnings.simplefilter("ignore", UserWarning)
            result = engine.attribute(
                embeds,
                target=target,
                additional_forward_args=extra,
                **self.captum_options(function, embeds),
            )
        if isinstance(result, tuple):  # (attributions, convergence delta)
            return result[0], {"convergence_delta": result[1]}
        return result, {}

    def attribute(self, model, forward: ForwardResult, targets: Targets, layers: Layers):
        check_choice("reduce", self.reduce, tuple(REDUCTIONS))
        batch = forward.batch
        function, extra = reading_output(model, batch)
        embeds = word_embeddings(model, batch).detach().requires_grad_(True)
        columns = targets.columns.to(embeds.device)
        scores, diagnostics = [], {}
        for k in range(columns.shape[1]):
            attributions, found = self.captum_attribute(function, embeds, columns[:, k], extra)
            scores.append(REDUCTIONS[self.reduce](attributions.detach()))
            for name, values in found.items():
                diagnostics.setdefault(name, []).append(values.detach())
        return Attribution(
            torch.stack(scores, dim=-1).unsqueeze(1),  # [B, 1, T, K]
            {name: torch.stack(values, dim=-1) for name, values in diagnostics.items()},
        )


@register_method
@dataclass
class GradientNorm(GradientMethod):
    """Saliency: the gradient of the target logit w.r.t. each word embedding."""

    name: ClassVar[str] = "gradient_norm"
    description: ClassVar[str] = "norm of the target logit's gradient at each word embedding"
    captum_class: ClassVar[str] = "Saliency"

    def captum_options(self, function, embeds):
        return {"abs": False}


@register_method
@dataclass
class GradientXInput(GradientMethod):
    """Gradient times the word embedding."""

    name: ClassVar[str] = "gradient_x_input"
    description: ClassVar[str] = "gradient x word embedding, reduced over the hidden dimension"
    captum_class: ClassVar[str] = "InputXGradient"


@register_method
@dataclass
class IntegratedGradients(GradientMethod):
    """Integrated gradients from a baseline embedding (zeros by default) to the input.

    The steps go through the model in chunks of ``internal_batch_size`` rows, which
    bounds memory; the completeness error (sum of attributions minus the output change)
    is reported per text and target as the ``convergence_delta`` diagnostic.
    """

    name: ClassVar[str] = "integrated_gradients"
    description: ClassVar[str] = "integrated gradients from a zero embedding (50 steps)"
    captum_class: ClassVar[str] = "IntegratedGradients"

    steps: int = 50
    baseline: str = "zero"  # "zero" embedding, or the "pad" / "mask" token's embedding
    method: str = "gausslegendre"
    internal_batch_size: int | None = 256

    def attribute(self, model, forward, targets, layers):
        check_choice("baseline", self.baseline, ("zero", "pad", "mask"))
        if self.steps < 1:
            raise InvalidInputError(f"steps must be at least 1, got {self.steps}")
        return super().attribute(model, forward, targets, layers)

    def _baseline(self, function: ReadingOutput, embeds: Tensor) -> Tensor | float:
        if self.baseline == "zero":
            return 0.0
        tokenizer = function.explainable.tokenizer
        token = tokenizer.pad_token_id if self.baseline == "pad" else tokenizer.mask_token_id
        if token is None:
            raise InvalidInputError(f"baseline={self.baseline!r}: the tokenizer has no such token")
        row = function.explainable.model.get_input_embeddings().weight[token].detach()
        return row.expand_as(embeds).contiguous()

    def captum_options(self, function, embeds):
        chunk = self.internal_batch_size and max(self.internal_batch_size, embeds.shape[0])
        return {
            "baselines": self._baseline(function, embeds),
            "n_steps": self.steps,
            "method": self.method,
            "internal_batch_size": chunk,
            "return_convergence_delta": True,
        }


@register_method
@dataclass
class DeepLift(GradientMethod):
    """DeepLift (Captum's rescale rule) from a zero word embedding."""

    name: ClassVar[str] = "deeplift"
    description: ClassVar[str] = "DeepLift (rescale rule) from a zero embedding"
    captum_class: ClassVar[str] = "DeepLift"

    def captum_options(self, function, embeds):
        return {"baselines": 0.0}
