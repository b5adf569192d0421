"""Last stop's "noted and left", worked through: a float32 option at its bound, ReAGent's
counts refused when built (with the value), and evidence metrics naming constant
explanations."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError, InvalidOptionError
from normxlogit.methods import get_method


def test_a_float32_option_at_its_bound_is_the_bound():
    """``kernel_width=np.float32(0.076)`` was refused as below 0.076 (0.07599999755...)."""
    assert get_method("lime", kernel_width=np.float32(0.076)).kernel_width == 0.076
    assert get_method("lime", kernel_width=np.float16(0.5)).kernel_width == 0.5
    assert get_method("lime", kernel_width=np.float64(0.25)).kernel_width == 0.25
    with pytest.raises(InvalidOptionError, match=r"kernel_width=0\.07 must be at least 0\.076"):
        get_method("lime", kernel_width=np.float32(0.07))
    with pytest.raises(InvalidOptionError, match="must be a finite number"):
        get_method("lime", kernel_width=np.float32("nan"))


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("keep_top_n", 0, "keep_top_n=0 must be at least 1"),
        ("stopping_condition_top_k", -2, "stopping_condition_top_k=-2 must be at least 1"),
        ("replacing_ratio", 1.0, "replacing_ratio=1.0 must lie strictly between 0 and 1"),
    ],
)
def test_reagents_counts_are_refused_when_built_with_the_value(option, value, says):
    """They were checked at the first text only (a bench run stored the other methods
    first), and the message left out the value."""
    with pytest.raises(InvalidOptionError, match=says):
        get_method("reagent", **{option: value})


def test_a_bench_config_with_keep_top_n_0_is_refused_at_load(tmp_path):
    from normxlogit.bench import load_config

    path = tmp_path / "c.toml"
    path.write_text(
        'title = "t"\nmetrics = ["comp_cd"]\n'
        '[[methods]]\nname = "reagent"\noptions = { keep_top_n = 0, sampler = "uniform" }\n'
        '[[experiments]]\nmodel = "minilm-sst2"\ndataset = "sst2"\n'
    )
    with pytest.raises((InvalidOptionError, InvalidInputError), match="keep_top_n=0"):
        load_config(path)


@pytest.mark.parametrize(
    ("metric", "says"), [("evidence_ap", "share of the tokens"), ("evidence_dot", "number of")]
)
def test_evidence_metrics_name_constant_explanations(metric, says):
    """evidence_ap gave a constant explanation the evidence's share, with no word."""
    from tests.conftest import sharp_model

    model = sharp_model()
    texts = ["a good film", "a dull and long film"]
    made = model.explain(texts)
    flat = model.explain(texts)
    flat[1].scores = np.zeros_like(flat[1].scores)
    evidence = [[0] * len(e.tokens) for e in made]
    for vector in evidence:
        vector[2] = 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        normxlogit.evaluate(
            model, {"nx": made, "flat": flat}, [metric], evidence=evidence, progress=False
        )
    said = [str(w.message) for w in caught if "constant explanations" in str(w.message)]
    assert len(said) == 1
    assert "('flat' on 1 text)" in said[0] and metric in said[0] and says in said[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        normxlogit.evaluate(model, {"nx": made}, [metric], evidence=evidence, progress=False)
    assert not [w for w in caught if "constant explanations" in str(w.message)]


def test_a_target_or_contrast_the_vocabulary_lacks_is_refused(tiny_masked_lm):
    """A word the tokenizer reads as [UNK] was explained as [UNK] ("herself vs [UNK]"),
    which stands for every unknown word alike."""
    model = normxlogit.load(tiny_masked_lm)
    tokenizer = model.tokenizer
    known = next(w for w in tokenizer.get_vocab() if w.isalpha() and len(w) > 2)
    text = f"the cat {tokenizer.mask_token} here"
    assert model.explain(text, target=known).scores.size
    for given in ({"target": "☃"}, {"target": known, "contrast": "☃"}):
        with pytest.raises(InvalidInputError, match=r"'☃' is not in this tokenizer's vocab"):
            model.explain(text, **given)
    model.explain(text, target=tokenizer.unk_token)  # asked for by name: as given


def test_an_option_given_twice_with_the_same_value_loses_nothing():
    """``--option random.equal=true --option random.equal=true`` was refused, where the
    guide says list options repeat and the same value given twice loses nothing."""
    from normxlogit.cli.app import parse_options
    from normxlogit.cli.explain import own_options

    assert parse_options(["steps=4", "steps=4"]) == {"steps": "4"}
    assert parse_options(["ig.steps=4", " ig.steps = 4"]) == {"ig.steps": " 4"}
    with pytest.raises(InvalidInputError, match=r"steps is given twice with different values"):
        parse_options(["steps=4", "steps=5"])
    same = {"random.equal": "true", "equal": "True"}
    assert own_options(same, "random") == {"equal": "true"}  # one value, two spellings
    with pytest.raises(InvalidOptionError, match="given twice with different values"):
        own_options({"random.equal": "true", "Random.equal": "false"}, "random")
    assert own_options({"random.equal": "true", "Random.equal": "true"}, "random")


def test_the_sanity_metrics_say_every_step_where_every_step_is_undefined():
    """Round 36's noted item: a text too short for top_k is n/a at every step, and the
    warning said "at some steps"."""
    from normxlogit.common.errors import NormXLogitWarning
    from tests.conftest import explainable

    model = explainable("bert", "classification")
    with pytest.warns(NormXLogitWarning) as caught:
        normxlogit.evaluate(model, model.explain(["a fine film"]), ["sanity_top_k"])
    (said,) = [str(w.message) for w in caught if "sanity_top_k" in str(w.message)]
    assert "sanity_top_k is n/a at every step for 1 of 1 texts" in said


def test_a_paired_difference_too_small_for_three_decimals_shows_its_digits():
    """Round 36's noted item: ``bench report --versus`` printed comp_cd differences of
    about 1e-6 as "0.000 ± 0.000 *"."""
    from normxlogit.bench.report import _difference

    assert _difference(1.234e-6, 2.5e-7) == "1.2e-06 ± 2.5e-07"
    assert _difference(-0.0004, 0.0001) == "-4.0e-04 ± 1.0e-04"
    assert _difference(-6.9e-18, 0.14) == "0.000 ± 0.140"  # rounding's zero, unsigned
    assert _difference(0.123, 0.0001) == "0.123 ± 0.000"
    assert _difference(0.0, 0.0) == "0.000 ± 0.000"
    assert _difference(float("nan"), float("nan")) == "n/a ± n/a"


def test_the_metrics_listing_gives_a_contrastive_explanations_range():
    """comp_cd's range was listed as [-1, 1] alone, where a contrastive method's values,
    drops of p(target) - p(contrast), lie in [-2, 2]."""
    from typer.testing import CliRunner

    from normxlogit.cli import app

    result = CliRunner().invoke(app, ["metrics"], env={"COLUMNS": "300"})
    assert result.exit_code == 0
    line = next(line for line in result.output.splitlines() if "comp_cd" in line)
    assert "[-1, 1] (contrastive: [-2, 2])" in line
    deletion = next(line for line in result.output.splitlines() if "│ deletion" in line)
    assert "contrastive" not in deletion
