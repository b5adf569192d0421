"""Value zeroing: batched block re-runs equal zeroing inside a full forward pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from normxlogit import UnsupportedModelError
from normxlogit.families.heads import module_at
from normxlogit.methods.value_zeroing import cosine_distance, zeroed_values

from .conftest import assert_padding_sides_agree, explainable

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
    batch = model.encode([text])
    length = batch.input_ids.shape[1]
    reading = int(batch.reading_positions[0])
    for layer, block in enumerate(model.blocks, start=1):
        clean = model.forward(batch, range(model.num_layers + 1)).state(layer)[0, reading]
        distances = []
        for token in range(length):
            values = module_at(block, model.family.value_projection)
            with zeroed_values(values, torch.tensor([token]), model.family.value_part):
                altered = model.forward(batch, range(model.num_layers + 1)).state(layer)
            distances.append(float(cosine_distance(altered[0, reading], clean)))
        expected = np.asarray(distances) / sum(distances)
        np.testing.assert_allclose(per_layer.scores[layer], expected, rtol=1e-3, atol=1e-6)


def test_rollout_multiplies_the_maps():
    model = explainable("bert", "classification")
    text = "a gripping film"
    rolled = model.explain(text, method="value_zeroing", layer="all").scores
    own = model.explain(text, method="value_zeroing", layer="all", rollout=False).scores
    np.testing.assert_allclose(rolled[1], own[1], atol=1e-6)  # one layer: nothing to roll
    assert not np.allclose(rolled[2], own[2])


def test_padding_side_does_not_matter():
    assert_padding_sides_agree(
        "llama", "classification", TEXTS, method="value_zeroing", layer="all"
    )


@pytest.mark.parametrize("family", ["gpt-neox", "albert"])
def test_families_without_a_value_slot_are_refused(family):
    model = explainable(family, "classification")
    with pytest.raises(UnsupportedModelError, match="value zeroing needs"):
        model.explain("a film", method="value_zeroing")
