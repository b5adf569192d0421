"""The one explain-and-evaluate path (normxlogit.workflows) that the command line, the
bench and the page take: it must give what explain and evaluate give when called alone."""

from __future__ import annotations

import numpy as np
import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError, UnsupportedModelError
from normxlogit.explaining.texts import forward_batches
from normxlogit.workflows import (
    evaluate_texts,
    explain_and_evaluate,
    explain_generations,
    explain_texts,
    methods_by_name,
    metric_needs,
)

from .conftest import explainable, sharp_model

TEXTS = [
    "a gripping film",
    "dull and far too long for what it has to say",
    "fine",
    "the cast is superb and the script sharp",
    "not good",
]


def test_forward_batches_keep_a_target_together_and_bound_each_pass():
    model = sharp_model()
    targets = ["pos", "neg", "pos", "neg", None]
    assert forward_batches(model, TEXTS, targets, 2) == [[0, 2], [1, 3], [4]]
    one_each = forward_batches(model, TEXTS, [None] * 5, 1)
    assert sorted(i for batch in one_each for i in batch) == list(range(5))
    # longest first, as explain groups them, and never over the token budget
    lengths = [len(model.tokenizer(text)["input_ids"]) for text in TEXTS]
    budgeted = forward_batches(model, TEXTS, [None] * 5, 4, max_tokens=30)
    assert all(len(b) * max(lengths[i] for i in b) <= 30 or len(b) == 1 for b in budgeted)
    assert [i for b in budgeted for i in b] == sorted(range(5), key=lambda i: -lengths[i])


def test_explaining_texts_equals_explain_for_each_target_and_reports_progress():
    model = sharp_model()
    targets = [0, 2, None, 0, 1]
    reports: dict[str, list[int]] = {}

    class Recorder:
        def __init__(self, name, count):
            self.name, self.count = name, count

        def __enter__(self):
            reports[self.name] = []
            return reports[self.name].append

        def __exit__(self, *exc):
            return False

    explained = explain_texts(
        model,
        TEXTS,
        methods_by_name(["normxlogit", "gradient_x_input"]),
        targets,
        batch_size=2,
        progress=Recorder,
    )
    for name, made in explained.explanations.items():
        for text, target, explanation in zip(TEXTS, targets, made, strict=True):
            alone = model.explain(text, method=name, target=target)
            assert explanation.text == text and explanation.targets == alone.targets
            # padded batches round differently: the same tolerance as the batch-size tests
            np.testing.assert_allclose(explanation.scores, alone.scores, rtol=1e-4, atol=1e-4)
        assert reports[name][-1] == len(TEXTS) and reports[name] == sorted(reports[name])
        # each text's cost is its batch's time shared among the batch
        assert all(s > 0 for s in explained.seconds[name])
        # targets 0, 2, None, 0, 1 in batches of two: texts 0 and 3 share theirs
        assert explained.batch_sizes[name] == [2, 1, 1, 2, 1]
        assert explained.seconds[name][0] == explained.seconds[name][3]
    assert explained.skipped == {}


def test_a_method_that_does_not_apply_is_skipped_only_when_asked():
    class Refuses(normxlogit.AttributionMethod):
        name = "refuses"

        def attribute(self, model, forward, targets, layers):
            raise UnsupportedModelError("refuses needs another architecture")

    model = sharp_model()
    methods = {"refuses": Refuses(), "normxlogit": "normxlogit"}
    explained = explain_texts(model, TEXTS[:2], methods, skip=(UnsupportedModelError,))
    assert explained.skipped == {"refuses": "refuses needs another architecture"}
    assert list(explained.explanations) == ["normxlogit"]
    with pytest.raises(UnsupportedModelError):
        explain_texts(model, TEXTS[:2], methods)


def test_later_methods_explain_what_the_first_one_wrote():
    model = explainable("llama", "causal_lm")
    explained = explain_generations(
        model,
        ["the film was"],
        {"normxlogit": "normxlogit", "gradient_norm": "gradient_norm"},
        max_new_tokens=4,
    )
    first, second = (made[0] for made in explained.explanations.values())
    assert first.steps == 4 and second.input_ids == first.input_ids
    assert first.generated_by_model and not second.generated_by_model
    # what the second explains equals explaining that continuation directly
    alone = model.explain(
        "the film was", method="gradient_norm", continuation=first.input_ids[first.prompt_length :]
    )
    np.testing.assert_allclose(second.scores, alone.scores, rtol=1e-5, atol=1e-7)


def test_explain_and_evaluate_equals_explain_then_evaluate():
    model = sharp_model()
    labels = ["LABEL_0", "LABEL_2", "LABEL_1", "LABEL_0", "LABEL_2"]
    made = explain_and_evaluate(
        model, TEXTS, ["normxlogit", "random"], ["comp_cd", "suff_acc"], labels=labels, seed=3
    )
    by_hand = {
        name: model.explain(TEXTS, method=method)
        for name, method in methods_by_name(["normxlogit", "random"], seed=3).items()
    }
    result = normxlogit.evaluate(
        model,
        by_hand,
        ["comp_cd", "suff_acc"],
        labels=labels,
        protocol=normxlogit.Protocol(seed=3),
        progress=False,
    )
    left, right = made.result.frame, result.frame
    assert list(left.columns) == list(right.columns) and len(left) == len(right)
    np.testing.assert_allclose(
        left["value"].to_numpy(float), right["value"].to_numpy(float), rtol=1e-5, atol=1e-6
    )
    assert normxlogit.explain_and_evaluate is explain_and_evaluate


def test_the_metrics_get_labels_and_evidence_only_when_they_read_them():
    assert metric_needs(["comp_cd"]) == metric_needs(["suff_cd", "comp_cd"])
    assert metric_needs(["comp_acc"]).labels and not metric_needs(["comp_acc"]).evidence
    model = sharp_model()
    explanations = {"normxlogit": model.explain(TEXTS[:2])}
    # no labels needed: none passed on, even wrong ones (one per text: a count that
    # differs is refused, as evaluate refuses it; round 45)
    evaluate_texts(model, explanations, ["comp_cd"], labels=["?", "?"], progress=False)
    with pytest.raises(InvalidInputError, match="labels"):
        explain_and_evaluate(model, TEXTS[:2], ["normxlogit"], ["comp_acc"])
    with pytest.raises(InvalidInputError, match="no evidence words"):
        evaluate_texts(
            model, explanations, ["evidence_ap"], evidence_words=[[0], None], progress=False
        )


def test_every_front_end_spells_a_target_the_same_way():
    from normxlogit.bench.config import _target as config_target
    from normxlogit.common.targets import requested_target
    from normxlogit.serve.work import _target as page_target

    model = sharp_model()
    for raw, meant in [(None, None), ("", None), ("prediction", None), ("LABEL_1", "LABEL_1")]:
        assert requested_target(raw) == meant == page_target(raw, model)
        if raw != "":  # a config writes "prediction" or leaves target out
            assert config_target(raw, "method x:") == meant
    assert requested_target(2) == 2 and requested_target("all") == "all"
    for blank in ("  ", "\t"):
        with pytest.raises(InvalidInputError, match="blank"):
            requested_target(blank)
        with pytest.raises(InvalidInputError, match="target must be one string: .*, all or"):
            config_target(blank, "method x:")
