"""Round thirty-eight, Python and CLI (probe a):

- P01: the ReAGent stopping-top-k refusal names the ``--option`` spelling that takes
  effect: the user's own value to change, where one was given (``reagent.NAME`` wins).
- P02: a target of several tokens, one of them [UNK], is said to be several tokens.
- P03: list settings (``--protocol ratios=.5``) read numbers as a single value does.
- P04: a saved file of explanations opened with another loader names load_explanations.
- P05: an evaluate summary (``-o``) is advised ``evaluate --save``, the loadable file.
- P06: evidence given with the default metrics is scored (Python, as the CLI does), and
  evidence no asked-for metric reads is warned of.
"""

from __future__ import annotations

import json
import warnings

import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError, NormXLogitError, NormXLogitWarning
from normxlogit.sanity import SanityResult

from .conftest import explainable, invoke_in

TEXTS = ["a good movie that is fun", "the plot is thin and dull"]


@pytest.fixture(scope="module")
def bert():
    return explainable("bert", "classification")  # three labels


def _messages(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]


# ------------------------------------------------------------------------------ P01
@pytest.mark.parametrize(
    "given", ["reagent.stopping_condition_top_k=3", "stopping_condition_top_k=3"]
)
def test_reagent_refusal_names_the_given_value_to_change(tmp_path, tiny_classifier, given):
    (tmp_path / "two.txt").write_text("a good film\nthe plot is thin\n")
    runs = [
        ("explain", "a good film"),
        ("evaluate", "two.txt", "--metric", "comp_cd"),
        ("sanity", "two.txt"),
    ]
    for command, *rest in runs:
        result = invoke_in(
            tmp_path, command, *rest, "-m", str(tiny_classifier), "--method", "reagent",
            "--option", "reagent.sampler=uniform", "--option", given,
        )  # fmt: skip
        assert result.exit_code != 0, command
        assert f"change --option {given} to 1" in result.output, (command, result.output)


def test_reagent_refusal_advises_the_spelling_that_wins():
    from normxlogit.cli.helpers import option_fix

    name = "stopping_condition_top_k"
    fix = option_fix("explain", [], name).format(name=name, value=1)
    assert fix == "add --option stopping_condition_top_k=1"
    both = ["stopping_condition_top_k=1", "REAGENT.stopping_condition_top_k=03"]
    assert option_fix("explain", both, name).format(name=name, value=1) == (
        "change --option REAGENT.stopping_condition_top_k=03 to 1"
    )


# ------------------------------------------------------------------------------ P02
@pytest.mark.parametrize("role", ["target", "contrast"])
def test_a_multi_token_target_with_an_unknown_word_is_said_to_be_several_tokens(role):
    mlm = explainable("bert", "masked_lm")
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.explain(mlm, "a good [MASK]", **{role: "good ☃"})
    said = str(caught.value)
    assert f"{role} 'good ☃' is 2 tokens (good, [UNK]" in said
    assert "must be a single token" in said and "reads as [UNK]" not in said
    with pytest.raises(InvalidInputError, match=r"reads as \[UNK\]"):  # one unknown word
        normxlogit.explain(mlm, "a good [MASK]", **{role: "☃"})


# ------------------------------------------------------------------------------ P03
@pytest.mark.parametrize(
    ("text", "values"),
    [(".5", (0.5,)), ("0.5,.7", (0.5, 0.7)), ("[.5]", (0.5,)), ("[0.2, .5 ]", (0.2, 0.5))],
)
def test_list_settings_read_numbers_as_one_value_does(text, values):
    protocol = normxlogit.Protocol().with_options(ratios=text, pis=text)
    assert protocol.ratios == values and protocol.pis == values


@pytest.mark.parametrize("text", ["a", "0.5,", "[.5,[1]]", "true"])
def test_list_settings_still_refuse_what_is_no_number(text):
    with pytest.raises(NormXLogitError, match="must be a list of numbers"):
        normxlogit.Protocol().with_options(ratios=text)


# ------------------------------------------------------------------------- P04, P05
@pytest.fixture(scope="module")
def saved(bert, tmp_path_factory):
    folder = tmp_path_factory.mktemp("saved")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explained = normxlogit.explain(bert, TEXTS, "normxlogit")
    normxlogit.save_explanations(explained, folder / "many.json")
    explained[0].save(folder / "one.json")
    summary = {"values": {"normxlogit": {"comp_cd": 0.1}}, "metrics": {"comp_cd": {}}}
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "summary.csv").write_text("method,comp_cd,suff_cd\nnormxlogit,0.1,0.2\n")
    return folder


@pytest.mark.parametrize("loader", [normxlogit.EvaluationResult.load, SanityResult.load])
def test_a_file_of_explanations_names_its_loader(saved, loader):
    with pytest.raises(NormXLogitError) as many:
        loader(saved / "many.json")
    assert "it is a list of 2 explanations: use normxlogit.load_explanations" in str(many.value)
    with pytest.raises(NormXLogitError) as one:
        loader(saved / "one.json")
    assert "it is an explanation: use normxlogit.Explanation.load" in str(one.value)


@pytest.mark.parametrize(
    "loader",
    [
        normxlogit.EvaluationResult.load,
        SanityResult.load,
        normxlogit.Explanation.load,
        normxlogit.load_explanations,
    ],
)
@pytest.mark.parametrize("name", ["summary.json", "summary.csv"])
def test_an_evaluate_summary_is_advised_save(saved, loader, name):
    with pytest.raises(NormXLogitError) as caught:
        loader(saved / name)
    said = str(caught.value)
    assert "evaluate --save result.json" in said and "evaluate -o result.json" not in said


def test_the_cli_summary_json_is_recognised(tmp_path, tiny_classifier):
    (tmp_path / "two.txt").write_text("a good film\nthe plot is thin\n")
    args = ("evaluate", "two.txt", "-m", str(tiny_classifier), "--method", "normxlogit", "-q")
    assert invoke_in(tmp_path, *args, "-o", "c.json").exit_code == 0
    with pytest.raises(NormXLogitError, match="evaluate -o writes.*evaluate --save"):
        normxlogit.EvaluationResult.load(tmp_path / "c.json")


# ------------------------------------------------------------------------------ P06
EVIDENCE_METRICS = ["token_f1", "token_iou", "auprc"]


def test_evidence_words_with_the_default_metrics_are_scored(bert):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], evidence_words=[[1], [5]]
        )
    assert list(made.result.summary().columns) == ["comp_cd", "suff_cd", *EVIDENCE_METRICS]


def test_evidence_with_the_default_metrics_is_scored(bert):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explained = normxlogit.explain(bert, TEXTS, "normxlogit")
        evidence = [[0] * len(e.scores) for e in explained]
        evidence[0][2] = evidence[1][6] = 1
        result = normxlogit.evaluate(bert, explained, evidence=evidence)
    assert list(result.summary().columns) == ["comp_cd", "suff_cd", *EVIDENCE_METRICS]


def test_evidence_no_metric_reads_is_warned(bert):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], metrics=["comp_cd"], evidence_words=[[1], [5]]
        )
    assert list(made.result.summary().columns) == ["comp_cd"]  # the metrics as asked
    said = [m for m in _messages(caught) if m.startswith("evidence_words is given")]
    assert said and "'token_f1', 'token_iou', 'auprc'" in said[0]


def test_evidence_lacking_for_a_text_is_warned_not_scored(bert):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = normxlogit.explain_and_evaluate(
            bert, TEXTS, methods=["normxlogit"], evidence_words=[[1], None]
        )
    assert list(made.result.summary().columns) == ["comp_cd", "suff_cd"]
    assert any("text 1 has none" in m for m in _messages(caught))
