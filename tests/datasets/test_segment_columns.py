"""A user's data file gives each text its segments and evidence segments (context
attribution, issue 42): a ``segments`` column (a JSON list of the text's parts) and an
``evidence_segments`` column (indices among them), in .jsonl, .tsv and .csv files."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from normxlogit.common.errors import InvalidFileError
from normxlogit.data import read_examples

TEXT = "The cast is great. The plot is thin. I left happy."
PARTS = ["The cast is great.", "The plot is thin.", "I left happy."]


def test_segments_and_evidence_segments_are_read_from_every_format(tmp_path):
    rows = [
        {"text": TEXT, "label": 1, "segments": PARTS, "evidence_segments": [2, 0]},
        {"text": "no segments here", "label": 0},
    ]
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows))
    frame = pd.DataFrame(
        [
            {
                **row,
                "segments": json.dumps(row.get("segments", "")) if "segments" in row else "",
                "evidence_segments": "0 2" if "segments" in row else "",
            }
            for row in rows
        ]
    )
    csv = tmp_path / "d.csv"
    frame.to_csv(csv, index=False)
    tsv = tmp_path / "d.tsv"
    frame.to_csv(tsv, sep="\t", index=False, quoting=3)  # csv.QUOTE_NONE, as GLUE writes
    for path in (jsonl, csv, tsv):
        first, second = read_examples(path)
        assert first.segments == tuple(PARTS) and first.evidence_segments == (0, 2), path
        assert second.segments is None and second.evidence_segments is None


def test_a_pairs_segments_are_found_in_its_second_text(tmp_path):
    path = tmp_path / "pairs.jsonl"
    row = {"question": "is it good?", "passage": TEXT, "label": 1, "segments": PARTS[:2]}
    path.write_text(json.dumps(row) + "\n")
    (example,) = read_examples(path)
    assert example.segments == tuple(PARTS[:2])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"segments": "The cast"}, r"line 1: column 'segments' is the string .*JSON list"),
        ({"segments": []}, r"column 'segments' is an empty list \(\[\]\)"),
        ({"segments": ["The plot is thin.", "The cast is great."]}, r"segment 1 .* not in"),
        ({"segments": ["The cast is great.", 3]}, "segment 1 is the number 3"),
        ({"segments": PARTS, "evidence_segments": [3]}, "evidence segment 3 is out of range"),
        ({"segments": PARTS, "evidence_segments": [1, 0, 1]}, "not a 0/1 mask"),
        ({"evidence_segments": [0]}, "add a segments column"),
    ],
)
def test_a_bad_segment_column_is_refused_with_its_line(tmp_path, extra, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"text": TEXT, "label": 1, **extra}) + "\n")
    with pytest.raises(InvalidFileError, match=message):
        read_examples(path)
