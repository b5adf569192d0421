"""A sanity result saved as JSON keeps its settings, so it reads back whole: the notes
name the real top-k, and a file cut short (a method without its last randomisation
steps) is refused rather than judged at an earlier step. CSV and Parquet hold the rows."""

from __future__ import annotations

import json

import pytest

from normxlogit.common.errors import InvalidFileError
from normxlogit.sanity import SanityResult, parameter_randomization

from ..conftest import explainable, invoke_in

TEXTS = ["the cat sat on the mat", "a dog"]


@pytest.fixture(scope="module")
def result() -> SanityResult:
    model = explainable("bert", "classification")
    return parameter_randomization(model, TEXTS, ["logat", "random"], top_k=2)


def test_json_reads_back_rows_and_settings(tmp_path, result):
    loaded = SanityResult.load(result.save(tmp_path / "s.json"))
    assert loaded.settings == json.loads(json.dumps(result.settings))
    assert loaded.frame.equals(result.frame)
    assert loaded.verdicts().equals(result.verdicts())


def test_csv_reads_back_the_rows_alone_with_names_kept_as_text(tmp_path, result):
    frame = result.frame.assign(method=result.frame["method"].replace({"random": "NA"}))
    loaded = SanityResult.load(SanityResult(frame).save(tmp_path / "s.csv"))
    assert loaded.settings == {} and set(loaded.frame["method"]) == {"logat", "NA"}


def test_a_json_cut_short_is_refused_naming_the_missing_step(tmp_path, result):
    path = result.save(tmp_path / "s.json")
    data = json.loads(path.read_text())
    last = len(result.settings["groups"]) - 1
    data["rows"] = [row for row in data["rows"] if row["step"] != last or row["method"] != "logat"]
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match=f"lacks step\\(s\\) {last} of method 'logat'"):
        SanityResult.load(path)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{", "invalid JSON at line 1"),
        ('{"rows": []}', "it does not say it is one"),
        ('{"kind": "normxlogit sanity result", "settings": [], "rows": []}', "'settings' must"),
        ('{"kind": "normxlogit sanity result", "settings": {}, "rows": [1]}', "'rows' must"),
    ],
)
def test_another_json_is_refused_in_one_line(tmp_path, content, expected):
    path = tmp_path / "s.json"
    path.write_text(content)
    with pytest.raises(InvalidFileError, match=expected):
        SanityResult.load(path)


def test_an_unknown_suffix_is_refused_naming_the_three(tmp_path):
    (tmp_path / "s.txt").write_text("some notes\n")
    with pytest.raises(InvalidFileError, match=r"reads \.csv, \.parquet or \.json"):
        SanityResult.load(tmp_path / "s.txt")
    with pytest.raises(InvalidFileError, match="does not exist"):  # said first: no file
        SanityResult.load(tmp_path / "missing.txt")


def test_the_command_line_writes_json_with_the_settings(tmp_path, tiny_classifier):
    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    args = ["-m", str(tiny_classifier), "--method", "logat", "--top-k", "3", "-o", "s.json"]
    outcome = invoke_in(tmp_path, "sanity", "t.txt", *args)
    assert outcome.exit_code == 0, outcome.output
    assert SanityResult.load(tmp_path / "s.json").settings["top_k"] == 3


@pytest.mark.parametrize("shuffled", [False, None])
def test_data_mode_refuses_an_adapter_trained_on_the_true_labels(
    tmp_path, tiny_classifier, shuffled
):
    folder = tmp_path / "not-shuffled"
    folder.mkdir()
    recipe = {} if shuffled is None else {"shuffle_labels": shuffled}
    (folder / "normxlogit.json").write_text(
        json.dumps({"task": "classification", "recipe": recipe})
    )
    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    args = ["-m", str(tiny_classifier), "--mode", "data", "--shuffled", str(folder)]
    outcome = invoke_in(tmp_path, "sanity", "t.txt", *args)
    said = " ".join(outcome.output.split())
    assert outcome.exit_code == 2, said
    assert "says it was trained on the true labels" in said and "--shuffle-labels" in said
