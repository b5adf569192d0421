"""Segment methods equal Captum 0.9's own computations over the same segments: its
``LLMAttribution`` with ``FeatureAblation`` / ``ShapleyValueSampling`` over a
``TextTemplateInput`` whose values are the segments (an ablated segment becomes its
empty baseline), on a tiny LLaMA; and its bare ``FeatureAblation`` /
``ShapleyValueSampling`` over a 0/1 segment mask on a classifier."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from captum.attr import (
    FeatureAblation,
    LLMAttribution,
    ShapleyValueSampling,
    TextTemplateInput,
)

import normxlogit
from normxlogit.model.segments import resolve_segments
from tests.conftest import build_model, fresh_tokenizer, sharp_model

PROMPT = "Context: Rome is in Italy. Paris is in France. Berlin is big.\n\nQuery: where is Paris?"
SENTENCES = ["Rome is in Italy.", "Paris is in France.", "Berlin is big."]


def _template(text, segments):
    """Captum's template: the text rendered with the segments Captum left (an ablated
    value arrives as its empty baseline)."""

    def render(*values):
        return segments.without(text, [value != "" for value in values])

    return render


def _captum_llm(model, algorithm, answer_ids, **options):
    segments = resolve_segments(PROMPT, SENTENCES)
    values = segments.texts(PROMPT)
    inp = TextTemplateInput(_template(PROMPT, segments), values, baselines=[""] * len(values))
    attribution = LLMAttribution(algorithm(model.model), model.tokenizer)
    result = attribution.attribute(
        inp, target=torch.tensor(answer_ids), forward_in_tokens=False, **options
    )
    return result.seq_attr.double().numpy()


@pytest.fixture(scope="module")
def lm():
    return normxlogit.load((build_model("llama", "causal_lm", seed=3), fresh_tokenizer()))


def test_leave_one_out_is_captums_feature_ablation_on_an_answer(lm):
    ours = lm.explain(PROMPT, method="leave_one_out", segments=SENTENCES, continuation=" italy")
    theirs = _captum_llm(lm, FeatureAblation, ours.settings["answer_ids"])
    np.testing.assert_allclose(ours.segments.scores, theirs, rtol=1e-4, atol=1e-6)
    fa = lm.explain(PROMPT, method="feature_ablation", segments=SENTENCES, continuation=" italy")
    np.testing.assert_array_equal(fa.segments.scores, ours.segments.scores)


@pytest.mark.parametrize("seed", [0, 7])
def test_shapley_sampling_is_captums_on_an_answer(lm, seed):
    ours = lm.explain(
        PROMPT,
        method="shapley_sampling",
        samples=6,
        seed=seed,
        segments=SENTENCES,
        continuation=" france is",
    )
    torch.manual_seed(seed)  # Captum draws its orders from the global generator
    theirs = _captum_llm(lm, ShapleyValueSampling, ours.settings["answer_ids"], n_samples=6)
    np.testing.assert_allclose(ours.segments.scores, theirs, rtol=1e-4, atol=1e-6)


def test_on_a_classifier_the_same_as_captum_over_a_segment_mask():
    model = sharp_model()
    text = "The film opens slowly. Then it soars! The cast is great. I left happy."
    segments = resolve_segments(text, "sentences")
    label = model.explain(text).label
    column = model.labels.index(label)

    def forward(mask):  # [N, S] 0/1 -> log p(label) [N]
        texts = [segments.without(text, row.bool().tolist()) for row in mask]
        batch = model.encoder.encode(texts, check=False)
        logits = model.forward(batch).logits
        return torch.log_softmax(logits, -1)[:, column]

    ones = torch.ones(1, len(segments))
    for name, algorithm, options in (
        ("leave_one_out", FeatureAblation, {}),
        ("shapley_sampling", ShapleyValueSampling, {"n_samples": 5}),
    ):
        ours = model.explain(
            text,
            method=name,
            segments="sentences",
            **({"samples": 5, "seed": 3} if options else {}),
        )
        torch.manual_seed(3)
        theirs = algorithm(forward).attribute(ones, baselines=0, **options)[0].double().numpy()
        np.testing.assert_allclose(ours.segments.scores, theirs, rtol=1e-4, atol=1e-6)
