"""Round thirty of new-user probes, probe b (generation explanations, Python API):
evaluate_generations checks ``steps=`` as explain_steps= is checked (P01); a saved generation's
diagnostics hold one value per step (P02); a generation's step() and aggregate() check their
layer as Explanation.top_tokens does, with layers or without (P03, P04); mask_position is
refused where it changes nothing (P05); explain_steps is read once, a generator too (P06); a
generation that ended before explain_steps is explained with no step and named in a warning,
the others explained (P07)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import normxlogit
from normxlogit.common.errors import InvalidFileError, InvalidInputError, NormXLogitWarning
from normxlogit.evaluation import Protocol
from normxlogit.generation import GenerationExplanation, evaluate_generations

from .conftest import build_model, explainable, fresh_tokenizer

PROMPT = "the film was a"
SEVEN = [2143, 1998, 2009, 2001, 1037, 2204, 3185]  # seven WordPiece ids: steps 0 .. 6
SOFT = Protocol(samples=2, pis=(0.25, 0.75))


@pytest.fixture(scope="module")
def decoder():
    return explainable("llama", "causal_lm")


@pytest.fixture(scope="module")
def generation(decoder):
    return decoder.explain(PROMPT, continuation=SEVEN, method="gradient_x_input")


@pytest.fixture(scope="module")
def per_layer(decoder):
    return decoder.explain(PROMPT, continuation=SEVEN[:3], layer="all")


# ------------------------------------------------------------------------------ P01
@pytest.mark.parametrize(
    ("steps", "said"),
    [
        (5, r"steps is a list of step numbers \(0 is the first\), got the int 5; give \[5\]"),
        (np.int64(2), r"steps is a list of step numbers .*give \[2\]"),
        ("0", "steps is a list of step numbers"),
        (["0"], r"steps are step numbers \(0 is the first\), got '0'"),
        ([0.0], r"steps are step numbers \(0 is the first\), got 0.0"),
        ([-1], r"steps are step numbers \(0 is the first\), got -1"),
    ],
)
def test_evaluate_generations_checks_steps_as_explain_steps(decoder, generation, steps, said):
    with pytest.raises(InvalidInputError, match=said) as refused:
        evaluate_generations(decoder, [generation], steps=steps, protocol=SOFT)
    assert "\n" not in str(refused.value) and "step()" not in str(refused.value)


def test_evaluate_generations_reads_steps_once_and_takes_numpy_ints(decoder, generation):
    frame = evaluate_generations(
        decoder, [generation, generation], steps=(s for s in [1, 4]), protocol=SOFT
    ).frame
    assert sorted(set(zip(frame["instance"], frame["step"], strict=True))) == [
        (0, 1),
        (0, 4),
        (1, 1),
        (1, 4),
    ]
    every = evaluate_generations(decoder, [generation], every=np.int64(5), protocol=SOFT).frame
    assert sorted(set(every["step"])) == [0, 5]


# ------------------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    ("diagnostics", "said"),
    [
        ({"delta": 0.5}, r"7 steps but one float \(0.5\) in 'diagnostics.delta'"),
        ({"delta": [0.5]}, r"7 steps but 1 entries in 'diagnostics.delta'"),
    ],
)
def test_a_generations_diagnostics_hold_one_value_per_step(tmp_path, generation, diagnostics, said):
    data = generation.to_dict()
    data["diagnostics"] = diagnostics
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match=said) as refused:
        normxlogit.load_explanations(path)
    assert "edited.json" in str(refused.value) and "one value per step" in str(refused.value)
    fields = {**vars(generation), "diagnostics": diagnostics}
    with pytest.raises(InvalidInputError, match=said):
        GenerationExplanation(**fields)


def test_diagnostics_of_every_step_load_and_read_per_step(tmp_path, generation):
    data = generation.to_dict()
    data["diagnostics"] = {"delta": [0.5 + s for s in range(generation.steps)]}
    path = tmp_path / "good.json"
    path.write_text(json.dumps(data))
    (loaded,) = normxlogit.load_explanations(path)
    assert loaded.step(2).diagnostics == {"delta": [2.5]}


# ------------------------------------------------------------------------------ P03
@pytest.mark.parametrize("layer", [7, 1, -2, "1"])
def test_a_generation_without_layers_refuses_another_layer(generation, layer):
    said = r"is not a layer of this explanation; give -1 \(the default: it has no layers\)"
    assert generation.layers is None
    with pytest.raises(InvalidInputError, match=said):
        generation.step(0, layer=layer)
    with pytest.raises(InvalidInputError, match=said):
        generation.aggregate(layer=layer)
    with pytest.raises(InvalidInputError, match=said):
        generation.step(0).top_tokens(3, layer=layer)  # the same refusal


def test_a_generation_without_layers_takes_the_final_one(generation):
    np.testing.assert_array_equal(generation.step(0, layer=-1).scores, generation.step(0).scores)
    np.testing.assert_array_equal(generation.aggregate(layer=-1), generation.aggregate())


# ------------------------------------------------------------------------------ P04
@pytest.mark.parametrize(
    ("call", "shown"),
    [
        (lambda g: g.step(0, layer="1"), "layer='1'"),
        (lambda g: g.aggregate("sum", layer=None), "layer=None"),
        (lambda g: g.aggregate("sum", layer="last"), "layer='last'"),
        (lambda g: g.aggregate("sum", layer=1.0), "layer=float 1.0"),
        (lambda g: g.step(0, layer=9), "layer=9"),
    ],
)
def test_a_per_layer_generation_checks_the_layers_type_first(per_layer, call, shown):
    said = r"is not a layer of this explanation; give one of its layers \[0, 1, 2\]"
    with pytest.raises(InvalidInputError, match=said) as refused:
        call(per_layer)
    assert str(refused.value).startswith(shown)


def test_a_per_layer_generation_still_reads_its_layers(per_layer):
    end = per_layer.prompt_length + 1
    np.testing.assert_array_equal(per_layer.step(1, layer=1).scores, per_layer.scores[1, 1, :end])
    np.testing.assert_array_equal(per_layer.aggregate(layer=-1), per_layer.aggregate(layer=2))


# ------------------------------------------------------------------------------ P05
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(mask_position=1),
        dict(mask_position="x", generate=True, max_new_tokens=2),
        dict(mask_position=0, continuation=SEVEN[:2]),
    ],
)
def test_mask_position_is_refused_for_a_causal_lm(decoder, kwargs):
    said = r"mask_position is for masked LMs .* this model is a causal LM, read at its last token"
    with pytest.raises(InvalidInputError, match=said) as refused:
        decoder.explain(PROMPT, **kwargs)
    assert "leave mask_position out" in str(refused.value)


def test_mask_position_is_refused_for_a_classifier():
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match="this model is a classifier"):
        model.explain("a fine film", mask_position=1)


def test_mask_position_still_works_for_a_masked_lm():
    model = explainable("bert", "masked_lm")
    made = model.explain("no mask here", target="good", mask_position=2)
    assert made.settings["mask_position"] == 2


# ------------------------------------------------------------------------------ P06
def test_explain_steps_may_be_a_generator(decoder):
    made = decoder.explain(
        PROMPT, continuation=SEVEN, method="gradient_x_input", explain_steps=(s for s in [0, 2])
    )
    assert made.explained_steps == [0, 2]


# ------------------------------------------------------------------------------ P07
def test_a_continuation_shorter_than_the_steps_is_named_and_the_others_kept(decoder):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = decoder.explain(
            [PROMPT, "a gripping story about"],
            continuation=[SEVEN, SEVEN[:2]],
            method="gradient_x_input",
            explain_steps=[5],
        )
    assert [m.explained_steps for m in made] == [[5], []]
    assert np.isnan(made[1].scores).all() and not np.isnan(made[0].scores[5]).all()
    assert len(made[1].step_probs) == 2  # every step's probability is there
    said = [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]
    assert len(said) == 1, said
    assert "text 1 ('a gripping story about') has 2 steps (0 .. 1), none from step 5" in said[0]
    assert "text 0" not in said[0]


def test_a_generation_that_ended_early_is_named_and_the_others_kept():
    model = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()))
    short = "a gripping story about"
    written = model.explain(short, generate=True, max_new_tokens=6, method="random")
    end = written.input_ids[written.prompt_length + 1]
    model.model.generation_config.eos_token_id = end  # the short prompt stops after 2 steps
    prompts = [PROMPT, "the plot of the movie", short]
    alone = [model.explain(p, generate=True, max_new_tokens=6, method="random") for p in prompts]
    assert [g.steps for g in alone][2] == 2 and all(g.steps > 4 for g in alone[:2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = model.explain(
            prompts, generate=True, max_new_tokens=6, explain_steps=[4], method="gradient_x_input"
        )
    assert [m.explained_steps for m in made] == [[4], [4], []]
    said = [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]
    assert len(said) == 1, said
    assert (
        f"the generation of text 2 ({short!r}) ended at step 1 (end-of-sequence), before step 4"
        in said[0]
    )
    with pytest.raises(InvalidInputError) as refused:  # alone: nothing to explain
        model.explain(short, generate=True, max_new_tokens=6, explain_steps=[4])
    message = str(refused.value)
    assert "pick no step of the generation: it ended at step 1" in message
    assert "ended at step 1 (end-of-sequence), before step 4" in message
    assert "more max_new_tokens cannot help" in message


def test_steps_no_generation_has_are_refused_naming_each(decoder):
    with pytest.raises(InvalidInputError) as refused:
        decoder.explain(
            [PROMPT, "a gripping story about"],
            continuation=[SEVEN[:3], SEVEN[:2]],
            explain_steps=[5],
        )
    message = str(refused.value)
    assert message.startswith("explain_steps [5] pick no step of any generation: ")
    assert "text 0 ('the film was a') has 3 steps" in message
    assert "text 1 ('a gripping story about') has 2 steps" in message


@pytest.mark.parametrize("given", ["no", 0.5, None, [True]])
def test_generate_is_a_bool_not_anything_truthy(given):
    """``generate="no"`` generated (a non-empty string is truthy)."""
    from normxlogit.common.errors import InvalidInputError
    from tests.conftest import build_model, fresh_tokenizer

    model = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()))
    with pytest.raises(InvalidInputError, match=r"generate=.*give True .* or False"):
        model.explain("a prompt", generate=given)
    assert model.explain("a prompt", generate=np.bool_(False)).scores.ndim >= 1
