"""``--option`` on the commands that take several methods (``evaluate``, ``sanity``):
``NAME=VALUE`` for every method that takes it, ``METHOD.NAME=VALUE`` for one; and the
saved evaluation keeps each method's settings, so a file says what made its numbers."""

from __future__ import annotations

import json

import pytest

from normxlogit import EvaluationResult

from .conftest import invoke_in


def _said(result) -> str:
    return " ".join(result.output.split())


@pytest.fixture
def texts(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("the cat sat on the mat\na dog ran in the park today\n")
    return path


def _evaluate(tmp_path, model, texts, *args):
    return invoke_in(
        tmp_path,
        "evaluate",
        str(texts),
        "-m",
        str(model),
        "--method",
        "integrated_gradients",
        "--method",
        "lime",
        "--metric",
        "comp_cd",
        *args,
    )


def test_a_bare_option_reaches_every_method_that_takes_it_and_a_named_one_its_method(
    tmp_path, tiny_classifier, texts
):
    args = ["--option", "steps=4", "--option", "lime.samples=12", "--option", "samples=30"]
    result = _evaluate(tmp_path, tiny_classifier, texts, *args, "--save", "r.json", "-q")
    assert result.exit_code == 0, _said(result)
    saved = json.loads((tmp_path / "r.json").read_text())["method_settings"]
    assert saved["integrated_gradients"]["steps"] == 4
    assert saved["lime"]["samples"] == 12  # the method's own setting wins over the bare one
    loaded = EvaluationResult.load(tmp_path / "r.json")
    assert loaded.method_settings == saved


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("nosuch=1", "none of the methods (integrated_gradients, lime) takes an option 'nosuch'"),
        ("ig.steps=1", "'ig' is not one of the methods (integrated_gradients, lime)"),
        ("lime.steps=1", "method 'lime' has no option steps"),
        ("seed=3", "the methods are seeded by --seed"),
        ("steps", "must look like name=value"),
    ],
)
def test_an_option_nobody_can_take_is_refused_in_one_line(
    tmp_path, tiny_classifier, texts, option, expected
):
    result = _evaluate(tmp_path, tiny_classifier, texts, "--option", option)
    said = _said(result)
    assert result.exit_code == 2, said
    assert expected in said
    assert "Traceback" not in said


def _sanity(tmp_path, model, texts, *args):
    common = ["-m", str(model), "--method", "integrated_gradients", "--option", "steps=3"]
    return invoke_in(tmp_path, "sanity", str(texts), *common, *args)


def test_sanity_passes_options_to_its_methods(tmp_path, tiny_classifier, texts):
    result = _sanity(tmp_path, tiny_classifier, texts, "--option", "nosuch=1")
    said = _said(result)
    assert result.exit_code == 2, said
    assert "none of the methods (integrated_gradients) takes an option 'nosuch'" in said
    result = _sanity(tmp_path, tiny_classifier, texts, "-o", "s.csv")
    assert result.exit_code == 0, _said(result)
    assert (tmp_path / "s.csv").exists()


def test_a_saved_result_with_malformed_method_settings_is_refused(tmp_path, tiny_classifier, texts):
    from normxlogit.common.errors import InvalidFileError

    result = _evaluate(tmp_path, tiny_classifier, texts, "--save", "r.json", "-q")
    assert result.exit_code == 0, _said(result)
    path = tmp_path / "r.json"
    data = json.loads(path.read_text())
    data["method_settings"] = {"lime": "samples=3"}
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match="'method_settings' must be an object"):
        EvaluationResult.load(path)


@pytest.mark.parametrize("name", [5, [], {"a": 1}])
def test_a_saved_result_whose_model_is_no_name_is_refused(tmp_path, tiny_classifier, texts, name):
    from normxlogit.common.errors import InvalidFileError

    result = _evaluate(tmp_path, tiny_classifier, texts, "--save", "r.json", "-q")
    assert result.exit_code == 0, _said(result)
    path = tmp_path / "r.json"
    data = json.loads(path.read_text())
    data["model"] = None  # no name: read as unnamed
    path.write_text(json.dumps(data))
    assert EvaluationResult.load(path).model == ""
    data["model"] = name
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match="'model' must be the model's name"):
        EvaluationResult.load(path)
