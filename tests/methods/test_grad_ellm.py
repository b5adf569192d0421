"""Grad-ELLM: matches its formula computed from module hooks; non-negative; batch-proof."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit import UnsupportedModelError

from ..conftest import assert_padding_sides_agree, explainable, fresh_tokenizer

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
    assert_padding_sides_agree("llama", "causal_lm", TEXTS, method="grad_ellm", target="film")


def test_encoders_are_refused():
    with pytest.raises(UnsupportedModelError, match="decoder-only"):
        explainable("bert", "classification").explain("a film", method="grad_ellm")


def _one_token_decides(trigger: str, target: str):
    """A one-layer LLaMA whose target logit comes only through the trigger's value vector."""
    import transformers as T

    from ..conftest import tokenizer

    tok = fresh_tokenizer()
    config = T.LlamaConfig(
        vocab_size=len(tokenizer()),
        hidden_size=32,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    model = T.LlamaForCausalLM(config).eval()
    trigger_id, target_id = tok.convert_tokens_to_ids([trigger, target])
    with torch.no_grad():
        embeddings = model.model.embed_tokens.weight
        embeddings[:, 0] = 0.0
        embeddings[trigger_id, 0] = 4.0  # only the trigger has a component along dim 0
        attention = model.model.layers[0].self_attn
        attention.v_proj.weight.zero_()
        attention.v_proj.weight[0, 0] = 1.0  # head 0, channel 0 reads dim 0
        attention.o_proj.weight.zero_()
        attention.o_proj.weight[5, 0] = 1.0  # ... and writes it to residual dim 5
        model.model.layers[0].mlp.down_proj.weight.zero_()
        model.lm_head.weight.mul_(0.01)
        model.lm_head.weight[target_id, 5] = 50.0  # the target logit reads dim 5
    return normxlogit.load((model, tok))


def test_the_token_that_decides_the_output_ranks_first():
    model = _one_token_decides("gripping", "good")
    text = "a film so gripping that it never lets go"
    explanation = model.explain(text, method="grad_ellm", target="good", aggregate_layers=1)
    assert explanation.label == "good"
    assert explanation.top_tokens(1)[0][0] == "gripping"
    others = [
        s for t, s in zip(explanation.tokens, explanation.scores, strict=True) if t != "gripping"
    ]
    assert max(others) == pytest.approx(0.0, abs=1e-6)


def test_frozen_weights_give_the_same_scores():
    """Built-in adapters load with frozen weights (requires_grad=False); the gradients
    must come from the embeddings, not from the weights."""
    from ..conftest import build_model

    texts = ["the film was a delight", "it was dull"]
    trainable = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()))
    frozen_network = build_model("llama", "causal_lm")
    frozen_network.requires_grad_(False)
    frozen = normxlogit.load((frozen_network, fresh_tokenizer()))
    for a, b in zip(
        trainable.explain(texts, method="grad_ellm"),
        frozen.explain(texts, method="grad_ellm"),
        strict=True,
    ):
        np.testing.assert_allclose(a.scores, b.scores, rtol=1e-5, atol=1e-6)
    assert all(p.grad is None for p in frozen_network.parameters())
