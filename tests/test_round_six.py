"""Round six of new-user probes (issue 41): each test is one failure that round found
(or round five left), with tiny models."""

from __future__ import annotations

import json
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


def test_a_segments_file_keeps_its_lines_and_its_byte_order_mark_is_skipped(
    tiny_classifier, tmp_path
):
    """A blank line between segments shifted every later "--segments line N" (blank lines
    are skipped; messages name the file's own line); a Notepad file's BOM was part of the
    first segment ("not in the text")."""
    text = "The plot is thin. The acting is wonderful!"
    gapped = tmp_path / "gapped.txt"
    gapped.write_text("The plot is thin.\n\nThe acting is awful!\n")
    args = ["explain", text, "-m", str(tiny_classifier), "-f", "json"]
    result = CliRunner().invoke(app, [*args, "--segments", str(gapped)])
    assert result.exit_code == 2 and "--segments line 3 ('The acting is awful!')" in result.output
    marked = tmp_path / "marked.txt"
    marked.write_bytes(b"\xef\xbb\xbfThe plot is thin.\r\n\r\nThe acting is wonderful!\r\n")
    result = CliRunner().invoke(app, [*args, "--segments", str(marked)])
    assert result.exit_code == 0, result.output
    segments = json.loads(result.stdout)["segments"]["texts"]
    assert segments == ["The plot is thin.", "The acting is wonderful!"]


def test_the_command_line_names_the_sentence_and_the_text_it_was_given(tiny_masked_lm):
    """`segments[1] of text 0` (Python's names) for one TEXT and --segments sentences:
    the CLI says which sentence, and a text given alone is "the text" everywhere."""
    text = "The film is long. It is a [MASK] film."
    args = ["explain", text, "-m", str(tiny_masked_lm), "--segments", "sentences"]
    result = CliRunner().invoke(app, [*args, "--method", "leave_one_out"])
    assert result.exit_code == 2
    assert "sentence 2 of the text holds the [MASK]" in result.output
    model = explainable("bert", "classification")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        model.explain(LONG)
    assert any(str(w.message).startswith("the text has") for w in seen)


def test_evaluate_takes_segments_and_refuses_segment_work_without_them(tiny_classifier, tmp_path):
    """`evaluate` told the user to pass Python's segments= (it had none) and asked for
    word evidence for segment_hit_1; it now takes --segments sentences|data."""
    rows = [
        {
            "text": "The cast is great. The plot is thin.",
            "label": "pos",
            "segments": ["The cast is great.", "The plot is thin."],
            "evidence_segments": [0],
        },
        {
            "text": "It drags. It ends. I left.",
            "label": "neg",
            "segments": ["It drags.", "It ends.", "I left."],
            "evidence_segments": [2],
        },
    ]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    base = ["evaluate", str(data), "-m", str(tiny_classifier)]
    for extra, said in (
        (["--metric", "segment_hit_1"], "segment_hit_1 needs segments; add --segments"),
        (["--method", "leave_one_out"], "leave_one_out needs segments"),
        (["--protocol", "unit=segment"], "--protocol unit=segment needs segments"),
        (["--segments", "words"], "--segments 'words'"),
        (["--segment-reduce", "mean"], "add --segments"),
    ):
        result = CliRunner().invoke(app, [*base, *extra])
        assert result.exit_code == 2 and said in result.output, result.output
    args = [*base, "--segments", "data", "--method", "leave_one_out", "--method", "random"]
    metrics = ["--metric", "segment_hit_1", "--metric", "segment_drop", "-f", "json"]
    result = CliRunner().invoke(app, [*args, *metrics])
    assert result.exit_code == 0, result.output
    table = json.loads(result.stdout[result.stdout.index("{") :])
    assert set(table["values"]["leave_one_out"]) == {"segment_hit_1", "segment_drop"}
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"text": "A film.", "label": "pos"}) + "\n")
    result = CliRunner().invoke(
        app, ["evaluate", str(plain), "-m", str(tiny_classifier), "--segments", "data"]
    )
    assert result.exit_code == 2 and "line 1: no segments column" in result.output


def test_bench_export_refuses_csv_into_a_json_file(tmp_path):
    store = str(tmp_path / "s.sqlite")
    result = CliRunner().invoke(
        app, ["bench", "export", "--store", store, "-f", "csv", "-o", "x.json"]
    )
    assert result.exit_code == 2 and "names a JSON file but --format csv" in result.output


def test_values_read_back_as_nulls_summarise_as_n_a_and_the_report_says_so():
    """A metric stored with no value for any instance (segment_lds on one-sentence texts)
    crashed `bench report` and the page's tables (an object array of NULLs); "–" then
    read as "not computed yet"."""
    import numpy as np

    import normxlogit
    from normxlogit.bench.report import _number

    model = explainable("bert", "classification")
    made = model.explain(["one sentence only.", "just one."], segments="sentences")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = normxlogit.evaluate(model, made, ["segment_lds"], progress=False)
    result.frame["value"] = [None] * len(result.frame)  # as NULLs come back from SQLite
    assert np.isnan(result.summary().frame.loc["normxlogit", "segment_lds"])
    assert _number(float("nan")) == "n/a" and _number("") == "–"


def test_leave_one_out_leaves_a_segment_the_model_never_read_unscored(tmp_path):
    """A sentence past the truncation scored 0.0 ("does not matter") under leave-one-out,
    where token methods leave it unscored: it is NaN, saved and read back as such, and the
    segment metrics rank the segments read."""
    import numpy as np

    import normxlogit

    model = explainable("bert", "classification")
    text = "The film is good. " + "It goes on. " * 200 + "The end is sad."
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = model.explain(text, method="leave_one_out", segments="sentences")
        tokens = model.explain(text, segments="sentences")
    scores = made.segments.scores
    assert np.isnan(scores[-1]) and np.isnan(tokens.segments.scores[-1])
    assert np.isfinite(scores[0])
    path = tmp_path / "e.json"
    normxlogit.save_explanations([made], path)
    (again,) = normxlogit.load_explanations(path)
    np.testing.assert_array_equal(again.segments.scores, scores)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = normxlogit.evaluate(
            model, {"loo": [made]}, ["segment_hit_1"], evidence=[[0]], progress=False
        )
    assert np.isfinite(result.frame["value"]).all()


def test_a_table_marks_no_best_where_every_method_scores_the_same():
    """Random's 1.000 was bold beside NormXLogit's 1.000 on segment plausibility where
    every segment was evidence: a tie of every method compared (or a lone method) has no
    best; a real difference is still marked."""
    from normxlogit.bench.report import RenderedTable
    from normxlogit.bench.spec import TableSpec

    spec = TableSpec(title="t", metric="segment_hit_1")
    columns = [("sst2", "m", "segment_hit_1")]

    def marked(values):
        rows = list(values)
        cells = {(row, 0): value for row, value in values.items()}
        return RenderedTable(spec, columns, rows, cells, {}, {}, {}, {}).ranks()

    assert marked({"normxlogit": 1.0, "random": 1.0}) == {}
    assert marked({"normxlogit": 0.8}) == {}
    assert marked({"normxlogit": 1.0, "random": 0.5}) == {("normxlogit", 0): 1, ("random", 0): 2}


def test_segment_scores_and_evidence_a_later_chunk_would_refuse_are_refused_first(monkeypatch):
    """An infinite segment score or a 0/1 mask as evidence in the last chunk was refused
    only after the chunks before it had run."""
    import numpy as np
    import pytest as pt

    import normxlogit
    from normxlogit.common.errors import InvalidInputError

    model = explainable("bert", "classification")
    texts = ["It starts. It ends.", "One. Two. Three."]
    made = model.explain(texts, segments="sentences")
    made[1].segments.scores = np.array([1.0, np.inf, 0.0])
    monkeypatch.setattr(type(model), "forward", lambda *a, **k: pt.fail("a pass ran"))
    with pt.raises(InvalidInputError, match="text 1 holds NaN or infinite segment scores"):
        normxlogit.evaluate(model, made, ["segment_drop"], batch_size=1, progress=False)
    made[1].segments.scores = np.array([1.0, 2.0, 0.0])
    with pt.raises(InvalidInputError, match="evidence.1. holds segment 0 twice"):
        normxlogit.evaluate(
            model, made, ["segment_hit_1"], evidence=[[0], [1, 0, 0]], batch_size=1, progress=False
        )


def test_the_sanity_metrics_summary_is_named_by_its_last_step():
    """sanity_spearman's header said "last layer" where its curve runs over the
    randomisation steps."""
    import pandas as pd

    from normxlogit.evaluation import metric_info
    from normxlogit.evaluation.summary import SummaryTable

    names = ["sanity_spearman", "comp_cd"]
    table = SummaryTable(
        pd.DataFrame([[0.1, 0.2]], columns=names), {n: metric_info(n) for n in names}
    )
    assert table.header("sanity_spearman").startswith("sanity_spearman (last step")
    assert table.header("comp_cd").startswith("comp_cd (AOPC")


def test_a_sanity_metric_refuses_segment_methods_before_the_other_metrics_run(monkeypatch):
    import pytest as pt

    import normxlogit
    from normxlogit.common.errors import InvalidInputError

    model = explainable("bert", "classification")
    made = model.explain(
        ["It starts. It ends.", "One. Two."], "leave_one_out", segments="sentences"
    )
    monkeypatch.setattr(type(model), "forward", lambda *a, **k: pt.fail("a pass ran"))
    with pt.raises(InvalidInputError, match="'leave_one_out' is a segment method"):
        normxlogit.evaluate(model, made, ["comp_cd", "sanity_spearman"], batch_size=1)
