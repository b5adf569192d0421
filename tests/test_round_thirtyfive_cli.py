"""Round thirty-five of new-user probes, probe a: one-value options outside round 34's
list still kept the last value without a word (``explain -o x1.json -o x2.json`` never
wrote x1.json), and an ``--option`` key with an empty side was read as an option named
"" of the method."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from normxlogit.cli import app


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["explain", "x", "-o", "a.json", "-o", "b.json"], "--output"),
        (["explain", "x", "--max-new-tokens", "2", "--max-new-tokens", "3"], "--max-new-tokens"),
        (["explain", "x", "--segments", "sentences", "--segments", "s.txt"], "--segments"),
        (["evaluate", "d.tsv", "--limit", "2", "--limit", "3"], "--limit"),
        (["sanity", "t.txt", "--plot", "a.png", "--plot", "b.png"], "--plot"),
        (["bench", "status", "c.toml", "--store", "a.sqlite", "--store", "b.sqlite"], "--store"),
        (["serve", "--port", "8001", "--port", "8002"], "--port"),
    ],
)
def test_a_one_value_option_given_twice_is_refused_in_every_command(
    tmp_path, monkeypatch, args, flag
):
    monkeypatch.chdir(tmp_path)
    result = _run(*args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag} is given 2 times (")
    assert "(it would keep the last alone)" in lines[0]
    assert not list(tmp_path.iterdir())


def test_lists_and_the_same_value_twice_are_not_refused():
    said = _run("explain", "x", "-o", "a.json", "-o", "a.json", "--model", "/nonexistent")
    assert "is given 2 times" not in said.output
    said = _run("explain", "x", "--label", "a", "--label", "b", "--model", "/nonexistent")
    assert "is given 2 times" not in said.output


@pytest.mark.parametrize("pair", ["integrated_gradients.=5", ".steps=5", " .steps=5"])
def test_an_option_key_with_an_empty_side_is_malformed(pair):
    result = _run("explain", "x", "--method", "integrated_gradients", "--option", pair)
    assert result.exit_code == 2
    assert f"--option {pair!r} must look like name=value (or METHOD.NAME=VALUE)" in result.output


def test_constant_scores_on_a_generation_are_said_by_step():
    """Round 35 a P04/P05: explain warned about constant scores on a text, not on a
    generation's steps; evaluate counted a generation's steps as "texts"."""
    import warnings

    import normxlogit
    from normxlogit.common.errors import NormXLogitWarning

    from .conftest import explainable

    model = explainable("llama", "causal_lm")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = model.explain(
            "a good movie with plenty of",
            "random",
            equal=True,
            generate=True,
            max_new_tokens=2,
        )
    said = [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]
    assert (
        "method 'random' gave every token the same score on 2 of 2 steps (with equal=True), "
        "which ranks no tokens (evaluate flags these explanations as constant)"
    ) in said
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        normxlogit.evaluate(model, {"random": [made]}, ["comp_cd"])
    said = [str(w.message) for w in caught if "constant explanations" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("constant explanations ('random' on 1 step)")


def test_evaluate_refuses_sanity_on_pos_reagent_without_spacy_before_any_work(
    tmp_path, monkeypatch
):
    """Round 35 a P01: Python's evaluate met the missing tagger only when the sanity
    metric explained ReAGent again, after the other methods' work."""
    import normxlogit
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.evaluation import hard
    from normxlogit.methods.reagent import samplers

    from .conftest import explainable

    model = explainable("bert", "classification")
    texts = ["a good film", "a dull film"]
    made = {
        "normxlogit": model.explain(texts, "normxlogit"),
        "reagent": model.explain(texts, "reagent", sampler="uniform", stopping_condition_top_k=1),
    }
    for item in made["reagent"]:  # as made with the pos sampler on a machine with spaCy
        item.settings["sampler"] = "pos"
    monkeypatch.setattr(samplers, "tagger_missing", lambda: "spaCy")
    monkeypatch.setenv("NORMXLOGIT_CACHE", str(tmp_path / "cache"))

    def no_work(*args, **kwargs):
        raise AssertionError("a metric ran before the refusal")

    monkeypatch.setattr(hard, "constant_explanations", no_work)
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, made, ["comp_cd", "sanity_spearman"], progress=False)
    message = str(caught.value)
    assert message.startswith("ReAGent's pos sampler needs spaCy: pip install")
    assert message.endswith(
        "explain with sampler='uniform' and evaluate those explanations (the sanity metrics "
        "explain again as the explanation was made)"
    )
    for item in made["reagent"]:
        item.settings["sampler"] = "uniform"
    normxlogit.evaluate(model, {"reagent": made["reagent"]}, ["sanity_spearman"], progress=False)
