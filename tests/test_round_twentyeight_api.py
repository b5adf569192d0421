"""Round twenty-eight of new-user probes, probe b (Python API): the segment metrics refuse
methods explained with different segments, as unit="segment" does (P01); token evidence
that looks like word indices names evidence_words= (P02); the page numbers a data file's
segments from 1 (noted); a saved file's NaN segment score for a segment read is refused
at load (noted)."""

from __future__ import annotations

import inspect
import json
import warnings

import numpy as np
import pytest

import normxlogit
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.evaluation import Protocol
from normxlogit.explanations.io import load_explanations

from .conftest import explainable, sharp_model

TEXT = "The plot is thin. The acting is wonderful! I would see it again."
SENTENCES = ["The plot is thin.", "The acting is wonderful!", "I would see it again."]
OTHER_SEGMENTS = (
    "has other segments than the first method's; explain every method with the same segments="
)


@pytest.fixture(scope="module")
def model():
    return sharp_model()


@pytest.fixture(scope="module")
def two_segmentations(model):
    return {
        "a": model.explain([TEXT], segments=[SENTENCES]),
        "b": model.explain([TEXT], segments=[SENTENCES[1:]]),
    }


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize(
    "metric, evidence",
    [
        ("segment_auprc", [[1]]),
        ("segment_hit_1", [[1]]),
        ("segment_hit_3", [[1]]),
        ("segment_drop", None),
        ("segment_lds", None),
    ],
)
def test_p01_segment_metrics_refuse_methods_with_other_segments(
    model, two_segmentations, metric, evidence
):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = f"the 'b' explanation of text 0 {OTHER_SEGMENTS}"
        with pytest.raises(InvalidInputError, match=expected):
            normxlogit.evaluate(model, two_segmentations, [metric], evidence=evidence)


def test_p01_the_same_message_as_unit_segment(model, two_segmentations):
    messages = []
    for metrics, protocol in [(["segment_auprc"], None), (["comp_cd"], Protocol(unit="segment"))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(InvalidInputError) as caught:
                evidence = [[1]] if metrics == ["segment_auprc"] else None
                normxlogit.evaluate(
                    model, two_segmentations, metrics, evidence=evidence, protocol=protocol
                )
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_p01_the_same_segments_still_evaluate(model):
    same = {
        "a": model.explain([TEXT], segments=[SENTENCES]),
        "b": model.explain([TEXT], segments=[SENTENCES], method="leave_one_out"),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = normxlogit.evaluate(
            model, same, ["segment_auprc", "segment_hit_1"], evidence=[[1]]
        )
    assert set(result.summary().index) == {"a", "b"}


# ------------------------------------------------------------------ P02
def test_p02_word_indices_as_token_evidence_name_evidence_words(model):
    made = {"normxlogit": model.explain([TEXT])}
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, made, ["token_f1"], evidence=[[4, 5, 6, 7]])
    message = str(caught.value)
    assert "got shape (4,)" in message and "look like word indices" in message
    assert "normxlogit.workflows.evaluate_texts(" in message and "evidence_words=" in message
    assert "normxlogit.explain_and_evaluate(" in message and "\n" not in message


def test_p02_right_length_word_indices_name_evidence_words_too(model):
    made = {"normxlogit": model.explain([TEXT])}
    tokens = len(made["normxlogit"][0].tokens)
    indices = list(range(2, 2 + tokens))
    with pytest.raises(InvalidInputError, match=r"got 2 at token 0; these look like word indices"):
        normxlogit.evaluate(model, made, ["token_f1"], evidence=[indices])


def test_p02_a_wrong_length_mask_is_not_called_word_indices(model):
    made = {"normxlogit": model.explain([TEXT])}
    with pytest.raises(InvalidInputError, match="zeros and ones") as caught:
        normxlogit.evaluate(model, made, ["token_f1"], evidence=[[0, 1, 1, 0]])
    assert "word indices" not in str(caught.value)


def test_p02_the_named_parameters_exist():
    from normxlogit.workflows import evaluate_texts

    assert "evidence_words" in inspect.signature(evaluate_texts).parameters
    assert "evidence_words" in inspect.signature(normxlogit.explain_and_evaluate).parameters


# ------------------------------------------------------------------ noted: page data file
def test_a_data_files_bad_segment_is_numbered_from_1_on_the_page(tmp_path):
    from normxlogit.serve.examples import ExampleSources

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"text": TEXT, "label": 0, "segments": [SENTENCES[0], "nope"]}))
    with pytest.raises(InvalidFileError, match=r"line 1: segment 2 \('nope'\) is not in"):
        ExampleSources([rows]).examples("rows.jsonl", 5, None)
    rows.write_text(json.dumps({"text": TEXT, "label": 0, "segments": ["  "]}))
    with pytest.raises(InvalidFileError, match=r"line 1: segment 1 is "):
        ExampleSources([rows]).examples("rows.jsonl", 5, None)


def test_a_data_files_evidence_segment_keeps_its_index_on_the_page(tmp_path):
    from normxlogit.serve.examples import ExampleSources

    rows = tmp_path / "rows.jsonl"
    row = {"text": TEXT, "label": 0, "segments": SENTENCES, "evidence_segments": [3]}
    rows.write_text(json.dumps(row))
    with pytest.raises(InvalidFileError, match="evidence segment 3 is out of range"):
        ExampleSources([rows]).examples("rows.jsonl", 5, None)


def test_the_page_api_numbers_a_data_files_segments_from_1(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from normxlogit.serve import build_app

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"text": TEXT, "label": 0, "segments": ["nope"]}) + "\n")
    app = build_app([], data=[rows], loaded={"tiny": sharp_model()}, builtins=False)
    with TestClient(app) as client:
        response = client.get("/api/datasets/rows.jsonl/examples")
    error = response.json()["error"]
    assert "segment 1 ('nope') is not in the text" in error and "segment 0" not in error


# ------------------------------------------------------------------ noted: NaN at load
def _saved(tmp_path, explanation, edit=None):
    data = explanation.to_dict()
    if edit is not None:
        edit(data)
    path = tmp_path / "e.json"
    path.write_text(json.dumps(data))
    return path


def test_a_null_segment_score_of_a_segment_read_is_refused_at_load(model, tmp_path):
    explanation = model.explain(TEXT, segments="sentences")

    def null(data):
        data["segments"]["scores"][1] = None

    path = _saved(tmp_path, explanation, null)
    with pytest.raises(InvalidFileError) as caught:
        load_explanations(path)
    message = str(caught.value)
    assert str(path) in message and "segment 1 ('The acting is wonderful!')" in message
    assert "did not read" in message and "\n" not in message


def test_a_nan_segment_score_of_a_segment_read_is_refused_at_load(model, tmp_path):
    explanation = model.explain(TEXT, segments="sentences")
    explanation.segments.scores = explanation.segments.scores.copy()
    explanation.segments.scores[0] = np.nan
    path = tmp_path / "e.json"
    explanation.save(path)
    with pytest.raises(InvalidFileError, match=r"segment 0 \('The plot is thin.'\)"):
        normxlogit.Explanation.load(path)


def test_a_null_score_of_a_segment_not_read_still_loads(model, tmp_path):
    explanation = model.explain(TEXT, segments="sentences")

    def unread(data):  # the last segment's tokens cut off: no token of it is read
        members = data["segments"]["token_segments"]
        data["segments"]["token_segments"] = [None if m == 2 else m for m in members]
        data["segments"]["scores"][2] = None

    (loaded,) = load_explanations(_saved(tmp_path, explanation, unread))
    assert np.isnan(loaded.segments.scores[2]) and np.isfinite(loaded.segments.scores[:2]).all()


def test_nan_segment_scores_with_nan_token_scores_still_load(model, tmp_path):
    explanation = model.explain(TEXT, segments="sentences")

    def unexplained(data):  # as a target contrasted with itself: its token scores are NaN
        data["scores"] = [None for _ in data["scores"]]
        data["segments"]["scores"] = [None for _ in data["segments"]["scores"]]

    (loaded,) = load_explanations(_saved(tmp_path, explanation, unexplained))
    assert np.isnan(loaded.segments.scores).all()


def test_a_generations_unexplained_steps_still_load(tmp_path):
    lm = explainable("llama", "causal_lm")
    generation = lm.explain(
        "The film opens slowly. Then it soars.",
        generate=True,
        max_new_tokens=3,
        explain_steps=[0, 2],
        segments="sentences",
    )
    path = tmp_path / "g.json"
    generation.save(path)
    (loaded,) = load_explanations(path)
    assert np.isnan(loaded.segments.scores[1]).all()
    assert np.isfinite(loaded.segments.scores[[0, 2]]).all()


# ------------------------------------------------------------------ STS-B's scale
@pytest.mark.parametrize("score", ["7.5", "-0.2"])
def test_an_stsb_score_off_its_scale_is_refused_with_its_line(tmp_path, score):
    """A score outside 0-5 trained and scored a regressor without a word."""
    from normxlogit.common.errors import InvalidFileError
    from normxlogit.data import read_stsb

    path = tmp_path / "dev.tsv"
    path.write_text(
        "sentence1\tsentence2\tscore\nA man sings.\tA man is singing.\t4.2\n"
        f"A cat.\tA dog.\t{score}\n"
    )
    with pytest.raises(InvalidFileError, match=rf"line 3: score {score} lies outside 0-5"):
        read_stsb(path=path)
    path.write_text("sentence1\tsentence2\tscore\nA.\tB.\t0\nC.\tD.\t5.0\n")
    assert [e.label for e in read_stsb(path=path)] == [0.0, 5.0]


# ------------------------------------------------------------------ sanity: one method twice
@pytest.mark.parametrize("mode", ["parameters", "cli"])
def test_a_sanity_method_named_twice_is_refused_not_merged(tmp_path, mode):
    """``["random", "random"]`` kept one method's rows with nothing said."""
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.sanity import parameter_randomization
    from tests.conftest import sharp_model

    if mode == "parameters":
        with pytest.raises(InvalidInputError, match="names 'random' more than once"):
            parameter_randomization(sharp_model(), ["a good film"], ["random", "random"])
        return
    from typer.testing import CliRunner

    from normxlogit.cli import app

    model = tmp_path / "m"
    sharp_model().model.save_pretrained(model)
    sharp_model().tokenizer.save_pretrained(model)
    data = tmp_path / "texts.txt"
    data.write_text("a good film\na dull film\n")
    result = CliRunner().invoke(
        app, ["sanity", str(data), "-m", str(model), "--method", "random", "--method", "random"]
    )
    assert result.exit_code != 0 and "more than once" in result.output
    assert "Traceback" not in result.output


# ------------------------------------------------------------------ constant explanations
def test_a_constant_explanation_is_named_by_the_hard_metrics():
    """All-equal scores (Grad-ELLM's ReLU can give them) were ranked by text order with no
    word: the hard metrics' values then say nothing about the method."""
    import warnings

    import numpy as np

    from tests.conftest import sharp_model

    model = sharp_model()
    texts = ["a good film", "a dull and long film"]
    made = model.explain(texts)
    flat = model.explain(texts)
    flat[1].scores = np.zeros_like(flat[1].scores)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        normxlogit.evaluate(
            model, {"nx": made, "flat": flat}, ["comp_cd", "deletion"], progress=False
        )
    said = [str(w.message) for w in caught if "constant explanations" in str(w.message)]
    assert len(said) == 1  # once per evaluation, not per metric
    assert "('flat' on 1 text)" in said[0] and "text order" in said[0]
    assert "'nx'" not in said[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        normxlogit.evaluate(model, {"nx": made}, ["comp_cd"], progress=False)
    assert not [w for w in caught if "constant explanations" in str(w.message)]


# ------------------------------------------------------------------ the re-encoding hint
def test_the_reencoding_hint_names_the_path_as_given(tmp_path, monkeypatch):
    """``iconv ... badbytes.csv`` named the bare file, not ``d/badbytes.csv`` given."""
    from normxlogit.common.errors import InvalidFileError
    from normxlogit.common.input_paths import read_text

    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "bad bytes.csv").write_bytes(b"text\ncaf\xe9\n")
    with pytest.raises(InvalidFileError) as refused:
        read_text("d/bad bytes.csv")
    assert "iconv -f latin1 -t utf-8 'd/bad bytes.csv' > 'd/utf8-bad bytes.csv'" in str(
        refused.value
    )
    (tmp_path / "d" / "wide.txt").write_bytes("hi".encode("utf-16"))
    with pytest.raises(
        InvalidFileError, match=r"iconv -f utf-16 -t utf-8 d/wide.txt > d/utf8-wide"
    ):
        read_text("d/wide.txt")


# ------------------------------------------------------------------ a chat prompt's room
@pytest.mark.parametrize("fields", [(), ("question", "passage")])
def test_max_length_below_a_chat_prompt_is_refused_at_load(fields):
    """The room check skipped chat-prompted models: the prompt is never truncated, so a
    max_length under it gave inputs longer than max_length without a word."""
    from normxlogit.common.errors import InvalidInputError
    from tests.conftest import CHAT_TEMPLATE, build_model, fresh_tokenizer

    user = "{question} {passage}" if fields else "{text}"
    prompt = normxlogit.ChatPrompt(system="Answer yes or no.", user=user, fields=fields)
    tokenizer = fresh_tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    parts = (build_model("llama", "causal_lm"), tokenizer)
    words = {"no": "no", "yes": "yes"}
    with pytest.raises(InvalidInputError, match=r"max_length=4 leaves no room.*chat prompt"):
        normxlogit.load(parts, label_words=words, prompt=prompt, max_length=4)
    model = normxlogit.load(parts, label_words=words, prompt=prompt, max_length=64)
    text = ("is it", "it is") if fields else "a fine film"
    assert len(model.explain(text).tokens) <= 64
