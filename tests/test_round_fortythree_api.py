"""Round 43 (a): the Python API and the command line.

- P01: ``explain_texts`` refuses a None, a number, a ``(str, None)`` pair or pandas' NaN
  cell in one line, as ``model.explain`` does (it was a TypeError from deep inside).
- P02: a lone surrogate in a ``ChatPrompt``'s user template or system message, or in a
  label word, is refused in one line naming it (it was the tokenizer's TypeError).
- P03: evaluating an explanation loaded from a file without ``"text"`` says the file gave
  no text (it said "text 0 is empty; give some words").
- P04: ``explain`` / ``evaluate`` with an unknown ``--method`` and a ``METHOD.`` option
  refuse the method first (they advised a spelling that was refused next).
- P05: ``evaluate_generations`` refuses a flat list holding two settings of one method,
  as ``evaluate`` does (it scored each generation twice, as one method).
- Noted: ``save_explanations`` given an ``Explained`` points to ``.explanations[name]``
  and to one flat list.
"""

from __future__ import annotations

import json

import pytest

from normxlogit.common.errors import InvalidInputError

from .conftest import invoke_in, prompted_llama

SURROGATE = "\ud800"
NO_CHARACTER = "U\\+D800, a surrogate, which is no character"


def _said(result) -> str:
    return " ".join(result.output.split())


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize(
    ("texts", "named"),
    [
        (["a good film", None], "text 1 is None; pass a str"),
        (["a good film", 5], "text 1 is an int; pass a str"),
        ([("a good film", None)], "text 0: the second text of the pair is None"),
    ],
)
def test_p01_explain_texts_refuses_a_text_that_is_no_string(bert, texts, named):
    from normxlogit import workflows

    with pytest.raises(InvalidInputError, match=named):
        workflows.explain_texts(bert, texts, ["random"])


def test_p01_a_missing_pandas_cell_is_named_as_one(bert):
    import numpy as np
    import pandas as pd

    from normxlogit import workflows

    texts = pd.Series(["a good film", np.nan])
    with pytest.raises(InvalidInputError, match="text 1 is a float; .*NaN, a missing cell"):
        workflows.explain_texts(bert, texts, ["random"])
    with pytest.raises(InvalidInputError, match="NaN, a missing cell"):
        bert.explain(texts, method="random")
    made = workflows.explain_texts(bert, pd.Series(["a good film", "a bad film"]), ["random"])
    assert len(made.explanations["random"]) == 2


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"user": f"{SURROGATE} {{text}}"}, "the chat prompt's user template holds"),
        ({"system": f"sys {SURROGATE}"}, "the chat prompt's system message holds"),
    ],
)
def test_p02_a_surrogate_in_a_chat_prompt_is_refused(options, named):
    import normxlogit as nx

    with pytest.raises(InvalidInputError, match=f"{named} {NO_CHARACTER}"):
        nx.ChatPrompt(**options)


@pytest.mark.parametrize(
    ("label_words", "named"),
    [
        (["good", f"b{SURROGATE}"], "label_words' word at \\[1\\] holds"),
        ({"pos": "good", "neg": f"b{SURROGATE}"}, "label_words' word for 'neg' holds"),
    ],
)
def test_p02_a_surrogate_in_a_label_word_is_refused(label_words, named):
    with pytest.raises(InvalidInputError, match=f"{named} {NO_CHARACTER}"):
        prompted_llama(label_words)


# ------------------------------------------------------------------ P03
def test_p03_an_explanation_saved_without_its_text_says_so(bert, tmp_path):
    import normxlogit as nx

    path = tmp_path / "e.json"
    bert.explain("a good film", method="random").save(path)
    data = json.loads(path.read_text())
    data.pop("text")
    path.write_text(json.dumps(data))
    loaded = nx.Explanation.load(path)
    refusal = "explanation 0 of method 'random' records no text \\(its file gave no \"text\"\\)"
    with pytest.raises(InvalidInputError, match=refusal):
        nx.evaluate(bert, [loaded], metrics=["comp_cd"])


# ------------------------------------------------------------------ P04
@pytest.mark.parametrize("command", ["explain", "evaluate"])
def test_p04_an_unknown_method_is_refused_before_its_options(tmp_path, tiny_classifier, command):
    (tmp_path / "d.jsonl").write_text('{"text": "a good film", "label": "pos"}\n')
    given = "a good film" if command == "explain" else "d.jsonl"
    result = invoke_in(
        tmp_path,
        command,
        given,
        "-m",
        str(tiny_classifier),
        "--method",
        "ig",
        "--option",
        "integrated_gradients.steps=3",
    )
    said = _said(result)
    assert result.exit_code != 0, said
    assert "unknown method 'ig'; available: " in said and "integrated_gradients" in said
    assert "ig.NAME=VALUE" not in said and "is not" not in said


def test_p04_a_known_method_still_refuses_another_methods_prefix(tmp_path, tiny_classifier):
    args = ["-m", str(tiny_classifier), "--option", "integrated_gradients.steps=3"]
    result = invoke_in(tmp_path, "explain", "a good film", "--method", "random", *args)
    assert "'integrated_gradients' is not the method explained (--method random)" in _said(result)


# ------------------------------------------------------------------ P05
def test_p05_evaluate_generations_refuses_a_flat_list_of_two_settings(gpt2):
    import normxlogit as nx
    from normxlogit import workflows

    made = workflows.explain_generations(
        gpt2,
        ["the film was", "it rained"],
        {"r1": nx.get_method("random", seed=1), "r2": nx.get_method("random", seed=2)},
        continuations=[" good", " all"],
    )
    flat = [e for group in made.explanations.values() for e in group]
    refusal = (
        "method 'random' explains the same generation twice with different settings "
        "\\(seed=1 and seed=2\\); pass a dict"
    )
    with pytest.raises(InvalidInputError, match=refusal):
        nx.evaluate_generations(gpt2, flat, steps=[0])
    # the dict that tells them apart is scored as two methods over two generations
    result = nx.evaluate_generations(gpt2, made, steps=[0])
    assert sorted(result.frame["method"].unique()) == ["r1", "r2"]
    assert sorted(result.frame["instance"].unique()) == [0, 1]


# ------------------------------------------------------------------ noted
def test_noted_save_explanations_points_an_explained_to_its_lists(bert, tmp_path):
    import normxlogit as nx
    from normxlogit import workflows

    made = workflows.explain_texts(bert, ["a good film"], ["random", "normxlogit"])
    pointer = "not an Explained .*\\.explanations\\[name\\] \\(names: 'random', 'normxlogit'\\)"
    with pytest.raises(InvalidInputError, match=pointer):
        nx.save_explanations(made, tmp_path / "e.json")
    flat = [e for group in made.explanations.values() for e in group]
    assert len(nx.load_explanations(nx.save_explanations(flat, tmp_path / "e.json"))) == 2
