"""Last stop's "noted and left", worked through: a type said with its article ("an int",
"None", never "a NoneType"); what ``explain_and_evaluate`` returns, or an ``Explained``
whose every method was skipped, given to the evaluate functions; a rename that would
double a suffix; a mean that rounds to zero printed with a sign; a folder named with a
trailing slash; one method named twice in two spellings."""

from __future__ import annotations

import pandas as pd
import pytest

import normxlogit
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.common.outputs import fixed_point, type_phrase
from normxlogit.evaluation.registry import metric_info
from normxlogit.evaluation.summary import SummaryTable
from normxlogit.sanity import SanityResult
from normxlogit.workflows import Explained, evaluate_texts, explain_and_evaluate, explain_texts

from .conftest import sanity_frame

TEXTS = ["a fine film", "a dull plot"]


@pytest.mark.parametrize(
    ("value", "said"),
    [(3, "an int"), (None, "None"), ("x", "a str"), (2.5, "a float"), ([1], "a list")],
)
def test_a_type_is_said_with_its_article(value, said):
    assert type_phrase(value) == said


@pytest.mark.parametrize(
    ("methods", "said"),
    [({"mine": 3}, r"methods\['mine'\] is an int, not a method"), ([7], "7 is an int")],
)
def test_a_method_that_is_no_method_is_said_with_its_article(bert, methods, said):
    with pytest.raises(InvalidInputError, match=said):
        explain_texts(bert, TEXTS, methods)


def test_what_explain_and_evaluate_returns_is_pointed_to_its_explained(bert):
    evaluated = explain_and_evaluate(
        bert, TEXTS, ["random"], metrics=["token_f1"], evidence_words=[[1], [2]]
    )
    with pytest.raises(InvalidInputError, match=r"is an Evaluated .*pass its \.explained"):
        evaluate_texts(bert, evaluated, ["comp_cd"])
    again = evaluate_texts(bert, evaluated.explained, ["token_f1"], evidence_words=[[1], [2]])
    assert again.summary().frame.equals(evaluated.result.summary().frame)


def test_an_explained_whose_every_method_was_skipped_says_why(bert):
    skipped = Explained(skipped={"value_zeroing": "this model has no attention to zero"})
    with pytest.raises(InvalidInputError) as refused:
        evaluate_texts(bert, skipped)
    message = str(refused.value)
    assert "every method was skipped" in message
    assert "value_zeroing: this model has no attention to zero" in message


def test_a_rename_does_not_double_the_suffix(tmp_path):
    """``s.csv.json`` was advised ``s.csv.csv``; its own name without the last suffix is
    the one to give."""
    path = tmp_path / "s.csv.json"
    sanity_frame().to_csv(path, index=False)
    with pytest.raises(InvalidFileError, match=r"rename it to s\.csv to load it"):
        SanityResult.load(path)
    plain = tmp_path / "s.json"
    sanity_frame().to_csv(plain, index=False)
    with pytest.raises(InvalidFileError, match=r"rename it to s\.csv to load it"):
        SanityResult.load(plain)


def test_a_value_that_rounds_to_zero_prints_unsigned():
    assert fixed_point(-0.0004, 3) == "0.000"
    assert fixed_point(-0.0006, 3) == "-0.001"
    assert fixed_point(-0.4, 0) == "0"
    frame = pd.DataFrame({"token_f1": [-0.0004, 0.0002]}, index=["a", "b"])
    table = SummaryTable(frame, {"token_f1": metric_info("token_f1")})
    shown = table.to_markdown()
    assert "-0.000" not in shown
    assert shown.count("0.000") == 2


def test_a_bench_table_prints_a_tiny_negative_mean_unsigned():
    from normxlogit.bench.report import _number

    assert _number(-0.0004) == "0.000"
    assert _number(-0.0015) == "-0.002"


def test_a_folder_named_with_a_trailing_slash_is_named_without_it(tiny_classifier):
    model = normxlogit.load(f"{tiny_classifier}/")
    assert model.name == str(tiny_classifier)


@pytest.mark.parametrize("names", [["random", "Random"], ["l2_norm", "L2-norm"]])
def test_one_method_in_two_spellings_is_refused(bert, names):
    """``["random", "Random"]`` ran one method twice under two names."""
    with pytest.raises(InvalidInputError, match=r"names one method twice .* lower case"):
        explain_texts(bert, TEXTS, names)


@pytest.mark.parametrize(
    ("metrics", "title"),
    [
        (["comp_cd"], "faithfulness"),
        (["token_f1", "auprc"], "plausibility"),
        (["comp_cd", "token_f1"], "faithfulness and plausibility"),
        (["comp_cd", "token_f1", "sanity_spearman"], "faithfulness, plausibility and sanity"),
    ],
)
def test_the_terminal_table_is_titled_by_what_its_metrics_measure(metrics, title):
    """The title was "faithfulness and plausibility" whatever the table held."""
    frame = pd.DataFrame({m: [0.5] for m in metrics}, index=["a"])
    table = SummaryTable(frame, {m: metric_info(m) for m in metrics})
    assert table.__rich__().title == title


@pytest.mark.parametrize("folder", ["", "sub/"])
def test_the_page_names_a_misnamed_stores_new_name_as_given(tmp_path, monkeypatch, folder):
    """A plain store named ``.sqlite.xz`` was told to be renamed to an absolute path while
    the store itself was named as given."""
    pytest.importorskip("fastapi")
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    from .test_round_fortytwo_bench import SANITY, _plain_store

    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    _plain_store(tmp_path / f"{folder}plain_as.sqlite.xz")
    with pytest.raises(InvalidInputError) as refused:
        BenchBrowser([BenchEntry.parse(f"{SANITY}={folder}plain_as.sqlite.xz")]).check()
    message = str(refused.value)
    assert f"rename it to {folder}plain_as.sqlite" in message
    assert str(tmp_path) not in message


def test_the_page_advises_the_command_that_compresses_a_missing_store(tmp_path, monkeypatch):
    pytest.importorskip("fastapi")
    from normxlogit.serve.browse import BenchEntry

    from .test_round_fortytwo_bench import SANITY

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInputError) as refused:
        BenchEntry.parse(f"{SANITY}=sub/missing.sqlite.gz")
    message = str(refused.value)
    assert "--store sub/missing.sqlite` first, then `gzip -k sub/missing.sqlite`" in message
    assert message.endswith("which writes sub/missing.sqlite.gz")  # given as CONFIG=STORE


def test_generations_given_as_one_list_per_method_are_pointed_to_a_dict(gpt2):
    """``evaluate_generations`` said "got a list" where ``evaluate_texts`` says "(one list
    per method?) pass a dict"."""
    from normxlogit.generation import evaluate_generations

    generations = normxlogit.explain(gpt2, ["the film was"], "random", continuation=[[5, 6]])
    with pytest.raises(InvalidInputError, match=r"one list per method\?\); pass a dict"):
        evaluate_generations(gpt2, [generations, generations], ["comp_cd"])


@pytest.mark.parametrize("name", ["", " "])
def test_an_empty_model_name_is_refused_as_empty(name):
    """``load('')`` was read as the current folder and listed the folders below it."""
    from normxlogit.common.errors import UnknownModelError

    with pytest.raises(UnknownModelError, match=r"is empty; give a built-in name"):
        normxlogit.load(name)


def test_a_bool_options_refusal_names_the_spellings_it_reads():
    """``equal=yes`` was taken and ``equal=1`` refused as "must be true or false", which
    named neither the spellings read nor the one that is not."""
    from normxlogit.common.errors import InvalidOptionError

    with pytest.raises(InvalidOptionError, match=r"yes/no and on/off read too, 1/0 not"):
        normxlogit.get_method("random", equal="1")
    assert normxlogit.get_method("random", equal="on").equal is True


def test_a_name_ending_in_a_space_after_its_suffix_is_said_so(bert, tmp_path):
    """``save("e.json ")`` said "end the name in .json" of a name that shows as e.json."""
    from normxlogit.common.errors import OutputPathError

    explanation = bert.explain("a fine film", "random")
    with pytest.raises(OutputPathError, match=r"'e\.json ' ends in a space or tab"):
        explanation.save(tmp_path / "e.json ")


def test_targets_reordered_against_their_settings_are_refused(bert, tmp_path):
    """Swapping ``targets`` in a saved file relabelled every score column silently."""
    import json

    explanation = bert.explain("a fine film", "random", target=[2, 0])
    path = explanation.save(tmp_path / "e.json") or tmp_path / "e.json"
    data = json.loads(path.read_text())
    data["targets"] = data["targets"][::-1]
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match=r"but settings\.target records"):
        normxlogit.Explanation.load(path)


@pytest.mark.parametrize("target", [[0, "LABEL_0"], [2, 2]])
def test_a_target_list_naming_one_output_twice_is_refused(bert, target):
    """``target=[0, "negative"]`` gave two identical columns, each read as a target."""
    with pytest.raises(InvalidInputError, match=r"target lists 'LABEL_\d' twice"):
        bert.explain("a fine film", "random", target=target)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("nan", r"paper\['A'\]\['random'\] is nan, not a finite number"),
        ("inf", r"is inf, not a finite number"),
        ("1e400", r"is inf, not a finite number"),
        (
            '"0.4"',
            r'paper\[\'A\'\]\[\'random\'\] is a string "0\.4", not a number; .* experiment, model',
        ),
    ],
)
def test_a_paper_number_that_is_no_finite_number_is_refused(tmp_path, tiny_classifier, value, says):
    """``[tables.paper]`` took nan, inf and 1e400 (printed "(n/a)"), and a string was said
    to be no "model names" table though the key was an experiment's."""
    from normxlogit.bench import load_config

    from .test_round_twentyfour_bench import _narrowed

    paper = f'[tables.paper]\n"A" = {{ "random" = {value} }}\n'
    with pytest.raises(InvalidInputError, match=says):
        load_config(_narrowed(tmp_path, tiny_classifier, paper))


@pytest.mark.parametrize(
    ("continuation", "at"), [([1.0, 3], r"\[0\], a float 1\.0"), ([1, 3.5], r"\[1\], a float 3\.5")]
)
def test_a_float_among_continuation_ids_is_named(gpt2, continuation, at):
    """``continuation=[1.0, 3]`` said "1 prompts but continuation is a list of 2 items"."""
    with pytest.raises(InvalidInputError, match=rf"holds token ids and, at {at}; token ids"):
        gpt2.explain("the film", "random", continuation=continuation)


def test_a_missing_label_in_an_int64_series_is_called_missing(bert):
    """A nullable ``Int64`` column's ``<NA>`` was "gold label <NA> ... is a NAType"."""
    from normxlogit.workflows import explain_texts

    texts = ["a fine film", "a dull plot", "fine"]
    explained = explain_texts(bert, texts, ["random"])
    labels = pd.Series([1, pd.NA, 2], dtype="Int64")
    with pytest.raises(InvalidInputError, match=r"the gold label of text 1 .* is missing \(<NA>\)"):
        evaluate_texts(bert, explained, ["comp_acc"], labels=list(labels))


@pytest.mark.parametrize(("metric", "got"), [(None, "got None$"), (3, "got an int 3$")])
def test_a_metric_that_is_no_name_is_not_told_to_ask_one_at_a_time(bert, metric, got):
    """``metrics=["comp_cd", None]`` ended "ask for one metric at a time", advice for a
    list given where a name goes."""
    explanations = [bert.explain("a fine film", "random")]
    with pytest.raises(InvalidInputError, match=got):
        normxlogit.evaluate(bert, explanations, ["comp_cd", metric])


def test_method_names_from_a_numpy_array_are_plain_strings(bert):
    import numpy as np

    explained = explain_texts(bert, TEXTS, np.array(["random", "l2_norm"]))
    assert all(type(name) is str for name in explained.explanations)


def test_texts_and_labels_as_series_with_different_indexes_are_refused(bert):
    """Two Series were paired by position whatever their indexes said."""
    texts = pd.Series(["a fine film", "a dull plot"], index=[3, 1])
    labels = pd.Series([1, 0], index=[1, 3])
    with pytest.raises(InvalidInputError, match=r"paired by position, not by index; align"):
        explain_and_evaluate(bert, texts, ["random"], ["comp_acc"], labels=labels)
    aligned = labels.reindex(texts.index)
    result = explain_and_evaluate(bert, texts, ["random"], ["comp_acc"], labels=aligned)
    assert result.result.summary().frame.shape == (1, 1)


def test_a_negative_word_index_in_a_saved_file_is_refused(bert, tmp_path):
    """``word_ids`` holding -1 loaded, and grouped the token into no word."""
    import json

    path = tmp_path / "e.json"
    bert.explain("a fine film", "random").save(path)
    data = json.loads(path.read_text())
    data["word_ids"][1] = -1
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match=r"word_ids.*whole numbers from 0"):
        normxlogit.Explanation.load(path)


def test_a_label_none_of_the_recorded_outputs_is_refused(bert, tmp_path):
    """A saved explanation's ``label`` edited to "zzz" loaded as a prediction."""
    import json

    path = tmp_path / "e.json"
    bert.explain("a fine film", "random").save(path)
    data = json.loads(path.read_text())
    data["label"] = "zzz"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match=r"label 'zzz' is none of the outputs probs records"):
        normxlogit.Explanation.load(path)


def test_versus_best_says_how_many_instances_it_pairs_over():
    """``--versus LABEL`` headings gave "(N instances)", ``--versus best``'s did not."""
    from normxlogit.bench.report import paired_table

    from .test_round_fortyone_bench import _result, _summaries

    table = paired_table(_result(["normxlogit", "random"], _summaries("comp_cd")), "best")
    assert "minus the best on each metric, paired over instances (3 instances)**" in table
