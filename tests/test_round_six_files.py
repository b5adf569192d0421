"""Round six of new-user probes (issue 41), saved files and workflows: segment scores that
do not fit their explanation, one explanation saved alone, an edited sanity CSV, segments
through ``explain_and_evaluate``, and sanity checks of segment methods. Tiny models."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

import normxlogit
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.sanity import SanityResult, parameter_randomization

from .conftest import build_model, fresh_tokenizer, sharp_model

TEXTS = [
    "The plot is thin. The acting is wonderful! I would see it again.",
    "It starts well. Then it drags. The end is a mess.",
]


def _edited(path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _set_segment_scores(path, scores: np.ndarray) -> None:
    _edited(path, lambda data: data["segments"].__setitem__("scores", scores.tolist()))


def test_segment_scores_that_miss_a_segment_target_layer_or_step_are_refused_on_load(tmp_path):
    """F17: a saved file's segment scores must have the token scores' shape with segments
    in place of tokens, else they fail later (IndexError) or give a silent number."""
    model = sharp_model()
    path = tmp_path / "e.json"
    plain = model.explain(TEXTS[0], segments="sentences")  # [S]
    layered = model.explain(TEXTS[0], segments="sentences", layer="all", target="all")
    for explained, edit in (
        (plain, lambda s: s[:2]),  # a segment dropped
        (plain, lambda s: s[:, None]),  # a target axis the token scores do not have
        (layered, lambda s: s[1:]),  # a layer dropped
        (layered, lambda s: s[..., :1]),  # a target dropped
    ):
        explained.save(path)
        _set_segment_scores(path, edit(explained.segments.scores))
        expected = list(explained.segments.scores.shape)
        with pytest.raises(InvalidFileError, match=rf"expected {re.escape(str(expected))}"):
            normxlogit.load_explanations(path)
    lm = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()))
    generation = lm.explain(TEXTS[1], generate=True, max_new_tokens=3, segments="sentences")
    generation.save(path)
    _edited(path, lambda d: d["segments"]["scores"].pop())  # one step fewer
    with pytest.raises(InvalidFileError, match=r"has shape \[2, 3\], expected \[3, 3\]"):
        normxlogit.load_explanations(path)
    generation.save(path)  # and a file as saved still loads
    back = normxlogit.load_explanations(path)[0]
    np.testing.assert_array_equal(back.segments.scores, generation.segments.scores)


def test_save_explanations_takes_one_explanation_and_refuses_what_is_not_one(tmp_path):
    """F19: one explanation given alone is saved as a list of one would be (and loads
    back as that list); a str or a list of anything else is refused in one line."""
    model = sharp_model()
    one = model.explain(TEXTS[0])
    alone = normxlogit.save_explanations(one, tmp_path / "alone.json")
    listed = normxlogit.save_explanations([one], tmp_path / "listed.json")
    assert alone.read_text() == listed.read_text()
    back = normxlogit.load_explanations(alone)
    assert len(back) == 1 and back[0].tokens == one.tokens
    lm = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()))
    generation = lm.explain(TEXTS[1], generate=True, max_new_tokens=2)
    assert normxlogit.load_explanations(normxlogit.save_explanations(generation, alone))
    for wrong, said in (
        ("e.json", "not a str"),
        ([one, "x"], "not a list holding a str"),
        ([], "not an empty list"),
        ({"m": [one]}, "not a dict"),
    ):
        with pytest.raises(InvalidInputError, match=said):
            normxlogit.save_explanations(wrong, tmp_path / "wrong.json")
    assert not (tmp_path / "wrong.json").exists()


def test_a_sanity_csv_with_impossible_values_is_refused_naming_its_line(tmp_path):
    """F20: a Spearman correlation outside [-1, 1], a top-k share outside [0, 1], a blank
    method or an unknown mode in an edited file are refused, naming the row and line."""
    path = tmp_path / "sanity.csv"
    parameter_randomization(sharp_model(), TEXTS, ["normxlogit"]).save(path)
    frame = pd.read_csv(path)
    assert SanityResult(frame).verdicts()["final_spearman"].between(-1, 1).all()
    for column, value, said in (
        ("spearman", 5.0, r"spearman is 5.0, but a Spearman correlation lies in \[-1, 1\]"),
        ("spearman", float("inf"), "spearman is inf"),
        ("top_k", -3.0, r"top_k is -3.0, but top_k, the share .* lies in \[0, 1\]"),
        ("method", None, "method is blank"),
        ("mode", "cascade", "mode is 'cascade'"),
    ):
        edited = frame.astype({column: object})
        edited.loc[2, column] = value
        edited.to_csv(path, index=False)
        with pytest.raises(InvalidInputError, match=f"row 2 \\(line 4 of its CSV\\): {said}"):
            SanityResult(pd.read_csv(path))


def test_explain_and_evaluate_takes_segments_for_segment_methods_and_metrics():
    """F15: the message's fix ("pass segments=") works in explain_and_evaluate; segment
    plausibility takes its evidence as segment indices (word indices would be misread)."""
    model = sharp_model()
    with pytest.raises(InvalidInputError, match="segments="):
        normxlogit.explain_and_evaluate(model, TEXTS, ["leave_one_out"], ["comp_cd"])
    done = normxlogit.explain_and_evaluate(
        model, TEXTS, ["leave_one_out", "normxlogit"], ["comp_cd"], segments="sentences"
    )
    explained = done.explained.explanations
    assert explained["leave_one_out"][0].segments.scores.shape == (3,)
    assert explained["normxlogit"][1].segments.how == "sum"
    assert set(done.result.frame["method"]) == {"leave_one_out", "normxlogit"}
    for wrong, said in (
        (dict(segment_reduce="median"), "segment_reduce='median' is not one of"),
        (dict(segment_reduce="mean", segments=None), "none were given"),
        (dict(metrics=["segment_hit_1"], evidence_words=[[1], [2]]), "evidence_segments="),
    ):
        arguments = {"segments": "sentences", "metrics": ["comp_cd"], **wrong}
        with pytest.raises(InvalidInputError, match=said):
            normxlogit.explain_and_evaluate(model, TEXTS, ["normxlogit"], **arguments)
    hits = normxlogit.explain_and_evaluate(
        model,
        TEXTS,
        ["leave_one_out"],
        ["segment_hit_1"],
        segments="sentences",
        evidence_segments=[[1], [2]],
    )
    alone = normxlogit.evaluate(
        model, hits.explained.explanations, ["segment_hit_1"], evidence=[[1], [2]]
    )
    assert hits.result.frame["value"].tolist() == alone.frame["value"].tolist()


def test_sanity_checks_refuse_segment_methods_by_name():
    """F16: the sanity checks compare token rankings and explain without segments; a
    segment method is refused naming it, not with "pass segments=" it was given."""
    model = sharp_model()
    said = "sanity checks compare the token scores of token methods; 'leave_one_out' is a"
    loo = model.explain(TEXTS, "leave_one_out", segments="sentences")
    with pytest.raises(InvalidInputError, match=said):
        normxlogit.evaluate(model, {"loo": loo}, ["sanity_spearman"])
    with pytest.raises(InvalidInputError, match=said):
        parameter_randomization(model, TEXTS, ["leave_one_out"])
    token = model.explain(TEXTS, "normxlogit", segments="sentences")  # a token method: fine
    result = normxlogit.evaluate(model, {"nx": token}, ["sanity_spearman"])
    assert result.frame["value"].notna().any()
