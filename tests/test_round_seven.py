"""Round seven of new-user probes (issue 41): variants of round six's kinds; each test is
one failure that round found, with tiny models."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import normxlogit
from normxlogit.cli import app
from normxlogit.common.errors import InvalidInputError
from normxlogit.data import read_examples
from normxlogit.evaluation import Protocol

from .conftest import bench_on_rows, explainable

PASSAGE = "The plot is thin. The acting is wonderful!"


def _rows(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_a_files_evidence_segments_are_not_scored_against_the_sentences(tiny_classifier, tmp_path):
    """R02: `evaluate --segments sentences` scored the file's evidence_segments (which
    number its own segments column) against the sentences: 0.000, no message."""
    data = _rows(
        tmp_path / "coarse.jsonl",
        [
            {
                "text": "A. B. C. D.",
                "label": "pos",
                "segments": ["A. B.", "C. D."],
                "evidence_segments": [1],
            }
        ],
    )
    args = ["evaluate", str(data), "-m", str(tiny_classifier), "--metric", "segment_hit_1"]
    result = CliRunner().invoke(app, [*args, "--segments", "sentences"])
    assert result.exit_code == 2 and "pass --segments data" in result.output
    assert CliRunner().invoke(app, [*args, "--segments", "data"]).exit_code == 0


def test_a_pair_rows_segments_lie_in_its_passage(tiny_classifier, tmp_path):
    """R03: a pair row's segments, checked against its passage when read, were refused as
    "in both texts of the pair" by evaluate (the bench placed them in the passage)."""
    row = {
        "question": "The plot is thin.",
        "passage": PASSAGE,
        "label": 1,
        "segments": ["The plot is thin.", "The acting is wonderful!"],
        "evidence_segments": [1],
    }
    data = _rows(tmp_path / "pair.jsonl", [row])
    (example,) = read_examples(data)
    assert example.segment_spec == [(1, 0, 17), (1, 18, 42)]
    model = normxlogit.load(str(tiny_classifier))
    made = model.explain(example.text, method="leave_one_out", segments=example.segment_spec)
    assert made.segments.texts == row["segments"]
    args = ["evaluate", str(data), "-m", str(tiny_classifier), "--segments", "data"]
    result = CliRunner().invoke(app, [*args, "--metric", "segment_hit_1", "--method", "random"])
    assert result.exit_code == 0, result.output


def test_segment_drop_refuses_to_remove_the_mask_before_any_pass(monkeypatch):
    """R04: removing the sentence that holds a masked LM's [MASK] gave "put [MASK] in
    every text" after the passes; it is refused first, naming the segment."""
    model = explainable("bert", "masked_lm")
    made = model.explain(
        ["Good movie. It is [MASK]. The end."], "gradient_x_input", segments="sentences"
    )
    monkeypatch.setattr(type(model), "forward", lambda *a, **k: pytest.fail("a pass ran"))
    with pytest.raises(
        InvalidInputError,
        match=r"segment_drop removes segments, and segment 1 of text 0 holds the \[MASK\]",
    ):
        normxlogit.evaluate(model, {"g": made}, ["segment_drop"], protocol=Protocol(drop_k=(1,)))


def test_the_page_places_a_pairs_segments_and_names_what_it_cannot_place():
    """R05: the page asked for (part, start, end) spans, which it cannot take."""
    from normxlogit.serve.work import ExplainRequest, _segments_of

    def request(segments):
        return ExplainRequest(
            model="m",
            text=("The plot is thin.", PASSAGE),
            methods=("normxlogit",),
            segments=segments,
        )

    assert _segments_of(request(["The plot is thin.", "The acting is wonderful!"])) == [
        [(1, 0, 17), (1, 18, 42)]
    ]
    with pytest.raises(InvalidInputError, match="the page cannot tell which is meant"):
        _segments_of(request(["The acting is wonderful!", "The plot is thin."]))


@pytest.mark.parametrize("name", ["x.csv.gz", "x.xls", "x.zip"])
def test_plain_text_is_not_written_into_a_compressed_or_excel_name(tmp_path, name):
    """R06: `bench export -f csv -o x.csv.gz` wrote plain CSV (pandas then failed)."""
    store = str(tmp_path / "s.sqlite")
    result = CliRunner().invoke(app, ["bench", "export", "--store", store, "-f", "csv", "-o", name])
    assert result.exit_code == 2 and "writes none; end the name in .csv" in result.output


def test_the_bench_reads_a_users_label_indices_as_evaluate_does(tmp_path, tiny_classifier):
    """R11: label indices 0/1 in a user's file were refused by the bench ("pair the model
    with a dataset of its task") while evaluate read them as the model's indices."""
    rows = [{"text": "Good film.", "label": 1}, {"text": "Bad.", "label": 0}]
    body = 'metrics = ["comp_acc"]\nmethods = ["normxlogit"]'
    report, _ = bench_on_rows(tmp_path, tiny_classifier, rows, body)
    assert not report.skipped


def test_evidence_for_a_step_by_step_generation_names_the_way_to_score_an_answer():
    """R12: "a generation has no gold labels or evidence to pass" named no fix."""
    lm = explainable("llama", "causal_lm")
    made = lm.explain(
        "The film opens. Then it soars.", generate=True, max_new_tokens=2, segments="sentences"
    )
    with pytest.raises(InvalidInputError, match="explain it with a segment method and generate="):
        normxlogit.evaluate(lm, [made], ["segment_hit_1"], evidence=[[0]])
