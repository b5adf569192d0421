"""GlobEnc, N-ResLN, ALTI, DecompX: the per-token parts add up to what the model computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit import UnsupportedModelError
from normxlogit.methods.decomposition import (
    Decomposed,
    attention_sublayer,
    block_inputs,
    own_attention_sublayer,
)
from normxlogit.methods.decompx import decomposed_logits

from ..conftest import assert_padding_sides_agree, build_model, explainable, fresh_tokenizer

TEXTS = ["a gripping film that never lets go", "dull but fine"]


@pytest.mark.parametrize("family", ["bert", "roberta", "electra"])
def test_parts_sum_to_the_attention_sublayer_output(family):
    model = explainable(family, "classification")
    batch = model.encode(TEXTS)
    caught = {}
    block = model.blocks[1]
    hooks = [
        block.register_forward_pre_hook(
            lambda m, args, kwargs: caught.__setitem__("x", args[0]), with_kwargs=True
        ),
        block.attention.register_forward_hook(
            lambda m, args, output: caught.__setitem__("y", output[0])
        ),
    ]
    with torch.no_grad():
        model.run_backbone(**model.backbone_inputs(batch))
    for hook in hooks:
        hook.remove()
    real = batch.attention_mask.bool()
    for row in range(len(TEXTS)):
        with torch.no_grad():
            parts = own_attention_sublayer(block, caught["x"][row], real[row])
        keep = real[row]
        torch.testing.assert_close(parts.total[keep], caught["y"][row][keep], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("method", ["globenc", "n_resln", "alti"])
def test_rows_normalised_batch_and_padding_proof(method):
    model = explainable("bert", "classification")
    together = model.explain(TEXTS, method=method, layer="all")
    for text, joint in zip(TEXTS, together, strict=True):
        if method != "globenc":  # published GlobEnc rolls out raw norms
            np.testing.assert_allclose(joint.scores.sum(-1), 1.0, atol=1e-5)
        alone = model.explain(text, method=method, layer="all")
        np.testing.assert_allclose(alone.scores, joint.scores, rtol=1e-5, atol=1e-5)
    tokenizer = fresh_tokenizer()
    tokenizer.padding_side = "left"
    left = normxlogit.load((build_model("bert", "classification"), tokenizer))
    for a, b in zip(left.explain(TEXTS, method=method, layer="all"), together, strict=True):
        np.testing.assert_allclose(a.scores, b.scores, rtol=1e-5, atol=1e-5)


def test_per_layer_maps_roll_out():
    model = explainable("bert", "classification")
    own = model.explain(TEXTS[0], method="globenc", layer="all", rollout=False).scores
    rolled = model.explain(TEXTS[0], method="globenc", layer="all").scores
    np.testing.assert_allclose(own[1], rolled[1], atol=1e-6)
    assert not np.allclose(own[2], rolled[2])


@pytest.mark.parametrize("family", ["llama", "distilbert"])
def test_other_layouts_are_refused(family):
    model = explainable(family, "classification")
    with pytest.raises(UnsupportedModelError, match="BERT-layout"):
        model.explain("a film", method="alti")


@pytest.mark.parametrize("family", ["bert", "roberta", "electra"])
@pytest.mark.parametrize("head", ["classification", "regression"])
@pytest.mark.parametrize("bias", ["absdot", "apart"])
def test_decompx_parts_add_up_to_the_logits(family, head, bias):
    model = explainable(family, head)
    batch = model.encode(TEXTS)
    forward = model.forward(batch)
    inputs = block_inputs(model, forward)
    with torch.no_grad():
        logits = model.model(**model.backbone_inputs(batch)).logits
    for row in range(len(TEXTS)):
        contributions = decomposed_logits(model, inputs, forward, row, bias)
        torch.testing.assert_close(contributions.total[0], logits[row], atol=1e-4, rtol=1e-4)
        if bias == "absdot":  # every bias spread over the tokens: nothing left apart
            torch.testing.assert_close(
                contributions.parts[0].sum(0), logits[row], atol=1e-4, rtol=1e-4
            )
    explanation = model.explain(
        TEXTS[0], method="decompx", target="all" if head != "regression" else None, bias=bias
    )
    assert np.isfinite(explanation.scores).all()


@pytest.mark.parametrize("bias", ["absdot", "apart"])
def test_decompx_batch_equals_single_and_refuses_other_heads(bias):
    model = explainable("bert", "classification")
    together = model.explain(TEXTS, method="decompx", target="all", bias=bias)
    for text, joint in zip(TEXTS, together, strict=True):
        alone = model.explain(text, method="decompx", target="all", bias=bias)
        np.testing.assert_allclose(alone.scores, joint.scores, atol=1e-5)
        np.testing.assert_allclose(
            alone.diagnostics["bias_share"], joint.diagnostics["bias_share"], atol=1e-5
        )
    assert_padding_sides_agree("bert", "classification", TEXTS, method="decompx", bias=bias)
    with pytest.raises(UnsupportedModelError, match="decompx"):
        explainable("bert", "masked_lm").explain("a [MASK] film", method="decompx")
    with pytest.raises(normxlogit.InvalidInputError, match="bias"):
        model.explain(TEXTS[0], method="decompx", bias="norm")


def test_fast_own_path_equals_the_general_path():
    model = explainable("bert", "classification")
    batch = model.encode(TEXTS)
    inputs = block_inputs(model, model.forward(batch))
    real = batch.attention_mask.bool()
    with torch.no_grad():
        for row in range(len(TEXTS)):
            x = inputs[1][row]
            fast = own_attention_sublayer(model.blocks[1], x, real[row])
            general = attention_sublayer(
                model.blocks[1], x, Decomposed.own(x), real[row], value_bias_in_tokens=True
            )
            torch.testing.assert_close(fast.parts, general.parts, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(fast.rest, general.rest, atol=1e-5, rtol=1e-5)
