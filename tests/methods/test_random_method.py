"""The seeded random baseline."""

from __future__ import annotations

import numpy as np
import pytest

from normxlogit.metrics import average_precision, dot_product

from ..conftest import explainable


def test_random_is_seeded_and_independent_of_batching():
    model = explainable("bert", "classification")
    texts = ["a gripping film", "dull but fine in the end"]
    first = model.explain(texts, method="random", seed=3)
    again = model.explain(texts[1], method="random", seed=3)
    other = model.explain(texts[1], method="random", seed=4)
    np.testing.assert_array_equal(first[1].scores, again.scores)
    assert not np.allclose(again.scores, other.scores)
    assert ((first[0].scores >= 0) & (first[0].scores < 1)).all()
    all_labels = model.explain(texts[0], method="random", seed=3, target="all")
    assert all_labels.scores.shape == (5, 3)
    np.testing.assert_array_equal(all_labels.scores[:, 0], all_labels.scores[:, 2])


def test_equal_scores_tie_every_token_so_ap_is_the_evidence_share():
    """``equal=True``, the NormXLogit paper's evidence baseline: every real token scores 1,
    so the average precision is the share of evidence tokens and the softmax dot product
    that share too."""
    model = explainable("bert", "classification")
    texts = ["a gripping film", "dull but fine in the end"]
    for explanation in model.explain(texts, method="random", equal=True, layer="all"):
        np.testing.assert_array_equal(explanation.scores, 1.0)
    evidence = np.array([0, 1, 0, 0, 1, 0, 0])
    scores = np.ones(7)
    assert average_precision(scores, evidence) == pytest.approx(2 / 7)
    assert dot_product(scores, evidence, softmax=True) == pytest.approx(2 / 7)
