"""Attention baselines: rows are distributions, rollout composes layers, padding is inert."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import normxlogit

from ..conftest import assert_padding_sides_agree, build_model, explainable, fresh_tokenizer

CASES = [
    ("bert", "classification"),
    ("roberta", "masked_lm"),
    ("llama", "causal_lm"),
    ("gpt2", "classification"),
]


def texts_for(model):
    if model.task.kind.value == "masked_lm":
        return ["a gripping [MASK] film", "dull , but [MASK] fine in the end"]
    return ["a gripping film that never lets go", "dull"]


@pytest.mark.parametrize(("family", "head"), CASES)
@pytest.mark.parametrize("method", ["attention", "attention_rollout"])
def test_rows_are_distributions_and_batch_equals_single(family, head, method):
    model = explainable(family, head)
    texts = texts_for(model)
    together = model.explain(texts, method=method, layer="all")
    for text, joint in zip(texts, together, strict=True):
        np.testing.assert_allclose(joint.scores.sum(-1), 1.0, atol=1e-5)
        alone = model.explain(text, method=method, layer="all")
        np.testing.assert_allclose(alone.scores, joint.scores, atol=1e-5)


def test_rollout_of_one_layer_is_the_mixed_attention():
    model = explainable("bert", "classification")
    text = "a gripping film"
    raw = model.explain(text, method="attention", layer=1).scores
    rolled = model.explain(text, method="attention_rollout", layer=1).scores
    identity = np.zeros_like(raw)
    identity[0] = 1.0  # [CLS] attends to itself through the residual
    mixed = 0.5 * raw + 0.5 * identity
    np.testing.assert_allclose(rolled, mixed / mixed.sum(), atol=1e-6)


def test_attention_leaves_the_model_on_its_attention_path():
    model = normxlogit.load((build_model("bert", "classification"), fresh_tokenizer()))
    model.model.set_attn_implementation("sdpa")
    model.explain("a film", method="attention")
    assert model.model.config._attn_implementation == "sdpa"
    with torch.no_grad():
        logits = model.explain("a film", method="logat", target="all").scores
    assert np.isfinite(logits).all()


@pytest.mark.parametrize("family", ["bert", "llama"])
def test_padding_side_does_not_matter(family):
    texts = ["a gripping film that never lets go", "dull"]
    assert_padding_sides_agree(
        family, "classification", texts, method="attention_rollout", layer="all"
    )


@pytest.mark.parametrize(("family", "head"), CASES)
@pytest.mark.parametrize("method", ["attention", "attention_rollout"])
def test_the_weights_come_with_explains_own_pass(family, head, method):
    """One pass through the transformer, and the same scores as a separate pass for the
    weights (what the methods did before they said ``reads_attention``)."""
    from normxlogit.methods import Layers, get_method
    from normxlogit.model.targets import resolve_targets

    model = explainable(family, head)
    text = texts_for(model)[0]
    passes = []
    handle = model.blocks[0].register_forward_pre_hook(lambda *_: passes.append(1))
    try:
        explanation = model.explain(text, method=method, layer="all")
    finally:
        handle.remove()
    assert len(passes) == 1
    layers = Layers.resolve("all", model.num_layers)
    plain = model.forward(model.encode([text]), layers.indices)  # no weights in it
    assert plain.attentions is None
    scores = get_method(method).attribute(model, plain, resolve_targets(model, plain, None), layers)
    np.testing.assert_allclose(explanation.scores, scores[0, :, :, 0].numpy(), atol=1e-6)


def _hf_attentions(model, input_ids):
    """Every layer's attention ``[L, H, T, T]`` from transformers' own eager pass (the
    model is shared between tests: its attention path is restored after)."""
    before = model.model.config._attn_implementation
    model.model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = model.model(torch.tensor([input_ids]), output_attentions=True)
    finally:
        model.model.set_attn_implementation(before)
    return torch.stack(out.attentions)[:, 0].numpy()


def test_layer_mean_is_inseqs_mean_over_layers_and_heads():
    """The pi-Soft preset scores what Inseq's ``attention`` reports after its default
    aggregation: the last row of the attention, averaged over heads and then layers,
    read straight from transformers' eager pass."""
    model = explainable("llama", "causal_lm")
    text = "a gripping film that never lets go"
    preset = model.explain(text, method="attention", preset="pi-soft")
    input_ids = model.encode([text]).input_ids[0].tolist()
    assert len(input_ids) == len(preset.tokens)
    attentions = _hf_attentions(model, input_ids)
    np.testing.assert_allclose(preset.scores, attentions[:, :, -1].mean((0, 1)), atol=1e-6)
    per_layer = model.explain(text, method="attention", layer="all", layer_mean=True).scores
    for layer in range(1, model.num_layers + 1):
        expected = attentions[:layer, :, -1].mean((0, 1))
        np.testing.assert_allclose(per_layer[layer], expected, atol=1e-6)
    last = model.explain(text, method="attention").scores  # the default: last layer only
    np.testing.assert_allclose(last, attentions[-1, :, -1].mean(0), atol=1e-6)


def test_layer_mean_over_a_generation_reads_each_steps_row():
    """Step t scores the row of the position that predicts y_t, averaged over layers."""
    model = explainable("llama", "causal_lm")
    result = model.explain(
        "a gripping film", method="attention", preset="pi-soft", continuation="that never"
    )
    prompt_length = len(result.tokens) - len(result.generated)
    attentions = _hf_attentions(model, result.input_ids).mean((0, 1))
    for step in range(len(result.generated)):
        reading = prompt_length + step - 1
        np.testing.assert_allclose(
            result.scores[step, : reading + 1], attentions[reading, : reading + 1], atol=1e-6
        )
        assert np.isnan(result.scores[step, reading + 1 :]).all()
