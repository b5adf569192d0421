"""Round fourteen of new-user probes, P09 to P15: each test is one unclear answer or
silently wrong result that round found (the page's P16 is in serve/test_round_fourteen_page)."""

from __future__ import annotations

import codecs
import os

import pandas as pd
import pytest
from typer.testing import CliRunner

import normxlogit
from normxlogit.cli import app
from normxlogit.common.errors import InvalidFileError, InvalidInputError, InvalidOptionError
from normxlogit.evaluation import EvaluationResult, Protocol, metric_info
from normxlogit.evaluation.summary import SummaryTable

from .conftest import sharp_model

TEXTS = ["Good fun here.", "Bad end there."]


def _invoke(tmp_path, *args, stdin: bytes | None = None):
    previous = os.getcwd()
    os.chdir(tmp_path)
    try:
        return CliRunner().invoke(app, list(args), input=stdin)
    finally:
        os.chdir(previous)


def _summary() -> SummaryTable:
    values = pd.DataFrame({"comp_cd": [0.5, 0.25]}, index=["a", "b"])
    return SummaryTable(values, {"comp_cd": metric_info("comp_cd")})


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_kernel_width_that_is_no_number_is_refused_as_such(value):
    """P09: kernel_width=nan was "must be greater than 0", which is not why."""
    with pytest.raises(InvalidOptionError, match="must be a finite number"):
        normxlogit.get_method("lime", kernel_width=value)
    with pytest.raises(InvalidOptionError, match="must be at least 0.076"):  # round 33's bound
        normxlogit.get_method("lime", kernel_width=-1.0)


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_train_epochs_that_are_no_number_are_refused_as_such(tmp_path, value):
    """P09: `train --epochs nan` was "must be greater than 0"."""
    result = _invoke(tmp_path, "train", "minilm-sst2", "--epochs", value, "--output", "out")
    assert result.exit_code != 0
    assert "must be a finite number" in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_train_refuses_a_negative_seed_before_any_work(tmp_path):
    """P10: `train --seed -1` passed the checks and crashed in numpy's seeding."""
    result = _invoke(tmp_path, "train", "minilm-sst2", "--seed", "-1", "--output", "out")
    assert result.exit_code == 2, result.output
    assert "--seed -1: must be from 0 to 2147483647" in result.output, result.output
    assert not isinstance(result.exception, ValueError)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_wide_unicode_on_standard_input_gets_a_command_that_works(tmp_path, encoding):
    """P11: the hint was `iconv -f utf-16 -t utf-8 standard input > utf8-standard input`."""
    stdin = "Good fun here.\n".encode(encoding)
    result = _invoke(tmp_path, "explain", "-m", str(tmp_path / "no-model"), stdin=stdin)
    assert result.exit_code != 0
    output = " ".join(result.output.split())
    assert f"standard input is {encoding.upper()} text" in output, output
    assert f"by piping it through `iconv -f {encoding} -t utf-8`" in output, output
    assert "utf8-standard" not in output


def _saved_result(tmp_path) -> str:
    model = sharp_model()
    explained = model.explain(TEXTS, "gradient_x_input")
    path = tmp_path / "r.json"
    protocol = Protocol(ratios=(0.5,))
    normxlogit.evaluate(model, {"g": explained}, ["comp_cd"], protocol=protocol).save(path)
    return path.read_text(encoding="utf-8")


def test_a_saved_result_with_a_byte_order_mark_loads(tmp_path):
    """P12: a result through Windows Notepad was "invalid JSON at line 1, column 1"."""
    text = _saved_result(tmp_path)
    marked = tmp_path / "marked.json"
    marked.write_bytes(codecs.BOM_UTF8 + text.encode("utf-8"))
    loaded = EvaluationResult.load(marked)
    expected = EvaluationResult.load(tmp_path / "r.json")
    pd.testing.assert_frame_equal(loaded.summary().frame, expected.summary().frame)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_saved_result_in_wide_unicode_is_named_with_the_fix(tmp_path, encoding):
    """P12: UTF-16 and UTF-32 results were "not UTF-8 text", with no encoding or hint."""
    wide = tmp_path / "wide.json"
    wide.write_bytes(_saved_result(tmp_path).encode(encoding))
    with pytest.raises(InvalidFileError, match=f"is {encoding.upper()} text .*iconv -f {encoding}"):
        EvaluationResult.load(wide)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_gpu_queue_in_wide_unicode_is_named_with_the_fix(tmp_path, encoding):
    """P13: a UTF-16 queue got Python's "'utf-8' codec can't decode byte 0xff"."""
    from normxlogit.bench.queue import load_queue

    queue = tmp_path / "q.toml"
    queue.write_bytes('[[entries]]\nname = "a"\nconfig = "c.toml"\n'.encode(encoding))
    with pytest.raises(InvalidFileError, match=f"is {encoding.upper()} text .*iconv -f {encoding}"):
        load_queue(queue)


@pytest.mark.parametrize("digits", [-1, 2.5, "3", True, 10**10])
def test_to_markdown_refuses_digits_that_are_no_count_in_one_line(digits):
    """P14: digits=-1 and 2.5 raised format ValueErrors."""
    with pytest.raises(InvalidInputError, match="digits must be a whole number from 0"):
        _summary().to_markdown(digits=digits)


def test_to_markdown_takes_zero_digits():
    """0.5 and 0.25 both show as 0: equal at the digits shown, so neither is bold (round 46)."""
    written = _summary().to_markdown(digits=0)
    assert "| a | 0 |" in written and "| b | 0 |" in written
    assert "**" not in written


@pytest.mark.parametrize("ending", ["\r", "\r\n", "\n", ";"])
def test_to_csv_ends_the_file_with_the_rows_own_line_ending(tmp_path, ending):
    """P15: lineterminator="\\r" wrote CR rows and then a stray LF."""
    table = _summary()
    table.to_csv(tmp_path / "s.csv", lineterminator=ending)
    written = (tmp_path / "s.csv").read_bytes().decode("utf-8")
    assert written == table.to_csv(lineterminator=ending)
    assert written.endswith(ending) and not written.endswith(ending + "\n")
