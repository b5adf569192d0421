"""LIME: seeded, batch-independent, special tokens untouched."""

from __future__ import annotations

import numpy as np

from ..conftest import explainable


def test_lime_is_seeded_batch_independent_and_skips_special_tokens():
    model = explainable("bert", "classification")
    texts = ["a gripping film that never lets go", "dull"]
    options = {"samples": 64, "batch_size": 16}
    together = model.explain(texts, method="lime", target="all", seed=1, **options)
    alone = model.explain(texts[0], method="lime", target="all", seed=1, **options)
    np.testing.assert_allclose(together[0].scores, alone.scores, atol=1e-5)
    other_seed = model.explain(texts[0], method="lime", target="all", seed=2, **options)
    assert not np.allclose(other_seed.scores, alone.scores)
    special = np.asarray(alone.special)
    assert special.sum() == 2 and (alone.scores[special] == 0).all()
    assert np.abs(alone.scores[~special]).sum() > 0


def test_lime_on_a_decoder():
    model = explainable("llama", "causal_lm")
    explanation = model.explain("a gripping film", method="lime", samples=32, target="film")
    assert explanation.scores.shape == (len(explanation.tokens),)
    assert np.isfinite(explanation.scores).all()
