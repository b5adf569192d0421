"""Round thirty-two, contrastive explanations (probe round 32/a):

- P01: a contrastive comp_cd / suff_cd (a drop of p(target) - p(contrast), in [-2, 2]) is
  checked against its contrastive range, not warned about as "outside [-1, 1]"; a saved
  result loads without the warning, and the page reports the range [-2, 2];
- P03: a multi-token contrast is refused as a contrast, not a "target", on the page;
- P04: contrast refusals name each entry point's own controls (the page's *Explain*,
  *rather than*, *against the input*, *Segments*; the CLI's --label; Python's target=);
- P05: the terminal view of an explanation against a contrast input names both inputs
  (user text as data, not markup) and the target's probability under each;
- P06: the metrics that perturb the text refuse explanations made against a contrast
  input (Python and the page), and plausibility metrics still score them;
- P07: texts whose prediction none of their columns explains are named in a warning
  with the column evaluated (target="all" with a contrast, explicit targets);
- noted: the contrast input's KL divergence is never below 0, and a tokenizer whose pad
  token is past the model's embedding rows is refused at load in one line.
"""

from __future__ import annotations

import io
import json
import warnings

import pytest
import torch
from rich.console import Console

import normxlogit
from normxlogit.common.errors import NormXLogitError
from normxlogit.evaluation import EvaluationResult

from .conftest import build_model, explainable, fresh_tokenizer, invoke_in, sharp_model

TEXTS = [
    "a gripping film with a lot of heart",
    "a dull lifeless film that never ends",
    "I hated every minute of it",
]
RATIOS = normxlogit.Protocol(ratios=(0.2, 0.5, 0.9))


def _recorded(call):
    """``call()``'s result and the messages of the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught]


# ---------------------------------------------------------------- P01


@pytest.fixture(scope="module")
def contrastive_result():
    """comp_cd and suff_cd of LABEL_2 rather than LABEL_0 (some values past 1)."""
    model = sharp_model()
    made = model.explain(TEXTS, method="normxlogit", target=2, contrast=0)
    return _recorded(
        lambda: normxlogit.evaluate(
            model, {"vs": made}, metrics=["comp_cd", "suff_cd"], protocol=RATIOS, progress=False
        )
    )


def test_a_contrastive_confidence_drop_is_checked_against_its_own_range(contrastive_result):
    result, said = contrastive_result
    assert result.frame["value"].max() > 1  # a drop of a difference: past the plain range
    assert not [m for m in said if "outside its declared range" in m], said


def test_a_saved_contrastive_result_loads_without_the_range_warning(contrastive_result, tmp_path):
    result, _ = contrastive_result
    result.save(tmp_path / "r.json")
    _, said = _recorded(lambda: EvaluationResult.load(tmp_path / "r.json"))
    assert not [m for m in said if "outside its declared range" in m], said
    assert json.loads(result.summary().to_json())["metrics"]["comp_cd"]["range"] == [-2, 2]


def test_a_plain_explanation_keeps_the_plain_range():
    from normxlogit.evaluation.registry import metric_class

    assert metric_class("comp_cd").ranged_info(False).value_range == (-1, 1)
    assert metric_class("comp_cd").ranged_info(True).value_range == (-2, 2)
    assert metric_class("soft_nc").ranged_info(True) is metric_class("soft_nc").info


# ---------------------------------------------------------------- the page

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from normxlogit.serve import build_app  # noqa: E402

from .serve.test_serve_api import finished  # noqa: E402


@pytest.fixture(scope="module")
def client():
    app = build_app(
        [],
        loaded={"tiny": sharp_model(), "tiny-decoder": explainable("llama", "causal_lm")},
        builtins=False,
    )
    with TestClient(app) as test_client:
        yield test_client


def _explained(client, **body) -> dict:
    response = client.post("/api/explain", json={"model": "tiny", "text": TEXTS[2], **body})
    assert response.status_code == 200, response.text
    return finished(client, response.json())


def _evaluated(client, run: str, metrics: list[str]) -> dict:
    response = client.post("/api/evaluate", json={"run": run, "metrics": metrics})
    return finished(client, response.json())


def test_the_page_reports_the_range_of_what_it_evaluated(client):
    ranges = {}
    for contrast in (None, "LABEL_0"):
        made = _explained(client, methods=["normxlogit"], target="LABEL_2", contrast=contrast)
        assert made["state"] == "done", made["error"]
        done = _evaluated(client, made["result"]["run"], ["comp_cd", "soft_ns"])
        assert done["state"] == "done", done["error"]
        ranges[contrast] = {m["name"]: m["range"] for m in done["result"]["metrics"]}
    assert ranges[None] == {"comp_cd": [-1, 1], "soft_ns": [0, 1]}
    assert ranges["LABEL_0"] == {"comp_cd": [-2, 2], "soft_ns": [0, 1]}


# ---------------------------------------------------------------- P03, P04


def test_a_multi_token_contrast_is_refused_as_a_contrast_on_the_page(client):
    made = _explained(
        client, model="tiny-decoder", methods=["normxlogit"], contrast="unflinchingly"
    )
    assert made["state"] == "failed"
    assert made["error"].startswith("contrast (rather than): contrast 'unflinchingly' is ")
    assert "a language-model contrast must be a single token" in made["error"]


def test_the_page_names_its_controls_when_the_prediction_is_the_contrast(client):
    predicted = sharp_model().explain(TEXTS[2]).label
    made = _explained(client, methods=["normxlogit"], contrast=predicted)
    assert made["state"] == "failed"
    assert (
        "choose another contrast (rather than), or the label to explain against it "
        in (made["error"])
    )
    assert "target=" not in made["error"] and "--label" not in made["error"]


@pytest.mark.parametrize(
    "body, said, unsaid",
    [
        ({"target": "LABEL_2", "contrast": "LABEL_0"}, "token method and Segments", "segments="),
        (
            {"target": "LABEL_2", "contrast_input": "Loved it. It is fun."},
            "has no contrast input (against the input)",
            "contrast_input=",
        ),
    ],
)
def test_a_segment_method_refused_a_contrast_names_the_page_controls(client, body, said, unsaid):
    made = _explained(
        client,
        text="Hated it. It is dull.",
        methods=["leave_one_out"],
        segments="sentences",
        **body,
    )
    assert made["state"] == "failed"
    assert said in made["error"] and unsaid not in made["error"], made["error"]


def test_python_and_the_cli_name_their_own_way_to_pass_the_target(tmp_path):
    model = sharp_model()
    predicted = model.explain(TEXTS[2]).label
    with pytest.raises(NormXLogitError) as refused:
        model.explain(TEXTS[2], contrast=predicted)
    assert "(target=...)" in str(refused.value) and "--label" not in str(refused.value)
    folder = tmp_path / "sharp"
    model.model.save_pretrained(folder)
    model.tokenizer.save_pretrained(folder)
    ran = invoke_in(tmp_path, "explain", TEXTS[2], "-m", str(folder), "--contrast", predicted)
    assert ran.exit_code == 2
    assert "(--label or --label-id)" in ran.output and "target=" not in ran.output


# ---------------------------------------------------------------- P05


def test_the_terminal_names_the_contrast_input_and_both_probabilities():
    model = sharp_model()
    made = model.explain("a [bold]gripping[/bold] film", contrast_input="a dull film")
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(made)
    shown = console.file.getvalue()
    title = made.target_texts[0]
    p = made.diagnostics["target_probability"][0]
    q = made.diagnostics["contrast_input_probability"][0]
    assert f'{title}: "a [bold]gripping[/bold] film" vs "a dull film"' in shown
    assert f"(p {p:.1%} vs {q:.1%}, KL " in shown


# ---------------------------------------------------------------- P06


@pytest.fixture(scope="module")
def against_an_input():
    model = sharp_model()
    return model, model.explain(TEXTS[:2], target=2, contrast_input=["a film", "a dull film"])


@pytest.mark.parametrize("metric", ["comp_cd", "deletion", "soft_ns"])
def test_a_metric_that_perturbs_the_text_refuses_a_contrast_input(against_an_input, metric):
    model, made = against_an_input
    with pytest.raises(NormXLogitError) as refused:
        normxlogit.evaluate(model, {"ci": made}, metrics=[metric], progress=False)
    said = str(refused.value)
    assert "was made against a contrast input ('a film')" in said
    assert "explain without contrast_input= to evaluate faithfulness" in said
    assert "\n" not in said


def test_a_plausibility_metric_still_scores_a_contrast_input(against_an_input):
    model, made = against_an_input
    evidence = [[0] * len(e.tokens) for e in made]
    for row in evidence:
        row[1] = 1
    result = normxlogit.evaluate(
        model, {"ci": made}, metrics=["evidence_ap"], evidence=evidence, progress=False
    )
    assert len(result.frame) > 0


def test_the_page_refuses_to_evaluate_a_contrast_input_in_its_words(client):
    made = _explained(client, methods=["normxlogit"], target="LABEL_2", contrast_input="a film")
    assert made["state"] == "done", made["error"]
    done = _evaluated(client, made["result"]["run"], ["comp_cd"])
    assert done["state"] == "failed"
    assert "explain without a contrast input (against the input)" in done["error"]
    assert "contrast_input=" not in done["error"]


# ---------------------------------------------------------------- P07


def test_a_text_predicted_as_the_contrast_is_named_with_the_column_evaluated():
    model = sharp_model()
    made = model.explain(TEXTS, target="all", contrast="LABEL_1")
    predicted = [i for i, e in enumerate(made) if e.label == "LABEL_1"]
    assert predicted and len(predicted) < len(TEXTS)
    _, said = _recorded(
        lambda: normxlogit.evaluate(model, {"all": made}, metrics=["comp_cd"], progress=False)
    )
    named = [m for m in said if "none of their explanation's columns explains" in m]
    assert len(named) == 1, said
    assert f"{len(predicted)} of {len(TEXTS)} texts" in named[0]
    assert "'LABEL_0 vs LABEL_1'" in named[0]


def test_explicit_targets_without_the_prediction_are_named():
    model = sharp_model()
    made = model.explain(TEXTS[:2], target=["LABEL_2", "LABEL_0"])  # both predict LABEL_1
    assert {e.label for e in made} == {"LABEL_1"}
    _, said = _recorded(
        lambda: normxlogit.evaluate(model, {"two": made}, metrics=["comp_cd"], progress=False)
    )
    named = [m for m in said if "none of their explanation's columns explains" in m]
    assert len(named) == 1 and "('LABEL_2')" in named[0], said


def test_a_column_of_the_prediction_gives_no_warning():
    model = sharp_model()
    made = model.explain(TEXTS[:2], target=["LABEL_2", "LABEL_1"])
    _, said = _recorded(
        lambda: normxlogit.evaluate(model, {"two": made}, metrics=["comp_cd"], progress=False)
    )
    assert not [m for m in said if "none of their explanation's columns" in m], said


# ---------------------------------------------------------------- noted


def test_the_kl_divergence_is_never_below_zero():
    from normxlogit.explaining.contrast_inputs import kl_divergence

    p = torch.tensor([0.5, 0.5])
    assert kl_divergence(p, p * (1 + 1e-7)) == 0.0


def test_a_pad_token_past_the_embedding_rows_is_refused_at_load():
    tokenizer = fresh_tokenizer()
    network = build_model("llama", "causal_lm")
    network.resize_token_embeddings(500)
    tokenizer.pad_token = tokenizer.convert_ids_to_tokens(600)
    with pytest.raises(NormXLogitError) as refused:
        normxlogit.load((network, tokenizer))
    assert str(refused.value) == (
        f"the tokenizer's pad token {tokenizer.pad_token!r} has id 600, past the model's 500 "
        "embedding rows; set tokenizer.pad_token to a token the model has (its eos_token, "
        'say) before loading (a saved model folder: its tokenizer_config.json\'s "pad_token")'
    )
