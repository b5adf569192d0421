"""Round forty-one, Python and CLI (probe a):

- P01: a method named as a dict value (``{"r": "random"}``) is seeded with ``seed=`` as a
  listed name is (it was built with its default seed 0); an instance keeps its own seed;
  the workflows and the sanity checks build them alike.
- P02: ``evidence_words`` given as one ``{word: 0/1}`` mapping per text is refused (its keys
  were read as the evidence words, marking every word).
- P03: a sanity CSV saved under a ``.json`` name: ``SanityResult.load`` says it is its table
  and to rename it to ``.csv`` (it said "invalid JSON"); the other loaders say so too.
- P04: the CLI's unscored-evidence warning names the file's ``evidence_mask`` column (it
  named an ``evidence`` column the file does not have).
- P06: ``model.explain`` / ``normxlogit.explain`` with a ReAGent instance that cannot run on
  a 3-label classifier advises ``method=get_method('reagent', stopping_condition_top_k=1,
  <its other options>)``, not options passed with the instance (which are refused).
- P07: ``evaluate_texts`` / ``evaluate`` / ``evaluate_generations`` take what the explain
  workflows return (an ``Explained``); a flat list is grouped by method; any other shape is
  refused in one line (it crashed with AttributeError / TypeError); "an int", not "a int".
- Noted: ``evidence_words=[[1.0]]`` is refused in Python, as the command line refuses an
  evidence cell ``1.0``.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import normxlogit
from normxlogit import EvaluationResult
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.methods import get_method
from normxlogit.sanity import SanityResult
from normxlogit.workflows import (
    checked_methods,
    evaluate_texts,
    explain_and_evaluate,
    explain_generations,
    explain_texts,
    methods_by_name,
)

from .conftest import invoke_in, sanity_frame

TEXTS = ["a good movie about love", "a bad film with bad acting"]


@pytest.fixture(scope="module")
def explained(bert):
    return explain_texts(bert, TEXTS, ["random"])


# ------------------------------------------------------------------------------ P01
def test_a_name_as_a_dict_value_is_seeded_as_a_listed_name():
    assert checked_methods({"r": "random"}, seed=7)["r"].seed == 7
    assert checked_methods(["random"], seed=7)["random"].seed == 7
    own = get_method("random", seed=3)
    assert checked_methods({"r": own}, seed=7)["r"].seed == 3  # an instance keeps its own


def test_the_sanity_checks_build_dict_names_as_the_workflows_do():
    from normxlogit.sanity.randomization import _methods

    assert _methods({"r": "random"}, 7, methods_by_name)["r"].seed == 7


def test_explain_and_evaluate_seeds_a_dict_name(bert):
    def scores(methods, seed):
        result = explain_and_evaluate(
            bert, TEXTS, methods, metrics=["comp_cd"], seed=seed, progress=False
        )
        return next(iter(result.explained.explanations.values()))[0].scores

    np.testing.assert_array_equal(scores({"r": "random"}, 7), scores(["random"], 7))
    assert not np.array_equal(scores({"r": "random"}, 7), scores({"r": "random"}, 8))


# ------------------------------------------------------------------------------ P02
def test_evidence_words_as_one_mapping_per_text_are_refused(bert, explained):
    masks = [{0: 0, 1: 0, 2: 1, 3: 0, 4: 0}, {0: 0, 1: 1, 2: 0, 3: 0, 4: 0, 5: 0}]
    with pytest.raises(InvalidInputError, match=r"evidence words of text 0 must be the list"):
        evaluate_texts(bert, explained, ["auprc"], evidence_words=masks, progress=False)
    with pytest.raises(InvalidInputError, match=r"a mapping would be read by its keys"):
        explain_and_evaluate(bert, TEXTS, ["random"], ["auprc"], evidence_words=masks)


def test_evidence_words_as_lists_still_score(bert, explained):
    result = evaluate_texts(
        bert,
        explained.explanations,
        ["auprc"],
        evidence_words=[[2], [np.int64(1)]],
        progress=False,
    )
    assert len(result.frame) == 2


# ---------------------------------------------------------------------------- Noted
@pytest.mark.parametrize("index", [1.0, np.float64(1.0)])
def test_a_word_index_written_as_a_float_is_refused_as_on_the_command_line(bert, index):
    from normxlogit.workflows import evidence_over_tokens

    with pytest.raises(InvalidInputError, match=r"of text 1 is a float(64)?; give word indices"):
        evidence_over_tokens(bert, TEXTS, [[0], [index]])


# ------------------------------------------------------------------------------ P03
def test_a_sanity_csv_under_a_json_name_is_named_with_the_rename(tmp_path):
    path = tmp_path / "san.json"
    sanity_frame().to_csv(path, index=False)
    with pytest.raises(
        InvalidFileError,
        match=r"san\.json is a sanity result table \(CSV\) under another name: rename it to "
        r"san\.csv to load it",
    ):
        SanityResult.load(path)
    with pytest.raises(
        InvalidFileError, match=r"rename it to san\.csv and use normxlogit\.sanity\.SanityResult"
    ):
        EvaluationResult.load(path)
    with pytest.raises(InvalidFileError, match=r"rename it to san\.csv and use"):
        normxlogit.load_explanations(path)
    renamed = path.rename(tmp_path / "san.csv")
    assert len(SanityResult.load(renamed).frame) == 4
    with pytest.raises(InvalidFileError) as refused:  # its own name: no rename advised
        EvaluationResult.load(renamed)
    assert "rename" not in str(refused.value)


# ------------------------------------------------------------------------------ P04
def test_cli_names_the_evidence_mask_column_the_file_has(tmp_path, tiny_classifier):
    rows = [
        {"text": "a good movie here", "label": "pos", "evidence_mask": [0, 1, 0, 0]},
        {"text": "a bad film here", "label": "neg"},
    ]
    path = tmp_path / "mask.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    args = ("evaluate", path.name, "-m", str(tiny_classifier), "--method", "normxlogit")
    result = invoke_in(tmp_path, *args, "-f", "csv")
    assert result.exit_code == 0, result.output
    assert "the evidence_mask column is not scored (line 2 has none)" in result.output
    assert "the evidence column" not in result.output


# ------------------------------------------------------------------------------ P06
def test_a_reagent_instance_is_advised_a_rebuilt_instance(bert):
    reagent = get_method("reagent", num_probes=3, keep_top_n=1)
    advice = (
        "pass method=get_method('reagent', stopping_condition_top_k=1, keep_top_n=1, num_probes=3)"
    )
    for call in (
        lambda: bert.explain(TEXTS[0], method=reagent),
        lambda: normxlogit.explain(bert, TEXTS, method=reagent),
    ):
        with pytest.raises(InvalidInputError) as refused:
            call()
        assert advice in str(refused.value)
        assert "pass stopping_condition_top_k=1" not in str(refused.value)
    with pytest.raises(InvalidInputError, match="pass stopping_condition_top_k=1"):
        bert.explain(TEXTS[0], method="reagent")  # a name takes the option itself


# ------------------------------------------------------------------------------ P07
def test_evaluate_texts_takes_what_explain_texts_returns(bert, explained):
    as_dict = evaluate_texts(bert, explained.explanations, ["comp_cd"], progress=False)
    for given in (explained, explained.explanations["random"]):
        result = evaluate_texts(bert, given, ["comp_cd"], progress=False)
        assert result.frame["value"].tolist() == as_dict.frame["value"].tolist()
        assert set(result.frame["method"]) == {"random"}
    direct = normxlogit.evaluate(bert, explained, ["comp_cd"], progress=False)
    assert direct.frame["value"].tolist() == as_dict.frame["value"].tolist()


def test_evaluate_texts_refuses_other_shapes_in_one_line(bert, explained):
    one = explained.explanations["random"][0]
    with pytest.raises(InvalidInputError, match=r"explanations\['r'\] is one Explanation"):
        evaluate_texts(bert, {"r": one}, ["comp_cd"])
    with pytest.raises(InvalidInputError, match=r"explanations is an int; give a list of"):
        evaluate_texts(bert, 3, ["comp_cd"])
    with pytest.raises(InvalidInputError, match=r"explanations is an int; give a list of"):
        normxlogit.evaluate(bert, 3, ["comp_cd"])


def test_evaluate_generations_takes_what_explain_generations_returns(gpt2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = explain_generations(gpt2, ["the movie is"], ["attention"], max_new_tokens=2)
        result = normxlogit.evaluate_generations(gpt2, made, ["comp_cd"], every=1)
    assert set(result.frame["method"]) == {"attention"}
    one = made.explanations["attention"][0]
    for given, said in (
        ({"a": one}, r"explanations\['a'\] is one GenerationExplanation, not a list"),
        (5, r"explanations is an int; give a list of GenerationExplanation"),
        ("attention", r"explanations is a str; give a list of GenerationExplanation"),
    ):
        with pytest.raises(InvalidInputError, match=said):
            normxlogit.evaluate_generations(gpt2, given)
