"""Round 34, command line and bench: ReAGent's pos sampler refused before any work where
spaCy is missing (and no groups are cached), in each entry point's spelling of the fix;
a one-value option given twice with different values refused, not the last kept."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from normxlogit.cli import app
from normxlogit.common.errors import InvalidInputError
from normxlogit.methods import get_method
from normxlogit.methods.reagent import samplers, tagger_refusal

from .conftest import explainable, fresh_tokenizer, invoke_in


@pytest.fixture
def no_spacy(monkeypatch, tmp_path):
    """spaCy looks uninstalled, and the cache holds no part-of-speech groups."""
    monkeypatch.setattr(samplers, "tagger_missing", lambda: "spaCy")
    monkeypatch.setenv("NORMXLOGIT_CACHE", str(tmp_path / "cache"))
    samplers._pos_groups.cache_clear()
    yield
    samplers._pos_groups.cache_clear()  # the stand-in groups read here stay out of others


@pytest.fixture
def never_loaded(monkeypatch):
    """Loading a model fails the test: a refusal it expects comes before."""
    import normxlogit.loading

    def load(*args, **kwargs):
        raise AssertionError("model loaded before refusing")

    monkeypatch.setattr(normxlogit.loading, "load", load)


def _cache_groups(tokenizer) -> None:
    """The groups of ``tokenizer`` cached as a run writes them (all in one group)."""
    from normxlogit.common.cache import cached_folder

    texts = samplers._vocabulary_texts(tokenizer)

    def build(out):
        groups = {"tags": ["NN"], "groups": [list(range(len(texts)))]}
        (out / samplers.GROUPS_FILE).write_text(json.dumps(groups))

    cached_folder(samplers._groups_name(texts), build)


# ------------------------------------------------------------------ P06: the library
def test_refusal_follows_the_sampler_and_the_cache(no_spacy):
    tokenizer = fresh_tokenizer()
    pos, uniform = get_method("reagent"), get_method("reagent", sampler="uniform")
    assert tagger_refusal([uniform, get_method("random")], None) is None
    reason = tagger_refusal([pos], tokenizer)
    assert reason is not None and "needs spaCy" in reason and "sampler='uniform'" in reason
    assert tagger_refusal([pos], None) is not None  # nothing cached at all
    _cache_groups(tokenizer)
    assert tagger_refusal([pos], tokenizer) is None  # the run reads the cache: no spaCy needed
    assert tagger_refusal([pos], None) is None  # some groups cached: wait for the tokenizer


def test_the_run_refuses_in_the_same_words(no_spacy):
    with pytest.raises(InvalidInputError, match=r"needs spaCy: .*pass sampler='uniform'"):
        samplers.tag_words(["film"])


def test_explain_texts_refuses_before_any_method(no_spacy, monkeypatch):
    from normxlogit import workflows

    def explain(*args, **kwargs):
        raise AssertionError("a method ran before the refusal")

    monkeypatch.setattr(workflows, "explain", explain)
    model = explainable("bert", "classification")
    methods = {"normxlogit": "normxlogit", "reagent": "reagent"}
    with pytest.raises(InvalidInputError, match="sampler='uniform'"):
        workflows.explain_texts(model, ["a good film"], methods)


def test_sanity_refuses_before_explaining(no_spacy, monkeypatch):
    from normxlogit.sanity import parameter_randomization, randomization

    def explain(*args, **kwargs):
        raise AssertionError("explained before the refusal")

    monkeypatch.setattr(randomization, "_explain", explain)
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match="sampler='uniform'"):
        parameter_randomization(model, ["a good film"], ["normxlogit", "reagent"])


# ------------------------------------------------------------------ P06: the command line
def test_evaluate_refuses_before_loading(no_spacy, never_loaded, tmp_path):
    data = tmp_path / "two.txt"
    data.write_text("a good film\na bad film\n")
    ran = invoke_in(
        tmp_path, "evaluate", str(data), "--method", "normxlogit", "--method", "reagent"
    )
    assert ran.exit_code == 2, ran.output
    assert "add --option reagent.sampler=uniform" in ran.output
    assert "sampler='uniform'" not in ran.output


def test_sanity_refuses_before_loading(no_spacy, never_loaded, tmp_path):
    data = tmp_path / "two.txt"
    data.write_text("a good film\na bad film\n")
    ran = invoke_in(tmp_path, "sanity", str(data), "--method", "normxlogit", "--method", "reagent")
    assert ran.exit_code == 2, ran.output
    assert "add --option reagent.sampler=uniform" in ran.output


def test_explain_refuses_in_its_flags(no_spacy, never_loaded, tmp_path):
    ran = invoke_in(tmp_path, "explain", "a good film", "--method", "reagent")
    assert ran.exit_code == 2, ran.output
    assert "add --option sampler=uniform" in ran.output
    fine = invoke_in(
        tmp_path, "explain", "a good film", "--method", "reagent", "--option", "sampler=uniform"
    )
    assert "sampler" not in fine.output  # past the check: only the patched load fails


def test_explain_with_cached_groups_is_not_refused(no_spacy, tiny_classifier, tmp_path):
    from normxlogit.loading import load_tokenizer

    _cache_groups(load_tokenizer(str(tiny_classifier)))
    ran = invoke_in(
        tmp_path, "explain", "a good film", "-m", str(tiny_classifier), "--method", "reagent",
        "--option", "stopping_condition_top_k=1",  # below its 3 labels
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output


# ------------------------------------------------------------------ P06: bench
BENCH = """seeds = [0]
metrics = ["comp_cd"]
[[methods]]
name = "normxlogit"
[[methods]]
name = "reagent"
options = {{ stopping_condition_top_k = 1 }}
[[experiments]]
model = "{model}"
dataset = "{data}"
limit = 2
"""


def _bench(tmp_path, model) -> tuple:
    data = tmp_path / "rows.jsonl"
    data.write_text('{"text": "a good film", "label": 0}\n{"text": "a bad film", "label": 1}\n')
    config = tmp_path / "b.toml"
    config.write_text(BENCH.format(model=model, data=data))
    return config, tmp_path / "b.sqlite"


def test_bench_run_refuses_before_any_cell(no_spacy, tiny_classifier, tmp_path):
    config, store = _bench(tmp_path, tiny_classifier)
    ran = invoke_in(tmp_path, "bench", "run", str(config), "--store", str(store))
    assert ran.exit_code == 2, ran.output
    assert 'give the method options = { sampler = "uniform" }' in ran.output
    assert "method reagent" in ran.output
    from normxlogit.bench import ResultStore

    with ResultStore(store) as results:
        assert results.counts()["explanations"] == 0  # normxlogit was not computed first


def test_bench_runs_with_cached_groups_and_status_warns_without(
    no_spacy, tiny_classifier, tmp_path
):
    from normxlogit.loading import load_tokenizer

    config, store = _bench(tmp_path, tiny_classifier)
    made = invoke_in(tmp_path, "bench", "run", str(config), "--store", str(store), "--limit", "1")
    assert made.exit_code == 2  # nothing cached yet
    _cache_groups(load_tokenizer(str(tiny_classifier)))
    done = invoke_in(tmp_path, "bench", "run", str(config), "--store", str(store))
    assert done.exit_code == 0, done.output
    status = invoke_in(tmp_path, "bench", "status", str(config), "--store", str(store))
    assert "would stop" not in status.output  # every cell done: no tagger needed


# ------------------------------------------------------------------ P07: one value each
@pytest.mark.parametrize(
    "args, flag",
    [
        (["explain", "x", "--method", "random", "--method", "normxlogit"], "--method"),
        (["explain", "x", "-m", "a", "--model=b"], "--model"),
        (["explain", "x", "--layer", "1", "--layer", "2"], "--layer"),
        (["evaluate", "d.txt", "--seed", "1", "--seed", "2"], "--seed"),
        (["evaluate", "d.txt", "-ma", "-m", "b"], "--model"),
        (["sanity", "d.txt", "--mode", "cascading", "--mode", "independent"], "--mode"),
        (["train", "sst2", "--seed", "1", "--seed", "2", "-o", "out"], "--seed"),
    ],
)
def test_a_one_value_option_given_twice_is_refused(never_loaded, tmp_path, args, flag):
    ran = invoke_in(tmp_path, *args)
    assert ran.exit_code == 2, ran.output
    assert f"{flag} is given 2 times" in ran.output
    assert "keep the last alone" in ran.output


def test_explain_method_twice_names_evaluate():
    ran = CliRunner().invoke(app, ["explain", "x", "--method", "random", "--method", "lime"])
    assert ran.exit_code == 2
    assert "('random', then 'lime')" in ran.output and "evaluate" in ran.output


def test_the_same_value_twice_and_lists_pass(never_loaded, tmp_path):
    same = invoke_in(tmp_path, "explain", "x", "--method", "random", "--method", "random")
    assert "given 2 times" not in same.output  # nothing is lost: on to the (patched) load
    labels = invoke_in(tmp_path, "explain", "x", "--label", "a", "--label", "b")
    assert "given 2 times" not in labels.output  # --label is repeatable
