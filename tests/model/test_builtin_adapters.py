"""The adapters trained by `normxlogit train` and shipped as built-ins, on easy examples.

Each loads the real base (MiniLM, or SmolLM2 from its cache) with its shipped adapter
merged, so these are marked ``real``; each takes a few seconds.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import normxlogit
from normxlogit.builtin.adapters import MANIFEST
from normxlogit.builtin.sources import WEIGHTS_DIR

pytestmark = pytest.mark.real

POSITIVE = "A gripping, beautifully acted film that never lets go. I loved it."
NEGATIVE = "A dull, lifeless and badly written mess. What a waste of time."


@functools.cache
def load(name: str):
    if not (WEIGHTS_DIR / name / MANIFEST).is_file():
        pytest.skip(f"{name} is not trained yet (normxlogit train {name} --overwrite-builtin)")
    return normxlogit.load(name)


def labels_of(model, texts) -> list[str]:
    return [explanation.label for explanation in model.explain(texts)]


def test_smollm2_sst2_classifies_and_explains_with_its_score_head():
    model = load("smollm2-sst2")
    assert model.family.name == "llama" and model.labels == ("negative", "positive")
    positive, negative = model.explain([POSITIVE, NEGATIVE], method="normxlogit")
    assert (positive.label, negative.label) == ("positive", "negative")
    assert positive.probs["positive"] > 0.9 and negative.probs["negative"] > 0.9
    texts = [POSITIVE, NEGATIVE, "The acting is wooden and the plot never takes off."]
    explanations = {m: model.explain(texts, method=m) for m in ("normxlogit", "random")}
    result = normxlogit.evaluate(model, explanations, ["comp_cd", "suff_cd"])
    assert result.protocol.replacement == "delete"  # a decoder: tokens are removed
    values = result.summary().values
    assert np.isfinite(values.to_numpy()).all() and (values.abs() <= 1).all().all()
    # measured: comp_cd 0.27 (normxlogit) against 0.16 (random)
    assert values.loc["normxlogit", "comp_cd"] > values.loc["random", "comp_cd"]


def test_smollm2_stsb_scores_a_paraphrase_above_an_unrelated_pair():
    model = load("smollm2-stsb")
    assert model.task.kind is normxlogit.TaskKind.REGRESSION
    close, far = model.explain(
        [
            ("A man is playing a guitar.", "A man plays the guitar."),
            ("A man is playing a guitar.", "The stock market fell sharply today."),
        ]
    )
    assert close.value > 3.0 and far.value < 1.5
    assert "<|endoftext|>" in close.tokens  # the separator between the two sentences


def test_smollm2_sst2_prompted_answers_both_labels_unlike_the_zero_shot_prompt():
    model = load("smollm2-sst2-prompted")
    assert model.task.prompted and model.labels == ("negative", "positive")
    assert labels_of(model, [POSITIVE, NEGATIVE]) == ["positive", "negative"]
    explanation = model.explain(NEGATIVE, method="normxlogit", target="all")
    assert explanation.tokens[-3:] == ["ass", "istant", "Ċ"]  # read after the chat prompt
    assert labels_of(load_zero_shot(), [POSITIVE, NEGATIVE]) == ["positive", "positive"]


@functools.cache
def load_zero_shot():
    return normxlogit.load("smollm2-135m-sentiment")


def test_minilm_mnli_tells_entailment_from_contradiction():
    model = load("minilm-mnli")
    assert model.labels == ("entailment", "neutral", "contradiction")
    pairs = [
        ("A man is playing a guitar on stage.", "A man is playing an instrument."),
        ("A man is playing a guitar on stage.", "Nobody is playing a guitar."),
    ]
    assert labels_of(model, pairs) == ["entailment", "contradiction"]


def test_minilm_qnli_finds_the_sentence_that_answers():
    model = load("minilm-qnli")
    assert model.labels == ("entailment", "not_entailment")
    pairs = [
        ("When was the Eiffel Tower built?", "The Eiffel Tower was built between 1887 and 1889."),
        ("When was the Eiffel Tower built?", "Bananas are rich in potassium."),
    ]
    assert labels_of(model, pairs) == ["entailment", "not_entailment"]


def test_smollm2_boolq_prompted_reads_a_question_and_passage():
    model = load("smollm2-boolq-prompted")
    assert model.labels == ("false", "true") and model.task.prompt.fields == (
        "question",
        "passage",
    )
    passage = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
    explanation = model.explain(("is the eiffel tower in paris", passage), target="all")
    assert sum(explanation.probs.values()) == pytest.approx(1.0)
    assert "Passage" in "".join(explanation.tokens).replace("Ġ", " ")
