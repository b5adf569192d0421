"""``normxlogit explain --segments``: sentences or a file of segments, in every format."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from normxlogit.cli import app

TEXT = "The plot is thin. The acting is wonderful! I would see it again."


def _explain(*args: str):
    return CliRunner().invoke(app, ["explain", TEXT, *args])


def test_sentences_and_a_segment_method_in_json(tiny_classifier, tmp_path):
    output = tmp_path / "out.json"
    result = _explain(
        "-m",
        str(tiny_classifier),
        "--segments",
        "sentences",
        "--method",
        "leave_one_out",
        "-o",
        str(output),
        "-q",
    )
    assert result.exit_code == 0, result.output
    saved = json.loads(output.read_text())
    assert saved["segments"]["texts"][1] == "The acting is wonderful!"
    assert saved["segments"]["how"] == "native" and len(saved["segments"]["scores"]) == 3


def test_a_file_of_segments_and_the_terminal_table(tiny_classifier, tmp_path):
    listed = tmp_path / "segments.txt"
    listed.write_text("The plot is thin.\n\nI would see it again.\n", encoding="utf-8")
    result = _explain(
        "-m", str(tiny_classifier), "--segments", str(listed), "--segment-reduce", "max"
    )
    assert result.exit_code == 0, result.output
    assert "segments (max)" in result.stdout and "I would see it again." in result.stdout


def test_bad_segments_are_refused_in_one_line(tiny_classifier, tmp_path):
    result = _explain("-m", str(tiny_classifier), "--segments", "nope.txt")
    assert result.exit_code == 2 and "neither 'sentences' nor a file" in result.output
    listed = tmp_path / "segments.txt"
    listed.write_text("not in the text\n", encoding="utf-8")
    result = _explain("-m", str(tiny_classifier), "--segments", str(listed))
    assert result.exit_code == 2 and "copied exactly" in result.output
    result = _explain("-m", str(tiny_classifier), "--method", "contextcite")
    assert result.exit_code == 2 and "pass --segments 'sentences'" in result.output
