"""Round fifteen (issue 41): chat prompts' format specs, label_words' shape and words,
misplaced segments' reasons, and segment methods' draws, refused up front in one line."""

from __future__ import annotations

import functools
import time

import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.model.segments import resolve_segments

from .conftest import build_model, fresh_tokenizer, prompted_llama

WORDS = {"neg": " bad", "pos": " good"}
TEXT = "The plot is thin. The acting is wonderful! I would see it again."


def _one_line(caught) -> str:
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("user", "written"),
    [
        ("{text:{text}}", "{text:{text}}"),  # P01: passed the constructor, failed in load
        ("{text:.0}", "{text:.0}"),  # P02: every text rendered as nothing
        ("{text:.3}", "{text:.3}"),  # P02: every text cut to 3 characters
        ("Review: {text!r}", "{text!r}"),
        ("{text!a}", "{text!a}"),
        ("{text:>10}", "{text:>10}"),
        ("{text!s:.5}", "{text!s:.5}"),
    ],
)
def test_p01_p02_a_format_spec_or_conversion_on_the_text_is_refused(user, written):
    with pytest.raises(InvalidInputError, match="write the field plain, {text}") as caught:
        normxlogit.ChatPrompt(user=user)
    assert written in _one_line(caught)


def test_p01_p02_a_pair_field_with_a_spec_is_refused_naming_that_field():
    with pytest.raises(InvalidInputError, match=r"write the field plain, \{passage\}"):
        normxlogit.ChatPrompt(user="Q: {question} P: {passage:.20}", fields=("question", "passage"))


def test_p01_p02_plain_fields_and_an_empty_spec_still_work():
    normxlogit.ChatPrompt(user="Review: {text:}")  # an empty spec changes nothing
    normxlogit.ChatPrompt(user="{{literal}} {text} {text}")


def test_p01_p02_a_prompt_with_a_precision_is_refused_at_load():
    with pytest.raises(InvalidInputError, match="would change the text"):
        prompted_llama(WORDS, user="{text:.3}")


@pytest.mark.parametrize(
    ("words", "shown"),
    [
        ({"neg": 5, "pos": " good"}, "got int 5 for 'neg'"),
        ({"neg": None, "pos": " good"}, "got NoneType None for 'neg'"),
        ({"neg": [" bad"], "pos": " good"}, "got list [' bad'] for 'neg'"),
        ([5, 6], "got int 5 at [0]"),
        ([" bad", None], "got NoneType None at [1]"),
    ],
)
def test_p03_a_word_that_is_no_string_is_refused_naming_it(words, shown):
    with pytest.raises(InvalidInputError, match="label_words' words are strings") as caught:
        prompted_llama(words)
    assert shown in _one_line(caught)


@pytest.mark.parametrize("words", ["ab", "good", b"ab"])
def test_p04_one_string_is_refused_not_read_letter_by_letter(words):
    with pytest.raises(InvalidInputError, match="read letter by letter") as caught:
        prompted_llama(words)
    assert "a dict {name: word} or a list of words" in _one_line(caught)


@pytest.mark.parametrize("words", [{" bad", " good", " meh"}, frozenset({" bad", " good"})])
def test_p04_a_set_is_refused_for_its_missing_order(words):
    with pytest.raises(InvalidInputError, match="has no order.*give a list or a dict") as caught:
        prompted_llama(words)
    _one_line(caught)


def test_p04_p05_a_non_collection_is_refused():
    with pytest.raises(InvalidInputError, match="a dict {name: word} or a list of words"):
        prompted_llama(5)


@pytest.mark.parametrize("words", [{}, [], ()])
def test_p05_empty_label_words_are_refused_not_dropped(words):
    with pytest.raises(InvalidInputError, match="label_words is empty.*leave label_words out"):
        prompted_llama(words)


def test_p03_p05_lists_tuples_and_dict_views_still_load_in_order():
    assert prompted_llama([" bad", " good"]).labels == ("bad", "good")  # as {name: word}
    assert prompted_llama((" bad", " good")).labels == ("bad", "good")
    assert prompted_llama(WORDS).labels == ("neg", "pos")


@pytest.mark.parametrize(
    ("segments", "said"),
    [
        (["The acting is wonderful!", "The plot is thin."], "comes before segments[0]"),
        (["The plot is thin.", "I would", "The acting"], "comes before segments[1]"),
        (["plot is thin. The", "The acting"], "overlaps segments[0]"),
        (["The plot is thin."] * 2, "repeats segments[0] (the text holds it once)"),
        (["The", "The", "The"], "repeats segments[1] (the text holds it 2 times)"),
    ],
)
def test_p11_a_misplaced_segment_gets_its_reason_not_an_accent_hint(segments, said):
    with pytest.raises(InvalidInputError) as caught:
        resolve_segments(TEXT, segments)
    message = _one_line(caught)
    assert said in message
    assert "accents" not in message
    assert "not in the text after the segments before it" in message


def test_p11_the_accent_hint_stays_where_it_applies():
    with pytest.raises(InvalidInputError, match="how its accents are encoded"):
        resolve_segments("A café opens. It closes.", ["A cafe\u0301 opens.", "It closes."])
    with pytest.raises(InvalidInputError) as caught:
        resolve_segments(TEXT, ["The plot is thin.", "Not there."])
    assert "accents" not in str(caught.value) and "copied exactly" in str(caught.value)


def test_p11_the_page_numbers_both_segments_from_one():
    from normxlogit.serve.work import ExplainRequest, _check_segments

    request = ExplainRequest(
        model="tiny",
        text=TEXT,
        methods=("gradient_x_input",),
        segments=("The acting is wonderful!", "The plot is thin."),
    )
    with pytest.raises(InvalidInputError) as caught:
        _check_segments(_classifier(), request)
    message = _one_line(caught)
    assert message.startswith("segment 2 ('The plot is thin.')")
    assert "comes before segment 1 there" in message and "accents" not in message


@functools.cache
def _classifier():
    return normxlogit.load((build_model("bert", "classification"), fresh_tokenizer()))


@pytest.mark.parametrize(
    ("method", "options", "said"),
    [
        ("contextcite", {"ablations": 50_000}, "ablations at most 8000"),
        ("shapley_sampling", {"samples": 50_000}, "samples at most 6000"),
    ],
)
def test_noted_draws_far_beyond_the_distinct_subsets_are_refused_up_front(method, options, said):
    """contextcite(ablations=10**7) on 3 segments drew for 8+ minutes to read 8 subsets."""
    started = time.monotonic()
    with pytest.raises(InvalidInputError, match=said) as caught:
        _classifier().explain(TEXT, method=method, segments="sentences", **options)
    assert time.monotonic() - started < 30
    assert "far more than the" in _one_line(caught)


def test_noted_the_text_whose_segments_are_too_few_is_named():
    with pytest.raises(InvalidInputError, match=r"^text 1: contextcite ablations=5000"):
        _classifier().explain(
            [TEXT, "One sentence only."], method="contextcite", segments="sentences", ablations=5000
        )


def test_noted_draws_up_to_the_limit_and_the_defaults_still_run():
    model = _classifier()
    for method, options in (("contextcite", {}), ("contextcite", {"ablations": 2000})):
        explained = model.explain("One sentence.", method=method, segments="sentences", **options)
        assert explained.segments is not None
    model.explain(TEXT, method="shapley_sampling", segments="sentences")  # 25 of 6 orders
