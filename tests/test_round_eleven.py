"""Round eleven of new-user probes (issue 41): each test is one failure that round found,
with tiny models."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from normxlogit import evaluate
from normxlogit.cli import app
from normxlogit.common.counts import integer_text
from normxlogit.common.errors import InvalidInputError

from .conftest import explainable, sharp_model

DIGITS = ["²", "①", "³", "٣"]  # str.isdigit() (or isdecimal) holds; int() refuses some


@pytest.fixture(scope="module")
def model():
    return sharp_model()


@pytest.fixture(scope="module")
def decoder():
    return explainable("llama", "causal_lm")


def test_only_ascii_digits_spell_an_index():
    assert [integer_text(t) for t in ("2", " -3 ", "²", "①", "2.0", "")] == [
        2,
        -3,
        None,
        None,
        None,
        None,
    ]


@pytest.mark.parametrize("digit", DIGITS)
def test_a_label_contrast_or_layer_in_other_digits_is_refused_in_one_line(model, digit):
    """E01: '²' passed str.isdigit() and crashed int() (ValueError) everywhere."""
    with pytest.raises(InvalidInputError, match="unknown label"):
        model.explain("Good fun.", target=digit)
    with pytest.raises(InvalidInputError, match="unknown label"):
        model.explain("Good fun.", target=0, contrast=digit)
    with pytest.raises(InvalidInputError, match="does not exist"):
        model.explain("Good fun.", layer=digit)
    explained = {"g": model.explain(["Good fun."], "gradient_x_input")}
    with pytest.raises(InvalidInputError, match="unknown label"):
        evaluate(model, explained, ["comp_acc"], labels=[digit])


def test_the_cli_refuses_other_digits_for_a_layer_and_a_data_label(tmp_path):
    """E01 on the command line: --layer '²' and a data file's label '²'."""
    ran = CliRunner().invoke(app, ["explain", "Good fun.", "--layer", "²"])
    assert ran.exit_code != 0 and "--layer '²' must be a layer index" in ran.output
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"text": "Good fun.", "label": "²"}) + "\n")
    ran = CliRunner().invoke(
        app, ["evaluate", str(data), "--method", "normxlogit", "--metric", "comp_acc"]
    )
    assert ran.exit_code != 0 and "unknown label '²'" in ran.output
    assert "Traceback" not in ran.output


@pytest.mark.parametrize("contrast", [torch.tensor(5), np.array(5)], ids=["tensor", "array"])
def test_a_zero_dimensional_contrast_is_refused_as_the_int_it_holds(decoder, contrast):
    """E04: a 0-d tensor raised TypeError inside the contrast check."""
    with pytest.raises(InvalidInputError, match=r"the contrast is the int 5; .*\[5\]"):
        decoder.explain("Rome is in", generate=True, max_new_tokens=2, contrast=contrast)


def test_a_continuation_of_numpy_ids_is_token_ids(decoder):
    """E05: [np.int64(8), np.int64(9)] was "1 prompts but continuation is a list of 2"."""
    plain = decoder.explain("Rome is in", continuation=[8, 9])
    numpy = decoder.explain("Rome is in", continuation=[np.int64(8), np.int64(9)])
    assert numpy.tokens == plain.tokens
    np.testing.assert_allclose(numpy.scores, plain.scores)


def test_a_prompt_file_with_lone_cr_ends_and_a_queue_with_a_bom_are_read(tmp_path):
    """Kin of E11/E12: the prompt reader split at LF only, and the GPU queue's TOML
    reader did not take a byte-order mark."""
    from normxlogit.bench.queue import load_queue
    from normxlogit.data.prompts import _prompt_lines

    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Tell me a story.\rWhy is the sky blue?\r")
    assert [e.text for e in _prompt_lines(prompts)] == [
        "Tell me a story.",
        "Why is the sky blue?",
    ]
    experiments = Path(__file__).parents[1] / "experiments"
    text = (experiments / "gpu-queue.toml").read_text()
    text = re.sub(  # the configs and stores where they are
        r'^(config|store|continuations) = "', rf'\1 = "{experiments}/', text, flags=re.M
    )
    queue = tmp_path / "queue.toml"
    queue.write_text("\ufeff" + text)
    assert load_queue(queue).entries == load_queue(experiments / "gpu-queue.toml").entries


@pytest.mark.parametrize("name", [" g ", "g\u200b", "g\u00a0h"])
def test_a_method_name_a_saved_result_could_not_load_is_refused_before_work(model, name):
    """E08's kin: evaluate took ' g ' or 'g\\u200b' as a method's name and saved results
    that load then refused."""
    explained = {name: model.explain(["Good fun."], "gradient_x_input")}
    with pytest.raises(InvalidInputError, match="method name .*write it as"):
        evaluate(model, explained, ["comp_cd"])


def test_a_bench_method_label_a_store_could_not_report_is_refused(tmp_path):
    from normxlogit.bench import load_config

    config = tmp_path / "c.toml"
    config.write_text(
        'metrics = ["comp_cd"]\n[[methods]]\nname = "normxlogit"\nlabel = "NX\\u200b"\n'
        '[[experiments]]\nmodel = "minilm-sst2"\ndataset = "sst2"\n'
    )
    with pytest.raises(InvalidInputError, match="method label 'NX.u200b', holding U.200B"):
        load_config(config)
