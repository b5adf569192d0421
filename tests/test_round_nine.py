"""Round nine of new-user probes (issue 41): each test is one failure that round found,
with tiny models."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from normxlogit.cli import app
from normxlogit.common.errors import InvalidFileError, InvalidInputError, OutputPathError
from normxlogit.common.words import visible
from normxlogit.data import read_examples
from normxlogit.model.segments import resolve_segments

from .conftest import bench_on_rows

INVISIBLE = ["\u200e", "\u00ad", "\u2061", "\u2063", "\u180e", "\x07", "\u0301", "\u200b"]


def _bench(tmp_path, model, rows):
    body = 'metrics = ["comp_cd"]\n[[methods]]\nname = "normxlogit"\ntarget = "label"'
    return bench_on_rows(tmp_path, model, rows, body)


@pytest.mark.parametrize("labels", [[1, -1], [True, False]])
def test_labels_that_are_no_indices_are_not_read_as_indices(tmp_path, tiny_classifier, labels):
    """N02: a label -1 was the model's last label ("positive"), with no message."""
    rows = [{"text": "Good film.", "label": labels[0]}, {"text": "Bad.", "label": labels[1]}]
    with pytest.raises(InvalidInputError, match=r"label name or (an|a whole label) index"):
        _bench(tmp_path, tiny_classifier, rows)


def test_float_gold_labels_name_the_fix_in_the_file(tmp_path, tiny_classifier):
    """N10: float labels with target = "label" were told to use target = "prediction"."""
    rows = [{"text": "Good film.", "label": 1.0}, {"text": "Bad.", "label": 0.5}]
    with pytest.raises(InvalidInputError, match="write them in the file as the model names"):
        _bench(tmp_path, tiny_classifier, rows)


@pytest.mark.parametrize("char", INVISIBLE)
def test_a_segment_of_invisible_characters_is_blank_everywhere(tmp_path, char):
    """N03/N04/N05: invisible characters beyond a fixed list made a segment scored NaN and
    blamed on truncation; a line of them became a sentence; a data file let one through."""
    assert not visible(char) and visible("a" + char)
    text = f"Good.\n{char}\nBad."
    with pytest.raises(InvalidInputError, match="blank"):
        resolve_segments(text, ["Good.", char, "Bad."])
    assert resolve_segments(text, "sentences").texts(text) == ["Good.", "Bad."]
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"text": text, "label": 1, "segments": ["Good.", char]}) + "\n")
    with pytest.raises(InvalidFileError, match="segment 1 is .* some visible text"):
        read_examples(path)


@pytest.mark.parametrize("name", ["x.lz4", "x.txz", "x.tbz2", "x.lzma", "x.br"])
def test_every_archive_suffix_is_refused_for_plain_text_and_stores(tmp_path, name):
    """N06: some compression suffixes still got plain text or plain SQLite."""
    from normxlogit.bench import ResultStore

    store = str(tmp_path / "s.sqlite")
    result = CliRunner().invoke(app, ["bench", "export", "--store", store, "-f", "csv", "-o", name])
    assert result.exit_code == 2 and "end the name in .csv" in result.output
    with pytest.raises(OutputPathError, match="compressed stores"):
        ResultStore(tmp_path / f"s.sqlite{name[1:]}")


def test_a_compressed_store_is_unpacked_into_a_store_name(tmp_path):
    """N07: `--store x.tar.gz` said to unpack into x.tar, which the bench then refused."""
    from normxlogit.cli.bench import _check_writable_store

    with pytest.raises(InvalidInputError, match=r"--into \S*x\.sqlite\.gz\)"):
        _check_writable_store(tmp_path / "x.tar.gz")  # a new one: run plain, then pack
    (tmp_path / "x.tar.gz").write_bytes(b"")  # an empty one holds nothing: run into x.sqlite
    with pytest.raises(InvalidInputError, match=r"empty file.*--store \S*x\.sqlite\)"):
        _check_writable_store(tmp_path / "x.tar.gz")
