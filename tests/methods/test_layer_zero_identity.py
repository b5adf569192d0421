"""Layer 0 of a token-to-token map is the identity (no block has mixed the tokens yet):
asked for alone, such a method scores only the reading position, and says so."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from normxlogit.common.errors import NormXLogitWarning

from ..conftest import explainable

TEXT = "the cat sat on the mat"


@pytest.mark.parametrize("method", ["attention", "attention_rollout", "alti", "globenc"])
def test_a_map_method_at_layer_zero_warns_that_the_map_is_the_identity(method):
    model = explainable("bert", "classification")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        explanation = model.explain(TEXT, method, layer=0)
    said = [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]
    assert len(said) == 1 and "which is the identity there" in said[0], said
    scores = np.asarray(explanation.scores)
    assert scores[0] == 1.0 and not scores[1:].any()  # what the warning says


@pytest.mark.parametrize(
    ("method", "layer"), [("attention", 1), ("attention", "all"), ("logat", 0)]
)
def test_another_layer_or_every_layer_or_a_head_method_says_nothing(method, layer):
    model = explainable("bert", "classification")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.explain(TEXT, method, layer=layer)
    assert not [w for w in caught if "identity" in str(w.message)]
