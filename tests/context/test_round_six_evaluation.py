"""Round six of new-user probes (issue 41), the segment evaluation: each test is one
finding of /work/probes-round6/findings-python.md (F06 to F12, F18), with a tiny model."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError, NormXLogitWarning
from normxlogit.evaluation import Protocol
from tests.conftest import sharp_model

TEXTS = [
    "The plot is thin. The acting is wonderful! I would see it again.",
    "It starts well. Then it drags. The end is a mess.",
]
FOUR = "The film opens slowly. Then it soars! The cast is great. I left happy."


def _said(call) -> list[str]:
    """The messages of the NormXLogitWarnings ``call()`` gives."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in seen if issubclass(w.category, NormXLogitWarning)]


def _negated(items):
    return [replace(e, segments=replace(e.segments, scores=-e.segments.scores)) for e in items]


def _constant(items):
    return [
        replace(e, segments=replace(e.segments, scores=np.ones_like(e.segments.scores)))
        for e in items
    ]


def _values(result, metric):
    frame = result.frame
    return frame[frame["metric"] == metric].sort_values(["instance", "x"])["value"].to_numpy()


def test_f06_segment_drop_removes_all_segments_at_a_k_above_their_count_and_says_so():
    """The guide's example (two 3-sentence texts, drop_k 1, 3, 5) gives a number: the top 5
    of 3 segments are the 3, the same for every ranking, which a warning counts per k."""
    model = sharp_model()
    made = {"loo": model.explain(TEXTS, "leave_one_out", segments="sentences")}
    result = None

    def run():
        nonlocal result
        result = normxlogit.evaluate(model, made, ["segment_drop"], progress=False)

    said = _said(run)
    assert np.isfinite(result.summary().frame.loc["loo", "segment_drop"])
    drop = _values(result, "segment_drop").reshape(2, 3)  # texts x (k = 1, 3, 5)
    np.testing.assert_allclose(drop[:, 1], drop[:, 2])  # k = 3 and 5 both remove all
    assert any("k=3 on 2 of 2, k=5 on 2 of 2 texts" in m for m in said)


def test_f07_segment_plausibility_warns_where_no_ranking_matters():
    """Every segment marked, or fewer than k segments not marked for hit@k, or one
    segment: a method and its negation score alike, and a warning counts the texts."""
    model = sharp_model()
    loo = model.explain(TEXTS, "leave_one_out", segments="sentences")
    made = {"loo": loo, "negated": _negated(loo)}
    metrics = ["segment_hit_3", "segment_auprc"]
    result = None

    def run(evidence, chosen=metrics, explained=made):
        nonlocal result
        result = normxlogit.evaluate(model, explained, chosen, evidence=evidence, progress=False)

    said = _said(lambda: run([[0, 1, 2], [0, 1, 2]]))
    assert any(m.startswith("2 of 2 texts mark every segment the model read") for m in said)
    said = _said(lambda: run([[0], [2]], ["segment_hit_3"]))
    assert (_values(result, "segment_hit_3") == 1).all()
    assert any("fewer than 3 segments that are not evidence" in m for m in said)
    one = {"a": model.explain(TEXTS, segments=[[t] for t in TEXTS])}
    said = _said(lambda: run([[0], [0]], ["segment_hit_1"], one))
    assert any("a text of one segment always does" in m for m in said)
    # where the ranking matters, nothing is said
    four = {"loo": model.explain([FOUR], "leave_one_out", segments="sentences")}
    assert _said(lambda: run([[2]], ["segment_hit_1", "segment_auprc"], four)) == []


def test_f08_one_segment_texts_have_no_lds_or_soft_value():
    """Over subsets of one segment the LDS is ±1 and pi-Soft keeps it with probability pi
    whatever its score: n/a with a warning; a text of several segments keeps its value."""
    model = sharp_model()
    made = {"a": model.explain(TEXTS, segments=[[TEXTS[0]], "sentences"])}
    result = None

    def run(metrics, protocol):
        nonlocal result
        result = normxlogit.evaluate(model, made, metrics, protocol=protocol, progress=False)

    said = _said(lambda: run(["segment_lds"], Protocol(lds_ablations=8)))
    lds = _values(result, "segment_lds")
    assert np.isnan(lds[0]) and np.isfinite(lds[1])
    assert any(m.startswith("1 of 2 texts have fewer than 2 segments") for m in said)
    protocol = Protocol(unit="segment", samples=3, pis=(0.5,))
    said = _said(lambda: run(["pi_soft_nc", "soft_ns"], protocol))
    for metric in ("pi_soft_nc", "soft_ns"):
        values = _values(result, metric)
        assert np.isnan(values[0]) and np.isfinite(values[1])
    assert any("1 of 2 texts have one segment or none the soft metrics perturb" in m for m in said)


def test_f09_constant_segment_scores_are_flagged():
    model = sharp_model()
    made = {"constant": _constant(model.explain(TEXTS, "leave_one_out", segments="sentences"))}
    said = _said(
        lambda: normxlogit.evaluate(
            model, made, ["segment_hit_1", "segment_auprc"], evidence=[[0], [0]], progress=False
        )
    )
    assert any(m.startswith("constant segment scores ('constant' on 2 texts)") for m in said)


def test_f10_a_0_1_mask_given_as_segment_evidence_is_refused():
    model = sharp_model()
    made = {"loo": model.explain(TEXTS, "leave_one_out", segments="sentences")}
    mask = r"holds segment [01] twice .*; give segment indices, e\.g\. \[0, 2\], not a 0/1 mask"
    for evidence in ([[1, 0, 0], [0, 0, 1]], [[1, 1], [0]]):
        with pytest.raises(InvalidInputError, match=mask):
            normxlogit.evaluate(model, made, ["segment_hit_1"], evidence=evidence, progress=False)
    normxlogit.evaluate(model, made, ["segment_hit_1"], evidence=[[0, 2], [1]], progress=False)


def test_f11_segment_checks_remove_the_occurrence_that_was_explained():
    """Spans on a text whose segment text repeats ("Good. Good."): the top-1 drop removes
    the second "Good." leave-one-out scored, so it equals leave-one-out's top score."""
    from normxlogit.evaluation.segment_checks import explained_segments

    model = sharp_model()
    text = "Good. Good. The end."
    explained = model.explain(text, "leave_one_out", segments=[(6, 11), (12, 20)])
    _, places = model.encoder.token_places(text)
    spans = explained_segments(text, explained.segments, places, "segments").spans
    assert spans == ((0, 6, 11), (0, 12, 20))
    result = normxlogit.evaluate(
        model, [explained], ["segment_drop"], protocol=Protocol(drop_k=(1,)), progress=False
    )
    assert _values(result, "segment_drop")[0] == pytest.approx(
        explained.segments.scores.max(), abs=1e-4
    )


def test_f12_a_truncated_text_is_ranked_over_the_segments_read_and_counted():
    model = sharp_model()
    long = " ".join(f"This is sentence number {i}." for i in range(120))  # past 512 tokens
    made = {"g": model.explain([long, TEXTS[0]], segments="sentences")}
    read = {m for m in made["g"][0].segments.token_segments if m is not None}
    unread = len(made["g"][0].segments.texts) - len(read)
    assert unread > 0
    result = None

    def run():
        nonlocal result
        result = normxlogit.evaluate(
            model,
            made,
            ["segment_hit_1", "segment_drop", "segment_lds"],
            evidence=[[0], [0]],
            protocol=Protocol(drop_k=(1,), lds_ablations=6),
            progress=False,
        )

    said = _said(run)
    assert np.isfinite(result.frame["value"]).all()
    assert any(
        m.startswith(f"1 of 2 texts have segments the model did not read ({unread} segments")
        for m in said
    )


def test_f18_infinite_segment_scores_are_refused_in_one_line():
    model = sharp_model()
    made = model.explain(TEXTS, segments="sentences")
    made[0] = replace(
        made[0], segments=replace(made[0].segments, scores=np.array([np.inf, 1, 2], "float32"))
    )
    message = "holds NaN or infinite segment scores, which rank no segments"
    with pytest.raises(InvalidInputError, match=message):
        normxlogit.evaluate(model, {"g": made}, ["segment_auprc"], evidence=[[1], [1]])
    with pytest.raises(InvalidInputError, match=message):
        protocol = Protocol(unit="segment", samples=2, pis=(0.5,))
        normxlogit.evaluate(model, {"g": made}, ["pi_soft_nc"], protocol=protocol)
