"""Round 42 (a): the Python API and the command line.

- P01: a lone surrogate ("\\ud800") in a text, a text pair, a continuation or a contrast
  input is refused in one line naming the text and the position (it was the tokenizer's
  TypeError), as a surrogate target already was.
- P02: ``evaluate`` / ``sanity`` on a JSONL row whose text holds a ``"\\ud800"`` escape
  name the file and the line (they printed a traceback).
- P03: the ``jq`` advice of ``explain --input x.jsonl`` / ``x.json`` names the file as
  given (its folder kept), and a .json array is read with ``.[].text``.
- P04: ``SanityResult.load`` on a saved JSON under a .csv / .parquet name says to rename
  it to .json (its own) or names the loader (another's); ``EvaluationResult.load`` on a
  sanity JSON under .csv says to rename it too.
- P05: one workflow's explanations given to the other's evaluate function name the right
  function.
- P06: a flat list holding two settings of one method is refused (it was one method,
  each text scored twice, the differing option dropped); a dict's list is warned about.
- P07: ``evaluate_texts``' bad ``evidence_segments`` are named ``evidence_segments[i]``.
"""

from __future__ import annotations

import json
import shutil

import pytest

from normxlogit.common.errors import InvalidFileError, InvalidInputError, NormXLogitWarning

from .conftest import explainable, invoke_in, sanity_frame

SURROGATE = "\ud800"
NO_CHARACTER = "U\\+D800, a surrogate, which is no character"


@pytest.fixture(scope="module")
def lm():
    return explainable("llama", "causal_lm")


def _said(result) -> str:
    return " ".join(result.output.split())


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize(
    ("texts", "named"),
    [
        (f"a {SURROGATE} film", "the text holds .* at character 2"),
        (["a good film", f"a {SURROGATE}"], "text 1 holds .* at character 2"),
        ([("a good film", SURROGATE)], "text 0: the second text of the pair holds"),
    ],
)
def test_p01_a_surrogate_in_a_text_is_refused_in_one_line(bert, texts, named):
    with pytest.raises(InvalidInputError, match=named):
        bert.explain(texts, method="random")
    with pytest.raises(InvalidInputError, match=NO_CHARACTER):
        bert.explain(texts, method="random")


def test_p01_the_masked_lm_refuses_it_too():
    mlm = explainable("bert", "masked_lm")
    with pytest.raises(InvalidInputError, match=NO_CHARACTER):
        mlm.explain(f"a [MASK] {SURROGATE}", method="random")


def test_p01_a_continuation_and_a_contrast_input_are_refused(lm):
    with pytest.raises(InvalidInputError, match=f"the continuation .* {NO_CHARACTER}"):
        lm.explain("the film was", continuation=SURROGATE, method="random")
    with pytest.raises(InvalidInputError, match=f"{NO_CHARACTER}, at character 4"):
        lm.explain("the film was", target=" a", contrast_input=f"the {SURROGATE}", method="random")


def test_p01_the_workflows_refuse_it(bert, lm):
    from normxlogit import workflows

    with pytest.raises(InvalidInputError, match=f"continuations\\[0\\] holds {NO_CHARACTER}"):
        workflows.explain_generations(lm, ["the film was"], ["random"], [SURROGATE])
    with pytest.raises(InvalidInputError, match=f"text 0 holds {NO_CHARACTER}"):
        workflows.explain_texts(bert, [f"a {SURROGATE} film"], ["random"])
    with pytest.raises(InvalidInputError, match="second text of the pair"):
        workflows.explain_and_evaluate(bert, [("a good film", SURROGATE)], ["random"], ["comp_cd"])


def test_p01_a_surrogate_target_keeps_its_message(lm):
    with pytest.raises(InvalidInputError, match="target ' \\\\ud800' holds U\\+D800, a surrogate"):
        lm.explain("the film was", target=f" {SURROGATE}", method="random")


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize("command", ["evaluate", "sanity"])
def test_p02_a_surrogate_escape_in_a_jsonl_row_names_the_file_and_line(
    tmp_path, tiny_classifier, command
):
    rows = (
        '{"text": "a good \\ud800 film", "label": "pos"}\n{"text": "a bad film", "label": "neg"}\n'
    )
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "sur.jsonl").write_text(rows, encoding="utf-8")
    result = invoke_in(
        tmp_path, command, "d/sur.jsonl", "-m", str(tiny_classifier), "--method", "random"
    )
    said = _said(result)
    assert result.exit_code == 2, said
    assert "Traceback" not in said and "TypeError" not in said
    assert (
        "d/sur.jsonl, line 1: column 'text' holds U+D800 at character 7, a lone surrogate" in said
    )


def test_p02_the_data_reader_refuses_it_before_any_model(tmp_path):
    from normxlogit.data import read_examples

    path = tmp_path / "pair.jsonl"
    path.write_text('{"premise": "a good film", "hypothesis": "\\udc80 x"}\n', encoding="utf-8")
    with pytest.raises(InvalidFileError, match="line 1: column 'hypothesis' holds U\\+DC80"):
        read_examples(path)


# ------------------------------------------------------------------ P03
def test_p03_the_jq_advice_names_the_file_as_given(tmp_path, tiny_classifier):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "one.jsonl").write_text('{"text": "a good film"}\n')
    (tmp_path / "d" / "arr.json").write_text('[{"text": "a good film"}]\n')
    lines = _said(invoke_in(tmp_path, "explain", "-m", str(tiny_classifier), "-i", "d/one.jsonl"))
    assert "jq -r '.text' d/one.jsonl > d/one.txt" in lines
    array = _said(invoke_in(tmp_path, "explain", "-m", str(tiny_classifier), "-i", "d/arr.json"))
    assert "jq -r '.[].text' d/arr.json > d/arr.txt" in array
    data = _said(invoke_in(tmp_path, "evaluate", "d/arr.json", "-m", str(tiny_classifier)))
    assert "jq -c '.[]' d/arr.json > d/arr.jsonl" in data


def test_p03_a_path_with_a_space_is_quoted(tmp_path):
    from normxlogit.data.files import check_data_suffix

    with pytest.raises(InvalidFileError, match="jq -r '.text' '.*my rows.jsonl' > '.*my rows.txt'"):
        check_data_suffix(tmp_path / "my rows.jsonl", "--input", lines=True)


# ------------------------------------------------------------------ P04
@pytest.fixture
def saved_sanity(tmp_path):
    from normxlogit.sanity import SanityResult

    path = tmp_path / "r.json"
    SanityResult(sanity_frame()).save(path)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_p04_a_sanity_json_under_a_table_name_is_told_to_be_renamed(saved_sanity, suffix):
    from normxlogit.sanity import SanityResult

    misnamed = saved_sanity.with_name("r_saved" + suffix)
    shutil.copy(saved_sanity, misnamed)
    with pytest.raises(
        InvalidFileError,
        match="sanity result \\(JSON\\) under another name: rename it to r_saved.json to load it",
    ):
        SanityResult.load(misnamed)
    shutil.copy(misnamed, misnamed.with_suffix(".json"))  # the advice, followed
    assert len(SanityResult.load(misnamed.with_suffix(".json")).frame) == len(sanity_frame())


def test_p04_evaluation_result_load_says_rename_and_which_loader(saved_sanity):
    from normxlogit import EvaluationResult

    misnamed = saved_sanity.with_name("r_saved.csv")
    shutil.copy(saved_sanity, misnamed)
    with pytest.raises(
        InvalidFileError,
        match="rename it to r_saved.json and use normxlogit.sanity.SanityResult.load",
    ):
        EvaluationResult.load(misnamed)


def test_p04_another_kind_under_a_table_name_names_its_loader(tmp_path):
    from normxlogit.sanity import SanityResult

    misnamed = tmp_path / "ev.csv"
    misnamed.write_text(json.dumps({"metrics": [], "protocol": {}, "rows": []}))
    with pytest.raises(
        InvalidFileError,
        match="an evaluation result \\(JSON\\).*use normxlogit.EvaluationResult.load",
    ):
        SanityResult.load(misnamed)


# ------------------------------------------------------------------ P05
def test_p05_the_other_workflows_explanations_name_the_right_function(bert, lm):
    import normxlogit as nx
    from normxlogit import workflows

    generations = workflows.explain_generations(lm, ["the film was"], ["random"], max_new_tokens=2)
    for evaluate in (workflows.evaluate_texts, nx.evaluate):
        with pytest.raises(
            InvalidInputError, match="score them with normxlogit.evaluate_generations"
        ):
            evaluate(lm, generations, ["comp_cd"])
    texts = workflows.explain_texts(bert, ["a good film"], ["random"])
    with pytest.raises(
        InvalidInputError, match="Explanations of texts; score them with normxlogit.evaluate"
    ):
        nx.evaluate_generations(bert, texts)


# ------------------------------------------------------------------ P06
TEXTS = ["a good film", "a bad film"]


def _two_settings(bert):
    import normxlogit as nx
    from normxlogit import workflows

    return workflows.explain_texts(
        bert,
        TEXTS,
        {"r1": nx.get_method("random", seed=1), "r2": nx.get_method("random", seed=2)},
    )


def test_p06_a_flat_list_of_two_settings_of_one_method_is_refused(bert):
    import normxlogit as nx
    from normxlogit import workflows

    explained = _two_settings(bert)
    flat = [e for group in explained.explanations.values() for e in group]
    refusal = (
        "explains the same text twice with different settings \\(seed=1 and seed=2\\); pass a dict"
    )
    with pytest.raises(InvalidInputError, match=refusal):
        workflows.evaluate_texts(bert, flat, ["comp_cd"])
    with pytest.raises(InvalidInputError, match=refusal):
        nx.evaluate(bert, flat, ["comp_cd"])
    # the dict that tells them apart is scored as two methods
    result = workflows.evaluate_texts(bert, explained, ["comp_cd"])
    assert sorted(result.frame.method.unique()) == ["r1", "r2"]


def test_p06_a_dict_list_mixing_settings_is_warned_about(bert):
    import normxlogit as nx

    explained = _two_settings(bert)
    mixed = {"r": [explained.explanations["r1"][0], explained.explanations["r2"][1]]}
    with pytest.warns(NormXLogitWarning, match="different settings \\(seed=1 and seed=2\\)"):
        nx.evaluate(bert, mixed, ["comp_cd"])


def test_p06_one_setting_on_a_repeated_text_is_still_scored(bert):
    import normxlogit as nx

    twice = bert.explain(["a good film", "a good film", "a bad film"], method="random")
    assert len(nx.evaluate(bert, twice, ["comp_cd"]).frame) > 0


# ------------------------------------------------------------------ P07
SENTENCES = ["The film was good. The acting was bad.", "It rained. We stayed in."]


@pytest.mark.parametrize(
    ("evidence", "said"),
    [
        ([[0.0], [1]], "evidence_segments\\[0\\] holds 0.0"),
        ([{0: 1}, [1]], "evidence_segments\\[0\\] must be the list"),
        ([[5], [1]], "evidence_segments\\[0\\] holds segment 5"),
    ],
)
def test_p07_evaluate_texts_names_evidence_segments(bert, evidence, said):
    from normxlogit import workflows

    explained = workflows.explain_texts(bert, SENTENCES, ["random"], segments="sentences")
    with pytest.raises(InvalidInputError, match=said):
        workflows.evaluate_texts(bert, explained, evidence_segments=evidence)
