"""Human evidence (whitespace-word indices) lands on the tokens a model reads."""

from __future__ import annotations

from normxlogit.workflows import evidence_over_tokens

from ..conftest import explainable, prompted_llama


def _words_of(model, text):
    tokens = model.encode([text]).input_ids[0].tolist()
    pieces = model.tokenizer.convert_ids_to_tokens(tokens)
    return list(zip(pieces, model.encoder.token_words(text), strict=True))


def test_a_pair_counts_its_first_text_then_its_second():
    model = explainable("bert", "classification")
    located = _words_of(model, ("is it blue", "the sky is blue"))
    words = [word for piece, word in located if piece not in ("[CLS]", "[SEP]")]
    assert words == [0, 1, 2, 3, 4, 5, 6]
    assert [word for piece, word in located if piece in ("[CLS]", "[SEP]")] == [None] * 3


def test_a_chat_prompt_leaves_its_own_tokens_out():
    model = prompted_llama(
        {"negative": "bad", "positive": "good"}, "classify the text", "Text: {text} (end)"
    )
    text = "a gripping film"
    located = _words_of(model, text)
    assert [piece for piece, word in located if word is not None] == ["a", "gripping", "film"]
    assert [word for _, word in located if word is not None] == [0, 1, 2]
    (vector,) = evidence_over_tokens(model, [text], [[1]])
    assert [piece for (piece, _), one in zip(located, vector, strict=True) if one] == ["gripping"]
    assert len(vector) == len(model.explain(text).tokens)


def test_a_prompt_that_places_the_second_text_first():
    """The BoolQ prompt puts the passage before the question: words still count through
    the question first, then the passage."""
    model = prompted_llama(
        {"false": "bad", "true": "good"},
        user="Passage: {passage} Question: {question}",
        fields=("question", "passage"),
    )
    text = ("is it blue", "the sky is blue")
    located = _words_of(model, text)
    words = [(piece, word) for piece, word in located if word is not None]
    assert words == [("the", 3), ("sky", 4), ("is", 5), ("blue", 6), ("is", 0), ("it", 1),
                     ("blue", 2)]  # fmt: skip
