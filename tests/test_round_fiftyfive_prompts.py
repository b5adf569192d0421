"""Round 55: a chat prompt's ``fields`` must say which part of a pair comes first."""

from __future__ import annotations

import pytest

import normxlogit as nx

PAIR = "Q: {question} P: {passage}"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"question", "passage"}, "got a set (it has no order)"),
        (frozenset({"question", "passage"}), "got a frozenset (it has no order)"),
        ("qa", "got a str (read letter by letter)"),
        (b"qa", "got a bytes (read letter by letter)"),
        (5, "got an int"),
    ],
    ids=["set", "frozenset", "str", "bytes", "int"],
)
def test_unordered_or_unusable_fields_are_refused_in_one_line(fields, said):
    # a set filled the pair in hash order: the two parts swapped from run to run, unsaid
    with pytest.raises(nx.NormXLogitError) as refused:
        nx.ChatPrompt(user=PAIR, fields=fields)
    message = str(refused.value)
    assert "\n" not in message
    assert said in message
    assert "('question', 'passage')" in message
    # the advised form is taken
    assert nx.ChatPrompt(user=PAIR, fields=("question", "passage")).fields == (
        "question",
        "passage",
    )


def test_fields_none_is_no_fields():
    assert nx.ChatPrompt(user="Review: {text}", fields=None).fields == ()
    assert not nx.ChatPrompt(user="Review: {text}", fields=None).takes_pairs


def test_ordered_collections_keep_their_order():
    ordered = {"passage": 1, "question": 2}
    assert nx.ChatPrompt(user=PAIR, fields=list(ordered)).fields == ("passage", "question")
    assert nx.ChatPrompt(user=PAIR, fields=ordered.keys()).fields == ("passage", "question")
