"""Round thirteen of new-user probes (issue 41), the page's part: each test is one
unclear answer that round found."""

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
