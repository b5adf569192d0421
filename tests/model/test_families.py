"""Every family x head: verification, LogAt = logits, NormXLogit = norm x LogAt, batching."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit import UnsupportedModelError
from normxlogit.model.tasks import TaskKind

from ..conftest import assert_padding_sides_agree, build_model, explainable, fresh_tokenizer

TEXTS = ["a gripping and moving film", "dull , but the [MASK] actors save it somehow"]
MASKED = ["a gripping [MASK] moving film", "dull , but the [MASK] actors save it somehow"]


def texts_for(model) -> list[str]:
    return MASKED if model.task.kind is TaskKind.MASKED_LM else TEXTS


def target_for(model):
    kind = model.task.kind
    if kind is TaskKind.CLASSIFICATION:
        return "all"
    if kind is TaskKind.REGRESSION:
        return None
    return ["the", "film", "good"]


def test_load_verifies_and_detects_task(case):
    family, head = case
    model = explainable(family, head)
    assert model.model.config.model_type in model.family.model_types
    assert model.task.kind.value == head


def test_logat_at_reading_position_equals_model_logits(case):
    model = explainable(*case)
    texts = texts_for(model)
    batch = model.encode(texts[:1])
    inputs = {k: v for k, v in batch.model_inputs().items() if k != "position_ids"}
    with torch.no_grad():
        logits = model.model(**inputs).logits[0]
    explanation = model.explain(texts[0], method="logat", target=target_for(model))
    reading = int(batch.reading_positions[0])
    scores = np.atleast_2d(explanation.scores.T).T  # [T, K]
    if model.task.kind is TaskKind.REGRESSION:
        assert abs(explanation.value - float(logits[0])) < 1e-4
        assert abs(scores[reading, 0]) < 1e-5  # |HoT(x_cls) - HoT(x_cls)|
        return
    if model.task.over_vocabulary:
        ids = [model.tokenizer.convert_tokens_to_ids(t) for t in explanation.targets]
        for position in range(scores.shape[0]):
            expected = logits[position, ids].numpy()
            np.testing.assert_allclose(scores[position], expected, atol=1e-4, rtol=1e-4)
        return
    np.testing.assert_allclose(scores[reading], logits.numpy(), atol=1e-4, rtol=1e-4)
    assert explanation.label == model.labels[int(logits.argmax())]


def test_normxlogit_is_norm_times_logat(case):
    model = explainable(*case)
    text, target = texts_for(model)[0], target_for(model)
    logat = model.explain(text, method="logat", target=target).scores
    norm = model.explain(text, method="l2_norm", target=target).scores
    product = model.explain(text, method="normxlogit", target=target).scores
    np.testing.assert_allclose(product, norm * logat, rtol=1e-5, atol=1e-6)
    batch = model.encode([text])
    expected_norm = (
        model.forward(batch, range(model.num_layers + 1)).embeddings[0].norm(dim=-1).numpy()
    )
    first = norm if norm.ndim == 1 else norm[:, 0]
    np.testing.assert_allclose(first, expected_norm, rtol=1e-5)


def test_per_layer_normxlogit_takes_the_norm_it_is_asked_for(case):
    """``norm="embedding"`` (the paper's section 5.1): the input-embedding norm x LogAt at
    each layer, whose last layer is the final-layer NormXLogit; ``norm="layer"`` (the
    authors' EachLayerNormXLogit, the default): each layer's own norm x its LogAt."""
    model = explainable(*case)
    text, target = texts_for(model)[0], target_for(model)
    logat = model.explain(text, method="logat", target=target, layer="all").scores
    layer_norm = model.explain(text, method="l2_norm", target=target, layer="all").scores
    input_norm = model.explain(text, method="l2_norm", target=target).scores

    def normxlogit_with(norm: str) -> np.ndarray:
        return model.explain(
            text, method="normxlogit", target=target, layer="all", norm=norm
        ).scores

    np.testing.assert_allclose(
        normxlogit_with("embedding"), input_norm * logat, rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(normxlogit_with("layer"), layer_norm * logat, rtol=1e-5, atol=1e-6)
    final = model.explain(text, method="normxlogit", target=target).scores
    np.testing.assert_allclose(normxlogit_with("embedding")[-1], final, rtol=1e-5, atol=1e-5)


def test_batch_equals_single(case):
    model = explainable(*case)
    texts, target = texts_for(model), target_for(model)
    together = model.explain(texts, target=target, batch_size=2)
    for text, joint in zip(texts, together, strict=True):
        alone = model.explain(text, target=target)
        assert alone.tokens == joint.tokens
        np.testing.assert_allclose(alone.scores, joint.scores, atol=1e-4, rtol=1e-4)
        assert alone.label == joint.label


def test_left_and_right_padding_agree(case):
    model = explainable(*case)
    assert_padding_sides_agree(
        *case, texts_for(model), atol=1e-4, target=target_for(model), layer="all"
    )


def test_per_layer_shapes_and_last_layer_is_final(case):
    model = explainable(*case)
    text, target = texts_for(model)[0], target_for(model)
    for method in ("logat", "normxlogit", "l2_norm"):
        per_layer = model.explain(text, method=method, target=target, layer="all")
        final = model.explain(text, method=method, target=target)
        assert per_layer.layers == list(range(model.num_layers + 1))
        assert per_layer.scores.shape[0] == model.num_layers + 1
        assert per_layer.scores.shape[1:] == final.scores.shape
        if method == "logat":
            np.testing.assert_allclose(per_layer.scores[-1], final.scores, atol=1e-5)
        single = model.explain(text, method=method, target=target, layer=1)
        np.testing.assert_allclose(single.scores, per_layer.scores[1], atol=1e-5)


def test_verification_refuses_a_head_that_does_not_match():
    model = build_model("bert", "classification")
    original = model.forward

    def shifted(*args, **kwargs):
        output = original(*args, **kwargs)
        output.logits = output.logits + 1.0
        return output

    model.forward = shifted
    with pytest.raises(UnsupportedModelError, match="verification failed for BertForSequence"):
        normxlogit.load((model, fresh_tokenizer()))


def test_model_without_head_is_refused():
    import transformers as T

    from ..conftest import tokenizer

    bare = T.BertModel(
        T.BertConfig(
            vocab_size=len(tokenizer()),
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=37,
        )
    )
    with pytest.raises(UnsupportedModelError, match="no head-on-top"):
        normxlogit.load((bare, fresh_tokenizer()))
