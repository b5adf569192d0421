"""Round eight of new-user probes (issue 41): each test is one failure that round found,
with tiny models."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from normxlogit.cli import app
from normxlogit.common.errors import InvalidFileError, InvalidInputError, OutputPathError
from normxlogit.data import read_examples
from normxlogit.model.segments import resolve_segments

from .conftest import bench_on_rows, explainable

GAPPED = "Good movie. It is not fine at all. The end."


def test_removing_a_segment_keeps_the_text_of_no_segment_after_it():
    """E02: removing "Good movie." also removed "It is not fine at all." (text between two
    segments that belongs to neither), so every segment method scored another text."""
    segments = resolve_segments(GAPPED, ["Good movie.", "The end."])
    assert segments.without(GAPPED, [False, True]) == "It is not fine at all. The end."
    assert segments.without(GAPPED, [True, False]) == "Good movie. It is not fine at all."
    assert segments.without(GAPPED, [False, False]) == "It is not fine at all."
    assert segments.without(GAPPED, [True, True]) == GAPPED
    # contiguous segments, ContextCite's case: the separators go with the removed ones
    sentences = resolve_segments("A one. B two. C three.", "sentences")
    assert sentences.without("A one. B two. C three.", [True, False, True]) == "A one. C three."
    # and leave-one-out reads exactly those texts
    model = explainable("bert", "classification")
    made = model.explain(GAPPED, method="leave_one_out", segments=["Good movie.", "The end."])
    column = model.labels.index(made.label)

    def log_probability(text):
        batch = model.encoder.encode([text], check=False)
        import torch

        return float(torch.log_softmax(model.forward(batch).logits, -1)[0, column])

    expected = log_probability(GAPPED) - log_probability("It is not fine at all. The end.")
    assert made.segments.scores[0] == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("name", ["x.tgz", "x.7z", "x.tar", "x.ods"])
def test_plain_text_is_not_written_into_an_archive_name(tmp_path, name):
    """E04: `explain -f json -o x.tgz` and `bench export -f csv -o x.tar` wrote plain text."""
    store = str(tmp_path / "s.sqlite")
    result = CliRunner().invoke(app, ["bench", "export", "--store", store, "-f", "csv", "-o", name])
    assert result.exit_code == 2 and "writes none; end the name in .csv" in result.output


@pytest.mark.parametrize("name", ["s.sqlite.zip", "s.sqlite.bz2", "s.sqlite.7z"])
def test_a_store_named_as_another_compression_is_refused(tmp_path, name):
    """E04: `bench run --store x.sqlite.bz2` wrote plain SQLite under that name."""
    from normxlogit.bench import ResultStore

    with pytest.raises(OutputPathError, match=r"\.sqlite\.xz or \.sqlite\.gz only"):
        ResultStore(tmp_path / name)
    assert not (tmp_path / name).exists()


def test_the_bench_explains_a_users_gold_label_index_by_its_name(tmp_path, tiny_classifier):
    """E05: target = "label" on a file of label indices said "use target = prediction"."""
    rows = [{"text": "Good film.", "label": 2}, {"text": "Bad.", "label": 0}]
    body = 'metrics = ["comp_cd"]\n[[methods]]\nname = "normxlogit"\ntarget = "label"'
    report, frame = bench_on_rows(tmp_path, tiny_classifier, rows, body)
    assert not report.skipped
    assert len(frame) > 0 and set(frame["target"]) == {"label"}


def test_an_invisible_segment_is_refused_as_blank():
    """E06: a segment of a zero-width space was taken, scored NaN and blamed on truncation."""
    with pytest.raises(
        InvalidInputError, match=r"segments\[1\] is blank \(whitespace or invisible"
    ):
        resolve_segments("Good. \u200b Bad.", ["Good.", "\u200b", "Bad."])
    with pytest.raises(InvalidInputError, match="only whitespace or invisible characters"):
        resolve_segments("Good. \u200b Bad.", [(0, 5), (6, 7), (8, 12)])


def test_a_pair_rows_segments_are_looked_for_in_its_passage_and_said_so(tmp_path):
    """E07: a pair row's segment taken from its question was "not in the text"."""
    path = tmp_path / "p.jsonl"
    row = {
        "question": "Is the plot thin?",
        "passage": "The plot is thin.",
        "label": 1,
        "segments": ["Is the plot thin?"],
    }
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(InvalidFileError, match="is not in its passage .a pair row's segments"):
        read_examples(path)
