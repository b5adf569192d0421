"""Round thirty-seven, Python and CLI (probe a):

- P01: ReAGent on a classifier of no more labels than ``stopping_condition_top_k`` (every
  probe would stop after one step) is refused before any work, in each entry point's
  spelling of the fix; a language model's probes rank the vocabulary and still run.
- P07: ReAGent on a regressor (its scores would be the probes' random start) is refused.
- P02: a text's ``None`` among ``evidence=[...]`` is refused naming the text.
- P03: ``evaluate_generations(steps=...)`` says which generations lack some of the steps.
- P04: a regressor's ``*_acc`` over two texts (always +-1) is warned; the advice is three
  texts or more.
- P05: an ``evidence_mask`` column is advised a 0/1 mask, and takes JSON booleans.
- P06: ``--option``/``--protocol`` given twice with one value spelt two ways is taken.
"""

from __future__ import annotations

import warnings

import pytest

import normxlogit
from normxlogit.bench import load_config
from normxlogit.cli.app import parse_options
from normxlogit.cli.explain import own_options
from normxlogit.common.errors import InvalidInputError, NormXLogitError, NormXLogitWarning
from normxlogit.data.files import read_examples
from normxlogit.generation import evaluate_generations
from normxlogit.methods import get_method

from .conftest import explainable, invoke_in

TEXTS = ["a good movie", "the plot is thin"]
UNIFORM = {"sampler": "uniform"}


@pytest.fixture(scope="module")
def bert():
    return explainable("bert", "classification")  # three labels


@pytest.fixture(scope="module")
def regressor():
    return explainable("bert", "regression")


def _messages(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]


# ------------------------------------------------------------------------- P01, P07
def test_reagent_on_a_classifier_of_few_labels_is_refused_naming_the_fix(bert):
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.explain(bert, TEXTS, get_method("reagent", **UNIFORM))
    message = str(caught.value)
    assert "stopping_condition_top_k=3 on a classifier of 3 labels" in message
    assert message.endswith(  # an instance takes no options: it is built again
        "pass method=get_method('reagent', stopping_condition_top_k=1, sampler='uniform') "
        "(below the number of labels)"
    )
    fixed = get_method("reagent", stopping_condition_top_k=2, **UNIFORM)
    assert normxlogit.explain(bert, TEXTS[:1], fixed)[0].scores.shape == (5,)


def test_reagent_on_a_regressor_is_refused(regressor):
    with pytest.raises(InvalidInputError, match="cannot explain a regression model"):
        normxlogit.explain(regressor, TEXTS, get_method("reagent", **UNIFORM))


def test_reagent_on_a_language_model_still_runs():
    decoder = explainable("llama", "causal_lm")  # its probes rank the whole vocabulary
    explained = normxlogit.explain(decoder, TEXTS[:1], get_method("reagent", **UNIFORM))
    assert len(explained[0].scores) > 0


def test_reagent_is_refused_in_sanity(bert):
    from normxlogit.sanity import parameter_randomization

    with pytest.raises(InvalidInputError, match="stopping_condition_top_k=1"):
        parameter_randomization(bert, TEXTS, {"reagent": get_method("reagent", **UNIFORM)})


def test_the_cli_refuses_reagent_in_its_own_spelling(tmp_path, tiny_classifier):
    explained = invoke_in(
        tmp_path, "explain", "-m", str(tiny_classifier), "a good film", "--method", "reagent",
        "--option", "sampler=uniform",
    )  # fmt: skip
    assert explained.exit_code != 0
    assert "add --option stopping_condition_top_k=1" in explained.output
    (tmp_path / "two.txt").write_text("a good film\nthe plot is thin\n")
    evaluated = invoke_in(
        tmp_path, "evaluate", "two.txt", "-m", str(tiny_classifier), "--method", "reagent",
        "--method", "random", "--option", "reagent.sampler=uniform", "--metric", "comp_cd",
    )  # fmt: skip
    assert evaluated.exit_code != 0
    assert "add --option reagent.stopping_condition_top_k=1" in evaluated.output


@pytest.mark.parametrize(
    ("model", "said"),
    [
        ("minilm-sst2", "options = { stopping_condition_top_k = 1 }"),
        ("minilm-stsb", "cannot explain a regression model"),
    ],
)
def test_a_bench_config_refuses_reagent_on_a_builtin_before_loading(tmp_path, model, said):
    data = tmp_path / "d.tsv"
    data.write_text("text\tlabel\na good film\t1\nthe plot is thin\t0\n")
    config = tmp_path / "c.toml"
    config.write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\n[[methods]]\nname = "reagent"\n'
        f'options = {{ sampler = "uniform" }}\n[[experiments]]\nmodel = "{model}"\n'
        f'dataset = "{data}"\n'
    )
    with pytest.raises(NormXLogitError) as caught:
        load_config(config)
    assert said in str(caught.value)


def test_a_bench_config_with_top_k_below_the_labels_is_read(tmp_path):
    data = tmp_path / "d.tsv"
    data.write_text("text\tlabel\na good film\t1\nthe plot is thin\t0\n")
    config = tmp_path / "c.toml"
    config.write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\n[[methods]]\nname = "reagent"\n'
        'options = { sampler = "uniform", stopping_condition_top_k = 1 }\n'
        f'[[experiments]]\nmodel = "minilm-sst2"\ndataset = "{data}"\n'
    )
    assert load_config(config).experiments


def test_a_bench_run_refuses_reagent_on_a_loaded_classifier(tmp_path, tiny_classifier):
    from normxlogit.bench import ResultStore, run_bench

    data = tmp_path / "d.tsv"
    data.write_text("text\tlabel\na good film\tpos\nthe plot is thin\tneg\n")
    config = tmp_path / "c.toml"
    config.write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\n[[methods]]\nname = "reagent"\n'
        'options = { sampler = "uniform" }\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "{data}"\n'
    )
    with ResultStore(tmp_path / "s.sqlite") as store, pytest.raises(NormXLogitError) as caught:
        run_bench(load_config(config), store)
    assert "options = { stopping_condition_top_k = 1 }" in str(caught.value)


def test_the_page_refuses_reagent_beside_the_other_methods(bert, regressor):
    from normxlogit.serve.work import _tagger_refusals

    assert "--option stopping_condition_top_k=1" in _tagger_refusals(bert, ["reagent"])["reagent"]
    assert "regression" in _tagger_refusals(regressor, ["reagent"])["reagent"]


# ------------------------------------------------------------------------------ P02
@pytest.mark.parametrize("metric", ["token_f1", "evidence_ap"])
def test_a_none_evidence_names_its_text(bert, metric):
    explained = normxlogit.explain(bert, TEXTS, "random")
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(bert, explained, [metric], evidence=[[0, 0, 1, 0, 0], None])
    message = str(caught.value)
    assert message.startswith("evidence for text 1 is None; every text needs a vector")
    assert "pass evidence=[...]" not in message


# ------------------------------------------------------------------------------ P03
def test_a_generation_lacking_some_of_the_steps_is_said():
    decoder = explainable("llama", "causal_lm")
    generations = normxlogit.explain(
        decoder, ["the film was a", "a plot"], "random", continuation=[[2143] * 5, [2143] * 4]
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluate_generations(decoder, generations, ["comp_cd"], steps=[2, 4])
    said = [m for m in _messages(caught) if "some of steps" in m]
    assert said == [
        "1 of 2 generations lacks some of steps [2, 4] (generation 1 (4 steps) lacks step 4): "
        "those steps are left out for them, so a step's mean covers fewer generations"
    ]


# ------------------------------------------------------------------------------ P04
def test_a_regressors_accuracy_over_two_texts_is_warned(regressor):
    explained = normxlogit.explain(regressor, TEXTS, "random")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        normxlogit.evaluate(regressor, explained, ["comp_acc"], labels=[0.8, 0.1])
    said = [m for m in _messages(caught) if "Pearson" in m]
    assert len(said) == 1 and "+1 or -1 whatever the explanation" in said[0]
    assert "three texts or more" in said[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        normxlogit.evaluate(regressor, explained[:1], ["comp_acc"], labels=[0.8])
    said = [m for m in _messages(caught) if "Pearson" in m]
    assert "one text has none" in said[0] and "three texts or more" in said[0]


# ------------------------------------------------------------------------------ P05
def test_an_evidence_mask_takes_booleans_and_is_advised_a_mask(tmp_path):
    path = tmp_path / "m.tsv"
    path.write_text(
        "text\tlabel\tevidence_mask\na good movie\t1\t[true,false,true]\nthe plot\t0\t0 1\n"
    )
    assert [e.evidence for e in read_examples(path)] == [(0, 2), (1,)]
    path.write_text("text\tlabel\tevidence_mask\na good movie\t1\t[0.5,0,1]\n")
    with pytest.raises(NormXLogitError) as caught:
        read_examples(path)
    assert 'give one 0 or 1 per word, e.g. "0 1 1 0" or [0, 1, 1, 0]' in str(caught.value)
    path.write_text("text\tlabel\tevidence\na good movie\t1\ttrue\n")
    with pytest.raises(NormXLogitError) as caught:
        read_examples(path)
    assert 'give whole word indices, numbered from 0, e.g. "0 3"' in str(caught.value)


# ------------------------------------------------------------------------------ P06
@pytest.mark.parametrize(
    ("first", "second"),
    [("3", "03"), ("true", "True"), ("0.5", "[0.5]"), ("0.1,0.2", "[0.1, 0.2]")],
)
def test_one_value_spelt_twice_is_taken(first, second):
    assert parse_options([f"a={first}", f"a={second}"])["a"] in (first, second)
    assert own_options({"ig.a": first, "IG.a": second}, "ig")["a"] in (first, second)
    assert parse_options([f"a={first}", f"a={second}"], "--protocol")["a"] in (first, second)


@pytest.mark.parametrize(("first", "second"), [("3", "4"), ("l1", "L1"), ("true", "1")])
def test_different_values_are_still_refused(first, second):
    with pytest.raises(InvalidInputError, match="given twice with different values"):
        parse_options([f"a={first}", f"a={second}"])
