"""The command line: one run through its installed entry point, the rest in this process
(see :mod:`tests.cli_inprocess`: a subprocess would only add seconds of imports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..cli_inprocess import Ran, run_cli

ENTRY = Path(sys.executable).with_name("normxlogit")


def run_entry(*args: str) -> subprocess.CompletedProcess:
    """The installed entry point in a process of its own."""
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([str(ENTRY), *args], capture_output=True, text=True, env=env, timeout=300)


def run(*args: str, stdin: str | None = None) -> Ran:
    return run_cli(*args, stdin=stdin)


@pytest.fixture
def tiny_model_dir(tiny_classifier) -> str:
    return str(tiny_classifier)


def test_models_lists_the_builtins():
    result = run_entry("models")  # the installed entry point itself (no model loaded)
    assert result.returncode == 0, result.stderr
    for name in ("minilm-sst2", "minilm-stsb", "smollm2-135m"):
        assert name in result.stdout
    # the in-process runner the other tests use prints what the entry point prints
    inside = run("models")
    assert (inside.returncode, inside.stdout, inside.stderr) == (0, result.stdout, result.stderr)


def test_methods_lists_the_methods():
    result = run("methods")
    assert result.returncode == 0, result.stderr
    for name in ("normxlogit", "logat", "l2_norm"):
        assert name in result.stdout


def test_explain_json_from_a_model_folder(tiny_model_dir):
    result = run(
        "explain", "a gripping film", "--model", tiny_model_dir, "--format", "json", "--all-labels"
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["targets"] == ["neg", "neutral", "pos"]
    assert data["tokens"][0] == "[CLS]" and len(data["scores"][0]) == 3
    assert data["method"] == "normxlogit"


def test_explain_a_contrast_and_a_contrast_input(tiny_model_dir):
    base = ("explain", "a gripping film", "--model", tiny_model_dir, "--format", "json")
    result = run(*base, "--label", "pos", "--contrast", "neg")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["targets"] == ["pos"] and data["contrasts"] == ["neg"]
    against = run(*base, "--contrast-input", "a dull film")
    assert against.returncode == 0, against.stderr
    assert json.loads(against.stdout)["settings"]["contrast_input"] == "a dull film"
    terminal = run("explain", "a gripping film", "--model", tiny_model_dir, "-l", "pos",
                   "--contrast-id", "0")  # fmt: skip
    assert terminal.returncode == 0 and "pos vs neg" in terminal.stdout
    refused = run(*base, "--method", "attention", "--contrast", "neg")
    assert refused.returncode != 0 and "nothing to contrast" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_explain_many_texts_from_stdin(tiny_model_dir):
    result = run(
        "explain",
        "--model",
        tiny_model_dir,
        "--format",
        "json",
        "--input",
        "-",
        "--label",
        "pos",
        "--method",
        "logat",
        "--layer",
        "all",
        stdin="first text\nsecond one here\n\n",  # blank lines at the end are ignored
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [d["targets"] for d in data] == [["pos"], ["pos"]]
    assert len(data[0]["scores"]) == 3  # embeddings + 2 layers


def test_explain_html_to_a_file(tiny_model_dir, tmp_path):
    output = tmp_path / "page.html"
    result = run("explain", "a gripping film", "--model", tiny_model_dir, "--output", str(output))
    assert result.returncode == 0, result.stderr
    assert output.read_text().startswith("<!DOCTYPE html>")
    assert "gripping" in result.stdout  # the terminal view is printed too


def test_input_file_and_option(tiny_model_dir, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("one film\ntwo films\n")
    result = run(
        "explain",
        "--model",
        tiny_model_dir,
        "--input",
        str(texts),
        "-f",
        "json",
        "--option",
        "embedding=word",
        "--aggregate",
        "sum",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data[0]["settings"]["embedding"] == "word"
    assert data[1]["settings"]["aggregate"] == "sum"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["explain", "hi", "--model", "no-such-model"], "built-in models: minilm-sst2"),
        (["explain", "   "], "empty or whitespace-only"),
        (["explain", "hi", "--method", "magic"], "unknown method 'magic'"),
    ],
)
def test_errors_are_one_line_without_traceback(args, message):
    result = run(*args)
    assert result.returncode == 2
    assert message in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr


def test_bad_label_writes_nothing(tiny_model_dir, tmp_path):
    output = tmp_path / "out.json"
    result = run(
        "explain", "a film", "--model", tiny_model_dir, "--label", "happy", "--output", str(output)
    )
    assert result.returncode == 2
    assert "unknown label 'happy'" in result.stderr and "Traceback" not in result.stderr
    assert not output.exists()


def test_evaluate_writes_a_summary_table(tiny_model_dir, tmp_path):
    data = tmp_path / "texts.tsv"
    data.write_text("sentence\tlabel\na gripping film\t2\na dull , tired plot\t0\nfine\t1\n")
    table, saved = tmp_path / "table.csv", tmp_path / "result.json"
    result = run(
        "evaluate",
        str(data),
        "--model",
        tiny_model_dir,
        "--method",
        "normxlogit",
        "--method",
        "random",
        "--metric",
        "comp_cd",
        "--metric",
        "suff_acc",
        "--protocol",
        "ratios=[0.2,0.5]",
        "--output",
        str(table),
        "--save",
        str(saved),
    )
    assert result.returncode == 0, result.stderr
    lines = table.read_text().splitlines()
    assert lines[0] == "method,comp_cd,suff_acc"
    assert [line.split(",")[0] for line in lines[1:]] == ["normxlogit", "random"]
    assert json.loads(saved.read_text())["protocol"]["ratios"] == [0.2, 0.5]
    assert "comp_cd" in result.stdout


@pytest.fixture(scope="module")
def tiny_regressor_dir(tmp_path_factory) -> str:
    from ..conftest import build_model, fresh_tokenizer

    folder = tmp_path_factory.mktemp("tiny-regressor")
    build_model("bert", "regression").save_pretrained(folder)
    fresh_tokenizer().save_pretrained(folder)
    return str(folder)


def test_evaluate_scores_a_regressor_by_its_own_metrics(tiny_regressor_dir, tmp_path):
    """A regressor's default is comp_acc / suff_acc (Pearson with the gold scores); a
    metric that needs class probabilities is refused in one line."""
    data = tmp_path / "pairs.tsv"
    data.write_text(
        "sentence1\tsentence2\tscore\na man plays\ta man is playing\t4.6\n"
        "a dog runs\tthe market fell\t0.2\na film\ta movie\t3.9\n"
    )
    result = run("evaluate", str(data), "--model", tiny_regressor_dir, "-f", "csv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "method,comp_acc,suff_acc"
    result = run("evaluate", str(data), "-m", tiny_regressor_dir, "--metric", "comp_cd")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--metric comp_cd needs class probabilities" in result.stderr
    unlabelled = tmp_path / "unlabelled.tsv"
    unlabelled.write_text("sentence1\tsentence2\na man plays\ta man is playing\n")
    result = run("evaluate", str(unlabelled), "-m", tiny_regressor_dir)
    assert result.returncode == 2 and "no label column, which comp_acc, suff_acc need" in (
        result.stderr
    )


def test_evaluate_errors_are_one_line(tiny_model_dir, tmp_path):
    data = tmp_path / "texts.txt"
    data.write_text("a gripping film\n")
    result = run("evaluate", str(data), "--model", tiny_model_dir, "--metric", "comp_acc")
    assert result.returncode == 2
    assert "label" in result.stderr and "Traceback" not in result.stderr
    result = run("evaluate", str(data), "--metric", "nonsense")
    assert result.returncode == 2 and "unknown metric" in result.stderr
    result = run("evaluate", str(data), "--protocol", "routing")
    assert result.returncode == 2 and "--protocol 'routing' must look like" in result.stderr


def test_sanity_writes_its_table_and_figure(tiny_model_dir, tmp_path):
    data = tmp_path / "texts.txt"
    data.write_text("a gripping film\na dull film that drags on\n")
    result = run(
        "sanity", str(data), "--model", tiny_model_dir, "--method", "normxlogit", "--method",
        "random", "--mode", "independent", "--plot", str(tmp_path / "s.png"),
        "-o", str(tmp_path / "s.csv"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "passes" in result.stdout and "embeddings" in result.stdout
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "s.csv").read_text().startswith("method,mode,step,randomized")
    refused = run("sanity", str(data), "--model", tiny_model_dir, "--mode", "data")
    assert refused.returncode != 0 and "--shuffled" in refused.stderr
    assert "Traceback" not in refused.stderr
    quantus = run(
        "sanity", str(data), "--model", tiny_model_dir, "--method", "gradient_x_input",
        "--preset", "quantus-mprt", "--seed", "42", "-o", str(tmp_path / "q.csv"),
    )  # fmt: skip
    assert quantus.returncode == 0, quantus.stderr
    assert "quantus_mean_spearman" in quantus.stdout and "classifier" in quantus.stdout
    steps = (tmp_path / "q.csv").read_text().splitlines()[1:]
    assert len(steps) == 2 * 22  # two texts, every module with reset_parameters
    refused = run("sanity", str(data), "--model", tiny_model_dir, "--preset", "quantus")
    assert refused.returncode == 2 and "quantus-mprt" in refused.stderr
