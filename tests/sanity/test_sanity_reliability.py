"""Sanity checks under bad input, and no number that is quietly meaningless (issue 41):
the metrics re-explain exactly as the explanation was made, every target is compared, an
undefined similarity is n/a (not a failure), files are what their names say, and every
refusal is one clear line before any work."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import normxlogit
import normxlogit.sanity.metrics as sanity_metrics
import normxlogit.sanity.randomization as sanity_randomization
from normxlogit.cli import app
from normxlogit.common.errors import (
    InvalidInputError,
    NormXLogitWarning,
    OutputPathError,
    UnsupportedModelError,
)
from normxlogit.metrics import spearman
from normxlogit.sanity import (
    SanityResult,
    data_randomization,
    parameter_groups,
    parameter_randomization,
)
from normxlogit.sanity.metrics import explain_again

from ..cli.test_bad_inputs_cli import assert_refused, run
from ..conftest import explainable, sharp_model

TEXTS = ["a gripping film that never lets go", "dull and slow", "fine, if a little long"]
EDITED = ["a boring film that never lets go", "dull and fast", "fine, if a bit long"]
#: where no file can be created, whoever runs the tests (root included)
UNWRITABLE = Path("/proc")
needs_proc = pytest.mark.skipif(not UNWRITABLE.is_dir(), reason="needs Linux's /proc")


@contextlib.contextmanager
def _unchanged(model, groups, seed, init="model"):
    """A randomisation that changes nothing: every similarity must then be 1."""
    yield model


@pytest.fixture
def no_op(monkeypatch):
    monkeypatch.setattr(sanity_metrics, "randomized", _unchanged)
    monkeypatch.setattr(sanity_randomization, "randomized", _unchanged)


def _without(monkeypatch, module: str) -> None:
    """Make ``module`` look missing to ``importlib.util.find_spec``."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a)
    )


# --- the metrics re-explain exactly as the explanation was made ---------------------------

#: name -> (explain's arguments, evaluate's layer, whether a plain re-explanation differs)
CASES = {
    "plain": ({"method": "gradient_x_input"}, -1, False),
    "target": ({"method": "gradient_x_input", "target": "LABEL_2"}, -1, False),
    "every target": ({"method": "gradient_x_input", "target": "all"}, -1, False),
    "contrast": (
        {"method": "gradient_x_input", "target": "LABEL_0", "contrast": "LABEL_1"},
        -1,
        True,
    ),
    "contrast input": ({"method": "gradient_x_input", "contrast_input": EDITED}, -1, True),
    "layer": ({"method": "normxlogit", "layer": 1}, -1, True),
    "every layer": ({"method": "normxlogit", "layer": "all"}, 1, True),
    "options": ({"method": "integrated_gradients", "steps": 3, "baseline": "unk"}, -1, False),
    "preset": ({"method": "gradient_x_input", "preset": "pi-soft"}, -1, False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_no_op_randomisation_gives_similarity_1_however_it_was_explained(case, no_op):
    """With nothing randomised, re-explaining must give the explanation back: the same
    target, contrast, contrast input, layer and method options (issue 41: 0.964, -0.143
    and -0.179 where the contrast, the contrast input and the layer were dropped)."""
    options, layer, plain_differs = CASES[case]
    options = dict(options)
    model = sharp_model()
    method = options.pop("method")
    explained = model.explain(TEXTS, method, **options)
    again = explain_again(model, explained)
    for before, after in zip(explained, again, strict=True):
        # (batches of other widths: float noise, largest where a contrast input subtracts)
        np.testing.assert_allclose(after.scores, before.scores, rtol=1e-4, atol=1e-4)
        assert after.targets == before.targets and after.contrasts == before.contrasts
    result = normxlogit.evaluate(
        model, {method: explained}, ["sanity_spearman", "sanity_top_k"], layer=layer
    )
    frame = result.frame
    short = (frame["metric"] == "sanity_top_k") & frame["value"].isna()  # k tokens or fewer: n/a
    assert frame.loc[~short, "value"].to_numpy() == pytest.approx(1.0)
    assert frame.loc[frame["metric"] == "sanity_spearman", "value"].notna().all()
    if plain_differs:  # the case would catch a re-explanation that drops the setting
        plain = model.explain(TEXTS, method)
        drift = [
            spearman(a.scores_3d()[layer, :, 0], b.scores_3d()[-1, :, 0])
            for a, b in zip(explained, plain, strict=True)
        ]
        assert min(drift) < 0.99, drift


def test_the_metric_compares_the_column_evaluate_reads(no_op):
    """Several targets: the predicted label's column, as every other metric scores."""
    model = sharp_model()
    explained = model.explain(TEXTS, "gradient_x_input", target="all")
    plain = model.explain(TEXTS, "gradient_x_input")
    frame = normxlogit.evaluate(model, {"g": explained}, ["sanity_spearman"]).frame
    assert frame["value"].to_numpy() == pytest.approx(1.0)
    for every, predicted in zip(explained, plain, strict=True):
        column = every.targets.index(predicted.label)
        np.testing.assert_allclose(every.scores[:, column], predicted.scores, atol=1e-6)


# --- every target compared -----------------------------------------------------------------


def test_target_all_compares_every_label():
    model = explainable("bert", "classification")
    every = parameter_randomization(model, TEXTS[:2], ["gradient_x_input"], target="all").frame
    labels = list(model.task.labels)
    assert list(dict.fromkeys(every["target"])) == labels
    assert len(every) == 2 * len(labels) * 4  # texts x labels x steps
    for label in labels:
        alone = parameter_randomization(model, TEXTS[:2], ["gradient_x_input"], target=label)
        mine = every[every["target"] == label].reset_index(drop=True)
        np.testing.assert_allclose(mine["spearman"], alone.frame["spearman"], equal_nan=True)
        np.testing.assert_allclose(mine["top_k"], alone.frame["top_k"])


# --- an undefined similarity is n/a, not a failure -----------------------------------------


def test_one_token_texts_are_not_computable_not_failed():
    model = explainable("bert", "classification")
    with pytest.warns(NormXLogitWarning, match="n/a for 2 of 2 texts.*one-token"):
        result = parameter_randomization(model, ["fine", "good"], ["gradient_x_input"])
    verdict = result.verdicts().iloc[0]
    assert verdict["passes"] is None and verdict["texts"] == 0
    assert np.isnan(verdict["final_spearman"])
    assert "not computable for any text" in verdict["note"] and "one-token" in verdict["note"]
    with pytest.warns(NormXLogitWarning, match="n/a for 1 of 2 texts"):
        mixed = parameter_randomization(model, ["fine", TEXTS[0]], ["random"])
    verdict = mixed.verdicts().iloc[0]
    assert verdict["passes"] is False and verdict["texts"] == 1  # random keeps 1
    assert "1 of 2 texts left out" in verdict["note"]


def test_the_metric_says_which_texts_are_n_a():
    model = explainable("bert", "classification")
    explained = model.explain(["fine", TEXTS[0]], "gradient_x_input")
    with pytest.warns(NormXLogitWarning, match="sanity_spearman is n/a .* for 1 of 2 texts"):
        result = normxlogit.evaluate(model, {"g": explained}, ["sanity_spearman"])
    assert result.frame.groupby("instance")["value"].apply(lambda v: v.isna().all()).tolist() == [
        True,
        False,
    ]


@pytest.mark.parametrize("threshold", [float("nan"), float("inf"), 2, -1.5, "0.5", True, None])
def test_a_threshold_that_is_not_a_correlation_is_refused(threshold):
    result = SanityResult(
        pd.DataFrame(
            {
                "method": ["m"],
                "mode": ["cascading"],
                "step": [0],
                "randomized": ["head"],
                "instance": [0],
                "target": ["x"],
                "spearman": [0.2],
                "top_k": [0.4],
            }
        )
    )
    with pytest.raises(InvalidInputError, match="threshold"):
        result.verdicts(threshold)
    assert bool(result.verdicts(0.5)["passes"].iloc[0]) and not result.verdicts(-1)["passes"][0]


# --- files are what their names say --------------------------------------------------------


@pytest.fixture(scope="module")
def small_result() -> SanityResult:
    model = explainable("bert", "classification")
    return parameter_randomization(model, TEXTS[:2], ["random"], mode="independent")


def test_save_writes_parquet_and_refuses_a_suffix_it_cannot_write(small_result, tmp_path):
    pytest.importorskip("pyarrow")
    path = small_result.save(tmp_path / "r.parquet")
    assert path.read_bytes()[:4] == b"PAR1"
    pd.testing.assert_frame_equal(pd.read_parquet(path), small_result.frame)
    csv = small_result.save(tmp_path / "r.CSV")
    assert csv.read_text().startswith("method,mode,step,randomized,instance,target,")
    for name in ("r.xlsx", "r"):  # .json is a format of its own (rows and settings)
        with pytest.raises(OutputPathError, match=r"end the name in \.csv, \.parquet or \.json"):
            small_result.save(tmp_path / name)
    nested = small_result.save(tmp_path / "new" / "r.parquet")  # as .csv: the folder made
    assert nested.read_bytes()[:4] == b"PAR1"
    (tmp_path / "folder.parquet").mkdir()
    with pytest.raises(OutputPathError, match="is a folder"):
        small_result.save(tmp_path / "folder.parquet")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["folder.parquet", "new", "r.CSV", "r.parquet"]


def test_save_names_the_extra_parquet_needs(small_result, tmp_path, monkeypatch):
    _without(monkeypatch, "pyarrow")
    with pytest.raises(InvalidInputError, match=r"normxlogit\[bench\].*\.csv"):
        small_result.save(tmp_path / "r.parquet")
    assert list(tmp_path.iterdir()) == []


def test_plot_refuses_what_it_cannot_write(small_result, tmp_path, monkeypatch):
    with pytest.raises(OutputPathError, match=r"\.png"):
        small_result.plot(tmp_path / "figure.pdf")
    if UNWRITABLE.is_dir():
        with pytest.raises(OutputPathError, match="cannot write"):
            small_result.plot(UNWRITABLE / "figure.png")
    _without(monkeypatch, "matplotlib")
    with pytest.raises(InvalidInputError, match=r"matplotlib: pip install 'normxlogit\[bench\]'"):
        small_result.plot(tmp_path / "figure.png")
    assert list(tmp_path.iterdir()) == []


# --- refusals before any work ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("methods", "fragment"),
    [
        ({"mine": 3}, "methods['mine'] is an int, not a method"),
        ({"mine": None}, "methods['mine'] is None"),
        ({}, "an empty dict"),
        ([], "an empty list"),
        ([1], "1 is an int, not a method name"),
        ("normxlogit", "give a list of method names"),
        (7, "give a list of method names"),
    ],
)
def test_methods_that_are_not_methods_are_refused(methods, fragment):
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError) as refused:
        parameter_randomization(model, TEXTS, methods)
    assert fragment in str(refused.value)
    with pytest.raises(InvalidInputError):
        data_randomization(model, model, TEXTS, methods)


def test_a_dict_may_hold_methods_or_method_names():
    model = explainable("bert", "classification")
    methods = {"rand": "random", "gxi": normxlogit.get_method("gradient_x_input")}
    frame = parameter_randomization(model, TEXTS[0], methods).frame
    assert list(dict.fromkeys(frame["method"])) == ["rand", "gxi"]
    assert set(frame["instance"]) == {0}  # one text, not one per character
    with pytest.raises(InvalidInputError, match="shuffled is a str"):
        data_randomization(model, "./minilm-sst2-shuffled", TEXTS, ["random"])
    with pytest.raises(InvalidInputError, match="absolute='false' is a str"):
        parameter_randomization(model, TEXTS, ["random"], absolute="false")
    with pytest.raises(InvalidInputError, match="top_k"):
        parameter_randomization(model, TEXTS, ["random"], top_k=2.5)
    with pytest.raises(InvalidInputError, match="seed must be a whole number"):
        parameter_randomization(model, TEXTS, ["random"], seed="0")


def test_shared_weights_name_the_options_that_exist():
    model = explainable("albert", "classification")
    with pytest.raises(UnsupportedModelError) as refused:
        parameter_groups(model)
    message = str(refused.value)
    assert "independent=False" not in message
    assert "units='modules'" in message and "--mode data" in message
    result = parameter_randomization(model, TEXTS[:1], ["random"], units="modules")
    assert len(result.frame) > 1  # the option named works


# --- the command line ------------------------------------------------------------------------


@pytest.fixture
def texts_file(tmp_path) -> Path:
    path = tmp_path / "texts.txt"
    path.write_text("a gripping film\na dull film that drags on\n")
    return path


@needs_proc
def test_cli_refuses_unwritable_outputs_before_any_work(texts_file, tmp_path):
    # no model to load: a refusal after the run would name the model instead
    missing = str(tmp_path / "no-model")
    for args, fragment in (
        (["-o", str(UNWRITABLE / "s.csv")], "--output /proc/s.csv: cannot create a file in"),
        (["--plot", str(UNWRITABLE / "s.png")], "--plot /proc/s.png: cannot create a file in"),
    ):
        result = run("sanity", str(texts_file), "--model", missing, *args)
        assert_refused(result, fragment)
        assert result.stdout == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in a folder without rights")
def test_cli_refuses_a_folder_without_write_rights(texts_file, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = run("sanity", str(texts_file), "-o", str(locked / "s.csv"))
        assert_refused(result, "permission")
    finally:
        locked.chmod(0o700)


def test_cli_refuses_bad_output_names_before_any_work(texts_file, tmp_path):
    missing = str(tmp_path / "no-model")
    table = tmp_path / "texts.csv"
    table.write_text("text\na gripping film\n")
    cases = (
        (texts_file, ["-o", str(tmp_path / "s.xlsx")], "end the name in .csv, .parquet or .json"),
        (texts_file, ["-o", str(tmp_path / "s")], "a name without a suffix"),
        (table, ["-o", str(table)], "is the data file"),
        (texts_file, ["--plot", str(tmp_path / "s.svg")], "give the file a .png name"),
        (texts_file, ["--method", "nonsense"], "unknown method 'nonsense'"),
    )
    for data, args, fragment in cases:
        assert_refused(run("sanity", str(data), "--model", missing, *args), fragment)
    assert table.read_text() == "text\na gripping film\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["texts.csv", "texts.txt"]


def test_cli_plot_without_matplotlib_is_refused_first(texts_file, tmp_path, monkeypatch):
    _without(monkeypatch, "matplotlib")
    args = ["sanity", str(texts_file), "--model", str(tmp_path / "no-model")]
    result = CliRunner().invoke(app, [*args, "--plot", str(tmp_path / "s.png")])
    assert result.exit_code == 2
    assert "pip install 'normxlogit[bench]', or leave out --plot" in result.output
    assert "no-model" not in result.output  # refused before the model was looked for


def test_cli_writes_parquet_and_says_n_a(tiny_classifier, tmp_path):
    pytest.importorskip("pyarrow")
    data = tmp_path / "words.txt"
    data.write_text("fine\ngood\n")
    output = tmp_path / "s.parquet"
    args = ["sanity", str(data), "--model", str(tiny_classifier), "--method", "random"]
    result = CliRunner().invoke(app, [*args, "--mode", "independent", "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert output.read_bytes()[:4] == b"PAR1"
    assert pd.read_parquet(output)["spearman"].isna().all()
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if "final_spearman" in line)
    assert lines[header].split()[-2:] == ["passes", "texts"]
    assert lines[header + 1].split()[-2:] == ["n/a", "0"]
    assert "not computable" in result.output and "one-token" in result.output


def test_top_k_overlap_of_a_text_no_longer_than_k_is_n_a():
    """Any two explanations of a text with k or fewer compared tokens share their top k,
    so the overlap said 1 whatever the randomisation did."""
    import math

    from normxlogit.sanity.randomization import similarity

    short = explainable("bert", "classification").explain("a fine film")  # 3 words
    spearman_value, overlap = similarity(short, short, top_k=5)
    assert spearman_value == pytest.approx(1.0) and math.isnan(overlap)
    _, overlap = similarity(short, short, top_k=2)
    assert overlap == 1.0


def test_a_shuffled_model_of_another_task_is_refused_by_its_labels():
    """`--mode data --shuffled minilm-mnli` against an SST-2 model said "unknown label
    'positive'" without saying why."""
    from ..conftest import build_model, fresh_tokenizer

    model = explainable("bert", "classification")
    other = normxlogit.load((build_model("bert", "regression"), fresh_tokenizer()))
    with pytest.raises(InvalidInputError, match="shuffled model's labels .* not the trained"):
        data_randomization(model, other, ["a fine film"], ["normxlogit"])
