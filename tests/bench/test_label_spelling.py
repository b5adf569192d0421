"""Label names are read in any case, so a bench method's target and contrast are keyed in
the classifier's own spelling: "Positive" and "positive" key one cell, and two methods
that differ only there are refused as one. A language model's tokens keep their case."""

from __future__ import annotations

import pytest

from normxlogit.bench import load_config
from normxlogit.common.errors import InvalidInputError

from ..conftest import saved_tiny
from .helpers import write_config


def _spec(tmp_path, model, target: str, contrast: str | None = None):
    method = f'name = "normxlogit", target = "{target}"'
    if contrast is not None:
        method += f', contrast = "{contrast}"'
    config = write_config(tmp_path, model, methods=f"[{{ {method} }}]", metrics='["comp_cd"]')
    return load_config(config).experiments[0].methods[0]


def test_a_folder_classifiers_labels_key_in_its_own_spelling(tmp_path, tiny_classifier):
    shouted = _spec(tmp_path, tiny_classifier, "POS", " Neg ")
    assert (shouted.target, shouted.contrast) == ("pos", "neg")
    assert shouted.key == _spec(tmp_path, tiny_classifier, "pos", "neg").key


def test_a_built_in_classifiers_labels_too(tmp_path):
    spec = _spec(tmp_path, "minilm-sst2", "Positive", "NEGATIVE")
    assert (spec.target, spec.contrast) == ("positive", "negative")


def test_two_methods_spelling_one_label_two_ways_are_refused(tmp_path, tiny_classifier):
    methods = (
        '[{ name = "normxlogit", label = "A", target = "pos", contrast = "neg" }, '
        '{ name = "normxlogit", label = "B", target = "Pos", contrast = "NEG" }]'
    )
    config = write_config(tmp_path, tiny_classifier, methods=methods, metrics='["comp_cd"]')
    with pytest.raises(InvalidInputError, match="methods A and B compute the same results"):
        load_config(config)


def test_a_language_models_tokens_keep_their_case(tmp_path_factory, tmp_path):
    model = saved_tiny(tmp_path_factory.mktemp("tiny-llama"), "llama", "causal_lm")
    spec = _spec(tmp_path, model, " Film")
    assert spec.target == " Film"
