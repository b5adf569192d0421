"""Grad-ELLM: matches its formula computed from module hooks; non-negative; batch-proof."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit import UnsupportedModelError

from .conftest import build_model, explainable, fresh_tokenizer

TEXTS = ["a gripping film that never lets go", "dull"]


@pytest.mark.parametrize(
    ("family", "head"),
    [
        ("llama", "causal_lm"),
        ("gpt2", "classification"),
        ("qwen2", "classification"),
        ("gemma", "causal_lm"),
    ],
)
def test_non_negative_normalised_and_batch_equals_single(family, head):
    model = explainable(family, head)
    together = model.explain(TEXTS, method="grad_ellm", aggregate_layers="all")
    for text, joint in zip(TEXTS, together, strict=True):
        assert joint.scores.min() >= 0 and joint.scores.max() == pytest.approx(1.0)
        alone = model.explain(text, method="grad_ellm", aggregate_layers="all")
        np.testing.assert_allclose(alone.scores, joint.scores, atol=1e-5)
    assert model.model.config._attn_implementation != "normxlogit_capture"


def _reference_softmax_variant(model, text: str) -> np.ndarray:
    """Eq. (11) with softmax token weights, from hooks on o_proj / v_proj of the last layer."""
    attention = model.blocks[-1].self_attn
    caught = {}
    hooks = [
        attention.o_proj.register_forward_pre_hook(
            lambda module, args: caught.__setitem__("o", args[0])
        ),
        attention.v_proj.register_forward_hook(
            lambda module, args, output: caught.__setitem__("v", output)
        ),
    ]
    model.model.set_attn_implementation("eager")
    try:
        batch = model.encode([text])
        with torch.enable_grad():
            outputs = model.run_backbone(**model.backbone_inputs(batch), output_attentions=True)
            reading = int(batch.reading_positions[0])
            logits = model.output_logits(outputs.last_hidden_state[:, reading])
            target = logits[0, logits[0].argmax()]
            (gradient,) = torch.autograd.grad(target, caught["o"])
    finally:
        for hook in hooks:
            hook.remove()
        model.model.set_attn_implementation("sdpa")
    heads, width = attention.config.num_attention_heads, attention.head_dim
    weight = gradient[0, reading].view(heads, width)
    values = caught["v"][0].view(len(batch.input_ids[0]), -1, width)
    values = values.repeat_interleave(heads // values.shape[1], dim=1)  # [T, H, d]
    lam = outputs.attentions[-1][0, :, reading]  # [H, T]
    contribution = torch.relu(torch.einsum("hd,hi,ihd->i", weight, lam, values)).detach()
    return ((contribution - contribution.min()) / (contribution.max() - contribution.min())).numpy()


def test_matches_the_formula_computed_from_module_hooks():
    model = explainable("llama", "causal_lm")
    text = TEXTS[0]
    ours = model.explain(text, method="grad_ellm", aggregate_layers=1, token_weights="softmax")
    np.testing.assert_allclose(ours.scores, _reference_softmax_variant(model, text), atol=1e-5)


def test_minmax_and_softmax_variants_differ_and_layers_add_up():
    model = explainable("llama", "causal_lm")
    loose = model.explain(TEXTS[0], method="grad_ellm", aggregate_layers=1)
    peaky = model.explain(TEXTS[0], method="grad_ellm", aggregate_layers=1, token_weights="softmax")
    assert not np.allclose(loose.scores, peaky.scores)
    both = model.explain(TEXTS[0], method="grad_ellm", aggregate_layers=2)
    assert not np.allclose(both.scores, loose.scores)


def test_left_and_right_padding_agree():
    results = {}
    for side in ("left", "right"):
        tokenizer = fresh_tokenizer()
        tokenizer.padding_side = side
        model = normxlogit.load((build_model("llama", "causal_lm"), tokenizer))
        results[side] = model.explain(TEXTS, method="grad_ellm", target="film")
    for left, right in zip(results["left"], results["right"], strict=True):
        np.testing.assert_allclose(left.scores, right.scores, atol=1e-5)


def test_encoders_are_refused():
    with pytest.raises(UnsupportedModelError, match="decoder-only"):
        explainable("bert", "classification").explain("a film", method="grad_ellm")
