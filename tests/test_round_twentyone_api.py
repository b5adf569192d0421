"""Round twenty-one of new-user probes, probe b (Python API and saved files): a saved
probability out of range named by its value (P01), a generation loaded as a text's
explanation told which class loads it (P02), and ``explain_and_evaluate``'s ``seed``
heard when a protocol is given too (P03). Tiny models."""

from __future__ import annotations

import json
import warnings

import pytest

import normxlogit
from normxlogit.common.errors import InvalidFileError, InvalidInputError

from .conftest import explainable, sharp_model

TEXTS = ["the plot is thin. the acting is wonderful!", "a dull mess.", "good film"]


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize(
    ("value", "shown"),
    [(5.0, "is 5.0"), (-0.1, "is -0.1"), (float("nan"), "is NaN"), (None, "is null")],
)
def test_p01_a_saved_probability_out_of_range_is_named_by_its_value(tmp_path, value, shown):
    """It said the entry "is a number", which the rule asks for; null was "NoneType"."""
    saved = json.loads(sharp_model().explain(TEXTS[2]).to_json())
    label = next(iter(saved["probs"]))
    saved["probs"][label] = value
    path = tmp_path / "e.json"
    path.write_text(json.dumps(saved))
    with pytest.raises(InvalidFileError) as caught:
        normxlogit.Explanation.load(path)
    said = str(caught.value)
    assert f"its entry {label!r} {shown}" in said and "numbers from 0 to 1" in said
    assert "is a number" not in said and "NoneType" not in said


# ------------------------------------------------------------------ P02
def test_p02_a_saved_generation_loaded_as_a_text_names_its_class(tmp_path):
    """It said "holds 1 explanation(s), not one Explanation; use load_explanations"."""
    generation = explainable("llama", "causal_lm").explain(
        "the film", generate=True, max_new_tokens=2
    )
    path = generation.save(tmp_path / "g.json")
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.Explanation.load(path)
    said = str(caught.value)
    assert "holds a GenerationExplanation, not an Explanation" in said
    assert "normxlogit.GenerationExplanation.load" in said and "1 explanation(s)" not in said
    assert normxlogit.GenerationExplanation.load(path).to_dict() == generation.to_dict()


# ------------------------------------------------------------------ P03
def _pi_soft(model, **settings) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluated = normxlogit.explain_and_evaluate(
            model, TEXTS, ["random"], metrics=["pi_soft_nc"], **settings
        )
    return float(evaluated.result.frame["value"].mean())


def test_p03_the_seed_is_heard_when_a_protocol_is_given_too():
    """With protocol=Protocol(samples=2), seed=0 and seed=3 gave the same numbers."""
    model = sharp_model()
    fast = normxlogit.Protocol(samples=2, pis=(0.3, 0.6))
    by_seed = {seed: _pi_soft(model, seed=seed, protocol=fast) for seed in (0, 3)}
    assert by_seed[0] != by_seed[3]
    assert by_seed[3] == _pi_soft(model, protocol=fast.with_options(seed=3))
    assert by_seed[3] == _pi_soft(model, seed=3, protocol=fast.with_options(seed=3))
    assert by_seed[0] == _pi_soft(model, protocol=fast)  # no seed: the protocol's own
    with pytest.raises(InvalidInputError, match="seed=3 and the protocol's seed=5 disagree"):
        _pi_soft(model, seed=3, protocol=fast.with_options(seed=5))
