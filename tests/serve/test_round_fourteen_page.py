"""Round fourteen of new-user probes (P16), the page's part: a misspelt field of a
request body was dropped, and its setting with it."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from normxlogit.serve import build_app  # noqa: E402

from ..conftest import sharp_model  # noqa: E402

TEXT = "The plot is thin. The acting is wonderful!"


@pytest.fixture(scope="module")
def client():
    app = build_app([], loaded={"tiny": sharp_model()}, builtins=False)
    with TestClient(app) as test_client:
        yield test_client


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
