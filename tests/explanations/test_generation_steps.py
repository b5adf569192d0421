"""Explaining only chosen steps of a generation (``explain_steps=``): the steps an
evaluation scores, the others recorded as not explained; and several prompts' steps
explained in shared passes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from normxlogit.common.errors import InvalidInputError
from normxlogit.evaluation import Protocol
from normxlogit.explaining.generation import row_batches
from normxlogit.explaining.steps import build_generation
from normxlogit.generation import GenerationExplanation, evaluate_generations

from ..conftest import explainable

PROMPT = "the film was a"
SEVEN = [2143, 1998, 2009, 2001, 1037, 2204, 3185]  # seven WordPiece ids: steps 0 .. 6
OTHER = "a gripping story about"
SOFT = Protocol(samples=2, pis=(0.25, 0.75))


@pytest.fixture(scope="module")
def decoder():
    return explainable("llama", "causal_lm")


#: a prefix method, a prefix-invariant one, one that reads token ids only, a row reader
PATHS = ["gradient_x_input", "normxlogit", "random", "attention"]


@pytest.mark.parametrize("method", PATHS)
def test_chosen_steps_equal_explaining_every_step(decoder, method):
    every = decoder.explain(PROMPT, continuation=SEVEN, method=method)
    some = decoder.explain(PROMPT, continuation=SEVEN, method=method, explain_steps=[5, 0, 5, 40])
    assert some.explained_steps == [0, 5] and every.explained_steps is None
    assert some.steps_with_scores == [0, 5] and every.steps_with_scores == list(range(7))
    np.testing.assert_allclose(some.scores[[0, 5]], every.scores[[0, 5]], rtol=1e-5, atol=1e-6)
    assert np.isnan(some.scores[[1, 2, 3, 4, 6]]).all()
    # every step keeps what tells whether it is worth explaining
    np.testing.assert_allclose(some.step_probs, every.step_probs, rtol=1e-5)
    for key, values in every.step_scores.items():
        np.testing.assert_allclose(some.step_scores[key], values, rtol=1e-5, atol=1e-6)
    assert some.predicted == every.predicted
    np.testing.assert_allclose(some.step(5).scores, every.step(5).scores, rtol=1e-5, atol=1e-6)
    with pytest.raises(InvalidInputError, match=r"step 3 was not explained; .* steps 0, 5"):
        some.step(3)


def test_every_step_asked_for_is_recorded_as_every_step(decoder):
    explanation = decoder.explain(PROMPT, continuation=SEVEN, explain_steps=range(7))
    assert explanation.explained_steps is None and "explained_steps" not in explanation.to_dict()


def test_diagnostics_of_steps_not_explained_are_nan(decoder):
    explanation = decoder.explain(
        PROMPT, continuation=SEVEN, method="integrated_gradients", steps=4, explain_steps=[1, 6]
    )
    delta = explanation.diagnostics["convergence_delta"]
    assert len(delta) == 7 and np.isfinite([delta[1], delta[6]]).all()
    assert np.isnan([delta[s] for s in (0, 2, 3, 4, 5)]).all()
    assert explanation.settings["steps"] == 4  # the method's own option, not the steps'


def test_saved_and_loaded_keeps_the_explained_steps(decoder, tmp_path):
    explanation = decoder.explain(PROMPT, continuation=SEVEN, layer="all", explain_steps=[0, 5])
    data = explanation.to_dict()
    assert data["explained_steps"] == [0, 5] and data["scores"][1][0][0] is None
    loaded = GenerationExplanation.load(explanation.save(tmp_path / "g.json"))
    assert loaded.explained_steps == [0, 5] and loaded.to_dict() == data
    np.testing.assert_array_equal(loaded.scores, explanation.scores)
    frame = loaded.to_frame()
    assert sorted(set(frame["step"])) == [0, 5] and frame["score"].notna().all()
    # a payload saved before the field (every step explained) loads as every step
    every = decoder.explain(PROMPT, continuation=SEVEN).to_dict()
    assert "explained_steps" not in every
    assert GenerationExplanation.from_dict(json.loads(json.dumps(every))).explained_steps is None


def test_inconsistent_explained_steps_are_refused(decoder):
    data = decoder.explain(PROMPT, continuation=SEVEN, explain_steps=[0, 5]).to_dict()
    with pytest.raises(InvalidInputError, match="explained step 9 of a generation of 7"):
        GenerationExplanation.from_dict({**data, "explained_steps": [0, 9]})
    with pytest.raises(InvalidInputError, match="step 5 has scores but is not among"):
        GenerationExplanation.from_dict({**data, "explained_steps": [0]})
    with pytest.raises(InvalidInputError, match="a list of integers"):
        GenerationExplanation.from_dict({**data, "explained_steps": ["0"]})


def test_aggregates_read_only_the_explained_steps(decoder):
    every = decoder.explain(PROMPT, continuation=SEVEN, method="gradient_x_input")
    some = decoder.explain(PROMPT, continuation=SEVEN, method="gradient_x_input", explain_steps=[2])
    np.testing.assert_allclose(some.aggregate("sum"), every.scores[2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(some.aggregate("max"), every.scores[2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        (dict(explain_steps=[-1]), "step numbers"),
        (dict(explain_steps=[1.5]), "step numbers"),
        (dict(explain_steps=[True]), "step numbers"),
        (
            dict(explain_steps=[7, 9]),
            r"pick no step of the generation: it has 7 steps \(0 .. 6\), none from step 7;",
        ),
    ],
)
def test_mistaken_steps_are_refused(decoder, kwargs, pattern):
    with pytest.raises(InvalidInputError, match=pattern):
        decoder.explain(PROMPT, continuation=SEVEN, **kwargs)


def test_steps_without_a_generation_are_refused(decoder):
    with pytest.raises(InvalidInputError, match="pass generate=True or continuation="):
        decoder.explain(PROMPT, explain_steps=[0])


def test_terminal_and_page_mark_the_steps_not_explained(decoder):
    from rich.console import Console

    from normxlogit.serve.payloads import generation_payload

    explanation = decoder.explain(PROMPT, continuation=SEVEN, explain_steps=[0, 5])
    console = Console(record=True, width=400, color_system=None)
    console.print(explanation)
    lines = [line for line in console.export_text().splitlines()[1:] if line.strip()]
    assert len(lines) == 7 and sum("not explained" in line for line in lines) == 5
    page = explanation.to_html()
    assert page.count('<td class="unexplained"') == 5 and "(2 explained)" in page
    views = json.loads(page.split('class="generation-data">')[1].split("</script>")[0])["views"]
    assert [name for name in views if name.startswith("step ")] == ["step 0", "step 5"]
    drawn = generation_payload(explanation)
    assert drawn["explained_steps"] == [0, 5]
    assert all(value is None for value in drawn["scores"][1])
    assert len(drawn["step_probs"]) == 7 and None not in drawn["step_probs"]


def test_evaluation_scores_the_explained_steps_as_before(decoder):
    every = decoder.explain(PROMPT, continuation=SEVEN, method="gradient_x_input")
    some = decoder.explain(
        PROMPT, continuation=SEVEN, method="gradient_x_input", explain_steps=range(0, 7, 5)
    )
    one, other = (
        evaluate_generations(decoder, [e], ["pi_soft_nc"], SOFT, progress=False).frame
        for e in (every, some)
    )
    assert sorted(set(other["step"])) == [0, 5]
    np.testing.assert_allclose(one["value"], other["value"], rtol=1e-6, atol=1e-6)
    with pytest.raises(InvalidInputError, match="step 2 was not explained"):
        evaluate_generations(decoder, [some], ["pi_soft_nc"], SOFT, every=2)


# ------------------------------------------------------------------ several prompts
def test_several_prompts_share_passes_and_score_as_one_at_a_time(decoder, monkeypatch):
    prompts, continuations = [PROMPT, OTHER], [SEVEN, SEVEN[:4]]
    steps = [0, 2, 3, 5]
    alone = [
        decoder.explain(p, continuation=c, method="gradient_x_input", explain_steps=steps)
        for p, c in zip(prompts, continuations, strict=True)
    ]
    passes = []
    forward = type(decoder).forward

    def counted(self, batch, *args, **kwargs):
        passes.append(len(batch.input_ids))
        return forward(self, batch, *args, **kwargs)

    monkeypatch.setattr(type(decoder), "forward", counted)
    together = decoder.explain(
        prompts,
        continuation=continuations,
        method="gradient_x_input",
        explain_steps=steps,
        batch_size=4,
    )
    # 4 + 3 prefixes in 2 passes of 4 at most, and a pass per prompt for the steps' logits
    assert sorted(passes) == [1, 1, 3, 4]
    for mine, theirs in zip(together, alone, strict=True):
        assert mine.explained_steps == theirs.explained_steps
        np.testing.assert_allclose(mine.scores, theirs.scores, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(mine.step_probs, theirs.step_probs, rtol=1e-5)
    assert together[1].explained_steps == [0, 2, 3]


def test_several_prompts_respect_the_token_budget():
    model = explainable("llama", "causal_lm")
    generations = [
        build_generation(model, PROMPT, SEVEN, 32),
        build_generation(model, OTHER, SEVEN[:4], 32),
    ]
    chosen = [list(range(7)), list(range(4))]
    batches = row_batches(generations, chosen, batch_size=16, max_tokens=30)
    rows = [row for batch in batches for row in batch]
    assert sorted(rows) == [(g, s) for g, steps in enumerate(chosen) for s in steps]
    for batch in batches:
        widths = [generations[g].prompt_length + s for g, s in batch]
        assert widths == sorted(widths)  # shortest first: little padding
        assert len(batch) == 1 or len(batch) * max(widths) <= 30
    assert len(row_batches(generations, chosen, batch_size=16)) == 1


def test_the_workflow_explains_given_continuations_together():
    from normxlogit.workflows import explain_generations

    model = explainable("llama", "causal_lm")
    prompts = [PROMPT, OTHER, "the end of"]
    explained = explain_generations(
        model,
        prompts,
        {"gxi": "gradient_x_input"},
        [SEVEN, SEVEN[:4], None],
        max_new_tokens=3,
        explain_steps=[0, 2],
    )
    made = explained.explanations["gxi"]
    assert explained.batch_sizes["gxi"] == [2, 2, 1]
    assert made[0].explained_steps == [0, 2] and made[2].explained_steps in ([0, 2], None)
    alone = model.explain(OTHER, continuation=SEVEN[:4], method="gradient_x_input")
    np.testing.assert_allclose(made[1].scores[[0, 2]], alone.scores[[0, 2]], rtol=1e-5, atol=1e-6)


PROMPTS = ["the film was a", "a gripping story about a family that", "it", "no one saw the end"]


@pytest.mark.parametrize("family", ["llama", "gpt2", "qwen2", "gpt-neox", "gemma"])
def test_prompts_generated_together_equal_one_at_a_time(family, monkeypatch):
    import normxlogit.explaining.steps as steps

    model = explainable(family, "causal_lm").language_model_view()
    alone = [build_generation(model, prompt, None, 6) for prompt in PROMPTS]
    again = []
    single = steps.greedy_continuation

    def counted(*args, **kwargs):
        again.append(args[1])
        return single(*args, **kwargs)

    monkeypatch.setattr(steps, "greedy_continuation", counted)
    together = steps.build_generations(model, PROMPTS, [None] * len(PROMPTS), 6)
    assert together == alone
    assert len(again) < len(PROMPTS)  # most prompts kept their batched decoding


def test_a_near_tie_is_decoded_again_alone(decoder, monkeypatch):
    import normxlogit.explaining.steps as steps

    model = decoder.language_model_view()
    alone = [build_generation(model, prompt, None, 5) for prompt in PROMPTS]
    monkeypatch.setattr(steps, "GREEDY_TIE_MARGIN", float("inf"))  # every step a "tie"
    again = []
    single = steps.greedy_continuation
    monkeypatch.setattr(
        steps, "greedy_continuation", lambda m, ids, n: again.append(ids) or single(m, ids, n)
    )
    together = steps.build_generations(model, PROMPTS, [None] * len(PROMPTS), 5)
    assert together == alone and len(again) == len(PROMPTS)


def test_prompts_and_lengths_are_checked_before_any_decoding(decoder, monkeypatch):
    import normxlogit.explaining.steps as steps

    model = decoder.language_model_view()
    monkeypatch.setattr(steps, "_greedy_batch", lambda *a, **k: pytest.fail("decoded"))
    with pytest.raises(InvalidInputError, match="non-empty str"):
        steps.build_generations(model, ["fine", "  "], [None, None], 4)
    with pytest.raises(InvalidInputError, match="more than the"):
        steps.build_generations(model, ["fine", "word " * 600], [None, "x"], 4)
    with pytest.raises(InvalidInputError, match="batch_size"):
        steps.greedy_continuations(model, [[1], [2]], 4, batch_size=0)
