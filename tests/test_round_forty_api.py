"""Round forty, Python and CLI (probe a):

- P01: evidence given as one string (``evidence_words="01"``, ``evidence_segments="01"``)
  is refused before any work by ``explain_and_evaluate`` and ``evaluate_texts``, under the
  default metrics too (it was dropped unsaid there).
- P02: ``explain_texts`` and ``explain_generations`` take a list of method names, or one
  name, as ``explain_and_evaluate`` does (a bare AttributeError before); anything else is
  refused in one line.
- P03: a saved generation explanation opened with ``EvaluationResult.load`` or
  ``SanityResult.load`` names ``GenerationExplanation.load``, the loader that reads it.
- P04: an emptied ``contrast_input_tokens`` is named as empty (not blamed on
  ``contrast_alignment`` with a range "0 to -1"), with or without a null alignment.
- P05: ``explain_and_evaluate(methods=[] / {})`` is refused saying what methods= takes (not
  "pass model.explain(...) results"); a method instance in a list is told the
  ``methods={name: instance}`` form; ``explain_texts(..., {})`` is refused.
- P06: the CLI's "evidence column is not scored" warning advises evidence on every row,
  which adds the evidence metrics to the defaults, not ``--metric`` flags that replace them.
- Noted: the segment metrics' no-evidence warning is given once, naming the metrics; the
  evidence metrics' empty-evidence warning says "the target position left out" only for a
  masked LM; the ReAGent advice keeps the instance's other options (``sampler='uniform'``).
"""

from __future__ import annotations

import json
import warnings

import pytest

import normxlogit
from normxlogit import Explanation
from normxlogit.common.errors import InvalidInputError, NormXLogitError, NormXLogitWarning
from normxlogit.workflows import evaluate_texts, explain_generations, explain_texts

from .conftest import explainable, invoke_in
from .test_round_thirtynine_api import against_input  # noqa: F401 (a fixture)

TEXTS = ["a good film. It is long.", "a bad film. That drags on."]
SEGMENT_METRICS = ["segment_hit_1", "segment_hit_3", "segment_auprc"]


@pytest.fixture(scope="module")
def explained(bert):
    return {"normxlogit": normxlogit.explain(bert, TEXTS, "normxlogit")}


def _said(call) -> tuple[object, list[str]]:
    """``call``'s result and the library's warnings it gave (every one, repeats too)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = call()
    return made, [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]


# ------------------------------------------------------------------------------ P01
WORDS_REFUSAL = "evidence_words is a str; give one list of word indices per text"
SEGMENTS_REFUSAL = "evidence_segments is a str; give one list of segment indices per text"


def test_explain_and_evaluate_refuses_string_evidence_words_under_the_defaults(
    bert, never_explained
):
    with pytest.raises(InvalidInputError, match=WORDS_REFUSAL):
        normxlogit.explain_and_evaluate(bert, TEXTS, methods=["normxlogit"], evidence_words="01")


def test_explain_and_evaluate_refuses_string_evidence_segments_under_the_defaults(
    bert, never_explained
):
    with pytest.raises(InvalidInputError, match=SEGMENTS_REFUSAL):
        normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], segments="sentences", evidence_segments="01"
        )


def test_the_refusal_is_the_one_a_metric_that_reads_it_gives(bert, never_explained):
    with pytest.raises(InvalidInputError, match=WORDS_REFUSAL):
        normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], evidence_words="01", metrics=["token_f1"]
        )


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"evidence_words": "01"}, WORDS_REFUSAL),
        ({"evidence_words": b"01"}, "evidence_words is a bytes"),
        ({"evidence_words": {0: [1], 1: [2]}}, "evidence_words is a dict; give a list"),
        ({"evidence_segments": "01"}, SEGMENTS_REFUSAL),
    ],
)
def test_evaluate_texts_refuses_evidence_that_is_no_list(bert, explained, given, said):
    with pytest.raises(InvalidInputError, match=said):
        evaluate_texts(bert, explained, **given)


# ------------------------------------------------------------------------------ P02
@pytest.mark.parametrize("methods", [["normxlogit"], "normxlogit", ("normxlogit",)])
def test_explain_texts_takes_method_names(bert, methods):
    made = explain_texts(bert, TEXTS, methods)
    by_name = explain_texts(bert, TEXTS, {"normxlogit": "normxlogit"})
    assert list(made.explanations) == ["normxlogit"]
    for ours, theirs in zip(
        made.explanations["normxlogit"], by_name.explanations["normxlogit"], strict=True
    ):
        assert ours.scores.tolist() == theirs.scores.tolist()


def test_explain_generations_takes_method_names(gpt2):
    made = explain_generations(gpt2, ["The movie"], ["normxlogit"], max_new_tokens=2)
    assert list(made.explanations) == ["normxlogit"]
    assert len(made.explanations["normxlogit"][0].step_scores) == 2


@pytest.mark.parametrize(
    ("methods", "said"),
    [
        (5, "methods=5: give a list of method names, or a dict of name -> method"),
        ([3], "methods: 3 is an int, not a method name"),
        (["normxlogit", "normxlogit"], "methods names 'normxlogit' more than once"),
        ({"n": 3}, "methods\\['n'\\] is an int, not a method"),
    ],
)
def test_explain_texts_refuses_other_methods_in_one_line(bert, methods, said):
    with pytest.raises(InvalidInputError, match=said):
        explain_texts(bert, TEXTS, methods)


def test_explain_generations_refuses_other_methods_in_one_line(gpt2):
    with pytest.raises(InvalidInputError, match="methods: an empty list"):
        explain_generations(gpt2, ["The movie"], [], max_new_tokens=2)


# ------------------------------------------------------------------------------ P03
@pytest.fixture(scope="module")
def saved_generation(gpt2, tmp_path_factory):
    path = tmp_path_factory.mktemp("p03") / "g.json"
    gpt2.explain("The movie", "normxlogit", generate=True, max_new_tokens=2).save(path)
    return path


def test_the_evaluation_loader_names_the_generation_loader(saved_generation):
    with pytest.raises(NormXLogitError) as caught:
        normxlogit.EvaluationResult.load(saved_generation)
    assert "it is a generation explanation: use normxlogit.GenerationExplanation.load" in str(
        caught.value
    )
    assert "Explanation.load" not in str(caught.value).replace("GenerationExplanation.load", "")


def test_the_sanity_loader_names_the_generation_loader(saved_generation):
    from normxlogit.sanity.randomization import SanityResult

    with pytest.raises(NormXLogitError, match="use normxlogit.GenerationExplanation.load"):
        SanityResult.load(saved_generation)


def test_the_named_loader_reads_the_file(saved_generation):
    assert isinstance(
        normxlogit.GenerationExplanation.load(saved_generation), normxlogit.GenerationExplanation
    )


def test_saved_kind_tells_a_generation_from_a_text_explanation(saved_generation):
    from normxlogit.common.saved_kinds import EXPLANATIONS_LOADER, GENERATION_LOADER, saved_kind

    data = json.loads(saved_generation.read_text())
    data = data[0] if isinstance(data, list) else data
    assert saved_kind(data) == ("a generation explanation", GENERATION_LOADER)
    assert saved_kind([data]) == ("a generation explanation", GENERATION_LOADER)
    assert saved_kind([data, data])[1] == EXPLANATIONS_LOADER


# ------------------------------------------------------------------------------ P04


@pytest.mark.parametrize("null_alignment", [False, True], ids=["as-saved", "all-null"])
def test_emptied_contrast_input_tokens_are_named(tmp_path, against_input, null_alignment):  # noqa: F811
    data = json.loads(json.dumps(against_input))
    settings = data["settings"]
    settings["contrast_input_tokens"] = []
    if null_alignment:  # the record then held no contrast token at all, and loaded
        settings["contrast_alignment"] = [None] * len(settings["contrast_alignment"])
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    with pytest.raises(NormXLogitError) as caught:
        Explanation.load(path)
    said = str(caught.value)
    assert "incomplete (settings.contrast_input_tokens is empty)" in said
    assert "0 to -1" not in said and "contrast_alignment holds" not in said


# ------------------------------------------------------------------------------ P05
@pytest.mark.parametrize(("methods", "kind"), [([], "list"), ({}, "dict")])
def test_explain_and_evaluate_refuses_no_methods_saying_what_it_takes(
    bert, never_explained, methods, kind
):
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.explain_and_evaluate(bert, TEXTS, methods=methods)
    said = str(caught.value)
    assert f"methods: an empty {kind}; give a list of method names, or a dict" in said
    assert "model.explain" not in said


def test_an_instance_in_a_list_is_told_the_dict_form(bert, never_explained):
    method = normxlogit.get_method("integrated_gradients", steps=3)
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.explain_and_evaluate(bert, TEXTS, methods=["normxlogit", method])
    assert (
        "methods={'integrated_gradients': normxlogit.get_method('integrated_gradients', "
        "**options), ...}"
    ) in str(caught.value)


def test_the_dict_form_is_taken(bert):
    method = normxlogit.get_method("integrated_gradients", steps=3)
    made = normxlogit.explain_and_evaluate(
        bert, TEXTS[:1], methods={"normxlogit": "normxlogit", "ig": method}, metrics=["comp_cd"]
    )
    assert list(made.explained.explanations) == ["normxlogit", "ig"]


def test_explain_texts_refuses_no_methods(bert):
    with pytest.raises(InvalidInputError, match="methods: an empty dict"):
        explain_texts(bert, TEXTS, {})


# ------------------------------------------------------------------------------ P06
def _evidence_file(tmp_path, rows: list[dict]):
    path = tmp_path / "ev.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_cli_advises_evidence_on_every_row_not_flags_that_drop_the_defaults(
    tmp_path, tiny_classifier
):
    path = _evidence_file(
        tmp_path,
        [{"text": TEXTS[0], "label": "pos", "evidence": [1]}, {"text": TEXTS[1], "label": "neg"}],
    )
    args = ("evaluate", path.name, "-m", str(tiny_classifier), "--method", "normxlogit")
    result = invoke_in(tmp_path, *args, "-f", "csv")
    assert result.exit_code == 0, result.output
    assert "fill it on every row to score it (token_f1, token_iou, auprc are then " in (
        result.output
    )
    assert "added to the default metrics" in result.output
    assert "--metric" not in result.output


def test_cli_advises_evidence_segments_on_every_row(tmp_path, tiny_classifier):
    rows = [
        {"text": text, "label": "pos", "segments": text.split(". ")}
        | ({"evidence_segments": [0]} if i == 0 else {})
        for i, text in enumerate(TEXTS)
    ]
    path = _evidence_file(tmp_path, rows)
    args = ("evaluate", path.name, "-m", str(tiny_classifier), "--method", "normxlogit")
    result = invoke_in(tmp_path, *args, "-f", "csv", "--segments", "data")
    assert result.exit_code == 0, result.output
    assert "fill it on every row to score it (segment_hit_1" in result.output
    assert "--metric" not in result.output


# ----------------------------------------------------------------------------- Noted
def test_the_segment_no_evidence_warning_is_given_once_naming_the_metrics(bert):
    _, said = _said(
        lambda: normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], segments="sentences",
            evidence_segments=[[0], []], metrics=SEGMENT_METRICS,
        )
    )  # fmt: skip
    empty = [m for m in said if "have no evidence segment" in m]
    assert len(empty) == 1
    assert "segment_auprc, segment_hit_1 and segment_hit_3 are n/a" in empty[0]


def _empty_evidence_warning(model, texts, **explain) -> str:
    made = [model.explain(text, "normxlogit", **explain) for text in texts]
    evidence = [[0] * len(made[0].tokens), [1] + [0] * (len(made[1].tokens) - 1)]
    _, said = _said(
        lambda: normxlogit.evaluate(
            model, {"normxlogit": made}, ["evidence_ap", "evidence_dot"], evidence=evidence
        )
    )
    (warned,) = [m for m in said if "marks no token" in m]
    return warned


def test_the_empty_evidence_warning_leaves_out_no_target_position_for_a_classifier(bert):
    warned = _empty_evidence_warning(bert, TEXTS)
    assert "target position" not in warned
    assert "evidence_ap and evidence_dot are n/a" in warned


def test_the_empty_evidence_warning_still_says_it_for_a_masked_lm():
    model = explainable("bert", "masked_lm")
    texts = ["Susan revealed [MASK].", "The cat [MASK] here."]
    warned = _empty_evidence_warning(model, texts, target="the")
    assert "(the target position left out)" in warned


def test_the_reagent_advice_keeps_the_instances_other_options(bert):
    method = normxlogit.get_method("reagent", sampler="uniform", max_probe_steps=4)
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.explain_and_evaluate(bert, TEXTS, methods={"R": method})
    assert (
        "pass methods={'R': get_method('reagent', stopping_condition_top_k=1, "
        "max_probe_steps=4, sampler='uniform')}"
    ) in str(caught.value)


def test_the_kept_advice_is_taken(bert):
    from normxlogit.workflows import refuse_missing_tagger

    method = normxlogit.get_method(
        "reagent", stopping_condition_top_k=1, max_probe_steps=4, sampler="uniform"
    )
    refuse_missing_tagger({"R": method}, bert)  # no refusal
