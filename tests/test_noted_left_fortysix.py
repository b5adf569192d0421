"""Items noted and left by earlier rounds, taken up in round 46's stop.

- One table of compression marks: the data and text readers and the bench's store refusal
  read :func:`normxlogit.common.input_paths.compression_of` (there were two tables, and
  each knew marks the other did not: an lz4 or 7z data file was "not UTF-8", with advice
  to re-encode it).
"""

from __future__ import annotations

import pytest

from normxlogit.common.errors import InvalidFileError

LZ4 = b"\x04\x22\x4d\x18" + b"\0" * 32
SEVEN_ZIP = b"7z\xbc\xaf\x27\x1c" + b"\0" * 32


@pytest.mark.parametrize(
    ("name", "raw", "kind", "command"),
    [
        ("d.csv.lz4", LZ4, "lz4-compressed", "lz4 -dc d.csv.lz4 > d.csv"),
        ("d.csv.7z", SEVEN_ZIP, "a 7z archive", "7z e -so d.csv.7z > d.csv"),
    ],
)
def test_an_lz4_or_7z_data_file_is_named_by_its_marks(
    tmp_path, monkeypatch, name, raw, kind, command
):
    from normxlogit.data import read_examples

    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_bytes(raw)
    with pytest.raises(InvalidFileError) as refused:
        read_examples(name)
    message = str(refused.value)
    assert f"{name} is {kind}: decompress it first (`{command}`)" in message
    assert "iconv" not in message and "UTF-8" not in message


@pytest.mark.parametrize(
    ("raw", "kind", "command"),
    [(LZ4, "lz4-compressed", "lz4 -dc"), (SEVEN_ZIP, "a 7z archive", "7z e -so")],
)
def test_the_store_refusal_reads_the_same_table(tmp_path, raw, kind, command):
    from normxlogit.bench.archive import foreign_compression
    from normxlogit.common.input_paths import compression_of

    assert compression_of(raw) == (kind, command)
    store = tmp_path / "x.sqlite.xz"
    store.write_bytes(raw)
    message = foreign_compression(store)
    assert message is not None and f"is {kind}, which the bench does not read" in message
    assert f"({command} {store} > {tmp_path / 'x.sqlite'})" in message


@pytest.mark.parametrize("raw", [b"\x1f\x8b\x08\0", b"\xfd7zXZ\x00\0\0"])
def test_the_compressions_the_bench_reads_are_not_foreign_to_it(tmp_path, raw):
    from normxlogit.bench.archive import foreign_compression

    store = tmp_path / "x.sqlite.xz"
    store.write_bytes(raw)
    assert foreign_compression(store) is None


# ------------------------------------------------------------------ label_words as a Series
def test_a_series_of_label_words_is_named_by_its_index():
    """A ``pd.Series({"negative": " bad", ...})`` gave its words as the labels' names."""
    pd = pytest.importorskip("pandas")
    from normxlogit.model.tasks import _label_words

    named = pd.Series({"negative": " bad", "positive": " good"})
    assert _label_words(named) == (("negative", "positive"), (" bad", " good"))
    assert _label_words(pd.Series([" bad", " good"])) == (("bad", "good"), (" bad", " good"))
    assert _label_words({"negative": " bad", "positive": " good"}) == _label_words(named)


# ------------------------------------------------------------------ float32 noise
def test_predictions_a_last_bit_apart_correlate_with_nothing():
    """A batch's rows of one input come out a float32 last bit apart (found when a
    regressor's comprehensiveness at k=1 replaced every token of two texts, on another
    CPU): their Pearson correlation with the gold values read as -1.0, a number from
    rounding; it is NaN, as for equal predictions, and the ratio is said."""
    import numpy as np

    from normxlogit.metrics import alike_to_float32, pearson

    noise = np.array([-0.011061716824769974, -0.0110617158934474])
    assert alike_to_float32(noise) and np.isnan(pearson(noise, [0.8, 0.1]))
    apart = np.array([-0.01100021, -0.01100581])  # two texts a token apart
    assert not alike_to_float32(apart) and pearson(apart, [0.8, 0.1]) == pytest.approx(1.0)
