"""``contrast_prob_diff`` is Inseq 0.7.1's step score; ``same_prefix_prob_diff`` is ours.

Inseq reads the contrast token after the contrast's own prefix (its ``contrast_targets``
is a whole sequence, right-aligned with the explained one); ``same_prefix_prob_diff``
reads it after the explained prefix. ``data/smollm2-inseq-contrast-prob-diff.json`` holds
what Inseq itself computed on SmolLM2 (its ``config`` says how).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.explaining.contrast_sequences import inseq_aligned_positions
from normxlogit.explanations.generation import GenerationExplanation
from normxlogit.generation import contrast_prob_diff

from ..conftest import explainable

REFERENCE = Path(__file__).parent / "data" / "smollm2-inseq-contrast-prob-diff.json"
PROMPT = "the cat sat on the"


def test_inseq_pairs_positions_from_the_end_of_both_sequences():
    # 5 steps after a 5-token prompt against a 7-token contrast: steps read 2 .. 6
    assert inseq_aligned_positions(10, 5, 7) == [2, 3, 4, 5, 6]
    assert inseq_aligned_positions(9, 5, 13) == [9, 10, 11, 12]  # a longer contrast
    # where the contrast runs out (position <= 0), Inseq reads its last token
    assert inseq_aligned_positions(6, 2, 3) == [2, 2, 1, 2]


def test_contrast_prob_diff_reads_the_contrast_after_its_own_prefix():
    model = explainable("llama", "causal_lm")
    made = model.explain(PROMPT, "logat", continuation=[5, 6, 7], contrast=[9, 9, 8])
    theirs = model.explain(PROMPT, "logat", continuation=[9, 9, 8])  # the contrast sequence
    scores = made.step_scores
    inseq = np.array(made.step_probs) - np.array(theirs.step_probs)
    np.testing.assert_allclose(scores["contrast_prob_diff"], inseq, atol=1e-6)
    # the first step's prefix is the prompt in both: the two differences agree there only
    assert scores["contrast_prob_diff"][0] == pytest.approx(scores["same_prefix_prob_diff"][0])
    assert not np.allclose(scores["contrast_prob_diff"][1:], scores["same_prefix_prob_diff"][1:])
    assert made.input_ids is not None
    contrast = made.input_ids[: made.prompt_length] + [9, 9, 8]
    direct = contrast_prob_diff(model, made.input_ids, made.prompt_length, contrast)
    np.testing.assert_allclose(direct, scores["contrast_prob_diff"], atol=1e-6)


def test_contrast_prob_diff_refuses_what_inseq_cannot_read():
    model = explainable("llama", "causal_lm")
    with pytest.raises(InvalidInputError, match="needs at least 2"):
        contrast_prob_diff(model, [4, 5, 6], 1, [9])
    with pytest.raises(InvalidInputError, match="leaves no prompt"):
        contrast_prob_diff(model, [4, 5, 6], 3, [9, 9])


def test_a_saved_same_prefix_difference_keeps_its_meaning_under_its_new_name(tmp_path):
    model = explainable("llama", "causal_lm")
    made = model.explain(PROMPT, "logat", continuation=[5, 6, 7], contrast=[9, 9, 8])
    path = tmp_path / "new.json"
    made.save(path)
    assert GenerationExplanation.load(path).step_scores == made.step_scores
    data = json.loads(path.read_text())  # as saved before the rename: the same-prefix one
    scores = data["step_scores"]  # under Inseq's name, and no Inseq difference
    del scores["contrast_prob_diff"]
    scores["contrast_prob_diff"] = scores.pop("same_prefix_prob_diff")
    path.write_text(json.dumps(data))
    old = GenerationExplanation.load(path)
    assert old.step_scores["same_prefix_prob_diff"] == made.step_scores["same_prefix_prob_diff"]
    assert "contrast_prob_diff" not in old.step_scores


@functools.cache
def _reference() -> dict:
    return json.loads(REFERENCE.read_text())


@functools.cache
def _model(name: str):
    return normxlogit.load(name)


CASES = [item["id"] for item in _reference()["inputs"]]


@pytest.mark.real
@pytest.mark.parametrize("case", CASES)
def test_contrast_prob_diff_equals_inseqs_on_smollm2(case):
    item = next(i for i in _reference()["inputs"] if i["id"] == case)
    model = _model(item["model"])
    ids, prompt_length, contrast = item["input_ids"], item["prompt_length"], item["contrast_ids"]
    inseq = item["step_scores"]["contrast_prob_diff"]
    ours = contrast_prob_diff(model, ids, prompt_length, contrast)
    np.testing.assert_allclose(ours, inseq, atol=1e-5, rtol=0)
    if len(contrast) - item["contrast_prompt_length"] != len(ids) - prompt_length:
        return  # a contrast continuation of another length: not an explanation's contrast
    # the same through explain: a contrast continuation, or a contrast prompt
    contrast_prompt, head = item["contrast_prompt"], item["contrast_prompt_length"]
    settings = {"contrast_input": contrast_prompt} if contrast_prompt else {}
    if not contrast_prompt:
        settings["contrast"] = contrast[head:]
    made = model.explain(item["prompt"], "logat", continuation=ids[prompt_length:], **settings)
    assert made.input_ids == ids
    np.testing.assert_allclose(made.step_scores["contrast_prob_diff"], inseq, atol=1e-5, rtol=0)
    np.testing.assert_allclose(made.step_probs, item["step_scores"]["probability"], atol=1e-5)
