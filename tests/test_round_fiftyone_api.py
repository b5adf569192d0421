"""Round 51 (a): the Python API and the command line.

- P01: the data readers (read_examples, evaluate DATA, sanity DATA) advised re-encoding a
  PNG or a .npy file with iconv, which makes no text of it.
- P02: Feather, pickle and HDF5 files were not named as such; binary files whose bytes
  happen to be UTF-8 (BMP, ELF) were read as text, NUL bytes included.
- P03: 0-d arrays as per-text targets or contrasts, and a tensor of labels (or a list of
  0-d tensors), were refused.
- P04: one prompt's continuation or contrast as a 1-d array or tensor of ids was refused;
  the one-prompt count refusal was garbled.
- P05: explain_generations paired Series of prompts and continuations with different
  indexes by position without a word.
- P06: an output folder with an invisible character was printed raw ("the folder sub
  does not exist" where sub exists) and advised `mkdir` of the invisible name.
- P07: hellinger rescaled only when no row was NaN; aopc and auc overflowed near 1e308.
- Noted: np.array(b"...") texts advised texts.item() (bytes); evaluate checked labels no
  metric reads; the contrast-length refusal of explain_generations named continuation=.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import normxlogit as nx
from normxlogit import metrics as M
from normxlogit import workflows as W
from normxlogit.common.errors import InvalidFileError, InvalidInputError, OutputPathError

from .conftest import explainable, invoke_in
from .conftest import said as _said

pd = pytest.importorskip("pandas")

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


# ------------------------------------------------------------------ P01
def test_p01_read_examples_names_a_png_and_a_npy_file(tmp_path):
    from normxlogit.data import read_examples

    (tmp_path / "fig.png").write_bytes(PNG)
    np.save(tmp_path / "arr.npy", np.arange(3))
    for name, kind in (("fig.png", "a PNG image"), ("arr.npy", "a NumPy array file")):
        with pytest.raises(InvalidFileError) as caught:
            read_examples(tmp_path / name)
        said = str(caught.value)
        assert f"{name} is {kind}, not text" in said, said
        assert "iconv" not in said, said


@pytest.mark.parametrize("command", ["evaluate", "sanity"])
def test_p01_the_cli_data_argument_names_a_png(tmp_path, tiny_classifier, command):
    (tmp_path / "fig.png").write_bytes(PNG)
    result = invoke_in(tmp_path, command, "fig.png", "-m", str(tiny_classifier))
    said = _said(result)
    assert result.exit_code != 0 and "fig.png is a PNG image, not text" in said, said
    assert "iconv" not in said, said


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"ARROW1\x00\x00\xff\xff\xff\xff", "a Feather (Arrow IPC) table"),
        (b"\x80\x04\x95\x10\x00\x00", "a pickle file"),
        (b"\x89HDF\r\n\x1a\n\x00\x00", "an HDF5 file"),
        (b"\x7fELF\x02\x01\x01\x00", "an ELF executable"),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "a WebP image"),
    ],
)
def test_p02_more_binary_formats_are_named(tmp_path, head, kind):
    from normxlogit.data import read_examples

    path = tmp_path / "d.json"
    path.write_bytes(head + b"\x00" * 16)
    for loader in (nx.Explanation.load, nx.load_explanations, nx.EvaluationResult.load):
        with pytest.raises(InvalidFileError) as caught:
            loader(path)
        said = str(caught.value)
        assert f"is {kind}, not a saved" in said, (loader, said)
        assert "iconv" not in said, said
    text = tmp_path / "d.txt"
    text.write_bytes(head + b"\x00" * 16)
    with pytest.raises(InvalidFileError, match=re.escape(f"is {kind}, not text")):
        read_examples(text)


def test_p02_a_real_feather_file_is_named(tmp_path, tiny_classifier):
    pytest.importorskip("pyarrow")
    pd.DataFrame({"text": ["a film"], "label": [0]}).to_feather(tmp_path / "d.feather")
    args = ("explain", "-m", str(tiny_classifier), "--method", "random", "-i", "d.feather")
    said = _said(invoke_in(tmp_path, *args))
    assert "d.feather is a Feather (Arrow IPC) table, not text" in said, said
    (tmp_path / "d.feather").rename(tmp_path / "d.feather.json")
    with pytest.raises(InvalidFileError, match=r"is a Feather \(Arrow IPC\) table, not a saved"):
        nx.Explanation.load(tmp_path / "d.feather.json")
    assert "iconv" not in said, said


def test_p02_a_file_with_nul_bytes_is_not_text(tmp_path, tiny_classifier):
    from normxlogit.data import read_examples

    (tmp_path / "img.bmp").write_bytes(b"BM\0\0\0\0\0\0")
    (tmp_path / "t.txt").write_bytes(b"a film\nb\x00c\n")
    with pytest.raises(InvalidFileError, match=r"holds a NUL byte \(line 2, .*not text"):
        read_examples(tmp_path / "t.txt")
    with pytest.raises(InvalidFileError, match=r"^img.bmp holds a NUL byte|holds a NUL byte"):
        read_examples(tmp_path / "img.bmp")
    args = ("explain", "-m", str(tiny_classifier), "--method", "random", "-i", "img.bmp")
    result = invoke_in(tmp_path, *args)
    said = _said(result)
    assert result.exit_code != 0 and "holds a NUL byte" in said, said
    # UTF-16 with its byte-order mark is still named as UTF-16
    (tmp_path / "w.txt").write_bytes("a film\n".encode("utf-16"))
    with pytest.raises(InvalidFileError, match="UTF-16 text"):
        read_examples(tmp_path / "w.txt")


def test_p02_a_bmp_with_its_header_is_named():
    from normxlogit.common.input_paths import binary_kind

    assert binary_kind(b"BM\x36\x00\x0c\x00\x00\x00\x00\x00\x36\x00") == "a BMP image"
    assert binary_kind(b"BMW is a car") is None  # a text that starts with BM


# ------------------------------------------------------------------ P03
def test_p03_0d_arrays_as_targets_and_contrasts_are_their_values(labelled):
    made = W.explain_texts(labelled, ["a", "b"], ["random"], targets=[np.array(0), np.array(2)])
    assert [e.targets for e in made.explanations["random"]] == [["neg"], ["pos"]]
    made = W.explain_texts(
        labelled,
        ["a", "b"],
        ["gradient_x_input"],
        targets=[2, 2],
        contrasts=[np.array(0), torch.tensor(1)],
    )
    contrasts = [e.contrasts for e in made.explanations["gradient_x_input"]]
    assert contrasts == [["neg"], ["neutral"]], contrasts


@pytest.mark.parametrize(
    "labels", [torch.tensor([0, 1]), list(torch.tensor([0, 1])), [np.array(0), np.array(1)]]
)
def test_p03_a_tensor_of_labels_is_read_as_a_list(labelled, labels):
    made = nx.explain(labelled, ["a good film", "bad"], "random")
    with pytest.warns(nx.NormXLogitWarning):
        result = nx.evaluate(labelled, made, labels=labels, metrics=["comp_acc"])
    assert not result.frame.empty
    evaluated = W.explain_and_evaluate(
        labelled, ["a good film", "bad"], ["random"], labels=labels, metrics=["comp_acc"]
    )
    assert not evaluated.result.frame.empty


def test_p03_a_regressor_takes_0d_tensor_gold_values():
    model = explainable("bert", "regression")
    made = nx.explain(model, ["a good film", "bad", "ok"], "random")
    with pytest.warns(nx.NormXLogitWarning):
        result = nx.evaluate(
            model, made, labels=torch.tensor([0.5, 0.1, 0.9]), metrics=["comp_acc"]
        )
    assert not result.frame.empty


# ------------------------------------------------------------------ P04
@pytest.mark.parametrize("ids", [np.array([7, 8]), torch.tensor([7, 8])])
def test_p04_one_prompts_ids_as_an_array_or_tensor(decoder, ids):
    made = W.explain_generations(decoder, "a film", ["random"], continuations=ids)
    explained = made.explanations["random"][0]
    assert explained.input_ids[explained.prompt_length :] == [7, 8]


def test_p04_the_one_prompt_count_refusal_reads_and_names_ids(decoder):
    with pytest.raises(InvalidInputError) as caught:
        W.explain_generations(decoder, ["a film"], ["random"], list(torch.tensor([7, 8])))
    said = str(caught.value)
    assert said == (
        "1 prompt but continuations has 2 entries; give one prompt's continuation as token "
        "ids in a list inside the list (continuations=[[7, 8]])"
    ), said


# ------------------------------------------------------------------ P05
@pytest.mark.parametrize("name", ["continuations", "contrasts", "contrast_inputs"])
def test_p05_misaligned_series_of_prompts_are_refused(decoder, name):
    prompts = pd.Series(["a film", "b"], index=[0, 1])
    values = [[5], [6]] if name != "contrast_inputs" else ["c", "d"]
    given = {name: pd.Series(values, index=[5, 6])}
    with pytest.raises(InvalidInputError) as caught:
        W.explain_generations(decoder, prompts, ["random"], **given)
    said = str(caught.value)
    assert said.startswith(f"prompts and {name} are pandas Series with different indexes"), said
    assert f"{name}={name}.reindex(prompts.index)" in said, said


# ------------------------------------------------------------------ P06
def test_p06_an_invisible_character_in_the_folder_is_named(tmp_path, tiny_classifier):
    (tmp_path / "sub").mkdir()
    args = ("explain", "a good film", "-m", str(tiny_classifier), "--method", "random")
    result = invoke_in(tmp_path, *args, "-o", "sub\u200b/x.json")
    said = _said(result)
    assert result.exit_code != 0, said
    assert "the folder 'sub\\u200b' does not exist" in said, said
    assert "U+200B (ZERO WIDTH SPACE)" in said and "write to sub/x.json" in said, said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]
    # the advised name works
    assert invoke_in(tmp_path, *args, "-o", "sub/x.json").exit_code == 0
    assert (tmp_path / "sub" / "x.json").is_file()


def test_p06_a_missing_invisible_folder_advises_the_visible_name(tmp_path):
    from normxlogit.common.outputs import check_output_file

    with pytest.raises(OutputPathError) as caught:
        check_output_file(tmp_path / "new\u200b" / "r.json", "--save")
    said = str(caught.value)
    assert "U+200B" in said and f"mkdir -p {tmp_path / 'new'})" in said, said


# ------------------------------------------------------------------ P07
def test_p07_hellinger_rescales_per_row_and_aopc_auc_do_not_overflow():
    rows = M.hellinger([[1e308, 1e308], [np.nan, 1]], [[0, 0], [0, 1]])
    assert rows[0] == pytest.approx(1e154) and np.isnan(rows[1])
    with np.errstate(all="raise"):
        assert M.aopc([1e308, 1e308]) == pytest.approx(1e308)
        assert M.auc([1e308, 1e308]) == pytest.approx(1e308)
        assert M.auc([1e308, 1e308, 1e308], [0, 0.5, 1]) == pytest.approx(1e308)
    assert np.isnan(M.aopc([1.0, np.nan])) and M.auc([1, 2]) == pytest.approx(1.5)


# ------------------------------------------------------------------ noted
def test_noted_0d_bytes_texts_advise_decoding(labelled):
    with pytest.raises(InvalidInputError) as caught:
        W.explain_texts(labelled, np.array(b"a film"), ["random"])
    said = str(caught.value)
    assert "texts.item().decode('utf-8')" in said, said
    made = W.explain_texts(labelled, np.array(b"a film").item().decode("utf-8"), ["random"])
    assert len(made.explanations["random"]) == 1


def test_noted_labels_no_metric_reads_are_not_checked_by_evaluate(labelled):
    made = nx.explain(labelled, ["a good film", "bad"], "random")
    result = nx.evaluate(labelled, made, labels=[None, None], metrics=["comp_cd"])
    assert not result.frame.empty
    evaluated = W.explain_and_evaluate(
        labelled, ["a good film", "bad"], ["random"], labels=[None, None], metrics=["comp_cd"]
    )
    assert not evaluated.result.frame.empty


def test_noted_the_contrast_length_refusal_names_continuations(decoder):
    with pytest.raises(InvalidInputError, match=r"pass continuations= to fix"):
        W.explain_generations(
            decoder, "a film", ["gradient_x_input"], continuations=[7, 8], contrasts=[5]
        )
    with pytest.raises(InvalidInputError, match=r"pass continuation= to fix"):
        nx.explain(decoder, "a film", "gradient_x_input", continuation=[7, 8], contrast=[5])


def test_a_text_file_beginning_like_a_binary_mark_is_still_text(tmp_path):
    """Marks made of ASCII letters (PAR1, GIF8, %PDF-, ARROW1) name a binary format only
    where the file is not text as well: a data file's first text may begin with them."""
    from normxlogit.data import read_examples

    path = tmp_path / "d.tsv"
    path.write_text("sentence\tlabel\nPAR1 GIF8 %PDF- of a good film\t1\n")
    assert read_examples(str(path))[0].text.startswith("PAR1 GIF8")
    lone = tmp_path / "t.txt"
    lone.write_text("GIF8 is no image here\n")
    assert read_examples(str(lone))[0].text == "GIF8 is no image here"
