"""Explanation exports: JSON round trip, DataFrame, HTML, terminal, word aggregation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rich.console import Console

import normxlogit
from normxlogit import Explanation, InvalidInputError

from ..conftest import explainable


@pytest.fixture(scope="module")
def classifier():
    return explainable("bert", "classification")


def test_json_has_the_documented_keys_and_round_trips(classifier, tmp_path):
    explanation = classifier.explain("an unremarkable screenplay", target="all")
    data = json.loads(explanation.to_json())
    for key in ("tokens", "scores", "label", "probs", "method", "settings"):
        assert key in data
    assert np.asarray(data["scores"]).shape == (len(data["tokens"]), 3)
    path = explanation.save(tmp_path / "one.json")
    loaded = Explanation.load(path)
    assert loaded.tokens == explanation.tokens
    assert loaded.targets == explanation.targets
    np.testing.assert_allclose(loaded.scores, explanation.scores)
    assert loaded.probs == pytest.approx(explanation.probs)
    assert loaded.settings == explanation.settings


def test_many_explanations_save_and_load(classifier, tmp_path):
    explanations = classifier.explain(["one text", "another text here"], layer="all")
    path = normxlogit.save_explanations(explanations, tmp_path / "many.json")
    loaded = normxlogit.load_explanations(path)
    assert [e.layers for e in loaded] == [e.layers for e in explanations]
    for a, b in zip(loaded, explanations, strict=True):
        np.testing.assert_allclose(a.scores, b.scores)


def test_frame_is_tidy(classifier):
    explanation = classifier.explain("a fine film", target="all", layer="all")
    frame = explanation.to_frame()
    layers, tokens, labels = explanation.scores.shape
    assert len(frame) == layers * tokens * labels
    assert {"layer", "position", "token", "target", "score", "method"} <= set(frame.columns)
    row = frame[(frame.layer == 1) & (frame.position == 2) & (frame.target == "LABEL_1")]
    assert row.score.item() == pytest.approx(float(explanation.scores[1, 2, 1]))


def test_html_is_standalone_with_a_row_per_label(classifier):
    explanation = classifier.explain("a <b>bold</b> & strange film", target="all")
    page = explanation.to_html()
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "http" not in page
    assert page.count("<tr>") == len(explanation.targets)
    assert "&lt;" in page  # token text is escaped


def test_terminal_rendering_shows_tokens_and_prediction(classifier):
    explanation = classifier.explain("a gripping film")
    console = Console(record=True, width=120, color_system="truecolor")
    console.print(explanation)
    text = console.export_text()
    assert "gripping" in text and explanation.label in text
    assert "rgb(" in console.export_html() or "#" in console.export_html()


def test_word_aggregation_sums_subwords(classifier):
    explanation = classifier.explain("unbelievably overwrought filmmaking")
    words = explanation.aggregate_words("sum")
    assert words.tokens == ["[CLS]", "unbelievably", "overwrought", "filmmaking", "[SEP]"]
    assert words.scores.sum() == pytest.approx(explanation.scores.sum(), rel=1e-5)
    via_explain = classifier.explain("unbelievably overwrought filmmaking", aggregate="max")
    assert via_explain.tokens == words.tokens
    with pytest.raises(InvalidInputError, match="aggregate"):
        explanation.aggregate_words("median")


def test_top_tokens_skip_special_tokens(classifier):
    explanation = classifier.explain("a truly gripping film")
    tokens = [token for token, _ in explanation.top_tokens(10)]
    assert "[CLS]" not in tokens and "[SEP]" not in tokens
    assert len(tokens) == 4


def test_every_kind_shares_one_base_and_one_reader(tmp_path):
    """Text and generation explanations save, load and check fields through one base and
    one io module; the saved "kind" picks the class, an unknown kind is refused."""
    from normxlogit.common.errors import InvalidFileError
    from normxlogit.explanations.base import ExplanationBase
    from normxlogit.explanations.io import KINDS, load_explanations, load_payload

    text = explainable("bert", "classification").explain("a fine film")
    generation = explainable("llama", "causal_lm").explain(
        "the film", generate=True, max_new_tokens=3
    )
    assert set(KINDS.values()) == {type(text), type(generation)}
    assert all(issubclass(kind, ExplanationBase) for kind in KINDS.values())
    both = tmp_path / "both.json"
    normxlogit.save_explanations([text, generation], both)
    loaded = load_explanations(both)
    assert [type(e) for e in loaded] == [type(text), type(generation)]
    assert loaded[1].to_dict() == generation.to_dict() and loaded[0].to_json() == text.to_json()
    with pytest.raises(InvalidInputError, match="kind 'heatmap'"):
        load_payload({**text.to_dict(), "kind": "heatmap"})
    one = generation.save(tmp_path / "g.json")
    with pytest.raises(InvalidInputError, match="holds a GenerationExplanation, not an? Expl"):
        normxlogit.Explanation.load(one)
    with pytest.raises(InvalidInputError, match=r"load it with normxlogit\.Explanation\.load"):
        normxlogit.GenerationExplanation.load(text.save(tmp_path / "t.json"))
    assert normxlogit.GenerationExplanation.load(one).to_dict() == generation.to_dict()
    with pytest.raises(InvalidInputError, match="holds 2 explanations, not one"):
        normxlogit.Explanation.load(both)
    (tmp_path / "bad.json").write_text('{"kind": "generation", "prompt": "x"}')
    with pytest.raises(InvalidFileError, match="a generation explanation without tokens"):
        load_explanations(tmp_path / "bad.json")
