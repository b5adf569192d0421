"""Round six's findings on segments and the segment methods (issue 41): spans from NumPy,
ContextCite's options and its value on a regressor, a masked LM's mask in a segment,
renderings' truncation warnings, and a pair's segment found in both texts."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError
from tests.conftest import build_model, explainable, fresh_tokenizer, sharp_model

TEXT = "The plot is thin. The acting is wonderful! I would see it again."


def test_f01_numpy_integer_spans_are_taken_and_float_spans_named():
    model = sharp_model()
    spans = [(np.int64(0), np.int64(17)), (np.int64(18), np.int64(42))]
    explained = model.explain(TEXT, segments=spans)
    assert explained.segments.texts == ["The plot is thin.", "The acting is wonderful!"]
    assert model.explain(TEXT, segments=np.array(spans)).segments.texts == explained.segments.texts
    with pytest.raises(InvalidInputError, match=r"segments\[1\] = \(18\.0, 42\.0\): give whole"):
        model.explain(TEXT, segments=[(0, 17), (18.0, 42.0)])
    with pytest.raises(InvalidInputError, match=r"segments\[1\] = \(18, 42\) is a \(start, end\)"):
        model.explain(TEXT, segments=["The plot is thin.", (18, 42)])


def test_f02_contextcite_refuses_a_negative_alpha_in_one_line():
    with pytest.raises(InvalidInputError, match=r"^contextcite alpha=-1.0 must be >= 0"):
        sharp_model().explain(TEXT, "contextcite", segments="sentences", alpha=-1.0)


def test_f03_contextcite_refuses_a_negative_seed_in_one_line():
    with pytest.raises(InvalidInputError, match=r"^contextcite seed=-1 must be >= 0"):
        sharp_model().explain(TEXT, "contextcite", segments="sentences", seed=-1)


def test_f04_a_segment_holding_the_mask_is_refused_before_any_pass(monkeypatch):
    model = explainable("bert", "masked_lm")
    texts = ["Question: it is [MASK]. Context: Good. Bad.", "It is [MASK]. The acting is fine."]

    def no_pass(*args, **kwargs):
        raise AssertionError("a forward pass ran before the refusal")

    monkeypatch.setattr(model, "forward", no_pass)
    message = r"^segments\[0\] of text 1 holds the \[MASK\] the prediction is read at; leave"
    with pytest.raises(InvalidInputError, match=message):
        model.explain(texts, "leave_one_out", segments=[["Good.", "Bad."], "sentences"])
    monkeypatch.undo()
    kept = model.explain(texts[0], "leave_one_out", segments=["Good.", "Bad."])
    assert np.isfinite(kept.segments.scores).all()


def test_f05_contextcite_fits_a_regressors_output_itself():
    model = normxlogit.load((build_model("bert", "regression", seed=3), fresh_tokenizer()))
    default = model.explain(TEXT, "contextcite", segments="sentences", alpha=1e-9)
    itself = model.explain(TEXT, "contextcite", segments="sentences", alpha=1e-9, output="log_prob")
    assert default.settings["output"] == "log_prob" and np.abs(default.segments.scores).max() > 0
    np.testing.assert_allclose(default.segments.scores, itself.segments.scores)
    with pytest.raises(InvalidInputError, match="regressor's output is none; leave output out"):
        model.explain(TEXT, "contextcite", segments="sentences", output="logit_prob")
    classified = sharp_model().explain(TEXT, "contextcite", segments="sentences")
    assert classified.settings["output"] == "logit_prob"  # ContextCite's, as before


def test_f14_renderings_are_not_warned_about_as_texts():
    long = " ".join(f"This is sentence number {i}." for i in range(120))
    segments = [["The plot is thin."], ["This is sentence number 0.", "This is sentence number 1."]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sharp_model().explain([TEXT, long], "leave_one_out", segments=segments)
    dropped = [str(w.message) for w in caught if "the model reads at most" in str(w.message)]
    assert len(dropped) == 1 and dropped[0].startswith("text 1 has")


def test_f21_a_segment_in_both_texts_of_a_pair_is_refused_and_spans_place_it():
    model = sharp_model()
    pair = ("The plot is thin.", "The plot is thin. The acting is wonderful!")
    with pytest.raises(InvalidInputError, match=r"is in both texts of the pair; give \(part"):
        model.explain(pair, segments=["The plot is thin.", "The acting is wonderful!"])
    explained = model.explain(pair, segments=[(1, 0, 17), (1, 18, 42)])
    members = explained.segments.token_segments
    first_sep = explained.tokens.index("[SEP]")
    assert all(m is None for m in members[: first_sep + 1])  # nothing in the question
    assert {m for m in members[first_sep + 1 :] if m is not None} == {0, 1}
