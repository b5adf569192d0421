"""Round thirty-nine, Python and CLI (probe a):

- P01: with segments, evidence words no metric reads are advised the token metrics
  (``token_f1``, ``token_iou``, ``auprc``), which read them, not the segment metrics.
- P02: evidence segments (Python ``evidence_segments=``, a file's evidence_segments
  column) add the segment metrics to the defaults where segments are explained, or a
  warning says why they are not scored and what reads them.
- P04: the ReAGent refusal of ``explain_and_evaluate``, ``explain_texts`` and the
  sanity checks advises an instance in ``methods=`` (they take no method options).
- P05: a contrast-input record holding a wrong type names it (not "empty").
- Noted: no metrics asked for is refused first, with no word about the evidence.
"""

from __future__ import annotations

import json
import warnings

import pytest

import normxlogit
from normxlogit import Explanation
from normxlogit.common.errors import InvalidInputError, NormXLogitError, NormXLogitWarning

from .conftest import explainable, invoke_in, sharp_model

TEXTS = ["a good film. It is long.", "a bad film. That drags on."]
TOKEN_METRICS = ["token_f1", "token_iou", "auprc"]
SEGMENT_METRICS = ["segment_hit_1", "segment_hit_3", "segment_auprc"]


@pytest.fixture(scope="module")
def bert():
    return explainable("bert", "classification")  # three labels


def _run(call):
    """``call``'s result and the library's warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = call()
    said = [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]
    return made, said


def _evidence_said(said: list[str], name: str) -> list[str]:
    return [m for m in said if m.startswith(f"{name} is given but not scored")]


# ------------------------------------------------------------------------------ P01
def test_segmented_evidence_words_are_advised_the_token_metrics(bert):
    _, said = _run(
        lambda: normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], segments="sentences", evidence_words=[[1], [2]]
        )
    )
    warned = _evidence_said(said, "evidence_words")
    assert warned and "'token_f1', 'token_iou', 'auprc'" in warned[0]
    assert "segment_hit" not in warned[0]


def test_the_advised_token_metrics_score_segmented_evidence_words(bert):
    made, said = _run(
        lambda: normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], segments="sentences",
            evidence_words=[[1], [2]], metrics=["comp_cd", *TOKEN_METRICS],
        )
    )  # fmt: skip
    assert list(made.result.summary().columns) == ["comp_cd", *TOKEN_METRICS]
    assert not _evidence_said(said, "evidence_words")


def test_evidence_words_beside_segment_metrics_are_advised_a_call_of_their_own(bert):
    _, said = _run(
        lambda: normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], segments="sentences",
            evidence_words=[[1], [2]], evidence_segments=[[0], [1]],
        )
    )  # fmt: skip
    warned = _evidence_said(said, "evidence_words")
    assert warned and "in a call of its own with metrics=['token_f1'" in warned[0]


# ------------------------------------------------------------------------------ P02
def test_evidence_segments_with_segments_are_scored_by_default(bert):
    made, said = _run(
        lambda: normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], segments="sentences",
            evidence_segments=[[0], [1]],
        )
    )  # fmt: skip
    assert list(made.result.summary().columns) == ["comp_cd", "suff_cd", *SEGMENT_METRICS]
    assert not _evidence_said(said, "evidence_segments")


def test_evidence_segments_no_metric_reads_are_warned(bert):
    made, said = _run(
        lambda: normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], segments="sentences",
            evidence_segments=[[0], [1]], metrics=["comp_cd"],
        )
    )  # fmt: skip
    assert list(made.result.summary().columns) == ["comp_cd"]  # as asked
    warned = _evidence_said(said, "evidence_segments")
    assert warned and "add 'segment_hit_1', 'segment_hit_3', 'segment_auprc'" in warned[0]


def test_evidence_segments_without_segments_are_warned(bert):
    made, said = _run(
        lambda: normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], evidence_segments=[[0], [1]]
        )
    )
    assert list(made.result.summary().columns) == ["comp_cd", "suff_cd"]
    warned = _evidence_said(said, "evidence_segments")
    assert warned and "no segments are explained" in warned[0] and "pass segments=" in warned[0]


def test_evidence_segments_lacking_for_a_text_are_warned_not_scored(bert):
    made, said = _run(
        lambda: normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], segments="sentences",
            evidence_segments=[[0], None],
        )
    )  # fmt: skip
    assert list(made.result.summary().columns) == ["comp_cd", "suff_cd"]
    warned = _evidence_said(said, "evidence_segments")
    assert warned and "text 1 has none" in warned[0]


@pytest.fixture
def segment_file(tmp_path):
    rows = [
        {"text": text, "label": "pos", "segments": text.split(". "), "evidence_segments": [i]}
        for i, text in enumerate(TEXTS)
    ]
    path = tmp_path / "seg.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _evaluate_file(tmp_path, model, path, *flags):
    args = ("evaluate", path.name, "-m", str(model), "--method", "normxlogit", "-f", "csv")
    return invoke_in(tmp_path, *args, *flags)


def test_cli_scores_the_evidence_segments_column_with_segments_data(
    tmp_path, tiny_classifier, segment_file
):
    result = _evaluate_file(tmp_path, tiny_classifier, segment_file, "--segments", "data")
    assert result.exit_code == 0, result.output
    assert "segment_hit_1,segment_hit_3,segment_auprc" in result.output


@pytest.mark.parametrize("flags", [(), ("--segments", "sentences")], ids=["none", "sentences"])
def test_cli_warns_of_evidence_segments_it_does_not_score(
    tmp_path, tiny_classifier, segment_file, flags
):
    result = _evaluate_file(tmp_path, tiny_classifier, segment_file, *flags)
    assert result.exit_code == 0, result.output
    assert "the evidence_segments column is not scored" in result.output
    assert "pass --segments data to score it" in result.output
    assert "segment_hit_1," not in result.output.replace("(segment_hit_1, ", "")


def test_cli_with_both_evidence_columns_scores_the_words_and_says_so(tmp_path, tiny_classifier):
    rows = [
        {"text": text, "label": "pos", "segments": text.split(". "), "evidence_segments": [0]}
        | {"evidence": [1]}
        for text in TEXTS
    ]
    path = tmp_path / "both.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = _evaluate_file(tmp_path, tiny_classifier, path, "--segments", "data")
    assert result.exit_code == 0, result.output
    assert "token_f1,token_iou,auprc" in result.output
    assert "score it in a run of its own with --metric segment_hit_1" in result.output


# ------------------------------------------------------------------------------ P04
FIX = "pass methods={'reagent': get_method('reagent', stopping_condition_top_k=1)}"


def test_explain_and_evaluate_advises_a_reagent_instance(bert):
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.explain_and_evaluate(bert, TEXTS, methods=["reagent"])
    assert FIX in str(caught.value)
    assert "pass stopping_condition_top_k=1" not in str(caught.value)


def test_explain_texts_and_sanity_advise_a_reagent_instance_under_its_key(bert):
    from normxlogit.sanity import parameter_randomization
    from normxlogit.workflows import explain_texts

    with pytest.raises(InvalidInputError) as caught:
        explain_texts(bert, TEXTS, {"mine": "reagent"})
    assert "pass methods={'mine': get_method('reagent', stopping_condition_top_k=1)}" in str(
        caught.value
    )
    with pytest.raises(InvalidInputError, match="pass methods=\\{'reagent': get_method"):
        parameter_randomization(bert, TEXTS, ["reagent"])


def test_the_missing_tagger_is_advised_a_uniform_reagent_instance(bert, monkeypatch):
    from normxlogit.methods import reagent
    from normxlogit.workflows import explain_texts

    monkeypatch.setattr(reagent, "pos_sampler_refusal", lambda tokenizer, fix: f"no spaCy; {fix}")
    with pytest.raises(InvalidInputError) as caught:
        explain_texts(bert, TEXTS, {"reagent": "reagent"})
    assert "pass methods={'reagent': get_method('reagent', sampler='uniform')}" in str(caught.value)


def test_the_advised_reagent_instance_is_taken(bert):
    from normxlogit.workflows import refuse_missing_tagger

    method = normxlogit.get_method("reagent", stopping_condition_top_k=1, sampler="uniform")
    refuse_missing_tagger({"reagent": method}, bert)  # no refusal


def test_explain_keeps_its_own_keyword_advice(bert):
    with pytest.raises(InvalidInputError, match="pass stopping_condition_top_k=1 "):
        normxlogit.explain(bert, TEXTS[0], "reagent")


# ------------------------------------------------------------------------------ P05
@pytest.fixture(scope="module")
def against_input(tmp_path_factory):
    path = tmp_path_factory.mktemp("p05") / "e.json"
    sharp_model().explain(
        "a good film indeed", "gradient_x_input", contrast_input="a bad film indeed"
    ).save(path)
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("contrast_input", 5, "settings.contrast_input is an int (5), not text"),
        ("contrast_input", ["a bad film"], "settings.contrast_input is a list"),
        ("contrast_input_tokens", [1, 2], "settings.contrast_input_tokens holds 1 at 0, not text"),
        ("contrast_alignment", "x", "settings.contrast_alignment is a str ('x'), not a list"),
        ("contrast_alignment", [0, 99], "settings.contrast_alignment holds 99 at 1, not a token"),
        ("contrast_alignment", [True], "settings.contrast_alignment holds True at 0"),
    ],
)
def test_a_contrast_input_field_of_the_wrong_type_is_named(
    tmp_path, against_input, field, value, said
):
    data = json.loads(json.dumps(against_input))
    data["settings"][field] = value
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    with pytest.raises(NormXLogitError) as caught:
        Explanation.load(path)
    assert said in str(caught.value)
    assert "is empty" not in str(caught.value)


def test_an_emptied_contrast_input_is_still_said_empty(tmp_path, against_input):
    data = json.loads(json.dumps(against_input))
    data["settings"]["contrast_input"] = ""
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    with pytest.raises(NormXLogitError, match="incomplete .settings.contrast_input is empty"):
        Explanation.load(path)


def test_the_saved_contrast_input_file_loads(tmp_path, against_input):
    path = tmp_path / "e.json"
    path.write_text(json.dumps(against_input))
    assert Explanation.load(path).settings["contrast_input"] == "a bad film indeed"


# ----------------------------------------------------------------------------- Noted
def test_no_metrics_is_refused_without_an_evidence_warning(bert):
    explained, _ = _run(lambda: normxlogit.explain(bert, TEXTS, "normxlogit"))
    evidence = [[1] + [0] * (len(e.scores) - 1) for e in explained]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InvalidInputError, match="no metrics asked for"):
            normxlogit.evaluate(bert, explained, metrics=[], evidence=evidence)
    assert not [w for w in caught if "evidence" in str(w.message)]


def test_explain_and_evaluate_refuses_no_metrics_before_explaining(bert, never_explained):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InvalidInputError, match="no metrics asked for"):
            normxlogit.explain_and_evaluate(
                bert, TEXTS, methods=["normxlogit"], metrics=[], evidence_words=[[1], [2]],
                evidence_segments=[[0], [1]], segments="sentences",
            )  # fmt: skip
    assert not [w for w in caught if "evidence" in str(w.message)]
