"""Round 36 (a): protocol settings no chosen metric reads are said (P02); a regressor's
ratios where every text's prediction is the same are said (P06); the soft metrics flag
constant explanations (P07)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import normxlogit as nx
from normxlogit.cli.helpers import flags_named
from normxlogit.evaluation import Protocol
from normxlogit.evaluation.unread import settings_checked, unread_message
from normxlogit.methods.random import RandomScores
from normxlogit.workflows import explain_generations

from .conftest import explainable

TEXTS = ["a good movie that is fun and bright", "the plot is thin and dull today"]
SOFT = ["soft_nc", "soft_ns", "pi_soft_nc", "pi_soft_ns"]


def _said(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught]


@pytest.fixture(scope="module")
def classified():
    model = explainable("bert", "classification")
    return model, model.explain(TEXTS, method="normxlogit")


def _evidence(explanations) -> list[np.ndarray]:
    return [np.eye(len(e.tokens))[2] for e in explanations]


def _token_f1(classified, protocol: Protocol) -> list[str]:
    model, made = classified
    return _said(
        lambda: nx.evaluate(model, made, ["token_f1"], evidence=_evidence(made), protocol=protocol)
    )


def _unread(said: list[str]) -> list[str]:
    return [s for s in said if "none of the chosen metrics read" in s]


# ------------------------------------------------------------------ P02


def test_a_threshold_under_top_k_is_said(classified):
    said = _unread(_token_f1(classified, Protocol(score_threshold=0.1)))
    assert len(said) == 1
    assert "Protocol(score_threshold=0.1)" in said[0]
    assert "score_threshold is read only with discretize=threshold" in said[0]


def test_top_k_under_rationale_is_said(classified):
    said = _unread(_token_f1(classified, Protocol(discretize="rationale", top_k=1)))
    assert len(said) == 1 and "top_k is read only with discretize=top_k" in said[0]
    assert "discretize=" not in said[0].split("top_k is")[0].split("(token_f1)")[1]


def test_soft_settings_with_token_f1_alone_are_said(classified):
    said = _unread(_token_f1(classified, Protocol(routing="fixed", samples=7)))
    assert len(said) == 1
    assert "Protocol(routing='fixed')" in said[0] and "Protocol(samples=7)" in said[0]
    assert "read only by pi_soft_nc" in said[0]


def test_defaults_and_read_settings_are_not_said(classified):
    assert not _unread(_token_f1(classified, Protocol()))
    assert not _unread(_token_f1(classified, Protocol(score_threshold=0.5)))  # the default
    assert not _unread(_token_f1(classified, Protocol(top_k=2, seed=4)))  # read; seed never
    assert not _unread(_token_f1(classified, Protocol(discretize="threshold", score_threshold=0.1)))


def test_the_command_line_and_a_config_name_it_in_their_words():
    message = unread_message({"score_threshold": 0.1}, ["token_f1"])
    assert "--protocol score_threshold=0.1" in flags_named(message, "evaluate")
    assert "[protocol] score_threshold = 0.1" in flags_named(message, "bench")


def test_a_config_setting_no_metric_reads_is_said_at_load(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config

    data = tmp_path / "rows.jsonl"
    data.write_text('{"text": "a good movie", "label": 0}\n')
    config = tmp_path / "c.toml"
    config.write_text(
        'methods = ["random"]\nmetrics = ["comp_cd"]\n[protocol]\nrouting = "fixed"\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "{data}"\n'
    )
    said = _unread(_said(lambda: load_config(config)))
    assert len(said) == 1
    assert said[0].startswith("experiment ") and "rows.jsonl: protocol settings" in said[0]
    assert "Protocol(routing='fixed')" in said[0]
    config.write_text(config.read_text().replace('"comp_cd"', '"comp_cd", "soft_nc"'))
    assert not _unread(_said(lambda: load_config(config)))


def test_a_caller_that_checked_the_settings_is_not_told_again(classified):
    with settings_checked():
        assert not _unread(_token_f1(classified, Protocol(score_threshold=0.1)))


# ------------------------------------------------------------------ P06


def test_a_ratio_where_every_prediction_is_the_same_is_said():
    model = explainable("bert", "regression")
    texts = ["a b c d e", "f g h i j"]  # of equal length: every token replaced at one ratio
    made = {"random": model.explain(texts, method="random")}
    # at k=1 comprehensiveness replaces every token, at k=0.1 sufficiency does (int(5 * 0.1)
    # = 0 kept): the texts are then one input, whatever the machine's float rounding (at
    # k=0.9 one token is left, and whether two texts' predictions then agree exactly
    # depends on the CPU's kernels)
    protocol = nx.Protocol(ratios=[0.1, 0.5, 1.0])
    said = _said(
        lambda: nx.evaluate(
            model, made, ["comp_acc", "suff_acc"], labels=[0.8, 0.1], protocol=protocol
        )
    )
    same = [s for s in said if "prediction is the same" in s]
    assert len(same) == 1
    assert "comp_acc at k=1 " in same[0] and "suff_acc at k=0.1" in same[0], same[0]


# ------------------------------------------------------------------ P07


def _constant(said: list[str]) -> list[str]:
    return [s for s in said if s.startswith("constant explanations") and "Soft-NC" in s]


def test_soft_metrics_flag_constant_explanations_once(classified):
    model, _ = classified
    flat = {"random": model.explain(TEXTS, method=RandomScores(equal=True))}
    said = _constant(_said(lambda: nx.evaluate(model, flat, SOFT)))
    assert len(said) == 1
    assert "'random' on 2 texts" in said[0] and "same probability" in said[0]
    ranked = {"normxlogit": classified[1]}
    assert not _constant(_said(lambda: nx.evaluate(model, ranked, SOFT)))


def test_soft_metrics_flag_constant_generation_steps():
    model = explainable("llama", "causal_lm")
    explained = explain_generations(
        model, ["the film was"], {"random": RandomScores(equal=True)}, max_new_tokens=3
    )
    said = _constant(
        _said(lambda: nx.evaluate_generations(model, explained.explanations, ["soft_nc"]))
    )
    assert len(said) == 1 and "'random' on 1 step" in said[0]  # every 5th: step 0
