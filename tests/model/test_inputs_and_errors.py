"""Targets, layers, truncation and every user error: one clear message each."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import normxlogit
from normxlogit import (
    InvalidInputError,
    NormXLogitWarning,
    UnknownMethodError,
    UnknownModelError,
)

from ..conftest import explainable


@pytest.fixture(scope="module")
def classifier():
    return explainable("bert", "classification")


def test_list_methods_and_models():
    assert {"l2_norm", "logat", "normxlogit"} <= set(normxlogit.list_methods())
    assert normxlogit.list_models()[0] == "minilm-sst2"
    assert "minilm-stsb" in normxlogit.list_models()
    assert "smollm2-135m" in normxlogit.list_models()


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_refused(classifier, text):
    with pytest.raises(InvalidInputError, match="empty or whitespace-only"):
        classifier.explain(text)


def test_long_text_is_truncated_with_a_warning(classifier):
    classifier.encoder.max_length = 16
    try:
        with pytest.warns(NormXLogitWarning, match=r"the last \d+ tokens were dropped"):
            explanation = classifier.explain("word " * 40)
    finally:
        classifier.encoder.max_length = 512
    assert len(explanation.tokens) == 16
    assert explanation.tokens[-1] == "[SEP]"
    assert explanation.settings["dropped_tokens"] == 42 - 16


def test_labels_by_name_index_all_and_list(classifier):
    all_labels = classifier.explain("a film", target="all")
    assert all_labels.scores.shape[1] == 3
    by_index = classifier.explain("a film", target=2)
    by_name = classifier.explain("a film", target="label_2")
    np.testing.assert_allclose(by_index.scores, all_labels.scores[:, 2])
    np.testing.assert_allclose(by_name.scores, all_labels.scores[:, 2])
    pair = classifier.explain("a film", target=[2, "LABEL_0"])
    assert pair.targets == ["LABEL_2", "LABEL_0"]
    np.testing.assert_allclose(pair.scores, all_labels.scores[:, [2, 0]])
    predicted = classifier.explain("a film")
    assert predicted.targets == [predicted.label]


@pytest.mark.parametrize("target", ["happy", 7, -1])
def test_unknown_label_lists_the_labels(classifier, target):
    with pytest.raises(InvalidInputError, match="LABEL_0"):
        classifier.explain("a film", target=target)


def test_unknown_method_lists_the_methods(classifier):
    with pytest.raises(UnknownMethodError, match="normxlogit"):
        classifier.explain("a film", method="shap-magic")


def test_unknown_method_option_lists_the_options(classifier):
    with pytest.raises(InvalidInputError, match="embedding"):
        classifier.explain("a film", method="normxlogit", temperature=2)
    with pytest.raises(InvalidInputError, match="output, word"):
        classifier.explain("a film", method="normxlogit", embedding="pooled")


def test_embedding_source_word_row(classifier):
    word = classifier.explain("a film", method="l2_norm", embedding="word")
    ids = classifier.tokenizer("a film")["input_ids"]
    rows = classifier.model.get_input_embeddings().weight[ids].norm(dim=-1)
    np.testing.assert_allclose(word.scores, rows.detach().numpy(), rtol=1e-5)


def test_bad_layers(classifier):
    with pytest.raises(InvalidInputError, match="layer 9 does not exist"):
        classifier.explain("a film", layer=9)
    last = classifier.explain("a film", method="logat", layer=-1)
    final = classifier.explain("a film", method="logat")
    np.testing.assert_allclose(last.scores, final.scores)


def test_unknown_model_name_lists_known_ones():
    with pytest.raises(UnknownModelError, match="minilm-sst2"):
        normxlogit.load("no-such-model")


def test_path_that_is_not_a_model(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(UnknownModelError, match="has no config.json, so it holds no model"):
        normxlogit.load(str(tmp_path))


def test_masked_lm_needs_a_mask_or_a_position():
    model = explainable("bert", "masked_lm")
    with pytest.raises(InvalidInputError, match=r"\[MASK\]"):
        model.explain("no mask here", target="good")
    at_position = model.explain("no mask here", target="good", mask_position=2)
    assert at_position.scores.shape == (5,)


def test_language_model_targets():
    model = explainable("llama", "causal_lm")
    with pytest.raises(InvalidInputError, match="single token"):
        model.explain("a film", target="unbelievably")
    with pytest.raises(InvalidInputError, match="vocabulary is too large"):
        model.explain("a film", target="all")
    by_id = model.explain("a film", target=2143)
    by_token = model.explain("a film", target="film")
    np.testing.assert_allclose(by_id.scores, by_token.scores)


def test_no_warning_for_normal_input(classifier):
    with warnings.catch_warnings():
        warnings.simplefilter("error", NormXLogitWarning)
        classifier.explain(["short text", "another one"])


def test_prompted_classifier_on_label_words():
    from ..conftest import build_model, fresh_tokenizer

    model = normxlogit.load(
        (build_model("llama", "causal_lm"), fresh_tokenizer()),
        label_words={"negative": "bad", "positive": "good"},
    )
    assert model.labels == ("negative", "positive")
    explanation = model.explain("a film", method="logat", target="all")
    assert set(explanation.probs) == {"negative", "positive"}
    assert sum(explanation.probs.values()) == pytest.approx(1.0)
    lm = explainable("llama", "causal_lm")
    words = lm.explain("a film", method="logat", target=["bad", "good"])
    np.testing.assert_allclose(explanation.scores, words.scores, rtol=1e-5)
    with pytest.raises(InvalidInputError, match="share a first token"):
        normxlogit.load(
            (build_model("llama", "causal_lm"), fresh_tokenizer()),
            label_words=["good", "good"],
        )


def test_sentence_pairs_keep_segment_ids():
    model = explainable("bert", "regression")
    explanation = model.explain(("a man is dancing", "a person dances"))
    assert explanation.tokens.count("[SEP]") == 2
    assert explanation.value is not None
    batch = model.encode([("a man is dancing", "a person dances")])
    assert batch.token_type_ids is not None and int(batch.token_type_ids.sum()) == 4
    swapped = model.explain(("a person dances", "a man is dancing"))
    assert swapped.value != pytest.approx(explanation.value)


def test_truncation_warning_names_the_text_in_a_long_input(classifier):
    classifier.encoder.max_length = 8
    try:
        with pytest.warns(NormXLogitWarning, match="text 3 has 12 tokens"):
            classifier.explain(["short", "short", "short", "word " * 10], batch_size=2)
    finally:
        classifier.encoder.max_length = 512
