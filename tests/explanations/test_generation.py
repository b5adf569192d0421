"""Explaining generations step by step: one pass for prefix-invariant methods, prefixes for
the rest, NaN where a step cannot see, teacher forcing, saving, and mistakes refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.evaluation import Protocol
from normxlogit.generation import STEP_AGGREGATIONS, GenerationExplanation, explain_generation
from normxlogit.methods import Layers, get_method

from ..cli_inprocess import Ran, run_cli
from ..conftest import explainable

PROMPT = "the film was a"
CONTINUATION = [2143, 1998, 2009, 2001, 1037]  # five WordPiece ids of the test tokenizer


@pytest.fixture(params=["llama", "gpt2"])
def decoder(request):
    return explainable(request.param, "causal_lm")


def _layers(model, layer=None) -> Layers:
    return Layers.resolve(layer, model.num_layers)


def test_generated_and_teacher_forced_explanations_agree(decoder):
    generated = decoder.explain(PROMPT, generate=True, max_new_tokens=4)
    ids = decoder.tokenizer.convert_tokens_to_ids(generated.generated)
    forced = decoder.explain(PROMPT, continuation=ids)
    assert generated.generated_by_model and not forced.generated_by_model
    assert forced.tokens == generated.tokens
    np.testing.assert_allclose(forced.scores, generated.scores, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(forced.step_probs, generated.step_probs, rtol=1e-5)
    # greedy: each generated token is the model's own top token at its step
    assert generated.predicted == generated.generated


DECODER_METHODS = [
    "normxlogit",
    "logat",
    "l2_norm",
    "random",
    "attention",
    "gradient_norm",
    "gradient_x_input",
    "integrated_gradients",
    "deeplift",
    "value_zeroing",
    "grad_ellm",
    "lime",
]


@pytest.mark.parametrize("method", DECODER_METHODS)
def test_a_step_scores_only_the_tokens_before_it(decoder, method):
    explanation = decoder.explain(PROMPT, continuation=CONTINUATION, method=method)
    prompt_length = explanation.prompt_length
    assert explanation.scores.shape == (5, prompt_length + 5)
    for step in range(5):
        seen = explanation.scores[step, : prompt_length + step]
        assert np.isfinite(seen).all()
        assert np.isnan(explanation.scores[step, prompt_length + step :]).all()


@pytest.mark.parametrize(
    "method", ["normxlogit", "logat", "l2_norm", "attention", "attention_rollout", "value_zeroing"]
)
@pytest.mark.parametrize("layer", [None, "all"])
def test_one_pass_equals_explaining_each_prefix(decoder, method, layer):
    attribution = get_method(method)
    assert attribution.prefix_invariant or attribution.reads_rows
    fast, slow = (
        explain_generation(
            decoder,
            PROMPT,
            attribution,
            _layers(decoder, layer),
            continuation=CONTINUATION,
            one_pass=one_pass,
            batch_size=2,
        )
        for one_pass in (True, False)
    )
    np.testing.assert_allclose(fast.scores, slow.scores, rtol=1e-4, atol=1e-5)
    if layer == "all":
        assert fast.scores.shape == (5, decoder.num_layers + 1, fast.prompt_length + 5)


def test_random_scores_prefixes_without_a_pass_over_each(decoder, monkeypatch):
    """The random baseline reads token ids only: its steps' scores are those of a pass per
    prefix, drawn without one (a single pass gives every step's probability)."""
    attribution = get_method("random")
    assert attribution.reads_token_ids_only
    slow = explain_generation(
        decoder, PROMPT, attribution, _layers(decoder), continuation=CONTINUATION, one_pass=False
    )
    passes = []
    real_forward = type(decoder).forward

    def counted(self, *args, **kwargs):
        passes.append(1)
        return real_forward(self, *args, **kwargs)

    monkeypatch.setattr(type(decoder), "forward", counted)
    fast = explain_generation(
        decoder, PROMPT, attribution, _layers(decoder), continuation=CONTINUATION, batch_size=2
    )
    assert len(passes) == 1
    np.testing.assert_array_equal(fast.scores, slow.scores)
    np.testing.assert_allclose(fast.step_probs, slow.step_probs, rtol=1e-5)
    assert fast.predicted == slow.predicted


def test_steps_in_any_batch_size_give_the_same_scores(decoder):
    attribution = get_method("gradient_x_input")
    one, three = (
        explain_generation(
            decoder, PROMPT, attribution, _layers(decoder), continuation=CONTINUATION, batch_size=n
        )
        for n in (1, 3)
    )
    np.testing.assert_allclose(one.scores, three.scores, rtol=1e-4, atol=1e-6)


def test_gradient_x_input_per_step_equals_captum_on_the_prefix():
    from captum.attr import InputXGradient

    model = explainable("llama", "causal_lm")
    explanation = model.explain(PROMPT, continuation=CONTINUATION, method="gradient_x_input")
    network = model.model
    ids = model.tokenizer(PROMPT)["input_ids"] + CONTINUATION
    for step in range(5):
        end = explanation.prompt_length + step
        embeds = network.get_input_embeddings()(torch.tensor([ids[:end]])).detach()

        def target_logit(inputs, token=ids[end]):
            return network(inputs_embeds=inputs).logits[:, -1, token]

        reference = InputXGradient(target_logit).attribute(embeds).abs().sum(-1)[0]
        np.testing.assert_allclose(
            explanation.scores[step, :end], reference.detach().numpy(), rtol=1e-4, atol=1e-6
        )


def test_a_step_is_an_ordinary_next_token_explanation(decoder):
    explanation = decoder.explain(PROMPT, continuation=CONTINUATION, method="logat")
    step = explanation.step(2)
    end = explanation.prompt_length + 2
    assert step.tokens == explanation.tokens[:end]
    assert step.targets == [explanation.generated[2]] == [step.label]
    np.testing.assert_array_equal(step.scores, explanation.scores[2, :end])
    assert step.probs == {step.label: pytest.approx(explanation.step_probs[2])}
    with pytest.raises(InvalidInputError, match="step 5 does not exist"):
        explanation.step(5)


def test_step_aggregation_leaves_out_steps_that_cannot_see():
    scores = np.array([[1.0, 2.0, np.nan, np.nan], [3.0, -4.0, 5.0, np.nan]], dtype=np.float32)
    explanation = GenerationExplanation(
        prompt="a b",
        tokens=["a", "b", "c", "d"],
        prompt_length=2,
        scores=scores,
        method="logat",
        step_probs=[0.5, 0.25],
        predicted=["c", "d"],
    )
    np.testing.assert_allclose(explanation.aggregate("sum"), [4, -2, 5, np.nan])
    np.testing.assert_allclose(explanation.aggregate("mean"), [2, -1, 5, np.nan])
    np.testing.assert_allclose(explanation.aggregate("max"), [3, 2, 5, np.nan])
    np.testing.assert_allclose(explanation.aggregate("absmax"), [3, -4, 5, np.nan])
    normalized = [(1 / 3 + 3 / 12) / 2, (2 / 3 - 4 / 12) / 2, 5 / 12, np.nan]
    np.testing.assert_allclose(explanation.aggregate("normalized"), normalized, rtol=1e-6)
    with pytest.raises(InvalidInputError, match="not one of"):
        explanation.aggregate("median")


def test_saved_and_loaded_keeps_every_field_and_the_nans(decoder, tmp_path):
    explanation = decoder.explain(PROMPT, continuation=CONTINUATION, layer="all")
    path = explanation.save(tmp_path / "generation.json")
    data = json.loads(path.read_text())  # strict JSON: NaN is written as null
    assert data["kind"] == "generation" and data["scores"][0][0][-1] is None
    loaded = GenerationExplanation.load(path)
    assert isinstance(normxlogit.load_explanations(path)[0], GenerationExplanation)
    np.testing.assert_array_equal(loaded.scores, explanation.scores)
    assert loaded.to_dict() == explanation.to_dict()
    frame = loaded.to_frame()
    steps = explanation.steps
    seen = sum(explanation.prompt_length + s for s in range(steps))
    assert len(frame) == seen * (decoder.num_layers + 1)
    assert frame["score"].notna().all()


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        (dict(generate=True, target="the"), "targets are its own tokens"),
        (dict(generate=True, aggregate="sum"), r"\.aggregate\(how\)"),
        (dict(generate=True, max_new_tokens=0), "at least 1"),
        (dict(generate=True, max_new_tokens=600), "more than the 512 this model reads"),
        (dict(continuation=""), "continuation is empty"),
        (dict(continuation=[10**9]), "not a token id"),
        (dict(max_new_tokens=4), "pass generate=True to explain a generation"),
        (dict(continuation="a b", max_new_tokens=4), "continuation sets the steps"),
    ],
)
def test_mistakes_are_refused_with_the_fix(kwargs, pattern):
    model = explainable("llama", "causal_lm")
    with pytest.raises(InvalidInputError, match=pattern):
        model.explain(PROMPT, **kwargs)


def test_only_a_causal_lm_generates():
    with pytest.raises(InvalidInputError, match="only a causal language model generates"):
        explainable("bert", "classification").explain("a text", generate=True)
    with pytest.raises(InvalidInputError, match="not a pair"):
        explainable("llama", "causal_lm").explain(("a", "b"), generate=True)


def test_terminal_view_has_a_line_per_step(decoder):
    from rich.console import Console

    explanation = decoder.explain(PROMPT, continuation=CONTINUATION)
    console = Console(record=True, width=400, color_system=None)
    console.print(explanation)
    lines = console.export_text().splitlines()
    assert lines[0].startswith("normxlogit")
    assert len([line for line in lines[1:] if line.strip()]) == 5  # one per step


def test_html_page_has_the_step_heatmap_and_every_view(decoder):
    explanation = decoder.explain(PROMPT, continuation=CONTINUATION)
    page = explanation.to_html()
    total = len(explanation.tokens)
    # a row per step; the columns are every token but the last (which no step sees)
    assert page.count('<tr><th class="generated">') == 5
    unseen = sum(total - 1 - (explanation.prompt_length + s) for s in range(5))
    assert page.count('<td class="unseen">') == unseen
    payload = page.split('class="generation-data">')[1].split("</script>")[0]
    views = json.loads(payload)["views"]
    assert list(views)[:5] == [f"{how} over steps" for how in STEP_AGGREGATIONS]
    assert [f"step {s}" for s in range(5)] == list(views)[5:]
    assert all(len(values) == total for values in views.values())
    assert views["step 0"][explanation.prompt_length] is None  # not seen: no colour


@pytest.fixture(scope="module")
def decoder_folder(tmp_path_factory):
    from ..conftest import build_model, fresh_tokenizer

    folder = tmp_path_factory.mktemp("tiny-decoder")
    build_model("llama", "causal_lm").save_pretrained(folder)
    fresh_tokenizer().save_pretrained(folder)
    return str(folder)


def _cli(*args: str) -> Ran:
    """``python -m normxlogit ARGS`` run in this process (see :mod:`tests.cli_inprocess`)."""
    return run_cli(*args, prog_name="python -m normxlogit")


def test_cli_generate_writes_json_and_html(decoder_folder, tmp_path):
    result = _cli(
        "explain", PROMPT, "-m", decoder_folder, "--generate", "--max-new-tokens", "3",
        "-o", str(tmp_path / "g.json"), "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (loaded,) = normxlogit.load_explanations(tmp_path / "g.json")
    assert isinstance(loaded, GenerationExplanation) and 1 <= loaded.steps <= 3
    result = _cli(
        "explain", PROMPT, "-m", decoder_folder, "--continuation", "good fun",
        "--method", "gradient_x_input", "-o", str(tmp_path / "g.html"), "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert 'class="steps"' in (tmp_path / "g.html").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--generate", "--continuation", "x"], "pass one of them"),
        (["--generate", "--label", "x"], "leave out --label"),
        (["--generate", "--max-new-tokens", "0"], "must be at least 1"),
        (["--max-new-tokens", "4"], "add --generate to explain a generation"),
        (["--continuation", "a b", "--max-new-tokens", "4"], "--continuation sets the steps"),
    ],
)
def test_cli_generation_mistakes_are_one_line(decoder_folder, args, message):
    result = _cli("explain", PROMPT, "-m", decoder_folder, *args)
    assert result.returncode == 2 and message in result.stderr
    assert "Traceback" not in result.stderr


# ------------------------------------------------------------------- evaluation per step
SOFT = Protocol(samples=2, pis=(0.25, 0.75))
SEVEN = [2143, 1998, 2009, 2001, 1037, 2204, 3185]  # seven steps: 0 and 5 are evaluated


def _pair(model):
    forced = model.explain(PROMPT, continuation=SEVEN, method="normxlogit")
    random = model.explain(PROMPT, continuation=SEVEN, method="random")
    return forced, random


def test_evaluate_scores_every_fifth_step_with_a_step_column():
    model = explainable("llama", "causal_lm")
    forced, random = _pair(model)
    result = normxlogit.evaluate(
        model, {"nx": [forced], "rnd": [random]}, ["pi_soft_nc"], protocol=SOFT
    )
    frame = result.frame
    assert list(frame.columns[:2]) == ["instance", "step"]
    assert sorted(set(frame["step"])) == [0, 5] and set(frame["instance"]) == {0}
    assert len(frame) == 2 * 2 * 2  # methods x steps x pis
    assert frame["value"].notna().all()
    assert set(result.summary().methods) == {"nx", "rnd"}
    # a step is scored alike alone or with the others (draws are seeded per input)
    alone = normxlogit.generation.evaluate_generations(
        model, {"nx": [forced], "rnd": [random]}, ["pi_soft_nc"], SOFT, steps=[5]
    ).frame
    both = frame[frame["step"] == 5].reset_index(drop=True)
    np.testing.assert_allclose(alone["value"], both["value"], rtol=1e-5)


def test_a_generation_weighs_alike_however_many_steps_it_has(tmp_path):
    from normxlogit.evaluation import EvaluationResult

    rows = [
        {"instance": 0, "step": 0, "method": "m", "metric": "soft_nc", "value": 1.0},
        {"instance": 0, "step": 5, "method": "m", "metric": "soft_nc", "value": 3.0},
        {"instance": 1, "step": 0, "method": "m", "metric": "soft_nc", "value": 5.0},
    ]
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"metrics": ["soft_nc"], "protocol": {}, "rows": rows}))
    result = EvaluationResult.load(path)
    assert list(result.frame["step"]) == [0, 5, 0]
    assert result.summary()["soft_nc"]["m"] == pytest.approx((2.0 + 5.0) / 2)
    again = EvaluationResult.load(result.save(tmp_path / "again.json"))
    assert list(again.frame["step"]) == [0, 5, 0]


def test_generation_evaluation_mistakes_are_refused():
    model = explainable("llama", "causal_lm")
    forced, random = _pair(model)
    other = model.explain(PROMPT, continuation=SEVEN[:6], method="random")
    with pytest.raises(InvalidInputError, match="other generations than the first"):
        normxlogit.evaluate(model, {"nx": [forced], "rnd": [other]}, ["pi_soft_nc"], protocol=SOFT)
    with pytest.raises(InvalidInputError, match="needs gold labels"):
        normxlogit.evaluate(model, [forced], ["comp_acc"], protocol=SOFT)
    with pytest.raises(InvalidInputError, match="every must be"):
        normxlogit.generation.evaluate_generations(model, [forced], every=0)
    with pytest.raises(InvalidInputError, match="no gold labels"):
        normxlogit.evaluate(model, [forced], ["pi_soft_nc"], protocol=SOFT, labels=[1])


def test_fixed_routing_applies_to_steps_too():
    model = explainable("llama", "causal_lm")
    forced, _ = _pair(model)
    fixed = SOFT.with_options(routing="fixed")
    result = normxlogit.evaluate(model, [forced], ["pi_soft_ns", "soft_nc"], protocol=fixed)
    assert result.protocol.routing == "fixed"
    assert result.frame["value"].notna().all()
    dynamic = normxlogit.evaluate(model, [forced], ["pi_soft_ns", "soft_nc"], protocol=SOFT)
    assert not np.allclose(result.frame["value"], dynamic.frame["value"])


def test_a_generation_is_scored_by_the_pi_soft_metrics_by_default():
    model = explainable("llama", "causal_lm")
    forced, _ = _pair(model)
    assert normxlogit.evaluate(model, [forced], protocol=SOFT).metrics == [
        "pi_soft_nc",
        "pi_soft_ns",
    ]
