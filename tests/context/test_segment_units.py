"""Faithfulness with segments as units (``Protocol(unit="segment")``, issue 42)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.evaluation import Protocol
from tests.conftest import sharp_model

TEXT = "The film opens slowly. Then it soars! The cast is great. I left happy."
SOFT = ["soft_nc", "soft_ns", "pi_soft_nc", "pi_soft_ns", "expected_retained"]


def _values(result, metric):
    frame = result.frame
    return frame[frame["metric"] == metric].sort_values(["instance", "x"])["value"].to_numpy()


def test_single_token_segments_score_as_tokens_do_on_the_soft_metrics():
    model = sharp_model()
    words = "the cast is great and the plot is thin"
    explained = model.explain(words, segments=words.split())
    assert all(m is not None for m in explained.segments.token_segments[1:-1])  # one each
    protocol = Protocol(samples=4, pis=(0.2, 0.5, 0.8))
    tokens = normxlogit.evaluate(model, [explained], SOFT, protocol=protocol, progress=False)
    units = normxlogit.evaluate(
        model, [explained], SOFT, protocol=protocol.with_options(unit="segment"), progress=False
    )
    for metric in SOFT:
        np.testing.assert_allclose(_values(units, metric), _values(tokens, metric), atol=1e-6)


def test_comprehensiveness_removes_the_top_segments_whole():
    model = sharp_model()
    explained = model.explain(TEXT, method="leave_one_out", segments="sentences")
    segments = explained.segments
    protocol = Protocol(unit="segment", ratios=(0.25, 0.5, 0.75), replacement="mask")
    result = normxlogit.evaluate(model, [explained], ["comp_cd"], protocol=protocol, progress=False)
    column = model.labels.index(explained.label)

    def probability(text):
        return float(model.forward(model.encode([text])).logits.softmax(-1)[0, column])

    order = np.argsort(-segments.scores, kind="stable")
    tokenizer = model.tokenizer
    expected = []
    for ratio in (0.25, 0.5, 0.75):
        chosen = set(order[: int(len(segments.texts) * ratio)].tolist())
        masked = TEXT
        for index in sorted(chosen):
            piece = segments.texts[index]
            masked = masked.replace(piece, " ".join(["[MASK]"] * len(tokenizer.tokenize(piece))))
        expected.append(probability(TEXT) - probability(masked))
    np.testing.assert_allclose(_values(result, "comp_cd"), expected, atol=1e-5)


def test_every_method_keeps_the_same_expected_number_of_segments():
    model = sharp_model()
    made = {
        name: model.explain(
            [TEXT, "One part. Two parts here. Three!"], method=name, segments="sentences"
        )
        for name in ("normxlogit", "leave_one_out")
    }
    protocol = Protocol(unit="segment", samples=3, pis=(0.5,))
    result = normxlogit.evaluate(
        model, made, ["pi_soft_ns", "pi_soft_nc"], protocol=protocol, progress=False
    )
    assert np.isfinite(result.frame["value"]).all()
    assert result.protocol.unit == "segment"


def test_segment_units_need_segments_and_the_same_ones_in_every_method():
    model = sharp_model()
    plain = model.explain([TEXT])
    with pytest.raises(InvalidInputError, match="explain with segments="):
        normxlogit.evaluate(model, plain, ["comp_cd"], protocol=Protocol(unit="segment"))
    first = model.explain([TEXT], segments="sentences")
    other = model.explain([TEXT], method="random", segments=[["The film opens slowly."]])
    with pytest.raises(InvalidInputError, match="same segments="):
        normxlogit.evaluate(
            model, {"a": first, "b": other}, ["comp_cd"], protocol=Protocol(unit="segment")
        )
    with pytest.raises(InvalidInputError, match="unit="):
        Protocol(unit="word")


def test_units_draws_and_spreading():
    from normxlogit.evaluation.units import Units

    members = torch.tensor([[-1, 0, 0, 1, -1, 1]])
    units = Units(members, torch.zeros(1, 1, 2), torch.tensor([2]))
    tokens = torch.tensor([[False, True, True, True, True, True]])
    assert units.allowed(tokens).tolist() == [[True, True]]
    assert units.first_positions(tokens).tolist() == [[1, 3]]
    chosen = torch.tensor([[[False, True]]])  # [M, B, U]
    assert units.to_tokens(chosen, tokens).tolist() == [[[False, False, False, True, False, True]]]


def test_segment_plausibility_ranks_the_evidence_segments():
    from normxlogit.explanations.segments import SegmentScores

    model = sharp_model()
    texts = [TEXT, "One part. Two parts here. Three!"]
    made = model.explain(texts, method="leave_one_out", segments="sentences")
    # scores set by hand: the evidence segment second-ranked in text 0, first in text 1
    made[0].segments = SegmentScores(
        made[0].segments.texts,
        made[0].segments.token_segments,
        np.array([0.9, 0.1, 0.5, 0.0]),
        "native",
    )
    made[1].segments = SegmentScores(
        made[1].segments.texts, made[1].segments.token_segments, np.array([0.2, 0.8, 0.1]), "native"
    )
    metrics = ["segment_auprc", "segment_hit_1", "segment_hit_3"]
    result = normxlogit.evaluate(model, made, metrics, evidence=[[2], [1]], progress=False)
    assert _values(result, "segment_hit_1").tolist() == [0.0, 1.0]
    assert _values(result, "segment_hit_3").tolist() == [1.0, 1.0]
    # ERASER's trapezoid from the curve's last point (recall 1, precision 1/2) down to
    # (recall 0, precision 0): 0.25; the evidence ranked first: 1
    assert _values(result, "segment_auprc") == pytest.approx([0.25, 1.0])
    with pytest.warns(UserWarning, match="1 of 2 texts have no evidence segment"):
        normxlogit.evaluate(model, made, metrics, evidence=[[], [1]], progress=False)
    with pytest.raises(InvalidInputError, match="the text has 3 segments"):
        normxlogit.evaluate(model, made, metrics, evidence=[[2], [3]], progress=False)
    with pytest.raises(InvalidInputError, match="separate calls"):
        normxlogit.evaluate(model, made, ["segment_auprc", "auprc"], evidence=[[2], [1]])


def test_contextcites_top_k_drop_and_lds_from_the_text_itself():
    from normxlogit.model.segments import resolve_segments

    model = sharp_model()
    explained = model.explain(TEXT, method="leave_one_out", segments="sentences")
    protocol = Protocol(drop_k=(1, 2, 9), lds_ablations=12)
    result = normxlogit.evaluate(
        model, [explained], ["segment_drop", "segment_lds"], protocol=protocol, progress=False
    )
    drop = _values(result, "segment_drop")
    segments = resolve_segments(TEXT, "sentences")
    column = model.labels.index(explained.label)

    def log_probability(keep):
        text = segments.without(TEXT, keep)
        batch = model.encoder.encode([text], check=False)
        return float(torch.log_softmax(model.forward(batch).logits, -1)[0, column])

    order = np.argsort(-explained.segments.scores, kind="stable")
    full = log_probability([True] * 4)
    for k, value in zip((1, 2), drop[:2], strict=True):
        keep = [index not in order[:k] for index in range(4)]
        assert value == pytest.approx(full - log_probability(keep), abs=1e-5)
    # 9 segments asked of 4: all of them removed, as any ranking would (round six, F06)
    assert drop[2] == pytest.approx(full - log_probability([False] * 4), abs=1e-5)
    lds = _values(result, "segment_lds")
    assert -1 <= lds[0] <= 1


def test_segment_checks_need_segments():
    model = sharp_model()
    with pytest.raises(InvalidInputError, match="segment_lds reads segments.*has none"):
        normxlogit.evaluate(model, [model.explain(TEXT)], ["segment_lds"], progress=False)


def test_a_whole_answer_is_scored_by_its_summed_log_probability_after_each_removal():
    """ContextCite's checks on a whole answer (a segment method with continuation=): the
    value of a rendering is the answer's tokens' log-probabilities after it, summed,
    computed here by hand from the model's logits; the metrics that read one prediction
    refuse it before any work, naming those that read answers."""
    from normxlogit.model.segment_values import prompt_ids
    from normxlogit.model.segments import resolve_segments
    from tests.conftest import build_model, fresh_tokenizer

    lm = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()))
    continuation = " the cast is great"
    answer = lm.explain(
        TEXT, method="leave_one_out", segments="sentences", continuation=continuation
    )
    other = lm.explain(
        TEXT, method="shapley_sampling", segments="sentences", continuation=continuation
    )
    protocol = Protocol(drop_k=(1, 3), lds_ablations=10)
    made = {"loo": [answer], "shapley": [other]}
    result = normxlogit.evaluate(
        lm,
        made,
        ["segment_drop", "segment_lds", "segment_hit_1"],
        evidence=[[2]],
        protocol=protocol,
        progress=False,
    )
    segments = resolve_segments(TEXT, "sentences")
    ids = answer.settings["answer_ids"]
    view = lm.language_model_view()

    def log_probability(keep):
        prompt = prompt_ids(view, segments.without(TEXT, keep))
        row = torch.tensor([prompt + ids])
        with torch.no_grad():
            logits = view.model(input_ids=row).logits[0].float()
        steps = torch.log_softmax(logits[len(prompt) - 1 : -1], -1)
        return float(steps.gather(1, torch.tensor(ids)[:, None]).sum())

    full = log_probability([True] * 4)
    # leave-one-out's own scores are the drops of one segment: its top-1 drop is its top score
    frame = result.frame
    loo = frame[(frame["metric"] == "segment_drop") & (frame["method"] == "loo")]
    assert loo["value"].iloc[0] == pytest.approx(answer.segments.scores.max(), abs=1e-4)
    order = np.argsort(-other.segments.scores, kind="stable")
    shapley = frame[(frame["metric"] == "segment_drop") & (frame["method"] == "shapley")]
    for k, value in zip((1, 3), shapley["value"], strict=True):
        keep = [index not in order[:k] for index in range(4)]
        assert value == pytest.approx(full - log_probability(keep), abs=1e-4)
    lds = frame[frame["metric"] == "segment_lds"]["value"]
    assert lds.between(-1, 1).all()
    with pytest.raises(InvalidInputError, match="comp_cd cannot score.*segment_drop"):
        normxlogit.evaluate(lm, [answer], ["segment_drop", "comp_cd"], progress=False)


def test_what_a_point_perturbs_in_segment_units():
    from normxlogit.evaluation.hard import perturbed_tokens

    model = sharp_model()
    explained = model.explain(TEXT, method="leave_one_out", segments="sentences")
    protocol = Protocol(unit="segment", replacement="mask")
    chosen = perturbed_tokens(model, explained, "comp_cd", 0.5, protocol)
    top = set(np.argsort(-explained.segments.scores, kind="stable")[:2].tolist())
    expected = [m is not None and m in top for m in explained.segments.token_segments]
    assert chosen == expected
