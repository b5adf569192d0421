"""Fixed routing: the clean pass's attention maps, replayed on perturbed inputs."""

from __future__ import annotations

import pytest
import torch

from normxlogit import InvalidInputError, UnsupportedModelError
from normxlogit.model.routing import (
    attention_records,
    clean_attention,
    expand_rows,
    replayed_attention,
)
from tests.conftest import explainable, sharp_model

TEXTS = ["a short one", "a somewhat longer sentence to pad the other"]
ROUTED = [
    ("bert", "classification"),
    ("distilbert", "classification"),
    ("gpt2", "causal_lm"),
    ("llama", "classification"),
    ("llama", "causal_lm"),
    # q/k/v biases (Qwen2), sliding windows (Mistral), scaled embeddings (Gemma), a
    # parallel block (Phi): the recorded maps must replay them too
    ("qwen2", "classification"),
    ("mistral", "classification"),
    ("gemma", "classification"),
    ("phi", "classification"),
]


def reading_logits(model, batch, embeds):
    inputs = model.backbone_inputs(batch)
    del inputs["input_ids"]
    states = model.run_backbone(inputs_embeds=embeds, **inputs).last_hidden_state
    rows = torch.arange(len(batch))
    return model.output_logits(states[rows, batch.reading_positions])


@pytest.mark.parametrize(("family", "head"), ROUTED)
def test_replaying_the_clean_maps_reproduces_the_clean_pass(family, head):
    model = explainable(family, head)
    batch = model.encode(TEXTS)
    weights = clean_attention(model, **model.backbone_inputs(batch))
    assert len(weights) == model.num_layers
    with torch.no_grad():
        expected = model.forward(batch).logits
        embeds = model.model.get_input_embeddings()(batch.input_ids)
        with replayed_attention(model, weights):
            replayed = reading_logits(model, batch, embeds)
        restored = model.forward(batch).logits
    torch.testing.assert_close(replayed, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(restored, expected)


@pytest.mark.parametrize("family", ["sharp bert", "llama"])
def test_fixed_routing_uses_the_clean_maps_on_a_perturbed_input(family):
    model = sharp_model() if family == "sharp bert" else explainable(family, "causal_lm")
    batch = model.encode(TEXTS)
    weights = clean_attention(model, **model.backbone_inputs(batch))
    with torch.no_grad():
        embeds = model.model.get_input_embeddings()(batch.input_ids).clone()
        embeds[:, 1:3] = 0  # perturb two tokens of every text
        with replayed_attention(model, weights), attention_records() as used:
            fixed = reading_logits(model, batch, embeds)
        dynamic_weights = clean_attention(model, inputs_embeds=embeds, **_rest(model, batch))
        dynamic = reading_logits(model, batch, embeds)
    assert len(used) == len(weights)
    for call, clean in zip(used, weights, strict=True):
        torch.testing.assert_close(call["weights"], clean)
    assert any(
        not torch.allclose(d, c, atol=1e-4) for d, c in zip(dynamic_weights, weights, strict=True)
    )
    assert not torch.allclose(fixed, dynamic, atol=1e-5)


def _rest(model, batch):
    inputs = model.backbone_inputs(batch)
    del inputs["input_ids"]
    return inputs


def test_expand_rows_and_clear_errors():
    model = explainable("bert", "classification")
    batch = model.encode(TEXTS)
    weights = clean_attention(model, **model.backbone_inputs(batch))
    rows = torch.tensor([1, 1, 0])
    expanded = expand_rows(weights, rows)
    assert expanded[0].shape[0] == 3 and torch.equal(expanded[0][2], weights[0][0])
    with torch.no_grad():
        with (
            pytest.raises(InvalidInputError, match="more attention calls"),
            replayed_attention(model, weights[:1]),
        ):
            model.run_backbone(**model.backbone_inputs(batch))
        with (
            pytest.raises(InvalidInputError, match="different batch"),
            replayed_attention(model, expand_rows(weights, rows)),
        ):
            model.run_backbone(**model.backbone_inputs(batch))
        assert torch.equal(model.forward(batch).logits, model.forward(batch).logits)


@pytest.mark.parametrize("family", ["deberta-v2", "mpnet"])
def test_models_without_the_attention_interface_are_refused(family):
    model = explainable(family, "classification")
    batch = model.encode(TEXTS)
    with pytest.raises(UnsupportedModelError, match="AttentionInterface"):
        clean_attention(model, **model.backbone_inputs(batch))
