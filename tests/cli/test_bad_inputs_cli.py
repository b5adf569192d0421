"""Bad input gets one clear line and exit status 2, before any work, and writes nothing.

The cases run the command line in this process (see :mod:`tests.cli_inprocess`), as the
installed ``normxlogit`` would run them; ``--help`` and the light import run in a process
of their own. Cases that need a model use tiny random models saved to disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers as T
from typer.testing import CliRunner

import normxlogit
from normxlogit import training
from normxlogit.cli import app
from normxlogit.common.errors import InvalidInputError, InvalidOptionError, OutputPathError
from normxlogit.common.outputs import write_atomically
from normxlogit.data import Example
from normxlogit.methods import get_method

from ..cli_inprocess import Ran, run_cli
from ..conftest import SMALL, fresh_tokenizer

ENTRY = Path(sys.executable).with_name("normxlogit")
BUILTIN = training.WEIGHTS_DIR


def run(*args: str, cwd: Path | None = None, stdin: bytes | None = None) -> Ran:
    return run_cli(*args, cwd=cwd, stdin=stdin)


def run_entry(*args: str) -> subprocess.CompletedProcess:
    """The installed entry point in a process of its own."""
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([str(ENTRY), *args], capture_output=True, text=True, env=env, timeout=300)


def assert_refused(result, *fragments: str) -> str:
    """Exit status 2, one line on stderr starting with 'error:', holding ``fragments``
    (warnings about the input, said before it, aside)."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder``: its bytes and modification time."""
    return {
        str(path.relative_to(folder)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def workdir(tmp_path) -> Path:
    """A folder with an existing output file in it, to check nothing is touched."""
    (tmp_path / "p.txt").write_text("keep me\n")
    (tmp_path / "table.md").write_text("keep me too\n")
    (tmp_path / "existing").mkdir()
    return tmp_path


@pytest.fixture(scope="module")
def tiny_causal_lm(tmp_path_factory) -> Path:
    from ..conftest import saved_tiny

    return saved_tiny(tmp_path_factory.mktemp("tiny-gpt2"), "gpt2", "causal_lm")


# --------------------------------------------------------------- 7: light imports


def test_importing_the_cli_does_not_import_torch():
    code = (
        "import sys, normxlogit, normxlogit.cli, normxlogit.training, normxlogit.common.outputs; "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_lazy_package_keeps_every_public_name():
    assert set(normxlogit.__all__) <= set(dir(normxlogit))
    for name in normxlogit.__all__:
        assert getattr(normxlogit, name) is not None
    assert callable(normxlogit.explain) and normxlogit.explain.__name__ == "explain"
    assert normxlogit.metrics.aopc([1.0, 0.0]) == 0.5
    assert normxlogit.Explanation is normxlogit.explanations.explanation.Explanation
    with pytest.raises(AttributeError):
        normxlogit.no_such_name  # noqa: B018


def test_help_answers_without_errors():
    result = run_entry("--help")  # the installed entry point itself
    assert result.returncode == 0 and "explain" in result.stdout


# ------------------------------------------------------- 2: explain's outputs


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["-o", "p.txt"], ["--output p.txt", "suffix '.txt'", ".html", ".json", "--format"]),
        (["-o", "page.md"], ["page.md names a Markdown file, a format this command does not"]),
        (["-o", "noext"], ["without a suffix", "--format"]),
        (["-o", "existing"], ["existing is a folder", "file name inside it"]),
        (["-o", "missing/out.json"], ["folder missing does not exist", "mkdir -p missing"]),
        (["-o", "p.txt/out.json"], ["p.txt is a file, not a folder"]),
        (["--format", "terminal", "-o", "out.json"], ["writes no file", "--format json or html"]),
        (["-q"], ["--quiet", "add --output"]),
        (["--batch-size", "0"], ["--batch-size 0", "at least 1"]),
        (["--layer", "top"], ["--layer 'top'", "'all'"]),
    ],
)
def test_explain_refuses_outputs_before_any_work(workdir, args, fragments):
    before = snapshot(workdir)
    result = run("explain", "a fine film", *args, cwd=workdir)
    assert_refused(result, *fragments)
    assert result.stdout == ""  # not even the terminal view: nothing was explained
    assert snapshot(workdir) == before
    assert sorted(p.name for p in workdir.iterdir()) == ["existing", "p.txt", "table.md"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_explain_refuses_an_unwritable_folder(workdir):
    locked = workdir / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert_refused(run("explain", "x", "-o", "locked/out.json", cwd=workdir), "permission")
    finally:
        locked.chmod(0o700)
    assert list(locked.iterdir()) == []


def test_quiet_writes_only_the_file(tiny_classifier, tmp_path):
    output = tmp_path / "out.json"
    args = ["explain", "a gripping film", "-m", str(tiny_classifier), "-o", str(output), "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "gripping" not in result.stdout  # no terminal view
    assert json.loads(output.read_text())["tokens"][0] == "[CLS]"


def test_explicit_format_writes_any_suffix(tiny_classifier, tmp_path):
    output = tmp_path / "scores.txt"
    args = ["explain", "a film", "-m", str(tiny_classifier), "-o", str(output), "-f", "json"]
    result = CliRunner().invoke(app, [*args, "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads(output.read_text())["method"] == "normxlogit"


# --------------------------------------------------- 3: evaluate's outputs


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["-o", "p.txt"], ["--output p.txt", "suffix '.txt'", ".md", ".csv", "--format"]),
        (["-o", "existing"], ["existing is a folder"]),
        (["-o", "missing/t.md"], ["folder missing does not exist"]),
        (["--save", "p.txt"], ["--save 'p.txt'", "JSON", ".json"]),
        (["--save", "missing/r.json"], ["--save missing/r.json", "does not exist"]),
        (["--save", "table.json", "-o", "table.json"], ["both name table.json"]),
        (["--limit", "-1"], ["--limit -1", "at least 1", "leave it out"]),
        (["--limit", "0"], ["--limit 0", "at least 1"]),
        (["--batch-size", "0"], ["--batch-size 0"]),
    ],
)
def test_evaluate_checks_every_output_before_any_work(workdir, args, fragments):
    (workdir / "texts.txt").write_text("a fine film\n")
    before = snapshot(workdir)
    result = run("evaluate", "texts.txt", *args, cwd=workdir)
    assert_refused(result, *fragments)
    assert snapshot(workdir) == before


def test_evaluate_refuses_a_missing_data_file(workdir):
    assert_refused(run("evaluate", "nothing.tsv", cwd=workdir), "nothing.tsv does not exist")


def test_evaluate_protocol_values_are_typed(workdir):
    (workdir / "texts.txt").write_text("a fine film\n")
    before = snapshot(workdir)
    result = run(
        "evaluate", "texts.txt", "--protocol", "samples=abc", "-o", "table.md", cwd=workdir
    )
    assert_refused(result, "samples='abc'", "integer", "samples=15")
    assert snapshot(workdir) == before


def test_write_atomically_never_leaves_half_a_file(tmp_path, monkeypatch):
    target = tmp_path / "result.json"
    target.write_text("old\n")
    with pytest.raises(OutputPathError, match="is a folder"):
        write_atomically(tmp_path, "x")

    def broken_replace(source, destination):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OutputPathError, match="No space left on device"):
        write_atomically(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temporary left


def test_explanation_save_refuses_a_folder(tmp_path):
    from normxlogit.explanations.explanation import Explanation

    explanation = Explanation("a", ["a"], np.zeros(1), ["x"], "x", {}, "random")
    with pytest.raises(OutputPathError):
        explanation.save(tmp_path)


# ------------------------------------------------------------ 4: targets


def test_a_number_label_is_a_name_for_classifiers(tiny_classifier, tmp_path):
    output = tmp_path / "out.json"
    output.write_text("before\n")
    result = run("explain", "a film", "-m", str(tiny_classifier), "--label", "1", "-o", str(output))
    assert_refused(result, "unknown label '1'", "neg, neutral, pos", "--label-id 1")
    assert output.read_text() == "before\n"


def test_label_id_is_the_explicit_index(tiny_classifier):
    args = ["explain", "a film", "-m", str(tiny_classifier), "-f", "json", "--label-id", "2"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["targets"] == ["pos"]


def test_language_model_label_is_a_token_and_label_id_a_vocabulary_id(tiny_causal_lm):
    tokenizer = fresh_tokenizer()
    result = run(
        "explain", "the capital is", "-m", str(tiny_causal_lm), "-f", "json", "--label", "4"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["targets"] == ["4"]  # the token "4", never id 4
    args = ["explain", "the capital is", "-m", str(tiny_causal_lm), "-f", "json"]
    result = CliRunner().invoke(app, [*args, "--label", "4", "--label-id", "4"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["targets"] == ["4", tokenizer.convert_ids_to_tokens(4)]


@pytest.fixture(scope="module")
def loaded_classifier(tiny_classifier):
    return normxlogit.load(str(tiny_classifier))


@pytest.mark.parametrize("target", [1.0, True, [0, 1.5], [], {"neg": 1}, b"neg"])
def test_python_targets_that_mean_nothing_are_refused(loaded_classifier, target):
    model = loaded_classifier
    with pytest.raises(InvalidInputError) as caught:
        model.explain("a film", target=target)
    assert type(caught.value) is InvalidInputError
    assert "label name" in str(caught.value) and "an int" in str(caught.value)


def test_python_int_targets_are_indices_and_strings_names(loaded_classifier):
    model = loaded_classifier
    assert model.explain("a film", target=np.int64(2)).targets == ["pos"]
    assert model.explain("a film", target=[2, "neg"]).targets == ["pos", "neg"]
    with pytest.raises(InvalidInputError, match="an int in Python, --label-id 1"):
        model.explain("a film", target="1")


# ------------------------------------------------- 5: option values, typed


@pytest.mark.parametrize(
    ("options", "fragments"),
    [
        ({"steps": "abc"}, ["steps='abc'", "integer (int)", "steps=50"]),
        ({"steps": 1.5}, ["steps=1.5", "integer (int)"]),
        ({"steps": True}, ["steps=True", "integer (int)"]),
        ({"steps": 0}, ["steps=0", "at least 1"]),
        ({"internal_batch_size": "many"}, ["internal_batch_size='many'", "int", "none"]),
    ],
)
def test_get_method_checks_option_types(options, fragments):
    with pytest.raises(InvalidOptionError) as caught:
        get_method("integrated_gradients", **options)
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_get_method_converts_text_to_the_declared_type():
    method = get_method("integrated_gradients", steps="20", internal_batch_size="none")
    assert method.steps == 20 and method.internal_batch_size is None
    assert get_method("alti", rollout="false").rollout is False
    assert get_method("grad_ellm", aggregate_layers="all").aggregate_layers == "all"
    assert get_method("grad_ellm", aggregate_layers="4").aggregate_layers == 4
    assert get_method("lime", kernel_width="0.5").kernel_width == 0.5
    with pytest.raises(InvalidOptionError, match="rollout='maybe' must be true or false"):
        get_method("alti", rollout="maybe")


def test_protocol_with_options_checks_types():
    protocol = normxlogit.Protocol().with_options(samples="5", ratios="[0.2,0.5]")
    assert protocol.samples == 5 and protocol.ratios == (0.2, 0.5)
    with pytest.raises(InvalidOptionError, match="samples='abc' must be an integer"):
        normxlogit.Protocol().with_options(samples="abc")
    with pytest.raises(InvalidOptionError, match="step='half' must be a number"):
        normxlogit.Protocol().with_options(step="half")


def test_method_option_type_errors_are_one_line(workdir):
    before = snapshot(workdir)
    args = ["explain", "x", "--method", "integrated_gradients", "-o", "out.json"]
    result = run(*args, "--option", "steps=abc", cwd=workdir)
    assert_refused(result, "steps='abc'", "integer")
    result = CliRunner().invoke(app, [*args[:4], "--option", "steps=1.5", "-f", "json"])
    assert result.exit_code == 2 and "steps='1.5' must be an integer" in result.stderr
    assert snapshot(workdir) == before


# ------------------------------------------------ 6: input files and stdin


def test_a_blank_line_in_the_input_is_refused_with_its_number(workdir):
    (workdir / "texts.txt").write_text("first\nsecond\n   \nfourth\n")
    before = snapshot(workdir)
    result = run("explain", "--input", "texts.txt", "-o", "out.json", cwd=workdir)
    assert_refused(result, "texts.txt, line 3 is blank", "remove the blank lines")
    assert snapshot(workdir) == before
    result = run("explain", "-f", "json", stdin=b"first\n\nthird\n")
    assert_refused(result, "standard input, line 2 is blank")


def test_input_that_is_not_utf8_is_one_line(workdir):
    (workdir / "latin.txt").write_bytes("fine\ncaf\xe9 cr\xe8me\n".encode("latin-1"))
    result = run("explain", "--input", "latin.txt", "-f", "json", cwd=workdir)
    assert_refused(result, "latin.txt is not UTF-8", "line 2", "re-encode", "iconv")
    result = run("explain", "-f", "json", stdin="caf\xe9\n".encode("latin-1"))
    assert_refused(result, "standard input is not UTF-8", "iconv")


def test_input_must_be_a_file(workdir):
    assert_refused(run("explain", "--input", "existing", cwd=workdir), "is a folder")
    assert_refused(run("explain", "--input", "none.txt", cwd=workdir), "does not exist")


# ---------------------------------------------------------------- 1: train


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--train-size", "0"], ["--train-size 0", "at least 1", "leave it out"]),
        (["--epochs", "0"], ["--epochs 0", "greater than 0"]),
        (["--epochs", "-1"], ["--epochs -1", "greater than 0"]),
        (
            ["--output", str(BUILTIN / "minilm-sst2")],
            ["inside the installed", "--overwrite-builtin"],
        ),
        (["--output", str(BUILTIN.parent)], ["inside the installed"]),
        (["--overwrite-builtin", "--output", "mine"], ["leave out --output"]),
        (["--output", "p.txt"], ["p.txt is a file"]),
        (["--output", "notes"], ["holds files but no normxlogit.json", "new or empty folder"]),
    ],
)
def test_train_refuses_before_any_work(workdir, args, fragments):
    (workdir / "notes").mkdir()
    (workdir / "notes" / "todo.md").write_text("mine\n")
    before, shipped = snapshot(workdir), snapshot(BUILTIN)
    assert_refused(run("train", "sst2", *args, cwd=workdir), *fragments)
    assert snapshot(workdir) == before
    assert snapshot(BUILTIN) == shipped


def test_train_refuses_an_unknown_task(workdir):
    said = run("train", "imdb", cwd=workdir)
    assert_refused(said, "no built-in model to train named 'imdb'", "sst2, stsb")


@pytest.fixture
def tiny_training(tmp_path_factory, monkeypatch):
    """train() on a tiny BERT and six sentences: the real loop, writing and progress."""
    base = tmp_path_factory.mktemp("tiny-base")
    torch.manual_seed(0)
    T.BertModel(T.BertConfig(vocab_size=len(fresh_tokenizer()), **SMALL)).save_pretrained(base)
    fresh_tokenizer().save_pretrained(base)
    monkeypatch.setattr("normxlogit.builtin.sources.minilm_dir", lambda: base)
    words = ["good", "bad", "fine", "dull"]
    sentences = [Example(f"a {word} film", i % 2) for i, word in enumerate(words)]
    monkeypatch.setitem(training.READERS, "sst2", lambda split: sentences)


def test_train_writes_a_user_folder_by_default(tiny_training, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shipped = snapshot(BUILTIN)
    args = ["train", "sst2", "--train-size", "3", "--epochs", "2"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    folder = tmp_path / "normxlogit-sst2"
    manifest = json.loads((folder / "normxlogit.json").read_text())
    assert manifest["train_examples"] == 3 and manifest["recipe"]["epochs"] == 2.0
    assert {p.name for p in folder.iterdir()} == {
        "adapter_config.json",
        "adapter_model.safetensors",
        "normxlogit.json",
    }
    assert [p.name for p in tmp_path.iterdir()] == ["normxlogit-sst2"]  # no temporary left
    umask = os.umask(0)
    os.umask(umask)
    assert {p.stat().st_mode & 0o777 for p in folder.iterdir()} == {0o666 & ~umask}
    assert folder.stat().st_mode & 0o777 == 0o777 & ~umask
    assert "2/2" in result.stderr and "wrote normxlogit-sst2" in result.stderr  # progress, log
    assert snapshot(BUILTIN) == shipped
    assert json.loads(result.stdout) == manifest["dev_metrics"]


def test_train_replaces_an_adapter_only_when_the_new_one_is_complete(
    tiny_training, tmp_path, monkeypatch
):
    import peft

    monkeypatch.chdir(tmp_path)
    args = ["train", "sst2", "--train-size", "2", "--epochs", "1", "-o", "mine"]
    assert CliRunner().invoke(app, args).exit_code == 0
    first = snapshot(tmp_path / "mine")

    def full_disk(self, folder, **kwargs):
        (Path(folder) / "adapter_model.safetensors").write_bytes(b"half")
        raise OSError(28, "No space left on device")

    again = [*args, "--seed", "5"]
    with monkeypatch.context() as patch:
        patch.setattr(peft.PeftModel, "save_pretrained", full_disk)
        result = CliRunner().invoke(app, again)
    assert result.exit_code == 2 and "No space left on device" in result.stderr
    assert snapshot(tmp_path / "mine") == first  # the previous adapter is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]  # no temporary left

    assert CliRunner().invoke(app, again).exit_code == 0  # a complete one replaces it
    assert json.loads((tmp_path / "mine" / "normxlogit.json").read_text())["recipe"]["seed"] == 5
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]


def test_python_train_checks_its_settings_first(tmp_path):
    with pytest.raises(InvalidOptionError, match="train_size=0"):
        training.train("sst2", tmp_path / "x", {"train_size": 0})
    with pytest.raises(InvalidOptionError, match="epochs='many' must be a number"):
        training.train("sst2", tmp_path / "x", {"epochs": "many"})
    with pytest.raises(OutputPathError, match="--overwrite-builtin"):
        training.train("sst2", BUILTIN / "minilm-stsb")
    assert list(tmp_path.iterdir()) == []
