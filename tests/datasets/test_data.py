"""Reading users' files of texts and labels (what ``normxlogit evaluate`` takes)."""

from __future__ import annotations

import json

import pytest

from normxlogit.common.errors import InvalidInputError
from normxlogit.data import Example, read_examples


def test_tsv_keeps_quote_characters_and_reads_labels(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("sentence\tlabel\n\"a gripping film\t1\nit 's dull\t0\n")
    assert read_examples(path) == [Example('"a gripping film', 1), Example("it 's dull", 0)]


def test_csv_pairs_and_regression_scores(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text('sentence1,sentence2,score\n"A man, sitting.",A man sits.,4.5\n')
    assert read_examples(path) == [Example(("A man, sitting.", "A man sits."), 4.5)]


def test_jsonl_label_names_stay_names_and_limit_stops_early(tmp_path):
    path = tmp_path / "reviews.jsonl"
    rows = [{"review": "great", "label": "positive"}, {"review": "bad", "label": "negative"}]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n")
    assert read_examples(path) == [Example("great", "positive"), Example("bad", "negative")]
    assert read_examples(path, limit=1) == [Example("great", "positive")]


def test_any_other_file_is_one_text_per_line(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("first text\nsecond text\nthird\n\n")  # blank lines at the end: ignored
    assert [e.text for e in read_examples(path, limit=2)] == ["first text", "second text"]
    assert all(e.label is None for e in read_examples(path))
    assert len(read_examples(path)) == 3


def test_clear_errors(tmp_path):
    with pytest.raises(InvalidInputError, match="missing.tsv does not exist"):
        read_examples(tmp_path / "missing.tsv")
    nameless = tmp_path / "nameless.csv"
    nameless.write_text("words,label\nhello,1\n")
    with pytest.raises(InvalidInputError, match="no text column"):
        read_examples(nameless)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(InvalidInputError, match="holds no rows"):
        read_examples(empty)
    blank = tmp_path / "blank.txt"
    blank.write_text("one\n\ntwo\n")
    with pytest.raises(InvalidInputError, match="line 2 is blank"):
        read_examples(blank)
