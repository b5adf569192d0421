"""Round 52 (a): the Python API and the command line.

- P01: `explain -i FILE` (and standard input) refused a text beginning with PAR1, GIF8 or
  %PDF- as a binary file: it ran its own check instead of the shared reader's.
- P02: one continuation per prompt as an array, a tensor or a Series was read as one
  continuation and refused (or, after the advice, given to every prompt).
- P03: evidence word indices as 0-d tensors or arrays were "not a whole number".
- P04: an invisible character in a folder whose visible name is a file advised
  `mkdir -p` of that file.
- P05: a Latin-1 text beginning with PAR1 or GIF8 was named a Parquet table or a GIF image
  instead of being advised to be re-encoded.
- P06: a Python int beyond float range raised OverflowError from the metrics.
- Noted: 0-d values in a target or contrast list (explain) and in one prompt's ids
  (explain_generations); labels=torch.tensor(1) called an int; np.bytes_ called a 0-d
  array; "texts" where the argument is prompts; texts.item() advised for a None;
  aopc([1, None]) read as NaN; auc with an unsorted x.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import normxlogit as nx
from normxlogit import metrics as M
from normxlogit import workflows as W
from normxlogit.common.errors import InvalidFileError, InvalidInputError

from .conftest import invoke_in
from .conftest import said as _said

pd = pytest.importorskip("pandas")

G = "gradient_x_input"


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize("first", ["PAR1 is a great film", "GIF8 nice", "%PDF- is fine"])
def test_p01_explain_input_beginning_like_a_binary_mark_is_text(tmp_path, tiny_classifier, first):
    (tmp_path / "t.txt").write_text(f"{first}\nanother film\n")
    args = ("explain", "-m", str(tiny_classifier), "--method", "random")
    result = invoke_in(tmp_path, *args, "-i", "t.txt", "-o", "x.json")
    assert result.exit_code == 0, _said(result)
    texts = [e.text for e in nx.load_explanations(tmp_path / "x.json")]
    assert texts == [first, "another film"]


def test_p01_standard_input_beginning_like_a_binary_mark_is_text(tmp_path, tiny_classifier):
    from typer.testing import CliRunner

    from normxlogit.cli import app

    args = ["explain", "-m", str(tiny_classifier), "--method", "random"]
    result = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "x.json")], input="PAR1 x\n")
    assert result.exit_code == 0, _said(result)


def test_p01_a_real_binary_input_is_still_named(tmp_path, tiny_classifier):
    (tmp_path / "t.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    args = ("explain", "-m", str(tiny_classifier), "--method", "random", "-i", "t.txt")
    said = _said(invoke_in(tmp_path, *args))
    assert "t.txt is a PNG image, not text" in said, said


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    "given",
    [
        lambda: pd.Series([" good", " bad"]),
        lambda: np.array([" good", " bad"]),
        lambda: torch.tensor([[5, 6], [7, 8]]),
        lambda: np.array([[5, 6], [7, 8]]),
    ],
    ids=["series", "text-array", "2d-tensor", "2d-array"],
)
def test_p02_continuations_per_prompt_as_an_array(decoder, given):
    value = given()
    listed = value.tolist()
    got = nx.explain(decoder, ["a film", "bad"], G, continuation=value)
    want = nx.explain(decoder, ["a film", "bad"], G, continuation=listed)
    assert [e.tokens for e in got] == [e.tokens for e in want]
    assert got[0].tokens != got[1].tokens


def test_p02_one_continuation_as_ids_is_still_every_prompts(decoder):
    got = nx.explain(decoder, ["a film", "bad"], G, continuation=np.array([5, 6]))
    assert got[0].tokens[-2:] == got[1].tokens[-2:]
    with pytest.raises(InvalidInputError, match="5.0 is not a token id"):
        nx.explain(decoder, ["a film", "bad"], G, continuation=np.array([5.0, 6.0]))


# ------------------------------------------------------------------ P03
@pytest.mark.parametrize(
    "evidence",
    [
        lambda: [torch.tensor([0, 1, 0, 0]).nonzero().flatten(), [1]],
        lambda: torch.tensor([[1], [1]]),
        lambda: [[np.array(1)], [torch.tensor(1)]],
    ],
    ids=["nonzero", "2d-tensor", "0d-items"],
)
def test_p03_evidence_words_as_tensors(labelled, evidence):
    texts = ["a good film here", "a bad one there"]
    with pytest.warns(nx.NormXLogitWarning):  # top_k covers these short texts
        result = nx.explain_and_evaluate(
            labelled, texts, ["random"], ["token_f1"], evidence_words=evidence()
        )
    assert len(result.result.frame) > 0


# ------------------------------------------------------------------ P04
def test_p04_invisible_folder_whose_visible_name_is_a_file(tmp_path, tiny_classifier):
    (tmp_path / "afile.json").write_text("{}")
    args = ("explain", "a good film", "-m", str(tiny_classifier), "--method", "random")
    said = _said(invoke_in(tmp_path, *args, "-o", "afile.json\u200b/x.json"))
    assert "afile.json is a file, not a folder" in said, said
    assert "mkdir" not in said and "does not exist either" not in said, said
    said = _said(invoke_in(tmp_path, *args, "-o", "afile.json/s\u200b/x.json"))
    assert "afile.json is a file, not a folder" in said and "mkdir" not in said, said


# ------------------------------------------------------------------ P05
@pytest.mark.parametrize(
    "first", [b"PAR1", b"GIF89a", b"%PDF-1.4", b"ARROW1", b"FEA1", b"RIFF\x20\x20\x20\x20WEBP"]
)
def test_p05_latin1_text_beginning_like_a_mark_is_advised_reencoding(tmp_path, first):
    from normxlogit.data import read_examples

    path = tmp_path / "latin.tsv"
    path.write_bytes(first + " caf\xe9 film\tpos\n".encode("latin1"))
    with pytest.raises(InvalidFileError, match=r"is not UTF-8: byte 0xE9.*iconv -f latin1"):
        read_examples(str(path))
    # with binary evidence (a NUL, a control byte) the format is named
    path.write_bytes(first + b"\x15\x04caf\xe9")
    with pytest.raises(InvalidFileError, match=r"latin.tsv is an? .*, not text"):
        read_examples(str(path))


def test_p05_evaluate_names_reencoding(tmp_path, tiny_classifier):
    (tmp_path / "latin.tsv").write_bytes("PAR1 caf\xe9 film\tpos\n".encode("latin1"))
    args = ("evaluate", "-m", str(tiny_classifier), "latin.tsv")
    said = _said(invoke_in(tmp_path, *args, "--method", "random", "--metric", "comp_cd"))
    assert "is not UTF-8" in said and "Parquet" not in said, said


# ------------------------------------------------------------------ P06
@pytest.mark.parametrize("metric", [M.aopc, M.auc])
def test_p06_an_int_beyond_float_range_is_refused(metric):
    with pytest.raises(InvalidInputError, match="too large for a float64"):
        metric([10**400, 1])


def test_p06_pearson_and_hellinger_refuse_it_too():
    with pytest.raises(InvalidInputError, match="predictions holds a number too large"):
        M.pearson([10**400, 1, 2], [1, 2, 3])
    with pytest.raises(InvalidInputError, match="too large for a float64"):
        M.hellinger([10**400, 1], [1, 2])


# ------------------------------------------------------------------ Noted
def test_noted_0d_values_in_a_target_list(labelled):
    want = nx.explain(labelled, "a film", G, target=[2, 0])
    for target in ([np.array(2), torch.tensor(0)], list(torch.tensor([2, 0]))):
        got = nx.explain(labelled, "a film", G, target=target)
        assert got.targets == want.targets
    got = nx.explain(labelled, "a film", G, target=[2, 0], contrast=[np.array(1), 1])
    assert got.targets == want.targets


def test_noted_0d_ids_for_one_prompt(decoder):
    got = W.explain_generations(
        decoder, "a film", [G], continuations=[np.array(5), torch.tensor(6)]
    )
    want = W.explain_generations(decoder, "a film", [G], continuations=[5, 6])
    assert [e.tokens for e in got.explanations[G]] == [e.tokens for e in want.explanations[G]]


def test_noted_0d_labels_named_as_given(labelled):
    explained = W.explain_texts(labelled, ["a film", "bad"], ["random"])
    with pytest.raises(InvalidInputError, match="got a 0-d Tensor holding 1$"):
        W.evaluate_texts(labelled, explained, ["comp_cd"], labels=torch.tensor(1))


def test_noted_0d_texts_wording(labelled, decoder):
    with pytest.raises(InvalidInputError, match=r"texts are a NumPy scalar \(bytes_\)"):
        nx.explain(labelled, np.bytes_(b"x"), "random")
    with pytest.raises(InvalidInputError, match=r"prompts are a 0-d array.*prompts\.item\(\)"):
        W.explain_generations(decoder, np.array(b"a film"), ["random"])
    with pytest.raises(InvalidInputError, match=r"it holds None, which is no text\)$"):
        nx.explain(labelled, np.array(None, dtype=object), "random")
    held = np.array("a film")
    with pytest.raises(InvalidInputError, match=r"e\.g\. texts\.item\(\)"):
        nx.explain(labelled, held, "random")
    assert nx.explain(labelled, held.item(), "random").text == "a film"


def test_noted_none_in_a_curve_is_refused():
    with pytest.raises(InvalidInputError, match="curve holds None; pass numbers only"):
        M.aopc([1, None])
    assert np.isnan(M.aopc([1, float("nan")]))


def test_noted_auc_refuses_unsorted_x():
    with pytest.raises(InvalidInputError, match=r"x must be in increasing order.*np\.argsort"):
        M.auc([1, 2, 3], x=[1, 0, 2])
    order = np.argsort([1, 0, 2])
    assert M.auc(np.asarray([1, 2, 3])[order], np.asarray([1, 0, 2])[order]) == 3.5
