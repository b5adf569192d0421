"""Round twenty-nine of new-user probes, probe a (the command line): refusals that named
Python keywords or objects, not the flags (P01); ``explain --input`` read a .tsv/.csv data
file line by line, header and label cells included (P02); ``--generate --aggregate`` was
pointed to a Python method (P03); ``evaluate --seed 3 --protocol seed=5`` seeded the
methods with 3 and saved seed 5 (P04); a folder without config.json was told to add a
``model_type`` key to it (P05); the blank-line refusal of ``--input`` advised a .jsonl/.tsv
file, which ``--input`` refuses (P07)."""

from __future__ import annotations

import json

import pytest

from .conftest import invoke_in, saved_tiny

TEXT = "the cat sat on the mat"


def _said(result) -> str:
    return " ".join(result.output.split())


def _refused(result) -> str:
    said = _said(result)
    assert result.exit_code == 2, said
    assert "Traceback" not in said
    return said


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return saved_tiny(tmp_path_factory.mktemp("tiny-llama"), "llama", "causal_lm")


# ------------------------------------------------------------------ P01
def test_p01_all_labels_on_a_language_model_names_the_flags(tmp_path, tiny_lm):
    said = _refused(invoke_in(tmp_path, "explain", TEXT, "-m", str(tiny_lm), "--all-labels"))
    assert "--all-labels needs a label set" in said
    assert "repeat --label (or --label-id)" in said
    assert "target='all'" not in said and "as a list" not in said


def test_p01_a_contrast_of_other_steps_names_continuation(tmp_path, tiny_lm):
    args = ["--generate", "--max-new-tokens", "3", "--contrast-id", "5"]
    said = _refused(invoke_in(tmp_path, "explain", TEXT, "-m", str(tiny_lm), *args))
    assert "pass --continuation to fix the explained text" in said
    assert "continuation=" not in said


def test_p01_a_segment_method_with_contrast_input_gets_command_line_advice(
    tmp_path, tiny_classifier
):
    args = ["--contrast-input", "the dog sat", "--method", "leave_one_out"]
    result = invoke_in(
        tmp_path, "explain", TEXT, "-m", str(tiny_classifier), *args, "--segments", "sentences"
    )
    said = _refused(result)
    assert "'leave_one_out' has no --contrast-input" in said
    assert "explain each text in its own run and compare the two instead" in said
    assert "compare two explanations" not in said


def test_p01_too_many_new_tokens_names_max_new_tokens(tmp_path, tiny_lm):
    args = ["--generate", "--max-new-tokens", "100000"]
    said = _refused(invoke_in(tmp_path, "explain", TEXT, "-m", str(tiny_lm), *args))
    assert "the prompt and --max-new-tokens come to" in said
    assert "max_new_tokens" not in said


def test_p01_a_segment_method_without_segments_names_a_segments_file(tmp_path, tiny_lm):
    args = ["--continuation", " nice", "--method", "leave_one_out"]
    said = _refused(invoke_in(tmp_path, "explain", "Good film.", "-m", str(tiny_lm), *args))
    assert "pass --segments 'sentences' (or --segments FILE, one segment of the text" in said
    assert "a list of the text's segments" not in said


def test_p01_an_empty_contrast_names_the_contrast_flags(tmp_path, tiny_classifier):
    said = _refused(
        invoke_in(tmp_path, "explain", TEXT, "-m", str(tiny_classifier), "--contrast", "")
    )
    assert "an empty --contrast ''" in said
    assert "--contrast-id N" in said
    assert "an int" not in said and "a list of these" not in said


def test_p01_evaluate_names_protocol_settings_as_the_protocol_flag(tmp_path, tiny_classifier):
    (tmp_path / "d.tsv").write_text("sentence\tlabel\ngood\t1\n" + f"{TEXT}\t0\n" * 3)
    args = ["-m", str(tiny_classifier), "--method", "random", "--metric", "comp_cd"]
    result = invoke_in(tmp_path, "evaluate", "d.tsv", *args)
    said = _said(result)
    assert result.exit_code == 0, said
    assert "larger --protocol ratios=..., or longer texts" in said
    assert "Protocol(" not in said


def test_p01_flags_named_is_the_one_translation():
    from normxlogit.cli.helpers import flags_named

    message = "Protocol(empty_rationale='score') scores them; segments= and contrast= too"
    assert flags_named(message, "evaluate") == (
        "--protocol empty_rationale=score scores them; --segments and contrast= too"
    )
    assert flags_named("larger Protocol(ratios=...)") == "larger --protocol ratios=..."


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    ("name", "content", "extract"),
    [
        ("p.tsv", "text\tlabel\ngood film\t1\n", "tail -n +2 p.tsv | cut -f1 > p.txt"),
        ("p.csv", "text,label\ngood film,1\n", "with Python's csv module"),
    ],
)
def test_p02_explain_input_refuses_a_data_file_of_columns(
    tmp_path, tiny_classifier, name, content, extract
):
    (tmp_path / name).write_text(content)
    said = _refused(invoke_in(tmp_path, "explain", "-i", name, "-m", str(tiny_classifier)))
    assert f"--input {name}: a .{name.split('.')[1]} file is a data file" in said
    assert extract in said
    assert f"or score the data file with normxlogit evaluate {name}" in said


def test_p02_explain_input_points_a_jsonl_file_to_evaluate(tmp_path, tiny_classifier):
    (tmp_path / "p.jsonl").write_text('{"text": "good film"}\n')
    said = _refused(invoke_in(tmp_path, "explain", "-i", "p.jsonl", "-m", str(tiny_classifier)))
    assert "its lines are JSON, not texts" in said
    assert "or score the data file with normxlogit evaluate p.jsonl" in said


# ------------------------------------------------------------------ P03
def test_p03_generate_with_aggregate_gets_command_line_advice(tmp_path):
    args = ["--generate", "--max-new-tokens", "3", "--aggregate", "mean"]
    said = _refused(invoke_in(tmp_path, "explain", TEXT, "-m", "no/such-model", *args))
    assert "--aggregate merges the subwords of one text and does not apply to --generate" in said
    assert "--format html page colours the text" in said
    assert ".aggregate(how)" not in said and "aggregate=" not in said


# ------------------------------------------------------------------ P04
def _evaluate_saved(folder, model, *flags) -> tuple[int, dict]:
    result = invoke_in(
        folder, "evaluate", "d.tsv", "-m", str(model), "--method", "random", "--metric",
        "comp_cd", "--save", "out.json", "-q", *flags,
    )  # fmt: skip
    assert result.exit_code == 0, _said(result)
    return result.exit_code, json.loads((folder / "out.json").read_text())


def test_p04_conflicting_seeds_are_refused(tmp_path, tiny_classifier):
    (tmp_path / "d.tsv").write_text("sentence\tlabel\n" + f"{TEXT}\t0\n" * 2)
    result = invoke_in(
        tmp_path, "evaluate", "d.tsv", "-m", str(tiny_classifier), "--method", "random",
        "--seed", "3", "--protocol", "seed=5", "--save", "out.json",
    )  # fmt: skip
    said = _refused(result)
    assert "--seed 3 and --protocol seed=5 disagree; give the seed once" in said
    assert not (tmp_path / "out.json").exists()


def test_p04_the_saved_seed_is_the_seed_that_ran(tmp_path, tiny_classifier):
    (tmp_path / "d.tsv").write_text("sentence\tlabel\n" + f"{TEXT}\t0\nthe dog ran off\t1\n")
    _, by_protocol = _evaluate_saved(tmp_path, tiny_classifier, "--protocol", "seed=5")
    _, by_seed = _evaluate_saved(tmp_path, tiny_classifier, "--seed", "5")
    _, agreeing = _evaluate_saved(tmp_path, tiny_classifier, "--seed", "5", "--protocol", "seed=5")
    _, other = _evaluate_saved(tmp_path, tiny_classifier, "--seed", "3")
    assert by_protocol["protocol"]["seed"] == by_seed["protocol"]["seed"] == 5
    assert agreeing["protocol"]["seed"] == 5
    # the methods ran with the saved seed: the same scores, whichever flag gave it
    assert by_protocol["rows"] == by_seed["rows"] == agreeing["rows"]
    assert other["rows"] != by_seed["rows"]


# ------------------------------------------------------------------ P05
def test_p05_a_folder_without_config_json_says_so(tmp_path, tiny_classifier):
    import shutil

    (tmp_path / "empty").mkdir()
    (tmp_path / "toknly").mkdir()
    for file in tiny_classifier.iterdir():
        if file.name.startswith(("tokenizer", "vocab", "special")):
            shutil.copy(file, tmp_path / "toknly")
    shutil.copytree(tiny_classifier, tmp_path / "parent" / "ckpt")
    for folder in ("empty", "toknly"):
        said = _refused(invoke_in(tmp_path, "explain", TEXT, "-m", folder))
        assert f"folder '{folder}' has no config.json, so it holds no model" in said
        assert "model_type" not in said and "built-in" not in said
    said = _refused(invoke_in(tmp_path, "explain", TEXT, "-m", "parent"))
    assert "folder 'parent' has no config.json" in said
    assert "folders below it that hold one: parent/ckpt (pass one)" in said


# ------------------------------------------------------------------ P07
def test_p07_explain_input_blank_line_advises_no_data_file(tmp_path, tiny_classifier):
    (tmp_path / "t.txt").write_text("good film\n\nbad film\n")
    said = _refused(invoke_in(tmp_path, "explain", "-i", "t.txt", "-m", str(tiny_classifier)))
    assert "t.txt, line 2 is blank" in said
    assert "grep -v" in said and ".jsonl" not in said and ".tsv" not in said


def test_p07_evaluate_still_suggests_a_data_file():
    from normxlogit.common.errors import InvalidFileError
    from normxlogit.data import text_lines

    with pytest.raises(InvalidFileError, match=r"or use a \.jsonl/\.tsv file$"):
        text_lines("good\n\nbad\n", "t.txt")
