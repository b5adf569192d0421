"""Round twenty-nine of new-user probes, probe b (Python API): with token units a text with
one token (or none) the soft metrics perturb gets no value and a warning, as with segment
units (P04); evaluate refuses explanations of the wrong shape (P05) and a protocol that is
not a Protocol (P06) in one line, and an empty method name up front (P07); the summary's
Markdown escapes '|' in a name (P08); a SummaryTable refuses a metric it lacks in one line
from ranking, best and sort_by (P09)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError, NormXLogitWarning
from normxlogit.evaluation import Protocol
from normxlogit.evaluation.registry import metric_info
from normxlogit.evaluation.summary import SummaryTable

from .conftest import explainable, sharp_model

TEXTS = ["the film is good .", "good"]
SOFT = ["soft_nc", "soft_ns", "pi_soft_nc", "pi_soft_ns"]


@pytest.fixture(scope="module")
def model():
    return sharp_model()


@pytest.fixture(scope="module")
def made(model):
    return {name: model.explain(TEXTS, method=name) for name in ("normxlogit", "random")}


def _evaluated(model, made, metrics, protocol=None):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = normxlogit.evaluate(model, made, metrics, protocol=protocol, progress=False)
    said = [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]
    return result, said


# ------------------------------------------------------------------ P04
def test_p04_one_token_texts_have_no_soft_value_with_token_units(model, made):
    """'good' is [CLS] good [SEP]: only 'good' is perturbed, kept with the same probability
    whatever its score, so every method got the same value (averaged in silently)."""
    protocol = Protocol(samples=3, pis=(0.3, 0.7))
    result, said = _evaluated(model, made, SOFT, protocol)
    frame = result.frame
    for metric in SOFT:
        rows = frame[frame.metric == metric]
        assert rows[rows.text == "good"].value.isna().all(), metric
        assert np.isfinite(rows[rows.text == TEXTS[0]].value).all(), metric
    expected = "1 of 2 texts have one token or none the soft metrics perturb (unit='token')"
    assert any(m.startswith(expected) for m in said), said
    assert any("(n/a, left out of the means)" in m for m in said)


def test_p04_a_text_with_no_token_to_perturb_is_counted_in_the_warning():
    """A decoder reads 'good' at its last token and protects the first: nothing is left to
    perturb. Its NaN came with no warning."""
    decoder = explainable("gpt2", "classification")
    made = {name: decoder.explain(TEXTS, method=name) for name in ("normxlogit", "random")}
    result, said = _evaluated(decoder, made, ["soft_nc"], Protocol(samples=3))
    values = result.frame.set_index(["text", "method"]).value
    assert values.loc["good"].isna().all() and np.isfinite(values.loc[TEXTS[0]]).all()
    assert any(m.startswith("1 of 2 texts have one token or none") for m in said), said


# ------------------------------------------------------------------ P05
@pytest.mark.parametrize(
    "shape, expected",
    [
        ("list of lists", r"explanations is a list of list \(one list per method\?\); pass a dict"),
        ("tuple of lists", r"explanations is a tuple of list \(one list per method\?\)"),
        ("dict of one", r"explanations\['n'\] is one Explanation, not a list; give \{'n': \["),
        ("list of texts", r"explanations holds a str, not an Explanation; give a list of Expl"),
        ("None", r"explanations is None; give a list of Explanation"),
        ("dict of texts", r"explanations\['n'\] holds a str, not an Explanation"),
        ("number", r"explanations is an int; give a list of Explanation"),
    ],
)
def test_p05_explanations_of_the_wrong_shape_are_refused_in_one_line(model, made, shape, expected):
    a, b = made["normxlogit"], made["random"]
    given = {
        "list of lists": [a, b],
        "tuple of lists": (a, b),
        "dict of one": {"n": a[0]},
        "list of texts": TEXTS,
        "None": None,
        "dict of texts": {"n": TEXTS},
        "number": 3,
    }[shape]
    with pytest.raises(InvalidInputError, match=expected) as caught:
        normxlogit.evaluate(model, given, ["comp_cd"], progress=False)
    assert "\n" not in str(caught.value)


def test_p05_the_accepted_shapes_still_evaluate(model, made):
    flat = made["normxlogit"] + made["random"]
    for given in (flat, tuple(flat), iter(flat), made, made["normxlogit"][0]):
        result = normxlogit.evaluate(
            model, given, ["comp_cd"], protocol=Protocol(ratios=(0.5,)), progress=False
        )
        assert len(result.frame) > 0


# ------------------------------------------------------------------ P06
@pytest.mark.parametrize("given", [{"ratios": [0.5]}, "ratios=0.5"])
def test_p06_a_protocol_that_is_not_a_protocol_is_refused(model, made, given):
    kind = type(given).__name__
    expected = rf"protocol is a {kind}; give a normxlogit\.Protocol, e\.g\. protocol=Protocol\("
    with pytest.raises(InvalidInputError, match=expected):
        normxlogit.evaluate(model, made, ["comp_cd"], protocol=given, progress=False)
    with pytest.raises(InvalidInputError, match=expected):
        normxlogit.explain_and_evaluate(
            model, TEXTS, methods=["random"], metrics=["comp_cd"], protocol=given
        )


def test_p06_a_dict_is_pointed_at_protocol_from_dict(model, made):
    with pytest.raises(InvalidInputError, match=r"Protocol\.from_dict\(settings\)"):
        normxlogit.evaluate(model, made, ["comp_cd"], protocol={"ratios": [0.5]})


# ------------------------------------------------------------------ P07
@pytest.mark.parametrize("name", ["", "  "])
def test_p07_an_empty_method_name_is_refused_up_front(model, made, name):
    given = {name: made["normxlogit"], "random": made["random"]}
    with pytest.raises(InvalidInputError, match=rf"method name {name!r} is empty; name the"):
        normxlogit.evaluate(model, given, ["comp_cd"], progress=False)


# ------------------------------------------------------------------ P08
def _table(methods, metrics=("comp_cd",)):
    values = pd.DataFrame(
        [[0.5 - 0.1 * i] * len(metrics) for i in range(len(methods))],
        index=list(methods),
        columns=list(metrics),
    )
    return SummaryTable(values, {m: metric_info(m) for m in metrics})


def _cells(line: str) -> int:
    """The cells of a Markdown table row (an escaped '\\|' is inside a cell)."""
    return len(line.replace("\\|", "").strip("|").split("|"))


def test_p08_markdown_escapes_a_pipe_in_a_method_name():
    markdown = _table(["ig|50 steps", "random"], ("comp_cd", "suff_cd")).to_markdown()
    lines = markdown.splitlines()
    assert lines[2].startswith("| ig\\|50 steps | ")
    assert {_cells(line) for line in lines} == {3}


# ------------------------------------------------------------------ P09
@pytest.mark.parametrize("call", ["ranking", "best", "sort_by", "header"])
@pytest.mark.parametrize("metric", ["suff_cd", "comp"])
def test_p09_a_metric_the_table_lacks_is_refused_in_one_line(call, metric):
    table = _table(["normxlogit", "random"])
    expected = rf"no metric {metric!r} in this table; it has \['comp_cd'\]"
    with pytest.raises(InvalidInputError, match=expected):
        getattr(table, call)(metric)
    assert table.best("comp_cd") == "normxlogit"
