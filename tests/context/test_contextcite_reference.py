"""``contextcite`` equals ContextCite 0.0.4's own outputs on SmolLM2-135M-Instruct, three
ERASER BoolQ passages of six sentences each (its default prompt template, 64 and 32
ablations): the ablated prompts' token ids, each answer token's log-probability, and the
surrogate's weights. ``tests/context/data/contextcite-smollm2-boolq.json`` was made by
``scripts/contextcite_reference.py`` running ContextCite in its own environment."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest

import normxlogit
from normxlogit.methods import get_method
from normxlogit.model.segment_values import answer_log_probs, prompt_ids
from normxlogit.model.segments import resolve_segments

REFERENCE = Path(__file__).parent / "data" / "contextcite-smollm2-boolq.json"
TEMPLATE = "Context: {context}\n\nQuery: {query}"


@functools.cache
def reference() -> dict:
    return json.loads(REFERENCE.read_text())


@functools.cache
def chat():
    return normxlogit.load("smollm2-135m-chat")


def _case(index: int):
    case = reference()["cases"][index]
    text = TEMPLATE.format(context=case["context"], query=case["query"])
    return case, text, resolve_segments(text, case["parts"])


@pytest.mark.parametrize("index", [0, 1, 2])
def test_the_prompt_and_every_ablated_prompt_are_contextcites(index):
    case, text, segments = _case(index)
    assert prompt_ids(chat(), text) == case["prompt_ids"]
    for keep, ids in zip(case["masks"], case["ablated_prompt_ids"], strict=True):
        assert prompt_ids(chat(), segments.without(text, keep)) == ids


def test_each_answer_tokens_log_probability_is_contextcites():
    case, text, segments = _case(1)
    rows = [prompt_ids(chat(), segments.without(text, keep)) for keep in case["masks"][:8]]
    ours = answer_log_probs(chat(), [(rows, None, case["response_ids"])], 8, None)[0]
    # ContextCite keeps the logit-probability log p - log(1 - p) of each token
    theirs = -np.logaddexp(0.0, -np.asarray(case["logit_probs"][:8], dtype=np.float64))
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)


def _close(ours, wanted) -> None:
    wanted = np.asarray(wanted)
    np.testing.assert_allclose(ours, wanted, rtol=1e-4, atol=1e-4 * np.abs(wanted).max())


def test_the_surrogates_weights_at_64_and_32_ablations_are_contextcites():
    case, text, segments = _case(2)
    masks = np.asarray(case["masks"])
    rows = [prompt_ids(chat(), segments.without(text, keep)) for keep in masks]
    answer = case["response_ids"]
    totals = answer_log_probs(chat(), [(rows, None, answer)], 16, None)[0].sum(-1)
    method = get_method("contextcite")
    for count, wanted in ((64, case["attributions"]), (32, case["ablations_32"]["attributions"])):
        weights, bias = method.surrogate(masks[:count], totals[:count], len(answer))
        _close(weights, wanted)
    assert bias == pytest.approx(case["ablations_32"]["bias"], rel=1e-4)


def test_explain_with_contextcite_gives_contextcites_attributions():
    case, text, _ = _case(0)
    cited = chat().explain(
        text,
        method="contextcite",
        ablations=32,
        segments=case["parts"],
        continuation=case["response_ids"],
    )
    _close(cited.segments.scores, case["ablations_32"]["attributions"])
    assert cited.settings["answer_ids"] == case["response_ids"]


def test_its_regression_targets_from_log_probabilities():
    case = reference()["cases"][0]
    log_probs = -np.logaddexp(0.0, -np.asarray(case["logit_probs"], dtype=np.float64))
    ours = get_method("contextcite").outputs(log_probs.sum(-1))
    np.testing.assert_allclose(ours, case["targets"], rtol=1e-5)
