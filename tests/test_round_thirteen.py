"""Round thirteen of new-user probes (issue 41): each test is one unclear or quietly wrong
answer that round found, with tiny models."""

from __future__ import annotations

import codecs

import pytest

from normxlogit import evaluate
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.data import read_examples
from normxlogit.model.segments import resolve_segments

from .conftest import sharp_model


@pytest.mark.parametrize("option", [{"encoding": "utf-16"}, {"storage_options": {}}])
def test_summary_to_csv_refuses_an_encoding_or_storage_it_would_not_use(tmp_path, option):
    """Q01: encoding="utf-16" wrote UTF-8 without a word; storage_options= raised
    pandas' own error."""
    model = sharp_model()
    result = evaluate(
        model, {"g": model.explain(["Good fun here."], "gradient_x_input")}, ["comp_cd"]
    )
    with pytest.raises(InvalidInputError, match=f"to_csv: {next(iter(option))}= is not passed"):
        result.summary().to_csv(tmp_path / "s.csv", **option)


@pytest.mark.parametrize("encoding", ["utf-32-le", "utf-32-be"])
def test_a_utf32_file_is_named_as_utf32(tmp_path, encoding):
    """Q02: UTF-32 LE was called UTF-16 (its hint gave text full of NULs); BE got the
    latin1 hint."""
    mark = codecs.BOM_UTF32_LE if encoding.endswith("le") else codecs.BOM_UTF32_BE
    data = tmp_path / "d.txt"
    data.write_bytes(mark + "Good fun.\n".encode(encoding))
    with pytest.raises(InvalidFileError, match="is UTF-32 text .*iconv -f utf-32 -t utf-8"):
        read_examples(data)


def test_a_segment_with_its_accents_encoded_otherwise_says_so():
    """Q04: 'cafe' + U+0301 against a text's 'café' was "not in the text ... copied
    exactly", quoting words that look the same."""
    with pytest.raises(InvalidInputError, match="how its accents are encoded"):
        resolve_segments("A café opens. It closes.", ["A cafe\u0301 opens.", "It closes."])
    with pytest.raises(InvalidInputError) as caught:
        resolve_segments("A café opens. It closes.", ["A bar opens."])
    assert "accents" not in str(caught.value)
