"""The page's segments (issue 42): a request carries "sentences" or the text's segments,
every explanation comes back with its segment scores as the library computes them, the
segment methods run with segments and say in one line that they need them, and the
faithfulness curves take segments as their units."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

import normxlogit  # noqa: E402
from normxlogit.evaluation import Protocol  # noqa: E402
from normxlogit.serve import build_app  # noqa: E402
from normxlogit.serve.payloads import over_steps  # noqa: E402

from ..conftest import explainable, sharp_model  # noqa: E402
from .test_serve_api import finished  # noqa: E402

TEXT = "The plot is thin. The acting is wonderful! I would see it again."
PROMPT = "The film opens slowly. Then it soars."
SEGMENT_METHODS = {"leave_one_out", "feature_ablation", "shapley_sampling", "contextcite"}


@pytest.fixture(scope="module")
def models():
    return {"tiny-classifier": sharp_model(), "tiny-decoder": explainable("llama", "causal_lm")}


@pytest.fixture(scope="module")
def client(models):
    app = build_app([], loaded=models, builtins=False)
    with TestClient(app) as test_client:
        yield test_client


def explain_job(client, **body) -> dict:
    response = client.post("/api/explain", json={"model": "tiny-classifier", "text": TEXT, **body})
    assert response.status_code == 200, response.text
    return finished(client, response.json())


def explained(client, **body) -> dict:
    job = explain_job(client, **body)
    assert job["state"] == "done", job["error"]
    return job["result"]


def test_info_marks_the_methods_that_need_segments(client):
    methods = {m["name"]: m for m in client.get("/api/info").json()["methods"]}
    assert {name for name, m in methods.items() if m["segments"]} == SEGMENT_METHODS
    metrics = {m["name"]: m for m in client.get("/api/info").json()["metrics"]}
    assert metrics["segment_drop"]["segments"] and metrics["segment_lds"]["segments"]
    assert not metrics["comp_cd"]["segments"]


def test_sentences_give_every_method_its_segment_scores_as_the_library(client, models):
    result = explained(
        client, methods=["normxlogit", "leave_one_out"], segments="sentences", segment_reduce="mean"
    )
    assert result["errors"] == {}
    model = models["tiny-classifier"]
    for payload in result["explanations"]:
        reduce = {} if payload["method"] == "leave_one_out" else {"segment_reduce": "mean"}
        expected = model.explain(TEXT, method=payload["method"], segments="sentences", **reduce)
        segments = payload["segments"]
        assert (
            segments["texts"]
            == expected.segments.texts
            == [
                "The plot is thin.",
                "The acting is wonderful!",
                "I would see it again.",
            ]
        )
        assert segments["token_segments"] == expected.segments.token_segments
        assert segments["how"] == expected.segments.how
        # [L][S][K] as the token scores: one layer, one target
        np.testing.assert_allclose(
            np.array(segments["scores"])[0, :, 0], expected.segments.scores, rtol=1e-5
        )
    how = {e["method"]: e["segments"]["how"] for e in result["explanations"]}
    assert how == {"normxlogit": "mean", "leave_one_out": "native"}  # it scores segments itself


def test_segments_one_per_line_and_every_label(client, models):
    given = ["The plot is thin.", "  ", "I would see it again."]  # a blank line is left out
    result = explained(client, methods=["gradient_x_input"], segments=given, target="all")
    (payload,) = result["explanations"]
    expected = models["tiny-classifier"].explain(
        TEXT,
        method="gradient_x_input",
        target="all",
        segments=["The plot is thin.", "I would see it again."],
    )
    assert payload["segments"]["texts"] == expected.segments.texts
    assert payload["segments"]["token_segments"] == expected.segments.token_segments
    np.testing.assert_allclose(np.array(payload["segments"]["scores"])[0], expected.segments.scores)
    assert None in payload["segments"]["token_segments"]  # the middle sentence is in none


def test_without_segments_there_is_no_segment_payload(client):
    result = explained(client, methods=["normxlogit"])
    assert result["explanations"][0]["segments"] is None


def test_segment_methods_without_segments_say_so_in_one_line(client):
    result = explained(client, methods=["normxlogit", "leave_one_out"])
    assert [e["method"] for e in result["explanations"]] == ["normxlogit"]
    assert result["errors"]["leave_one_out"].startswith("scores segments: under Segments choose")
    job = explain_job(client, methods=["leave_one_out", "contextcite"])
    assert job["state"] == "failed"
    assert job["error"] == (
        "leave_one_out, contextcite score segments: under Segments choose sentences, or one "
        "per line and list the text's segments"
    )
    layered = explained(client, methods=["logat", "leave_one_out"], segments="sentences",
                        layer="all")  # fmt: skip
    assert "choose Layers: final layer" in layered["errors"]["leave_one_out"]


@pytest.mark.parametrize(
    "extra, status, pattern",
    [
        ({"segments": "words"}, 400, "is not 'sentences'; give 'sentences' or a list"),
        ({"segments": []}, 400, "no segments given: list the text's segments one per line"),
        ({"segments": ["", " "]}, 400, "no segments given"),
        ({"segments": [f"s{i}" for i in range(201)]}, 400, "at most 200"),
        ({"segments": 3}, 422, "segments"),
        ({"segment_reduce": "mean"}, 400, "segment_reduce goes with segments"),
        ({"segments": "sentences", "segment_reduce": "median"}, 422, "segment_reduce"),
    ],
)
def test_bad_segments_are_refused_at_once_in_one_line(client, extra, status, pattern):
    body = {"model": "tiny-classifier", "text": TEXT, "methods": ["normxlogit"], **extra}
    response = client.post("/api/explain", json=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert pattern in error and "\n" not in error and "Traceback" not in response.text


def test_a_segment_not_in_the_text_is_named_once_counting_from_one(client):
    job = explain_job(
        client, methods=["normxlogit", "leave_one_out"], segments=["The plot is thin.", "nope"]
    )
    assert job["state"] == "failed"
    assert job["error"].startswith("segment 2 ('nope') is not in the text")
    assert "\n" not in job["error"]


def test_a_generation_carries_each_steps_segment_scores(client, models):
    body = {"model": "tiny-decoder", "text": PROMPT, "methods": ["leave_one_out", "logat"],
            "generate": True, "max_new_tokens": 3, "segments": "sentences"}  # fmt: skip
    job = finished(client, client.post("/api/explain", json=body).json())
    assert job["state"] == "done", job["error"]
    whole, steps = job["result"]["explanations"]
    model = models["tiny-decoder"]
    # the segment method explains the whole answer; the token method each of its steps
    answer = model.explain(
        PROMPT, method="leave_one_out", segments="sentences", generate=True, max_new_tokens=3
    )
    assert whole["kind"] == "explanation" and whole["label"] == answer.label
    np.testing.assert_allclose(
        np.array(whole["segments"]["scores"])[0, :, 0], answer.segments.scores, rtol=1e-5
    )
    expected = model.explain(
        PROMPT,
        method="logat",
        segments="sentences",
        continuation=answer.settings["answer_ids"],
    )
    assert steps["kind"] == "generation"
    assert (
        steps["tokens"][steps["prompt_length"] :] == expected.token_texts[expected.prompt_length :]
    )
    segments = steps["segments"]
    assert segments["texts"] == ["The film opens slowly.", "Then it soars."]
    assert segments["token_segments"] == expected.segments.token_segments
    np.testing.assert_allclose(np.array(segments["steps"]), expected.segments.scores, rtol=1e-5)
    np.testing.assert_allclose(
        segments["aggregates"]["sum"], expected.segments.scores.sum(0), rtol=1e-5
    )
    # a step's mixed run is not evaluated as one: the curves would not compare
    response = client.post(
        "/api/evaluate", json={"run": job["result"]["run"], "metrics": ["soft_nc"]}
    )
    assert response.status_code == 400
    assert "explain them in separate runs" in response.json()["error"]


def test_step_aggregates_of_segment_scores_leave_unscored_steps_out():
    scores = np.array([[1.0, np.nan, -3.0], [2.0, np.nan, 1.0]])
    np.testing.assert_allclose(over_steps(scores, "sum"), [3.0, np.nan, -2.0])
    np.testing.assert_allclose(over_steps(scores, "mean"), [1.5, np.nan, -1.0])
    np.testing.assert_allclose(over_steps(scores, "absmax"), [2.0, np.nan, -3.0])


def test_segment_units_evaluate_as_the_library(client, models):
    result = explained(client, methods=["normxlogit", "leave_one_out"], segments="sentences")
    metrics = ["comp_cd", "pi_soft_nc"]
    body = {"run": result["run"], "metrics": metrics, "unit": "segment"}
    job = finished(client, client.post("/api/evaluate", json=body).json())
    assert job["state"] == "done", job["error"]
    page = job["result"]
    assert page["unit"] == "segment"
    model = models["tiny-classifier"]
    made = {
        m: [model.explain(TEXT, method=m, segments="sentences")]
        for m in ("normxlogit", "leave_one_out")
    }
    expected = normxlogit.evaluate(
        model, made, metrics=metrics, protocol=Protocol(unit="segment")
    ).summary()
    for row in page["rows"]:
        for metric in metrics:
            assert row["values"][metric] == pytest.approx(
                float(expected.frame.loc[row["method"], metric]), rel=1e-5
            )
    tokens = explained(client, methods=["normxlogit"])
    refused = client.post(
        "/api/evaluate", json={"run": tokens["run"], "metrics": ["comp_cd"], "unit": "segment"}
    )
    assert refused.status_code == 400
    assert refused.json()["error"] == (
        "segment units need segments, and normxlogit has none: explain again with Segments: "
        "sentences or one per line"
    )
    drop = client.post("/api/evaluate", json={"run": tokens["run"], "metrics": ["segment_drop"]})
    assert drop.status_code == 400
    assert drop.json()["error"].startswith("segment_drop removes segments, and normxlogit has none")
    wrong = client.post(
        "/api/evaluate", json={"run": tokens["run"], "metrics": ["comp_cd"], "unit": "word"}
    )
    assert wrong.status_code == 422 and "unit" in wrong.json()["error"]


def test_an_evaluation_job_carries_the_metrics_warnings(client):
    """segment_lds on a one-sentence text has no value: the job says why (the warning
    went only to the server's log)."""
    result = explained(
        client, methods=["normxlogit"], text="Only one sentence here.", segments="sentences"
    )
    response = client.post("/api/evaluate", json={"run": result["run"], "metrics": ["segment_lds"]})
    job = finished(client, response.json())
    assert job["state"] == "done", job["error"]
    assert any("fewer than 2 segments" in note for note in job["warnings"])


def test_a_pairs_segments_in_its_second_text_are_placed_there(client):
    """Round eight: the page checked the raw strings (found in both texts of the pair)
    before placing them in the second text, and asked for spans it cannot take."""
    result = explained(
        client,
        methods=["leave_one_out"],
        text="The plot is thin.",
        text_pair="The plot is thin. The acting is wonderful!",
        segments=["The plot is thin.", "The acting is wonderful!"],
    )
    (made,) = result["explanations"]
    assert made["segments"]["texts"] == ["The plot is thin.", "The acting is wonderful!"]
    separator = made["tokens"].index("[SEP]")  # the question's tokens are in no segment
    assert set(made["segments"]["token_segments"][:separator]) == {None}


def test_a_warnings_protocol_fix_is_named_as_the_command_lines(client):
    """Round twenty-one: the page's warnings advised "larger Protocol(ratios=...)", a
    setting the page does not offer."""
    result = explained(client, methods=["normxlogit"], text="Good film.")
    response = client.post("/api/evaluate", json={"run": result["run"], "metrics": ["comp_cd"]})
    job = finished(client, response.json())
    assert job["state"] == "done", job["error"]
    ratios = [note for note in job["warnings"] if "int(n·k) = 0" in note]
    assert ratios and all("Protocol(" not in note for note in job["warnings"])
    assert "run normxlogit evaluate with --protocol ratios=..." in ratios[0]


def test_sanity_metrics_on_a_generation_are_refused_before_the_job(client):
    """Round twenty-two: they were offered for a decoder's generation and failed the whole
    evaluation ("a generation's steps are not supported")."""
    body = {"model": "tiny-decoder", "text": PROMPT, "methods": ["gradient_x_input"],
            "generate": True, "max_new_tokens": 2}  # fmt: skip
    job = finished(client, client.post("/api/explain", json=body).json())
    assert job["state"] == "done", job["error"]
    metrics = ["comp_cd", "sanity_spearman"]
    refused = client.post("/api/evaluate", json={"run": job["result"]["run"], "metrics": metrics})
    assert refused.status_code == 400
    said = refused.json()["error"]
    assert said.startswith("sanity_spearman explains each text again")
    assert "leave them out of this run's metrics" in said
