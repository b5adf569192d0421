"""Value zeroing: batched block re-runs equal zeroing inside a full forward pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from normxlogit import InvalidInputError, UnsupportedModelError
from normxlogit.methods.value_zeroing import cosine_distance, zeroed_values
from normxlogit.model.families.heads import module_at

from ..conftest import assert_padding_sides_agree, explainable

TEXTS = ["a gripping [MASK] film that never lets go", "dull [MASK]"]
FAMILIES = [
    ("bert", "classification"),
    ("deberta-v2", "regression"),
    ("mpnet", "masked_lm"),
    ("distilbert", "classification"),
    ("gpt2", "classification"),
    ("llama", "causal_lm"),
]


@pytest.mark.parametrize(("family", "head"), FAMILIES)
def test_rows_are_distributions_and_batch_equals_single(family, head):
    model = explainable(family, head)
    together = model.explain(TEXTS, method="value_zeroing", layer="all", batch_size=2)
    for text, joint in zip(TEXTS, together, strict=True):
        np.testing.assert_allclose(joint.scores.sum(-1), 1.0, atol=1e-5)
        alone = model.explain(text, method="value_zeroing", layer="all")
        np.testing.assert_allclose(alone.scores, joint.scores, atol=1e-5)


@pytest.mark.parametrize(("family", "head"), [("bert", "classification"), ("llama", "causal_lm")])
def test_block_maps_equal_zeroing_inside_the_whole_model(family, head):
    model = explainable(family, head)
    text = "a gripping film that never lets go"
    per_layer = model.explain(text, method="value_zeroing", layer="all", rollout=False)
    for layer in range(1, model.num_layers + 1):
        distances = _distances_in_the_whole_model(model, text, layer)
        expected = distances / distances.sum()
        np.testing.assert_allclose(per_layer.scores[layer], expected, rtol=1e-3, atol=1e-6)


def _distances_in_the_whole_model(model, text: str, layer: int) -> np.ndarray:
    """Cosine distances of the reading position's output of block ``layer`` when each
    token's value vector is zeroed inside a full forward pass."""
    batch = model.encode([text])
    reading = int(batch.reading_positions[0])
    every = range(model.num_layers + 1)
    clean = model.forward(batch, every).state(layer)[0, reading]
    values = module_at(model.blocks[layer - 1], model.family.value_projection)
    distances = []
    for token in range(batch.input_ids.shape[1]):
        with zeroed_values(values, torch.tensor([token]), model.family.value_part):
            altered = model.forward(batch, every).state(layer)
        distances.append(float(cosine_distance(altered[0, reading], clean)))
    return np.asarray(distances)


def test_rollout_multiplies_the_maps():
    model = explainable("bert", "classification")
    text = "a gripping film"
    rolled = model.explain(text, method="value_zeroing", layer="all").scores
    own = model.explain(text, method="value_zeroing", layer="all", rollout=False).scores
    np.testing.assert_allclose(rolled[1], own[1], atol=1e-6)  # one layer: nothing to roll
    assert not np.allclose(rolled[2], own[2])


def test_layer_mean_averages_the_blocks_own_maps():
    """Inseq's reading of per-layer scores (the pi-Soft preset): layer l is the mean of
    blocks 1..l's own maps, so the last layer is the mean over every block."""
    model = explainable("llama", "causal_lm")
    text = "a gripping film that never lets go"
    own = model.explain(text, method="value_zeroing", layer="all", rollout=False).scores
    mean = model.explain(
        text, method="value_zeroing", layer="all", rollout=False, layer_mean=True
    ).scores
    np.testing.assert_allclose(mean[0], own[0])  # layer 0: the identity row
    for layer in range(1, model.num_layers + 1):
        np.testing.assert_allclose(mean[layer], own[1 : layer + 1].mean(0), atol=1e-6)
    with pytest.raises(InvalidInputError, match="set rollout=false"):
        model.explain(text, method="value_zeroing", layer_mean=True)


def test_min_distance_drops_small_distances_before_rows_are_normalised():
    model = explainable("llama", "causal_lm")
    text = "a gripping film that never lets go"
    last = model.num_layers
    distances = _distances_in_the_whole_model(model, text, last)
    ordered = np.sort(distances)
    middle = len(ordered) // 2  # a threshold halfway between two distances: no ties
    threshold = float(ordered[middle - 1] + ordered[middle]) / 2
    kept = np.where(distances < threshold, 0.0, distances)
    scores = model.explain(
        text, method="value_zeroing", layer=last, rollout=False, min_distance=threshold
    ).scores
    assert (scores == 0).sum() >= middle
    np.testing.assert_allclose(scores, kept / kept.sum(), rtol=1e-3, atol=1e-6)
    with pytest.raises(InvalidInputError, match="min_distance must lie in"):
        model.explain(text, method="value_zeroing", min_distance=1.5)


def test_padding_side_does_not_matter():
    assert_padding_sides_agree(
        "llama", "classification", TEXTS, method="value_zeroing", layer="all"
    )


@pytest.mark.parametrize("family", ["gpt-neox", "albert"])
def test_families_without_a_value_slot_are_refused(family):
    model = explainable(family, "classification")
    with pytest.raises(UnsupportedModelError, match="value zeroing needs"):
        model.explain("a film", method="value_zeroing")
