"""Round twelve of new-user probes (issue 41): each test is one failure that round found,
with tiny models."""

from __future__ import annotations

import codecs
import warnings

import pytest

from normxlogit import evaluate
from normxlogit.bench import load_config
from normxlogit.common.errors import InvalidFileError, InvalidInputError, OutputPathError
from normxlogit.common.fields import name_problem
from normxlogit.data import read_examples
from normxlogit.sanity import parameter_randomization

from .conftest import sharp_model

TEXTS = ["Good fun here today.", "Bad end there now."]


@pytest.fixture(scope="module")
def model():
    return sharp_model()


@pytest.fixture(scope="module")
def result(model):
    return evaluate(model, {"g": model.explain(TEXTS, "gradient_x_input")}, ["comp_cd"])


@pytest.mark.parametrize("name", ["cafe\u0301", "g\u2800"])
def test_names_that_look_like_another_are_refused(model, name):
    """R01: 'café' with a combining accent beside the composed one, and a blank Braille
    character, made two rows a reader cannot tell apart."""
    assert name_problem(name) is not None and name_problem("café") is None
    with pytest.raises(InvalidInputError, match="method name"):
        evaluate(model, {name: model.explain(TEXTS, "gradient_x_input")}, ["comp_cd"])


def test_sanity_refuses_a_name_its_csv_could_not_load_before_any_work(model):
    """R02: parameter_randomization refused 'g\\u200b' only after all its work."""
    with pytest.raises(InvalidInputError, match=r"methods: the name 'g\\u200b'"):
        parameter_randomization(model, TEXTS, {"g\u200b": "gradient_x_input"})


@pytest.mark.parametrize("write", ["result", "summary_json", "summary_csv", "sanity"])
def test_a_trailing_slash_names_a_folder_for_every_python_save(result, tmp_path, write):
    """R03: Path() dropped the slash, so r.json/ was written as the file r.json."""
    import pandas as pd

    from normxlogit.sanity import SanityResult

    row = {"method": "g", "mode": "cascading", "step": 0, "randomized": "l0", "instance": 0}
    frame = pd.DataFrame([row | {"target": "x", "spearman": 0.5, "top_k": 0.5}])
    saves = {
        "result": lambda p: result.save(p),
        "summary_json": lambda p: result.summary().to_json(p),
        "summary_csv": lambda p: result.summary().to_csv(p),
        "sanity": lambda p: SanityResult(frame).save(p),
    }
    suffix = ".csv" if write in ("summary_csv", "sanity") else ".json"
    target = f"{tmp_path}/out{suffix}/"
    with pytest.raises(OutputPathError, match="ends in /, which names a folder"):
        saves[write](target)
    assert not (tmp_path / f"out{suffix}").exists()


@pytest.mark.parametrize(
    "options", [{"path_or_buf": "s.json"}, {"compression": "gzip"}, {"mode": "a"}]
)
def test_summary_to_csv_refuses_options_that_bypass_its_checked_write(result, options):
    """R04: path_or_buf= wrote CSV into s.json; compression= wrote plain text."""
    with pytest.raises(InvalidInputError, match=f"to_csv: {next(iter(options))}= is not"):
        result.summary().to_csv(**options)


def test_underscores_and_other_digits_are_no_numbers_in_data_files(tmp_path):
    """R05: int() read a label '0_1' as 1 and an evidence cell '0_2' as word 2."""
    data = tmp_path / "d.tsv"
    data.write_text("text\tlabel\tevidence\ngood fun here today\t0_1\t1\n")
    assert read_examples(data)[0].label == "0_1"  # a name, never the index 1
    data.write_text("text\tlabel\tevidence\ngood fun here today\t1\t0_2\n")
    with pytest.raises(
        InvalidFileError,
        match=r"evidence\[0\] is 0_2, not a whole word index; give whole word indices",
    ):
        read_examples(data)


def test_a_paper_number_no_cell_would_show_is_refused(tmp_path):
    """R06: a paper label with a typo (or a zero-width character) vanished from the
    report without a word."""
    body = (
        'metrics = ["comp_cd"]\nmethods = ["gradient_x_input", "random"]\n'
        '[[experiments]]\nmodel = "minilm-sst2"\ndataset = "sst2"\n'
        '[[tables]]\ntitle = "T"\nmetric = "comp_cd"\n'
        'paper = {{ "{key}" = {{ "{label}" = 0.5 }} }}\n'
    )
    config = tmp_path / "c.toml"
    config.write_text(body.format(key="minilm-sst2", label="gradient_x_input"))
    load_config(config)
    config.write_text(body.format(key="minilm-sst2", label="gradient_x_inptu"))
    with pytest.raises(InvalidInputError, match="'gradient_x_inptu', which is no method label"):
        load_config(config)
    config.write_text(body.format(key="minilm-sst3", label="gradient_x_input"))
    with pytest.raises(InvalidInputError, match="paper names 'minilm-sst3', which is no"):
        load_config(config)


def test_a_utf16_file_is_named_as_utf16_with_the_right_fix(tmp_path):
    """R07: UTF-16 files were told to convert with `iconv -f latin1` (garbled), and a
    UTF-16 bench config got no hint at all."""
    data = tmp_path / "d.txt"
    data.write_bytes(codecs.BOM_UTF16_LE + "Good fun.\n".encode("utf-16-le"))
    with pytest.raises(InvalidFileError, match="is UTF-16 text .*iconv -f utf-16 -t utf-8"):
        read_examples(data)
    config = tmp_path / "c.toml"
    config.write_bytes(codecs.BOM_UTF16_LE + 'metrics = ["comp_cd"]\n'.encode("utf-16-le"))
    with pytest.raises(InvalidFileError, match="is UTF-16 text"):
        load_config(config)


def test_the_unperturbed_warning_says_what_each_metric_does(model):
    """R08: "ratios k that perturb no token ... suff_cd perturb every token": the
    opening contradicted sufficiency, and the verb did not agree."""
    from normxlogit import Protocol

    explained = {"g": model.explain(["Good"], "gradient_x_input")}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluate(model, explained, ["suff_cd"], protocol=Protocol(ratios=(0.1, 0.2)))
    (message,) = [str(w.message) for w in caught if "int(n·k) = 0" in str(w.message)]
    assert "ratios k at which int(n·k) = 0" in message
    assert "suff_cd perturbs every token" in message and "perturb no token" not in message
