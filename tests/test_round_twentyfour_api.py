"""Round twenty-four of new-user probes, probe b (Python API): what explain_and_evaluate
can refuse from its arguments, refused before explaining (P01); gold labels that are no
label named as labels[i] (P02); load's max_length= checked (P03); a list as a gold label
under explain_label (P04); a saved result's values outside a metric's range (P05). Tiny
models."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError, NormXLogitWarning
from normxlogit.evaluation import EvaluationResult

from .conftest import build_model, explainable, fresh_tokenizer, sharp_model

TEXTS = ["The film is good. The end is bad.", "A dull mess. Far too long."]


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize(
    ("settings", "said"),
    [
        (  # a) token and segment evidence metrics together
            dict(
                metrics=["token_f1", "segment_hit_1"],
                segments="sentences",
                evidence_words=[[1], [1]],
                evidence_segments=[[0], [1]],
            ),
            "the token metrics as token vectors or words: evaluate them in separate calls",
        ),
        (  # b) a segment method named as a mapping's value, without segments
            dict(methods={"g": "gradient_x_input", "loo": "leave_one_out"}),
            "'loo' scores segments; pass segments='sentences'",
        ),
        (  # c) a segment method with a sanity metric
            dict(
                methods=["gradient_x_input", "leave_one_out"],
                segments="sentences",
                metrics=["sanity_spearman"],
            ),
            "'leave_one_out' is a segment method (it scores segments, not tokens): leave it "
            "out of the sanity checks",
        ),
        (  # d) explain_label's labels checked though no metric reads labels
            dict(labels=[0, 7], explain_label=True),
            "label index 7 does not exist; this model has 3 labels",
        ),
        (
            dict(labels=[0, np.int64(7)], explain_label=True),
            "label index 7 does not exist",
        ),
    ],
)
def test_p01_refused_before_explaining(never_explained, settings, said):
    """Each came after every method had explained every text."""
    methods = settings.pop("methods", ["gradient_x_input"])
    settings.setdefault("metrics", ["comp_cd"])
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.explain_and_evaluate(sharp_model(), TEXTS, methods, progress=False, **settings)
    assert said in str(caught.value)


# ------------------------------------------------------------------ P02
NOT_LABELS = [
    ([None, 0], "the gold label of text 0 (labels[0]) is missing (None); give a label name"),
    ([0, True], "gold label True of text 1 (labels[1]) is a bool; give a label name or an int"),
    ([1.0, 0], "gold label 1.0 of text 0 (labels[0]) is a float; give a label name or an int"),
    ([np.float64(2.0), 0], "gold label 2.0 of text 0 (labels[0]) is a float"),
    ([float("nan"), 0], "the gold label of text 0 (labels[0]) is NaN, a missing label"),
]


@pytest.mark.parametrize(("labels", "said"), NOT_LABELS)
def test_p02_gold_labels_that_are_no_label_are_named_as_labels(labels, said):
    """They were refused as "target None is neither a label name nor an index"."""
    model = sharp_model()
    explanations = model.explain(TEXTS, "gradient_x_input")
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, {"g": explanations}, ["comp_acc"], labels=labels, progress=False)
    message = str(caught.value)
    assert said in message
    assert "(0=LABEL_0, 1=LABEL_1, 2=LABEL_2)" in message
    assert "target" not in message
    if labels[0] == 1.0:
        assert "int(1.0)" in message


def _explain_labels(labels):
    """explain_and_evaluate with each text's gold label as its target."""
    return normxlogit.explain_and_evaluate(
        sharp_model(),
        TEXTS,
        ["gradient_x_input"],
        ["comp_cd"],
        labels=labels,
        explain_label=True,
        progress=False,
    )


@pytest.mark.parametrize(("labels", "said"), NOT_LABELS)
def test_p02_explain_label_names_the_gold_label_not_a_target(never_explained, labels, said):
    """Under explain_label=True the fix offered was a target's ('all', a list)."""
    with pytest.raises(InvalidInputError) as caught:
        _explain_labels(labels)
    assert said in str(caught.value)
    assert "'all'" not in str(caught.value)


def test_p02_a_regressors_float_gold_values_still_score():
    """Only a classifier's labels are names or indices: a regressor's are floats."""
    model = explainable("bert", "regression")
    explanations = model.explain(TEXTS, "gradient_x_input")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = normxlogit.evaluate(
            model, {"g": explanations}, ["comp_acc"], labels=[0.5, np.float64(3.5)], progress=False
        )
    assert set(result.frame["metric"]) == {"comp_acc"}


# ------------------------------------------------------------------ P03
@pytest.mark.parametrize(
    ("value", "said"),
    [
        (-3, "max_length=-3 reads no tokens; give a whole number from 1, or leave it out"),
        (0, "max_length=0 reads no tokens"),
        (2.5, "max_length=2.5 is a float, not a number of tokens"),
        ("64", "max_length='64' is a str, not a number of tokens"),
        (True, "max_length=True is a bool"),
        (10**9, "max_length=1000000000 is past the 512 positions"),
    ],
)
def test_p03_load_checks_max_length(value, said):
    """They reached the tokenizer, normxlogit's arithmetic or torch (0: ignored)."""
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.load(
            (build_model("bert", "classification"), fresh_tokenizer()), max_length=value
        )
    assert said in str(caught.value)
    if value == 10**9:
        assert "give 1 to 512, or leave it out" in str(caught.value)


@pytest.mark.parametrize("value", [8, np.int64(8), 512, None])
def test_p03_load_takes_a_number_of_tokens_up_to_the_limit(value):
    with warnings.catch_warnings():  # verify's text is cut at 8 tokens, with a word
        warnings.simplefilter("ignore", NormXLogitWarning)
        model = normxlogit.load(
            (build_model("bert", "classification"), fresh_tokenizer()), max_length=value
        )
    assert model.encoder.max_length == (512 if value is None else int(value))


# ------------------------------------------------------------------ P04
def test_p04_a_list_gold_label_under_explain_label_is_refused_before_explaining(never_explained):
    """It ended in "TypeError: unhashable type: 'list'" in forward_batches."""
    with pytest.raises(InvalidInputError) as caught:
        _explain_labels([[1], 0])
    assert "gold label [1] of text 0 (labels[0]) is a list; give a label name" in str(caught.value)


# ------------------------------------------------------------------ P05
def test_p05_a_saved_value_outside_its_range_is_warned_about_on_load(tmp_path):
    """It was read without a word; evaluate warns about such values and keeps them, so a
    file it wrote may hold them: loading warns the same way and keeps them too."""
    model = sharp_model()
    explanations = model.explain(TEXTS, "gradient_x_input")
    result = normxlogit.evaluate(model, {"g": explanations}, ["comp_cd"], progress=False)
    path = result.save(tmp_path / "r.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", NormXLogitWarning)  # evaluate's own file: no word
        EvaluationResult.load(path)
    data = json.loads(path.read_text())
    data["rows"][1]["value"] = 5.0
    path.write_text(json.dumps(data))
    with pytest.warns(NormXLogitWarning) as caught:
        loaded = EvaluationResult.load(path)
    message = str(caught[0].message)
    assert "metric 'comp_cd': 1 value(s) outside its declared range, the first in rows[1]" in (
        message
    )
    assert "is 5, which comp_cd never gives (its values lie in [-1, 1])" in message
    assert f"the summary reads them as saved in {path}" in message
    assert loaded.frame["value"].max() == 5.0
