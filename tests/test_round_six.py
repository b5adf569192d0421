"""Round six of new-user probes (issue 41): each test is one failure that round found
(or round five left), with tiny models."""

from __future__ import annotations

import warnings

from typer.testing import CliRunner

from normxlogit.cli import app
from normxlogit.common.errors import NormXLogitWarning
from normxlogit.common.numbering import lines_of, text_name, texts_named

from .conftest import explainable

LONG = "word " * 600  # past the 512 tokens a tiny BERT reads


def test_python_numbers_texts_from_zero_and_a_command_names_its_files_lines():
    """One convention: Python names texts by their index, a command by the line of the
    file it read them from (round five: "text 1" in one message, "line 2" in another)."""
    model = explainable("bert", "classification")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        model.explain(["a good film", LONG])
        with texts_named(lines_of("in.txt", [1, 2])):
            model.explain(["a good film", LONG])
    said = [str(w.message) for w in seen if issubclass(w.category, NormXLogitWarning)]
    assert any(m.startswith("text 1 has") for m in said)
    assert any(m.startswith("in.txt line 2 has") for m in said)
    assert text_name(1) == "text 1"  # the naming ends with the block


def test_explain_and_evaluate_name_the_input_line(tiny_classifier, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text(f"a good film\n{LONG}\n")
    args = ["explain", "--input", str(source), "-m", str(tiny_classifier), "-f", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"{source} line 2 has" in result.output and "text 1" not in result.output
    data = tmp_path / "data.tsv"  # the header is line 1: the second text is on line 3
    data.write_text(f"sentence\tlabel\na good film\tpos\n{LONG}\tneg\n")
    args = ["evaluate", str(data), "-m", str(tiny_classifier), "--method", "random"]
    result = CliRunner().invoke(app, [*args, "--metric", "comp_cd"])
    assert result.exit_code == 0, result.output
    assert f"{data} line 3 has" in result.output and "text 1" not in result.output
