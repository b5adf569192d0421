"""Round twenty-five of new-user probes, probe b (Python API): a regressor's gold value
that is NaN or infinite (P01) or no number (P02) named as labels[i] before explaining;
explain_label on a regressor refused (P03); load's max_length= that leaves no room for
the text (P04); load's own verification text truncated quietly (P05); labels given as a
mapping refused, a pandas Series read by position (P06). Tiny models."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError, NormXLogitWarning

from .conftest import build_model, explainable, fresh_tokenizer, invoke_in, saved_tiny, sharp_model

TEXTS = ["The film is good. The end is bad.", "A dull mess. Far too long."]
FIX = "a regressor ('LABEL_0') is scored against finite numbers"


def _regressor_evaluates(labels, **options):
    """explain_and_evaluate on a tiny regressor with ``labels`` as its gold values."""
    return normxlogit.explain_and_evaluate(
        explainable("bert", "regression"),
        TEXTS,
        ["gradient_x_input"],
        ["comp_acc"],
        labels=labels,
        progress=False,
        **options,
    )


# ------------------------------------------------------------------ P01, P02
NOT_VALUES = [
    ([float("nan"), 0.3], "the gold value of text 0 (labels[0]) is NaN, a missing value"),
    ([0.5, np.float32("nan")], "the gold value of text 1 (labels[1]) is NaN"),
    (
        np.array([np.inf, 0.3], dtype=np.float32),
        "gold value inf of text 0 (labels[0]) is not finite",
    ),
    ([0.5, -np.inf], "gold value -inf of text 1 (labels[1]) is not finite"),
    (pd.Series([0.5, None]), "the gold value of text 1 (labels[1]) is NaN"),
    (pd.Series([0.5, None], dtype="Float64"), "the gold value of text 1 (labels[1]) is missing"),
    ([None, 0.3], "the gold value of text 0 (labels[0]) is missing (None)"),
    ([0.5, "good"], "gold value 'good' of text 1 (labels[1]) is a str"),
    ([0.5, "0.3"], "gold value '0.3' of text 1 (labels[1]) is a str"),
    ([0.5, [0.3]], "gold value [0.3] of text 1 (labels[1]) is a list"),
    ([True, 0.3], "gold value True of text 0 (labels[0]) is a bool"),
]


@pytest.mark.parametrize(("labels", "said"), NOT_VALUES)
def test_p01_p02_a_regressors_gold_value_that_is_no_finite_number_is_named(
    never_explained, labels, said
):
    """NaN or inf made every accuracy cell n/a after explaining, without a word; None, a
    str or a list gave "regression gold labels must be numbers", naming no text."""
    with pytest.raises(InvalidInputError) as caught:
        _regressor_evaluates(labels)
    message = str(caught.value)
    assert said in message
    assert FIX in message
    if "'0.3'" in said:
        assert "float('0.3') if the values were read as text" in message


@pytest.mark.parametrize(("labels", "said"), NOT_VALUES[:4] + NOT_VALUES[6:])
def test_p01_p02_evaluate_names_them_too(labels, said):
    model = explainable("bert", "regression")
    explanations = model.explain(TEXTS, "gradient_x_input")
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, {"g": explanations}, ["comp_acc"], labels=labels, progress=False)
    assert said in str(caught.value)


def test_p01_p02_finite_numbers_still_score():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = _regressor_evaluates([0.5, np.float32(3.5)])
    assert set(result.result.frame["metric"]) == {"comp_acc"}


@pytest.mark.parametrize(
    ("value", "said"),
    [("nan", "line 3: gold value nan is not finite"), ("inf", "line 3: gold value inf is not")],
)
def test_p01_the_cli_names_the_line_before_explaining(never_explained, tmp_path, value, said):
    saved_tiny(tmp_path / "reg", "bert", "regression")
    (tmp_path / "r.tsv").write_text(f"sentence\tlabel\na fine film\t0.5\na dull one\t{value}\n")
    result = invoke_in(tmp_path, "evaluate", "r.tsv", "--model", "reg", "--method", "random")
    assert result.exit_code == 2
    assert said in result.output
    assert "a regressor is scored against finite numbers" in result.output


# ------------------------------------------------------------------ P03
def test_p03_explain_label_on_a_regressor_is_refused_before_explaining(never_explained):
    """It was refused as "target 0.5 is a float", offering 'all' or a list."""
    with pytest.raises(InvalidInputError) as caught:
        _regressor_evaluates([0.5, 0.3], explain_label=True)
    message = str(caught.value)
    assert "a regressor has one output ('LABEL_0'), so there is no label to explain" in message
    assert "leave explain_label out" in message
    assert "target" not in message and "'all'" not in message


def test_p03_the_cli_refuses_explain_label_on_a_regressor(never_explained, tmp_path):
    saved_tiny(tmp_path / "reg", "bert", "regression")
    (tmp_path / "r.tsv").write_text("sentence\tlabel\na fine film\t0.5\na dull one\t0.2\n")
    result = invoke_in(
        tmp_path, "evaluate", "r.tsv", "--model", "reg", "--method", "random", "--explain-label"
    )
    assert result.exit_code == 2
    assert "leave --explain-label out" in result.output
    assert "target" not in result.output


# ------------------------------------------------------------------ P04, P05
def _load(max_length, verify=False):
    return normxlogit.load(
        (build_model("bert", "classification"), fresh_tokenizer()),
        max_length=max_length,
        verify=verify,
    )


@pytest.mark.parametrize("value", [1, 2])
def test_p04_max_length_without_room_for_a_token_is_refused_at_load(value):
    """1 was not applied at all (the tokenizer cannot cut below its special tokens, so
    all the text was read, with a warning saying it was cut); 2 read [CLS] [SEP] alone."""
    with pytest.raises(InvalidInputError) as caught:
        _load(value)
    message = str(caught.value)
    assert f"max_length={value} leaves no room for the text" in message
    assert "adds 2 special tokens around one text (3 around a pair); give 3 to 512" in message


def test_p04_three_tokens_read_one_token_of_the_text():
    with pytest.warns(NormXLogitWarning, match="the last"):
        explanation = _load(3).explain("the film is good", "gradient_x_input")
    assert len(explanation.tokens) == 3 and explanation.tokens[1] not in ("[CLS]", "[SEP]")


@pytest.mark.parametrize("value", [3, 4])
def test_p04_a_pair_without_room_for_both_texts_is_refused(value):
    """At 3 a pair was read as [CLS] [SEP] [SEP] and explained like any other."""
    model = _load(value)
    with pytest.raises(InvalidInputError) as caught:
        model.explain(("the film is good", "the plot is great"), "gradient_x_input")
    assert f"max_length={value} leaves no room for both texts" in str(caught.value)
    assert "max_length=5 or more to read pairs" in str(caught.value)


def test_p04_a_pair_with_room_for_both_texts_reads_both():
    with pytest.warns(NormXLogitWarning):
        explanation = _load(5).explain(("the film", "the plot"), "gradient_x_input")
    assert len(explanation.tokens) == 5


def test_p05_load_truncates_its_own_verification_text_quietly():
    """load(max_length=8) warned that "text 0" was truncated: the user gave no text."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", NormXLogitWarning)
        model = _load(8, verify=True)
    with pytest.warns(NormXLogitWarning, match="text 0 has .* tokens"):  # the user's: warned
        model.encode(["the film is good and the plot is great"])


# ------------------------------------------------------------------ P06
@pytest.mark.parametrize("name", ["labels", "evidence"])
def test_p06_evaluate_refuses_a_mapping(name):
    """A dict's keys (0, 1, ...) were read as the gold labels."""
    model = sharp_model()
    explanations = model.explain(TEXTS, "gradient_x_input")
    metric = "comp_acc" if name == "labels" else "token_f1"
    value = {0: 1, 1: 0} if name == "labels" else {0: [1], 1: [0]}
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, {"g": explanations}, [metric], progress=False, **{name: value})
    assert f"{name} is a dict; give a list with one entry per text" in str(caught.value)


def test_p06_explain_and_evaluate_refuses_a_mapping_before_explaining(never_explained):
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.explain_and_evaluate(
            sharp_model(), TEXTS, ["gradient_x_input"], ["comp_acc"], labels={1: 0, 0: 1}
        )
    assert "labels is a dict; give a list with one entry per text" in str(caught.value)
    assert "a mapping is read by its keys" in str(caught.value)


def test_p06_a_series_is_read_by_position_whatever_its_index():
    model = sharp_model()
    explanations = model.explain(TEXTS, "gradient_x_input")

    def scores(labels):
        result = normxlogit.evaluate(
            model, {"g": explanations}, ["comp_acc"], labels=labels, progress=False
        )
        return result.frame.sort_values("instance")["value"].tolist()

    expected = scores([2, 0])
    assert scores(pd.Series([2, 0], index=[1, 0])) == expected
    assert scores(pd.Series([2, 0], index=[10, 11])) == expected
