"""The seeded random baseline."""

from __future__ import annotations

import numpy as np

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
