"""Round 47 (a): the Python API and the command line.

- P01: a pandas DataFrame given as the texts (or prompts) was read by its column names,
  which were explained as texts; refused, pointing to ``list(df["text"])``.
- P02: the "did you mean 'all'" hint was given to contrasts and gold labels, where
  ``'all'`` is refused; only a target given alone gets it now.
- P03: ``read_examples`` and the readers' ``path=`` / ``root=`` raised TypeErrors for None,
  numbers and bytes; ``limit=`` was not checked (``limit=0`` said "holds no rows").
- P04: ``-o "r.csv "`` did not name the blank, and ``--format`` wrote a file whose name
  ends in it; refused, naming the blank.
- P05: ``target=`` given a Series, a DataFrame or an array printed its repr over lines;
  one line now, pointing to ``explain_texts(targets=...)``.
- P06: a name not in NFC form for another reason than combining accents (U+212A KELVIN
  SIGN) is described as such, naming the character.
- Noted: memoryview metrics; blank-edged output names (leading too) refused for every
  save; explain_steps past the end names the prompt and says "1 step"; SanityResult.load
  refuses another suffix as an input; save_explanations(dict) gives the flat-list advice.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import normxlogit as nx
from normxlogit import workflows as W
from normxlogit.common.errors import (
    InvalidFileError,
    InvalidInputError,
    InvalidOptionError,
    OutputPathError,
)
from normxlogit.common.fields import name_problem

from .conftest import invoke_in, sanity_frame
from .conftest import said as _said

pd = pytest.importorskip("pandas")

TEXTS = ["a good movie", "a bad one", "an ok film"]
ROWS = "text\tlabel\na good movie\tpos\na bad one\tneg\nan ok film\tpos\n"


# ------------------------------------------------------------------ P01
def test_p01_a_dataframe_of_texts_is_refused(labelled, decoder):
    frame = pd.DataFrame({"text": TEXTS, "label": ["pos", "neg", "pos"]})
    for call in (
        lambda: nx.explain(labelled, frame, "random"),
        lambda: W.explain_texts(labelled, frame, ["random"]),
        lambda: W.explain_and_evaluate(labelled, frame, ["random"], ["comp_cd"]),
        lambda: W.explain_generations(decoder, pd.DataFrame({"prompt": TEXTS}), ["random"]),
    ):
        with pytest.raises(InvalidInputError, match="a DataFrame is read by its column names"):
            call()
    with pytest.raises(InvalidInputError, match=r"list\(df\['text'\]\)"):
        nx.explain(labelled, frame[["text"]], "random")
    assert len(nx.explain(labelled, list(frame["text"]), "random")) == 3  # the advice works


# ------------------------------------------------------------------ P02
def test_p02_the_all_hint_only_where_all_is_taken(labelled, tmp_path, tiny_classifier):
    with pytest.raises(InvalidInputError, match="did you mean 'all'"):
        labelled.explain("a good movie", "random", target="ALL")
    for call in (
        lambda: labelled.explain("a good movie", "gradient_norm", target="pos", contrast="ALL"),
        lambda: labelled.explain("a good movie", "gradient_norm", target="pos", contrast=["ALL"]),
        lambda: labelled.explain("a good movie", "random", target=["ALL", "pos"]),
        lambda: W.explain_texts(labelled, TEXTS[:1], ["gradient_norm"], ["pos"], contrasts=["ALL"]),
        lambda: W.explain_and_evaluate(labelled, TEXTS[:1], ["random"], "comp_acc", labels=["all"]),
        lambda: W.explain_and_evaluate(labelled, TEXTS[:1], ["random"], "comp_acc", labels=["ALL"]),
    ):
        with pytest.raises(InvalidInputError) as caught:
            call()
        said = str(caught.value)
        assert "did you mean" not in said and "\n" not in said, said
        assert "only as a target given alone" in said, said
    result = invoke_in(
        tmp_path, "explain", "good film", "-m", str(tiny_classifier), "--label", "pos",
        "--contrast", "ALL",
    )  # fmt: skip
    assert result.exit_code != 0 and "did you mean" not in _said(result), result.output


# ------------------------------------------------------------------ P03
def test_p03_read_examples_refuses_no_path_and_checks_limit(tmp_path):
    from normxlogit import data as D

    (tmp_path / "d.tsv").write_text(ROWS)
    for call, said in (
        (lambda: D.read_examples(None), "path is a file's name, a str or a pathlib.Path; got None"),
        (lambda: D.read_examples(5), "got an int 5"),
        (lambda: D.read_examples(["d.tsv"]), "got a list"),
        (lambda: D.read_examples(b"d.tsv"), "path is bytes"),
        (lambda: D.read_sst2(path=5), "path is a file's name"),
        (lambda: D.read_sst2(root=5), "root is a file's name"),
        (lambda: D.read_imdb(path=5), "path is a file's name"),
        (lambda: D.read_boolq(path=5), "path is a file's name"),
    ):
        with pytest.raises(InvalidInputError, match=said):
            call()
    path = tmp_path / "d.tsv"
    for limit, said in ((0, "at least 1"), (-1, "at least 1"), ("3", "whole number"),
                        (1.5, "whole number"), (True, "whole number")):  # fmt: skip
        with pytest.raises(InvalidOptionError, match=said):
            D.read_examples(path, limit=limit)
    assert len(D.read_examples(path, limit=2)) == 2
    (tmp_path / "d.txt").write_text("one\ntwo\n")
    with pytest.raises(InvalidOptionError, match="at least 1"):
        D.read_examples(tmp_path / "d.txt", limit=0)


# ------------------------------------------------------------------ P04
@pytest.mark.parametrize("name", ["r.csv ", "r.csv\u200b", " r.csv"])
def test_p04_output_name_with_a_blank_edge_is_refused_even_with_format(
    tmp_path, tiny_classifier, name
):
    (tmp_path / "d.tsv").write_text(ROWS)
    for extra in ((), ("--format", "csv")):
        result = invoke_in(
            tmp_path, "evaluate", "d.tsv", "-m", str(tiny_classifier), "--method", "random",
            "-o", name, "-q", *extra,
        )  # fmt: skip
        said = _said(result)
        assert result.exit_code != 0, said
        assert repr(name) in said and ("space or tab" in said or "U+200B" in said), said
        assert "pass --format" not in said, said
    result = invoke_in(
        tmp_path, "explain", "good film", "-m", str(tiny_classifier), "-o", "e.json\u200b",
        "--format", "json",
    )  # fmt: skip
    assert result.exit_code != 0 and "U+200B (ZERO WIDTH SPACE)" in _said(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.tsv"]  # nothing written


def test_p04_cli_save_with_a_leading_blank_is_refused(tmp_path, tiny_classifier):
    (tmp_path / "d.tsv").write_text(ROWS)
    result = invoke_in(
        tmp_path, "evaluate", "d.tsv", "-m", str(tiny_classifier), "--method", "random",
        "--save", " s.json", "-q",
    )  # fmt: skip
    said = _said(result)
    assert result.exit_code != 0 and "--save ' s.json': the name begins with" in said, said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.tsv"]


# ------------------------------------------------------------------ P05
def test_p05_a_series_or_array_target_is_one_line(labelled):
    for value, said in (
        (pd.Series(["pos", "neg"]), "target is a pandas Series"),
        (pd.DataFrame({"a": ["pos", "neg"]}), "target is a pandas DataFrame"),
        (np.array([[0, 1], [1, 0]]), "target is an ndarray"),
    ):
        with pytest.raises(InvalidInputError) as caught:
            nx.explain(labelled, TEXTS[:2], "random", target=value)
        message = str(caught.value)
        assert "\n" not in message and message.startswith(said), message
        assert "explain_texts(model, texts, methods, targets=list(...))" in message
    with pytest.raises(InvalidInputError) as caught:
        nx.explain(
            labelled, TEXTS[:2], "gradient_norm", target="pos", contrast=pd.Series(["neg"] * 2)
        )
    assert "\n" not in str(caught.value) and "contrasts=list(" in str(caught.value)
    made = W.explain_texts(labelled, TEXTS[:2], ["random"], targets=list(pd.Series(["pos", "neg"])))
    assert [e.targets for e in made.explanations["random"]] == [["pos"], ["neg"]]


# ------------------------------------------------------------------ P06
def test_p06_a_compatibility_character_is_named_not_called_an_accent():
    said = name_problem("\u212a")
    assert "combining accents" not in said
    assert "U+212A (KELVIN SIGN), which looks like 'K'" in said and "write it as 'K'" in said
    assert "combining accents" in name_problem("cafe\u0301")


# ------------------------------------------------------------------ noted
def test_noted_memoryview_metrics_named_as_such(labelled):
    with pytest.raises(InvalidInputError, match="got a memoryview"):
        W.explain_and_evaluate(labelled, TEXTS[:1], ["random"], memoryview(b"comp_cd"))


def test_noted_python_saves_refuse_a_leading_blank(labelled, tmp_path):
    made = nx.explain(labelled, TEXTS[:1], "random")
    result = W.explain_and_evaluate(labelled, TEXTS[:2], ["random"], ["comp_cd"])
    from normxlogit.sanity import SanityResult

    for call in (
        lambda: nx.save_explanations(made, tmp_path / " x.json"),
        lambda: made[0].save(tmp_path / " y.json"),
        lambda: result.result.save(tmp_path / " r.json"),
        lambda: SanityResult(sanity_frame()).save(tmp_path / " s.csv"),
        lambda: SanityResult(sanity_frame()).save(tmp_path / "s.csv "),
    ):
        with pytest.raises(OutputPathError, match="the name (begins with|ends in) a space"):
            call()
    assert list(tmp_path.iterdir()) == []


def test_noted_every_prompt_ending_at_step_zero_is_named(decoder):
    written = decoder.explain("a film", generate=True, max_new_tokens=3, method="random")
    first = written.input_ids[written.prompt_length]
    config = decoder.model.generation_config
    before = config.eos_token_id
    config.eos_token_id = first  # the prompt's generation ends at step 0
    try:
        with pytest.raises(InvalidInputError) as caught:
            W.explain_generations(
                decoder, ["a film", "a film"], ["random"], max_new_tokens=3, explain_steps=[2]
            )
    finally:
        config.eos_token_id = before
    said = str(caught.value)
    assert "the generation of text 0 ('a film') ended at step 0" in said, said
    assert "pick no step: " in said and "it ended" not in said, said
    with pytest.raises(InvalidInputError) as caught:
        W.explain_generations(
            decoder, ["a film", "a b"], ["random"], continuations=[" x", " y"],
            explain_steps=[3],
        )  # fmt: skip
    assert "has 1 step (step 0), none from step 3" in str(caught.value)
    assert "1 steps" not in str(caught.value)


def test_noted_sanity_load_refuses_another_suffix_as_an_input(tmp_path):
    from normxlogit.sanity import SanityResult

    (tmp_path / "d.tsv").write_text(ROWS)
    with pytest.raises(InvalidFileError, match=r"SanityResult.load reads \.csv, \.parquet"):
        SanityResult.load(tmp_path / "d.tsv")


def test_noted_save_explanations_of_a_dict_gives_the_flat_list(labelled, tmp_path):
    made = W.explain_texts(labelled, TEXTS[:2], ["random"]).explanations
    with pytest.raises(InvalidInputError) as caught:
        nx.save_explanations(dict(made), tmp_path / "x.json")
    said = str(caught.value)
    assert "not a dict" in said and "[e for items in d.values() for e in items]" in said
    nx.save_explanations([e for items in made.values() for e in items], tmp_path / "x.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(nx.load_explanations(tmp_path / "x.json")) == 2
