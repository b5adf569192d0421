"""Round eleven of new-user probes, the loading side: saved files (evaluation results,
sanity frames, generation explanations) edited by hand into what no run writes, each
refused at load with the field and the row, with tiny models."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from normxlogit import Protocol, evaluate
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.common.fields import name_problem
from normxlogit.evaluation.registry import list_metrics
from normxlogit.evaluation.result import EvaluationResult, _grid
from normxlogit.explanations.explanation import Explanation
from normxlogit.explanations.generation import GenerationExplanation
from normxlogit.sanity import SanityResult

from .conftest import explainable, sanity_frame, sharp_model

TEXTS = ["Good fun today, really.", "Bad day here."]
PROTOCOL = Protocol(ratios=(0.2, 0.5), step=0.5, steps=2, pis=(0.25, 0.75), samples=2)
METRICS = ["comp_cd", "suff_cd", "deletion", "pi_soft_nc", "soft_ns", "sanity_spearman"]


@pytest.fixture(scope="module")
def model():
    return sharp_model()


@pytest.fixture(scope="module")
def saved(model, tmp_path_factory):
    """A result of metrics of every kind of x: ratios, step fractions, pis, none, and
    randomisation steps."""
    explained = {"g": model.explain(TEXTS, "gradient_x_input")}
    result = evaluate(model, explained, METRICS, protocol=PROTOCOL)
    path = tmp_path_factory.mktemp("result") / "r.json"
    result.save(path)
    return json.loads(path.read_text()), result


@pytest.fixture(scope="module")
def lm():
    return explainable("llama", "causal_lm")


@pytest.fixture(scope="module")
def generation(lm):
    return lm.explain("Rome is in", "gradient_x_input", generate=True, max_new_tokens=2)


def _load(data: dict, tmp_path) -> EvaluationResult:
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return EvaluationResult.load(path)


def _row(data: dict, metric: str) -> dict:
    return next(row for row in data["rows"] if row["metric"] == metric)


def test_a_saved_result_of_every_kind_of_x_loads_as_saved(saved, tmp_path):
    """The grid check refuses nothing a run writes."""
    data, result = saved
    loaded = _load(data, tmp_path)
    pd.testing.assert_frame_equal(loaded.frame, result.frame)
    assert loaded.summary().values.equals(result.summary().values)


def test_every_metric_has_a_grid_or_an_index_axis():
    for metric in list_metrics():
        grid = _grid(metric, PROTOCOL)
        assert grid is None or isinstance(grid, tuple)
    assert _grid("segment_drop", PROTOCOL) == PROTOCOL.drop_k
    assert _grid("insertion", PROTOCOL) == (0.5, 1.0)
    assert _grid("soft_nc", PROTOCOL) == ()


def test_a_metric_named_twice_is_refused(saved, tmp_path):
    """E02: metrics ["comp_cd", "comp_cd"] loaded, then summary() raised TypeError."""
    data = json.loads(json.dumps(saved[0]))
    data["metrics"] = [*data["metrics"], "comp_cd"]
    with pytest.raises(InvalidFileError, match="'metrics' names comp_cd twice"):
        _load(data, tmp_path)


def test_an_unknown_metric_is_refused_at_load(saved, tmp_path):
    """A metric no summary can read: refused at load, not at summary()."""
    data = json.loads(json.dumps(saved[0]))
    data["metrics"] = [*data["metrics"], "comp_xx"]
    with pytest.raises(InvalidFileError, match="'metrics' names 'comp_xx'.*available"):
        _load(data, tmp_path)


@pytest.mark.parametrize(
    ("metric", "x"),
    [
        ("comp_cd", -0.5),
        ("comp_cd", 0.50000001),
        ("comp_cd", 1e300),
        ("comp_cd", None),
        ("deletion", 0.2),  # comp's ratio, not a step fraction
        ("pi_soft_nc", 0.5),
        ("soft_ns", 0.5),  # one number: x null
        ("sanity_spearman", 0.5),  # a step index
        ("sanity_spearman", -1),
    ],
)
def test_an_x_off_the_protocols_grid_is_refused(saved, tmp_path, metric, x):
    """E09: a row at x -0.5 or 0.50000001 (protocol ratios [0.5]) was averaged in."""
    data = json.loads(json.dumps(saved[0]))
    row = _row(data, metric)
    data["rows"].append({**row, "x": x, "value": 0.25})
    number = len(data["rows"]) - 1
    with pytest.raises(InvalidFileError, match=rf"rows\[{number}\]: 'x' is .*{metric}"):
        _load(data, tmp_path)


@pytest.mark.parametrize("name", ["g\u200b", "\ufeffg", "g\u202e", "g\u00a0x", " g"])
def test_a_method_named_with_invisible_characters_in_a_result_is_refused(saved, tmp_path, name):
    """E08: method 'l\\u200b' made a second summary row 'l' beside 'l'."""
    data = json.loads(json.dumps(saved[0]))
    data["rows"][3]["method"] = name
    with pytest.raises(InvalidFileError, match=r"rows\[3\]: 'method' is .*write it as"):
        _load(data, tmp_path)


@pytest.mark.parametrize("column", ["method", "randomized"])
@pytest.mark.parametrize(
    "edit", [lambda s: f" {s} ", lambda s: f"\ufeff{s}", lambda s: f"{s}\u200b", str.upper]
)
def test_a_sanity_name_with_spaces_around_or_invisible_characters_is_refused(column, edit):
    """E08: ' gradient_x_input ' or 'gradient_x_input\\u200b' on one row of a sanity CSV
    made a second, identical-looking row in summary()."""
    frame = sanity_frame("g x")
    assert len(SanityResult(frame).summary()) == 2  # spaces inside a name are its own
    frame.loc[2, column] = edit(frame.loc[2, column])
    if edit is str.upper:  # a visibly different name is a name
        # with both of its steps: a method lacking one another method holds is refused
        frame.loc[0, column] = edit(frame.loc[0, column])
        SanityResult(frame)
        return
    with pytest.raises(InvalidInputError, match=f"row 2 .*{column} is .*write it as"):
        SanityResult(frame)


def test_name_problem_keeps_visible_names():
    for name in ("gradient_x_input", "IG 50 steps", "café", "积分梯度"):
        assert name_problem(name) is None
    assert "combining accents" in name_problem("cafe\u0301")  # round twelve: looks like café
    assert "U+200B" in name_problem("l\u200b")
    assert "write it as 'a b'" in name_problem("a\u00a0b")


@pytest.mark.parametrize("value", [2**63, 2**63 + 5, 10**30, -1])
def test_a_generations_token_id_past_64_bits_is_refused(generation, value):
    """E03: an input id of 2**63 + 5 loaded, then evaluate failed inside the tokenizer."""
    data = generation.to_dict()
    assert GenerationExplanation.from_dict(data).input_ids == generation.input_ids
    data["input_ids"] = [*data["input_ids"]]
    data["input_ids"][1] = value
    with pytest.raises(InvalidInputError, match=r"input_ids\[1\] is .*token ids"):
        GenerationExplanation.from_dict(data)


def test_a_steps_explanation_token_id_past_64_bits_is_refused(generation):
    data = generation.step(1).to_dict()  # an Explanation with input_ids
    assert Explanation.from_dict(data).input_ids == data["input_ids"]
    data["input_ids"] = [*data["input_ids"]]
    data["input_ids"][2] = 2**64
    with pytest.raises(InvalidInputError, match=r"input_ids\[2\] is 18446744073709551616"):
        Explanation.from_dict(data)


@pytest.mark.parametrize("probs", [[2.0, 0.5], [0.5, float("nan")], [-0.1, 0.5]])
def test_a_generations_step_probability_outside_0_to_1_is_refused(generation, probs):
    """E10: step_probs [2.0, NaN] loaded and were shown as they were."""
    data = generation.to_dict()
    assert all(0 <= p <= 1 for p in data["step_probs"])  # what a run writes
    data["step_probs"] = probs
    bad = next(i for i, p in enumerate(probs) if not 0 <= p <= 1)
    with pytest.raises(InvalidInputError, match=rf"step_probs\[{bad}\] is .*from 0 to 1"):
        GenerationExplanation.from_dict(data)


@pytest.mark.parametrize(("key", "value"), [("entropy", -5.0), ("probability", 1.5)])
def test_a_generations_impossible_step_score_is_refused(generation, key, value):
    """Y13: a negative entropy in step_scores loaded."""
    data = generation.to_dict()
    data["step_scores"] = {k: list(v) for k, v in data["step_scores"].items()}
    data["step_scores"][key][1] = value
    with pytest.raises(InvalidInputError, match=rf"step_scores.{key}\[1\] is "):
        GenerationExplanation.from_dict(data)
    data["step_scores"][key][1] = None  # null: missing, as before
    GenerationExplanation.from_dict(data)
