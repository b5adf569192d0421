"""Round twenty-six of new-user probes, probe b (Python API): segment methods on a whole
answer whose renderings leave no prompt refused up front (P01); explain_steps given as one
number, step() and top_tokens() with wrong values refused with the fix (P02); an empty
string default shown quoted (P03); a step whose token is its contrast's shown as not
explained (P04); a generation's frame with its contrast and segment columns (P05)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from normxlogit.common.errors import InvalidInputError, InvalidOptionError

from .conftest import explainable

PROMPT = "the film is good."
SEGMENT_METHODS = ["leave_one_out", "feature_ablation", "contextcite", "shapley_sampling"]


@pytest.fixture(scope="module")
def lm():
    return explainable("llama", "causal_lm")


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize("method", SEGMENT_METHODS)
@pytest.mark.parametrize(
    "answer", [{"continuation": " film is"}, {"generate": True, "max_new_tokens": 2}]
)
def test_p01_empty_prompt_refused_before_any_pass(lm, method, answer, monkeypatch):
    from normxlogit.explaining import segment_games

    def never(*args, **kwargs):
        raise AssertionError("a generation was built before the refusal")

    original = segment_games.prompt_ids

    def no_bos(model, prompt):  # as a base LM with no BOS token reads an empty prompt
        return original(model, prompt) if prompt.strip() else []

    monkeypatch.setattr(segment_games, "build_generations", never)
    monkeypatch.setattr(segment_games, "prompt_ids", no_bos)
    with pytest.raises(InvalidInputError, match="add a question or an instruction outside"):
        lm.explain(PROMPT, segments="sentences", method=method, **answer)


def test_p01_shapley_refused_with_several_segments(lm, monkeypatch):
    from normxlogit.explaining import segment_games

    original = segment_games.prompt_ids
    monkeypatch.setattr(
        segment_games, "prompt_ids", lambda m, p: original(m, p) if p.strip() else []
    )
    with pytest.raises(InvalidInputError, match="is read as no token at all"):
        lm.explain(
            "the film is good. The plot is bad.",
            generate=True,
            max_new_tokens=2,
            segments="sentences",
            method="shapley_sampling",
            samples=2,
        )


def test_p01_leave_one_out_with_two_segments_still_works(lm):
    e = lm.explain(
        "the film is good. The plot is bad.",
        continuation=" film is",
        segments="sentences",
        method="leave_one_out",
    )
    assert np.isfinite(e.segments.scores).all()


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    ("steps", "fix"), [(2, r"\[2\]"), (np.int64(1), r"\[1\]"), (1.0, r"\[1\]")]
)
def test_p02_explain_steps_one_number(lm, steps, fix):
    with pytest.raises(InvalidInputError, match=r"explain_steps is a list of step numbers.*" + fix):
        lm.explain(PROMPT, generate=True, max_new_tokens=3, explain_steps=steps)


@pytest.mark.parametrize("steps", ["0,2", {0: 1}])
def test_p02_explain_steps_text_or_mapping(lm, steps):
    with pytest.raises(InvalidInputError, match="explain_steps is a list of step numbers"):
        lm.explain(PROMPT, generate=True, max_new_tokens=3, explain_steps=steps)


def test_p02_explain_steps_range_and_array_accepted(lm):
    g = lm.explain(PROMPT, generate=True, max_new_tokens=3, explain_steps=np.array([0, 2]))
    assert g.explained_steps == [0, 2]


@pytest.fixture(scope="module")
def generation(lm):
    return lm.explain(PROMPT, generate=True, max_new_tokens=3, method="gradient_x_input")


@pytest.mark.parametrize("index", [1.0, "1", True, None])
def test_p02_step_takes_an_int(generation, index):
    with pytest.raises(InvalidInputError, match=r"step\(\) takes a step number, an int"):
        generation.step(index)


def test_p02_step_numpy_int_accepted(generation):
    assert generation.step(np.int64(1)).to_frame().shape[0] > 0


@pytest.fixture(scope="module")
def classified():
    return explainable("bert", "classification").explain("the film is good", target="all")


def test_p02_top_tokens_target_and_layer(classified):
    names = list(classified.targets)
    count = len(names)
    with pytest.raises(InvalidInputError, match=r"is not a target.*column index"):
        classified.top_tokens(3, target=count + 3)
    with pytest.raises(InvalidInputError, match="is not a target of this explanation"):
        classified.top_tokens(3, target=count)
    with pytest.raises(InvalidInputError, match="is not a target of this explanation"):
        classified.top_tokens(3, target="no such label")
    assert classified.top_tokens(3, target=names[-1]) == classified.top_tokens(3, target=count - 1)
    with pytest.raises(InvalidInputError, match=r"layer=7 is not a layer.*it has no layers"):
        classified.top_tokens(3, layer=7)
    with pytest.raises(InvalidInputError, match="k, how many tokens"):
        classified.top_tokens(-1)
    assert classified.top_tokens(2, layer=0) == classified.top_tokens(2)


# ------------------------------------------------------------------ P03
def test_p03_empty_default_shown_quoted(lm):
    with pytest.raises(InvalidOptionError, match=r"replacement='' \(the default: the empty"):
        lm.explain(PROMPT, segments="sentences", method="feature_ablation", replacement=None)


# ------------------------------------------------------------------ P04
@pytest.fixture(scope="module")
def same_step(lm):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lm.explain(
            "the film is", continuation=[5, 6], contrast=[5, 7], method="gradient_x_input"
        )


def test_p04_contrast_is_target_step_not_explained(same_step):
    from rich.console import Console

    assert same_step.contrast_is_target_steps == [0]
    page = same_step.to_html()
    assert "not explained: its token is its contrast" in page
    assert 'title="nan"' not in page
    options = re.findall(r"<option[^>]*>([^<]*)</option>", page)
    assert "step 0" not in options and "step 1" in options
    console = Console(record=True, width=200)
    console.print(same_step)
    assert "its token is its contrast" in console.export_text()


# ------------------------------------------------------------------ P05
def test_p05_generation_frame_has_contrast_and_segment(lm, same_step):
    frame = same_step.to_frame()
    assert "contrast" in frame.columns
    for step in (0, 1):
        assert set(frame[frame.step == step].contrast) == {same_step.contrasts[step]}
    assert set(same_step.step(1).to_frame().contrast) == set(frame[frame.step == 1].contrast)
    g = lm.explain(
        "the film is good. The plot is bad.",
        continuation=" film is",
        segments="sentences",
        method="gradient_x_input",
    )
    frame = g.to_frame()
    assert "segment" in frame.columns
    one = frame[frame.step == 1].reset_index(drop=True)
    assert one.segment.fillna(-1).tolist() == g.step(1).to_frame().segment.fillna(-1).tolist()


# ------------------------------------------------------------------ round 27 (sanity, files)
def test_r27_p01_a_method_named_none_reads_back_as_the_message_says(tmp_path):
    """pandas reads a method named None/NA/nan as missing; the refusal names the read that
    keeps it (and that read gives the saved result back)."""
    import pandas as pd

    from normxlogit.sanity import SanityResult

    frame = pd.DataFrame(
        {
            "method": ["None", "g"],
            "mode": ["cascading", "cascading"],
            "randomized": ["top", "top"],
            "step": [0, 0],
            "instance": [0, 0],
            "spearman": [0.5, 0.25],
            "top_k": [float("nan"), 0.5],
        }
    )
    path = tmp_path / "s.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InvalidInputError) as caught:
        SanityResult(pd.read_csv(path))
    told = str(caught.value)
    assert "method is blank" in told and "keep_default_na=False, na_values=['']" in told
    back = SanityResult(pd.read_csv(path, keep_default_na=False, na_values=[""]))
    assert list(back.frame["method"]) == ["None", "g"] and back.frame["top_k"].isna()[0]


def test_r27_p03_mode_data_names_data_randomization():
    from normxlogit.sanity import parameter_randomization

    with pytest.raises(InvalidInputError, match=r"call normxlogit.sanity.data_randomization"):
        parameter_randomization(
            explainable("bert", "classification"), ["a"], ["random"], mode="data"
        )


def test_r27_p02_an_empty_evidence_cell_says_to_write_brackets(tmp_path):
    """An empty evidence cell was told to "give every row an evidence column"; the row had
    one. [] is the empty rationale, which empty_rationale= leaves out or scores."""
    from normxlogit.cli.evaluate import _check_metric_inputs
    from normxlogit.data import read_examples

    data = tmp_path / "p.csv"
    data.write_text('text,label,evidence\n"a good film",positive,1 2\n"a dull one",negative,\n')
    with pytest.raises(InvalidInputError) as caught:
        _check_metric_inputs(data, read_examples(data), ["token_f1"], False)
    assert "line 3" in str(caught.value) and "write [] for a text whose rationale" in str(
        caught.value
    )
    data.write_text('text,label,evidence\n"a good film",positive,1 2\n"a dull one",negative,[]\n')
    _check_metric_inputs(data, read_examples(data), ["token_f1"], False)  # accepted
