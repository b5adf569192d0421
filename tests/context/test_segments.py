"""Segments as units: resolving them, removing them, placing tokens in them, and token
scores reduced over them in every explanation kind (issue 42)."""

from __future__ import annotations

import numpy as np
import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.model.segments import Segments, resolve_segments, split_sentences
from tests.conftest import build_model, fresh_tokenizer, prompted_llama, sharp_model

TEXT = "The film opens slowly. Then it soars! The cast is great."


def test_sentences_split_on_punctuation_before_a_capital_and_on_line_breaks():
    text = 'It rained. "Yes," she said. e.g. this stays\nA new line? 3 more. end'
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "It rained.",
        '"Yes," she said. e.g. this stays',
        "A new line?",
        "3 more. end",
    ]
    assert split_sentences("  \n ") == []


def test_removal_joins_the_kept_segments_as_contextcite_does():
    text = "Context: A b. C d. E f.\n\nQuery: q"
    segments = resolve_segments(text, ["A b.", "C d.", "E f."])
    assert segments.without(text, [True, True, True]) == text
    assert segments.without(text, [False, True, True]) == "Context: C d. E f.\n\nQuery: q"
    assert segments.without(text, [True, False, True]) == "Context: A b. E f.\n\nQuery: q"
    assert segments.without(text, [False, False, False]) == "Context: \n\nQuery: q"
    assert (
        segments.without(text, [True, False, True], "...") == "Context: A b. ... E f.\n\nQuery: q"
    )


def test_segments_of_a_pair_lie_in_either_text():
    pair = ("is it big?", "Small start. It is big.")
    segments = resolve_segments(pair, ["Small start.", "It is big."])
    assert segments.spans == ((1, 0, 12), (1, 13, 23))
    assert segments.without(pair, [False, True]) == ("is it big?", "It is big.")
    assert len(resolve_segments(pair, "sentences")) == 3  # the question is a segment too


@pytest.mark.parametrize(
    "spec, message",
    [
        ("words", "give 'sentences'"),
        (["Then it soars!", "The film"], "not in the text after the segments before it"),
        (["  "], "is blank"),
        ([(5, 2)], "not a non-empty span"),
        ([(0, 10), (5, 20)], "overlaps"),
        (42, "must be 'sentences'"),
        ([], "must be 'sentences'"),
    ],
)
def test_bad_segment_specs_are_refused_with_the_fix(spec, message):
    with pytest.raises(InvalidInputError, match=message):
        resolve_segments(TEXT, spec)


def test_token_scores_reduce_over_each_segment():
    model = normxlogit.load((build_model("bert", "classification"), fresh_tokenizer()))
    plain = model.explain(TEXT)
    for how in ("sum", "mean", "max", "absmax"):
        explained = model.explain(TEXT, segments="sentences", segment_reduce=how)
        members = np.array([-1 if m is None else m for m in explained.segments.token_segments])
        assert explained.segments.texts == [
            "The film opens slowly.",
            "Then it soars!",
            "The cast is great.",
        ]
        for index in range(3):
            block = plain.scores[members == index]
            expected = {
                "sum": block.sum(),
                "mean": block.mean(),
                "max": block.max(),
                "absmax": block[np.abs(block).argmax()],
            }[how]
            assert explained.segments.scores[index] == pytest.approx(expected, rel=1e-6)
    special = [t for t, m in zip(explained.tokens, members, strict=True) if m == -1]
    assert special == ["[CLS]", "[SEP]"]


def test_segments_travel_through_json_frames_and_word_merging(tmp_path):
    model = normxlogit.load((build_model("bert", "classification"), fresh_tokenizer()))
    explained = model.explain(TEXT, segments="sentences", target="all", layer="all")
    assert explained.segments.scores.shape == (3, 3, 3)  # layers x segments x labels
    normxlogit.save_explanations([explained], tmp_path / "e.json")
    back = normxlogit.load_explanations(tmp_path / "e.json")[0]
    np.testing.assert_array_equal(back.segments.scores, explained.segments.scores)
    assert back.segments.token_segments == explained.segments.token_segments
    frame = explained.segments_frame()
    assert len(frame) == 3 * 3 * 3 and set(frame["reduction"]) == {"sum"}
    assert "segment" in explained.to_frame().columns
    words = model.explain(TEXT, segments="sentences").aggregate_words("sum")
    assert len(words.segments.token_segments) == len(words.tokens)


def test_a_prompted_models_segments_skip_the_prompt():
    model = prompted_llama({"pos": "good", "neg": "bad"}, user="Review: {text}")
    explained = model.explain(TEXT, segments=["Then it soars!", "The cast is great."])
    tokens = [
        t
        for t, m in zip(explained.tokens, explained.segments.token_segments, strict=True)
        if m is not None
    ]
    assert tokens == ["then", "it", "so", "##ars", "!", "the", "cast", "is", "great", "."]


def test_each_generation_step_has_its_segment_scores():
    model = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()))
    generation = model.explain(TEXT, generate=True, max_new_tokens=3, segments="sentences")
    assert generation.segments.scores.shape == (3, 3)
    step = generation.step(1)
    np.testing.assert_array_equal(step.segments.scores, generation.segments.scores[1])
    assert len(step.segments.token_segments) == len(step.tokens)
    frame = generation.segments_frame()  # the whole generation's, as one step's
    assert len(frame) == 3 * 3 and list(frame["step"].unique()) == [0, 1, 2]
    one = frame[frame["step"] == 1]
    np.testing.assert_allclose(one["score"], step.segments_frame()["score"], rtol=1e-6)
    assert list(one["text"]) == generation.segments.texts
    assert set(one["step_text"]) == {generation.token_texts[generation.prompt_length + 1]}
    with pytest.raises(InvalidInputError, match="has no segments"):
        model.explain(TEXT, generate=True, max_new_tokens=1).segments_frame()


def test_segment_methods_and_segment_options_refuse_what_they_cannot_do():
    model = sharp_model()
    with pytest.raises(InvalidInputError, match="pass segments="):
        model.explain(TEXT, method="leave_one_out")
    with pytest.raises(InvalidInputError, match="no per-layer variant"):
        model.explain(TEXT, method="leave_one_out", segments="sentences", layer=1)
    with pytest.raises(InvalidInputError, match="leave layer= out"):
        model.explain(TEXT, method="leave_one_out", segments="sentences", layer=-1)
    with pytest.raises(InvalidInputError, match="contrast"):
        model.explain(TEXT, method="leave_one_out", segments="sentences", contrast=0)
    with pytest.raises(InvalidInputError, match="segment_reduce= is for token methods"):
        model.explain(TEXT, method="shapley_sampling", segments="sentences", segment_reduce="max")
    with pytest.raises(InvalidInputError, match="leave aggregate= out"):
        model.explain(TEXT, segments="sentences", aggregate="sum")
    with pytest.raises(InvalidInputError, match="goes with segments="):
        model.explain(TEXT, segment_reduce="mean")
    with pytest.raises(InvalidInputError, match="one entry per text"):
        model.explain([TEXT, TEXT], segments=[["The film opens slowly."]])
    with pytest.raises(InvalidInputError, match="give each text's segments as a list"):
        model.explain([TEXT], segments=["The film opens slowly."])
    with pytest.raises(InvalidInputError, match="keep=1.5"):
        model.explain(TEXT, method="contextcite", keep=1.5, segments="sentences")


def test_segment_methods_give_every_token_its_segments_score():
    model = sharp_model()
    for method in ("leave_one_out", "shapley_sampling", "contextcite"):
        explained = model.explain(
            [TEXT, "Short one. Another one here."], method=method, segments="sentences"
        )[0]
        assert explained.segments.how == "native"
        for score, member in zip(explained.scores, explained.segments.token_segments, strict=True):
            expected = 0.0 if member is None else explained.segments.scores[member]
            assert score == pytest.approx(expected)


def test_a_batch_gives_each_text_what_it_gets_alone():
    model = sharp_model()
    texts = [TEXT, "One. Two words here. Three!", "A single sentence"]
    together = model.explain(
        texts, method="shapley_sampling", samples=3, segments="sentences", batch_size=2
    )
    for text, explained in zip(texts, together, strict=True):
        alone = model.explain(text, method="shapley_sampling", samples=3, segments="sentences")
        np.testing.assert_allclose(explained.segments.scores, alone.segments.scores, atol=1e-5)


def test_segments_are_frozen_spans():
    segments = Segments(((0, 0, 3),))
    assert len(segments) == 1 and segments.texts("abcdef") == ["abc"]


def test_leave_one_out_from_the_prefix_cache_equals_reading_every_rendering(monkeypatch):
    from normxlogit.explaining import segment_games

    model = prompted_llama({"pos": "good", "neg": "bad"}, user="Review: {text}")
    texts = [TEXT, "Short one. Another one here. And a third."]
    cached = model.explain(texts, method="leave_one_out", segments="sentences")
    monkeypatch.setattr(segment_games, "prefix_cacheable", lambda view: False)
    read = model.explain(texts, method="leave_one_out", segments="sentences")
    for a, b in zip(cached, read, strict=True):
        np.testing.assert_allclose(a.segments.scores, b.segments.scores, atol=1e-5)
