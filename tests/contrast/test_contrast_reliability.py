"""Contrasts under bad input (issue 41), in every entry point: Python, the command line,
a bench config, the page's API and saved files.

- a wrong contrast or contrast input is one clear line naming the fix, never a traceback;
- a contrast equal to its target explains nothing, and is never shown as an all-zero
  explanation: refused where it is the whole input (one text, every text, a spelt pair),
  flagged where it is some texts (NaN scores, ``contrast_is_target``, a warning naming
  them), left out by evaluate and the bench (which say so), refused by the page.
"""

from __future__ import annotations

import json
import re
import time
import warnings

import numpy as np
import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError, NormXLogitWarning

from ..cli.test_bad_inputs_cli import assert_refused, run
from ..conftest import explainable, sharp_model

TEXT = "a gripping film that never lets go"
PROMPT = "the cat sat on the"


def _caught(call):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in seen if issubclass(w.category, NormXLogitWarning)]


# ------------------------------------------------------------------ tracebacks


def test_a_regressor_takes_a_contrast_input_and_reports_both_values():
    """It ended in an IndexError (the page: "internal error"): a regressor has no second
    output, but the same output under two inputs is well defined."""
    model = explainable("bert", "regression")
    made = model.explain(TEXT, "gradient_x_input", contrast_input="a dull film")
    plain = model.explain(TEXT, "gradient_x_input")
    assert set(made.diagnostics) >= {"target_value", "contrast_input_value"}
    assert made.diagnostics["target_value"][0] == pytest.approx(plain.value, rel=1e-5)
    assert made.settings["contrast_input"] == "a dull film"


@pytest.mark.parametrize(
    ("contrast_input", "fragment"),
    [
        (123, "contrast_input is the int 123; give a text"),
        (b"a dull film", "decode bytes first"),
        (["a dull film"], "a list of contrast inputs goes with a list of texts"),
        ([None], "contrast_input is a list of 1"),
        (("a dull", "film"), "contrast_input is a pair but the text explained is one text"),
        ("", "contrast_input is empty or blank"),
        ("  ", "contrast_input is empty or blank"),
        ({"text": "a"}, "contrast_input is a dict"),
    ],
)
def test_a_contrast_input_of_the_wrong_kind_is_one_line(contrast_input, fragment):
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match=re.escape(fragment)):
        model.explain(TEXT, contrast_input=contrast_input)


@pytest.mark.parametrize(
    ("contrast_input", "fragment"),
    [
        ("a fine film", "2 texts but contrast_input is one text; give a list of 2"),
        (["a fine film"], "2 texts but 1 contrast input; give one per text"),
        (["a fine film", None], r"contrast_input\[1\] is None"),
        (["a fine film", ""], r"contrast_input\[1\] is empty"),
        (7, "contrast_input is the int 7; give a list of 2"),
    ],
)
def test_contrast_inputs_for_several_texts_name_the_one_that_is_wrong(contrast_input, fragment):
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match=fragment):
        model.explain([TEXT, "a dull film"], contrast_input=contrast_input)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        (dict(contrast=5), r"the contrast is the int 5; give a contrast continuation .* \[5\]"),
        (dict(contrast=1.5), "the contrast is the float 1.5"),
        (dict(contrast=""), "the contrast is empty; give a contrast continuation"),
        (dict(contrast=b"a b"), "the contrast is bytes"),
        (dict(contrast=[None, 3]), "contrast token ids: None is not a token id"),
        (dict(contrast=["a", "b"]), "the contrast is a list of texts"),
        (dict(contrast="a"), "the contrast is 1 token"),
        (dict(contrast_input=123), "contrast_input is the int 123; give a contrast prompt"),
        (dict(contrast_input=""), "contrast_input is empty or blank"),
        (dict(contrast_input=("a", "b")), "contrast_input is a tuple of 2"),
    ],
)
def test_a_generations_contrast_of_the_wrong_kind_is_one_line(options, fragment):
    """An int contrast was a TypeError; "" said "the continuation is empty"; an int
    contrast prompt said "one text, not a pair"."""
    model = explainable("llama", "causal_lm")
    with pytest.raises(InvalidInputError, match=fragment):
        model.explain(PROMPT, "normxlogit", continuation=[5, 6], **options)


def test_a_continuation_of_the_wrong_kind_is_one_line_too():
    model = explainable("llama", "causal_lm")
    with pytest.raises(InvalidInputError, match="the continuation is the int 5"):
        model.explain(PROMPT, continuation=5)
    with pytest.raises(InvalidInputError, match="the continuation is bytes"):
        model.explain(PROMPT, continuation=b"a b")


# ------------------------------------------------------------------ contrast == target


def test_a_target_spelt_as_its_contrast_is_refused_before_any_work():
    model = explainable("bert", "classification")
    labels = model.task.labels
    for target, contrast in [(0, 0), (labels[1], labels[1]), ([0, 1], [2, 1]), ([0, 1], 0)]:
        with pytest.raises(InvalidInputError, match="contrasted with itself"):
            model.explain(TEXT, target=target, contrast=contrast)
    with pytest.raises(InvalidInputError, match="contrasted with itself"):  # an alias
        model.explain(TEXT, target=labels[2].upper(), contrast=2)


def test_a_count_of_contrasts_that_fits_no_target_says_how_many_targets():
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match=r"2 contrasts for 1 target \(the prediction\)"):
        model.explain(TEXT, contrast=[0, 1])


def test_one_text_predicted_as_its_contrast_is_refused():
    model = explainable("bert", "classification")
    predicted = model.explain(TEXT).label
    with pytest.raises(InvalidInputError, match=f"predicts '{predicted}' for this text"):
        model.explain(TEXT, contrast=predicted)


def test_texts_predicted_as_their_contrast_are_flagged_not_zero():
    """ "negative vs negative" came back all zero, unmarked; now those texts' scores are
    NaN, they say so, and one warning counts and names them. Every text: refused."""
    model = sharp_model()
    texts = ["a gripping film", "dull and slow", "the cat sat on the mat", "no"]
    labels = [e.label for e in model.explain(texts)]
    contrast = labels[0]
    flagged = [i for i, label in enumerate(labels) if label == contrast]
    assert 0 < len(flagged) < len(texts)  # the sharp model predicts several labels here
    made, said = _caught(lambda: model.explain(texts, contrast=contrast))
    assert [e.contrast_is_target for e in made] == [i in flagged for i in range(len(texts))]
    for index, explanation in enumerate(made):
        assert np.isnan(explanation.scores).all() == (index in flagged)
    (warning,) = said
    listed = ", ".join(f"text {i}" for i in flagged)
    assert (
        f"{len(flagged)} of {len(texts)} texts ({listed}) have their contrast as target "
        f"('{contrast}')" in warning
    )
    with pytest.raises(InvalidInputError, match=f"each of the {len(flagged)} texts"):
        model.explain([texts[i] for i in flagged], contrast=contrast)
    # a contrast input keeps the flagged texts as they are, the others are compared
    edited = [f"{text} indeed" for text in texts]  # the same text would be refused
    against, _ = _caught(lambda: model.explain(texts, contrast=contrast, contrast_input=edited))
    assert [e.contrast_is_target for e in against] == [i in flagged for i in range(len(texts))]
    assert all("contrast_input" in e.settings for e in against if not e.contrast_is_target)


def test_explain_each_flags_the_texts_whose_own_target_is_their_contrast():
    """Each text's own target: a text whose target is its contrast is flagged, as with
    the prediction (one group of texts is not the whole input), and refused when all are."""
    from normxlogit.explaining.texts import explain_each

    model = explainable("bert", "classification")
    texts = [TEXT, "a dull film"]
    made, said = _caught(lambda: explain_each(model, texts, [0, 1], "logat", contrasts=[1, 1]))
    assert [e.contrast_is_target for e in made] == [False, True]
    assert len(said) == 1 and "1 of 2 texts (text 1)" in said[0]
    with pytest.raises(InvalidInputError, match="contrasted with itself"):
        explain_each(model, texts, [1, 1], "logat", contrasts=[1, 1])


def test_every_label_against_one_leaves_that_label_out():
    model = explainable("bert", "classification")
    labels = model.task.labels
    made = model.explain(TEXT, "logat", target="all", contrast=labels[0])
    assert made.targets == list(labels[1:]) and made.column_titles[0].endswith(f"vs {labels[0]}")
    assert np.isfinite(made.scores).all() and made.scores.shape[-1] == len(labels) - 1


def test_a_flagged_explanation_round_trips_and_renders(tmp_path):
    model = sharp_model()
    texts = ["a gripping film", "dull and slow", "the cat sat on the mat", "no"]
    contrast = model.explain(texts[0]).label
    made, _ = _caught(lambda: model.explain(texts, contrast=contrast))
    flagged = next(e for e in made if e.contrast_is_target)
    path = tmp_path / "e.json"
    flagged.save(path)
    assert "NaN" not in path.read_text()
    back = normxlogit.Explanation.load(path)
    assert back.contrast_is_target and np.isnan(back.scores).all()
    assert "not explained" in flagged.to_html()
    from rich.console import Console

    console = Console(width=120)
    with console.capture() as captured:
        console.print(flagged)
    assert "not explained: its target is its contrast" in captured.get()


def test_evaluate_leaves_flagged_explanations_out_and_says_which():
    model = sharp_model()
    texts = ["a gripping film", "dull and slow", "the cat sat on the mat", "no"]
    contrast = model.explain(texts[0]).label
    made, _ = _caught(lambda: model.explain(texts, contrast=contrast))
    flagged = [i for i, e in enumerate(made) if e.contrast_is_target]
    result, said = _caught(lambda: normxlogit.evaluate(model, made, ["comp_cd"]))
    assert sorted(result.frame["instance"].unique()) == [
        i for i in range(len(texts)) if i not in flagged
    ]
    assert any("left out of every metric" in w and str(flagged[0]) in w for w in said)
    with pytest.raises(InvalidInputError, match="every explanation contrasts its target"):
        normxlogit.evaluate(model, [made[i] for i in flagged], ["comp_cd"])


def test_an_all_zero_explanation_saved_before_the_rule_is_recognised(tmp_path):
    """A file written before flagging: 'negative vs negative' with zero scores. It is
    recognised by its names, so evaluate leaves it out rather than rank zeros."""
    model = sharp_model()
    texts = ["a gripping film", "dull and slow"]
    made = model.explain(texts, "logat", target=0, contrast=1)
    data = made[1].to_dict()
    data["contrasts"] = data["targets"]
    data["settings"]["contrast"] = data["targets"]
    data["scores"] = [0.0] * len(data["tokens"])
    old = normxlogit.Explanation.from_dict(json.loads(json.dumps(data)))
    assert old.contrast_is_target
    result, said = _caught(lambda: normxlogit.evaluate(model, [made[0], old], ["comp_cd"]))
    assert list(result.frame["instance"].unique()) == [0] and said


def test_a_generation_step_with_the_contrasts_own_token_is_flagged():
    model = explainable("llama", "causal_lm")
    made, said = _caught(
        lambda: model.explain(PROMPT, "logat", continuation=[5, 6, 7], contrast=[5, 9, 7])
    )
    assert made.settings["contrast_is_target_steps"] == [0, 2]
    assert np.isnan(made.scores[[0, 2]]).all() and np.isfinite(made.scores[1, :6]).all()
    assert len(said) == 1 and "step(s) 0, 2" in said[0]
    assert made.step(0).contrast_is_target and not made.step(1).contrast_is_target
    frame = made.to_frame()  # the NaN rows say why they are NaN
    flagged = frame.groupby("step")["contrast_is_target"].agg(["all", "any"])
    assert flagged["all"].tolist() == [True, False, True] == flagged["any"].tolist()
    assert frame.loc[frame["contrast_is_target"], "score"].isna().all()
    assert frame.loc[~frame["contrast_is_target"], "score"].notna().all()
    with pytest.raises(InvalidInputError, match="equals the continuation at every step"):
        model.explain(PROMPT, "logat", continuation=[5, 6, 7], contrast=[5, 6, 7])
    with pytest.raises(InvalidInputError, match="equals the continuation at every step"):
        model.explain(
            PROMPT, "logat", continuation=[5, 6, 7], contrast=[5, 9, 7], explain_steps=[0, 2]
        )


def test_evaluating_a_generation_leaves_out_the_steps_with_the_contrasts_own_token():
    model = explainable("gpt2", "causal_lm")
    made, _ = _caught(
        lambda: model.explain(
            PROMPT, "logat", continuation=[5, 6, 7, 8, 9, 10], contrast=[5, 1, 7, 2, 3, 4]
        )
    )
    result, said = _caught(lambda: normxlogit.evaluate(model, [made], ["soft_nc"]))
    assert sorted(result.frame["step"].unique()) == [5]  # steps 0 and 5 scored; 0 is the same
    assert any("generation 0: step 0" in w for w in said)
    same, _ = _caught(
        lambda: model.explain(PROMPT, "logat", continuation=[5, 6, 7], contrast=[5, 1, 2])
    )
    with pytest.raises(InvalidInputError, match="every step evaluated has the contrast's own"):
        normxlogit.evaluate(model, [same], ["soft_nc"])


def test_a_contrast_sequence_of_the_wrong_kind_is_named_as_such():
    from normxlogit.generation import contrast_prob_diff

    model = explainable("gpt2", "causal_lm")
    with pytest.raises(InvalidInputError, match="the contrast sequence is the int 5"):
        contrast_prob_diff(model, [5, 6, 7, 8], 2, 5)
    with pytest.raises(InvalidInputError, match="contrast 'xylophonists' is 5 tokens"):
        explainable("bert", "masked_lm").explain(
            "the [MASK] sat", target="cat", contrast="xylophonists"
        )


# ------------------------------------------------------------------ the command line


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (
            ["--contrast", "negative", "--contrast-id", "0"],
            ["--contrast/--contrast-id: 2 contrasts for 1 target (the prediction)"],
        ),
        (["--label", "pos", "--contrast", "pos"], ["'pos' is contrasted with itself"]),
        (["--contrast-input", ""], ["--contrast-input is empty"]),
        (["--contrast", ""], ["an empty --contrast"]),
        (["--contrast", "all"], ["names no single output"]),
    ],
)
def test_the_command_line_refuses_a_contrast_in_one_line(tiny_classifier, args, fragments):
    assert_refused(run("explain", TEXT, "--model", str(tiny_classifier), *args), *fragments)


def test_the_command_line_refuses_a_text_predicted_as_its_contrast(tiny_classifier):
    predicted = normxlogit.load(tiny_classifier).explain(TEXT).label
    line = assert_refused(
        run("explain", TEXT, "--model", str(tiny_classifier), "--contrast", predicted)
    )
    assert f"predicts '{predicted}' for this text" in line


# ------------------------------------------------------------------ the bench


def _grid(tmp_path, method: str, model: str = "minilm-sst2", dataset: str = "sst2"):
    path = tmp_path / "grid.toml"
    path.write_text(
        f'metrics = ["comp_cd"]\n[[methods]]\n{method}\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "{dataset}"\nlimit = 4\n'
    )
    return path


@pytest.mark.parametrize(
    ("method", "dataset", "fragment"),
    [
        ('name = "logat"\ntarget = "label"\ncontrast = "label"', "sst2", "is its target too"),
        ('name = "logat"\ntarget = "Positive"\ncontrast = "positive"', "sst2", "its target too"),
        ('name = "logat"\ncontrast = "neutral"', "sst2", "no label of model minilm-sst2"),
        ('name = "logat"\ncontrast = "all"', "sst2", "'all' names no single output"),
        ('name = "logat"\ncontrast = "prediction"', "sst2", "is a target, not a contrast"),
        ('name = "logat"\ncontrast = 3', "sst2", "not an integer 3"),
        ('name = "logat"\ncontrast = "foil"', "sst2", '"foil" reads each text\'s foil'),
        ('name = "logat"\ncontrast = "label"', "stsb", "are scores (a regression)"),
    ],
)
def test_a_bench_contrast_is_checked_when_the_config_is_read(tmp_path, method, dataset, fragment):
    """Refused with the method's name before any model loads (the labels of a built-in
    model are known without loading it); "label" on SST-2 no longer blames the target."""
    from normxlogit.bench.config import load_config

    with pytest.raises(InvalidInputError, match=re.escape(fragment)):
        load_config(_grid(tmp_path, method, dataset=dataset))


def test_a_regressors_contrast_is_refused_when_the_config_is_read(tmp_path):
    from normxlogit.bench.config import load_config

    with pytest.raises(InvalidInputError, match="minilm-stsb is a regressor"):
        load_config(_grid(tmp_path, 'name = "logat"\ncontrast = "x"', "minilm-stsb", "stsb"))


def test_the_built_in_models_labels_are_known_without_loading_them():
    from normxlogit.builtin import BUILTIN_MODELS
    from normxlogit.builtin.sources import WEIGHTS_DIR

    for name, builtin in BUILTIN_MODELS.items():
        manifest = WEIGHTS_DIR / name / "normxlogit.json"
        if manifest.exists():
            saved = json.loads(manifest.read_text())
            expected = saved["labels"] if saved["task"] in ("classification", "prompted") else []
            assert list(builtin.labels) == expected, name


def test_a_folder_models_contrast_is_checked_at_its_first_load_with_the_methods_name(tmp_path):
    from normxlogit.bench import ResultStore, load_config, run_bench

    from ..bench.helpers import _save_tiny

    model = _save_tiny(tmp_path / "tiny", seed=0)
    config = load_config(_grid(tmp_path, 'name = "logat"\ncontrast = "neutral"', str(model)))
    with ResultStore(tmp_path / "s.sqlite") as store, pytest.raises(InvalidInputError) as error:
        run_bench(config, store)
    assert "method logat contrast = 'neutral'" in str(error.value)
    assert "unknown label 'neutral'" in str(error.value)


def test_the_bench_stores_no_value_for_a_text_whose_target_is_its_contrast(tmp_path):
    """target = "label" (SST-2's gold labels, as the model names them: this failed
    before) against "negative": the negative texts explain nothing. They are stored with
    no value, the run counts them, the report says so, and a second run has no work."""
    from normxlogit.bench import ResultStore, load_config, run_bench
    from normxlogit.bench.report import write_report

    from ..bench.helpers import _save_tiny, stored

    model = _save_tiny(tmp_path / "tiny", seed=0)
    method = 'name = "logat"\ntarget = "label"\ncontrast = "negative"'
    config = load_config(_grid(tmp_path, method, str(model)))
    with ResultStore(tmp_path / "s.sqlite") as store:
        report = run_bench(config, store)
        again = run_bench(config, store)
        write_report(config, store, tmp_path / "report")
    ((label, flagged),) = report.contrast_is_target.items()
    values = stored(tmp_path / "s.sqlite")
    assert set(values["instance"]) == set(range(4)) - set(flagged)
    assert np.isfinite(values["value"]).all() and again.units == 0
    text = "".join(p.read_text() for p in (tmp_path / "report").glob("*.md"))
    assert "Left out, with no value" in text and "not every instance is done" not in text


# ------------------------------------------------------------------ the page


@pytest.fixture(scope="module")
def page():
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from normxlogit.serve import build_app

    loaded = {
        "clf": explainable("bert", "classification"),
        "dec": explainable("llama", "causal_lm"),
        "reg": explainable("bert", "regression"),
    }
    with TestClient(build_app([], loaded=loaded, builtins=False)) as client:
        yield client


def _job(client, **body) -> dict:
    response = client.post("/api/explain", json={"methods": ["logat"], **body})
    assert response.status_code == 200, response.text
    job = response.json()
    deadline = time.time() + 120
    while job["state"] in ("queued", "running"):
        assert time.time() < deadline
        time.sleep(0.05)
        job = client.get(f"/api/jobs/{job['id']}").json()
    return job


def test_the_page_compares_a_regressors_two_inputs(page):
    job = _job(page, model="reg", text=TEXT, methods=["normxlogit"], contrast_input="a dull film")
    assert job["state"] == "done", job["error"]
    (payload,) = job["result"]["explanations"]
    assert payload["settings"]["contrast_input"] == "a dull film"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (dict(contrast="PREDICTED"), "predicts"),
        (dict(target="LABEL_1", contrast="LABEL_1"), "contrasted with itself"),
        (dict(contrast="nope"), "contrast (rather than): unknown label 'nope'"),
        (dict(contrast_input="  "), "the contrast input (against the input) is blank"),
        (dict(model="reg", contrast="LABEL_0"), "a regression model has one output"),
    ],
)
def test_the_page_refuses_a_contrast_in_one_line(page, body, fragment):
    body = {"model": "clf", "text": TEXT, "methods": ["logat", "gradient_x_input"], **body}
    if body.get("contrast") == "PREDICTED":
        body["contrast"] = explainable("bert", "classification").explain(TEXT).label
    job = _job(page, **body)
    assert job["state"] == "failed" and fragment in job["error"], job["error"]
    assert not job["error"].startswith("no method could explain")  # said once, not per method


def test_the_page_shows_a_step_with_the_contrasts_own_token_as_not_explained(page):
    job = _job(page, model="dec", text=PROMPT, continuation="a b", contrast="a c")
    assert job["state"] == "done", job["error"]
    (payload,) = job["result"]["explanations"]
    assert payload["explained_steps"] == [1]
    same = _job(page, model="dec", text=PROMPT, continuation="a b", contrast="a b")
    assert same["state"] == "failed" and "is the continuation itself" in same["error"]
