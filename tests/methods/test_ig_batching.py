"""Integrated gradients computed pass by pass give Captum's numbers on the same function.

The library integrates the path itself (passes bounded by ``tokens_per_pass``, padding
cut per pass, one forward for every target, the prediction pass reused for the
completeness error); Captum's ``IntegratedGradients`` on the same function, all steps in
one pass, is the reference.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.methods import get_method
from normxlogit.methods.gradient import reading_output, word_embeddings

from ..conftest import explainable

TEXTS = [
    "dull",
    "a gripping film that never lets go of you until the very end",
    "fine",
    "it is a charming and often affecting journey",
]
MASKED = ["a gripping [MASK] film that never lets go", "dull , [MASK]"]


def captum_reference(
    model, texts, target="prediction", steps=50, method="gausslegendre", pad=False
):
    """Captum's IntegratedGradients on ReadingOutput: attributions ``[K, B, T, D]``, deltas
    ``[B, K]``."""
    from captum.attr import IntegratedGradients

    batch = model.encode(texts)
    function, extra = reading_output(model, batch)
    with torch.no_grad():
        embeds = word_embeddings(model, batch)
        logits = function(embeds, *extra)
    if target == "prediction":
        columns = logits.argmax(-1, keepdim=True)
    else:  # every output
        columns = torch.arange(logits.shape[1]).expand(len(texts), -1)
    baseline = 0.0
    if pad:
        row = model.model.get_input_embeddings().weight[model.tokenizer.pad_token_id].detach()
        baseline = row.expand_as(embeds).contiguous()
    engine = IntegratedGradients(function)
    attributions, deltas = [], []
    for k in range(columns.shape[1]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            found, delta = engine.attribute(
                embeds,
                baselines=baseline,
                target=columns[:, k],
                additional_forward_args=extra,
                n_steps=steps,
                method=method,
                return_convergence_delta=True,
            )
        attributions.append(found.detach())
        deltas.append(delta.detach())
    return batch, torch.stack(attributions), torch.stack(deltas, dim=-1)


def assert_matches(batch, explanations, reference, deltas, multi):
    for row, explanation in enumerate(explanations):
        real = batch.real_positions(row)
        expected = reference[:, row, real].sum(-1).T.numpy()  # [T, K]
        scores = explanation.scores if multi else explanation.scores[:, None]
        np.testing.assert_allclose(scores, expected, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(
            explanation.diagnostics["convergence_delta"],
            deltas[row].numpy() if multi else deltas[row, 0].item(),
            atol=1e-5,
        )


@pytest.mark.parametrize(
    "options",
    [
        {},  # the default budget: one pass for these short texts
        {"tokens_per_pass": 7},  # one row per pass: every text's steps split
        {"tokens_per_pass": 150},  # passes mixing texts of different lengths
        {"internal_batch_size": 33},
        {"tokens_per_pass": None},  # every row in one pass, as Captum does
    ],
)
def test_matches_captum_whatever_the_passes(options):
    model = explainable("bert", "classification")
    batch, reference, deltas = captum_reference(model, TEXTS, target="all", steps=20)
    ours = model.explain(
        TEXTS, method="integrated_gradients", target="all", steps=20, reduce="sum", **options
    )
    assert_matches(batch, ours, reference, deltas, multi=True)


def test_matches_captum_with_pad_baseline_riemann_and_the_prediction():
    model = explainable("bert", "classification")
    batch, reference, deltas = captum_reference(
        model, TEXTS, steps=16, method="riemann_trapezoid", pad=True
    )
    method = get_method(
        "integrated_gradients",
        steps=16,
        method="riemann_trapezoid",
        baseline="pad",
        reduce="sum",
        tokens_per_pass=40,
    )
    ours = model.explain(TEXTS, method=method)
    assert_matches(batch, ours, reference, deltas, multi=False)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize(("family", "head"), [("gpt2", "classification"), ("llama", "causal_lm")])
def test_decoders_padded_either_side_match_captum(family, head, side):
    """Passes cut trailing padding, and leading padding where positions are explicit."""
    model = explainable(family, head)
    saved = model.tokenizer.padding_side
    model.tokenizer.padding_side = side
    try:
        batch, reference, deltas = captum_reference(model, TEXTS, steps=12)
        column = 0 if side == "left" else -1
        assert int((batch.attention_mask[:, column] == 0).sum()) > 0  # padding is there
        ours = model.explain(
            TEXTS, method="integrated_gradients", steps=12, reduce="sum", tokens_per_pass=60
        )
    finally:
        model.tokenizer.padding_side = saved
    assert_matches(batch, ours, reference, deltas, multi=False)


def test_masked_lm_matches_captum():
    model = explainable("distilbert", "masked_lm")
    batch, reference, deltas = captum_reference(model, MASKED, steps=10)
    ours = model.explain(
        MASKED, method="integrated_gradients", steps=10, reduce="sum", tokens_per_pass=30
    )
    assert_matches(batch, ours, reference, deltas, multi=False)


def test_passes_hold_one_span_within_the_budget():
    spans = [(0, 3), (0, 12), (0, 5), (0, 12)]
    passes = get_method("integrated_gradients", steps=10, tokens_per_pass=45)._passes(spans)
    rows = {}
    for (lo, hi), rows_of_pass in passes:
        assert all(spans[t] == (lo, hi) for t, _, _ in rows_of_pass)  # no row padded
        assert sum(end - first for _, first, end in rows_of_pass) * (hi - lo) <= 45
        for text, first, end in rows_of_pass:
            rows.setdefault(text, []).extend(range(first, end))
    assert rows == {t: list(range(10)) for t in range(4)}  # every step once, in order
    assert [t for t, _, _ in passes[0][1]] == [1]  # widest first, equal spans together
    assert {t for _, p in passes[:7] for t, _, _ in p} == {1, 3}

    def rows_per_pass(**options):
        method = get_method("integrated_gradients", steps=10, **options)
        return [sum(e - f for _, f, e in p) for _, p in method._passes(spans)]

    assert rows_per_pass(tokens_per_pass=4)[:3] == [1, 1, 1]  # one row at least
    assert rows_per_pass(tokens_per_pass=None) == [20, 10, 10]  # one pass per span
    assert rows_per_pass(internal_batch_size=4) == [4, 4, 4, 4, 4] + [4, 4, 2] * 2
    even = get_method("integrated_gradients")._passes([(0, 53)])  # 2048 // 53 = 38 rows
    assert [sum(e - f for _, f, e in p) for _, p in even] == [25, 25]  # not 38 and 12


def test_weights_do_not_require_gradients_during_attribution():
    model = explainable("bert", "classification")
    parameters = list(model.model.parameters())
    for parameter in parameters:
        parameter.requires_grad_(True)
    seen = []  # per forward with gradients on (the prediction pass has them off)

    def record(module, args, output):
        if torch.is_grad_enabled():
            seen.append(any(p.requires_grad for p in parameters))

    hook = model.backbone.register_forward_hook(record)
    try:
        model.explain("a gripping film", method="integrated_gradients", steps=4)
        model.explain("a gripping film", method="gradient_x_input")
    finally:
        hook.remove()
    assert seen and not any(seen)
    assert all(p.requires_grad for p in parameters)  # restored afterwards


def test_builtin_model_scores_match_captum():
    """minilm-sst2, SST-2-like sentences of different lengths in one batch."""
    model = normxlogit.load("minilm-sst2")
    texts = ["a gripping , beautifully acted film .", "dull", "it never lets go of you at all ."]
    batch, reference, deltas = captum_reference(model, texts, steps=50)
    ours = model.explain(texts, method="integrated_gradients", reduce="sum")
    assert_matches(batch, ours, reference, deltas, multi=False)


LENGTHS_TEXTS = [
    "dull",
    "a gripping film that never lets go of you until the very end of it all",
    "fine enough",
    "it is a charming and often affecting journey",
    "bad",
    "the second half drags and some of the dialogue feels flat",
]


@pytest.mark.parametrize("method", ["normxlogit", "integrated_gradients"])
def test_explain_groups_texts_by_length_and_answers_in_input_order(method):
    model = explainable("bert", "classification")
    options = {"steps": 4} if method == "integrated_gradients" else {}
    seen, done = [], []
    encode = model.encode

    def spy(texts, *args, **kwargs):
        seen.append([len(model.tokenizer(t)["input_ids"]) for t in texts])
        return encode(texts, *args, **kwargs)

    model.encode = spy
    try:
        together = model.explain(
            LENGTHS_TEXTS, method=method, batch_size=2, progress=done.append, **options
        )
    finally:
        del model.encode
    lengths = [n for chunk in seen for n in chunk]
    assert lengths == sorted(lengths, reverse=True)  # longest first: batches pad little
    assert done == [2, 4, 6]
    assert [e.text for e in together] == LENGTHS_TEXTS
    for text, joint in zip(LENGTHS_TEXTS, together, strict=True):
        alone = model.explain(text, method=method, **options)
        assert alone.tokens == joint.tokens
        np.testing.assert_allclose(alone.scores, joint.scores, rtol=1e-4, atol=1e-6)


def test_input_order_kept_when_a_text_is_truncated():
    """Truncation warnings number texts as given, so such inputs are not reordered."""
    model = explainable("bert", "classification")
    saved = model.encoder.max_length
    model.encoder.max_length = 8
    long = [i for i, t in enumerate(LENGTHS_TEXTS) if len(model.tokenizer(t)["input_ids"]) > 8]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = model.explain(LENGTHS_TEXTS, batch_size=2)
    finally:
        model.encoder.max_length = saved
    named = [str(w.message).split(" has ")[0] for w in caught if " has " in str(w.message)]
    assert named == [f"text {i}" for i in long] and long
    assert [e.text for e in result] == LENGTHS_TEXTS


@pytest.mark.parametrize(
    "method",
    ["gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid"],
)
@pytest.mark.parametrize("steps", [2, 7, 50])
def test_quadrature_is_captums(method, steps):
    from captum.attr._utils.approximation_methods import approximation_parameters

    from normxlogit.methods.gradient import quadrature

    sizes, alphas = approximation_parameters(method)
    assert quadrature(method, steps) == (sizes(steps), alphas(steps))


def test_sentence_pairs_are_grouped_by_length_too():
    model = explainable("bert", "classification")
    pairs = [("dull", "fine"), ("a gripping film", "it never lets go of you at all"), ("ok", "x")]
    together = model.explain(pairs, method="normxlogit", batch_size=1)
    assert [e.text for e in together] == pairs
    for pair, joint in zip(pairs, together, strict=True):
        np.testing.assert_allclose(model.explain(pair).scores, joint.scores, rtol=1e-5)
