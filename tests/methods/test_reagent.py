"""ReAGent: seeded and batch-independent probes, the part-of-speech sampler, the
convergence fallback, classifiers and generation steps, and options refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from normxlogit.common.errors import InvalidInputError
from normxlogit.methods import get_method
from normxlogit.methods.reagent.samplers import GroupSampler, get_sampler, tag_words

from ..conftest import explainable, tokenizer

TEXTS = ["the film was a delight", "dull", "a long and winding story about nothing"]
FAST = dict(sampler="uniform", max_probe_steps=6)


def _scores(explanations) -> list[np.ndarray]:
    return [e.scores for e in explanations]


def test_seeded_and_the_same_alone_or_in_any_batch():
    model = explainable("llama", "causal_lm")
    together = model.explain(TEXTS, method="reagent", target="the", **FAST)
    for text, joint in zip(TEXTS, together, strict=True):
        alone = model.explain(text, method="reagent", target="the", **FAST)
        np.testing.assert_allclose(alone.scores, joint.scores, rtol=1e-5, atol=1e-6)
    again = model.explain(TEXTS, method="reagent", target="the", **FAST)
    for a, b in zip(together, again, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)
    other = model.explain(TEXTS, method="reagent", target="the", seed=1, **FAST)
    assert not np.allclose(together[0].scores, other[0].scores)


def test_scores_are_a_distribution_over_the_tokens():
    model = explainable("llama", "causal_lm")
    for explanation in model.explain(TEXTS, method="reagent", target="the", **FAST):
        assert (explanation.scores >= 0).all()
        assert explanation.scores.sum() == pytest.approx(1.0, abs=1e-5)
        assert set(explanation.diagnostics) == {"converged_probes", "probe_steps"}


def test_no_converged_probe_gives_the_mean_or_nan():
    model = explainable("llama", "causal_lm")
    # one step, and a target that must be the top prediction: no probe stops
    strict = dict(FAST, max_probe_steps=1, stopping_condition_top_k=1, target="zebra")
    mean = model.explain(TEXTS[0], method="reagent", **strict)
    assert mean.diagnostics["converged_probes"] == [0.0]
    assert mean.diagnostics["probe_steps"] == [1.0]
    assert np.isfinite(mean.scores).all()
    nan = model.explain(TEXTS[0], method="reagent", on_no_convergence="nan", **strict)
    assert np.isnan(nan.scores).all()


def test_a_classifier_and_the_steps_of_a_generation():
    classifier = explainable("bert", "classification")
    # below its 3 labels: at 3 the target is always among the top k (refused)
    explanation = classifier.explain(
        TEXTS[0], method="reagent", target="all", stopping_condition_top_k=2, **FAST
    )
    assert explanation.scores.shape == (len(explanation.tokens), 3)
    decoder = explainable("llama", "causal_lm")
    steps = decoder.explain(TEXTS[0], continuation=[2143, 1998], method="reagent", **FAST)
    assert steps.scores.shape[0] == 2 and np.isnan(steps.scores[0, -2:]).all()


def test_a_replacement_keeps_the_tokens_group():
    groups = [[0, 2, 4], [1, 3], [5]]
    sampler = GroupSampler("test", groups, vocabulary=7)
    ids = torch.tensor([[0, 1, 5, 6, 2]]).expand(200, -1)
    drawn = sampler(ids, torch.Generator().manual_seed(0))
    assert set(drawn[:, 0].tolist()) == {0, 2, 4}  # uniform within the group, itself too
    assert set(drawn[:, 1].tolist()) == {1, 3}
    assert set(drawn[:, 2].tolist()) == {5}
    assert set(drawn[:, 3].tolist()) <= set(range(6))  # in no group: any grouped token


def test_the_pos_sampler_replaces_a_word_by_one_of_its_tag():
    assert tag_words(["running", "the", "beautiful"]) == ["VBG", "DT", "JJ"]
    sampler = get_sampler("pos", tokenizer())
    vocab = tokenizer().get_vocab()
    ids = torch.tensor([[vocab["running"], vocab["the"]]]).expand(20, -1)
    drawn = sampler(ids, torch.Generator().manual_seed(0))
    words = tokenizer().convert_ids_to_tokens(drawn[:, 0].tolist())
    assert set(tag_words(words)) == {"VBG"}
    assert len(set(words)) > 5  # drawn from the whole group, not a few entries


@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        (dict(sampler="bert"), "not one of: pos, uniform"),
        (dict(replacing_ratio=1.5), "strictly between 0 and 1"),
        (dict(num_probes=0), "at least 1"),
        (dict(on_no_convergence="zero"), "is not one of"),
    ],
)
def test_bad_options_are_refused(options, pattern):
    model = explainable("llama", "causal_lm")
    with pytest.raises(InvalidInputError, match=pattern):
        model.explain(TEXTS[1], method=get_method("reagent", **options))


def test_the_pi_soft_preset_is_the_papers_settings():
    from normxlogit.methods.presets import list_presets

    ig = get_method("integrated_gradients", preset="pi-soft")
    assert (ig.steps, ig.internal_batch_size) == (16, 8)
    assert get_method("integrated_gradients", preset="pi-soft", steps=4).steps == 4
    reagent = get_method("reagent", preset="pi-soft")
    assert (reagent.keep_top_n, reagent.max_probe_steps, reagent.num_probes) == (3, 32, 2)
    assert list_presets() == {
        "pi-soft": [
            "attention",
            "deeplift",
            "gradient_norm",
            "gradient_x_input",
            "integrated_gradients",
            "reagent",
            "value_zeroing",
        ]
    }
    zeroing = get_method("value_zeroing", preset="pi-soft")  # Inseq 0.7.1's defaults
    assert (zeroing.rollout, zeroing.layer_mean, zeroing.min_distance) == (False, True, 1e-5)
    with pytest.raises(InvalidInputError, match="unknown preset 'inseq'; presets: pi-soft"):
        get_method("integrated_gradients", preset="inseq")
    with pytest.raises(InvalidInputError, match="sets no options for method 'lime'"):
        get_method("lime", preset="pi-soft")


@pytest.fixture(scope="module")
def masked_lm_folder(tiny_masked_lm):
    return tiny_masked_lm


def test_a_masked_lm_sampler_replaces_with_its_predictions(masked_lm_folder):
    import transformers as T

    sampler = get_sampler(f"masked_lm:{masked_lm_folder}", tokenizer())
    ids = torch.tensor(tokenizer()("the film was a delight")["input_ids"]).expand(2, -1)
    first = sampler(ids, torch.Generator().manual_seed(0))
    again = sampler(ids, torch.Generator().manual_seed(1))
    assert torch.equal(first, again) and torch.equal(first[0], first[1])  # predictions
    # position 2 ("film"): the masked LM's own top word at a [MASK] there
    network = T.AutoModelForMaskedLM.from_pretrained(masked_lm_folder).eval()
    masked = tokenizer()("the [MASK] was a delight", return_tensors="pt")
    with torch.no_grad():
        logits = network(**masked).logits[0]
    position = masked["input_ids"][0].tolist().index(tokenizer().mask_token_id)
    word = tokenizer().decode([int(logits[position].argmax())]).strip()
    assert int(first[0, 2]) == tokenizer()(word, add_special_tokens=False)["input_ids"][0]
    model = explainable("llama", "causal_lm")
    explanation = model.explain(
        "the film was a delight",
        method="reagent",
        sampler=f"masked_lm:{masked_lm_folder}",
        target="the",
        max_probe_steps=3,
    )
    assert np.isfinite(explanation.scores).all()


def test_a_masked_lm_that_cannot_be_loaded_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="cannot load a masked LM"):
        get_sampler(f"masked_lm:{tmp_path / 'nothing'}", tokenizer())


#: ReAGent's outputs as the code computed them before its draws were made in blocks of
#: probe steps (one transfer, one device sync per step): the same seed must give them
BEFORE_BLOCKS = {
    "llama-2x32": ("llama", "causal_lm", "the", dict(num_probes=2, max_probe_steps=32)),
    "llama-top2000": (
        "llama",
        "causal_lm",
        "the",
        dict(num_probes=3, max_probe_steps=12, stopping_condition_top_k=2000),
    ),
    "bert-top1": (
        "bert",
        "classification",
        None,
        dict(num_probes=3, max_probe_steps=12, stopping_condition_top_k=1),
    ),
    # "bert-2x5" (the default top k of 3 on 3 labels) is refused since round 37: every
    # probe stopped after one step
}


@pytest.fixture
def two_threads():
    """The recorded scores were computed with two threads: a float32 sum's rounding
    depends on how the kernels split it (one thread moves them by up to 1e-5 relative)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("case", sorted(BEFORE_BLOCKS))
def test_draws_in_blocks_give_the_scores_of_one_step_at_a_time(case, two_threads):
    import json
    from pathlib import Path

    expected = json.loads((Path(__file__).parent / "data/reagent_before_blocks.json").read_text())
    family, head, target, options = BEFORE_BLOCKS[case]
    # a model of its own (the same seeded weights): the shared one has served every earlier
    # test of this process, which under pytest-xdist are another set than in a serial run
    model = explainable.__wrapped__(family, head)
    made = model.explain(TEXTS, method="reagent", target=target, sampler="uniform", **options)
    for explanation, reference in zip(made, expected[case], strict=True):
        np.testing.assert_allclose(explanation.scores, reference["scores"], rtol=1e-6, atol=1e-7)
        for key, values in reference["diagnostics"].items():
            np.testing.assert_allclose(explanation.diagnostics[key], values)
