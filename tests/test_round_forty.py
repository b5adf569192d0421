"""Round forty of new-user probes:

- b/P01: on a byte-level vocabulary the views draw some outputs (``↵`` the newline token,
  ``⇥`` the tab, ``<U+0019>`` a control byte); typed back as a target or contrast those
  names were refused with advice that could not be followed ("pass one of them": ``<``,
  ``U``, ...). A view's drawing now reads back as the token it draws, where its text is one
  token. Noted with it: ``<id 999>`` past the model's rows was refused as "7 tokens".
"""

from __future__ import annotations

import pytest

from normxlogit.common.errors import InvalidInputError
from normxlogit.common.tokens import typed_view_text
from normxlogit.render.colors import display_text

from .test_round_thirtynine_wording import byte_level  # noqa: F401 (a fixture)


@pytest.mark.parametrize("text", ["\n", "\t", "\r", "\x19", "\u200b", "  ", "a\nb"])
def test_a_views_drawing_reads_back_as_its_text(text):
    assert typed_view_text(display_text(text)) == text


@pytest.mark.parametrize("name", ["Paris", " Paris", "é", "<0xE9>", "<U+ZZZZ>", "<U+110000>"])
def test_a_name_that_draws_nothing_is_read_as_typed(name):
    assert typed_view_text(name) is None


@pytest.mark.parametrize(("shown", "text"), [("↵", "\n"), ("⇥", "\t"), ("<U+0019>", "\x19")])
def test_an_output_named_as_the_views_draw_it_is_that_token(byte_level, shown, text):  # noqa: F811
    (token,) = byte_level.tokenizer(text, add_special_tokens=False)["input_ids"]
    named = byte_level.tokenizer.convert_ids_to_tokens([token])[0]
    by_view = byte_level.explain("Hi Paris", target=shown, contrast=" Paris")
    by_name = byte_level.explain("Hi Paris", target=named, contrast=" Paris")
    assert by_view.targets == by_name.targets == [named]
    assert (by_view.scores == by_name.scores).all()


def test_an_id_name_past_the_models_rows_is_said_so(byte_level):  # noqa: F811
    rows = max(byte_level.model.config.vocab_size, len(byte_level.tokenizer))
    with pytest.raises(InvalidInputError) as refused:
        byte_level.explain("Hi Paris", target=f"<id {rows + 5}>")
    assert f"names output row {rows + 5}, past the model's {rows} rows" in str(refused.value)


def test_a_setting_named_in_a_config_s_words_is_toml():
    """The unread-setting warning printed ``[protocol] only_positive = True``, which a
    config cannot take back (TOML's is ``true``)."""
    from normxlogit.bench.config import _own_named
    from normxlogit.cli.helpers import config_keys_named

    said = "Protocol(only_positive=True) and Protocol(empty_rationale='score')"
    assert config_keys_named(said) == (
        '[protocol] only_positive = true and [protocol] empty_rationale = "score"'
    )
    own = _own_named("Protocol(sanity_absolute=False)", {"sanity_absolute"})
    assert own == "[[experiments]] protocol = { sanity_absolute = false }"


def test_a_csv_summary_under_another_suffix_is_named(tmp_path):
    """``EvaluationResult.load("summary.txt")`` on evaluate's CSV summary said "invalid
    JSON ... cut short?"."""
    import normxlogit
    from normxlogit.common.errors import InvalidFileError

    path = tmp_path / "summary.txt"
    path.write_text("method,comp_cd\nrandom,0.1\n")
    with pytest.raises(InvalidFileError, match="is an evaluate summary table"):
        normxlogit.EvaluationResult.load(path)
    compact = tmp_path / "one.txt"
    compact.write_text('{"method": 1, "b": 2}\n')
    with pytest.raises(InvalidFileError) as other:
        normxlogit.EvaluationResult.load(compact)
    assert "summary table" not in str(other.value)


def test_versus_best_with_one_method_of_values_says_there_is_nothing_to_compare():
    """``--versus best`` printed a one-row table ("normxlogit | best") where ``--versus
    normxlogit`` says there is nothing to compare."""
    from types import SimpleNamespace

    import pandas as pd

    from normxlogit.bench.report import paired_table

    index = pd.MultiIndex.from_product([["normxlogit"], [0, 1, 2]], names=["method", "instance"])
    summaries = pd.DataFrame({"comp_cd": [0.3, 0.2, 0.4]}, index=index)
    result = SimpleNamespace(
        experiment=SimpleNamespace(
            name="tb2:d.jsonl",
            methods=[SimpleNamespace(display=m) for m in ("normxlogit", "grad_ellm")],
        ),
        skipped={"grad_ellm": "grad_ellm explains decoder-only models."},
        instance_summaries=lambda: summaries,
    )
    table = paired_table(result, "best")
    assert table is not None and "| normxlogit |" not in table
    assert "normxlogit is the only method with values, so there is nothing to compare" in table
    assert "grad_ellm: N/A here, left out: grad_ellm explains decoder-only models." in table


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ("missing.sqlite", "run `normxlogit bench run {config} --store missing.sqlite` first"),
        (
            "missing.sqlite.xz",
            "run `normxlogit bench run {config} --store missing.sqlite` first, then `xz -k "
            "missing.sqlite`, which writes missing.sqlite.xz",
        ),
        ("", "run `normxlogit bench run {config}` first"),
    ],
)
def test_the_page_names_the_run_that_fills_the_store_it_was_given(tmp_path, store, says):
    """``serve --bench c.toml=missing.sqlite`` advised ``bench run c.toml``, which fills
    the config's default store, not the one named."""
    from normxlogit.serve.browse import BenchEntry

    data = tmp_path / "rows.tsv"
    data.write_text("text\tlabel\na fine film\tpositive\n")
    config = tmp_path / "c.toml"
    config.write_text(
        f'methods = ["random"]\nmetrics = ["comp_cd"]\n[[experiments]]\nmodel = "minilm-sst2"\n'
        f'dataset = "{data}"\n'
    )
    given = f"{config}={tmp_path / store}" if store else str(config)
    with pytest.raises(InvalidInputError) as refused:
        BenchEntry.parse(given)
    shown = says.format(config=config)
    for before in ("--store ", "-k ", "writes "):  # the store is named as given: in tmp_path
        shown = shown.replace(before, f"{before}{tmp_path}/")
    assert shown in str(refused.value)


def test_a_compressed_name_holding_no_compression_is_not_called_cut_short(tmp_path):
    """A text file named .sqlite.xz was "may be cut short: fetch it again"; fetching it
    again cannot help."""
    from normxlogit.bench.archive import decompress_store
    from normxlogit.common.errors import InvalidFileError

    garbage = tmp_path / "g.sqlite.xz"
    garbage.write_text("hello world, just text\n")
    with pytest.raises(InvalidFileError) as refused:
        decompress_store(garbage, tmp_path / "g.sqlite")
    assert "holds neither xz nor gzip data" in str(refused.value)
    assert "cut short" not in str(refused.value)
    cut = tmp_path / "c.sqlite.xz"
    import lzma

    cut.write_bytes(lzma.compress(b"SQLite format 3\x00" + b"\x00" * 4096)[:40])
    with pytest.raises(InvalidFileError, match="may be cut short"):
        decompress_store(cut, tmp_path / "c.sqlite")
