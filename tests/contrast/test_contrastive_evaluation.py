"""A contrastive explanation is scored on what it explains: p(target) - p(contrast)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import normxlogit

from ..conftest import explainable

TEXTS = ["a gripping film that never lets go", "dull and slow", "fine, if long"]


@pytest.mark.parametrize("metric", ["comp_cd", "suff_cd"])
def test_probability_metrics_read_the_difference_of_target_and_contrast(metric):
    model = explainable("bert", "classification")
    labels = model.task.labels
    made = model.explain(TEXTS, "normxlogit", target=0, contrast=1)
    # the same scores (so the same perturbations) read as plain target-0 and target-1
    # explanations: comp and suff are linear in the probability they read
    for_a = [replace(e, contrasts=[], targets=[labels[0]]) for e in made]
    for_b = [replace(e, contrasts=[], targets=[labels[1]], label=labels[1]) for e in made]
    result = normxlogit.evaluate(
        model, {"ab": made, "a": for_a, "b": for_b}, metrics=[metric]
    ).frame
    value = {name: group["value"].to_numpy() for name, group in result.groupby("method")}
    np.testing.assert_allclose(value["ab"], value["a"] - value["b"], atol=1e-6)
