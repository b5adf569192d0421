"""``attnlrp`` equals the reference implementation, lxt 2.1's efficient AttnLRP.

The reference outputs (``tests/data/attnlrp/*.json``) were made by running lxt itself in
an environment of its own (lxt 2.1, torch 2.6.0, transformers 4.52.4: the versions its
README was tested with) on the same weights and token ids: ``scripts/lxt_reference.py``
says how. Each file holds, per text, the token ids, and per target the output column,
lxt's logit and lxt's relevance per token, ``(inputs_embeds * grad).sum(-1)``.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.common.errors import InvalidInputError, UnsupportedModelError
from normxlogit.model.targets import output_column

from ..conftest import assert_padding_sides_agree, build_model, explainable, fresh_tokenizer

DATA = Path(__file__).resolve().parents[1] / "data" / "attnlrp"

#: the tiny random models lxt was also run on: (family, head) of tests/conftest.py
TINY = {"tiny-bert": ("bert", "classification"), "tiny-llama": ("llama", "causal_lm")}
#: relative tolerance, to the largest score of a target
TOLERANCE = 1e-4


def tiny_network(name: str):
    """A tiny random model whose weights do not depend on how transformers initialises:
    every parameter is drawn here from one seeded generator (word, position and segment
    embeddings N(0, 1); linear weights N(0, 1.5²/fan-in); norm weights 1 + N(0, 0.2²);
    biases N(0, 0.2²)), large enough that every nonlinearity matters."""
    network = build_model(*TINY[name])
    generator = torch.Generator().manual_seed(2024)
    with torch.no_grad():
        for key, parameter in sorted(network.named_parameters()):
            noise = torch.randn(parameter.shape, generator=generator)
            if key.endswith("bias"):
                parameter.copy_(0.2 * noise)
            elif parameter.dim() == 1:  # a norm's weight
                parameter.copy_(1 + 0.2 * noise)
            elif "embed" in key:
                parameter.copy_(noise)
            else:
                parameter.copy_(1.5 * noise / math.sqrt(parameter.shape[-1]))
    return network


@functools.cache
def model(name: str):
    if name in TINY:
        return normxlogit.load((tiny_network(name), fresh_tokenizer()))
    return normxlogit.load(name)


@functools.cache
def reference(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _outputs(explainer, item: dict) -> torch.Tensor:
    """The model's outputs for the reference's text, after checking that the project feeds
    it lxt's token ids."""
    batch = explainer.encode([item["text"]])
    assert batch.input_ids[0].tolist() == item["input_ids"], "the text tokenises otherwise"
    return explainer.forward(batch).logits[0]


def _scores(explanation, width: int) -> np.ndarray:
    """Scores ``[K, T]``."""
    return np.asarray(explanation.scores).reshape(len(explanation.tokens), width).T


CASES = ["tiny-bert", "tiny-llama", "minilm-sst2", "smollm2-sst2-prompted"]


@pytest.mark.parametrize("name", CASES)
def test_equals_lxt(name):
    """Every target's scores are lxt's, to 1e-4 of the largest (measured: 2e-6)."""
    data = reference(name)
    assert data["lxt"] == "2.1"
    explainer = model(name)
    for item in data["items"]:
        outputs = _outputs(explainer, item)
        targets = [entry["target"] for entry in item["targets"]]
        explanation = explainer.explain(item["text"], method="attnlrp", target=targets)
        ours = _scores(explanation, len(targets))
        for k, entry in enumerate(item["targets"]):
            logit = float(outputs[output_column(explainer, entry["target"])])
            assert logit == pytest.approx(entry["logit"], rel=1e-5, abs=1e-5), (
                f"{name} computes another logit than the model lxt ran: its weights changed; "
                "remake the reference with scripts/lxt_reference.py"
            )
            theirs = np.asarray(entry["relevance"])
            gap = np.abs(ours[k] - theirs).max() / np.abs(theirs).max()
            assert gap <= TOLERANCE, (name, item["text"], entry["target"], gap)


def test_contrast_is_the_difference_of_lxts_relevances():
    """Target A against B: lxt's relevance for A minus its relevance for B."""
    name = "minilm-sst2"
    item = reference(name)["items"][0]
    first, second = item["targets"]
    explanation = model(name).explain(
        item["text"], method="attnlrp", target=first["target"], contrast=second["target"]
    )
    theirs = np.asarray(first["relevance"]) - np.asarray(second["relevance"])
    gap = np.abs(np.asarray(explanation.scores) - theirs).max() / np.abs(theirs).max()
    assert gap <= TOLERANCE


@pytest.mark.parametrize("name", list(TINY))
def test_contrast_is_the_difference_of_the_targets(name):
    """Relevance of A against B is A's minus B's; the conservation gap is measured against
    the explained output, A's logit minus B's."""
    explainer = model(name)
    item = reference(name)["items"][0]
    a, b = (entry["target"] for entry in item["targets"])
    both = _scores(explainer.explain(item["text"], method="attnlrp", target=[a, b]), 2)
    contrast = explainer.explain(item["text"], method="attnlrp", target=a, contrast=b)
    np.testing.assert_allclose(contrast.scores, both[0] - both[1], rtol=1e-5, atol=1e-6)
    outputs = _outputs(explainer, item)
    explained = float(outputs[output_column(explainer, a)] - outputs[output_column(explainer, b)])
    gap = contrast.diagnostics["conservation_gap"][0]
    assert gap == pytest.approx(float(np.sum(contrast.scores)) - explained, rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("name", list(TINY))
def test_same_scores_alone_and_in_a_padded_batch(name):
    texts = [item["text"] for item in reference(name)["items"]] + ["dull"]
    assert_padding_sides_agree(*TINY[name], texts, method="attnlrp", target=0, atol=1e-5)
    explainer = model(name)
    together = explainer.explain(texts, method="attnlrp", target=0)
    for text, joint in zip(texts, together, strict=True):
        alone = explainer.explain(text, method="attnlrp", target=0)
        assert alone.tokens == joint.tokens
        np.testing.assert_allclose(alone.scores, joint.scores, rtol=1e-4, atol=1e-6)


def test_reduce_option():
    explainer = model("tiny-bert")
    text = reference("tiny-bert")["items"][0]["text"]
    signed = np.asarray(explainer.explain(text, method="attnlrp", target=0).scores)
    l1 = np.asarray(explainer.explain(text, method="attnlrp", target=0, reduce="l1").scores)
    assert (l1 >= np.abs(signed) - 1e-7).all() and (signed < 0).any()
    with pytest.raises(InvalidInputError, match="reduce='max' is not one of"):
        explainer.explain(text, method="attnlrp", reduce="max")


def test_refuses_a_family_without_rules():
    explainer = explainable("gpt2", "causal_lm")
    with pytest.raises(UnsupportedModelError) as caught:
        explainer.explain("dull", method="attnlrp")
    message = str(caught.value)
    assert "\n" not in message
    assert "bert, granite, llama" in message and "'gpt2'" in message


def test_refuses_a_layout_the_model_does_not_have():
    explainer = copy.copy(model("tiny-bert"))
    layout = replace(explainer.family.relevance, key="attention.self.keys")
    explainer.family = replace(explainer.family, relevance=layout)
    with pytest.raises(UnsupportedModelError, match="module at 'attention.self.keys'"):
        explainer.explain("dull", method="attnlrp")


def test_leaves_the_model_as_it_was():
    explainer = model("tiny-llama")

    def state():
        flags = [p.requires_grad for p in explainer.model.parameters()]
        hooks = [
            (len(m._forward_hooks), len(m._forward_pre_hooks)) for m in explainer.model.modules()
        ]
        return flags, hooks

    before = state()
    explainer.explain("dull", method="attnlrp")
    assert state() == before
