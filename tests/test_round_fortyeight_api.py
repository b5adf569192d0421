"""Round 48 (a): the Python API and the command line.

- P01: an output name made only of invisible characters (-o $'\\u200b') crashed the
  blank-edge refusal with a traceback; refused, naming the characters.
- P02: a str given where workflows take one value per text was split into characters.
- P03: a per-text argument that is no list (targets=1) raised a TypeError.
- P04: a list as one text's target or contrast raised "unhashable type"; read as a tuple.
- P05: the DataFrame advice quoted an int column name as a str, and named the first
  column even where a text column exists.
- P06: read_examples(limit=10**30) raised a ValueError from islice.
- P07: save_explanations({name: explanation}) advised a comprehension that fails.
- P08: id2label names that differ only in Unicode composition loaded as two 'café'.
- P09: the blank-edge advice for ' /r.json' pointed at the root's /r.json.
- P10: an invisible character inside a saved name was printed unquoted.
- P11: limit=np.int64(2) was refused as "not a whole number".
- P12: metrics=array.array('u', 'comp_cd') was read a character at a time.
- Noted: pearson on a user's float64 values; SanityResult.load("s.json "); Explanation.load
  of a data file; label_words given as a list named its labels with their blanks.
"""

from __future__ import annotations

import array
import json
import warnings

import numpy as np
import pytest

import normxlogit as nx
from normxlogit import data as D
from normxlogit import workflows as W
from normxlogit.common.errors import (
    InvalidFileError,
    InvalidInputError,
    InvalidOptionError,
    NormXLogitError,
    OutputPathError,
)

from .conftest import build_model, fresh_tokenizer, invoke_in, sanity_frame
from .conftest import said as _said

pd = pytest.importorskip("pandas")

TEXTS = ["a good movie", "a bad one", "an ok film"]
ROWS = "text\tlabel\na good movie\tpos\na bad one\tneg\nan ok film\tpos\n"


# ------------------------------------------------------------------ P01
def test_p01_a_name_of_invisible_characters_is_refused_in_one_line(
    labelled, tmp_path, tiny_classifier
):
    from normxlogit.sanity import SanityResult

    made = labelled.explain(TEXTS[0], method="random")
    for call in (
        lambda: made.save(tmp_path / "\u200b"),
        lambda: nx.save_explanations([made], "\u200b"),
        lambda: SanityResult(sanity_frame()).save("\u200b"),
    ):
        with pytest.raises(OutputPathError) as caught:
            call()
        said = str(caught.value)
        assert "is only U+200B (ZERO WIDTH SPACE)" in said and "give a file name" in said, said
    result = invoke_in(
        tmp_path, "explain", "a good film", "-m", str(tiny_classifier), "-o", "\u200b"
    )
    said = _said(result)
    assert result.exit_code != 0 and "Traceback" not in result.output, said
    assert "--output '\\u200b': the name is only U+200B" in said, said
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ P02
def test_p02_one_str_per_text_argument_is_refused(labelled, decoder):
    with pytest.raises(InvalidInputError, match=r"^targets is one text \('neg'\); give a list"):
        W.explain_texts(labelled, TEXTS, ["random"], targets="neg")
    with pytest.raises(InvalidInputError, match=r"^contrasts is one text"):
        W.explain_texts(labelled, TEXTS, ["random"], targets=["pos"] * 3, contrasts="neg")
    with pytest.raises(InvalidInputError, match=r"^contrast_inputs is one text \('hi'\)"):
        W.explain_texts(labelled, TEXTS, ["random"], contrast_inputs="hi")
    prompts = ["hello there", "a b", "c d"]
    with pytest.raises(InvalidInputError, match=r"^continuations is one text \('xyz'\).*prompt"):
        W.explain_generations(decoder, prompts, ["random"], continuations="xyz")
    with pytest.raises(InvalidInputError, match=r"^contrast_inputs is one text \('hi'\)"):
        W.explain_generations(
            decoder, prompts[:2], ["random"], continuations=[" x", " y"], contrast_inputs="hi"
        )
    # one prompt still takes its one continuation as a str
    one = W.explain_generations(decoder, "hello", ["random"], continuations=" x")
    assert len(one.explanations["random"]) == 1


# ------------------------------------------------------------------ P03
def test_p03_a_per_text_argument_that_is_no_list_is_one_line(labelled, decoder):
    with pytest.raises(InvalidInputError) as caught:
        W.explain_texts(labelled, TEXTS, ["random"], targets=1)
    said = str(caught.value)
    assert said.startswith("targets must be a list with one target") and "got an int 1" in said
    assert "model.explain(texts, target=1)" in said
    labelled.explain(TEXTS, method="random", target=1)  # the advice works
    for kwargs in ({"contrasts": 3}, {"contrast_inputs": 3}):
        with pytest.raises(InvalidInputError, match="must be a list with one"):
            W.explain_texts(labelled, TEXTS, ["random"], **kwargs)
    for kwargs in ({"continuations": 5}, {"contrasts": 3}, {"contrast_inputs": 3}):
        with pytest.raises(InvalidInputError, match="must be a list with one .* per prompt"):
            W.explain_generations(decoder, ["a", "b"], ["random"], **kwargs)
    for metrics in (["comp_cd"], ["token_f1"]):  # refused whether a metric reads it or not
        with pytest.raises(InvalidInputError, match="^evidence_words is an int; give one list"):
            W.explain_and_evaluate(labelled, TEXTS[:2], ["random"], metrics, evidence_words=3)


# ------------------------------------------------------------------ P04
def test_p04_a_list_as_one_texts_target_is_read_as_a_tuple(labelled):
    made = W.explain_texts(
        labelled, TEXTS, ["normxlogit"], targets=[["pos", "neg"], "pos", None]
    ).explanations["normxlogit"]
    assert made[0].targets == ["pos", "neg"] and made[1].targets == ["pos"]
    again = W.explain_texts(
        labelled, TEXTS, ["normxlogit"], targets=[("pos", "neg"), "pos", None]
    ).explanations["normxlogit"]
    np.testing.assert_allclose(made[0].scores, again[0].scores)
    versus = W.explain_texts(
        labelled, TEXTS, ["normxlogit"], targets=["pos"] * 3, contrasts=[["neg"], "neg", "neg"]
    ).explanations["normxlogit"]
    assert versus[0].settings["contrast"] == ["neg"]
    with pytest.raises(InvalidInputError) as caught:
        W.explain_texts(labelled, TEXTS, ["normxlogit"], targets=[{"a": 1}, "pos", None])
    assert "is a dict" in str(caught.value) and "\n" not in str(caught.value)


# ------------------------------------------------------------------ P05
def test_p05_the_dataframe_advice_names_the_text_column_as_it_is(labelled):
    frame = pd.DataFrame({0: ["a good film", "bad"], 1: [0, 1]})
    with pytest.raises(InvalidInputError) as caught:
        labelled.explain(frame, method="random")
    assert "list(df[0])" in str(caught.value)
    labelled.explain(list(frame[0]), method="random")  # the advice works
    frame = pd.DataFrame({"label": [0, 1], "text": ["a good film", "bad"]})
    for call in (
        lambda: labelled.explain(frame, method="random"),
        lambda: W.explain_texts(labelled, frame, ["random"]),
    ):
        with pytest.raises(InvalidInputError, match=r"list\(df\['text'\]\)"):
            call()
    frame = pd.DataFrame({"label": [0, 1], "body": ["a good film", "bad"]})
    with pytest.raises(InvalidInputError, match=r"list\(df\['body'\]\)"):
        labelled.explain(frame, method="random")


# ------------------------------------------------------------------ P06 / P11
def test_p06_p11_a_huge_or_numpy_limit_reads_as_the_other_readers_do(tmp_path):
    (tmp_path / "d.tsv").write_text(ROWS)
    (tmp_path / "d.txt").write_text("one\ntwo\n")
    assert len(D.read_examples(tmp_path / "d.tsv", limit=10**30)) == 3
    assert len(D.read_examples(tmp_path / "d.tsv", limit=np.int64(2))) == 2
    assert len(D.read_examples(tmp_path / "d.txt", limit=np.int64(1))) == 1
    for wrong in (np.float64(2.0), True, "2"):
        with pytest.raises(InvalidOptionError, match="limit must be a whole number"):
            D.read_examples(tmp_path / "d.tsv", limit=wrong)
    with pytest.raises(InvalidOptionError, match="at least 1"):
        D.read_examples(tmp_path / "d.tsv", limit=np.int64(0))


# ------------------------------------------------------------------ P07
def test_p07_a_dict_of_single_explanations_gets_advice_that_works(labelled, tmp_path):
    d = {"normxlogit": labelled.explain("a good film")}
    with pytest.raises(InvalidInputError) as caught:
        nx.save_explanations(d, tmp_path / "s.json")
    said = str(caught.value)
    assert "dict of single explanations" in said and "list(d.values())" in said, said
    nx.save_explanations(list(d.values()), tmp_path / "s.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(nx.load_explanations(tmp_path / "s.json")) == 1


# ------------------------------------------------------------------ P08
def test_p08_labels_that_differ_only_in_composition_are_refused_at_load(tmp_path):
    model = build_model("bert", "classification")
    model.config.id2label = {0: "caf\u00e9", 1: "cafe\u0301", 2: "other"}
    model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    model.save_pretrained(tmp_path)
    fresh_tokenizer().save_pretrained(tmp_path)
    with pytest.raises(NormXLogitError) as caught:
        nx.load(str(tmp_path))
    said = str(caught.value)
    assert "'caf\\xe9' (label 0) and 'cafe\\u0301' (label 1)" in said, said
    assert "write label 1 composed" in said and "unicodedata.normalize('NFC', name)" in said


# ------------------------------------------------------------------ P09
def test_p09_a_blank_folder_part_is_advised_as_the_relative_name(labelled, tmp_path):
    made = labelled.explain(TEXTS[0], method="random")
    for name in (" /r.json", "\u200b/r.json", "\t/r.json"):
        with pytest.raises(OutputPathError) as caught:
            made.save(name)
        said = str(caught.value)
        assert said.endswith("name it r.json"), said
    with pytest.raises(OutputPathError, match="name it sub/r.json$"):
        made.save(" sub/r.json")


# ------------------------------------------------------------------ P10
def test_p10_an_invisible_character_inside_a_saved_name_is_quoted(labelled, tmp_path):
    made = labelled.explain(TEXTS[0], method="random")
    with pytest.raises(OutputPathError) as caught:
        made.save("r.jso\u200bn")
    assert str(caught.value).startswith("'r.jso\\u200bn': explanations are saved as JSON")
    with pytest.raises(OutputPathError) as caught:
        made.save("r.json\n")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("'r.json\\n'")
    with pytest.raises(OutputPathError, match=r"^r\.csv: explanations"):  # a plain name plain
        made.save("r.csv")


# ------------------------------------------------------------------ P12
def test_p12_an_array_of_characters_as_metrics_is_named(labelled):
    with pytest.raises(InvalidInputError, match="got an array array"):
        W.explain_and_evaluate(labelled, TEXTS[:2], ["random"], array.array("u", "comp_cd"))


# ------------------------------------------------------------------ noted
def test_noted_pearson_of_a_users_float64_values_is_not_nan():
    from normxlogit.metrics import pearson

    assert pearson([1000.0, 1000.0001, 1000.0002], [1, 2, 3]) == pytest.approx(1.0)
    # a model's float32 outputs a rounding apart still correlate with nothing
    outputs = np.array([1000.0, 1000.0001, 1000.0002], dtype=np.float32)
    assert np.isnan(pearson(outputs, [1, 2, 3]))
    assert np.isnan(pearson([1000.0, 1000.0001, 1000.0002], [1, 2, 3], float32_outputs=True))


def test_noted_sanity_load_names_a_blank_after_the_suffix(tmp_path):
    from normxlogit.sanity import SanityResult

    SanityResult(sanity_frame()).save(tmp_path / "s.json")
    (tmp_path / "s.json ").write_bytes((tmp_path / "s.json").read_bytes())
    with pytest.raises(InvalidFileError) as caught:
        SanityResult.load(tmp_path / "s.json ")
    said = str(caught.value)
    assert said.startswith(repr(str(tmp_path / "s.json "))), said
    assert "ends in a space or tab after its suffix" in said and "s.json exists" in said


def test_noted_explanation_load_of_a_data_file_says_it_is_data(tmp_path):
    (tmp_path / "e.tsv").write_text(ROWS)
    for call in (
        lambda: nx.Explanation.load(tmp_path / "e.tsv"),
        lambda: nx.load_explanations(tmp_path / "e.tsv"),
        lambda: nx.EvaluationResult.load(tmp_path / "e.tsv"),
    ):
        with pytest.raises(InvalidFileError) as caught:
            call()
        said = str(caught.value)
        assert "looks like a data file (a TSV file of texts)" in said, said
        assert "read_examples" in said and "write it again" not in said, said
    assert [e.text for e in D.read_examples(tmp_path / "e.tsv")] == TEXTS  # the advice works
    (tmp_path / "cut.json").write_text(json.dumps({"a": 1})[:-2])
    with pytest.raises(InvalidFileError, match="write it again with Explanation.save"):
        nx.Explanation.load(tmp_path / "cut.json")  # a cut JSON file keeps its advice


def test_noted_label_words_as_a_list_name_labels_without_blanks():
    def prompted(words):
        return nx.load((build_model("llama", "causal_lm"), fresh_tokenizer()), label_words=words)

    model = prompted([" bad", " good"])
    assert model.labels == ("bad", "good")
    assert model.labels == prompted({"bad": " bad", "good": " good"}).labels
    with pytest.raises(InvalidInputError, match="both name the label 'good'"):
        prompted([" good", "good"])
    with pytest.raises(InvalidInputError, match="names no label"):
        prompted([" ", "good"])
