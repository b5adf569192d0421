"""``normxlogit.metrics``: the pure metric functions, on plain arrays."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score

from normxlogit import InvalidInputError
from normxlogit.metrics import (
    aopc,
    auc,
    average_precision,
    calibrate,
    dot_product,
    find_alpha,
    hellinger,
    pearson,
    rescale_unit,
)

PIS = [round(0.05 * k, 2) for k in range(1, 20)]
EXAMPLE_SCORES, EXAMPLE_EVIDENCE = [0.3, 0.1, 0.5, 0.1], [1, 0, 0, 0]


def test_appendix_a4_worked_example():
    assert average_precision(EXAMPLE_SCORES, EXAMPLE_EVIDENCE) == pytest.approx(0.5)
    assert dot_product(EXAMPLE_SCORES, EXAMPLE_EVIDENCE) == pytest.approx(0.3)
    soft = np.exp(EXAMPLE_SCORES) / np.exp(EXAMPLE_SCORES).sum()
    assert dot_product(EXAMPLE_SCORES, EXAMPLE_EVIDENCE, softmax=True) == pytest.approx(soft[0])


def test_average_precision_perfect_ties_and_no_evidence():
    assert average_precision([0.9, 0.8, 0.1, 0.0], [1, 1, 0, 0]) == 1.0
    assert average_precision([0.1, 0.8, 0.9, 0.0], [1, 0, 0, 1]) < 1.0
    rng = np.random.default_rng(0)
    for _ in range(20):  # ties included: agrees with scikit-learn's thresholds
        scores = rng.integers(0, 4, size=12).astype(float)
        evidence = rng.integers(0, 2, size=12)
        evidence[0] = 1
        assert average_precision(scores, evidence) == pytest.approx(
            average_precision_score(evidence, scores)
        )
    assert np.isnan(average_precision([0.2, 0.1], [0, 0]))
    with pytest.raises(InvalidInputError, match="same length"):
        average_precision([0.1, 0.2, 0.3], [1, 0])


def test_dot_product_leaves_out_the_target_position():
    scores, evidence = [5.0, 0.3, 0.1], [0, 1, 0]
    assert dot_product(scores, evidence, exclude=0) == pytest.approx(0.3)
    kept = np.exp([0.3, 0.1]) / np.exp([0.3, 0.1]).sum()
    assert dot_product(scores, evidence, softmax=True, exclude=[0]) == pytest.approx(kept[0])
    assert dot_product(torch.tensor(scores), torch.tensor(evidence)) == pytest.approx(0.3)


def test_hellinger():
    p = np.array([0.2, 0.3, 0.5])
    assert hellinger(p, p) == pytest.approx(0.0, abs=1e-12)
    assert hellinger([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)
    batch = hellinger(np.stack([p, p[::-1]]), p)
    assert batch.shape == (2,) and batch[0] == pytest.approx(0) and 0 < batch[1] < 1


def test_find_alpha_meets_every_pi_on_random_vectors():
    rng = np.random.default_rng(0)
    for length in (3, 10, 57):
        for _ in range(5):
            scores = rng.uniform(0, 1, size=length)
            for source in (scores, rescale_unit(rng.normal(size=length))):
                alphas = find_alpha(source, PIS)
                means = (source[None, :] ** alphas[:, None]).mean(-1)
                np.testing.assert_allclose(means, PIS, atol=1e-3)
                assert np.all(np.diff(alphas) < 0)  # more kept, smaller alpha


def test_find_alpha_vectorised_with_a_mask_agrees_with_single_calls():
    rng = np.random.default_rng(1)
    scores = rng.uniform(0, 1, size=(4, 9))
    mask = rng.uniform(size=(4, 9)) > 0.3
    mask[:, 0] = True
    together = find_alpha(scores, PIS, mask=mask)
    assert together.shape == (4, len(PIS))
    for row in range(4):
        alone = find_alpha(scores[row][mask[row]], PIS)
        np.testing.assert_allclose(together[row], alone, rtol=1e-4)
    single = find_alpha(scores[0], 0.5)
    assert np.ndim(single) == 0


def test_find_alpha_degenerate_vectors():
    constant = np.full(6, 0.4)
    np.testing.assert_allclose(find_alpha(constant, 0.2), np.log(0.2) / np.log(0.4), rtol=1e-4)
    ties = np.array([0.5, 0.5, 0.2, 0.2])
    np.testing.assert_allclose((ties ** find_alpha(ties, 0.3)).mean(), 0.3, atol=1e-3)
    zeros = np.array([0.0, 0.0, 0.6, 0.9])  # at most half can be kept
    alphas = find_alpha(zeros, PIS)
    assert np.all(np.isfinite(alphas)) and np.all(np.diff(alphas) <= 0)
    reach = (zeros[None] ** alphas[:, None]).mean(-1)
    np.testing.assert_allclose(
        reach[np.array(PIS) < 0.45], np.array(PIS)[np.array(PIS) < 0.45], atol=1e-3
    )
    assert np.all(reach <= 0.5 + 1e-9)
    for flat in (np.zeros(5), np.ones(5)):
        assert np.all(np.isfinite(find_alpha(flat, PIS)))
    with pytest.raises(InvalidInputError, match="between 0 and 1"):
        find_alpha(constant, 1.0)
    with pytest.raises(InvalidInputError, match="rescale"):
        find_alpha([0.2, 1.5], 0.5)


def test_rescale_unit_and_calibrate():
    unit = rescale_unit([3.0, -1.0, 1.0])
    assert unit.max() < 1 and unit.min() > 0 and unit.argmax() == 0 and unit.argmin() == 1
    np.testing.assert_allclose(rescale_unit([2.0, 2.0]), [0.5, 0.5])
    masked = rescale_unit([9.0, 1.0, 3.0], mask=[False, True, True])
    assert masked[0] == 0.0 and masked[2] > masked[1]
    keep = calibrate(rescale_unit(np.arange(10.0)), 0.3, mask=np.arange(10) > 0)
    assert keep[0] == 1.0 and keep[1:].mean() == pytest.approx(0.3, abs=1e-3)


def test_curve_summaries_and_pearson():
    assert aopc([0.1, 0.2, 0.6]) == pytest.approx(0.3)
    assert auc([0.0, 1.0]) == pytest.approx(0.5)
    assert auc([1.0, 1.0, 1.0], x=[0.05, 0.5, 0.95]) == pytest.approx(0.9)
    assert pearson([1, 2, 3], [2, 4, 6.5]) > 0.99
    assert np.isnan(pearson([1, 1, 1], [1, 2, 3]))
