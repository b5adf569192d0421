"""``normxlogit serve``'s JSON API, through FastAPI's test client: what the page shows
equals what the library computes, jobs report progress and cancel, and bad requests get
one readable message."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

import normxlogit  # noqa: E402
from normxlogit.bench import ResultStore, load_config, run_bench  # noqa: E402
from normxlogit.bench.results import experiment_results  # noqa: E402
from normxlogit.evaluation.hard import perturbed_tokens  # noqa: E402
from normxlogit.serve import build_app  # noqa: E402
from normxlogit.serve.jobs import JobRunner  # noqa: E402

from ..bench.helpers import _save_tiny, write_config  # noqa: E402
from ..cli_inprocess import Ran  # noqa: E402
from ..cli_inprocess import run_cli as run_in_process  # noqa: E402
from ..conftest import explainable  # noqa: E402

TEXT = "a gripping and beautifully acted film"
PROMPT = "the film was a"


#: the tiny site's one report table: comprehensiveness, with standard errors
SITE_TABLE = [
    "[[tables]]",
    'title = "Comprehensiveness"',
    'metric = "comp_cd"',
    'name = "comp"',
    "standard_error = true",
]


def tiny_site(root: Path) -> tuple[Path, Path]:
    """A saved tiny sentiment classifier and a bench config whose store holds 4 texts."""
    model = _save_tiny(root / "tiny-sentiment", seed=0)
    config = write_config(
        root, model, "\n".join(SITE_TABLE), limit=4, methods='["normxlogit", "random"]'
    )
    with ResultStore(root / "grid.sqlite") as store:
        run_bench(load_config(config), store)
    return model, config


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """The tiny site's model and bench config, and an example file."""
    root = tmp_path_factory.mktemp("serve")
    model, config = tiny_site(root)
    examples = root / "examples.tsv"
    examples.write_text("text\tlabel\na fine film\t1\na dull film\t0\n")
    return {"model": model, "config": config, "examples": examples}


@pytest.fixture(scope="module")
def client(folders):
    app = build_app(
        [folders["model"]],
        loaded={
            "tiny-decoder": explainable("llama", "causal_lm"),
            "tiny-regressor": explainable("bert", "regression"),
        },
        bench=[folders["config"]],
        data=[folders["examples"]],
        builtins=False,
    )
    with TestClient(app) as test_client:
        yield test_client


def finished(client, job: dict, timeout: float = 120) -> dict:
    """Poll a job until it ends."""
    deadline = time.time() + timeout
    while job["state"] in ("queued", "running"):
        assert time.time() < deadline, f"job {job['id']} did not finish"
        time.sleep(0.05)
        job = client.get(f"/api/jobs/{job['id']}").json()
    return job


def explained(client, **body) -> dict:
    response = client.post("/api/explain", json={"model": "tiny-sentiment", "text": TEXT, **body})
    assert response.status_code == 200, response.text
    job = finished(client, response.json())
    assert job["state"] == "done", job["error"]
    return job["result"]


def test_info_lists_what_the_page_may_use(client):
    info = client.get("/api/info").json()
    names = [m["name"] for m in info["models"]]
    assert names == ["tiny-sentiment", "tiny-decoder", "tiny-regressor"]
    methods = {m["name"]: m for m in info["methods"]}
    assert set(methods) == set(normxlogit.list_methods())
    assert methods["normxlogit"]["per_label"] and methods["normxlogit"]["layers"]
    metrics = {m["name"]: m for m in info["metrics"]}
    assert "comp_cd" in metrics and metrics["comp_cd"]["hard"] and not metrics["soft_nc"]["hard"]
    assert "comp_acc" not in metrics and "evidence_ap" not in metrics  # need gold labels
    assert info["datasets"][0] == {"name": "examples.tsv", "kind": "file", "task": ""}
    assert info["bench"][0]["config"] == "grid.toml"


def test_loading_a_model_is_a_job_that_describes_it(client):
    job = finished(client, client.post("/api/models/tiny-sentiment/load").json())
    assert job["state"] == "done"
    assert job["result"] == {
        "name": "tiny-sentiment",
        "task": "classification",
        "labels": ["negative", "positive"],
        "layers": 2,
        "generates": False,
        "mask_token": None,
        "unavailable": {},
    }
    decoder = finished(client, client.post("/api/models/tiny-decoder/load").json())
    assert decoder["result"]["generates"] is True


def test_a_regressor_names_the_metrics_it_cannot_be_scored_by(client):
    """The page's curves need class probabilities or a distribution: a regressor gets
    none of them, each with the reason, and an evaluation asking for one is refused."""
    info = finished(client, client.post("/api/models/tiny-regressor/load").json())["result"]
    assert info["task"] == "regression"
    offered = {m["name"] for m in client.get("/api/info").json()["metrics"]}
    unavailable = info["unavailable"]
    # re-explaining needs no probabilities; removing segments reads the output itself
    sanity = {"sanity_spearman", "sanity_top_k", "segment_drop", "segment_lds"}
    assert offered - sanity <= set(unavailable) and not sanity & set(unavailable)
    assert "class probabilities" in unavailable["comp_cd"]
    assert "distributions" in unavailable["pi_soft_nc"]
    assert "flips" in unavailable["deletion"]
    assert "comp_acc" not in unavailable  # Pearson with gold values: the regressor's metric
    result = explained(client, model="tiny-regressor", methods=["normxlogit"])
    job = finished(
        client,
        client.post("/api/evaluate", json={"run": result["run"], "metrics": ["comp_cd"]}).json(),
    )
    assert job["state"] == "failed" and job["error"] == unavailable["comp_cd"]


def test_two_methods_side_by_side_equal_the_library(client, folders):
    result = explained(client, methods=["normxlogit", "gradient_x_input"], target="all")
    model = normxlogit.load(folders["model"])
    assert [e["method"] for e in result["explanations"]] == ["normxlogit", "gradient_x_input"]
    for payload in result["explanations"]:
        expected = model.explain(TEXT, method=payload["method"], target="all")
        assert payload["targets"] == ["negative", "positive"]
        assert payload["tokens"] == expected.token_texts
        np.testing.assert_allclose(np.array(payload["scores"])[0], expected.scores, rtol=1e-5)
        assert payload["seconds"] >= 0
    probs = dict(result["prediction"]["probs"])
    expected = model.explain(TEXT)
    assert result["prediction"]["label"] == expected.label
    assert probs == pytest.approx(expected.probs)


def test_every_layer_and_one_label(client, folders):
    result = explained(client, methods=["logat"], target="positive", layer="all")
    payload = result["explanations"][0]
    expected = normxlogit.load(folders["model"]).explain(
        TEXT, method="logat", target="positive", layer="all"
    )
    assert payload["layers"] == [0, 1, 2]
    np.testing.assert_allclose(np.array(payload["scores"])[..., 0], expected.scores, rtol=1e-5)


def test_a_method_that_does_not_apply_is_named_beside_the_others(client):
    result = explained(client, methods=["grad_ellm", "l2_norm"])
    assert [e["method"] for e in result["explanations"]] == ["l2_norm"]
    assert "decoder" in result["errors"]["grad_ellm"]


def test_no_method_that_applies_fails_the_job_with_the_reasons(client):
    body = {"model": "tiny-sentiment", "text": TEXT, "methods": ["grad_ellm"]}
    job = finished(client, client.post("/api/explain", json=body).json())
    assert job["state"] == "failed"
    assert job["error"].startswith("no method could explain this input: grad_ellm:")


def test_curves_and_summary_equal_the_library(client, folders):
    result = explained(client, methods=["normxlogit", "random"])
    metrics = ["comp_cd", "suff_cd", "soft_ns"]
    job = client.post("/api/evaluate", json={"run": result["run"], "metrics": metrics})
    evaluation = finished(client, job.json())
    assert evaluation["state"] == "done", evaluation["error"]
    page = evaluation["result"]
    model = normxlogit.load(folders["model"])
    explanations = {m: [model.explain(TEXT, method=m)] for m in ("normxlogit", "random")}
    expected = normxlogit.evaluate(model, explanations, metrics=metrics)
    summary = expected.summary().frame
    assert [m["name"] for m in page["metrics"]] == metrics
    assert [m["higher_is_better"] for m in page["metrics"]] == [True, False, True]
    for row in page["rows"]:
        for metric, value in row["values"].items():
            assert value == pytest.approx(summary.loc[row["method"], metric], rel=1e-6)
    curves = expected.curves()
    comp = curves[(curves["metric"] == "comp_cd") & (curves["method"] == "normxlogit")]
    assert page["curves"]["comp_cd"]["x"] == pytest.approx(comp["x"].tolist())
    assert page["curves"]["comp_cd"]["methods"]["normxlogit"] == pytest.approx(
        comp["value"].tolist()
    )
    assert page["curves"]["comp_cd"]["axis"] == "ratio"


def test_perturbed_tokens_are_the_top_ranked_ones(client, folders):
    result = explained(client, methods=["normxlogit"])
    run = result["run"]
    model = normxlogit.load(folders["model"])
    explanation = model.explain(TEXT)
    scores = explanation.scores
    n = len(explanation.tokens)
    for ratio in (0.2, 0.5):
        answer = client.get(
            f"/api/runs/{run}/perturbed",
            params={"method": "normxlogit", "metric": "comp_cd", "ratio": ratio},
        ).json()
        mask = answer["perturbed"]
        assert mask == perturbed_tokens(model, explanation, "comp_cd", ratio)
        # comprehensiveness removes the int(n * ratio) best tokens, never [CLS]
        eligible = [i for i in range(1, n)]
        top = sorted(eligible, key=lambda i: -scores[i])[: int(n * ratio)]
        assert [i for i, m in enumerate(mask) if m] == sorted(top)
        kept = client.get(
            f"/api/runs/{run}/perturbed",
            params={"method": "normxlogit", "metric": "suff_cd", "ratio": ratio},
        ).json()["perturbed"]
        assert [i for i, m in enumerate(kept) if m] == [i for i in eligible if i not in top]
    soft = client.get(
        f"/api/runs/{run}/perturbed",
        params={"method": "normxlogit", "metric": "soft_nc", "ratio": 0.2},
    )
    assert soft.status_code == 400 and "whole tokens" in soft.json()["error"]


def test_a_generation_gives_the_step_by_token_matrix(client):
    body = {"model": "tiny-decoder", "text": PROMPT, "methods": ["logat", "gradient_norm"],
            "generate": True, "max_new_tokens": 4}  # fmt: skip
    job = finished(client, client.post("/api/explain", json=body).json())
    assert job["state"] == "done", job["error"]
    payload, other = job["result"]["explanations"]
    assert other["tokens"] == payload["tokens"]  # the second method explains the same tokens
    expected = explainable("llama", "causal_lm").explain(
        PROMPT, generate=True, max_new_tokens=4, method="logat"
    )
    assert payload["kind"] == "generation"
    assert payload["prompt_length"] == expected.prompt_length
    scores = payload["scores"]
    assert len(scores) == expected.steps
    for step, row in enumerate(scores):
        seen = expected.prompt_length + step
        assert all(v is None for v in row[seen:])  # a step never scores what follows it
        np.testing.assert_allclose(row[:seen], expected.scores[step, :seen], rtol=1e-5)
    assert set(payload["aggregates"]) == {"sum", "mean", "max", "absmax", "normalized"}
    assert job["result"]["prediction"]["generated"] == expected.generated_text
    evaluation = client.post(
        "/api/evaluate", json={"run": job["result"]["run"], "metrics": ["soft_nc"]}
    )
    done = finished(client, evaluation.json())
    assert done["state"] == "done", done["error"]
    assert set(done["result"]["curves"]["soft_nc"]["methods"]) == {"logat", "gradient_norm"}


def test_a_contrast_explains_why_rather_than_and_skips_methods_without_one(client, folders):
    result = explained(
        client, methods=["normxlogit", "attention"], target="positive", contrast="negative"
    )
    (payload,) = result["explanations"]
    assert payload["targets"] == ["positive vs negative"]
    expected = normxlogit.load(folders["model"]).explain(
        TEXT, method="normxlogit", target="positive", contrast="negative"
    )
    np.testing.assert_allclose(np.array(payload["scores"])[0, :, 0], expected.scores, rtol=1e-5)
    assert "nothing to contrast" in result["errors"]["attention"]
    against = explained(client, methods=["normxlogit"], contrast_input="a dull film")
    settings = against["explanations"][0]["settings"]
    assert settings["contrast_input"] == "a dull film"


def test_no_perturbed_tokens_are_shown_for_a_run_against_a_contrast_input(client):
    """The page showed which tokens comp_cd perturbs for a run whose comp_cd evaluation it
    refuses (the scores explain f(x) - f(x'), a perturbation of x reads f(x))."""
    against = explained(client, methods=["normxlogit"], contrast_input="a dull film")
    answer = client.get(
        f"/api/runs/{against['run']}/perturbed",
        params={"method": "normxlogit", "metric": "comp_cd", "ratio": 0.2},
    )
    assert answer.status_code == 400
    said = answer.json()["error"]
    assert "made against a contrast input" in said
    assert "explain without a contrast input (against the input)" in said
    assert "contrast_input=" not in said


def test_a_generation_shows_its_step_scores_and_contrasts(client):
    body = {"model": "tiny-decoder", "text": PROMPT, "methods": ["logat"],
            "continuation": "a b", "contrast": "c d"}  # fmt: skip
    job = finished(client, client.post("/api/explain", json=body).json())
    assert job["state"] == "done", job["error"]
    (payload,) = job["result"]["explanations"]
    assert {"probability", "entropy", "contrast_prob_diff"} <= set(payload["step_scores"])
    assert len(payload["contrasts"]) == len(payload["scores"])


def test_the_sanity_metrics_run_on_the_page(client):
    result = explained(client, methods=["normxlogit", "random"])
    body = {"run": result["run"], "metrics": ["sanity_spearman"]}
    job = finished(client, client.post("/api/evaluate", json=body).json())
    assert job["state"] == "done", job["error"]
    curve = job["result"]["curves"]["sanity_spearman"]
    assert set(curve["methods"]) == {"normxlogit", "random"}
    info = {m["name"]: m for m in client.get("/api/info").json()["metrics"]}
    assert not info["sanity_spearman"]["higher_is_better"]


def test_jobs_report_progress_and_cancel():
    runner = JobRunner()
    started = threading.Event()

    def work(job):
        started.set()
        for step in range(1000):
            job.report(step / 1000, f"step {step}")
            time.sleep(0.01)
        return "never"

    job = runner.submit("slow", work)
    assert started.wait(5)
    time.sleep(0.05)
    assert job.state == "running" and 0 < job.progress < 1 and job.message.startswith("step")
    job.cancel()
    deadline = time.time() + 5
    while job.state == "running" and time.time() < deadline:
        time.sleep(0.01)
    assert job.state == "cancelled" and job.result is None
    runner.shutdown()


def test_the_cancel_endpoint_stops_a_running_job(client):
    jobs = client.app.state.jobs
    running = threading.Event()

    def work(job):
        running.set()
        while True:
            job.report()
            time.sleep(0.01)

    job = jobs.submit("slow", work)
    assert running.wait(5)
    assert client.post(f"/api/jobs/{job.id}/cancel").status_code == 200
    state = finished(client, client.get(f"/api/jobs/{job.id}").json(), timeout=5)
    assert state["state"] == "cancelled"


def test_a_long_method_shows_it_is_alive_and_cancels_between_forward_passes(client, slow_method):
    body = {"model": "tiny-sentiment", "text": TEXT, "methods": ["l2_norm", "slow_probe"]}
    job = client.post("/api/explain", json=body).json()
    deadline = time.time() + 60
    while "slow_probe (2/2) · forward pass 5" not in job["message"]:
        assert job["state"] in ("queued", "running") and time.time() < deadline, job
        time.sleep(0.01)
        job = client.get(f"/api/jobs/{job['id']}").json()
    assert 0.5 <= job["progress"] < 1  # the first of two methods is done
    client.post(f"/api/jobs/{job['id']}/cancel")
    stopped = finished(client, client.get(f"/api/jobs/{job['id']}").json(), timeout=10)
    assert stopped["state"] == "cancelled" and stopped["result"] is None
    assert len(slow_method) < 100  # stopped long before its 500 passes
    # the model is left as it was: the next job runs normally
    assert explained(client, methods=["l2_norm"])["explanations"][0]["method"] == "l2_norm"


def test_an_internal_fault_is_one_line_not_a_trace(client):
    def work(job):
        raise ZeroDivisionError("boom")

    job = client.app.state.jobs.submit("broken", work)
    state = finished(client, client.get(f"/api/jobs/{job.id}").json(), timeout=5)
    assert state["state"] == "failed"
    assert state["error"] == "internal error (ZeroDivisionError): boom"


@pytest.mark.parametrize(
    "body, status, pattern",
    [
        ({"model": "nope", "text": "x", "methods": ["normxlogit"]}, 400, "no model 'nope'"),
        ({"model": "../../etc", "text": "x", "methods": ["normxlogit"]}, 400, "no model"),
        ({"model": "tiny-sentiment", "text": "", "methods": ["normxlogit"]}, 422, "text:"),
        ({"model": "tiny-sentiment", "text": "x", "methods": []}, 422, "methods:"),
        ({"model": "tiny-sentiment", "text": "x", "methods": ["nope"]}, 400, "unknown method"),
        ({"model": "tiny-sentiment", "text": "x" * 5000, "methods": ["l2_norm"]}, 422, "text:"),
        ({"model": "tiny-sentiment", "text": "x", "methods": ["l2_norm"], "layer": "7"}, 422,
         "layer:"),
        ({"model": "tiny-sentiment", "text": "x", "methods": ["l2_norm"], "max_new_tokens": 999},
         422, "max_new_tokens:"),
    ],
)  # fmt: skip
def test_bad_requests_get_one_readable_message(client, body, status, pattern):
    response = client.post("/api/explain", json=body)
    assert response.status_code == status
    assert pattern in response.json()["error"]
    assert "Traceback" not in response.text


def test_request_size_is_bounded(client):
    response = client.post(
        "/api/explain",
        content=b"{" + b" " * 70_000 + b"}",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 413
    assert "at most 64 KiB" in response.json()["error"]


def test_a_chunked_body_is_bounded_as_it_is_read(client):
    """No Content-Length (chunked transfer): the limit still holds, counted while read."""

    def chunks():
        yield b'{"model": "tiny-sentiment", "text": "'
        for _ in range(80):
            yield b"x" * 1024
        yield b'", "methods": ["l2_norm"]}'

    response = client.post(
        "/api/explain", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert "at most 64 KiB" in response.json()["error"]


@pytest.mark.parametrize(
    "content, pattern",
    [
        (b'{"model": "tiny-sentiment",', "the request body is not valid JSON"),
        (b'{"model": "\xff\xfe"}', "not JSON in UTF-8"),
        (b"\xff\xfe\x00", "not JSON in UTF-8"),
    ],
)
def test_a_broken_body_is_one_error_in_the_pages_shape(client, content, pattern):
    response = client.post(
        "/api/explain", content=content, headers={"content-type": "application/json"}
    )
    assert response.status_code in (400, 422)
    assert set(response.json()) == {"error"}
    assert pattern in response.json()["error"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/bench/0/explanation?experiment=x&method=y&instance=99999999999999999999",
        "/api/bench/0/explanation?experiment=x&method=y&instance=-1",
        "/api/bench/99999999999999999999/tables",
        "/api/bench/99999999999999999999/experiment?name=x",
        "/api/datasets/x/examples?limit=99999999999999999999",
    ],
)
def test_every_number_in_a_request_is_bounded(client, path):
    response = client.get(path)
    assert response.status_code == 422, response.text
    assert set(response.json()) == {"error"}


def test_bad_labels_and_runs_are_refused_in_the_job_or_at_once(client):
    job = finished(
        client,
        client.post(
            "/api/explain",
            json={
                "model": "tiny-sentiment",
                "text": TEXT,
                "methods": ["l2_norm"],
                "target": "maybe",
            },
        ).json(),
    )
    assert job["state"] in ("done", "failed")
    if job["state"] == "done":  # the method reported why it could not use the label
        assert "maybe" in job["result"]["errors"]["l2_norm"]
    gone = client.post("/api/evaluate", json={"run": "r999", "metrics": ["comp_cd"]})
    assert gone.status_code == 400 and "explain again" in gone.json()["error"]
    run = explained(client, methods=["l2_norm"])["run"]
    labels = client.post("/api/evaluate", json={"run": run, "metrics": ["comp_acc"]})
    assert labels.status_code == 400 and "not offered here" in labels.json()["error"]
    assert client.get("/api/jobs/nope").status_code == 400


def test_examples_come_from_named_data_only(client):
    data = client.get("/api/datasets/examples.tsv/examples").json()
    assert data["examples"] == [
        {"text": "a fine film", "label": "1", "foil": None, "segments": None},  # names
        {"text": "a dull film", "label": "0", "foil": None, "segments": None},
    ]
    for name in ("..%2F..%2Fetc%2Fpasswd", "nope"):
        response = client.get(f"/api/datasets/{name}/examples")
        assert response.status_code in (400, 404)
        assert "passwd" not in response.text or "no data set" in response.text


def test_bench_results_equal_the_store(client, folders):
    info = client.get("/api/info").json()
    experiment = info["bench"][0]["experiments"][0]
    page = client.get("/api/bench/0/experiment", params={"name": experiment}).json()
    config = load_config(folders["config"])
    with ResultStore(folders["config"].with_name("grid.sqlite"), create=False) as store:
        results = experiment_results(config, store)[0]
        summary = results.common().summary()
        assert page["instances"] == 4 and page["of"] == 4
        for row in page["rows"]:
            for metric, value in row["values"].items():
                assert value == pytest.approx(summary.loc[row["method"], metric])
        assert set(page["curves"]) == {"comp_cd", "suff_acc", "pi_soft_nc"}
        assert page["metrics"][0]["name"] == "comp_cd"
    instances = client.get(
        "/api/bench/0/instances",
        params={"experiment": experiment, "method": "normxlogit", "metric": "comp_cd"},
    ).json()
    assert [i["instance"] for i in instances["instances"]] == [0, 1, 2, 3]
    one = results.frame[
        (results.frame["method"] == "normxlogit") & (results.frame["metric"] == "comp_cd")
    ]
    first = one[one["instance"] == 0]["value"].mean()  # the AOPC is the mean over ratios
    assert instances["instances"][0]["value"] == pytest.approx(first)
    drill = client.get(
        "/api/bench/0/explanation",
        params={"experiment": experiment, "method": "normxlogit", "instance": 2},
    ).json()
    from normxlogit.bench.store import CellKey

    with ResultStore(folders["config"].with_name("grid.sqlite"), create=False) as store:
        method_key = results.experiment.methods[0].key
        cell = CellKey(results.experiment.model, results.experiment.dataset.key, method_key, 0)
        stored = store.explanations(cell, [2])[2]
    expected = normxlogit.Explanation.from_dict(stored).scores_3d()
    np.testing.assert_allclose(np.array(drill["explanation"]["scores"]), expected, rtol=1e-6)
    assert drill["text"] == stored["text"]
    missing = client.get(
        "/api/bench/0/explanation",
        params={"experiment": experiment, "method": "nope", "instance": 2},
    )
    assert missing.status_code == 400 and "has no method" in missing.json()["error"]
    assert client.get("/api/bench/5/experiment", params={"name": "x"}).status_code == 400
    unknown = client.get("/api/bench/0/experiment", params={"name": "x"})
    assert unknown.status_code == 400 and "no experiment 'x'" in unknown.json()["error"]


def test_bench_report_tables_and_figures(client, folders):
    config = load_config(folders["config"])
    with ResultStore(folders["config"].with_name("grid.sqlite"), create=False) as store:
        common = experiment_results(config, store)[0].common()
    summary, errors = common.summary(), common.standard_errors()
    report = client.get("/api/bench/0/tables").json()
    by_metric = {}
    for table in report["tables"]:
        for index, column in enumerate(table["columns"]):
            for row in table["rows"]:
                by_metric[(row["label"], column["metric"])] = row["cells"][index]
    assert by_metric[("normxlogit", "comp_cd")]["value"] == pytest.approx(
        summary.loc["normxlogit", "comp_cd"]
    )
    ranked = [by_metric[(m, "comp_cd")]["rank"] for m in ("normxlogit", "random")]
    shown = {round(float(summary.loc[m, "comp_cd"]), 3) for m in ("normxlogit", "random")}
    # values compared as the page prints them (three decimals): alike there, none is best
    assert sorted(ranked) == [1, 2] if len(shown) == 2 else ranked == [None, None]
    assert by_metric[("normxlogit", "comp_cd")]["standard_error"] == pytest.approx(
        errors.loc["normxlogit", "comp_cd"]
    )
    names = [plot["name"] for plot in report["plots"]]
    assert "curve-comp_cd" in names
    figure = client.get("/api/bench/0/plots/curve-comp_cd.png")
    assert figure.status_code == 200 and figure.headers["content-type"] == "image/png"
    assert figure.content.startswith(b"\x89PNG")
    missing = client.get("/api/bench/0/plots/nope.png")
    assert missing.status_code == 400 and "no figure 'nope'" in missing.json()["error"]


def test_the_page_and_its_plotting_library_are_served_offline(client):
    page = client.get("/")
    assert page.status_code == 200 and "normxlogit" in page.text
    assert "http://" not in page.text and "https://" not in page.text  # no CDN
    script = client.get("/static/vendor/uPlot.iife.min.js")
    assert script.status_code == 200 and "uPlot" in script.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/../serve/app.py").status_code == 404


def test_payload_numbers_are_json_safe():
    from normxlogit.serve.payloads import plain

    assert plain(np.array([1.0, math.nan, math.inf])) == [1.0, None, None]
    json.dumps(plain([[math.nan]]), allow_nan=False)


def run_cli(*args: str) -> Ran:
    """``python -m normxlogit serve ARGS``, to be refused, run in this process (see
    :mod:`tests.cli_inprocess`: starting a server there fails the run)."""
    return run_in_process("serve", *args, prog_name="python -m normxlogit")


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["--port", "0"], "--port must be between 1 and 65535"),
        (["--model", "/no/such/folder"], "model folder /no/such/folder does not exist"),
        (["--bench", "/no/such.toml"], "bench config /no/such.toml does not exist"),
        (["--data", "/no/such.tsv"], "data file /no/such.tsv does not exist"),
    ],
)
def test_cli_mistakes_are_one_line_and_exit_2(args, pattern):
    done = run_cli(*args)
    assert done.returncode == 2, done.stderr
    assert pattern in done.stderr and "Traceback" not in done.stderr


def test_cli_serves_the_page(tmp_path, folders):
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "normxlogit", "serve", "--port", str(port), "--model",
         str(folders["model"])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/info", timeout=2) as r:
                    info = json.loads(r.read())
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()
                assert time.time() < deadline, "the page did not start"
                time.sleep(0.3)
        names = [m["name"] for m in info["models"]]
        assert names[0] == normxlogit.DEFAULT_MODEL and names[-1] == "tiny-sentiment"
    finally:
        server.terminate()
        server.wait(10)
    assert Path(folders["model"]).exists()
