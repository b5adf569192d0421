"""Round five of new-user probes (issue 41): variants of every kind round four fixed,
through the Python API, the command line's library calls, the bench, the page and saved
files. Each test is one failure that round found, with tiny models.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings

import pandas as pd
import pytest

import normxlogit
import normxlogit.sanity.metrics as sanity_metrics
import normxlogit.sanity.randomization as sanity_randomization
from normxlogit.common.errors import InvalidInputError, NormXLogitWarning

from .conftest import build_model, explainable, fresh_tokenizer

TEXTS = ["a gripping film that never lets go", "dull and slow"]
TWO_MASKS = "a [MASK] film and a [MASK] plot"


def _second_mask(model) -> int:
    ids = model.tokenizer(TWO_MASKS)["input_ids"]
    return [i for i, t in enumerate(ids) if t == model.tokenizer.mask_token_id][1]


def _caught(call):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = call()
    return result, {str(w.message) for w in seen if issubclass(w.category, NormXLogitWarning)}


# ------------------------------------------------------------------ rationale_k


def test_rationale_k_refuses_what_evaluate_refuses():
    """A model name was an AttributeError; an index past the text counted as no word,
    silently, and a masked LM's target (which no metric reads) as a rationale token."""
    from normxlogit.evaluation import rationale_k

    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match=r"rationale_k's model is a str.*normxlogit\.load"):
        rationale_k("minilm-sst2", TEXTS, [[1], [2]])
    with pytest.raises(InvalidInputError, match="index 99 of text 0 is out of range.*7 words"):
        rationale_k(model, TEXTS, [[99], [1]])
    masked = explainable("bert", "masked_lm")
    two = ["a good [MASK] indeed", "a fine [MASK] here"]
    # the masked target is read by no metric, so it is no rationale token: (0 + 2) / 2
    assert rationale_k(masked, two, [[2], [0, 1, 2]]) == 1


# ------------------------------------------------------------------ plausibility


def test_plausibility_says_where_every_explanation_scores_the_same():
    """A rationale marking every token read (auprc 1 for any scores), or a text with no
    more tokens than top_k chooses (token F1 and IOU blind to the ranking), gave numbers
    that cannot tell methods apart, with no message."""
    from normxlogit.workflows import evaluate_texts

    model = explainable("bert", "classification")
    texts = ["a gripping film", "a slow and dull and lifeless mess"]
    made = {name: model.explain(texts, name) for name in ("logat", "random")}
    metrics = ["token_f1", "token_iou", "auprc"]

    def run(words, **protocol):
        return _caught(
            lambda: evaluate_texts(
                model, made, metrics, evidence_words=words, protocol=normxlogit.Protocol(**protocol)
            )
        )

    result, said = run([[0, 1, 2], [1]])
    assert any("1 of 2 texts have a rationale that marks every token" in s for s in said)
    assert result.frame.query("instance == 0 and metric == 'auprc'")["value"].eq(1).all()
    _, said = run([[1], [1]])
    assert any("1 of 2 texts have 5 or fewer tokens" in s and "top_k=5" in s for s in said)
    _, said = run([[1], [1]], top_k=2)
    assert not any("tokens the plausibility metrics read" in s for s in said), said
    _, said = run([[1], [1]], only_positive=True)  # the sign still chooses: not said
    assert not any("or fewer tokens" in s for s in said), said


# ------------------------------------------------------------------ sanity checks


def test_a_progress_that_is_not_a_function_is_refused_before_any_work(monkeypatch):
    """progress=True was a TypeError after the trained model's explanations were made."""
    from normxlogit.sanity import parameter_randomization

    def explained(*args, **kwargs):
        raise AssertionError("explained before the refusal")

    monkeypatch.setattr(sanity_randomization, "_explain", explained)
    with pytest.raises(InvalidInputError, match="progress is True; give a function"):
        parameter_randomization(explainable("bert", "classification"), TEXTS, progress=True)


def test_data_randomization_refuses_the_trained_model_as_its_own_shuffled_model():
    """The trained model (or its weights loaded again, as `--shuffled minilm-sst2` does)
    gave similarity 1 and a failed check; another architecture was compared too."""
    from normxlogit.sanity import data_randomization

    model = explainable("bert", "classification")
    again = normxlogit.load((build_model("bert", "classification"), fresh_tokenizer()))
    for shuffled in (model, again):
        with pytest.raises(InvalidInputError, match="trained model's own weights"):
            data_randomization(model, shuffled, TEXTS, ["random"])
    other = explainable("roberta", "classification")
    with pytest.raises(InvalidInputError, match="roberta .* the trained model a bert"):
        data_randomization(model, other, TEXTS, ["random"])
    retrained = normxlogit.load((build_model("bert", "classification", seed=1), fresh_tokenizer()))
    assert len(data_randomization(model, retrained, TEXTS, ["random"]).frame) == 2


def test_a_sanity_result_read_back_from_its_file_is_checked(tmp_path):
    """SanityResult(pd.read_csv(...)) of an edited file: a KeyError or a pandas TypeError."""
    from normxlogit.sanity import SanityResult, parameter_randomization

    model = explainable("bert", "classification")
    path = parameter_randomization(model, TEXTS, ["random"]).save(tmp_path / "s.csv")
    assert SanityResult(pd.read_csv(path)).verdicts()["texts"].tolist() == [2]
    with pytest.raises(InvalidInputError, match="has no spearman column"):
        SanityResult(pd.read_csv(path).drop(columns=["spearman"]))
    with pytest.raises(InvalidInputError, match="has no method, mode"):
        SanityResult(pd.DataFrame())
    edited = pd.read_csv(path).assign(spearman="n/a")
    with pytest.raises(InvalidInputError, match="spearman column holds 'n/a'.*empty cell"):
        SanityResult(edited)
    texts = pd.read_csv(path).astype({"spearman": str})  # numbers as text still read
    assert SanityResult(texts).verdicts()["final_spearman"].iloc[0] == pytest.approx(1.0)


def test_a_figure_says_which_methods_it_cannot_draw(tmp_path):
    """Where a similarity is n/a for every text, the figure showed only the trained
    model's point at 1, as if that method had been measured; now it is marked n/a and a
    warning says why."""
    pytest.importorskip("matplotlib")
    from normxlogit.sanity import parameter_randomization

    model = explainable("bert", "classification")
    result = parameter_randomization(model, ["dull", "so so"], ["random"])  # <= 5 tokens
    path, said = _caught(lambda: result.plot(tmp_path / "top.png", metric="top_k"))
    assert path.read_bytes()[:4] == b"\x89PNG"
    assert any("draws no top-k overlap for random (cascading)" in s for s in said), said
    _, said = _caught(lambda: result.plot(tmp_path / "rank.png"))
    assert not any("draws no" in s for s in said), said


def test_a_method_class_is_named_as_a_class():
    """It said "is a ABCMeta, not a method"."""
    from normxlogit.methods.base import method_class
    from normxlogit.sanity import parameter_randomization

    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match=r"is the class \w+, not a method.*'random'"):
        parameter_randomization(model, TEXTS, {"r": method_class("random")})


@contextlib.contextmanager
def _unchanged(model, groups, seed, init="model"):
    yield model


def test_the_sanity_metrics_re_explain_at_the_recorded_mask_position(monkeypatch):
    """A masked LM explained at its second mask was re-explained at its first (0.8 with
    nothing randomised). The re-explanation reads the position the explanation records
    (settings["mask_position"]; explain itself does not record it yet, so it is set here:
    reported with round five, in a file this round could not change)."""
    monkeypatch.setattr(sanity_metrics, "randomized", _unchanged)
    model = explainable("bert", "masked_lm")
    second = _second_mask(model)
    made = model.explain([TWO_MASKS], "gradient_x_input", mask_position=second)
    recorded = [
        dataclasses.replace(e, settings={**e.settings, "mask_position": second}) for e in made
    ]
    result = normxlogit.evaluate(model, {"g": recorded}, ["sanity_spearman"])
    assert result.frame["value"].to_numpy() == pytest.approx(1.0)


def test_a_contrast_inputs_diagnostics_read_the_recorded_mask_position():
    """The target's probability under both inputs was read at the first mask, whatever
    mask_position the scores were read at."""
    from normxlogit.explaining.contrast_inputs import with_contrast_inputs
    from normxlogit.explaining.texts import explain_each

    model = explainable("bert", "masked_lm")
    second = _second_mask(model)
    other = "a [MASK] movie and a [MASK] plot"
    (made,) = model.explain([TWO_MASKS], "logat", mask_position=second)
    made = dataclasses.replace(made, settings={**made.settings, "mask_position": second})

    def again(texts, targets, contrasts):
        return explain_each(
            model, texts, targets, "logat", contrasts=contrasts, mask_position=second
        )

    (contrasted,) = with_contrast_inputs(model, [made], [other], again)
    (theirs,) = model.explain([other], "logat", target=made.targets[0], mask_position=second)
    assert contrasted.diagnostics["target_probability"][0] == pytest.approx(made.probs[made.label])
    assert contrasted.diagnostics["contrast_input_probability"][0] == pytest.approx(
        theirs.probs[made.targets[0]]
    )


# ------------------------------------------------------------------ the page


def test_the_page_refuses_one_contrast_input_for_a_pair_in_one_line():
    """It said "contrast_input[0] is one text ... give a pair", once per method: the page
    has one field, so the fix it named could not be made there."""
    pytest.importorskip("fastapi")
    from normxlogit.serve.models import ModelPool
    from normxlogit.serve.work import ExplainRequest, _check_contrasts

    pool = ModelPool.build([], {"clf": explainable("bert", "classification")}, builtins=False)
    request = ExplainRequest(
        "clf", (TEXTS[0], "a second text"), ("logat",), contrast_input="a dull film"
    )
    with pytest.raises(InvalidInputError, match="one text, and this input is a pair") as refused:
        _check_contrasts(pool.get("clf"), request, None)
    assert "contrast_input=(first2, second2)" in str(refused.value)


@pytest.fixture(scope="module")
def contrast_grid(tmp_path_factory):
    """A bench config and its store: a plain and a contrastive method ("vs negative"),
    whose negative texts are left with no value."""
    from normxlogit.bench import ResultStore, load_config, run_bench

    from .bench.helpers import _save_tiny

    folder = tmp_path_factory.mktemp("grid")
    model = _save_tiny(folder / "tiny", seed=0)
    config = folder / "grid.toml"
    config.write_text(
        'metrics = ["comp_cd"]\n[[methods]]\nname = "logat"\ntarget = "label"\n'
        '[[methods]]\nname = "logat"\nlabel = "vs negative"\ntarget = "label"\n'
        f'contrast = "negative"\n[[experiments]]\nmodel = "{model}"\ndataset = "sst2"\n'
        "limit = 4\n"
    )
    store = folder / "s.sqlite"
    with ResultStore(store) as opened:
        run_bench(load_config(config), opened)
    return config, store


def test_the_pages_bench_tables_say_what_they_leave_out(contrast_grid):
    """The report said how many instances a contrast left with no value; the page's
    tables (on the instances every method shares, as `bench report --common`) said
    nothing."""
    pytest.importorskip("fastapi")
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    config, store = contrast_grid
    tables = BenchBrowser([BenchEntry.parse(f"{config}={store}")]).tables(0)["tables"]
    notes = [table["left_out_note"] for table in tables]
    assert notes
    assert all("Left out, with no value" in note and "vs negative" in note for note in notes)


def test_a_report_without_matplotlib_writes_nothing(contrast_grid, tmp_path, monkeypatch):
    """`bench report` in the core install wrote the LaTeX tables, then refused for the
    figures (no report.md); write_report also took no folder given as a str."""
    import importlib.util

    from normxlogit.bench import ResultStore, load_config
    from normxlogit.bench.report import write_report

    config, store = contrast_grid
    with ResultStore(store) as opened:
        written = write_report(load_config(config), opened, str(tmp_path / "full"))
    assert (tmp_path / "full" / "report.md") in written
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "matplotlib" else real(name, *a),
    )
    with (
        ResultStore(store) as opened,
        pytest.raises(InvalidInputError, match="normxlogit\[bench\]"),
    ):
        write_report(load_config(config), opened, tmp_path / "core")
    assert not (tmp_path / "core").exists()


# ------------------------------------------- round five: the reported ones, fixed here


def test_mask_position_is_recorded_and_read_again_by_evaluation():
    from normxlogit.evaluation import Protocol
    from normxlogit.evaluation.context import ExplanationSet, build_context

    model = normxlogit.load((build_model("bert", "masked_lm"), fresh_tokenizer()))
    explained = model.explain("a [MASK] film and a [MASK] plot", mask_position=5)
    assert explained.settings["mask_position"] == 5
    ctx = build_context(
        model,
        Protocol().resolved(model),
        ExplanationSet.build([explained]),
        [0],
        None,
        None,
        -1,
        None,
    )
    assert ctx.batch.reading_positions.tolist() == [5]
    default = model.explain(["a [MASK] film and a [MASK] plot", "the [MASK] is good"])
    assert all("mask_position" not in e.settings for e in default)


def test_a_masked_lm_text_or_contrast_input_without_a_mask_is_refused_first():
    model = normxlogit.load((build_model("bert", "masked_lm"), fresh_tokenizer()))
    with pytest.raises(InvalidInputError, match="text 1 has no \\[MASK\\]"):
        model.explain(["a [MASK] film", "no mask here"])
    with pytest.raises(InvalidInputError, match="contrast_input has no \\[MASK\\]"):
        model.explain("a [MASK] film", contrast_input="a bad film")


def test_evidence_given_as_a_string_is_named_as_such():
    model = normxlogit.load((build_model("bert", "classification"), fresh_tokenizer()))
    made = model.explain(["a film", "a plot"])
    with pytest.raises(InvalidInputError, match="one entry per text, got a str"):
        normxlogit.evaluate(model, made, ["evidence_ap"], evidence="0101")


def test_saved_flags_and_step_scores_of_the_wrong_type_say_which():
    model = normxlogit.load((build_model("bert", "classification"), fresh_tokenizer()))
    data = model.explain("a film").to_dict()
    data["settings"]["contrast_is_target"] = "false"
    with pytest.raises(InvalidInputError, match="must be true or false"):
        normxlogit.Explanation.from_dict(data)
    lm = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()))
    saved = lm.explain("a film", generate=True, max_new_tokens=2).to_dict()
    saved["step_scores"]["entropy"] = {"a": 1}
    with pytest.raises(InvalidInputError, match="its entry 'entropy' is an object"):
        normxlogit.GenerationExplanation.from_dict(saved)
