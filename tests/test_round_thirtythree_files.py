"""Round 33: output names over the file-name limit, and model folders whose config.json no
longer fits the weights.

- ``test_long_output_name_refused``: a 300-character ``explain -o`` name is one
  line naming the flag and the limit (was an OSError traceback).
- ``test_train_name_too_long_for_staging_refused``: ``train -o`` with a 250-character name
  is refused before training (its staging folder ``.NAME.partial-XXXXXXXX`` would not fit).
- ``test_config_label_added_refused``: a third label in config.json: one line naming the
  classifier's shapes (was transformers' RuntimeError pointing at a hidden report).
- ``test_config_bad_activation_refused``: a misspelt hidden_act (was a KeyError).
- ``test_config_more_layers_refused``: a layer the weights lack is refused, not random.
- ``test_added_head_warns``: a bare encoder with ``head="classification"`` loads, with a
  warning that the head is untrained.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import transformers as T

import normxlogit
from normxlogit.common.errors import NormXLogitWarning, UnknownModelError

from .conftest import invoke_in, saved_tiny


@pytest.fixture(scope="module")
def classifier(tmp_path_factory) -> Path:
    return saved_tiny(tmp_path_factory.mktemp("r33") / "clf", "bert", "classification")


def _edited(source: Path, folder: Path, **changes) -> Path:
    """A copy of the model ``source`` whose config.json has ``changes``."""
    import shutil

    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_long_output_name_refused(tmp_path, classifier):
    name = "n" * 300
    result = invoke_in(
        tmp_path, "explain", "a good film", "-m", str(classifier), "-o", f"{name}.json"
    )
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert "--output" in result.output and "at most" in result.output


def test_train_name_too_long_for_staging_refused(tmp_path):
    result = invoke_in(tmp_path, "train", "sst2", "-o", "n" * 250, "--train-size", "2")
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert "--output" in result.output and "at most" in result.output


def test_config_label_added_refused(tmp_path, classifier):
    labels = {"0": "a", "1": "b", "2": "c", "3": "d"}
    folder = _edited(
        classifier, tmp_path / "m", id2label=labels, label2id={v: int(k) for k, v in labels.items()}
    )
    with pytest.raises(UnknownModelError, match="classifier.*config.json does not fit"):
        normxlogit.load(str(folder))


def test_config_bad_activation_refused(tmp_path, classifier):
    folder = _edited(classifier, tmp_path / "m", hidden_act="bogus")
    with pytest.raises(UnknownModelError, match="'bogus'.*restore it"):
        normxlogit.load(str(folder))


def test_config_more_layers_refused(tmp_path, classifier):
    layers = json.loads((classifier / "config.json").read_text())["num_hidden_layers"]
    folder = _edited(classifier, tmp_path / "m", num_hidden_layers=layers + 1)
    with pytest.raises(
        UnknownModelError, match=f"layer.{layers}.*no weights|no weights.*layer.{layers}"
    ):
        normxlogit.load(str(folder))


def test_added_head_warns(tmp_path, classifier):
    bare = T.BertForSequenceClassification.from_pretrained(classifier).bert
    bare.save_pretrained(tmp_path / "bare")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / "bare" / name).write_bytes((classifier / name).read_bytes())
    with pytest.warns(NormXLogitWarning, match="untrained"):
        normxlogit.load(str(tmp_path / "bare"), head="classification")
