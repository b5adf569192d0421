"""Round three of new-user probes: text is never markup, broken models never pass, every
write failure and every bad file is one clear line, and messages say what is wrong.

CLI cases run the real entry point (a subprocess); library cases use tiny models.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.common.console import labelled, plain_console
from normxlogit.common.errors import (
    InvalidFileError,
    InvalidInputError,
    InvalidOptionError,
    UnsupportedModelError,
)
from normxlogit.common.outputs import json_text

from .cli.test_bad_inputs_cli import assert_refused, run
from .conftest import SHARED_DATA, build_model, explainable, fresh_tokenizer

# ------------------------------------------------------------------ text, never markup


@pytest.mark.parametrize(
    "args, shown",
    [
        (["explain", "a film", "--label", "[/x]"], "'[/x]'"),
        (["explain", "a film", "--label", "[bold]neg"], "'[bold]neg'"),
        (["explain", "a film", "--method", "[/m]"], "'[/m]'"),
        (["evaluate", "[/a]b.tsv"], "[/a]b.tsv"),
    ],
)
def test_user_text_in_an_error_is_printed_as_it_is(tmp_path, args, shown):
    """rich markup in what the user typed neither crashes nor vanishes from the message."""
    line = assert_refused(run(*args, cwd=tmp_path))
    assert shown in line


def test_the_projects_own_hints_keep_their_brackets(tmp_path):
    """A bench config naming an unknown dataset: the hint ``hub:<dataset>[/<config>]``
    is shown whole, not parsed (it ended in MarkupError)."""
    config = tmp_path / "grid.toml"
    config.write_text(
        'title = "t"\nmethods = ["random"]\nmetrics = ["comp_cd"]\n'
        '[[experiments]]\nmodel = "minilm-sst2"\ndataset = "nosuchset"\n'
    )
    line = assert_refused(run("bench", str(config), "--store", str(tmp_path / "s.sqlite")))
    assert "[/<config>]" in line
    assert not (tmp_path / "s.sqlite").exists()  # refused before any store exists


def test_rendering_never_reads_markup():
    """The consoles, tables and renderers of the package print brackets verbatim."""
    console = plain_console()
    with console.capture() as captured:
        console.print(labelled("error:", "red", "pip install 'normxlogit[serve]' [/x]"))
    assert captured.get().strip() == "error: pip install 'normxlogit[serve]' [/x]"
    network = build_model("bert", "classification")
    network.config.id2label = {0: "[/neg]", 1: "[bold]mid", 2: "pos"}
    network.config.label2id = {v: k for k, v in network.config.id2label.items()}
    explanation = normxlogit.load((network, fresh_tokenizer())).explain("a film", target="all")
    from rich.console import Console

    user_console = Console(width=200, markup=True)  # a user's own console, markup on
    with user_console.capture() as captured:
        user_console.print(explanation)
    assert "[/neg]" in captured.get() and "[bold]mid" in captured.get()


# ------------------------------------------------------------------ broken models


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_model_with_non_finite_weights_is_refused(bad):
    network = build_model("bert", "classification")
    with torch.no_grad():
        network.classifier.weight[0, 0] = bad
    with pytest.raises(UnsupportedModelError, match="non-finite logits"):
        normxlogit.load((network, fresh_tokenizer()))


def test_json_is_always_standard_json():
    """No output writes a bare NaN: non-finite numbers are null, and read back as NaN."""
    text = json_text({"a": [1.0, float("nan"), float("inf")], "b": np.float32("nan")})
    assert json.loads(text) == {"a": [1.0, None, None], "b": None}
    explanation = explainable("bert", "classification").explain("a fine film")
    explanation.scores[1] = np.nan
    data = json.loads(explanation.to_json())  # strict: json.loads accepts NaN, so check text
    assert "NaN" not in explanation.to_json()
    assert np.isnan(np.asarray(data["scores"], dtype=float)[1]).all()  # null where NaN was
    back = normxlogit.Explanation.from_dict(data)
    assert np.isnan(back.scores[1]).all() and not np.isnan(back.scores[0]).any()


def test_evaluate_refuses_nan_scores_instead_of_ranking_them():
    model = explainable("bert", "classification")
    explanation = model.explain("a fine film")
    explanation.scores[2] = np.nan
    with pytest.raises(InvalidInputError, match="NaN or infinite scores"):
        normxlogit.evaluate(model, [explanation], ["comp_cd"])


def test_the_terminal_view_survives_a_nan_score():
    from rich.console import Console

    explanation = explainable("bert", "classification").explain("a fine film")
    explanation.scores[:] = np.nan
    console = Console(width=120)
    with console.capture() as captured:
        console.print(explanation)
    assert "fine" in captured.get()


# ------------------------------------------------------------------ the library refuses


def test_generate_and_continuation_together_are_refused():
    model = explainable("llama", "causal_lm")
    with pytest.raises(InvalidInputError, match="pass one of them"):
        model.explain("the film", generate=True, max_new_tokens=2, continuation=" was good")


def test_a_tuple_of_three_texts_is_refused():
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match="a list"):
        model.explain(("a", "b", "c"))
    assert len(model.explain(["a", "b", "c"])) == 3  # a list is several texts
    assert model.explain(("a", "b")).text == ("a", "b")  # a 2-tuple is one pair


def test_loading_options_that_cannot_apply_are_refused():
    with pytest.raises(InvalidOptionError, match="head="):
        normxlogit.load("minilm-sst2", head="masked_lm")
    with pytest.raises(InvalidOptionError, match="revision="):
        normxlogit.load("minilm-sst2", revision="main")
    with pytest.raises(InvalidOptionError, match="head="):
        normxlogit.load((build_model("bert", "classification"), fresh_tokenizer()), head="x")


def test_a_text_of_written_out_special_tokens_is_refused():
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match=r"only special tokens \(\[CLS\], \[SEP\]"):
        model.explain("[CLS] [SEP] [PAD]")
    model.explain("a [SEP] film")  # words around a special token are fine


# ------------------------------------------------------------------ saved files


@pytest.mark.parametrize(
    "change, pattern",
    [
        ({"tokens": None}, "'tokens'"),
        ({"tokens": [1, 2]}, "'tokens' must be a list of strings"),
        ({"probs": {"neg": "high"}}, "'probs' must be an object of probabilities"),
        ({"layers": ["x"]}, "'layers' must be a list of integers"),
        ({"special": [1, 0]}, "'special' must be a list of true/false"),
        ({"word_ids": ["a"]}, "'word_ids'"),
        ({"model": 3}, "'model' must be a string"),
        ({"label": None}, "'label'"),
        ({"output_texts": {"a": 1}}, "'output_texts' must be an object of strings"),
    ],
)
def test_every_field_of_a_loaded_explanation_is_type_checked(tmp_path, change, pattern):
    explanation = explainable("bert", "classification").explain("a fine film")
    data = {**explanation.to_dict(), **change}
    path = tmp_path / "e.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match=pattern):
        normxlogit.Explanation.load(path)


def test_a_generation_file_is_type_checked_too(tmp_path):
    generation = explainable("llama", "causal_lm").explain(
        "the film", generate=True, max_new_tokens=2
    )
    data = {**generation.to_dict(), "prompt_length": "2"}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match="'prompt_length' must be an integer"):
        normxlogit.load_explanations(path)


def test_a_header_naming_a_column_twice_is_refused(tmp_path):
    from normxlogit.data import read_examples

    path = tmp_path / "d.tsv"
    path.write_text("sentence\tsentence\tlabel\na\tb\t1\n")
    with pytest.raises(InvalidFileError, match="line 1: the header names column 'sentence' 2"):
        read_examples(path)


# ------------------------------------------------------------------ the CLI's words


def test_writing_to_a_full_disk_is_one_line(tmp_path):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(Path(sys.executable).with_name("normxlogit")), "models"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: cannot write to standard output: No space left on device; free space there "
        "or pass --output FILE"
    ]


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["explain", "--input", "/dev/null"], ["--input /dev/null is a device"]),
        (["explain", "--input", "."], ["--input . is a folder"]),
        (["evaluate", "/dev/null"], ["data file /dev/null is a device"]),
        (["serve", "--data", "/etc"], ["data file /etc is a folder"]),
        (["train", "sst2", "--epochs", "inf"], ["--epochs inf: must be a finite number"]),
        (
            ["bench", "g.toml", "--store", "adir.sqlite"],
            ["is a folder", "adir.sqlite/results.sqlite"],
        ),
        (["evaluate", "a.tsv", "--quiet"], ["--quiet", "--output"]),
    ],
)
def test_messages_say_what_is_wrong(tmp_path, args, fragments):
    (tmp_path / "adir.sqlite").mkdir()
    (tmp_path / "g.toml").write_text('title = "t"\n')
    (tmp_path / "a.tsv").write_text("sentence\tlabel\na fine film\t1\n")
    line = assert_refused(run(*args, cwd=tmp_path))
    assert "does not exist" not in line
    for fragment in fragments:
        assert fragment in line


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["evaluate", "a.tsv", "--limit", "99999999999999999999"], "--limit"),
        (["explain", "hi", "--label-id", "99999999999999999999"], "--label-id"),
        (["evaluate", "a.tsv", "--protocol", "samples=99999999999999999999"], "samples"),
        (["explain", "hi", "--method", "integrated_gradients", "--option",
          "steps=-99999999999999999999"], "steps"),
    ],
)  # fmt: skip
def test_every_integer_a_user_gives_is_bounded(tmp_path, args, fragment):
    (tmp_path / "a.tsv").write_text("sentence\tlabel\na fine film\t1\n")
    assert_refused(run(*args, cwd=tmp_path), fragment, "too large; at most 2147483647")


def test_a_busy_port_is_refused_before_the_page_is_announced():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run("serve", "--port", str(port))
    line = assert_refused(done)
    assert f"127.0.0.1:{port}" in line and "--port" in line
    assert "page on" not in done.stdout


@pytest.mark.parametrize(
    "rows, fragments",
    [
        ("a fine film\t0.5\n", ["f.tsv, line 2", "gold label 0.5 is a float"]),
        ("a fine film\tTrue\n", ["f.tsv, line 2", "unknown label 'True'"]),
    ],
)
def test_gold_labels_a_classifier_cannot_read_name_file_and_line(tmp_path, rows, fragments):
    (tmp_path / "f.tsv").write_text("sentence\tlabel\n" + rows)
    line = assert_refused(run("evaluate", "f.tsv", "--explain-label", cwd=tmp_path))
    for fragment in fragments:
        assert fragment in line


def test_a_regressor_scored_against_class_labels_is_warned(tmp_path):
    sst2 = SHARED_DATA / "sst2" / "dev.tsv"
    if not sst2.exists():
        pytest.skip("shared SST-2 data not available")
    done = run("evaluate", str(sst2), "--model", "minilm-stsb", "--limit", "3",
               "--method", "random", "-f", "csv", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "look like class labels" in done.stderr


def test_one_text_says_why_a_regressors_correlation_is_missing():
    model = explainable("bert", "regression")
    explanations = model.explain(["a fine film"])
    with pytest.warns(normxlogit.NormXLogitWarning, match="one text has none"):
        normxlogit.evaluate(model, [explanations[0]], ["comp_acc"], labels=[3.5])


def test_bench_report_and_export_say_where_and_infer_the_format(tmp_path):
    from .bench.helpers import _save_tiny, write_config

    model = _save_tiny(tmp_path / "tiny", seed=0)
    config = write_config(tmp_path, model, limit=2, methods='["random"]', metrics='["comp_cd"]')
    elsewhere = tmp_path / "stores"
    elsewhere.mkdir()
    store = elsewhere / "s.sqlite"
    assert run("bench", str(config), "--store", str(store)).returncode == 0
    report = run("bench", "report", str(config), "--store", str(store))
    assert report.returncode == 0, report.stderr
    assert (elsewhere / "grid-report" / "report.md").exists()  # beside the store
    assert str(elsewhere / "grid-report") in report.stderr
    parquet = tmp_path / "out.parquet"
    export = run("bench", "export", "--store", str(store), "-o", str(parquet))
    assert export.returncode == 0, export.stderr
    assert parquet.read_bytes()[:4] == b"PAR1"
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    assert_refused(run("bench", "status", str(config), "--store", str(empty)), "empty file")
    assert empty.stat().st_size == 0  # not turned into a SQLite file


@pytest.mark.parametrize(
    "experiment",
    [
        'dataset = "sst2"\nsplit = "nosplit"',
        'dataset = "no/such/file.tsv"',
    ],
)
def test_a_refused_run_or_merge_leaves_no_store_behind(tmp_path, experiment):
    config = tmp_path / "grid.toml"
    config.write_text(
        'title = "t"\nmethods = ["random"]\nmetrics = ["comp_cd"]\n'
        f'[[experiments]]\nmodel = "minilm-sst2"\n{experiment}\n'
    )
    store = tmp_path / "new.sqlite"
    assert_refused(run("bench", str(config), "--store", str(store)))
    assert list(tmp_path.glob("new.sqlite*")) == []
    broken = tmp_path / "broken.sqlite"
    broken.write_text("not a store")
    assert_refused(run("bench", "merge", str(broken), "--into", str(store)))
    assert list(tmp_path.glob("new.sqlite*")) == []


def test_a_report_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    """A write failure in the middle of a report (here: the disk fills at the figures)."""
    from typer.testing import CliRunner

    from normxlogit.bench import report as report_module
    from normxlogit.cli import app

    from .bench.helpers import _save_tiny, write_config

    model = _save_tiny(tmp_path / "tiny", seed=0)
    config = write_config(tmp_path, model, limit=2, methods='["random"]', metrics='["comp_cd"]')
    CliRunner().invoke(app, ["bench", str(config)], catch_exceptions=False)

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "grid-report" / "x.png"))

    monkeypatch.setattr(report_module, "draw_plot", full_disk)
    result = CliRunner().invoke(app, ["bench", "report", str(config)])
    assert result.exit_code == 2
    assert "cannot write the report to" in result.output and "x.png" in result.output
    assert "Traceback" not in result.output


def test_methods_fit_an_80_column_terminal_and_one_is_described():
    listing = run("methods")
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    assert any(line.startswith("integrated_gradients") for line in lines)
    described = run("methods", "integrated_gradients")
    assert described.returncode == 0
    assert "steps = 50" in described.stdout and "preset 'pi-soft'" in described.stdout
    env = {**os.environ, "COLUMNS": "80", "TERM": "xterm"}
    code = (
        "from normxlogit.cli import out; out._force_terminal = True; "
        "from normxlogit.cli import app; app(['methods'])"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert all(len(line) <= 80 for line in shown.stdout.splitlines()), shown.stdout
