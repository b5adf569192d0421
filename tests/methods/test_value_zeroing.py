"""Value zeroing: batched block re-runs equal zeroing inside a full forward pass, and the
reading row computed alone equals the whole maps' reading row."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit import InvalidInputError, UnsupportedModelError
from normxlogit.methods import get_method, value_zeroing
from normxlogit.methods.base import Layers, rows_at
from normxlogit.methods.value_zeroing import (
    COSINE_FORMS,
    cosine_distance,
    mixing_maps,
    reading_rows,
    zeroed_values,
)
from normxlogit.model.families.heads import module_at
from normxlogit.model.targets import Targets

from ..conftest import assert_padding_sides_agree, build_model, explainable, fresh_tokenizer

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
    # explain's batch_size (texts per pass) beside a built method: value zeroing has a
    # batch_size of its own, so a method name with it would be ambiguous
    method = normxlogit.get_method("value_zeroing")
    together = model.explain(TEXTS, method=method, layer="all", batch_size=2)
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


# ----------------------------------------------------------------- the reading row alone

#: mixed lengths, a [MASK] in each (a masked LM reads there, not at the first token)
MIXED = [
    "a gripping [MASK] film that never lets go , not for a minute",
    "dull [MASK]",
    "one [MASK] 3",
]
#: (family, head, padding side): an encoder reading [CLS], one reading [MASK], decoders
ROW_CASES = [
    ("bert", "classification", "right"),
    ("roberta", "masked_lm", "right"),
    ("gpt2", "classification", "right"),
    ("llama", "causal_lm", "left"),
]


@functools.cache
def _model(family: str, head: str, side: str = "right", dtype=torch.float64):
    """A tiny model in ``dtype`` (float64: both paths exact, so any gap is a mistake)."""
    tokenizer = fresh_tokenizer()
    tokenizer.padding_side = side
    return normxlogit.load((build_model(family, head).to(dtype), tokenizer))


def _both_rows(model, cosine: str, texts=MIXED) -> tuple[torch.Tensor, torch.Tensor]:
    """Each block's reading row ``[B, L, T]``: computed alone, and read from the whole maps."""
    batch = model.encode(texts)
    forward = model.forward(batch)
    options = dict(min_distance=0.0, last_block_normed=True, cosine=cosine)
    with torch.no_grad():
        alone = reading_rows(model, forward, **options)
        whole = mixing_maps(model, forward, 64, **options)
    return alone, rows_at(whole, batch.reading_positions).to(alone.dtype)


@pytest.mark.parametrize(("family", "head", "side"), ROW_CASES)
@pytest.mark.parametrize("cosine", COSINE_FORMS)
def test_reading_rows_are_the_whole_maps_reading_rows(family, head, side, cosine):
    alone, whole = _both_rows(_model(family, head, side), cosine)
    torch.testing.assert_close(alone, whole, atol=1e-10, rtol=0)


@pytest.mark.parametrize(("family", "head", "side"), ROW_CASES)
@pytest.mark.parametrize("cosine", COSINE_FORMS)
def test_in_float32_the_reading_rows_are_as_exact_as_the_whole_maps(family, head, side, cosine):
    """Against float64 truth, the reading rows err no more than the whole maps (float32
    rounding: a tiny random model's distances are near it, so each path has its own)."""
    truth = _both_rows(_model(family, head, side), cosine)[1]
    alone, whole = _both_rows(_model(family, head, side, torch.float32), cosine)
    error_alone = float((alone.double() - truth).abs().max())
    error_whole = float((whole.double() - truth).abs().max())
    assert error_alone <= 2 * error_whole + 1e-7, (error_alone, error_whole)
    if cosine == "stable" and family in ("gpt2", "llama"):  # distances well above rounding
        torch.testing.assert_close(alone, whole, atol=1e-6, rtol=0)


OPTIONS = [
    {"rollout": False},
    {"rollout": False, "layer_mean": True},
    {"rollout": False, "min_distance": 1e-3, "last_block_normed": True},
    {"preset": "pi-soft"},
]


@pytest.mark.parametrize(("family", "head", "side"), ROW_CASES[::3])
@pytest.mark.parametrize(
    "options", OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items())
)
def test_every_option_reads_the_same_scores_from_the_row_alone(family, head, side, options):
    """Scores ``[B, L, T, K]`` at every layer (float64: explain itself runs in float32 or
    half precision, so the method is called as explain calls it)."""
    model = _model(family, head, side)
    forward = model.forward(model.encode(MIXED))
    targets = Targets(forward.logits.argmax(-1, keepdim=True), [["p"]] * len(MIXED), True)
    layers = Layers.resolve("all", model.num_layers)
    options = dict(options)
    preset = options.pop("preset", None)
    alone = get_method("value_zeroing", preset=preset, **options)
    whole = get_method("value_zeroing", preset=preset, **options)
    whole.whole_maps = True
    with torch.no_grad():
        fast = alone.attribute(model, forward, targets, layers)
        slow = whole.attribute(model, forward, targets, layers)
    torch.testing.assert_close(fast, slow.to(fast.dtype), atol=1e-10, rtol=0)


def test_explain_reads_the_row_alone_in_float32():
    """Through explain, the pi-Soft preset on a decoder, texts of mixed lengths; with the
    stable cosine (Inseq's float32 ``1 - cos`` cancels to a few 1e-6 either way: see
    :func:`test_in_float32_the_reading_rows_are_as_exact_as_the_whole_maps`)."""
    model = explainable("llama", "causal_lm")
    options = {"preset": "pi-soft", "cosine": "stable"}
    whole = get_method("value_zeroing", **options)
    whole.whole_maps = True
    fast = model.explain(MIXED, method="value_zeroing", layer="all", **options)
    for row, maps in zip(fast, model.explain(MIXED, method=whole, layer="all"), strict=True):
        np.testing.assert_allclose(row.scores, maps.scores, atol=1e-6, rtol=0)


def test_the_reading_row_reruns_each_block_once():
    model = explainable("llama", "causal_lm")
    batch = model.encode(MIXED)
    forward = model.forward(batch)
    calls = []
    hooks = [b.register_forward_hook(lambda *_: calls.append(1)) for b in model.blocks]
    try:
        reading_rows(model, forward)
    finally:
        for hook in hooks:
            hook.remove()
    assert len(calls) == 2 * len(model.blocks)  # the clean pass and one re-run


def test_rollout_and_models_outside_the_attention_interface_keep_the_whole_maps(monkeypatch):
    deberta = explainable("deberta-v2", "classification")
    assert reading_rows(deberta, deberta.forward(deberta.encode(MIXED))) is None
    whole = get_method("value_zeroing", rollout=False)
    whole.whole_maps = True
    fallback = deberta.explain(MIXED, method="value_zeroing", rollout=False, layer="all")
    for one, other in zip(fallback, deberta.explain(MIXED, method=whole, layer="all"), strict=True):
        np.testing.assert_array_equal(one.scores, other.scores)

    def refuse(*args, **kwargs):
        raise AssertionError("a rollout multiplies whole maps")

    monkeypatch.setattr(value_zeroing, "reading_rows", refuse)
    explainable("llama", "causal_lm").explain(MIXED, method="value_zeroing", layer="all")
