"""Round 49 (a): the Python API and the command line.

- P01: an output name made only of blanks (" ", a tab) was written.
- P02: the advice for a name whose stem is only blanks was itself refused (".json", a folder).
- P03: an invisible or bidi character inside an output name was written and printed raw.
- P04: a set given where entries are read by position was paired by hash order.
- P05: the DataFrame advice dropped the second text of a sentence pair.
- P06: label_words as a list kept invisible and compatibility characters in label names.
- P07: a target written with a separate combining accent was "unknown".
- P08: a 0-d numpy array as texts, methods, targets, metrics or labels: a traceback.
- P09: a numpy array entry in targets= was advised to be given as a list, as it was.
- P10: one prompt's continuation given as token ids ([5, 6]) was "1 prompts but 2 ...".
- Noted: float64 in the help and docstrings; pearson(float32_outputs="yes") and its
  overflow; targets=np.int64(1) without the hint; SanityResult.load of a data .csv.
"""

from __future__ import annotations

import numpy as np
import pytest

import normxlogit as nx
from normxlogit import workflows as W
from normxlogit.common.errors import InvalidFileError, InvalidInputError, OutputPathError

from .conftest import build_model, fresh_tokenizer, invoke_in
from .conftest import said as _said

pd = pytest.importorskip("pandas")

TEXTS = ["a good movie", "a bad one", "an ok film"]


# ------------------------------------------------------------------ P01
def test_p01_a_name_of_blanks_only_is_refused_before_any_work(labelled, tmp_path, tiny_classifier):
    made = labelled.explain(TEXTS[0], method="random")
    for name in (" ", "\t"):
        with pytest.raises(OutputPathError, match="the name is only a space or tab"):
            made.save(tmp_path / name)
        with pytest.raises(OutputPathError, match="the name is only a space or tab"):
            nx.save_explanations([made], tmp_path / name)
    for args in (
        ("explain", "a good film", "-m", str(tiny_classifier), "-o", " ", "--format", "json"),
        ("explain", "a good film", "-m", str(tiny_classifier), "-o", " "),
    ):
        result = invoke_in(tmp_path, *args)
        said = _said(result)
        assert result.exit_code != 0 and "the name is only a space or tab" in said, said
        assert "e.g. result.json" in said, said
    assert list(tmp_path.iterdir()) == []


def test_p01_train_refuses_a_blank_folder_name(tmp_path):
    from normxlogit.common.outputs import check_output_folder

    with pytest.raises(OutputPathError, match=r"is only a space or tab.*folder name, e\.g\. out"):
        check_output_folder("\t", "output folder")
    with pytest.raises(OutputPathError, match=r"is only U\+200B.*give a folder name, e\.g\. out$"):
        check_output_folder("\u200b", "output folder")


# ------------------------------------------------------------------ P02
def test_p02_the_advised_name_is_never_refused_itself(labelled, tmp_path):
    from normxlogit.common.outputs import check_output_file

    made = labelled.explain(TEXTS[0], method="random")
    (tmp_path / "sub").mkdir()
    cases = {
        "\u200b\u200b.json": "result.json",
        str(tmp_path / "sub" / " .json"): str(tmp_path / "sub" / "result.json"),
        str(tmp_path / "sub" / " "): str(tmp_path / "sub" / "result.json"),
        str(tmp_path / "sub" / "\u200b"): str(tmp_path / "sub" / "result.json"),
    }
    for given, advised in cases.items():
        with pytest.raises(OutputPathError) as caught:
            made.save(given)
        said = str(caught.value)
        assert "the name" in said and "is only" in said and "begins with" not in said, said
        assert said.endswith(f"e.g. {advised}"), said
        check_output_file(advised if "/" in advised else tmp_path / advised)  # accepted
    made.save(tmp_path / "sub" / "result.json")  # the advice works


# ------------------------------------------------------------------ P03
def test_p03_an_invisible_character_inside_a_name_is_refused(labelled, tmp_path, tiny_classifier):
    made = labelled.explain(TEXTS[0], method="random")
    for char, named in (("\u200b", "ZERO WIDTH SPACE"), ("\u202e", "RIGHT-TO-LEFT OVERRIDE")):
        with pytest.raises(OutputPathError) as caught:
            made.save(tmp_path / f"r{char}.json")
        said = str(caught.value)
        assert f"U+{ord(char):04X} ({named})" in said, said
        assert said.endswith(f"name it {tmp_path / 'r.json'}"), said
        with pytest.raises(OutputPathError, match=named):
            nx.save_explanations([made], tmp_path / f"r{char}.json")
    made.save(tmp_path / "my file.json")  # a plain space inside is seen: kept
    result = invoke_in(
        tmp_path, "explain", "a good film", "-m", str(tiny_classifier), "-o", "r.jso\u200bn"
    )
    said = _said(result)
    assert result.exit_code != 0 and "'r.jso\\u200bn'" in said and "U+200B" in said, said
    assert not (tmp_path / "r.jso\u200bn").exists()


# ------------------------------------------------------------------ P04
def test_p04_a_set_read_by_position_is_refused(labelled, decoder):
    with pytest.raises(InvalidInputError, match=r"^targets is a set, which has no order"):
        W.explain_texts(labelled, TEXTS[:2], ["random"], targets={"pos", "neg"})
    with pytest.raises(InvalidInputError, match=r"^contrast_inputs is a frozenset.*no order"):
        W.explain_texts(labelled, TEXTS[:2], ["random"], contrast_inputs=frozenset({"a", "b"}))
    with pytest.raises(InvalidInputError, match=r"^continuations is a set.*per prompt"):
        W.explain_generations(decoder, ["hi there", "a b"], ["random"], continuations={"x", "y"})
    with pytest.raises(InvalidInputError, match=r"^labels is a dict_keys, which has no order"):
        W.explain_and_evaluate(
            labelled, TEXTS, ["random"], ["comp_acc"], labels={"pos": 0, "neg": 1, "x": 2}.keys()
        )
    with pytest.raises(InvalidInputError, match=r"^texts are a set, which has no order.*labels"):
        W.explain_and_evaluate(
            labelled, set(TEXTS), ["random"], ["comp_acc"], labels=["pos", "neg", "neutral"]
        )
    made = labelled.explain(TEXTS, method="random")
    with pytest.raises(InvalidInputError, match=r"^labels is a set, which has no order"):
        nx.evaluate(labelled, made, ["comp_acc"], labels={"pos", "neg", "neutral"})


# ------------------------------------------------------------------ P05
def test_p05_the_dataframe_advice_keeps_both_texts_of_a_pair(labelled):
    pair = pd.DataFrame({"question": ["q?"], "sentence": ["s."], "label": [0]})
    with pytest.raises(InvalidInputError) as caught:
        labelled.explain(pair)
    said = str(caught.value)
    assert "list(zip(df['question'], df['sentence']))" in said, said
    advised = list(zip(pair["question"], pair["sentence"], strict=True))
    assert labelled.explain(advised, method="random")[0].text == ("q?", "s.")
    numbers = pd.DataFrame({"label": [0, 1], "score": [0.5, 0.2]})
    with pytest.raises(InvalidInputError) as caught:
        labelled.explain(numbers)
    said = str(caught.value)
    assert "df['label']" not in said and "no column of this frame holds texts" in said, said
    with pytest.raises(InvalidInputError, match=r"list\(df\['text'\]\)"):
        labelled.explain(pd.DataFrame({"label": [0], "text": ["a film"]}))


# ------------------------------------------------------------------ P06
def test_p06_label_words_as_a_list_name_labels_without_hidden_characters():
    def prompted(words):
        return nx.load((build_model("llama", "causal_lm"), fresh_tokenizer()), label_words=words)

    model = prompted(["\u200byes", "no"])
    assert model.labels == ("yes", "no")
    assert model.task.label_words == ("\u200byes", "no")  # the word is scored as given
    assert prompted(["\u212a", "no"]).labels == ("K", "no")
    with pytest.raises(InvalidInputError) as caught:
        prompted(["\u212a", "K"])
    said = str(caught.value)
    assert "'\\u212a' (at [0]) and 'K' (at [1]) both name the label 'K'" in said, said


# ------------------------------------------------------------------ P07
def test_p07_a_target_with_a_combining_accent_names_the_composed_label(tmp_path):
    model = build_model("bert", "classification")
    model.config.id2label = {0: "caf\u00e9", 1: "y", 2: "x"}
    model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    model.save_pretrained(tmp_path / "m")
    fresh_tokenizer().save_pretrained(tmp_path / "m")
    loaded = nx.load(str(tmp_path / "m"))
    made = loaded.explain("a good film", method="random", target="cafe\u0301")
    assert made.settings["target"] == ["caf\u00e9"]
    loaded.explain("a film", method="gradient_x_input", target="y", contrast="CAFE\u0301")
    result = invoke_in(
        tmp_path, "explain", "a good film", "-m", str(tmp_path / "m"), "--label", "cafe\u0301"
    )
    assert result.exit_code == 0, _said(result)


# ------------------------------------------------------------------ P08
def test_p08_a_zero_d_array_is_read_as_its_item(labelled):
    made = labelled.explain(TEXTS[:2], method="random")
    result = nx.evaluate(labelled, made, np.array("comp_cd"))
    assert list(result.metrics) == ["comp_cd"] or "comp_cd" in str(result.frame.columns)
    explained = W.explain_texts(labelled, TEXTS[:2], np.array("random"))
    assert list(explained.explanations) == ["random"]
    with pytest.raises(InvalidInputError, match=r"^texts are a 0-d array.*texts\.item\(\)"):
        labelled.explain(np.array("a good film"))
    with pytest.raises(InvalidInputError, match=r"^targets must be a list.*target=1\)\)"):
        W.explain_texts(labelled, TEXTS[:2], ["random"], targets=np.array(1))
    with pytest.raises(
        InvalidInputError,
        match=r"^evidence_words must be a list with one entry per text, got a 0-d ndarray hold",
    ):
        W.explain_and_evaluate(
            labelled, TEXTS[:2], ["random"], ["token_f1"], evidence_words=np.array(1)
        )
    with pytest.raises(InvalidInputError, match=r"^labels must be a list"):
        nx.evaluate(labelled, made, ["comp_acc"], labels=np.array(1))


# ------------------------------------------------------------------ P09
def test_p09_an_array_entry_in_targets_is_named_with_tolist(labelled):
    with pytest.raises(InvalidInputError) as caught:
        W.explain_texts(labelled, TEXTS[:2], ["random"], targets=[np.array([0, 1]), None])
    said = str(caught.value)
    assert said.startswith("targets[0] is an ndarray; give it as a list (targets[0].tolist())")
    assert "targets=list(" not in said, said
    W.explain_texts(labelled, TEXTS[:2], ["random"], targets=[np.array([0, 1]).tolist(), None])


# ------------------------------------------------------------------ P10
def test_p10_one_prompts_token_ids_are_its_continuation(decoder):
    as_ids = W.explain_generations(decoder, "the cat", ["random"], continuations=[5, 6])
    nested = W.explain_generations(decoder, "the cat", ["random"], continuations=[[5, 6]])
    assert as_ids.explanations["random"][0].input_ids == nested.explanations["random"][0].input_ids
    with pytest.raises(InvalidInputError) as caught:
        W.explain_generations(decoder, ["a b", "c d"], ["random"], continuations=[[5]])
    said = str(caught.value)
    assert said.startswith("2 prompts but continuations has 1 entry"), said
    assert "contrast" not in said, said  # only the argument whose count is wrong


# ------------------------------------------------------------------ Noted
def test_noted_float64_in_help_and_docstrings():
    import inspect

    from normxlogit.cli import bench
    from normxlogit.model.adapter import ExplainableModel

    assert "float64" in inspect.getsource(bench)
    assert "``float64``" in nx.load.__doc__
    assert "``float64``" in ExplainableModel.__doc__ or "``float64``" in inspect.getsource(
        ExplainableModel
    )


def test_noted_pearson_takes_a_bool_and_does_not_overflow():
    from normxlogit import metrics

    for odd in ("yes", "", 1):
        with pytest.raises(InvalidInputError, match="float32_outputs=.*give True, False, or None"):
            metrics.pearson([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], float32_outputs=odd)
    assert metrics.pearson([1e308, -1e308, 0], [0, 1, 2]) == pytest.approx(-0.5)
    assert metrics.pearson([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], float32_outputs=np.bool_(False)) > 0.9


def test_noted_numpy_int_target_gets_the_same_target_hint(labelled):
    with pytest.raises(InvalidInputError, match=r"model\.explain\(texts, target=1\)\)$"):
        W.explain_texts(labelled, TEXTS[:2], ["random"], targets=np.int64(1))


def test_noted_sanity_load_of_a_data_csv_says_data_file(tmp_path):
    from normxlogit.sanity import SanityResult

    path = tmp_path / "d.csv"
    path.write_text("text,label\na good film,pos\n")
    with pytest.raises(InvalidFileError) as caught:
        SanityResult.load(path)
    said = str(caught.value)
    assert "looks like a data file" in said and "frame" not in said, said
