"""Explanations are scored only with the weights that made them (issue 41: a different
model with the same tokenizer and class name was scored silently)."""

from __future__ import annotations

import pytest
import torch

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.evaluation.hard import perturbed_tokens
from tests.conftest import build_model, fresh_tokenizer

TEXTS = ["a quietly moving film", "the plot never comes together"]
METRICS = ["comp_cd", "suff_cd"]


def _model(seed: int, dtype: str | None = None):
    network = build_model("bert", "classification", seed=seed)
    return normxlogit.load((network, fresh_tokenizer()), dtype=dtype)


def test_other_weights_with_the_same_name_and_tokenizer_are_refused():
    made_with, other = _model(0), _model(1)
    assert made_with.name == other.name  # names do not tell them apart
    explanations = made_with.explain(TEXTS)
    assert explanations[0].model_signature.startswith("float32:")
    with pytest.raises(InvalidInputError, match="made by other weights than this model's"):
        normxlogit.evaluate(other, explanations, METRICS, progress=False)
    result = normxlogit.evaluate(made_with, explanations, METRICS, progress=False)
    assert set(result.frame["instance"]) == {0, 1}


def test_the_stamp_survives_saving_and_old_files_without_it_still_load(tmp_path):
    made_with, other = _model(0), _model(1)
    explanations = made_with.explain(TEXTS)
    normxlogit.save_explanations(explanations, tmp_path / "e.json")
    loaded = normxlogit.load_explanations(tmp_path / "e.json")
    assert [e.model_signature for e in loaded] == [e.model_signature for e in explanations]
    with pytest.raises(InvalidInputError, match="other weights"):
        normxlogit.evaluate(other, loaded, METRICS, progress=False)
    unstamped = [e.to_dict() for e in explanations]
    for row in unstamped:
        row.pop("model_signature")
    old = [normxlogit.Explanation.from_dict(row) for row in unstamped]
    assert old[0].model_signature == ""
    normxlogit.evaluate(other, old, METRICS, progress=False)  # nothing to compare: scored


def test_another_precision_is_not_compared():
    full = _model(0)
    half = _model(0, dtype="bfloat16")
    assert half.weights_signature().startswith("bfloat16:")
    normxlogit.evaluate(full, half.explain(TEXTS), METRICS, progress=False)


def test_the_signature_follows_the_weights():
    model = _model(0)
    first = model.weights_signature()
    assert model.weights_signature() == first
    assert _model(0).weights_signature() == first  # the same weights, loaded again
    explanations = model.explain(TEXTS)
    with torch.no_grad():
        model.model.classifier.weight.add_(0.5)
    assert model.weights_signature() != first
    with pytest.raises(InvalidInputError, match="other weights"):
        normxlogit.evaluate(model, explanations, METRICS, progress=False)
    with pytest.raises(InvalidInputError, match="other weights"):
        perturbed_tokens(model, explanations[0], "comp_cd", 0.5)


def test_generation_steps_are_checked_too():
    made_with = normxlogit.load((build_model("llama", "causal_lm", seed=0), fresh_tokenizer()))
    other = normxlogit.load((build_model("llama", "causal_lm", seed=1), fresh_tokenizer()))
    generation = made_with.explain("the weather today is", generate=True, max_new_tokens=3)
    assert generation.model_signature == made_with.weights_signature()
    assert generation.step(0).model_signature == generation.model_signature
    with pytest.raises(InvalidInputError, match="other weights"):
        normxlogit.evaluate(other, [generation], ["soft_nc"], progress=False)
