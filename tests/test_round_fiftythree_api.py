"""Round 53 (a): the Python API and the command line.

- F01: a text's evidence words given as a 0-d tensor or array: a traceback (and a 0-d
  array holding None got past the missing-evidence check).
- F02: explain's aggregate= was checked only after every text was explained; a list or
  a 0-d array gave a TypeError (also in aggregate_words).
- F03: sanity's string settings given as 0-d arrays ended in tracebacks, after the work.
- F04: label_words=np.array("good") gave a traceback.
- F05: metrics' scalar arguments (k, eps, tol, max_iter, exclude, softmax, mask) gave
  tracebacks or were read silently otherwise.
- F06: a continuation list's None or int entry was refused as a count that matched.
- F07: explain_generations refused a 0-d array continuation for one prompt.
- F08: explain_generations named a count for one prompt's ids holding a float or bool.
- F09: explain_and_evaluate called labels=torch.tensor(1) an int, and read a 0-d None as
  no labels.
- F10: an output's folder that is a dangling link was advised mkdir -p, which fails.
- Noted: target list items named clearly, "1 item", 0-d steps, 0-d texts in a list,
  label_words stored as plain str.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import normxlogit as nx
from normxlogit import metrics as M
from normxlogit import workflows as W
from normxlogit.common.errors import InvalidInputError, OutputPathError
from normxlogit.common.outputs import check_output_file

from .conftest import invoke_in, prompted_llama
from .conftest import said as _said

G = "gradient_x_input"
TEXTS = ["a good film here", "bad plot and acting"]


@pytest.fixture
def never_explaining(monkeypatch):
    """explain's per-text explaining replaced by a failure: a refusal must come first."""
    from normxlogit.explaining import texts

    def run_attribute(*args, **kwargs):
        raise AssertionError("explained before refusing")

    monkeypatch.setattr(texts, "run_attribute", run_attribute)


# ------------------------------------------------------------------ F01
@pytest.mark.parametrize("entry", [torch.tensor(1), np.array(1)])
def test_f01_a_0d_evidence_entry_is_refused_in_one_line(labelled, entry):
    for run in (
        lambda: nx.explain_and_evaluate(
            labelled, TEXTS, [G], metrics=["token_f1"], evidence_words=[entry, [0]]
        ),
        lambda: W.evaluate_texts(
            labelled,
            W.explain_texts(labelled, TEXTS, [G]),
            metrics=["token_f1"],
            evidence_words=[entry, [0]],
        ),
    ):
        with pytest.raises(InvalidInputError) as caught:
            run()
        said = str(caught.value)
        assert "evidence words of text 0 must be a list of word indices" in said, said
        assert "a 0-d" in said and "holding 1" in said and "[[1]]" in said, said


def test_f01_a_0d_none_evidence_entry_is_no_evidence(labelled):
    with pytest.raises(InvalidInputError, match="text 0 has no evidence words"):
        nx.explain_and_evaluate(
            labelled,
            TEXTS,
            [G],
            metrics=["token_f1"],
            evidence_words=[np.array(None, dtype=object), [0]],
        )


# ------------------------------------------------------------------ F02
@pytest.mark.parametrize(
    "given, shown",
    [("avg", "aggregate='avg'"), (["sum"], "a list"), (np.array("avg"), "aggregate='avg'")],
)
def test_f02_aggregate_is_checked_before_explaining(labelled, never_explaining, given, shown):
    with pytest.raises(InvalidInputError) as caught:
        nx.explain(labelled, TEXTS, G, aggregate=given)
    said = str(caught.value)
    assert shown in said and "is not one of: sum, mean, max, absmax" in said, said


def test_f02_a_0d_aggregate_is_the_name_it_holds(labelled):
    plain = nx.explain(labelled, TEXTS[0], G, aggregate="mean")
    made = nx.explain(labelled, TEXTS[0], G, aggregate=np.array("mean"))
    np.testing.assert_allclose(np.asarray(made.scores), np.asarray(plain.scores))
    one = nx.explain(labelled, TEXTS[0], G)
    again = one.aggregate_words(np.array("max"))
    np.testing.assert_allclose(
        np.asarray(again.scores), np.asarray(one.aggregate_words("max").scores)
    )
    with pytest.raises(InvalidInputError, match="aggregate=a list"):
        one.aggregate_words(["sum"])


def test_f02_segment_reduce_unhashable_is_refused(labelled):
    with pytest.raises(InvalidInputError, match="segment_reduce=a list"):
        nx.explain(labelled, TEXTS[0], G, segments="sentences", segment_reduce=["sum"])


# ------------------------------------------------------------------ F03
def test_f03_sanity_settings_as_0d_arrays_are_their_values(labelled):
    from normxlogit.sanity import parameter_randomization

    got = parameter_randomization(
        labelled,
        TEXTS[:1],
        [G],
        mode=np.array("independent"),
        preset=np.array("quantus-mprt"),
        units=np.array("modules"),
    )
    assert got.settings["mode"] == "independent" and type(got.settings["mode"]) is str
    assert got.settings["preset"] == "quantus-mprt"
    assert type(got.settings["units"]) is str


@pytest.mark.parametrize("setting", ["mode", "preset"])
def test_f03_a_list_setting_is_refused_in_one_line(labelled, setting):
    from normxlogit.sanity import parameter_randomization

    with pytest.raises(InvalidInputError, match=f"{setting}=a list"):
        parameter_randomization(labelled, TEXTS[:1], [G], **{setting: ["x"]})


def test_f03_a_0d_methods_name_is_refused_as_the_name(labelled):
    from normxlogit.sanity import parameter_randomization

    with pytest.raises(InvalidInputError, match="methods='gradient_x_input'"):
        parameter_randomization(labelled, TEXTS[:1], np.array(G))


# ------------------------------------------------------------------ F04
def test_f04_label_words_as_a_0d_array_is_one_string():
    with pytest.raises(InvalidInputError, match="got the string 'good'"):
        prompted_llama(np.array("good"))


# ------------------------------------------------------------------ F05
@pytest.mark.parametrize(
    "run, named",
    [
        (lambda: M.top_k_overlap([1, 2, 3], [3, 2, 1], float("nan")), "k must be"),
        (lambda: M.top_k_overlap([1, 2, 3], [3, 2, 1], float("inf")), "k must be"),
        (lambda: M.top_k_overlap([1, 2, 3], [3, 2, 1], None), "k must be"),
        (lambda: M.top_k_overlap([1, 2, 3], [3, 2, 1], 1.5), "k must be a whole number"),
        (lambda: M.rescale_unit([1, 2, 3], eps=None), "eps must be"),
        (lambda: M.find_alpha([0.1, 0.5, 0.9], 0.5, tol=None), "tol must be"),
        (lambda: M.find_alpha([0.1, 0.5, 0.9], 0.5, max_iter=1.5), "max_iter must be"),
        (lambda: M.dot_product([1, 2, 3], [1, 0, 0], exclude=[None]), "exclude must be"),
        (lambda: M.dot_product([1, 2, 3], [1, 0, 0], exclude=10**30), "exclude must be"),
        (lambda: M.dot_product([1, 2, 3], [1, 0, 0], exclude=[0.7]), "exclude must be"),
        (lambda: M.dot_product([1, 2, 3], [1, 0, 0], softmax="no"), "softmax must be"),
        (lambda: M.rescale_unit([1.0, 2.0, 3.0], mask=[True, None, True]), "mask holds None"),
        (lambda: M.rescale_unit([1.0, 2.0, 3.0], mask=["0", "1", "0"]), "mask holds a str"),
    ],
)
def test_f05_metric_scalars_are_refused_in_one_line(run, named):
    with pytest.raises(InvalidInputError) as caught:
        run()
    said = str(caught.value)
    assert named in said and "\n" not in said, said


def test_f05_good_scalars_still_work():
    assert M.top_k_overlap([1, 2, 3], [3, 2, 1], np.int64(1)) == 0.0
    assert M.top_k_overlap([1, 2, 3], [3, 2, 1], torch.tensor(3)) == 1.0
    assert M.dot_product([1, 2, 3], [1, 0, 0], exclude=np.array([1])) == 1.0
    assert M.dot_product([1, 2, 3], [1, 0, 0], softmax=np.True_) < 1
    np.testing.assert_allclose(M.rescale_unit([1.0, 2.0, 3.0], mask=[1, 0, 1])[1], 0.0)
    assert M.find_alpha([0.1, 0.5, 0.9], 0.5, tol=1e-3, max_iter=5) > 0


# ------------------------------------------------------------------ F06
def test_f06_a_none_or_int_continuation_entry_is_named(decoder):
    with pytest.raises(InvalidInputError) as caught:
        nx.explain(decoder, ["I like", "You hate"], G, continuation=[" good", None])
    assert str(caught.value).startswith("continuation[1] is None"), str(caught.value)
    assert "generate=True" in str(caught.value)
    with pytest.raises(InvalidInputError) as caught:
        nx.explain(decoder, ["I like", "You hate"], G, continuation=[" good", 5])
    said = str(caught.value)
    assert said.startswith("continuation[1] is the int 5") and "[5]" in said, said


# ------------------------------------------------------------------ F07
def test_f07_one_prompts_0d_continuation_is_its_text(decoder):
    got = W.explain_generations(decoder, "I like", [G], continuations=np.array(" good"))
    want = W.explain_generations(decoder, "I like", [G], continuations=" good")
    assert [e.tokens for e in got.explanations[G]] == [e.tokens for e in want.explanations[G]]


# ------------------------------------------------------------------ F08
@pytest.mark.parametrize("ids, named", [([5.0, 6], "a float 5.0"), ([np.array(True), 6], "a bool")])
def test_f08_one_prompts_ids_with_a_stray_are_named(decoder, ids, named):
    with pytest.raises(InvalidInputError) as caught:
        W.explain_generations(decoder, "I like", [G], continuations=ids)
    said = str(caught.value)
    assert "continuations holds token ids and, at [0]" in said and named in said, said


# ------------------------------------------------------------------ F09
def test_f09_0d_labels_are_named_as_given(labelled, never_explained):
    with pytest.raises(InvalidInputError, match="got a 0-d Tensor holding 1"):
        nx.explain_and_evaluate(labelled, TEXTS, [G], metrics=["comp_acc"], labels=torch.tensor(1))
    with pytest.raises(InvalidInputError, match="labels must be .* a 0-d ndarray holding None"):
        nx.explain_and_evaluate(
            labelled, TEXTS, [G], metrics=["comp_acc"], labels=np.array(None, dtype=object)
        )


# ------------------------------------------------------------------ F10
def test_f10_a_dangling_link_folder_is_named(tmp_path):
    (tmp_path / "dl").symlink_to("nowhere")
    with pytest.raises(OutputPathError) as caught:
        check_output_file(tmp_path / "dl" / "x.json", "--output")
    said = str(caught.value)
    assert "is a link to nowhere (its target nowhere does not exist)" in said, said
    assert "remove the link" in said and "mkdir -p" in said, said
    # the advised fix works
    os.mkdir(tmp_path / "nowhere")
    check_output_file(tmp_path / "dl" / "x.json", "--output")


def test_f10_a_dangling_link_in_the_cli_and_behind_an_invisible_character(
    tmp_path, tiny_classifier
):
    (tmp_path / "dl").symlink_to("nowhere")
    args = ("explain", "-m", str(tiny_classifier), "a good film", "--method", "random")
    for name in ("dl/x.json", "dl\u200b/x.json", "dl/sub/x.json"):
        result = invoke_in(tmp_path, *args, "-o", name)
        assert result.exit_code != 0
        assert "link to nowhere" in _said(result) and "remove the link" in _said(result)


# ------------------------------------------------------------------ Noted
def test_noted_target_items_named_as_given(labelled):
    with pytest.raises(InvalidInputError, match=r"item \[0\] \(None\) is a 0-d ndarray holding"):
        labelled.explain(TEXTS[0], method=G, target=[np.array(None, dtype=object)])
    with pytest.raises(InvalidInputError, match=r"decode it first"):
        labelled.explain(TEXTS[0], method=G, target=[np.array(b"pos")])


def test_noted_one_item_is_singular(decoder):
    with pytest.raises(InvalidInputError, match="a list of 1 item;"):
        nx.explain(decoder, ["I like", "You hate"], G, continuation=[[" good"]])


def test_noted_0d_steps_are_read(decoder):
    from normxlogit.common.counts import step_numbers

    assert step_numbers(list(torch.tensor([0, 2])), "explain_steps") == [0, 2]
    assert step_numbers([np.array(0), torch.tensor(1)], "steps") == [0, 1]
    made = nx.explain(
        decoder, "I like", G, continuation=" good film", explain_steps=list(torch.tensor([0]))
    )
    assert made.explained_steps == [0]


def test_noted_a_0d_text_inside_a_list_is_its_text(labelled):
    got = nx.explain(labelled, [np.array(TEXTS[0])], G)
    assert got[0].text == TEXTS[0] and type(got[0].text) is str
    with pytest.raises(InvalidInputError, match="0-d array holding None"):
        nx.explain(labelled, [np.array(None, dtype=object)], G)


def test_noted_label_words_stored_as_plain_str():
    model = prompted_llama(np.array([" good", " bad"]))
    assert all(type(w) is str for w in model.task.label_words)


@pytest.mark.parametrize("name", ["evidence_words", "evidence_segments"])
def test_f01_kin_0d_evidence_lists_in_evaluate_texts(labelled, name):
    explained = W.explain_texts(labelled, TEXTS, ["random"])
    metrics = ["token_f1"] if name == "evidence_words" else None
    for given in (torch.tensor(1), np.array(None, dtype=object)):
        with pytest.raises(InvalidInputError, match=f"{name} is a 0-d .* holding"):
            W.evaluate_texts(labelled, explained, metrics=metrics, **{name: given})
