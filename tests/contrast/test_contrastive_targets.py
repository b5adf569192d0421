"""Contrastive explanations ("why A rather than B") equal what they say by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.explanations.explanation import Explanation
from normxlogit.methods.gradient import reading_output, word_embeddings

from ..conftest import explainable

TEXT = "a gripping film that never lets go"


def test_normxlogit_contrast_is_the_difference_of_its_label_columns():
    model = explainable("bert", "classification")
    every = model.explain(TEXT, "normxlogit", target="all")
    one = model.explain(TEXT, "normxlogit", target=0, contrast=2)
    np.testing.assert_allclose(one.scores, every.scores[:, 0] - every.scores[:, 2], atol=1e-6)
    assert one.contrasts == [model.task.labels[2]]
    assert one.settings["contrast"] == [model.task.labels[2]]


def test_a_list_of_targets_takes_one_contrast_each_or_one_for_all():
    model = explainable("bert", "classification")
    every = model.explain(TEXT, "logat", target="all").scores
    paired = model.explain(TEXT, "logat", target=[0, 1], contrast=[1, 2])
    np.testing.assert_allclose(paired.scores, every[:, [0, 1]] - every[:, [1, 2]], atol=1e-6)
    shared = model.explain(TEXT, "logat", target="all", contrast=1)  # the others against 1
    np.testing.assert_allclose(shared.scores, every[:, [0, 2]] - every[:, [1]], atol=1e-6)
    labels = model.task.labels
    assert shared.targets == [labels[0], labels[2]] and shared.contrasts == [labels[1]] * 2
    with pytest.raises(InvalidInputError, match="3 contrasts for 2 targets"):
        model.explain(TEXT, "logat", target=[0, 1], contrast=[0, 1, 2])


def test_a_layer_axis_is_contrasted_at_every_layer():
    model = explainable("llama", "causal_lm")
    every = model.explain("the cat sat on the", "normxlogit", target=[5, 9], layer="all")
    one = model.explain("the cat sat on the", "normxlogit", target=5, contrast=9, layer="all")
    np.testing.assert_allclose(one.scores, every.scores[..., 0] - every.scores[..., 1], atol=1e-5)


def _gradient_of_difference(model, text, target, contrast, attributed_fn="logit"):
    batch = model.encode([text])
    function, extra = reading_output(model, batch, attributed_fn)
    embeds = word_embeddings(model, batch).detach().requires_grad_(True)
    outputs = function(embeds, *extra)[0]
    (grad,) = torch.autograd.grad(outputs[target] - outputs[contrast], embeds)
    return grad[0], embeds[0].detach()


@pytest.mark.parametrize("attributed_fn", ["logit", "probability"])
def test_a_contrastive_gradient_is_the_gradient_of_the_difference(attributed_fn):
    model = explainable("bert", "classification")
    grad, embeds = _gradient_of_difference(model, TEXT, 0, 1, attributed_fn)
    options = {"attributed_fn": attributed_fn, "reduce": "sum"}
    saliency = model.explain(TEXT, "gradient_norm", target=0, contrast=1, **options)
    np.testing.assert_allclose(saliency.scores, grad.sum(-1).numpy(), atol=1e-5)
    times = model.explain(TEXT, "gradient_x_input", target=0, contrast=1, **options)
    np.testing.assert_allclose(times.scores, (grad * embeds).sum(-1).numpy(), atol=1e-5)


@pytest.mark.parametrize("rules", ["exact", "captum"])
def test_contrastive_deeplift_is_the_difference_and_complete_for_it(rules):
    model = explainable("bert", "classification")
    options = {"reduce": "sum", "rules": rules}
    one = model.explain(TEXT, "deeplift", target=0, contrast=1, **options)
    both = model.explain(TEXT, "deeplift", target=[0, 1], **options)
    np.testing.assert_allclose(one.scores, both.scores[:, 0] - both.scores[:, 1], atol=1e-5)
    # the summation-to-delta error is the one of the difference (exact rules: none)
    deltas = both.diagnostics["convergence_delta"]
    assert one.diagnostics["convergence_delta"][0] == pytest.approx(deltas[0] - deltas[1], abs=1e-5)
    if rules == "exact":
        assert abs(one.diagnostics["convergence_delta"][0]) < 1e-4


def test_contrastive_integrated_gradients_is_the_difference_of_the_two_paths():
    model = explainable("llama", "causal_lm")
    text = "the cat sat on the"
    options = {"reduce": "sum", "steps": 16}
    both = model.explain(text, "integrated_gradients", target=[5, 9], **options).scores
    one = model.explain(text, "integrated_gradients", target=5, contrast=9, **options).scores
    np.testing.assert_allclose(one, both[:, 0] - both[:, 1], atol=1e-5)


def test_lime_fits_the_difference():
    model = explainable("bert", "classification")
    lime = normxlogit.get_method("lime", samples=40, batch_size=40)  # LIME's own batch_size
    every = model.explain(TEXT, lime, target=[0, 1]).scores
    one = model.explain(TEXT, lime, target=0, contrast=1).scores
    # the surrogate is a ridge fit: linear in the fitted output
    np.testing.assert_allclose(one, every[:, 0] - every[:, 1], atol=1e-4)


def test_grad_ellm_and_decompx_take_a_contrast():
    decoder = explainable("llama", "causal_lm")
    scores = decoder.explain("the cat sat on the", "grad_ellm", target=5, contrast=9).scores
    assert np.isfinite(scores).all()
    encoder = explainable("bert", "classification")
    every = encoder.explain(TEXT, "decompx", target="all").scores
    one = encoder.explain(TEXT, "decompx", target=2, contrast=0).scores
    np.testing.assert_allclose(one, every[:, 2] - every[:, 0], atol=1e-5)


@pytest.mark.parametrize("method", ["attention", "l2_norm", "random", "value_zeroing"])
def test_methods_whose_scores_ignore_the_target_refuse_a_contrast(method):
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match="nothing to contrast"):
        model.explain(TEXT, method, contrast=1)


def test_reagent_says_why_it_has_no_contrastive_form():
    model = explainable("llama", "causal_lm")
    with pytest.raises(InvalidInputError, match="no contrastive form"):
        model.explain("the cat sat", "reagent", target=5, contrast=9)


@pytest.mark.parametrize(
    ("contrast", "message"),
    [
        ("all", "names no single output"),
        (1.5, "contrast 1.5 is a float"),
        ([], "empty contrast list"),
    ],
)
def test_a_contrast_that_means_nothing_is_refused(contrast, message):
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match=message):
        model.explain(TEXT, contrast=contrast)


def test_a_regressor_has_nothing_to_contrast():
    model = explainable("roberta", "regression")
    with pytest.raises(InvalidInputError, match="nothing to contrast"):
        model.explain(TEXT, contrast=0)


def test_a_contrastive_explanation_round_trips_and_says_what_it_explains(tmp_path):
    model = explainable("bert", "classification")
    made = model.explain(TEXT, target=0, contrast=1)
    path = tmp_path / "one.json"
    made.save(path)
    again = Explanation.load(path)
    assert again.contrasts == made.contrasts
    labels = model.task.labels
    assert again.column_titles == [f"{labels[0]} vs {labels[1]}"]
    assert set(again.to_frame()["contrast"]) == {labels[1]}
    assert normxlogit.__name__  # the public package imports with the new field


PROMPT = "the cat sat on the"


@pytest.mark.parametrize("method", ["normxlogit", "gradient_x_input"])
def test_a_generation_contrasts_every_step_with_its_own_token(method):
    model = explainable("llama", "causal_lm")
    plain = model.explain(PROMPT, method, continuation=[5, 6, 7])
    contrastive = model.explain(PROMPT, method, continuation=[5, 6, 7], contrast=[9, 9, 8])
    for step, foil in enumerate([9, 9, 8]):
        prefix = plain.step(step)  # the step alone, as a next-token explanation
        assert prefix.input_ids is not None
        alone = model.explain(prefix.text, method, target=5 + step, contrast=foil)
        if step == 0:  # the prompt alone: the same input as the generation's first step
            first = contrastive.scores[0][: len(alone.tokens)]
            np.testing.assert_allclose(first, alone.scores, atol=1e-5)
        by_hand = model.explain(
            PROMPT, method, continuation=[5, 6, 7][: step + 1], contrast=[5, 6, 7][:step] + [foil]
        )
        width = by_hand.scores.shape[-1]
        np.testing.assert_allclose(
            contrastive.scores[step][:width], by_hand.scores[step], atol=1e-5, equal_nan=True
        )
    step = contrastive.step(1)
    assert step.contrasts == [model.tokenizer.convert_ids_to_tokens(9)]
    scores = contrastive.step_scores
    np.testing.assert_allclose(
        scores["same_prefix_prob_diff"],
        np.array(scores["probability"]) - np.array(scores["contrast_probability"]),
        atol=1e-7,
    )
    assert plain.step_scores["probability"] == pytest.approx(plain.step_probs)
    assert all(value >= 0 for value in plain.step_scores["entropy"])


def test_a_contrast_continuation_must_have_one_token_per_step():
    model = explainable("llama", "causal_lm")
    with pytest.raises(InvalidInputError, match="one token per step"):
        model.explain(PROMPT, continuation=[5, 6, 7], contrast=[9, 9])


def test_tokens_align_by_their_longest_common_runs():
    from normxlogit.explaining.contrast_inputs import align_tokens

    words = ["the", "doctor", "said", "that"], ["the", "young", "nurse", "said", "that"]
    assert align_tokens(*words) == [0, None, 3, 4]
    assert align_tokens(["a", "doctor", "said"], ["a", "nurse", "said"]) == [0, None, 2]
    assert align_tokens(["x", "y"], []) == [None, None]


def test_a_contrast_input_scores_the_aligned_difference():
    model = explainable("bert", "classification")
    text, other = "a gripping film that never lets go", "a dull film that never lets go"
    plain = model.explain(text, "normxlogit", target=1)
    theirs = model.explain(other, "normxlogit", target=1)
    made = model.explain(text, "normxlogit", target=1, contrast_input=other)
    partner = made.settings["contrast_alignment"]
    assert partner[:2] == [0, 1] and partner[2] is None  # [CLS] a | gripping / dull
    for position, match in enumerate(partner):
        expected = plain.scores[position] - (0 if match is None else theirs.scores[match])
        assert made.scores[position] == pytest.approx(expected, abs=1e-6)
    probability = made.diagnostics["target_probability"][0]
    assert probability == pytest.approx(plain.probs[plain.targets[0]], abs=1e-6)
    assert made.diagnostics["contrast_input_probability"][0] == pytest.approx(
        theirs.probs[plain.targets[0]], abs=1e-6
    )
    assert made.diagnostics["kl_divergence"][0] > 0


def test_a_contrast_input_goes_with_each_text_and_keeps_the_prediction_as_target():
    model = explainable("bert", "classification")
    texts = ["a gripping film", "a dull film that drags"]
    made = model.explain(texts, "gradient_x_input", contrast_input=["a fine film", "a dull film"])
    assert [e.targets for e in made] == [
        e.targets for e in model.explain(texts, "gradient_x_input")
    ]
    with pytest.raises(InvalidInputError, match="give a list of 2 contrast inputs, one per text"):
        model.explain(texts, contrast_input="a fine film")


def test_a_contrast_prompt_gives_a_generation_kl_and_pcxmi_per_step():
    model = explainable("llama", "causal_lm")
    made = model.explain(
        PROMPT, "normxlogit", continuation=[5, 6, 7], contrast_input="a dog sat on the"
    )
    mine = model.explain(PROMPT, "normxlogit", continuation=[5, 6, 7])
    theirs = model.explain("a dog sat on the", "normxlogit", continuation=[5, 6, 7])
    scores = made.step_scores
    assert len(scores["kl_divergence"]) == 3 and min(scores["kl_divergence"]) >= 0
    expected = np.log(mine.step_probs) - np.log(theirs.step_probs)
    np.testing.assert_allclose(scores["pcxmi"], expected, atol=1e-5)
    np.testing.assert_allclose(scores["contrast_input_probability"], theirs.step_probs, atol=1e-6)
    # Inseq's contrast_prob_diff against the contrast prompt + the same continuation
    difference = np.array(mine.step_probs) - np.array(theirs.step_probs)
    np.testing.assert_allclose(scores["contrast_prob_diff"], difference, atol=1e-6)
    partner = made.settings["contrast_alignment"]
    last = mine.prompt_length + 2  # the last step sees every token but its own
    for position in range(last):
        match = partner[position]
        other = 0 if match is None else theirs.scores[2, match]
        assert made.scores[2, position] == pytest.approx(mine.scores[2, position] - other, abs=1e-6)
