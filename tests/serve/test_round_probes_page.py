"""Rounds thirteen and fourteen of new-user probes (issue 41), the page's part: each test
is one unclear or quietly wrong answer those rounds found."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from normxlogit.serve import build_app  # noqa: E402

from ..conftest import sharp_model  # noqa: E402
from .test_serve_api import finished  # noqa: E402

TEXT = "The plot is thin. The acting is wonderful!"


@pytest.fixture(scope="module")
def client():
    app = build_app([], loaded={"tiny": sharp_model()}, builtins=False)
    with TestClient(app) as test_client:
        yield test_client


@pytest.mark.parametrize(
    "segments, expected",
    [
        (["a" * 4001], "segments.0: String should have at most 4000 characters"),
        ([1, 2], "segments: should be a string or a list of strings"),
        ({"a": 1}, "segments: should be a string or a list of strings"),
    ],
)
def test_a_bad_segments_field_is_answered_for_the_type_sent(client, segments, expected):
    """Q03: every branch of the union came back ("segments.str: Input should be a valid
    string; segments.list[constrained-str].0: ...")."""
    body = {"model": "tiny", "text": TEXT, "methods": ["random"], "segments": segments}
    response = client.post("/api/explain", json=body)
    assert response.status_code == 422 and response.json()["error"] == expected


@pytest.mark.parametrize("ratio", ["nan", "inf", "-inf"])
def test_a_ratio_that_is_no_number_is_refused_as_such(client, ratio):
    """Q05: ratio=nan was "should be less than or equal to 1", which is not why."""
    job = client.post("/api/explain", json={"model": "tiny", "text": TEXT, "methods": ["random"]})
    run = finished(client, job.json())["result"]["run"]
    params = {"method": "random", "metric": "comp_cd", "ratio": ratio}
    response = client.get(f"/api/runs/{run}/perturbed", params=params)
    assert response.status_code == 422 and "finite number" in response.json()["error"]


def test_an_unknown_explain_field_is_refused_naming_it(client):
    """P16: "targets", "layers" and "segment" were dropped and the prediction explained."""
    body = {"model": "tiny", "text": TEXT, "methods": ["random"], "targets": "pos", "layers": "all"}
    response = client.post("/api/explain", json=body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error.startswith("the request body has no fields targets, layers (its fields: model,")
    assert "target, " in error and "segment_reduce)" in error


def test_an_unknown_evaluate_field_is_refused_naming_it(client):
    response = client.post("/api/evaluate", json={"run": "x", "metrics": ["comp_cd"], "units": 1})
    assert response.status_code == 422
    assert response.json()["error"] == (
        "the request body has no field units (its fields: run, metrics, unit)"
    )
