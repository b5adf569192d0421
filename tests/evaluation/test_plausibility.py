"""Plausibility metrics (ERASER, ferret) on hand-made scores and rationales."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from sklearn.metrics import auc, precision_recall_curve

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.evaluation.plausibility import (
    auprc,
    chosen_tokens,
    threshold_tokens,
    token_f1,
    token_iou,
    top_k_tokens,
)

from ..conftest import explainable
from .test_evaluation import Recorder


def test_the_definitions_on_a_small_case():
    rationale = np.array([0, 1, 1, 0, 0, 1.0])
    scores = np.array([0.1, 0.9, 0.2, 0.8, 0.0, 0.7])
    chosen = top_k_tokens(scores, 3)  # tokens 1, 3, 5
    assert chosen.tolist() == [0, 1, 0, 1, 0, 1]
    assert token_f1(chosen, rationale) == pytest.approx(2 / 3)  # precision 2/3, recall 2/3
    assert token_iou(chosen, rationale) == pytest.approx(2 / 4)
    precision, recall, _ = precision_recall_curve(rationale, scores)
    assert auprc(scores, rationale) == pytest.approx(auc(recall, precision))
    perfect = np.array([0, 3, 2, 0, 0, 1.0])
    assert auprc(perfect, rationale) == pytest.approx(1.0)
    assert token_f1(top_k_tokens(perfect, 3), rationale) == 1.0
    assert np.isnan(auprc(scores, np.zeros(6)))


def test_discretize_chooses_top_k_as_many_as_the_rationale_or_a_threshold():
    rationale = np.array([0, 1, 1, 0, 0, 1.0])
    scores = np.array([0.1, 0.9, 0.2, 0.8, 0.0, 0.7])
    top_two = chosen_tokens(scores, rationale, normxlogit.Protocol(top_k=2))
    assert top_two.tolist() == [0, 1, 0, 1, 0, 0]
    as_many = chosen_tokens(scores, rationale, normxlogit.Protocol(discretize="rationale"))
    assert as_many.tolist() == [0, 1, 0, 1, 0, 1]  # three tokens, as the rationale has
    precision = recall = 2 / 3
    assert token_f1(as_many, rationale) == pytest.approx(precision) == pytest.approx(recall)
    half = normxlogit.Protocol(discretize="threshold", score_threshold=0.5)
    assert chosen_tokens(scores, rationale, half).tolist() == [0, 1, 0, 1, 0, 1]  # >= 0.45
    most = normxlogit.Protocol(discretize="threshold", score_threshold=0.95)
    assert chosen_tokens(scores, rationale, most).tolist() == [0, 1, 0, 0, 0, 0]
    assert threshold_tokens(np.array([-1.0, 0.0, -0.5]), 0.5).sum() == 0  # no positive peak
    for bad in ({"discretize": "top"}, {"score_threshold": 0}, {"score_threshold": 1.5}):
        with pytest.raises(InvalidInputError):
            normxlogit.Protocol(**bad)


def test_metrics_leave_special_tokens_out_and_take_top_k_from_the_protocol():
    model = explainable("bert", "classification")
    made = model.explain("a gripping film that never lets go")
    tokens = made.tokens  # [CLS] ... [SEP]
    scores = np.arange(len(tokens), dtype=np.float32)[::-1].copy()  # [CLS] scores highest
    item = replace(made, scores=scores)
    rationale = np.zeros(len(tokens))
    rationale[[1, 2]] = 1  # "a", "gripping": the best two tokens once [CLS] is left out
    protocol = normxlogit.Protocol(top_k=2)
    with Recorder(model) as recorder:
        result = normxlogit.evaluate(
            model,
            {"m": [item]},
            ["token_f1", "token_iou", "auprc"],
            evidence=[rationale],
            protocol=protocol,
        )
    assert not recorder.calls  # they read the explanations alone: the model never runs
    values = dict(zip(result.frame["metric"], result.frame["value"], strict=True))
    assert values == {"token_f1": 1.0, "token_iou": 1.0, "auprc": pytest.approx(1.0)}
    wider = normxlogit.evaluate(
        model,
        {"m": [item]},
        ["token_iou"],
        evidence=[rationale],
        protocol=normxlogit.Protocol(top_k=4),
    )
    assert wider.frame["value"].item() == pytest.approx(2 / 4)
    # as many as the rationale has: two tokens again, whatever top_k says
    matched = normxlogit.evaluate(
        model,
        {"m": [item]},
        ["token_f1"],
        evidence=[rationale],
        protocol=normxlogit.Protocol(top_k=4, discretize="rationale"),
    )
    assert matched.frame["value"].item() == 1.0


def test_plausibility_metrics_carry_their_metadata():
    for name in ("token_f1", "token_iou", "auprc"):
        info = normxlogit.evaluation.metric_info(name)
        assert info.needs_evidence and info.higher_is_better and info.value_range == (0, 1)


def test_a_chat_prompts_own_tokens_take_no_part():
    """The system message and template around the text can never be a rationale: a method
    that ranks them first does not lose F1 for it, and one that ranks the text's rationale
    first scores 1."""
    from ..conftest import prompted_llama

    model = prompted_llama(
        {"negative": "bad", "positive": "good"}, "classify the text", "Text: {text} (end)"
    )
    text = "a gripping film"
    made = model.explain(text)
    words = model.encoder.token_words(text)
    rationale = np.array([float(word == 1) for word in words])  # "gripping"
    scores = np.full(len(words), 10.0)  # every prompt token high...
    for position, word in enumerate(words):
        if word is not None:
            scores[position] = 5.0 if word == 1 else 0.0  # ...the rationale first in the text
    item = replace(made, scores=scores.astype(np.float32))
    result = normxlogit.evaluate(
        model,
        {"m": [item]},
        ["token_f1", "auprc"],
        evidence=[rationale],
        protocol=normxlogit.Protocol(top_k=1),
    )
    values = dict(zip(result.frame["metric"], result.frame["value"], strict=True))
    assert values == {"token_f1": 1.0, "auprc": pytest.approx(1.0)}


def test_evidence_words_must_be_whole_numbers_one_list_per_text():
    """A word index such as 2.5 matches no word: refused, not ignored."""
    from normxlogit.workflows import evidence_over_tokens

    model = explainable("bert", "classification")
    texts = ["a gripping film", "a dull film"]
    assert evidence_over_tokens(model, texts, [[1], [np.int64(2), 1]])[1] == [0, 0, 1, 1, 0]
    for words, message in (
        ([[1.5], [0]], r"evidence word index 1\.5 of text 0 is not a whole number"),
        ([[1], ["2"]], r"evidence word index '2' of text 1 is not a whole number"),
        ([[True], [0]], "not a whole number"),
        ([1, 2], r"evidence words of text 0 must be a list of word indices"),
    ):
        with pytest.raises(InvalidInputError, match=message):
            evidence_over_tokens(model, texts, words)


def test_evidence_values_other_than_zero_and_one_are_named():
    model = explainable("bert", "classification")
    made = model.explain("a dull film")
    for bad, shown in (([0, 0.5, 1, 0, 0], "got 0.5"), ([0, np.nan, 1, 0, 0], "got nan")):
        with pytest.raises(InvalidInputError, match=shown):
            normxlogit.evaluate(model, {"m": [made]}, ["token_f1"], evidence=[bad])


def test_ties_and_only_positive_choose_as_the_protocol_says():
    scores = np.array([0.5, -1.0, 0.5, 2.0, 0.0])
    assert top_k_tokens(scores, 2).tolist() == [1, 0, 0, 1, 0]  # the earlier 0.5
    numpy_order = np.zeros(5)
    numpy_order[scores.argsort()[-2:]] = 1  # ferret's order of ties: numpy's, undefined
    assert top_k_tokens(scores, 2, ties="argsort").tolist() == numpy_order.tolist()
    assert top_k_tokens(scores, 5, only_positive=True).tolist() == [1, 0, 1, 1, 0]
    assert top_k_tokens(-np.abs(scores) - 1, 3, only_positive=True).sum() == 0
    negative = np.array([-0.2, -0.1, -0.3])
    rationale = np.array([0, 1, 0.0])
    assert auprc(negative, rationale) == pytest.approx(1.0)  # -0.1 ranks first
    assert auprc(negative, rationale, only_positive=True) == pytest.approx((1 + 1 / 3) / 2)
