"""``normxlogit.metrics``: the pure metric functions, on plain arrays."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score

from normxlogit.common.errors import InvalidInputError
from normxlogit.metrics import (
    ALPHA_MAX,
    ALPHA_MIN,
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

PIS = np.array([round(0.05 * k, 2) for k in range(1, 20)])  # 0.05, 0.10, ..., 0.95
EXAMPLE_SCORES, EXAMPLE_EVIDENCE = [0.3, 0.1, 0.5, 0.1], [1, 0, 0, 0]


def kept_mean(scores, alphas, mask=None):
    """mean(scores ** alpha) over the counted tokens, alphas [..., P] -> [..., P]."""
    scores = np.asarray(scores, float)[..., None, :]
    mask = np.ones(scores.shape, bool) if mask is None else np.asarray(mask)[..., None, :]
    powered = np.where(mask, scores ** np.asarray(alphas)[..., None], 0.0)
    return powered.sum(-1) / mask.sum(-1)


# --- evidence alignment (NormXLogit paper, appendix A.4) ---


def test_appendix_a4_worked_example():
    assert average_precision(EXAMPLE_SCORES, EXAMPLE_EVIDENCE) == pytest.approx(0.5)
    assert dot_product(EXAMPLE_SCORES, EXAMPLE_EVIDENCE) == pytest.approx(0.3)
    # by hand: e^0.3 / (e^0.3 + 2 e^0.1 + e^0.5) = 1.349859 / 5.208922
    assert dot_product(EXAMPLE_SCORES, EXAMPLE_EVIDENCE, softmax=True) == pytest.approx(
        0.259144, abs=1e-6
    )
    as_tensors = dot_product(torch.tensor(EXAMPLE_SCORES), torch.tensor(EXAMPLE_EVIDENCE))
    assert as_tensors == pytest.approx(0.3)
    bf16 = torch.tensor(EXAMPLE_SCORES, dtype=torch.bfloat16)
    assert average_precision(bf16, torch.tensor(EXAMPLE_EVIDENCE)) == pytest.approx(0.5)


def test_average_precision_perfect_worst_and_hand_computed():
    assert average_precision([0.9, 0.8, 0.1, 0.0], [1, 1, 0, 0]) == 1.0
    assert average_precision([0.9, 0.8, 0.1], [0, 0, 1]) == pytest.approx(1 / 3)
    # evidence at ranks 1 and 4: (1/2)(1/1) + (1/2)(2/4); ranks 1 and 3: ... + (1/2)(2/3)
    assert average_precision([0.9, 0.5, 0.7, 0.1], [1, 0, 0, 1]) == pytest.approx(0.5 + 1 / 4)
    assert average_precision([0.9, 0.5, 0.7, 0.1], [1, 1, 0, 0]) == pytest.approx(0.5 + 1 / 3)
    # the ranking is what counts, not the scale
    assert average_precision([90, 50, 70, 10], [1, 1, 0, 0]) == pytest.approx(0.5 + 1 / 3)


def test_average_precision_ties_form_one_threshold():
    # the tie at the top is one threshold: precision 1/2 there, whatever the order
    assert average_precision([0.5, 0.5, 0.1], [0, 1, 0]) == pytest.approx(0.5)
    assert average_precision([0.5, 0.5, 0.1], [1, 0, 0]) == pytest.approx(0.5)
    rng = np.random.default_rng(0)
    for _ in range(50):  # many ties: agrees with scikit-learn's thresholds
        scores = rng.integers(0, 4, size=12).astype(float)
        evidence = rng.integers(0, 2, size=12)
        evidence[0] = 1
        assert average_precision(scores, evidence) == pytest.approx(
            average_precision_score(evidence, scores)
        )


def test_average_precision_no_evidence_and_bad_shapes():
    assert math.isnan(average_precision([0.2, 0.1], [0, 0]))
    with pytest.raises(InvalidInputError, match="same length"):
        average_precision([0.1, 0.2, 0.3], [1, 0])
    with pytest.raises(InvalidInputError, match="same length"):
        average_precision([[0.1, 0.2]], [[1, 0]])
    with pytest.raises(InvalidInputError, match="empty"):
        average_precision([], [])


def test_dot_product_leaves_out_the_target_position():
    scores, evidence = [5.0, 0.3, 0.1], [0, 1, 0]
    assert dot_product(scores, evidence) == pytest.approx(0.3)
    assert dot_product(scores, evidence, exclude=0) == pytest.approx(0.3)
    assert dot_product(scores, [1, 1, 0], exclude=[0]) == pytest.approx(0.3)
    assert dot_product(scores, [1, 1, 1], exclude=[0, -1]) == pytest.approx(0.3)
    # softmax after the exclusion: e^0.3 / (e^0.3 + e^0.1), not diluted by the 5.0
    by_hand = math.exp(0.3) / (math.exp(0.3) + math.exp(0.1))
    assert dot_product(scores, evidence, softmax=True, exclude=[0]) == pytest.approx(by_hand)
    assert dot_product(scores, evidence, softmax=True) < 0.05
    with pytest.raises(InvalidInputError, match="positions inside"):
        dot_product(scores, evidence, exclude=3)
    with pytest.raises(InvalidInputError, match="every token"):
        dot_product(scores, evidence, exclude=[0, 1, 2])


# --- Hellinger distance ---


def test_hellinger_values_and_batches():
    p = np.array([0.2, 0.3, 0.5])
    assert hellinger(p, p) == pytest.approx(0.0, abs=1e-12)
    assert isinstance(hellinger(p, p), float)
    assert hellinger([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)
    # by hand: sqrt((sqrt(.5) - 1)^2 + .5) / sqrt(2)
    expected = math.sqrt((math.sqrt(0.5) - 1) ** 2 + 0.5) / math.sqrt(2)
    assert hellinger([0.5, 0.5], [1.0, 0.0]) == pytest.approx(expected)
    assert hellinger([1.0, -1e-12], [1.0, 0.0]) == pytest.approx(0.0, abs=1e-5)  # clipped
    batch = hellinger(np.stack([p, p[::-1]]), p)
    assert batch.shape == (2,) and batch[0] == pytest.approx(0) and 0 < batch[1] < 1
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet(np.ones(5), size=(3, 4)), rng.dirichlet(np.ones(5), size=(3, 4))
    both = hellinger(torch.tensor(a), b)
    assert both.shape == (3, 4) and np.all((both >= 0) & (both <= 1))
    assert both[1, 2] == pytest.approx(hellinger(a[1, 2], b[1, 2]))
    with pytest.raises(InvalidInputError, match="broadcast"):
        hellinger([0.5, 0.5], [0.2, 0.3, 0.5])


# --- alpha calibration (pi-Soft eq. 7) ---


@pytest.mark.parametrize("length", [1, 2, 3, 10, 57, 300])
def test_find_alpha_meets_every_pi_on_random_vectors(length):
    rng = np.random.default_rng(length)
    for _ in range(15):
        sources = [
            rng.uniform(0, 1, size=length),
            # piled up near 0 and 1 (but not on them: exact 0 and 1 are the degenerate cases)
            np.clip(rng.beta(0.1, 0.1, size=length), 1e-12, 1 - 1e-12),
            rescale_unit(rng.normal(size=length)),
            rescale_unit(rng.standard_cauchy(size=length)),  # heavy tails
        ]
        for source in sources:
            alphas = find_alpha(source, PIS)
            assert alphas.shape == PIS.shape and np.all(np.isfinite(alphas))
            np.testing.assert_allclose(kept_mean(source, alphas), PIS, atol=1e-3)
            assert np.all(np.diff(alphas) <= 0)  # more kept, smaller alpha


def test_find_alpha_tolerance_is_on_the_mean():
    rng = np.random.default_rng(5)
    scores = rescale_unit(rng.normal(size=(8, 40)))
    goal = np.broadcast_to(PIS, (8, len(PIS)))
    np.testing.assert_allclose(kept_mean(scores, find_alpha(scores, PIS)), goal, atol=1e-6)
    loose = find_alpha(scores, PIS, tol=1e-2)
    np.testing.assert_allclose(kept_mean(scores, loose), goal, atol=1e-2)
    assert not np.allclose(kept_mean(scores, loose), goal, atol=1e-7)


def test_find_alpha_reaches_every_pi_for_scores_just_inside_the_unit_interval():
    edge = np.array([np.nextafter(1.0, 0.0), 1 - 1e-12, 0.5, 1e-300, 5e-324])
    alphas = find_alpha(edge, PIS)
    assert np.all(np.isfinite(alphas)) and np.all(np.diff(alphas) < 0)
    np.testing.assert_allclose(kept_mean(edge, alphas), PIS, atol=1e-3)


def test_find_alpha_shape_convention_and_mask():
    rng = np.random.default_rng(1)
    scores = rng.uniform(0, 1, size=(4, 9))
    mask = rng.uniform(size=(4, 9)) > 0.3
    mask[:, 0] = True
    scores[~mask] = 7.0  # outside the mask: never read (not even the [0, 1] check)
    together = find_alpha(scores, PIS, mask=mask)
    assert together.shape == (4, len(PIS))
    for row in range(4):
        alone = find_alpha(scores[row][mask[row]], PIS)
        np.testing.assert_allclose(together[row], alone, rtol=1e-9)
        np.testing.assert_allclose(kept_mean(scores[row], alone, mask[row]), PIS, atol=1e-3)
    # scalar pi: the leading shape; one vector: a float
    assert find_alpha(scores, 0.5, mask=mask).shape == (4,)
    np.testing.assert_allclose(find_alpha(scores, 0.5, mask=mask), together[:, 9])
    single = find_alpha(scores[0][mask[0]], 0.5)
    assert isinstance(single, float) and single == pytest.approx(together[0, 9], rel=1e-9)
    # pi [B, P]: one list of targets per row
    per_row = np.stack([PIS[:3], PIS[3:6], PIS[6:9], PIS[9:12]])
    rows = find_alpha(scores, per_row, mask=mask)
    assert rows.shape == (4, 3)
    np.testing.assert_allclose(rows, [together[r, 3 * r : 3 * r + 3] for r in range(4)])
    # deeper leading axes and a torch mask
    deep = find_alpha(np.stack([scores, scores]), PIS, mask=torch.tensor(np.stack([mask, mask])))
    assert deep.shape == (2, 4, len(PIS)) and np.allclose(deep[1], together)
    with pytest.raises(InvalidInputError, match="broadcast"):
        find_alpha(scores, np.full((3, 2), 0.5), mask=mask)
    with pytest.raises(InvalidInputError, match="mask"):
        find_alpha(scores, 0.5, mask=mask[:, :4])


def test_find_alpha_ties_and_constant_vectors():
    ties = np.array([0.5, 0.5, 0.2, 0.2])
    np.testing.assert_allclose(kept_mean(ties, find_alpha(ties, PIS)), PIS, atol=1e-3)
    for c in (0.01, 0.4, 0.999):
        constant = np.full(6, c)
        alphas = find_alpha(constant, PIS)
        np.testing.assert_allclose(alphas, np.log(PIS) / np.log(c), rtol=1e-4)
        assert np.all(np.diff(alphas) < 0)


def test_find_alpha_zeros_cap_the_reachable_mean():
    zeros = np.array([0.0, 0.0, 0.6, 0.9])  # at most half can be kept
    alphas = find_alpha(zeros, PIS)
    assert np.all(np.isfinite(alphas)) and np.all(np.diff(alphas) <= 0)
    reach = kept_mean(zeros, alphas)
    low = PIS < 0.5
    np.testing.assert_allclose(reach[low], PIS[low], atol=1e-3)
    np.testing.assert_allclose(alphas[PIS > 0.5], ALPHA_MIN)  # nearest reachable: smallest
    np.testing.assert_allclose(reach[~low], 0.5, atol=1e-6)
    np.testing.assert_allclose(find_alpha(np.zeros(5), PIS), ALPHA_MIN)


def test_find_alpha_ones_floor_the_reachable_mean():
    ones = np.array([1.0, 1.0, 0.5, 0.3])  # at least half is always kept
    alphas = find_alpha(ones, PIS)
    assert np.all(np.isfinite(alphas)) and np.all(np.diff(alphas) <= 0)
    reach = kept_mean(ones, alphas)
    high = PIS > 0.5
    np.testing.assert_allclose(reach[high], PIS[high], atol=1e-3)
    np.testing.assert_allclose(alphas[PIS < 0.5], ALPHA_MAX)  # nearest reachable: largest
    np.testing.assert_allclose(reach[~high], 0.5, atol=1e-6)
    np.testing.assert_allclose(find_alpha(np.ones(5), PIS), ALPHA_MAX)


def test_find_alpha_nothing_counted_and_nan_outside_the_mask():
    scores = np.array([[0.2, 0.7, np.nan], [0.1, 0.2, 0.3]])
    mask = np.array([[True, True, False], [False, False, False]])
    alphas = find_alpha(scores, PIS, mask=mask)
    assert np.all(np.isfinite(alphas))
    np.testing.assert_allclose(alphas[1], ALPHA_MIN)  # a row with nothing to calibrate
    np.testing.assert_allclose(kept_mean(scores[0, :2], alphas[0]), PIS, atol=1e-3)


@pytest.mark.parametrize("pi", [0.0, 1.0, -0.1, 1.5, float("nan"), [0.5, 1.0]])
def test_find_alpha_rejects_pi_outside_the_open_unit_interval(pi):
    with pytest.raises(InvalidInputError, match="between 0 and 1"):
        find_alpha([0.2, 0.4], pi)


def test_find_alpha_rejects_scores_it_cannot_use():
    with pytest.raises(InvalidInputError, match="rescale"):
        find_alpha([0.2, 1.5], 0.5)
    with pytest.raises(InvalidInputError, match="rescale"):
        find_alpha([-0.2, 0.5], 0.5)
    with pytest.raises(InvalidInputError, match="NaN"):
        find_alpha([0.2, float("nan")], 0.5)
    with pytest.raises(InvalidInputError, match="axis"):
        find_alpha(0.5, 0.5)


def test_calibrate_keeps_pi_on_average_and_the_masked_tokens_always():
    mask = np.arange(10) > 0
    keep = calibrate(rescale_unit(np.arange(10.0), mask=mask), 0.3, mask=mask)
    assert keep.shape == (10,) and keep[0] == 1.0
    assert keep[1:].mean() == pytest.approx(0.3, abs=1e-3)
    assert np.all(np.diff(keep[1:]) > 0)  # the order of the scores survives
    rng = np.random.default_rng(3)
    scores = rescale_unit(rng.normal(size=(3, 12)))
    many = calibrate(scores, PIS)
    assert many.shape == (3, len(PIS), 12)
    np.testing.assert_allclose(many.mean(-1), np.broadcast_to(PIS, (3, len(PIS))), atol=1e-3)
    np.testing.assert_allclose(many[:, 4], calibrate(scores, PIS[4]))


def test_rescale_unit_range_constant_and_mask():
    unit = rescale_unit([3.0, -1.0, 1.0])
    np.testing.assert_allclose(unit, [1 - 1e-6, 1e-6, 0.5])
    np.testing.assert_allclose(rescale_unit([3.0, -1.0, 1.0], eps=0.0), [1.0, 0.0, 0.5])
    np.testing.assert_allclose(rescale_unit([2.0, 2.0]), [0.5, 0.5])
    masked = rescale_unit([9.0, 1.0, 3.0], mask=[False, True, True])
    np.testing.assert_allclose(masked, [0.0, 1e-6, 1 - 1e-6])
    batch = rescale_unit(torch.tensor([[1.0, 2.0, 3.0], [4.0, 4.0, 4.0]]))
    np.testing.assert_allclose(batch, [[1e-6, 0.5, 1 - 1e-6], [0.5, 0.5, 0.5]])
    one_counted = rescale_unit([5.0, np.nan], mask=[True, False])
    np.testing.assert_allclose(one_counted, [0.5, 0.0])
    with pytest.raises(InvalidInputError, match="eps"):
        rescale_unit([1.0, 2.0], eps=0.5)
    with pytest.raises(InvalidInputError, match="NaN"):
        rescale_unit([1.0, np.nan])


# --- curve summaries and accuracy ---


def test_aopc_is_the_mean_of_the_points():
    assert aopc([0.1, 0.2, 0.6]) == pytest.approx(0.3)
    assert aopc(np.linspace(0.1, 0.9, 9)) == pytest.approx(0.5)
    assert math.isnan(aopc([0.1, np.nan]))


def test_auc_by_trapezoids():
    assert auc([0.0, 1.0]) == pytest.approx(0.5)
    assert auc([0.0, 1.0, 0.0]) == pytest.approx(0.5)
    assert auc([1.0, 1.0, 1.0], x=[0.05, 0.5, 0.95]) == pytest.approx(0.9)
    # uneven steps: 0.1 * (0 + 1) / 2 + 0.9 * (1 + 1) / 2
    assert auc([0.0, 1.0, 1.0], x=[0.0, 0.1, 1.0]) == pytest.approx(0.95)
    assert auc([0.7]) == pytest.approx(0.7)
    assert math.isnan(auc([0.1, np.nan, 0.3]))
    with pytest.raises(InvalidInputError, match="same length"):
        auc([0.1, 0.2], x=[0.0, 0.5, 1.0])


def test_pearson():
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=30), rng.normal(size=30)
    assert pearson(a, b) == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert pearson(torch.tensor(a), b) == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))
    assert math.isnan(pearson([1.0], [2.0]))
    with pytest.raises(InvalidInputError, match="shape"):
        pearson([1, 2, 3], [1, 2])
