"""Round 29 (models): value zeroing in half precision, NaN scores in half precision, and a
causal LM whose output layer has more rows than its tokenizer has tokens."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch
import transformers as T

import normxlogit
from normxlogit.common.errors import UnsupportedModelError
from normxlogit.methods import AttributionMethod, register_method

from .conftest import DECODER, build_model, fresh_tokenizer, tokenizer

TEXTS = ["the film is good and the acting is wonderful .", "dull ."]


def _bert(dtype: str):
    return normxlogit.load((build_model("bert", "classification"), fresh_tokenizer()), dtype=dtype)


# P01 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("options", [{}, {"rollout": False}])
def test_p01_value_zeroing_runs_in_half_precision(dtype, options):
    half = _bert(dtype).explain(TEXTS, method="value_zeroing", **options)
    full = _bert("float32").explain(TEXTS, method="value_zeroing", **options)
    for got, want in zip(half, full, strict=True):
        assert got.settings["dtype"] == dtype
        assert np.isfinite(got.scores).all()
        if options.get("rollout", True):  # one block's own map of a random model is
            # within bfloat16's rounding of its clean output; the rollout is not
            np.testing.assert_allclose(got.scores, want.scores, atol=0.05)


# P02 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["alti", "decompx", "globenc"])
def test_p02_decompositions_stay_finite_in_float16_in_a_padded_batch(method):
    """A short text padded beside a long one: its padding rows summed to 0 in float16 and
    were divided by a floor that rounds to 0 there (NaN through the whole rollout)."""
    half = _bert("float16").explain(TEXTS, method=method)
    full = _bert("float32").explain(TEXTS, method=method)
    for got, want in zip(half, full, strict=True):
        assert np.isfinite(got.scores).all(), (method, got.text, got.scores)
        assert np.corrcoef(got.scores, want.scores)[0, 1] > 0.9


@pytest.fixture
def nan_method(registries):
    """A registered method (a user's own) whose scores are all NaN."""

    @dataclass
    class NanRound29(AttributionMethod):
        name: ClassVar[str] = "nan_round29"
        description: ClassVar[str] = "NaN everywhere"

        def attribute(self, model, forward, targets, layers):
            texts, tokens = forward.batch.input_ids.shape
            shape = (texts, len(layers.indices), tokens, targets.columns.shape[1])
            return torch.full(shape, float("nan"))

    register_method(NanRound29, replace=True)
    return "nan_round29"


@pytest.mark.parametrize(
    ("dtype", "wider"), [("float16", "float32 or bfloat16"), ("bfloat16", "float32")]
)
def test_p02_nan_scores_in_half_precision_are_refused_naming_method_dtype_and_fix(
    nan_method, dtype, wider
):
    with pytest.raises(UnsupportedModelError) as caught:
        _bert(dtype).explain(TEXTS, method=nan_method)
    message = str(caught.value)
    assert "\n" not in message
    assert f"method {nan_method!r}" in message
    assert f"in {dtype}" in message
    assert f"load the model in {wider}" in message


def test_p02_nan_scores_in_float32_still_only_warn(nan_method):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        made = _bert("float32").explain(TEXTS, method=nan_method)
    assert not np.isfinite(made[0].scores).all()
    assert any("gave NaN or infinite scores" in str(w.message) for w in seen)


# P03 ------------------------------------------------------------------------------------

EXTRA = 8  # output rows past the tokenizer's last entry


def _padded_lm():
    """A tiny LLaMA whose output layer has ``EXTRA`` rows more than the tokenizer, made to
    predict the first of them (an untrained padding row)."""
    size = len(tokenizer())
    config = T.LlamaConfig(vocab_size=size + EXTRA, **DECODER)
    torch.manual_seed(0)
    model = T.LlamaForCausalLM(config).eval()
    bump = torch.zeros(size + EXTRA)
    bump[size] = 100.0
    model.lm_head.register_forward_hook(lambda module, args, output: output + bump)
    return normxlogit.load((model, fresh_tokenizer())), size


def test_p03_a_predicted_padding_id_is_named_by_its_id():
    model, size = _padded_lm()
    made = model.explain("the film is good", method="gradient_x_input")
    assert made.label == f"<id {size}>"
    assert np.isfinite(made.scores).all()


def test_p03_a_real_target_and_the_padding_id_by_name_are_explained():
    model, size = _padded_lm()
    real = model.explain("the film is good", method="gradient_x_input", target="good")
    assert real.targets == ["good"] or real.settings["target"] == ["good"]
    again = model.explain("the film is good", method="gradient_x_input", target=f"<id {size}>")
    assert again.settings["target"] == [f"<id {size}>"]


def test_p03_a_generation_of_padding_ids_names_them():
    model, size = _padded_lm()
    made = model.explain(
        "the film is good", method="gradient_x_input", generate=True, max_new_tokens=2
    )
    assert made.predicted[0] == f"<id {size}>"
    assert f"<id {size}>" in made.tokens
    assert all(isinstance(text, str) for text in made.token_texts)
