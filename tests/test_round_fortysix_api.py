"""Round 46 (a): the Python API and the command line.

- P01: an IG/DeepLift ``baseline=`` of digits ``str.isdigit`` takes but ``int()`` does not
  (``"²²"``, ``"①"``) was a ValueError traceback; only ASCII digits are an id (``id:٣``
  is refused, no longer read as id 3).
- P02: ``metrics=`` given one number, a bool or bytes (not a list) was a TypeError; it is
  refused as a metric name is.
- P03: ``labels=`` given as a pandas DataFrame was read by its column names; refused.
- P04: ``explain_texts(contrast_inputs=Series)`` read the Series by its index; by position
  now, and Series whose indexes differ are refused, as ``explain_and_evaluate`` does.
- P05: label names equal but for case (``neg``/``NEG``) could not both be named; refused at
  load (label words and a classifier's id2label), as is a label named ``all``; ``"ALL"``
  points to ``all``.
- P06: the terminal's segments table under ``--layer all`` lost its segment column and cut
  numbers at 80 columns; it is split over tables that fit.
- P07: ``--save "s.json "`` / ``--plot "p.png "`` quote the name and say the blank is after
  the suffix; a zero-width character after a Python save's suffix is named.
- P08: a blank-edged name is hinted by ``--segments FILE``, model folders, ``read_text``;
  an all-blank name is quoted.
- P09: ``read_tsv`` / ``read_jsonl`` take a str; the loaders refuse None, numbers and bytes
  in one line.
- P10: ``save_explanations`` of an Explained whose methods were all skipped says so; of an
  Evaluated, points to ``.explained``.
- Noted: the explain_steps refusal says a generation's steps once; the summary marks no
  best among values equal at the digits shown.
"""

from __future__ import annotations

import json

import pytest

import normxlogit as nx
from normxlogit import workflows as W
from normxlogit.common.errors import InvalidFileError, InvalidInputError, NormXLogitError

from .conftest import build_model, fresh_tokenizer, invoke_in, prompted_llama

TEXTS = ["a good movie", "a bad one", "an ok film"]
ROWS = "text\tlabel\na good movie\tpos\na bad one\tneg\n"


def _said(result) -> str:
    return " ".join(result.output.split())


@pytest.fixture(scope="module")
def bert():
    from .conftest import explainable

    return explainable("bert", "classification")


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize("baseline", ["²²", "①", "٣", "id:٣", "id:０５"])
def test_p01_non_ascii_digits_are_no_token_id(bert, baseline):
    with pytest.raises(InvalidInputError) as caught:
        bert.explain("a good movie", "integrated_gradients", baseline=baseline, steps=2)
    said = str(caught.value)
    assert "\n" not in said and repr(baseline) in said
    assert f"baseline=id:{baseline}" not in said  # no advice to write a non-ASCII id


def test_p01_ascii_digits_and_ids_only():
    from normxlogit.common.options import ascii_digits, token_text

    assert ascii_digits("12") and not ascii_digits("²") and not ascii_digits("٣")
    assert token_text("id:7") == 7 and token_text("id:٣") == "id:٣"


def test_p01_cli_baseline_of_circled_digit_is_one_line(tmp_path, tiny_classifier):
    result = invoke_in(
        tmp_path, "explain", "good film", "-m", str(tiny_classifier), "--method",
        "integrated_gradients", "--option", "steps=2", "--option", "baseline=①",
    )  # fmt: skip
    assert result.exit_code != 0
    assert not isinstance(result.exception, ValueError) or isinstance(
        result.exception, NormXLogitError
    )
    assert "baseline='①'" in _said(result) and "Traceback" not in result.output


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    ("metrics", "given"),
    [(1, "an int 1"), (2.5, "a float 2.5"), (True, "True"), (b"comp_cd", "b'comp_cd'")],
)
def test_p02_metrics_not_a_list_is_refused_as_a_name(bert, metrics, given):
    with pytest.raises(InvalidInputError, match="a metric is named by a string") as caught:
        W.explain_and_evaluate(bert, TEXTS[:2], ["random"], metrics)
    assert given in str(caught.value)


def test_p02_evaluate_and_evaluate_texts_refuse_a_number(bert):
    explained = W.explain_texts(bert, TEXTS[:2], ["random"])
    with pytest.raises(InvalidInputError, match="got an int 1"):
        nx.evaluate(bert, explained.explanations["random"], 1)
    with pytest.raises(InvalidInputError, match="got an int 1"):
        W.evaluate_texts(bert, explained, 1)


# ------------------------------------------------------------------ P03
def test_p03_dataframe_labels_are_refused(bert):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"LABEL_1": ["LABEL_0"]})
    with pytest.raises(InvalidInputError, match="labels is a pandas DataFrame") as caught:
        W.explain_and_evaluate(
            bert, TEXTS[:1], ["random"], ["comp_acc"], labels=frame, explain_label=True
        )
    assert 'list(df["label"])' in str(caught.value)
    explained = W.explain_texts(bert, TEXTS, ["random"])
    with pytest.raises(InvalidInputError, match="read by its column names"):
        nx.evaluate(
            bert, explained.explanations["random"], ["comp_acc"],
            labels=pd.DataFrame(["LABEL_0", "LABEL_1", "LABEL_2"]),
        )  # fmt: skip
    with pytest.raises(InvalidInputError, match="labels is a pandas DataFrame"):
        W.evaluate_texts(bert, explained, ["comp_acc"], labels=pd.DataFrame(["pos"] * 3))
    # the advised fix works
    W.explain_and_evaluate(
        bert, TEXTS[:1], ["random"], ["comp_acc"], labels=list(frame["LABEL_1"]), explain_label=True
    )


# ------------------------------------------------------------------ P04
def test_p04_contrast_inputs_series_read_by_position(bert):
    pd = pytest.importorskip("pandas")
    others = ["good movie", "bad movie", "an ok movie"]
    result = W.explain_texts(
        bert, TEXTS, ["gradient_x_input"], contrast_inputs=pd.Series(others, index=[2, 1, 0])
    )
    paired = [e.settings["contrast_input"] for e in result.explanations["gradient_x_input"]]
    assert paired == others


def test_p04_series_of_other_indexes_are_refused(bert):
    pd = pytest.importorskip("pandas")
    texts = pd.Series(TEXTS, index=[5, 6, 7])
    with pytest.raises(InvalidInputError, match="paired by position, not by index"):
        W.explain_texts(
            bert, texts, ["gradient_x_input"], contrast_inputs=pd.Series(TEXTS, index=[7, 6, 5])
        )
    with pytest.raises(InvalidInputError, match="texts and targets are pandas Series"):
        W.explain_texts(bert, texts, ["random"], targets=pd.Series(["pos"] * 3, index=[7, 6, 5]))
    with pytest.raises(InvalidInputError, match="targets is a pandas DataFrame"):
        W.explain_texts(bert, TEXTS, ["random"], targets=pd.DataFrame({"a": ["pos"] * 3}))


# ------------------------------------------------------------------ P05
@pytest.mark.parametrize(
    ("label_words", "said"),
    [
        ({"neg": " bad", "NEG": " good"}, "'neg' (label 0) and 'NEG' (label 1)"),
        ({"all": " bad", "pos": " good"}, "a label 'all' (label 0), which is the keyword"),
        ({"neg": " bad", "ALL": " good"}, "a label 'ALL' (label 1), which is the keyword"),
    ],
)
def test_p05_label_words_names_that_collide_are_refused(label_words, said):
    with pytest.raises(InvalidInputError, match="label_words names") as caught:
        prompted_llama(label_words)
    assert said in str(caught.value)


def test_p05_classifier_id2label_equal_but_for_case_is_refused():
    model = build_model("bert", "classification")
    model.config.id2label = {0: "neg", 1: "NEG", 2: "pos"}
    model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    with pytest.raises(NormXLogitError, match="differ only in case") as caught:
        nx.load((model, fresh_tokenizer()))
    assert "id2label (config.json)" in str(caught.value)


def test_p05_upper_case_all_points_to_all(bert):
    for target in ("ALL", ["ALL"]):
        with pytest.raises(InvalidInputError, match="did you mean 'all'"):
            bert.explain("a good movie", target=target)


# ------------------------------------------------------------------ P06
def test_p06_segments_table_fits_at_80_columns(bert):
    from rich.console import Console

    from normxlogit.render.terminal import render_rich

    explanation = nx.explain(
        bert, "It was fine. The end was bad!", layer="all", target="all", segments="sentences"
    )
    console = Console(width=80, record=True, color_system=None)
    for part in render_rich(explanation):
        console.print(part)
    text = console.export_text()
    table = text[text.index("segments (sum)") :]
    assert "…" not in table
    assert table.count("It was fine.") == len(explanation.layers)  # every table names it
    for layer in explanation.layers:
        assert f"segments (sum), layer {layer}" in table


def test_p06_segments_table_one_table_where_it_fits(bert):
    from rich.console import Console

    from normxlogit.render.terminal import render_rich

    explanation = nx.explain(bert, "It was fine. The end was bad!", segments="sentences")
    console = Console(width=80, record=True, color_system=None)
    for part in render_rich(explanation):
        console.print(part)
    text = console.export_text()
    assert "segments (sum)\n" in text or "segments (sum) " in text
    assert "layer" not in text[text.index("segments (sum)") :]


# ------------------------------------------------------------------ P07
@pytest.mark.parametrize(
    ("command", "flag", "name"), [("evaluate", "--save", "s.json "), ("sanity", "--plot", "p.png ")]
)
def test_p07_cli_save_and_plot_with_a_blank_after_the_suffix(
    tmp_path, tiny_classifier, command, flag, name
):
    (tmp_path / "d.tsv").write_text(ROWS)
    result = invoke_in(
        tmp_path, command, "d.tsv", "-m", str(tiny_classifier), "--method", "random", flag, name
    )
    said = _said(result)
    assert result.exit_code != 0
    assert f"{flag} {name!r}" in said and "ends in a space or tab after its suffix" in said


def test_p07_zero_width_character_after_the_suffix_is_named(tmp_path, bert):
    explanation = nx.explain(bert, "a good movie")
    with pytest.raises(NormXLogitError, match=r"U\+200B \(ZERO WIDTH SPACE\)"):
        explanation.save(tmp_path / "e.json\u200b")
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------ P08
def test_p08_cli_segments_file_and_model_folder_with_a_blank(tmp_path, tiny_classifier):
    (tmp_path / "seg.txt").write_text("good\nfilm\n")
    result = invoke_in(
        tmp_path, "explain", "good film", "--segments", "seg.txt ", "-m", str(tiny_classifier)
    )
    said = _said(result)
    assert result.exit_code != 0
    assert "ends in a space or tab after its suffix; seg.txt exists" in said
    (tmp_path / "tinycls").symlink_to(tiny_classifier)
    result = invoke_in(tmp_path, "explain", "good film", "-m", "tinycls ")
    said = _said(result)
    assert "unknown model 'tinycls ' (its name ends in a space or tab; tinycls exists)" in said


def test_p08_load_folder_read_text_and_blank_loader_names(tmp_path, tiny_classifier):
    from normxlogit.data import read_text

    with pytest.raises(NormXLogitError, match="ends in a space or tab; .*exists"):
        nx.load(str(tiny_classifier) + " ")
    (tmp_path / "t.txt").write_text("hello\n")
    with pytest.raises(InvalidFileError) as caught:
        read_text(tmp_path / "t.txt ")
    said = str(caught.value)
    assert repr(str(tmp_path / "t.txt ")) in said and "t.txt exists" in said
    with pytest.raises(InvalidFileError, match="^' ' does not exist"):
        nx.Explanation.load(" ")


# ------------------------------------------------------------------ P09
def test_p09_readers_take_a_str(tmp_path):
    from normxlogit.data import read_jsonl, read_tsv

    (tmp_path / "d.tsv").write_text(ROWS)
    (tmp_path / "d.jsonl").write_text(json.dumps({"text": "a", "label": "pos"}) + "\n")
    assert len(list(read_tsv(str(tmp_path / "d.tsv")))) == 2
    assert [row for _, row in read_jsonl(str(tmp_path / "d.jsonl"))] == [
        {"text": "a", "label": "pos"}
    ]


@pytest.mark.parametrize(
    ("path", "said"),
    [(None, "got None"), (5, "got an int 5"), (b"e.json", "path is bytes b'e.json'")],
)
def test_p09_loaders_refuse_no_path_in_one_line(path, said):
    from normxlogit.sanity import SanityResult

    loaders = [
        nx.Explanation.load,
        nx.EvaluationResult.load,
        SanityResult.load,
        nx.load_explanations,
    ]
    for load in loaders:
        with pytest.raises(InvalidInputError, match=said.replace("(", r"\(")):
            load(path)


# ------------------------------------------------------------------ P10
def test_p10_every_method_skipped_says_so(tmp_path, bert):
    skipped = W.explain_texts(
        bert, TEXTS, ["attention"], contrasts=["neg"] * 3, skip=(NormXLogitError,)
    )
    assert skipped.skipped and not any(skipped.explanations.values())
    with pytest.raises(InvalidInputError, match="every method was skipped") as caught:
        nx.save_explanations(skipped, tmp_path / "x.json")
    assert "explained.skipped" in str(caught.value)


def test_p10_evaluated_points_to_explained(tmp_path, bert):
    evaluated = W.explain_and_evaluate(bert, TEXTS[:2], ["random"], ["comp_cd"])
    with pytest.raises(InvalidInputError, match="not an Evaluated") as caught:
        nx.save_explanations(evaluated, tmp_path / "x.json")
    assert "evaluated.explained.explanations[name] (names: 'random')" in str(caught.value)
    nx.save_explanations(evaluated.explained.explanations["random"], tmp_path / "x.json")


# ------------------------------------------------------------------ noted
def test_noted_explain_steps_refusal_says_the_steps_once():
    decoder = nx.load((build_model("gpt2", "causal_lm"), fresh_tokenizer()))
    with pytest.raises(InvalidInputError) as caught:
        decoder.explain(
            "The film", continuation=" was good", method="gradient_x_input", explain_steps=[5]
        )
    said = str(caught.value)
    assert said.count("steps (0 ..") == 1, said


def test_noted_summary_marks_no_best_among_values_shown_alike():
    pd = pytest.importorskip("pandas")
    from normxlogit.evaluation import metric_info
    from normxlogit.evaluation.summary import SummaryTable

    values = pd.DataFrame({"comp_cd": [5.3e-6, 7.0e-6]}, index=["a", "b"])
    table = SummaryTable(values, {"comp_cd": metric_info("comp_cd")})
    assert "**" not in table.to_markdown()
    assert "**" in table.to_markdown(digits=7)  # told apart at more digits
    assert table._marks("comp_cd") == (set(), set())
