"""Round eleven of new-user probes, files: a summary table's names (E06), read-only
outputs through every Python save (E07), a bench config with a byte-order mark (E11), a
.jsonl file with lone-CR line ends (E12) and ``--segments FILE`` lines (E13). Tiny models."""

from __future__ import annotations

import stat

import pytest

import normxlogit
from normxlogit.common.errors import InvalidFileError, OutputPathError
from normxlogit.common.outputs import replacing, save_figure, write_atomically
from normxlogit.evaluation import Protocol
from normxlogit.sanity import parameter_randomization

from .conftest import invoke_in, sharp_model

TEXTS = ["Good fun today.", "Bad day."]


def _explained():
    return sharp_model().explain(TEXTS, "gradient_x_input")


def _result():
    model = sharp_model()
    return normxlogit.evaluate(
        model, {"g": _explained()}, ["comp_cd"], protocol=Protocol(ratios=(0.5,))
    )


# ------------------------------------------------------------------------------ E06


def test_a_summary_table_is_written_only_under_its_own_name(tmp_path):
    """E06: to_csv('s.json') wrote CSV into s.json, to_json('s.csv') JSON into s.csv, and
    .csv.gz / .json.zstd names got plain text; each is refused before writing, naming the
    fix, as the other Python saves refuse a mismatched or packed name."""
    summary = _result().summary()
    refused = [
        (summary.to_csv, "s.json", r"saved as CSV; end the name in \.csv \(to_json\(path\)"),
        (summary.to_csv, "s.txt", r"a summary table is saved as CSV; end the name in \.csv"),
        (summary.to_csv, "s.csv.gz", r"end the name in \.csv \(name it \S*s\.csv\)"),
        (summary.to_csv, "s.tsv", r"to_csv\(path, sep='\\t'\) writes tab-separated values"),
        (summary.to_json, "s.csv", r"saved as JSON; end the name in \.json \(to_csv\(path\)"),
        (summary.to_json, "s.md", r"end the name in \.json \(to_markdown\(\) gives"),
        (summary.to_json, "s.json.zstd", r"end the name in \.json \(name it \S*s\.json\)"),
        (summary.to_json, "s.csv.gz", r"end the name in \.json \(name it \S*s\.json\)"),
    ]
    for write, name, said in refused:
        with pytest.raises(OutputPathError, match=said):
            write(tmp_path / name)
    with pytest.raises(OutputPathError, match="is a folder; give a file name inside it"):
        summary.to_json(tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing written
    assert summary.to_csv(tmp_path / "s.csv") is None
    assert (tmp_path / "s.csv").read_text().startswith("method,comp_cd")
    summary.to_csv(tmp_path / "s.tsv", sep="\t")
    assert (tmp_path / "s.tsv").read_text().startswith("method\tcomp_cd")
    summary.to_json(tmp_path / "s.JSON")
    assert (tmp_path / "s.JSON").read_text().startswith("{")
    assert summary.to_csv().startswith("method,") and summary.to_json().startswith("{")


# ------------------------------------------------------------------------------ E07


def _locked(path, text="KEEP"):
    path.write_text(text)
    path.chmod(0o444)
    return path


def _unchanged(path, text="KEEP"):
    assert path.read_text() == text and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_every_python_save_refuses_a_read_only_file(tmp_path):
    """E07: save_explanations, EvaluationResult.save, SanityResult.save and
    Summary.to_csv/to_json replaced a 0444 file (and left the new one read-only), while
    the command line refused it; every writer now refuses it, naming the file and the fix."""
    explained = _explained()
    result = _result()
    sanity = parameter_randomization(sharp_model(), TEXTS, ["gradient_x_input"], mode="independent")
    said = r"exists and is read-only; choose another name or make it writable \(chmod u\+w "
    saves = [
        (lambda p: normxlogit.save_explanations(explained, p), "e.json"),
        (lambda p: explained[0].save(p), "one.json"),
        (result.save, "r.json"),
        (sanity.save, "s.csv"),
        (result.summary().to_csv, "t.csv"),
        (result.summary().to_json, "t.json"),
        (lambda p: write_atomically(p, "new"), "w.txt"),
    ]
    for save, name in saves:
        locked = _locked(tmp_path / name)
        with pytest.raises(OutputPathError, match=said):
            save(locked)
        _unchanged(locked)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # no temporary file left behind


def test_a_link_to_a_read_only_file_is_refused_too(tmp_path):
    """E07: a symlink to a 0444 file had its target replaced; the message names both."""
    target = _locked(tmp_path / "real.json")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(OutputPathError, match=r"link\.json \(a link to \S*real\.json\) exists"):
        normxlogit.save_explanations(_explained(), link)
    with (
        pytest.raises(OutputPathError, match="exists and is read-only"),
        replacing(link) as temporary,
    ):
        temporary.write_text("new")
    _unchanged(target)
    assert link.is_symlink()


def test_the_figure_and_parquet_writers_refuse_a_read_only_file(tmp_path):
    """E07: save_figure and the Parquet branch of SanityResult.save go through replacing()
    as well."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure()
    try:
        locked = _locked(tmp_path / "f.png")
        with pytest.raises(OutputPathError, match="exists and is read-only"):
            save_figure(figure, locked)
        _unchanged(locked)
    finally:
        plt.close(figure)
    pytest.importorskip("pyarrow")
    sanity = parameter_randomization(sharp_model(), TEXTS[:1], ["gradient_x_input"])
    locked = _locked(tmp_path / "s.parquet")
    with pytest.raises(OutputPathError, match="exists and is read-only"):
        sanity.save(locked)
    _unchanged(locked)


def test_python_and_the_command_line_refuse_a_read_only_file_alike(tmp_path):
    """E07: the command line and the Python save give the same refusal for one target."""
    locked = _locked(tmp_path / "ro.json")
    result = invoke_in(tmp_path, "explain", "Great fun.", "-m", "no-model", "-o", "ro.json")
    assert result.exit_code == 2 and "exists and is read-only" in result.output
    with pytest.raises(OutputPathError, match="exists and is read-only"):
        normxlogit.save_explanations(_explained(), locked)
    _unchanged(locked)


def test_writable_and_missing_outputs_are_still_written(tmp_path):
    """E07: the check refuses only read-only files; a writable file keeps its mode."""
    kept = tmp_path / "kept.json"
    kept.write_text("{}")
    kept.chmod(0o640)
    normxlogit.save_explanations(_explained(), kept)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text().startswith("[")
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "made.json")
    write_atomically(dangling, "{}")
    assert (tmp_path / "made.json").read_text() == "{}" and dangling.is_symlink()


# ------------------------------------------------------------------------------ E11


def test_a_bench_config_with_a_byte_order_mark_is_read(tmp_path):
    """E11: a config saved by a Windows editor (UTF-8 with a BOM) was 'not valid TOML:
    Invalid statement (at line 1, column 1)'; the mark is skipped, as the data readers do."""
    from normxlogit.bench import load_config

    (tmp_path / "d.jsonl").write_text('{"text": "Great fun.", "label": 1}\n')
    body = (
        'metrics = ["comp_cd"]\n[[methods]]\nname = "gradient_x_input"\n[[experiments]]\n'
        'model = "minilm-sst2"\ndataset = "d.jsonl"\nlimit = 2\n'
    )
    path = tmp_path / "c.toml"
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    config = load_config(path)
    assert config.experiments[0].model == "minilm-sst2"
    assert config.experiments[0].metrics == ("comp_cd",)
    path.write_bytes(b"\xef\xbb\xbf" + b"metrics = [\n")  # a real TOML error still says so
    with pytest.raises(InvalidFileError, match="is not valid TOML"):
        load_config(path)


# ------------------------------------------------------------------------------ E12


def test_a_jsonl_file_with_lone_cr_line_ends_reads_one_row_per_line(tmp_path):
    """E12: rows separated by lone CRs were 'line 1: not valid JSON (Extra data)'; they are
    split as text_lines splits a .txt file (LF, CRLF or a lone CR), line numbers kept."""
    from normxlogit.data import read_examples

    rows = ['{"text": "Great fun.", "label": 1}', '{"text": "Awful.", "label": 0}']
    for end in ("\r", "\r\n", "\n"):
        path = tmp_path / "d.jsonl"
        path.write_bytes(end.join(rows + [""]).encode())
        examples = read_examples(path)
        assert [e.text for e in examples] == ["Great fun.", "Awful."], end
        assert [e.line for e in examples] == [1, 2], end
    path.write_bytes(b'{"text": "Great fun.", "label": 1}\r\r{"text": oops}\r')
    with pytest.raises(InvalidFileError, match=r"line 3: not valid JSON"):
        read_examples(path)


def test_a_jsonl_text_keeps_a_line_separator_inside_its_string(tmp_path):
    """E12: only CR and LF end a line; a U+2028 inside a JSON string stays in its text."""
    from normxlogit.data import read_examples

    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "Great\u2028fun.", "label": 1}\n', encoding="utf-8")
    assert [e.text for e in read_examples(path)] == ["Great\u2028fun."]


# ------------------------------------------------------------------------------ E13


def test_segments_file_lines_end_as_input_lines_do(tmp_path):
    """E13: --segments FILE split a line at a form feed or U+2028 (str.splitlines), so a
    2-line file gave 3 segments and later 'FILE line N' messages counted lines the user
    did not write; it now splits as --input does (LF, CRLF, lone CR)."""
    from normxlogit.cli.explain import segments_of
    from normxlogit.data.files import split_lines, text_lines

    path = tmp_path / "segments.txt"
    path.write_bytes("Good\u2028 fun.\nBad\x0c end.\r\nLast\x85 one.\rMore.\n".encode())
    segments, lines = segments_of(str(path), 1)
    assert segments == [["Good\u2028 fun.", "Bad\x0c end.", "Last\x85 one.", "More."]]
    assert lines == [1, 2, 3, 4]
    content = path.read_text(encoding="utf-8")
    assert text_lines(content, "x") == split_lines(content)[:4]  # one splitter for both
    path.write_bytes(b"\nFirst.\n\nSecond.\n")  # blank lines skipped, numbers kept
    assert segments_of(str(path), 1) == ([["First.", "Second."]], [2, 4])


def test_the_cli_reads_a_segment_with_a_line_separator_as_one(tmp_path, tiny_classifier):
    """E13 end to end: two lines give two segments, whatever a line holds."""
    import json

    text = "Good\u2028 fun. Bad end."
    (tmp_path / "s.txt").write_text("Good\u2028 fun.\nBad end.\n", encoding="utf-8")
    result = invoke_in(
        tmp_path, "explain", text, "-m", str(tiny_classifier), "--segments", "s.txt",
        "-f", "json", "-o", "out.json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "out.json").read_text())
    assert saved["segments"]["texts"] == ["Good\u2028 fun.", "Bad end."]
