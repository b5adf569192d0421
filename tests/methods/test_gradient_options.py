"""What a gradient method attributes, how it reduces, and what it starts from.

``attributed_fn`` (the target's logit or probability), ``reduce`` (l1, l2, sum) and, for
integrated gradients and DeepLift, ``baseline`` / ``baseline_keeps_eos`` and DeepLift's
``rules``: each checked against a computation by hand on tiny models.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.methods.baselines import baseline_ids, baseline_token
from normxlogit.methods.gradient import reading_output, word_embeddings

from ..conftest import build_model, explainable, fresh_tokenizer

TEXT = "a gripping film that never lets go"


def _hand_gradient(model, text, column, probability=False, start=None):
    """The gradient of the target's logit (or probability) at the word embeddings."""
    batch = model.encode([text])
    function, extra = reading_output(model, batch)
    embeds = word_embeddings(model, batch).detach()
    point = (embeds if start is None else start).clone().requires_grad_(True)
    outputs = function(point, *extra)
    if probability:  # the softmax over everything the head outputs
        full = _full_outputs(model, point, extra)
        value = full.softmax(-1)[0, model.full_output_columns(torch.tensor([[column]]))[0, 0]]
    else:
        value = outputs[0, column]
    (grad,) = torch.autograd.grad(value, point)
    return grad[0], embeds[0]


def _predicted(model) -> int:
    return int(model.forward(model.encode([TEXT])).logits[0].argmax())


def _full_outputs(model, embeds, extra):
    mask, reading, *named = extra
    inputs = dict(zip(("token_type_ids", "position_ids"), named, strict=False))
    states = model.run_backbone(inputs_embeds=embeds, attention_mask=mask, **inputs)
    rows = torch.arange(embeds.shape[0])
    return model.all_logits(states.last_hidden_state[rows, reading])


@pytest.mark.parametrize(("family", "head"), [("bert", "classification"), ("llama", "causal_lm")])
def test_probability_is_differentiated_by_hand(family, head):
    model = explainable(family, head)
    column = _predicted(model) if head == "causal_lm" else 1
    target = column if head == "classification" else None
    grad, embeds = _hand_gradient(model, TEXT, column, probability=True)
    saliency = model.explain(
        TEXT, method="gradient_norm", target=target, attributed_fn="probability", reduce="l2"
    )
    np.testing.assert_allclose(saliency.scores, grad.norm(dim=-1).numpy(), rtol=1e-4, atol=1e-9)
    gxi = model.explain(
        TEXT, method="gradient_x_input", target=target, attributed_fn="probability", reduce="sum"
    )
    np.testing.assert_allclose(gxi.scores, (grad * embeds).sum(-1).numpy(), rtol=1e-4, atol=1e-9)


def test_probability_of_a_prompted_label_is_its_share_of_the_vocabulary():
    """A prompted model's label word: the softmax over the whole vocabulary, as the network
    computes it, not renormalised over the label words."""
    model = normxlogit.load(
        (build_model("llama", "causal_lm"), fresh_tokenizer()),
        label_words={"no": "bad", "yes": "good"},
    )
    batch = model.encode([TEXT])
    forward = model.forward(batch)
    reading = forward.final_states[0, batch.reading_positions[0]].unsqueeze(0)
    with torch.no_grad():
        probabilities = model.output_probabilities(reading)[0]
        vocabulary = model.all_logits(reading).softmax(-1)[0]
    ids = model.full_output_columns(torch.tensor([[0, 1]]))[0]
    torch.testing.assert_close(probabilities, vocabulary[ids])
    assert float(probabilities.sum()) < 0.5  # two words of a 30k vocabulary


def test_blocked_projection_gives_the_same_logits():
    model = explainable("llama", "causal_lm")
    states = torch.randn(3, model.model.config.hidden_size)
    with torch.no_grad():
        torch.testing.assert_close(
            model.output_probabilities(states), model.all_logits(states).softmax(-1)
        )


def test_probability_is_refused_for_a_regressor():
    model = explainable("roberta", "regression")
    for method in ("gradient_norm", "integrated_gradients", "deeplift"):
        with pytest.raises(InvalidInputError, match="attributed_fn='logit'"):
            model.explain(("a", "b"), method=method, attributed_fn="probability")


@pytest.mark.parametrize("method", ["gradient_norm", "deeplift", "grad_ellm"])
def test_unknown_attributed_function_is_refused(method):
    model = explainable("llama", "causal_lm")
    with pytest.raises(InvalidInputError, match="logit, probability"):
        model.explain(TEXT, method=method, attributed_fn="loss")


def test_reductions():
    model = explainable("bert", "classification")
    grad, embeds = _hand_gradient(model, TEXT, 2)
    product = grad * embeds
    expected = {
        "l1": product.abs().sum(-1),
        "l2": product.norm(dim=-1),
        "sum": product.sum(-1),
    }
    for reduce, values in expected.items():
        got = model.explain(TEXT, method="gradient_x_input", target=2, reduce=reduce)
        np.testing.assert_allclose(got.scores, values.numpy(), rtol=1e-4, atol=1e-8)
    signed = model.explain(TEXT, method="gradient_x_input", target=2, reduce="sum")
    assert (np.asarray(signed.scores) < 0).any()  # signed: not a norm


def test_baseline_names_ids_and_tokens():
    model = explainable("bert", "classification")
    tokenizer = model.tokenizer
    assert baseline_token(model, "zero") is None
    assert baseline_token(model, "unk") == tokenizer.unk_token_id
    assert baseline_token(model, "pad") == tokenizer.pad_token_id
    assert baseline_token(model, "mask") == tokenizer.mask_token_id
    assert baseline_token(model, 1999) == 1999
    assert baseline_token(model, "[unused0]") == tokenizer.convert_tokens_to_ids("[unused0]")
    for bad in ("nothing-like-a-token", 10**9, -1):
        with pytest.raises(InvalidInputError, match="baseline="):
            baseline_token(model, bad)
    with pytest.raises(InvalidInputError, match="neither"):
        model.explain(TEXT, method="integrated_gradients", baseline="no such token", steps=2)


def test_eos_positions_keep_their_embedding():
    model = explainable("llama", "causal_lm")
    eos = model.model.config.eos_token_id or model.tokenizer.eos_token_id
    batch = model.encode([TEXT])
    batch.input_ids[0, 2] = eos
    ids = baseline_ids(model, batch, "unk", keeps_eos=True)[0].tolist()
    unk = model.tokenizer.unk_token_id
    assert ids[2] == eos and all(i == unk for p, i in enumerate(ids) if p != 2)
    zero = baseline_ids(model, batch, "zero", keeps_eos=True)[0].tolist()
    assert zero[2] == eos and all(i == -1 for p, i in enumerate(zero) if p != 2)
    assert baseline_ids(model, batch, "zero", keeps_eos=False) is None


@pytest.mark.parametrize("rules", ["exact", "captum"])
def test_eos_positions_score_zero_with_integrated_gradients_and_deeplift(rules, monkeypatch):
    model = explainable("llama", "causal_lm")
    eos_token = "film"  # made the end-of-sequence token for this test
    eos_id = model.tokenizer.convert_tokens_to_ids(eos_token)
    monkeypatch.setattr(model.model.config, "eos_token_id", eos_id)
    text = "a gripping film that never lets go"
    options = {"baseline": "unk", "baseline_keeps_eos": True}
    for method, extra in (("integrated_gradients", {"steps": 4}), ("deeplift", {"rules": rules})):
        result = model.explain(text, method=method, **options, **extra)
        at_eos = [s for t, s in zip(result.tokens, result.scores, strict=True) if t == eos_token]
        others = [s for t, s in zip(result.tokens, result.scores, strict=True) if t != eos_token]
        assert at_eos and all(s == 0 for s in at_eos)
        assert all(s > 0 for s in others)


def test_integrated_gradients_from_a_token_baseline_is_complete():
    """Completeness: the attributions add up to f(x) - f(baseline), for the probability too."""
    model = explainable("bert", "classification")
    batch = model.encode([TEXT])
    embeds = word_embeddings(model, batch).detach()
    unk = model.model.get_input_embeddings().weight[model.tokenizer.unk_token_id].detach()
    start = unk.expand_as(embeds)
    for attributed_fn in ("logit", "probability"):
        function, extra = reading_output(model, batch, attributed_fn)
        with torch.no_grad():
            change = function(embeds, *extra) - function(start, *extra)
        result = model.explain(
            TEXT,
            method="integrated_gradients",
            target="all",
            steps=64,
            reduce="sum",
            baseline="unk",
            attributed_fn=attributed_fn,
        )
        np.testing.assert_allclose(
            np.asarray(result.scores).sum(0), change[0].numpy(), rtol=1e-2, atol=1e-5
        )


@pytest.mark.parametrize(("family", "head"), [("bert", "classification"), ("llama", "causal_lm")])
def test_exact_deeplift_from_a_token_baseline_sums_to_the_change(family, head):
    model = explainable(family, head)
    for attributed_fn in ("logit", "probability"):
        result = model.explain(
            TEXT, method="deeplift", baseline="unk", attributed_fn=attributed_fn, reduce="sum"
        )
        assert abs(result.diagnostics["convergence_delta"][0]) < 1e-5
        assert float(np.abs(result.scores).sum()) > 0


def test_captum_rules_on_a_llama_are_gradient_times_the_difference():
    """Captum rules no LLaMA operation, so its DeepLift is grad(x) x (x - baseline)."""
    model = explainable("llama", "causal_lm")
    column = _predicted(model)
    batch = model.encode([TEXT])
    embeds = word_embeddings(model, batch).detach()
    unk = model.model.get_input_embeddings().weight[model.tokenizer.unk_token_id].detach()
    grad, _ = _hand_gradient(model, TEXT, column, probability=True)
    expected = (grad * (embeds[0] - unk)).norm(dim=-1)
    got = model.explain(TEXT, method="deeplift", preset="pi-soft")
    np.testing.assert_allclose(got.scores, expected.numpy(), rtol=1e-4, atol=1e-9)
    exact = model.explain(TEXT, method="deeplift", attributed_fn="probability", reduce="l2")
    assert not np.allclose(exact.scores, got.scores, rtol=1e-2)


def test_captum_rules_on_bert_rule_its_tanh_pooler():
    """On BERT Captum does rule one module (the pooler's tanh): its DeepLift is then not
    gradient x difference; the exact rules are still the default."""
    model = explainable("bert", "classification")
    batch = model.encode([TEXT])
    embeds = word_embeddings(model, batch).detach()
    grad, _ = _hand_gradient(model, TEXT, 1, start=None)
    plain = (grad * embeds[0]).sum(-1).numpy()
    captum = model.explain(TEXT, method="deeplift", rules="captum", target=1, reduce="sum")
    assert not np.allclose(captum.scores, plain, rtol=1e-3)
    assert normxlogit.get_method("deeplift").rules == "exact"


def test_grad_ellm_differentiates_the_probability():
    model = explainable("llama", "causal_lm")
    logit = model.explain(TEXT, method="grad_ellm")
    probability = model.explain(TEXT, method="grad_ellm", attributed_fn="probability")
    assert np.isfinite(probability.scores).all()
    assert not np.allclose(logit.scores, probability.scores)


def test_pi_soft_preset_sets_inseqs_defaults():
    for method in ("gradient_norm", "gradient_x_input", "integrated_gradients", "deeplift"):
        chosen = normxlogit.get_method(method, preset="pi-soft")
        assert (chosen.attributed_fn, chosen.reduce) == ("probability", "l2")
    ig = normxlogit.get_method("integrated_gradients", preset="pi-soft")
    assert (ig.baseline, ig.baseline_keeps_eos, ig.steps, ig.internal_batch_size) == (
        "unk",
        True,
        16,
        8,
    )
    deeplift = normxlogit.get_method("deeplift", preset="pi-soft")
    assert (deeplift.baseline, deeplift.baseline_keeps_eos, deeplift.rules) == (
        "unk",
        True,
        "captum",
    )
    # the NormXLogit paper's settings stay the defaults
    for method in ("gradient_norm", "gradient_x_input", "integrated_gradients", "deeplift"):
        chosen = normxlogit.get_method(method)
        assert (chosen.attributed_fn, chosen.reduce) == ("logit", "l1")
    assert normxlogit.get_method("integrated_gradients").baseline == "zero"
