"""Round fourteen: chat prompts and prompted label words are refused up front, in one line."""

from __future__ import annotations

import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError, InvalidOptionError

from .conftest import CHAT_TEMPLATE, build_model, fresh_tokenizer, prompted_llama

WORDS = {"neg": " bad", "pos": " good"}


@pytest.mark.parametrize(
    ("user", "match"),
    [
        ("Review: {}", r"names \{\}"),
        ("Review: {0}", r"names \{0\}"),
        ("{text", "unmatched '{'"),
        ("{text}}", "unmatched '}'"),
        ("{text:{}}", "cannot be filled"),
        ("{text!x}", "cannot be filled"),
        (5, "user template is a string"),
    ],
)
def test_p01_bad_templates_are_refused_at_construction(user, match):
    with pytest.raises(InvalidInputError, match=match) as caught:
        normxlogit.ChatPrompt(user=user)
    assert "\n" not in str(caught.value)


def test_p01_literal_braces_and_format_specs_still_work():
    normxlogit.ChatPrompt(user="{{literal}} {text}")
    normxlogit.ChatPrompt(
        user="Passage: {passage} {{x}} Q: {question}", fields=("question", "passage")
    )
    with pytest.raises(InvalidInputError, match="system message is a string"):
        normxlogit.ChatPrompt(system=3)


@pytest.mark.parametrize(
    ("user", "fields"),
    [("Is this review positive?", ()), ("Q: {question}", ("question", "passage"))],
)
def test_p02_a_prompt_that_never_places_the_text_is_refused(user, fields):
    with pytest.raises(InvalidInputError, match="does not place the text"):
        normxlogit.ChatPrompt(user=user, fields=fields)


@pytest.mark.parametrize("head", ["classification", "regression", "masked_lm"])
@pytest.mark.parametrize("given", ["prompt", "label_words", "both"])
def test_p03_prompt_options_on_other_heads_are_refused(head, given):
    tokenizer = fresh_tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    options = {}
    if given in ("prompt", "both"):
        options["prompt"] = normxlogit.ChatPrompt(user="Review: {text}")
    if given in ("label_words", "both"):
        options["label_words"] = WORDS
    with pytest.raises(InvalidOptionError, match="not a causal LM"):
        normxlogit.load((build_model("bert", head), tokenizer), **options)


@pytest.mark.parametrize("verify", [True, False])
def test_p04_a_prompt_without_a_chat_template_is_refused_at_load(verify):
    with pytest.raises(InvalidInputError, match="has none; set tokenizer.chat_template"):
        normxlogit.load(
            (build_model("llama", "causal_lm"), fresh_tokenizer()),
            prompt=normxlogit.ChatPrompt(),
            label_words=WORDS,
            verify=verify,
        )


@pytest.mark.parametrize(
    ("words", "match"),
    [
        ({"caf\u00e9": " bad", "cafe\u0301": " good"}, "combining accents"),
        ({"pos\u200b": " bad", "pos": " good"}, "U\\+200B"),
        ({" pos ": " bad", "neg": " good"}, "spaces around"),
        ({"neg": " bad", "": " good"}, "shows as nothing"),
        ({"neg": " bad", " ": " good"}, "shows as nothing"),
        ({"neg": " bad", 1: " good"}, "names are strings"),
    ],
)
def test_p05_label_names_follow_the_name_rule(words, match):
    with pytest.raises(InvalidInputError, match=match):
        prompted_llama(words)


def test_prompted_classifier_still_loads_and_explains():
    model = prompted_llama({"negative": " bad", "positive": " good"}, user="Review: {text}")
    assert model.labels == ("negative", "positive")
    explanation = model.explain("good movie", method="gradient_x_input")
    assert "good" in explanation.tokens and "review" in explanation.tokens
