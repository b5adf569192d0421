"""Gradient baselines explain exactly the function model(input_ids) computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from normxlogit.methods.gradient import reading_output, word_embeddings

from ..conftest import explainable

PAIRS = [("a gripping film", "it never lets go"), ("dull", "but fine in the end somehow")]
FAMILIES = [
    ("bert", "classification"),
    ("roberta", "regression"),
    ("deberta-v2", "classification"),
    ("albert", "classification"),
    ("distilbert", "masked_lm"),
    ("gpt2", "classification"),
    ("llama", "causal_lm"),
]
METHODS = ["gradient_norm", "gradient_x_input", "integrated_gradients", "deeplift"]


def texts_for(model):
    if model.task.kind.value == "masked_lm":
        return ["a gripping [MASK] film", "dull , but [MASK] fine"]
    return ["a gripping film that never lets go", "dull"]


@pytest.mark.parametrize(("family", "head"), FAMILIES)
def test_embedding_path_reproduces_the_model(family, head):
    model = explainable(family, head)
    batch = model.encode(PAIRS if family == "bert" else texts_for(model))
    function, extra = reading_output(model, batch)
    with torch.no_grad():
        via_embeddings = function(word_embeddings(model, batch), *extra)
        direct = model.model(**model.backbone_inputs(batch)).logits
    if model.task.over_vocabulary:  # language models give logits at every position
        direct = direct[torch.arange(len(batch)), batch.reading_positions]
    direct = direct.reshape(len(batch), -1)
    if family == "bert":
        assert batch.token_type_ids is not None and int(batch.token_type_ids.sum()) > 0
    torch.testing.assert_close(via_embeddings, direct, atol=1e-5, rtol=1e-5)


def _manual_gradient(model, text, column):
    batch = model.encode([text])
    function, extra = reading_output(model, batch)
    embeds = word_embeddings(model, batch).detach().requires_grad_(True)
    output = function(embeds, *extra)[0, column]
    (grad,) = torch.autograd.grad(output, embeds)
    return grad[0], embeds[0].detach()


def test_saliency_and_gradient_x_input_match_autograd():
    model = explainable("bert", "classification")
    text = "a gripping film that never lets go"
    for label in range(3):
        grad, embeds = _manual_gradient(model, text, label)
        saliency = model.explain(text, method="gradient_norm", target=label)
        np.testing.assert_allclose(saliency.scores, grad.abs().sum(-1).numpy(), rtol=1e-4)
        l2 = model.explain(text, method="gradient_norm", target=label, reduce="l2")
        np.testing.assert_allclose(l2.scores, grad.norm(dim=-1).numpy(), rtol=1e-4)
        gxi = model.explain(text, method="gradient_x_input", target=label, reduce="sum")
        np.testing.assert_allclose(
            gxi.scores, (grad * embeds).sum(-1).numpy(), rtol=1e-4, atol=1e-7
        )


def test_integrated_gradients_is_complete_and_converges():
    model = explainable("bert", "classification")
    with torch.no_grad():  # a sharper function than the tiny random init
        for parameter in model.model.parameters():
            parameter.mul_(4.0)
    try:
        text = "a gripping film that never lets go"
        batch = model.encode([text])
        function, extra = reading_output(model, batch)
        embeds = word_embeddings(model, batch).detach()
        with torch.no_grad():
            change = function(embeds, *extra) - function(torch.zeros_like(embeds), *extra)
        deltas = []
        for steps in (2, 8, 64):
            result = model.explain(
                text, method="integrated_gradients", steps=steps, reduce="sum", target="all"
            )
            total = result.scores.sum(0)
            delta = np.asarray(result.diagnostics["convergence_delta"])
            np.testing.assert_allclose(total - delta, change[0].numpy(), atol=1e-4)
            deltas.append(np.abs(delta).max())
        assert deltas[2] < deltas[0]
        assert deltas[2] < 0.05 * abs(change).max()
    finally:
        with torch.no_grad():
            for parameter in model.model.parameters():
                parameter.div_(4.0)


@pytest.mark.parametrize("method", METHODS)
def test_gradient_methods_batch_equals_single(method):
    model = explainable("bert", "classification")
    texts = ["a gripping film that never lets go", "dull"]
    options = {"steps": 8} if method == "integrated_gradients" else {}
    together = model.explain(texts, method=method, target="all", **options)
    for text, joint in zip(texts, together, strict=True):
        alone = model.explain(text, method=method, target="all", **options)
        np.testing.assert_allclose(alone.scores, joint.scores, rtol=1e-3, atol=1e-6)


class _ModelLogits(torch.nn.Module):
    """The transformers model's own forward, for Captum's layer methods."""

    def __init__(self, model):
        super().__init__()
        self.inner = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.inner(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).logits


# deeplift is not compared with Captum's, which takes the plain gradient at GELU, softmax,
# products and LayerNorm (it hooks only a few nn.Module types); tests/methods/test_deeplift.py
# checks deeplift against a hand computation instead
@pytest.mark.parametrize("method", [m for m in METHODS if m != "deeplift"])
def test_agrees_with_captum_layer_methods_on_the_model_itself(method):
    """Captum's layer attribution at the word-embedding module of model(input_ids).

    A spare token's embedding row is zeroed so that Captum's input-space baseline is the
    zero embedding our methods use.
    """
    from captum.attr import (
        LayerGradientXActivation,
        LayerIntegratedGradients,
    )

    model = explainable("bert", "classification")
    embedding = model.model.get_input_embeddings()
    spare = 1  # [unused0]
    saved = embedding.weight[spare].detach().clone()
    with torch.no_grad():
        embedding.weight[spare] = 0.0
    try:
        batch = model.encode(PAIRS)
        args = (batch.attention_mask, batch.token_type_ids)
        wrapped = _ModelLogits(model.model)
        target = model.forward(batch).logits.argmax(-1)
        baseline = torch.full_like(batch.input_ids, spare)
        if method == "gradient_norm":
            engine = LayerGradientXActivation(wrapped, embedding, multiply_by_inputs=False)
            reference = engine.attribute(
                batch.input_ids, target=target, additional_forward_args=args
            )
        elif method == "gradient_x_input":
            engine = LayerGradientXActivation(wrapped, embedding)
            reference = engine.attribute(
                batch.input_ids, target=target, additional_forward_args=args
            )
        elif method == "integrated_gradients":
            engine = LayerIntegratedGradients(wrapped, embedding)
            reference = engine.attribute(
                batch.input_ids,
                baselines=baseline,
                target=target,
                additional_forward_args=args,
                n_steps=50,
            )
        expected = reference.abs().sum(-1).detach()
        ours = model.explain(PAIRS, method=method)
        for row, explanation in enumerate(ours):
            real = batch.real_positions(row)
            np.testing.assert_allclose(
                explanation.scores, expected[row, real].numpy(), rtol=1e-4, atol=1e-6
            )
    finally:
        with torch.no_grad():
            embedding.weight[spare] = saved
