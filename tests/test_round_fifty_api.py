"""Round 50 (a): the Python API and the command line.

- P01: a 0-d numpy array as explain_texts' texts or explain_generations' prompts: a
  traceback (len() of unsized object).
- P02: several prompts with a flat list of token ids as continuations: a traceback.
- P03: explain_generations' prompts as a set beside per-prompt values: paired at random.
- P04: a count refusal named every argument and gave a fixed hint; one prompt's
  contrasts=[7, 8] was not read as token ids.
- P05: an unknown option name with an invisible or control character printed raw.
- P06: a binary file (PNG, Parquet) given to a loader of saved results: "re-encode it".
- P07: an output name ".", ".." or "dir/." followed by an invisible character: advised
  to name it "." (a folder).
- P08: rescale_unit, dot_product and hellinger overflowed near the float64 limit.
- Noted: labels=np.array(1) quoted as a str; target=np.array(2) / torch.tensor(2)
  refused; SanityResult.load of a data .parquet named no data file.
"""

from __future__ import annotations

import numpy as np
import pytest

import normxlogit as nx
from normxlogit import metrics as M
from normxlogit import workflows as W
from normxlogit.common.errors import InvalidFileError, InvalidInputError, OutputPathError

from .conftest import invoke_in
from .conftest import said as _said

pd = pytest.importorskip("pandas")

TEXTS = ["a good movie", "a bad one", "an ok film"]


# ------------------------------------------------------------------ P01
def test_p01_a_0d_array_of_texts_or_prompts_is_refused_in_one_line(labelled, decoder):
    with pytest.raises(InvalidInputError, match=r"^texts are a 0-d array .*texts\.item\(\)"):
        W.explain_texts(labelled, np.array("a good film"), ["random"])
    with pytest.raises(InvalidInputError, match=r"^prompts are a 0-d array .*prompts\.item\(\)"):
        W.explain_generations(decoder, np.array("hello"), ["random"], max_new_tokens=1)
    # the advised fix works
    made = W.explain_texts(labelled, np.array("a good film").item(), ["random"])
    assert len(made.explanations["random"]) == 1


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(("given", "advised"), [([5, 6], "[[5], [6]]"), ([5, None], "[[5], None]")])
def test_p02_flat_ids_for_several_prompts_are_refused_naming_the_entry(decoder, given, advised):
    with pytest.raises(InvalidInputError) as caught:
        W.explain_generations(decoder, ["hello", "bye"], ["random"], given)
    said = str(caught.value)
    assert said.startswith("continuations[0] is the int 5; each prompt's continuation"), said
    assert f"continuations={advised}" in said, said
    made = W.explain_generations(decoder, ["hello", "bye"], ["random"], [[5], [6]])
    assert len(made.explanations["random"]) == 2


def test_p02_a_float_continuation_entry_is_named_with_its_index(decoder):
    with pytest.raises(InvalidInputError, match=r"^continuations\[0\]: the continuation is"):
        W.explain_generations(decoder, ["hello", "bye"], ["random"], [5.0, None])


# ------------------------------------------------------------------ P03
@pytest.mark.parametrize("argument", ["continuations", "contrasts", "contrast_inputs"])
def test_p03_prompts_as_a_set_beside_per_prompt_values_are_refused(decoder, argument):
    values = [" one", " two"] if argument != "contrasts" else [[5], [6]]
    for prompts in ({"alpha", "beta"}, dict.fromkeys(["alpha", "beta"]).keys()):
        with pytest.raises(InvalidInputError) as caught:
            W.explain_generations(decoder, prompts, ["random"], **{argument: values})
        said = str(caught.value)
        assert said.startswith("prompts are a "), said
        assert f"so {argument} would be paired with them at random" in said, said
        assert "give the prompts as a list" in said, said


# ------------------------------------------------------------------ P04
def test_p04_one_prompts_contrast_ids_are_read_as_token_ids(decoder):
    flat = W.explain_generations(decoder, "hello", ["gradient_norm"], [[5, 6]], contrasts=[7, 8])
    nested = W.explain_generations(
        decoder, "hello", ["gradient_norm"], [[5, 6]], contrasts=[[7, 8]]
    )
    a, b = flat.explanations["gradient_norm"][0], nested.explanations["gradient_norm"][0]
    assert a.input_ids == b.input_ids
    np.testing.assert_allclose(np.asarray(a.scores, dtype=float), np.asarray(b.scores, dtype=float))


def test_p04_the_count_refusal_names_the_argument_whose_count_is_wrong(decoder):
    with pytest.raises(InvalidInputError) as caught:
        W.explain_generations(decoder, "hello", ["random"], [[5, 6]], contrasts=[[7], [8]])
    said = str(caught.value)
    assert said.startswith("1 prompt but contrasts has 2 entries; give one contrast"), said
    assert "continuation" not in said and "contrast input" not in said, said
    with pytest.raises(InvalidInputError) as caught:
        W.explain_generations(decoder, "hello", ["random"], [" a", " b"])
    said = str(caught.value)
    assert said.startswith("1 prompt but continuations has 2 entries"), said
    assert "token ids" not in said, said  # the user gave texts
    with pytest.raises(InvalidInputError, match=r"^3 prompts but continuations has 2 entries"):
        W.explain_generations(decoder, ["a", "b", "c"], ["random"], [5, 6])


# ------------------------------------------------------------------ P05
@pytest.mark.parametrize("name", ["st\u200beps", "\x1b[31msteps"])
def test_p05_an_unknown_option_name_is_escaped(name):
    with pytest.raises(InvalidInputError) as caught:
        nx.get_method("integrated_gradients", **{name: 1})
    said = str(caught.value)
    assert repr(name) in said and name not in said, said


def test_p05_the_cli_and_the_bench_escape_the_name(tiny_classifier, tmp_path):
    from normxlogit.bench.config import _methods
    from normxlogit.cli.app import options_by_method

    result = invoke_in(
        tmp_path,
        "explain",
        "a good film",
        "-m",
        str(tiny_classifier),
        "--method",
        "integrated_gradients",
        "--option",
        "st\u200beps=10",
    )
    said = _said(result)
    assert result.exit_code != 0 and "'st\\u200beps'" in said, said
    assert "\u200b" not in result.output
    with pytest.raises(InvalidInputError) as caught:  # what sanity and evaluate call
        options_by_method(["se\u200bed=1"], ["integrated_gradients"])
    assert str(caught.value).startswith("--option 'se\\u200bed': "), str(caught.value)
    with pytest.raises(InvalidInputError) as caught:
        _methods([{"name": "integrated_gradients", "options": {"st\u200beps": 1}}], "methods")
    assert "'st\\u200beps'" in str(caught.value) and "\u200b" not in str(caught.value)


# ------------------------------------------------------------------ P06
@pytest.fixture
def binaries(tmp_path):
    frame = pd.DataFrame({"sentence": ["a"], "label": [1]})
    try:
        frame.to_parquet(tmp_path / "d.parquet")
    except ImportError:
        pytest.skip("no Parquet engine")
    (tmp_path / "d.json").write_bytes((tmp_path / "d.parquet").read_bytes())
    (tmp_path / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(200)))
    (tmp_path / "p.json").write_bytes((tmp_path / "plot.png").read_bytes())
    return tmp_path


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("d.parquet", "a Parquet table"),
        ("d.json", "a Parquet table"),
        ("plot.png", "a PNG image"),
        ("p.json", "a PNG image"),
    ],
)
def test_p06_a_binary_file_is_named_as_what_it_is(binaries, name, kind):
    from normxlogit.sanity import SanityResult

    path = binaries / name
    loaders = [nx.EvaluationResult.load, nx.Explanation.load, nx.load_explanations]
    if name.endswith(".json"):  # a .png or .parquet name: its suffix is named first
        loaders.append(SanityResult.load)
    for loader in loaders:
        with pytest.raises(InvalidFileError) as caught:
            loader(path)
        said = str(caught.value)
        assert f"is {kind}, not a saved" in said, (loader, said)
        assert "iconv" not in said and "UTF-8" not in said, said
        assert "pass the path of a file" in said, said


def test_p06_explain_input_names_a_png(binaries, tiny_classifier):
    args = ("explain", "-m", str(tiny_classifier), "--method", "random")
    result = invoke_in(binaries, *args, "-i", "plot.png")
    said = _said(result)
    assert result.exit_code != 0 and "plot.png is a PNG image, not text" in said, said
    assert "iconv" not in said, said


# ------------------------------------------------------------------ P07
@pytest.mark.parametrize(
    ("name", "advised"),
    [(".\u200b", "result.json"), ("x/.\u200b", "x/result.json"), ("..\u200b", "result.json")],
)
def test_p07_a_dot_and_an_invisible_character_is_no_name(name, advised):
    from normxlogit.common.outputs import refuse_blank_edges

    with pytest.raises(OutputPathError) as caught:
        refuse_blank_edges(name, "--output")
    said = str(caught.value)
    assert "is a folder, not a name" in said, said
    assert said.endswith(f"give a file name, e.g. {advised}"), said
    assert "(that file exists)" not in said, said


def test_p07_the_cli_advises_a_file_name(tiny_classifier, tmp_path):
    result = invoke_in(
        tmp_path, "explain", "a good film", "-m", str(tiny_classifier), "-o", ".\u200b"
    )
    said = _said(result)
    assert result.exit_code != 0 and "e.g. result.json" in said, said
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ P08
def test_p08_rescale_unit_dot_product_and_hellinger_do_not_overflow():
    with np.errstate(all="raise"):
        unit = M.rescale_unit([1e308, -1e308, 1e307])
    np.testing.assert_allclose(unit, [1 - 1e-6, 1e-6, 0.55], atol=1e-6)
    assert M.dot_product([1e308, -1e308, 1e307], [1, 2, 3]) == pytest.approx(-7e307)
    far = M.hellinger([1e308, 1e308, 1e307], [1, 2, 3])
    assert np.isfinite(far) and far == pytest.approx(np.sqrt(1.05) * 1e154, rel=1e-6)
    # the ordinary values are unchanged
    assert M.dot_product([0.3, 0.1, 0.5, 0.1], [1, 0, 0, 0]) == 0.3
    np.testing.assert_allclose(M.rescale_unit([0.0, 1.0]), [1e-6, 1 - 1e-6])
    with pytest.raises(InvalidInputError, match="overflows float64"):
        M.dot_product([1e308, 1e308], [1e10, 1e10])


# ------------------------------------------------------------------ Noted
def test_noted_a_0d_array_of_labels_is_named_as_an_int(labelled):
    with pytest.raises(InvalidInputError) as caught:
        W.explain_and_evaluate(labelled, TEXTS[:1], ["random"], labels=np.array(1))
    said = str(caught.value)
    assert "got a 0-d ndarray holding 1" in said, said


def test_noted_a_0d_target_is_its_one_item(labelled):
    torch = pytest.importorskip("torch")
    plain = labelled.explain(TEXTS[0], method="gradient_norm", target=2)
    for given in (np.array(2), torch.tensor(2)):
        made = labelled.explain(TEXTS[0], method="gradient_norm", target=given)
        np.testing.assert_allclose(np.asarray(made.scores), np.asarray(plain.scores))
    with pytest.raises(InvalidInputError, match=r"target=target\.item\(\)"):
        labelled.explain(TEXTS[0], method="gradient_norm", target=torch.tensor([2]))


def test_noted_sanity_load_names_a_data_parquet(binaries):
    from normxlogit.sanity import SanityResult

    with pytest.raises(InvalidFileError, match=r"looks like a data file .*columns: sentence"):
        SanityResult.load(binaries / "d.parquet")
