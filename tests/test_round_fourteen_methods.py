"""Round fourteen of new-user probes (issue 41), method and metric names: each test is one
failure that round found (P06, P07, P08, P17), with tiny models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest
import torch

from normxlogit import explain_and_evaluate
from normxlogit.common.errors import InvalidInputError
from normxlogit.evaluation.plausibility import rationale_k
from normxlogit.evaluation.registry import metric_info
from normxlogit.methods import AttributionMethod, get_method, list_methods, register_method
from normxlogit.methods.base import _METHODS
from normxlogit.methods.random import RandomScores

from .conftest import sharp_model

TEXTS = ["Good fun.", "Bad."]


@pytest.fixture(scope="module")
def model():
    return sharp_model()


@pytest.fixture
def registry():
    """The method registry as it was before the test, restored after it."""
    saved = dict(_METHODS)
    yield
    _METHODS.clear()
    _METHODS.update(saved)


def ones_method(name):
    @dataclass
    class Ones(AttributionMethod):
        description: ClassVar[str] = "every token scores 1"

        def attribute(self, model, forward, targets, layers):
            shape = (*forward.batch.input_ids.shape, targets.columns.shape[1])
            return torch.ones(shape)[:, None]

    if name is not None:
        Ones.name = name
    return Ones


def test_a_registered_method_is_found_by_the_name_it_is_listed_under(registry, model):
    """P08: 'MyOnes' and 'my-ones' were registered and listed, then refused by name."""
    for name, normal in (("MyOnes", "myones"), ("my-ones", "my_ones")):
        with pytest.raises(InvalidInputError, match=f"name the method '{normal}'"):
            register_method(ones_method(name))
        assert name not in list_methods()
    register_method(ones_method("my_ones"))
    assert "my_ones" in list_methods()
    assert get_method("My-Ones").name == "my_ones"
    assert len(model.explain(TEXTS, method="my_ones")) == 2


@pytest.mark.parametrize("name", ["", " ", " sp ", "sp\u200b", "sp\u00a0x"])
def test_a_blank_padded_or_invisible_method_name_is_refused(registry, name):
    """P08: '' and ' sp ' were registered."""
    with pytest.raises(InvalidInputError, match="name"):
        register_method(ones_method(name))
    assert name not in list_methods()


def test_a_registered_name_is_replaced_only_when_asked(registry):
    """P08: name='random' silently replaced the built-in baseline every evaluation uses."""
    with pytest.raises(InvalidInputError, match="already registered.*replace=True"):
        register_method(ones_method("random"))
    assert isinstance(get_method("random"), RandomScores)
    register_method(ones_method("mine"))
    with pytest.raises(InvalidInputError, match="already registered"):
        register_method(ones_method("mine"))
    replacement = register_method(replace=True)(ones_method("random"))
    assert type(get_method("random")) is replacement
    again = register_method(ones_method("mine"), replace=True)
    assert type(get_method("mine")) is again


def test_a_class_without_a_name_or_not_a_method_is_refused_in_one_line(registry):
    """P08: a class without a name (or a non-class) raised AttributeError."""
    before = list_methods()
    with pytest.raises(InvalidInputError, match="needs a class with a name"):
        register_method(ones_method(None))
    with pytest.raises(InvalidInputError, match="needs a class with a name"):
        register_method(ones_method(3))
    for wrong in ("gradient_x_input", object, lambda: None):
        with pytest.raises(InvalidInputError, match="subclass of AttributionMethod"):
            register_method(wrong)
    assert list_methods() == before


@pytest.mark.parametrize("method", [["gradient_x_input"], [], None, 3])
def test_explain_refuses_a_method_that_is_not_one_name(model, method):
    """P06: method=[...] and method=[] raised AttributeError ('list' has no 'lower')."""
    with pytest.raises(InvalidInputError, match="one method's name.*explain_and_evaluate"):
        model.explain(TEXTS, method=method)


@pytest.mark.parametrize("name", [None, ["gradient_x_input"], 3])
def test_get_method_refuses_a_name_that_is_not_a_string(name):
    """P06: get_method(None) raised AttributeError."""
    with pytest.raises(InvalidInputError, match="named by a string.*gradient_x_input"):
        get_method(name)


def test_metric_info_refuses_a_name_that_is_not_a_string():
    """P06: metric_info(['comp_cd']) raised TypeError (unhashable type: 'list')."""
    with pytest.raises(InvalidInputError, match="named by a string.*comp_cd.*one metric"):
        metric_info(["comp_cd"])
    assert metric_info("comp_cd").name == "comp_cd"


def test_explain_and_evaluate_takes_a_lone_method_and_metric_name(model):
    """P07: methods='gradient_x_input' was refused as "unknown method 'g'", and a metrics
    string as "unknown metric 'c'"."""
    made = explain_and_evaluate(model, TEXTS, "gradient_x_input", "comp_cd")
    assert list(made.explained.explanations) == ["gradient_x_input"]
    assert len(made.explained.explanations["gradient_x_input"]) == 2
    listed = explain_and_evaluate(model, TEXTS, ["gradient_x_input"], ["comp_cd"])
    assert str(made.result.summary()) == str(listed.result.summary())


def test_rationale_k_takes_a_generator_of_texts(model):
    """P17: a generator of texts raised TypeError (object of type 'generator' has no len())."""
    evidence = [[0], [0]]
    assert rationale_k(model, (t for t in TEXTS), evidence) == rationale_k(model, TEXTS, evidence)
    with pytest.raises(InvalidInputError, match="1 rationales for 2 texts"):
        rationale_k(model, iter(TEXTS), [[0]])
