"""Round twenty-six of new-user probes, probe a: ``normxlogit train`` of a regressor with a
non-finite gold score wrote an all-NaN adapter and ``NaN`` into normxlogit.json (P01); an
experiment's ``options = { limit | split | path | name }`` gave a TypeError, and the refusal
of another option listed those keys as options (P02); train's missing-data message offered
``path=``, which train does not take (P03). Every refusal comes before training."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from normxlogit import training
from normxlogit.bench import load_config
from normxlogit.cli import app
from normxlogit.common.errors import InvalidInputError
from normxlogit.data import load_dataset

HEADER = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
PAIRS = [
    ("A plane is taking off.", "An air plane is taking off.", "5.000"),
    ("A man is playing a flute.", "A man plays a flute.", "3.800"),
    ("A cat sleeps.", "A dog runs.", "0.500"),
    ("A woman cuts an onion.", "A woman is slicing an onion.", "4.200"),
]


def _stsb(folder, scores=None, split="train"):
    """A tiny STS-B copy under ``folder``: train.tsv and dev.tsv, ``scores`` replacing the
    scores of ``split``."""
    (folder / "stsb").mkdir(parents=True, exist_ok=True)
    for name in ("train", "dev"):
        given = scores if name == split and scores else [s for *_, s in PAIRS]
        lines = [
            f"{i}\tmain\tx\t2012\t{i:04}\tnone\tnone\t{a}\t{b}\t{score}\n"
            for i, ((a, b, _), score) in enumerate(zip(PAIRS, given, strict=True))
        ]
        (folder / "stsb" / f"{name}.tsv").write_text(HEADER + "".join(lines))
    return folder


def _train(tmp_path, monkeypatch, task="minilm-stsb"):
    monkeypatch.setenv("NORMXLOGIT_DATA", str(tmp_path / "data"))
    out = tmp_path / "out"
    args = ["train", task, "-o", str(out), "--train-size", "4", "--eval-size", "4"]
    result = CliRunner().invoke(app, [*args, "--epochs", "1"])
    assert not out.exists()  # refused before anything was written
    return result


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e400"])
@pytest.mark.parametrize("split", ["train", "dev"])
def test_p01_train_refuses_a_non_finite_score_with_file_and_line(
    tmp_path, monkeypatch, value, split
):
    scores = ["5.000", value, "0.500", "4.200"]
    _stsb(tmp_path / "data", scores, split)
    result = _train(tmp_path, monkeypatch)
    assert result.exit_code != 0
    text = " ".join(result.output.split())
    assert f"{split}.tsv, line 3: score {value} is not finite" in text, result.output
    assert "Traceback" not in result.output and "training minilm-stsb on" not in text


def test_p01_the_stsb_reader_refuses_it_too(tmp_path, monkeypatch):
    _stsb(tmp_path / "data", ["5", "4", "nan", "1"])
    monkeypatch.setenv("NORMXLOGIT_DATA", str(tmp_path / "data"))
    with pytest.raises(InvalidInputError, match=r"train\.tsv, line 4: score nan is not finite"):
        load_dataset("stsb", "train")
    assert [e.label for e in load_dataset("stsb", "dev")] == [5.0, 3.8, 0.5, 4.2]


def test_p01_a_non_finite_metric_is_recorded_as_null_with_a_warning():
    """A Pearson correlation can still be NaN (constant predictions or gold scores): the
    manifest holds null, standard JSON, and the log says why."""
    lines: list[str] = []
    kept = training._finite({"pearson": math.nan, "other": 0.5}, "dev", lines.append)
    assert kept == {"pearson": None, "other": 0.5}
    assert json.loads(json.dumps(kept, allow_nan=False)) == kept
    assert len(lines) == 1 and "dev pearson is nan" in lines[0] and "null" in lines[0]


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    ("option", "advice"),
    [
        ("limit = 2", "--limit"),
        ('split = "dev"', 'split = "..." beside dataset'),
        ('path = "x.tsv"', 'path = "..." beside dataset'),
        ('name = "sst2"', 'dataset = "..."'),
    ],
)
@pytest.mark.parametrize("dataset", ["sst2", "tellmewhy", "data.jsonl"])
def test_p02_own_keys_in_options_are_refused_at_load(
    tmp_path, tiny_classifier, option, advice, dataset
):
    (tmp_path / "data.jsonl").write_text('{"text": "a good film", "label": 1}\n')
    config = tmp_path / "c.toml"
    config.write_text(
        f"""metrics = ["comp_cd"]
methods = ["random"]
[[experiments]]
model = "{tiny_classifier}"
dataset = "{dataset}"
options = {{ {option} }}
"""
    )
    key = option.split()[0]
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    message = str(caught.value)
    assert f"experiment 1: {key} goes beside dataset, not in options" in message
    assert advice in message


def test_p02_an_unknown_option_says_where_split_limit_and_path_go(tmp_path):
    with pytest.raises(InvalidInputError) as caught:
        load_dataset("sst2", bogus=1)
    message = str(caught.value)
    assert "takes no option 'bogus'" in message and "(and split, limit, path)" not in message
    assert "beside dataset" in message and "not in options" in message
    data = tmp_path / "data.jsonl"
    data.write_text('{"text": "a good film", "label": 1}\n')
    with pytest.raises(InvalidInputError) as caught:
        load_dataset(str(data), bogus=1)
    message = str(caught.value)
    assert "pass limit= only" not in message and "limit = N beside dataset" in message


# ------------------------------------------------------------------ P03
def test_p03_train_names_the_data_folder_not_path(tmp_path, monkeypatch):
    (tmp_path / "data" / "sst2").mkdir(parents=True)
    (tmp_path / "data" / "sst2" / "train.tsv").write_text("sentence\tlabel\na good film\t1\n")
    result = _train(tmp_path, monkeypatch, "minilm-sst2")
    assert result.exit_code != 0
    text = " ".join(result.output.split())
    assert "sst2/dev.tsv not found" in text.replace("\\", "/"), result.output
    assert "path=" not in text and "$NORMXLOGIT_DATA" in text
    assert "train and dev splits of sst2" in text and "takes no path" in text
