"""Round ten of new-user probes (issue 41): each test is one failure that round found,
with tiny models."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from normxlogit import evaluate, explain_and_evaluate
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.data import read_examples, text_lines
from normxlogit.data.registry import dataset_info
from normxlogit.evaluation.result import EvaluationResult
from normxlogit.explanations.explanation import Explanation
from normxlogit.sanity import SanityResult

from .conftest import bench_on_rows, sanity_frame, sharp_model

TEXTS = ["Good fun.", "Bad."]


@pytest.fixture(scope="module")
def model():
    return sharp_model()


@pytest.fixture(scope="module")
def saved_result(model, tmp_path_factory):
    result = evaluate(model, {"g": model.explain(TEXTS, "gradient_x_input")}, ["comp_cd"])
    path = tmp_path_factory.mktemp("result") / "r.json"
    result.save(path)
    return path.read_text()


@pytest.mark.parametrize("key", ["instance", "step"])
def test_a_huge_index_in_a_saved_result_is_refused(saved_result, tmp_path, key):
    """T01: an instance or step of 10**30 crashed the loader with OverflowError."""
    data = json.loads(saved_result)
    for row in data["rows"]:
        row[key] = 10**30
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match=f"'{key}' is 10000.*whole number from 0"):
        EvaluationResult.load(path)


def test_a_huge_or_odd_index_in_a_sanity_frame_is_refused():
    """T01: a sanity CSV's step of 10**30 crashed with OverflowError; instances were not
    checked at all."""
    frame = sanity_frame()
    frame["step"] = frame["step"].astype(object)
    frame.loc[0, "step"] = 10**30
    with pytest.raises(InvalidInputError, match="step is 10000.*whole number from 0"):
        SanityResult(frame)
    frame = sanity_frame()
    frame.loc[1, "instance"] = -1
    with pytest.raises(InvalidInputError, match="row 1 .*instance is -1"):
        SanityResult(frame)


def test_a_repeated_sanity_row_is_refused_with_both_rows():
    """T07: a repeated row was averaged in (0.450 became 0.379)."""
    frame = sanity_frame()
    assert SanityResult(frame).verdicts()["final_spearman"].tolist() == [0.5]
    repeated = pd.concat([frame, frame.iloc[[1]].assign(spearman=-1.0)], ignore_index=True)
    with pytest.raises(InvalidInputError, match="row 4 .*repeats row 1"):
        SanityResult(repeated)


@pytest.mark.parametrize(
    "labels",
    [pd.Series([1, 0], index=[3, 4]), np.array([1, 0]), [np.int64(1), np.int64(0)]],
    ids=["series", "array", "numpy-ints"],
)
def test_labels_from_pandas_or_numpy_are_read_by_position(model, labels):
    """T02/T03: a Series with its own index raised KeyError 0; numpy ints were "neither a
    label name nor an index"."""
    explained = {"g": model.explain(TEXTS, "gradient_x_input")}
    plain = evaluate(model, explained, ["comp_acc"], labels=[1, 0]).frame
    assert evaluate(model, explained, ["comp_acc"], labels=labels).frame.equals(plain)
    both = explain_and_evaluate(
        model, TEXTS, ["gradient_x_input"], ["comp_acc"], labels=labels, explain_label=True
    )
    assert [e.targets for e in both.explained.explanations["gradient_x_input"]] == [
        ["LABEL_1"],
        ["LABEL_0"],
    ]


@pytest.mark.parametrize("size", [True, 2.0, "2"])
def test_counts_must_be_whole_numbers(model, size):
    """A12: batch_size=True and 2.0 were taken as counts."""
    with pytest.raises(InvalidInputError, match="batch_size must be a whole number"):
        model.explain(TEXTS, "gradient_x_input", batch_size=size)
    with pytest.raises(InvalidInputError, match="tokens_per_forward must be a whole number"):
        evaluate(model, {"g": []}, ["comp_cd"], tokens_per_forward=size)
    assert len(model.explain(TEXTS, "gradient_x_input", batch_size=np.int64(1))) == 2


def test_explain_and_evaluate_takes_a_generator_and_a_lone_text(model):
    """T12: a generator of texts raised TypeError (len of a generator)."""
    made = explain_and_evaluate(model, (t for t in TEXTS), ["gradient_x_input"], ["comp_cd"])
    assert len(made.explained.explanations["gradient_x_input"]) == 2
    alone = explain_and_evaluate(model, "Good fun.", ["gradient_x_input"], ["comp_cd"])
    assert len(alone.explained.explanations["gradient_x_input"]) == 1


def test_a_label_index_past_the_models_is_named_and_a_huge_one_refused(tmp_path, tiny_classifier):
    """T04: a label 3000 listed 3001 label names; 10**20 built one name per id up to it
    until the memory ran out."""
    rows = [{"text": "Good film.", "label": 3000}, {"text": "Bad.", "label": 0}]
    body = 'metrics = ["comp_cd"]\n[[methods]]\nname = "normxlogit"\ntarget = "label"'
    with pytest.raises(InvalidInputError) as caught:
        bench_on_rows(tmp_path, tiny_classifier, rows, body)
    said = str(caught.value)  # round 48: refused before any cell, naming its line
    assert "label index 3000 (the gold label of" in said and "line 1, instance 0)" in said
    assert (
        "does not exist" in said
        and len(said.replace(str(tmp_path), "").replace(str(tiny_classifier), "")) < 300
    ), said
    huge = tmp_path / "huge.jsonl"
    huge.write_text(json.dumps({"text": "Good film.", "label": 10**20}) + "\n")
    with pytest.raises(InvalidInputError, match="label 100000000000000000000 is no label index"):
        dataset_info(str(huge))


@pytest.mark.parametrize("word", ["\u200b", "\u0301"])
def test_an_evidence_word_without_a_token_is_not_called_truncated(model, word):
    """T05: a word of invisible characters was "past the 512 tokens the model reads"."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        explain_and_evaluate(
            model,
            [f"Good {word} movie today"],
            ["gradient_x_input"],
            ["token_f1"],
            evidence_words=[[1, 2]],
        )
    messages = [str(w.message) for w in caught]
    assert not any("past the" in m for m in messages)
    assert any("1 evidence word holds no token" in m and "word 1" in m for m in messages)


def test_a_digit_label_hint_names_only_an_index_that_exists(model):
    """T06: "pass the int 5 (--label-id 5)" for an index the model lacks, and a flag only
    the command line has."""
    with pytest.raises(InvalidInputError, match="index 1 is 'LABEL_1': give that name"):
        model.explain("Good fun.", target="1")
    with pytest.raises(InvalidInputError, match="no label has index 5 either") as caught:
        model.explain("Good fun.", target="5")
    assert "--label-id" not in str(caught.value)


def test_a_data_row_of_invisible_characters_is_refused_with_its_line(tmp_path):
    """T13: the bench refused it as "text 1", with no file or line."""
    path = tmp_path / "f.jsonl"
    path.write_text('{"text": "Good fun.", "label": 1}\n{"text": "\\u200e", "label": 0}\n')
    with pytest.raises(InvalidFileError, match="f.jsonl, line 2: column 'text' holds only"):
        read_examples(path)
    with pytest.raises(InvalidFileError, match="line 2 holds only invisible"):
        text_lines("Good fun.\n\u200b\n", "in.txt")


def test_a_text_file_with_lone_cr_line_ends_is_one_text_per_line():
    """T14: CR-only line endings made the whole file one text."""
    assert text_lines("Good fun.\rBad end.\r", "in.txt") == ["Good fun.", "Bad end."]
    assert text_lines("Good fun.\r\nBad end.\n", "in.txt") == ["Good fun.", "Bad end."]


def test_repeated_evidence_words_are_refused_as_a_mask(model):
    """F27: [1, 1] was taken as a set, while evidence segments refuse repeats: a 0/1 mask
    given as word indices marked the first words."""
    with pytest.raises(InvalidInputError, match="word 1 twice.*not a 0/1 mask"):
        explain_and_evaluate(
            model, ["Good fun here"], ["gradient_x_input"], ["token_f1"], evidence_words=[[0, 1, 1]]
        )


def test_a_method_name_with_spaces_around_it_is_refused(saved_result, tmp_path):
    """R14: ' g ' in an edited result became its own summary row beside 'g'."""
    data = json.loads(saved_result)
    data["rows"][0]["method"] = " g "
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match="spaces around it; write it as 'g'"):
        EvaluationResult.load(path)


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda tokens: {"scores": [[True]] * tokens}, "holds true/false"),
        (lambda tokens: {"targets": []}, "non-empty list of strings"),
        (lambda tokens: {"probs": {"LABEL_0": float("nan")}}, "probabilities"),
        (lambda tokens: {"probs": {"LABEL_0": 1.5}}, "probabilities"),
    ],
    ids=["bool-scores", "no-targets", "nan-prob", "prob-above-one"],
)
def test_a_loaded_explanation_with_meaningless_fields_is_refused(model, edit, expected):
    """Loaded explanations with bool scores (read as 1.0), no targets or NaN
    probabilities loaded without a word."""
    data = model.explain("Good fun.", "gradient_x_input").to_dict()
    Explanation.from_dict(data)  # as saved: loads
    with pytest.raises(InvalidInputError, match=expected):
        Explanation.from_dict({**data, **edit(len(data["tokens"]))})
