"""Round 45 (a): the Python API and the command line.

- P01: an input name that ends in a space or tab (``"d.tsv "``) is quoted in the refusal
  and said to end in one after its suffix, with the file without it named where it exists
  (it printed ``d.tsv does not exist`` of a file the user can see).
- P02: IG ``baseline="100000"`` (digits past the vocabulary) says the ids run from 0 to
  the last, not to write ``id:100000``, which is refused in turn.
- P03: ``--segments`` with ``--layer all`` shows every layer's segment scores, labelled as
  the token rows are (it showed the last layer's alone, unlabelled); the HTML the same; a
  generation explained per layer says which layer its rows are.
- P04: target ``["all"]`` is ``"all"``; ``"all"`` beside labels is refused as the keyword
  out of place (it was "unknown label 'all'").
- Noted: ``explain_and_evaluate`` and ``evaluate_texts`` refuse a labels list of another
  length than the texts also where no metric reads labels, as ``evaluate`` does.
"""

from __future__ import annotations

import pytest

import normxlogit as nx
from normxlogit.common.errors import InvalidFileError, InvalidInputError

from .conftest import invoke_in

TEXT = "It was fine. The end was bad!"
ROWS = "text\tlabel\na good movie\tpos\na bad one\tneg\n"


def _said(result) -> str:
    return " ".join(result.output.split())


# ------------------------------------------------------------------ P01
def test_p01_shared_check_quotes_a_name_ending_in_a_space(tmp_path):
    from normxlogit.common.input_paths import check_input_file

    (tmp_path / "d.tsv").write_text(ROWS)
    with pytest.raises(InvalidInputError) as caught:
        check_input_file(tmp_path / "d.tsv ", "data file", "pass a data file")
    said = str(caught.value)
    assert f"data file {str(tmp_path / 'd.tsv ')!r} does not exist" in said
    assert "ends in a space or tab after its suffix" in said
    assert f"{tmp_path / 'd.tsv'} exists" in said


def test_p01_leading_space_and_plain_missing_names(tmp_path):
    from normxlogit.common.input_paths import check_input_file

    with pytest.raises(InvalidInputError, match="starts with a space or tab"):
        check_input_file(tmp_path / " d.tsv", "data file", "pass a data file")
    with pytest.raises(InvalidInputError) as caught:  # no blank: as before, unquoted
        check_input_file(tmp_path / "gone.tsv", "data file", "pass a data file")
    assert str(caught.value).startswith(f"data file {tmp_path / 'gone.tsv'} does not exist;")


@pytest.mark.parametrize(
    "args",
    [
        ("evaluate", "d.tsv ", "--method", "random"),
        ("explain", "-i", "d.tsv "),
        ("sanity", "d.tsv "),
    ],
    ids=["evaluate", "explain-input", "sanity"],
)
def test_p01_cli_readers_say_the_name_ends_in_a_space(tmp_path, tiny_classifier, args):
    (tmp_path / "d.tsv").write_text(ROWS)
    result = invoke_in(tmp_path, *args, "-m", str(tiny_classifier))
    said = _said(result)
    assert result.exit_code != 0, said
    assert "'d.tsv ' does not exist" in said
    assert "ends in a space or tab after its suffix; d.tsv exists" in said


def test_p01_saved_files_loaded_by_a_name_ending_in_a_space(tmp_path, bert):
    explanation = nx.explain(bert, "a good movie")
    explanation.save(tmp_path / "e.json")
    with pytest.raises(InvalidFileError, match="ends in a space or tab after its suffix"):
        nx.Explanation.load(tmp_path / "e.json ")
    with pytest.raises(InvalidFileError, match=r"'[^']*r\.json\\t' does not exist"):
        nx.EvaluationResult.load(str(tmp_path / "r.json") + "\t")


# ------------------------------------------------------------------ P02
def test_p02_digits_past_the_vocabulary_give_the_id_range(bert):
    size = bert.model.get_input_embeddings().weight.shape[0]
    with pytest.raises(InvalidInputError) as caught:
        bert.explain("a good movie", "integrated_gradients", baseline="100000", steps=2)
    said = str(caught.value)
    assert f"ids run from 0 to {size - 1}" in said
    assert "id:100000" not in said


def test_p02_digits_within_the_vocabulary_still_advise_the_id():
    from normxlogit.methods.baselines import digits_refusal

    assert "write baseline=id:5 (or the number 5" in digits_refusal("5", 100)


# ------------------------------------------------------------------ P03
def _rendered(explanation) -> str:
    from rich.console import Console

    from normxlogit.render.terminal import render_rich

    console = Console(width=200, record=True, color_system=None)
    for part in render_rich(explanation):
        console.print(part)
    return console.export_text()


def test_p03_terminal_segments_table_shows_every_layer(bert):
    explanation = nx.explain(bert, TEXT, layer="all", segments="sentences")
    text = _rendered(explanation)
    table = text[text.index("segments (sum)") :]
    label = explanation.column_titles[0]
    for layer in explanation.layers:
        assert f"L{layer} {label}" in table
    first_row = next(line for line in table.splitlines() if "It was fine." in line)
    shown = [float(cell) for cell in first_row.split()[: len(explanation.layers)]]
    expected = [round(float(scores[0]), 3) for scores in explanation.segments.scores]
    assert shown == pytest.approx(expected, abs=1e-3)


def test_p03_terminal_segments_without_layers_unchanged(bert):
    explanation = nx.explain(bert, TEXT, segments="sentences")
    table = _rendered(explanation).split("segments (sum)")[1]
    assert " L0 " not in table and explanation.column_titles[0] in table


def test_p03_html_segments_table_shows_every_layer(bert):
    explanation = nx.explain(bert, TEXT, layer="all", segments="sentences")
    page = explanation.to_html()
    caption = page[page.index('<table class="segments">') :]
    for layer in explanation.layers:
        assert f"<th>layer {layer} · {explanation.column_titles[0]}</th>" in caption


def test_p03_cli_segments_under_layer_all(tmp_path, tiny_classifier):
    result = invoke_in(
        tmp_path, "explain", TEXT, "-m", str(tiny_classifier), "--segments", "sentences",
        "--layer", "all", "--label", "pos",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    table = result.output[result.output.index("segments (sum)") :]
    assert "L0 pos" in table and "L1 pos" in table


def test_p03_generation_per_layer_names_the_layer_shown(gpt2):
    from rich.console import Console

    from normxlogit.render.generation import render_generation_rich

    generation = nx.explain(gpt2, "It was fine.", generate=True, max_new_tokens=1, layer="all")
    console = Console(width=200, record=True, color_system=None)
    for part in render_generation_rich(generation):
        console.print(part)
    assert f"(layer {generation.layers[-1]}, the last explained)" in console.export_text()


# ------------------------------------------------------------------ P04
def test_p04_all_alone_in_a_list_is_every_label(bert):
    listed = nx.explain(bert, "a good movie", target=["all"])
    assert listed.targets == list(bert.task.labels)


def test_p04_all_beside_labels_is_the_keyword_out_of_place(bert):
    with pytest.raises(InvalidInputError) as caught:
        nx.explain(bert, "a good movie", target=["all", bert.task.labels[0]])
    said = str(caught.value)
    assert "'all' (every label) stands alone" in said
    assert "unknown label" not in said


def test_p04_cli_label_all_beside_another(tmp_path, tiny_classifier):
    result = invoke_in(
        tmp_path, "explain", "a good movie", "-m", str(tiny_classifier), "--label", "all",
        "--label", "neg",
    )  # fmt: skip
    said = _said(result)
    assert result.exit_code != 0, said
    assert "'all' (every label) stands alone" in said


def test_p04_a_language_models_token_all_stays_a_token(gpt2):
    assert nx.explain(gpt2, "a good movie", target=["all", "a"]).targets == ["all", "a"]


# ------------------------------------------------------------------ Noted
def test_noted_explain_and_evaluate_refuses_a_labels_count_no_metric_reads(bert):
    from normxlogit.workflows import explain_and_evaluate

    with pytest.raises(InvalidInputError, match="1 labels for 2 texts"):
        explain_and_evaluate(bert, ["a good movie", "a bad one"], ["random"], labels=["x"])


def test_noted_evaluate_texts_refuses_a_labels_count_no_metric_reads(bert):
    from normxlogit.workflows import evaluate_texts, explain_texts

    explained = explain_texts(bert, ["a good movie", "a bad one"], ["random"])
    with pytest.raises(InvalidInputError, match="1 labels for 2 texts"):
        evaluate_texts(bert, explained, ["deletion"], labels=["x"])
