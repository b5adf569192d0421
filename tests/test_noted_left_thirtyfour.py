"""What earlier stops noted and left, worked through: a version flag, training outputs and
data that could only surprise, scores that rank nothing shown without a word, tables that
bolded one of several values printed alike, LaTeX that printed other glyphs, the page's
warnings in Python's words, and weights a shallower config.json dropped silently."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import normxlogit
from normxlogit import training
from normxlogit.bench.report import RenderedTable, _tex
from normxlogit.bench.spec import TableSpec
from normxlogit.common.errors import NormXLogitWarning, OutputPathError
from normxlogit.explaining.unrankable import check_unrankable, one_warning_per_method
from normxlogit.methods import get_method
from normxlogit.serve.jobs import for_the_page

from .conftest import build_model, explainable, fresh_tokenizer

ENTRY = Path(sys.executable).with_name("normxlogit")


def _ours(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]


def test_version_flag_prints_the_installed_version():
    result = subprocess.run([str(ENTRY), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert result.stdout.strip() == f"normxlogit {normxlogit.__version__}"


@pytest.mark.parametrize("name", ["o1.safetensors", "adapter.bin", "out.JSON"])
def test_train_output_named_as_a_file_is_refused_before_work(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputPathError) as caught:
        training.check_output("minilm-sst2", name, False)
    message = str(caught.value)
    assert f"--output {name} names a" in message and "training writes a folder" in message
    assert f"such as {Path(name).stem}" in message
    assert not (tmp_path / name).exists()
    training.check_output("minilm-sst2", "model.v2", False)  # a dotted folder name is fine


def test_training_on_one_label_says_the_model_can_learn_only_that(tmp_path):
    said: list[str] = []
    training.train(
        "minilm-sst2",
        tmp_path / "one",
        overrides={"train_size": 1, "eval_size": 2},
        log=said.append,
    )
    warned = [line for line in said if line.startswith("warning: all 1 training examples")]
    assert len(warned) == 1
    assert "can learn only that label; raise --train-size" in warned[0]


def test_scores_equal_on_every_token_are_said_with_the_option_that_made_them():
    model = explainable("bert", "classification")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = model.explain(
            ["a fine movie with great acting", "dull"], "value_zeroing", min_distance=0.99
        )
    assert np.all(made[0].scores == made[0].scores.flat[0])
    said = [m for m in _ours(caught) if "same score" in m]
    assert said == [
        "method 'value_zeroing' gave every token the same score on 1 of 2 texts (with "
        "min_distance=0.99), which ranks no tokens (evaluate flags these explanations as "
        "constant)"
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.explain(["a fine movie with great acting", "dull"], "value_zeroing")
    assert not [m for m in _ours(caught) if "same score" in m]  # its default ranks tokens


def test_nan_scores_of_a_built_in_method_are_said_naming_its_changed_options():
    model = explainable("bert", "classification")
    method = get_method("reagent", on_no_convergence="nan", max_probe_steps=1)
    made = model.explain("a fine movie", "normxlogit")
    broken = dataclasses.replace(made, scores=np.full_like(made.scores, np.nan))
    with warnings.catch_warnings(record=True) as caught, one_warning_per_method():
        warnings.simplefilter("always")
        check_unrankable(method, [broken], "attribute()")
        check_unrankable(method, [broken], "attribute()")  # once per explain call
    said = _ours(caught)
    assert len(said) == 1
    assert said[0].startswith("method 'reagent' gave NaN or infinite scores (with ")
    assert "on_no_convergence='nan'" in said[0] and "max_probe_steps=1" in said[0]
    assert said[0].endswith("explain with its default options (see `normxlogit methods reagent`)")


def test_a_table_marks_no_best_among_values_printed_alike():
    spec = TableSpec(title="t", metric="comp_cd")
    columns = [("sst2", "m", "comp_cd")]

    def ranks(values):
        cells = {(row, 0): value for row, value in values.items()}
        return RenderedTable(spec, columns, list(values), cells, {}, {}, {}, {}).ranks()

    assert ranks({"a": -0.0000004, "b": -0.0000001, "c": 0.0000002}) == {}  # all "-0.000"/"0.000"
    assert ranks({"a": 0.1231, "b": 0.1234, "c": 0.2}) == {("c", 0): 1, ("a", 0): 2, ("b", 0): 2}


def test_latex_prints_angle_brackets_and_backticks_as_written():
    assert (
        _tex("<mask> `x` >")
        == r"\textless{}mask\textgreater{} \textasciigrave{}x\textasciigrave{} \textgreater{}"
    )


def test_the_page_names_its_own_control_in_the_evaluated_column_warning():
    library = (
        "1 of 1 texts (text 1) are predicted as a label none of their explanation's columns "
        "explains, so their first column is evaluated ('neutral'), not the prediction's; put "
        "the label to evaluate first in target=, or explain them for their prediction"
    )
    shown = for_the_page(library)
    assert "target=" not in shown
    assert shown.endswith("choose the label to evaluate under Explain, or explain the prediction")


def test_weights_with_more_blocks_than_the_config_says_are_loaded_with_a_warning(tmp_path):
    folder = tmp_path / "cut"
    build_model("bert", "classification").save_pretrained(folder)
    fresh_tokenizer().save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] = 1
    (folder / "config.json").write_text(json.dumps(config))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = normxlogit.load(str(folder))
    said = [m for m in _ours(caught) if "blocks" in m]
    assert said == [
        f"model '{folder}': its weights hold 2 blocks but its config.json says "
        "num_hidden_layers=1, so only the first 1 are loaded; if that is not meant, the "
        "config.json does not fit the weights: restore it or save the model again"
    ]
    assert model.num_layers == 1


def test_generation_steps_against_a_contrast_prompt_are_refused_for_pi_soft_by_step():
    """Refused (the scores explain the difference under two prompts), and named by the
    step and its generation, not as "text 0" of evaluate's flattened steps."""
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.common.numbering import texts_named
    from normxlogit.evaluation.generations import evaluate_generations

    model = explainable("llama", "causal_lm")
    made = model.explain(
        "The capital of France is",
        generate=True,
        max_new_tokens=3,
        contrast_input="The capital of Spain is",
    )
    for given, named in (([made], "step 0 was"), ([made, made], "step 0 of generation 0 was")):
        with pytest.raises(InvalidInputError) as caught:
            evaluate_generations(model, given, every=1)
        assert f"the 'normxlogit' explanation of {named} made against a contrast input" in str(
            caught.value
        )
        assert "pi_soft_nc, pi_soft_ns perturb the text alone" in str(caught.value)
    with (
        texts_named(lambda i: f"line {i + 1} of p.txt"),
        pytest.raises(InvalidInputError) as caught,
    ):
        evaluate_generations(model, [made, made], every=1)
    assert "explanation of step 0 of line 1 of p.txt was made" in str(caught.value)


def test_evaluate_generations_is_importable_where_the_guide_names_it():
    from normxlogit.evaluation.generations import evaluate_generations

    assert normxlogit.evaluate_generations is evaluate_generations
    assert "evaluate_generations" in normxlogit.__all__
