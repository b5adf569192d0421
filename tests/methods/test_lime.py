"""LIME: seeded, batch-independent, special tokens untouched."""

from __future__ import annotations

import numpy as np

import normxlogit

from ..conftest import explainable


def test_lime_is_seeded_batch_independent_and_skips_special_tokens():
    model = explainable("bert", "classification")
    texts = ["a gripping film that never lets go", "dull"]
    # LIME's own batch_size (perturbations per pass) is set on the built method: explain's
    # batch_size keyword is the texts per pass
    seeded = normxlogit.get_method("lime", samples=64, batch_size=16, seed=1)
    together = model.explain(texts, seeded, target="all")
    alone = model.explain(texts[0], seeded, target="all")
    assert alone.settings["batch_size"] == 16
    np.testing.assert_allclose(together[0].scores, alone.scores, atol=1e-5)
    reseeded = normxlogit.get_method("lime", samples=64, batch_size=16, seed=2)
    other_seed = model.explain(texts[0], reseeded, target="all")
    assert not np.allclose(other_seed.scores, alone.scores)
    special = np.asarray(alone.special)
    assert special.sum() == 2 and (alone.scores[special] == 0).all()
    assert np.abs(alone.scores[~special]).sum() > 0


def test_lime_on_a_decoder():
    model = explainable("llama", "causal_lm")
    explanation = model.explain("a gripping film", method="lime", samples=32, target="film")
    assert explanation.scores.shape == (len(explanation.tokens),)
    assert np.isfinite(explanation.scores).all()
