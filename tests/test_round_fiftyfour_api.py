"""Round 54 (a): the Python API and the command line.

- F01: an output whose folder is a link loop ended in a RuntimeError traceback.
- F02: metrics' scalar arguments given a huge int or Fraction: an OverflowError.
- F03: a bfloat16 tensor as metrics' mask: a TypeError.
- F04: sanity's units/init/tokens given as 1-d arrays: kept (save failed) or a ValueError.
- F05: workflows' segment_reduce given as a 1-d array: a ValueError.
- F06: one text's evidence_segments entry given as a 0-d array: a TypeError.
- F07: one prompt's contrast ids holding a float or bool were counted as prompts; 0-d
  contrast ids were refused by explain.
- F08: Python save() to a folder that is a dangling link or a link to a file said "File
  exists".
- Noted: None named once, 0-d flags/top_k/seed/method names read, ChatPrompt fields as
  plain str, 2-d label_words named, a text pi refused, a long int shortened.
"""

from __future__ import annotations

import fractions
import os

import numpy as np
import pytest
import torch

import normxlogit as nx
from normxlogit import metrics as M
from normxlogit import workflows as W
from normxlogit.common.errors import InvalidInputError, OutputPathError
from normxlogit.common.outputs import check_output_file, checked_choice, write_atomically

from .conftest import invoke_in, prompted_llama
from .conftest import said as _said

G = "gradient_x_input"
TEXTS = ["a good film here", "bad plot and acting"]


@pytest.fixture
def never_explaining(monkeypatch):
    """explain's per-text explaining replaced by a failure: a refusal must come first."""
    from normxlogit.explaining import texts
    from normxlogit.sanity import randomization

    def fail(*args, **kwargs):
        raise AssertionError("explained before refusing")

    monkeypatch.setattr(texts, "run_attribute", fail)
    monkeypatch.setattr(randomization, "_explain", fail)


def _loop(tmp_path):
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "loop1").symlink_to("loop2")


# ------------------------------------------------------------------ F01
@pytest.mark.parametrize("name", ["loop1/x.json", "loop1/a/x.json"])
def test_f01_a_link_loop_folder_is_named(tmp_path, name):
    _loop(tmp_path)
    with pytest.raises(OutputPathError) as caught:
        check_output_file(tmp_path / name, "--output")
    said = str(caught.value)
    assert "loop1 is a link loop (its target loop2 leads back to it" in said, said
    assert "remove the link" in said, said


def test_f01_a_link_loop_in_the_cli(tmp_path, tiny_classifier):
    _loop(tmp_path)
    (tmp_path / "t.txt").write_text("a good film\n")
    for args in (
        ("explain", "a good film", "-m", str(tiny_classifier), "--method", "random"),
        ("evaluate", "t.txt", "-m", str(tiny_classifier), "--method", "random", "--save"),
    ):
        flag = () if args[0] == "evaluate" else ("-o",)
        result = invoke_in(tmp_path, *args, *flag, "loop2/r.json")
        assert result.exit_code != 0
        assert "is a link loop" in _said(result), _said(result)
        assert "Traceback" not in _said(result)


# ------------------------------------------------------------------ F02
@pytest.mark.parametrize(
    "run",
    [
        lambda: M.find_alpha([0.5, 0.2], 0.5, tol=10**400),
        lambda: M.rescale_unit([0.5, 0.2], eps=10**400),
        lambda: M.find_alpha([0.5, 0.2], 0.5, tol=fractions.Fraction(10**400)),
    ],
    ids=["tol-int", "eps-int", "tol-fraction"],
)
def test_f02_a_huge_scalar_is_refused_in_one_line(run):
    with pytest.raises(InvalidInputError, match="must be a number"):
        run()


# ------------------------------------------------------------------ F03
def test_f03_a_bfloat16_mask_is_read_as_a_float32_one():
    bf16 = torch.tensor([1, 0], dtype=torch.bfloat16)
    wide = torch.tensor([1.0, 0.0])
    assert np.allclose(M.rescale_unit([0.5, 0.2], mask=bf16), M.rescale_unit([0.5, 0.2], mask=wide))
    assert np.allclose(
        M.calibrate([0.5, 0.2], 0.5, mask=bf16), M.calibrate([0.5, 0.2], 0.5, mask=wide)
    )
    assert M.find_alpha([0.5, 0.2], 0.5, mask=bf16) == M.find_alpha([0.5, 0.2], 0.5, mask=wide)
    with pytest.raises(InvalidInputError, match="mask holds a float 0.5"):
        M.rescale_unit([0.5, 0.2], mask=torch.tensor([0.5, 1], dtype=torch.bfloat16))


# ------------------------------------------------------------------ F04
@pytest.mark.parametrize("setting", ["units", "init", "tokens"])
@pytest.mark.parametrize("size", [1, 2])
def test_f04_sanity_settings_as_1d_arrays_are_refused_first(
    labelled, never_explaining, setting, size
):
    from normxlogit.sanity import data_randomization, parameter_randomization

    value = np.array(["all", "content", "x"][:size])
    with pytest.raises(InvalidInputError, match=rf"{setting}=an ndarray array\(.* is not one of"):
        parameter_randomization(labelled, TEXTS, ["random"], **{setting: value})
    if setting == "tokens":
        with pytest.raises(InvalidInputError, match=r"tokens=an ndarray .* is not one of"):
            data_randomization(labelled, labelled, TEXTS, ["random"], tokens=value)


def test_f04_a_0d_setting_is_saved_as_its_text(labelled, tmp_path):
    from normxlogit.sanity import parameter_randomization

    got = parameter_randomization(
        labelled, TEXTS[:1], ["random"], mode="independent", units=np.array("groups")
    )
    assert type(got.settings["units"]) is str
    got.save(tmp_path / "s.json")


# ------------------------------------------------------------------ F05
def test_f05_a_1d_segment_reduce_is_refused_in_one_line(labelled, decoder, never_explaining):
    reduce = np.array(["sum", "max"])
    want = r"segment_reduce=an ndarray array\(\['sum', 'max'\].* is not one of: sum, mean"
    for run in (
        lambda: W.explain_texts(
            labelled, ["A. B.", "C"], ["random"], segments="sentences", segment_reduce=reduce
        ),
        lambda: nx.explain_and_evaluate(
            labelled, ["A. B.", "C"], ["random"], segments="sentences", segment_reduce=reduce
        ),
        lambda: W.explain_generations(
            decoder,
            "A. B.",
            ["random"],
            continuations=" a",
            segments="sentences",
            segment_reduce=reduce,
        ),
    ):
        with pytest.raises(InvalidInputError, match=want):
            run()


def test_f05_a_0d_segment_reduce_is_its_name(labelled):
    def run(reduce):
        got = W.explain_texts(
            labelled, ["A. B.", "C"], ["random"], segments="sentences", segment_reduce=reduce
        )
        return got.explanations["random"][0].segments.scores

    assert np.allclose(run(np.array("max")), run("max"))


# ------------------------------------------------------------------ F06
def test_f06_a_0d_evidence_segments_entry_is_refused_in_one_line(labelled):
    explained = W.explain_texts(labelled, ["A. B.", "C"], ["random"], segments="sentences")
    for run in (
        lambda: W.evaluate_texts(
            labelled, explained, ["segment_hit_1"], evidence_segments=[np.array(0), [0]]
        ),
        lambda: nx.explain_and_evaluate(
            labelled,
            ["A. B.", "C"],
            ["random"],
            metrics=["segment_hit_1"],
            segments="sentences",
            evidence_segments=[np.array(0), [0]],
        ),
    ):
        with pytest.raises(InvalidInputError) as caught:
            run()
        said = str(caught.value)
        assert "evidence_segments[0] must be a list of segment indices" in said, said
        assert "a 0-d ndarray holding 0" in said and "[[0]]" in said, said


# ------------------------------------------------------------------ F07
@pytest.mark.parametrize(
    "options, named",
    [
        ({"contrasts": [5.0, 6]}, "contrasts holds token ids and, at [0], a float 5.0"),
        ({"contrasts": [5, True]}, "contrasts holds token ids and, at [1], a bool True"),
        ({"contrasts": np.array([5.0, 6.0])}, "contrasts holds token ids and, at [0], a float"),
        ({"continuations": torch.tensor([5.0, 6.0])}, "continuations holds token ids and, at [0]"),
    ],
    ids=["list-float", "list-bool", "array-float", "tensor-float"],
)
def test_f07_one_prompts_ids_with_a_stray_are_named(decoder, options, named):
    options = {"continuations": " a b", **options}
    with pytest.raises(InvalidInputError) as caught:
        W.explain_generations(decoder, "Once upon", ["random"], **options)
    said = str(caught.value)
    assert named in said and "token ids are whole numbers" in said, said


def test_f07_0d_contrast_ids_are_read_as_ids(decoder):
    got = nx.explain(decoder, "I like", G, continuation=[5, 6], contrast=[np.array(7), np.array(8)])
    want = nx.explain(decoder, "I like", G, continuation=[5, 6], contrast=[7, 8])
    assert np.allclose(got.scores, want.scores, equal_nan=True)


# ------------------------------------------------------------------ F08
def test_f08_save_names_a_dangling_link_or_a_file_folder(tmp_path, labelled):
    (tmp_path / "dang").symlink_to("nowhere/sub")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "tofile").symlink_to("afile")
    _loop(tmp_path)
    explained = nx.explain(labelled, "a good film", method="random")
    for name, want in (
        ("dang/x.json", "the folder {} is a link to nowhere (its target nowhere/sub"),
        ("tofile/x.json", "{} is a file, not a folder"),
        ("loop1/x.json", "the folder {} is a link loop"),
    ):
        folder = tmp_path / name.split("/")[0]
        for run, given in ((explained.save, ()), (write_atomically, ("{}",))):
            with pytest.raises(OutputPathError) as caught:
                run(tmp_path / name, *given)
            said = str(caught.value)
            assert want.format(folder) in said and "File exists" not in said, said
    # the advised fix works
    os.makedirs(tmp_path / "nowhere" / "sub")
    explained.save(tmp_path / "dang" / "x.json")


# ------------------------------------------------------------------ Noted
def test_noted_none_is_named_once():
    with pytest.raises(InvalidInputError) as caught:
        checked_choice(None, "aggregate", ["sum", "mean"])
    assert str(caught.value) == "aggregate=None is not one of: sum, mean"


def test_noted_0d_pearson_flag_is_read():
    assert M.pearson([1.0, 2, 3], [1.0, 2, 4], float32_outputs=np.array(True)) == M.pearson(
        [1.0, 2, 3], [1.0, 2, 4], float32_outputs=True
    )


def test_noted_0d_sanity_numbers_and_method_names_are_read(labelled):
    from normxlogit.sanity import parameter_randomization

    got = parameter_randomization(
        labelled,
        TEXTS[:1],
        [np.array("random")],
        mode="independent",
        top_k=np.array(3),
        seed=np.int64(2),
    )
    assert type(got.settings["top_k"]) is int and got.settings["top_k"] == 3
    made = W.explain_texts(labelled, TEXTS[:1], [np.array("random")])
    assert list(made.explanations) == ["random"]


def test_noted_chat_prompt_fields_are_plain_str():
    prompt = nx.ChatPrompt(user="{question} {passage}", fields=np.array(["question", "passage"]))
    assert all(type(field) is str for field in prompt.fields)


def test_noted_2d_label_words_are_named():
    with pytest.raises(InvalidInputError, match=r"a 2-d ndarray of shape \(1, 2\)"):
        prompted_llama(np.array([["good", "bad"]]))


@pytest.mark.parametrize("pi", ["0.5", ["0.5"]], ids=["str", "list"])
def test_noted_a_text_pi_is_refused(pi):
    with pytest.raises(InvalidInputError, match="pi holds the text '0.5'; pass numbers"):
        M.calibrate([0.5, 0.2], pi)


def test_noted_a_long_int_is_shortened():
    with pytest.raises(InvalidInputError) as caught:
        M.dot_product([1.0, 2.0], [1.0, 2.0], exclude=10**400)
    said = str(caught.value)
    assert "(401 digits)" in said and len(said) < 200, said
