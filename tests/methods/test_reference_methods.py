"""Each decomposition and context-mixing method equals its authors' public code.

``shared/reference/minilm-sst2-methods.json`` holds what the authors' implementations
computed on the built-in ``minilm-sst2`` model for 16 SST-2 inputs (see the README
beside it): DecompX (mohsenfayyaz/DecompX @ b6bddf0), GlobEnc (mohsenfayyaz/GlobEnc
@ a26b38b), ALTI and attention rollout (mt-upc/transformer-contributions @ 4f89039) and
value zeroing (hmohebbi/ValueZeroing @ 57d448d, run in float64). Every layer's [CLS]
row is compared; an error is measured relative to the largest magnitude of that row
(one text, one layer, or one label's column for DecompX), since scores near zero have
no relative precision to speak of.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import normxlogit

REFERENCE = (
    Path(__file__).resolve().parents[3] / "shared" / "reference" / "minilm-sst2-methods.json"
)
#: largest error allowed, relative to the row's largest magnitude
RTOL = 1e-4


@functools.cache
def reference() -> list[dict]:
    if not REFERENCE.exists():
        pytest.skip(f"reference outputs not available: {REFERENCE} is missing")
    return json.loads(REFERENCE.read_text())["rows"]


def texts() -> list:
    return [
        tuple(row["text"]) if isinstance(row["text"], list) else row["text"] for row in reference()
    ]


@functools.cache
def model():
    return normxlogit.load("minilm-sst2")


@functools.cache
def explained(method: str, texts_per_pass: int = 16, layer=None, target=None, **options) -> list:
    """Explanations of the 16 reference inputs, computed once per method and options
    (``texts_per_pass``: explain's batch_size, apart from a method's own)."""
    built = normxlogit.get_method(method, **options)
    return model().explain(texts(), built, target, layer, batch_size=texts_per_pass)


def relative_error(got: np.ndarray, expected: np.ndarray, axis: int = -1) -> float:
    """Largest ``|got - expected|`` over the largest ``|expected|`` of each row along ``axis``."""
    scale = np.abs(expected).max(axis=axis, keepdims=True)
    return float((np.abs(got - expected) / scale).max())


def assert_rows_match(key: str, method: str, rtol: float = RTOL, **options) -> None:
    """Every layer's [CLS] row of ``method`` against the reference's ``key`` ``[L, T]``."""
    worst = 0.0
    for row, explanation in zip(
        reference(), explained(method, layer="all", **options), strict=True
    ):
        expected = np.asarray(row[key])  # after layer 1 .. L
        got = explanation.scores[1:]  # layer 0 (the embeddings) is the identity
        assert got.shape == expected.shape, f"{key}: shape {got.shape} != {expected.shape}"
        worst = max(worst, relative_error(got, expected))
    assert worst <= rtol, f"{method} {options} differs from reference {key!r} by {worst:.2e}"


def test_the_reference_was_computed_on_this_model():
    batch = model().encode(texts())
    with torch.no_grad():
        logits = model().model(**model().backbone_inputs(batch)).logits.numpy()
    for index, row in enumerate(reference()):
        real = batch.real_positions(index)
        assert batch.input_ids[index, real].tolist() == row["input_ids"], row["text"]
        assert batch.token_type_ids[index, real].tolist() == row["token_type_ids"], row["text"]
        error = relative_error(logits[index], np.asarray(row["logits"]))
        if error > RTOL:
            pytest.fail(
                f"minilm-sst2's logits differ from those the reference was computed with "
                f"(by {error:.1e} relative on {row['text']!r}): the shipped adapter changed; "
                f"recompute {REFERENCE.name} with the authors' code"
            )


@pytest.mark.parametrize(
    ("key", "method", "options"),
    [
        ("globenc", "globenc", {}),
        ("alti", "alti", {}),
        ("alti_layer", "alti", {"rollout": False}),
        ("attention_rollout", "attention_rollout", {}),
        # value zeroing in float32 against the float64 reference: the distance is
        # computed as ||a/|a| - b/|b|||^2 / 2, which keeps it precise (measured 2.6e-6).
        # one text per pass only spares re-running every padding position of a padded batch.
        ("value_zeroing", "value_zeroing", {"texts_per_pass": 1}),
        ("value_zeroing_layer", "value_zeroing", {"rollout": False, "texts_per_pass": 1}),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_mixing_methods_equal_the_reference_at_every_layer(key, method, options):
    assert_rows_match(key, method, **options)


@pytest.mark.parametrize(
    ("key", "method", "options"),
    [("globenc", "globenc", {}), ("alti", "alti", {}), ("alti_layer", "alti", {"rollout": False})],
    ids=["globenc", "alti", "alti_layer"],
)
def test_the_default_layer_is_the_reference_final_layer(key, method, options):
    for row, explanation in zip(reference(), explained(method, **options), strict=True):
        expected = np.asarray(row[key])[-1]
        assert relative_error(explanation.scores, expected) <= RTOL, row["text"]


def test_raw_attention_equals_the_reference_first_layer():
    """The reference's first rollout layer is ((A + I) / 2)[CLS]: A[CLS] = 2 r - e_0."""
    worst = 0.0
    for row, explanation in zip(reference(), explained("attention", layer=1), strict=True):
        expected = 2 * np.asarray(row["attention_rollout"])[0]
        expected[0] -= 1.0
        worst = max(worst, relative_error(explanation.scores, expected))
    assert worst <= RTOL, f"attention differs from the reference by {worst:.2e}"


def test_decompx_equals_the_authors_default_configuration():
    """``include_biases=True, bias_decomp_type="absdot"``: token rows sum to the logits."""
    worst = 0.0
    for row, explanation in zip(reference(), explained("decompx", target="all"), strict=True):
        expected = np.asarray(row["decompx"])  # [T, C]
        worst = max(worst, relative_error(explanation.scores, expected, axis=0))
        np.testing.assert_allclose(explanation.scores.sum(0), row["logits"], rtol=1e-4, atol=1e-4)
    assert worst <= RTOL, f"decompx differs from the reference by {worst:.2e}"


def test_decompx_with_biases_apart_equals_the_bias_token_configuration():
    """``include_bias_token=True, bias_decomp_type=None``: the biases' share is the last row."""
    worst = 0.0
    explanations = explained("decompx", target="all", bias="apart")
    for row, explanation in zip(reference(), explanations, strict=True):
        expected = np.asarray(row["decompx_bias_token"])  # [T + 1, C]
        got = np.vstack([explanation.scores, explanation.diagnostics["bias_share"]])
        worst = max(worst, relative_error(got, expected, axis=0))
    assert worst <= RTOL, f"decompx bias='apart' differs from the reference by {worst:.2e}"
