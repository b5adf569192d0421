"""LIME (Ribeiro et al., 2016) with Captum: a sparse linear surrogate over token removals.

A token is removed by masking attention to it, which works the same for encoders and
decoders and needs no mask token; special tokens are never removed. The perturbations
of one text go through the model in batches of ``batch_size``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor, nn

from ..model.adapter import ExplainableModel
from .base import AttributionMethod, bounded, register_method


class KeptTokensOutput(nn.Module):
    """``keep`` ``[P, T]`` (1 keeps a token) -> the head's outputs ``[P, C]`` for one text."""

    def __init__(self, model: ExplainableModel, inputs: dict[str, Tensor], reading: int):
        super().__init__()
        self.explainable = model
        self.inputs = inputs  # one text's tensors, [1, T]
        self.reading = reading

    def forward(self, keep: Tensor) -> Tensor:
        count = keep.shape[0]
        inputs = {name: value.expand(count, -1) for name, value in self.inputs.items()}
        inputs["attention_mask"] = inputs["attention_mask"] * keep.round().long()
        states = self.explainable.run_backbone(**inputs).last_hidden_state
        return self.explainable.output_logits(states[:, self.reading])


class ContrastedColumn(nn.Module):
    """A text's outputs minus their ``contrast`` column: the surrogate then fits the
    target's output minus the contrast's."""

    def __init__(self, function: KeptTokensOutput, contrast: int):
        super().__init__()
        self.function = function
        self.contrast = contrast

    def forward(self, keep: Tensor) -> Tensor:
        outputs = self.function(keep)
        return outputs - outputs[:, self.contrast : self.contrast + 1]


#: the most samples: each is a forward pass of the text
MAX_SAMPLES = 100_000
#: the narrowest kernel whose weights stay normal float32 numbers (at least 2**-126, as
#: Captum stores them) at the largest cosine distance, 1: exp(-1 / (2 * w**2)) >= 2**-126
#: for w >= 0.0757; narrower, the far samples' weights underflow to 0 and the fit rests on
#: a few samples near the text (scores near 0, then sklearn's refusal of all-zero weights)
MIN_KERNEL_WIDTH = 0.076


@register_method
@dataclass
class Lime(AttributionMethod):
    """Weights of a ridge surrogate fitted to ``samples`` random token removals."""

    name: ClassVar[str] = "lime"
    description: ClassVar[str] = "LIME: ridge surrogate over random token removals (Captum)"
    single_forward: ClassVar[bool] = False

    samples: int = bounded(
        500,
        low=2,
        high=MAX_SAMPLES,
        why_low="the surrogate is fitted to them",
        why_high="each is a forward pass",
    )
    batch_size: int = bounded(64, low=1)
    kernel_width: float = bounded(
        1.0,
        low=MIN_KERNEL_WIDTH,
        why_low="a sample's weight exp(-d**2 / (2 * kernel_width**2)) over cosine "
        "distances d up to 1 underflows to 0 below it",
    )
    seed: int = 0

    #: perturbations per forward pass: Captum draws the same samples whatever their
    #: grouping (the seed fixes them), and each is scored alone
    execution_options: ClassVar[frozenset[str]] = frozenset({"batch_size"})

    def attribute(self, model, forward, targets, layers):
        from captum._utils.models.linear_model import SkLearnRidge
        from captum.attr import Lime as CaptumLime
        from captum.attr._core.lime import get_exp_kernel_similarity_function

        batch = forward.batch
        scores = torch.zeros(*batch.input_ids.shape, targets.columns.shape[1])
        similarity = get_exp_kernel_similarity_function("cosine", self.kernel_width)
        for row in range(len(batch)):
            real = batch.real_positions(row)
            inputs = {k: v[row : row + 1, real] for k, v in model.backbone_inputs(batch).items()}
            reading = int((real == batch.reading_positions[row]).nonzero())
            function = KeptTokensOutput(model, inputs, reading)
            keep = torch.ones(1, len(real), device=real.device)
            # special tokens are never removed: their "removed" value is "kept"
            baseline = batch.special_tokens_mask[row, real].float().unsqueeze(0)
            for k, column in enumerate(targets.columns[row].tolist()):
                fitted = function
                if targets.contrastive:  # fit the target's output minus the contrast's
                    fitted = ContrastedColumn(function, int(targets.contrast[row, k]))
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(self.seed)
                    weights = CaptumLime(fitted, SkLearnRidge(alpha=1.0), similarity).attribute(
                        keep,
                        baselines=baseline,
                        target=column,
                        n_samples=self.samples,
                        perturbations_per_eval=self.batch_size,
                    )
                scores[row, real.cpu(), k] = weights[0].detach().float().cpu()
            scores[row, batch.special_tokens_mask[row].cpu()] = 0.0  # never removed
        return scores.to(batch.input_ids.device).unsqueeze(1)
