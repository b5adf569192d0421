"""Round eighteen of new-user probes (issue 41), probe b: the nested ``segments`` of saved
explanations (true/false or string scores, no segments: P01, P02), scores as strings or
past float32 (noted 3, 4), sanity's top_k on short texts (P03), loaders given a folder, a
device or an empty file (P04), and registered methods and metrics that give NaN or fail
(P05, noted 5), in Python and on the page. Tiny models; the registries are restored after
each test that registers."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.common.errors import InvalidFileError, InvalidInputError, NormXLogitWarning
from normxlogit.evaluation import EvaluationResult, Metric, MetricInfo, register_metric
from normxlogit.explanations.explanation import Explanation
from normxlogit.methods import AttributionMethod, register_method
from normxlogit.sanity import parameter_randomization

from .conftest import explainable, sharp_model

TEXT = "The film was good. The acting was bad."
SHORT = ["Good fun here.", "A dull film."]


@pytest.fixture(scope="module")
def model():
    return sharp_model()


@pytest.fixture(scope="module")
def saved(model, tmp_path_factory):
    """A text explanation with sentence segments, saved: its path and dict."""
    path = tmp_path_factory.mktemp("saved") / "e.json"
    model.explain(TEXT, segments="sentences").save(path)
    return path, json.loads(path.read_text())


def _edited(data: dict, folder, **changes) -> str:
    path = folder / "edited.json"
    path.write_text(json.dumps({**data, **changes}))
    return str(path)


def _nan_probe(name: str = "nan_probe"):
    """A registered method (a user's own) whose scores are all NaN."""

    @dataclass
    class NanProbe(AttributionMethod):
        description: ClassVar[str] = "NaN everywhere"

        def attribute(self, model, forward, targets, layers):
            texts, tokens = forward.batch.input_ids.shape
            shape = (texts, len(layers.indices), tokens, targets.columns.shape[1])
            return torch.full(shape, float("nan"))

    NanProbe.name = name
    return register_method(NanProbe, replace=True)


def _failing_probe():
    """A registered method whose own code raises."""

    @dataclass
    class Failing(AttributionMethod):
        name: ClassVar[str] = "failing_probe"
        description: ClassVar[str] = "raises"

        def attribute(self, model, forward, targets, layers):
            raise ValueError("boom")

    return register_method(Failing, replace=True)


# ----------------------------------------------------------------------------- P01, P02
@pytest.mark.parametrize(
    ("scores", "said"),
    [
        ([True, False], "'segments.scores' holds true/false; scores are numbers"),
        (["0.5", "0.2"], "'segments.scores' holds the string '0.5'; scores are numbers"),
    ],
)
def test_segment_scores_of_true_false_or_strings_are_refused(saved, tmp_path, scores, said):
    """P01: they loaded as 1.0/0.0 (and "0.5" as 0.5); the token scores refuse both."""
    _, data = saved
    path = _edited(data, tmp_path, segments={**data["segments"], "scores": scores})
    with pytest.raises(InvalidFileError, match=said):
        Explanation.load(path)


def test_a_generations_segment_scores_of_true_false_are_refused(tmp_path):
    """P01: a generation saved with segments read true/false as scores too."""
    decoder = explainable("llama", "causal_lm")
    made = decoder.explain(
        "Hello there", generate=True, max_new_tokens=2, segments=["Hello", " there"]
    )
    data = made.to_dict()
    steps = data["segments"]["scores"]
    data["segments"]["scores"] = [[True, False] for _ in steps]
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match="'segments.scores' holds true/false"):
        normxlogit.load_explanations(path)


def test_a_file_whose_segments_list_no_segment_is_refused(saved, tmp_path):
    """P02: it loaded, and segments_frame() then raised pandas' KeyError."""
    _, data = saved
    empty = {"texts": [], "token_segments": [None] * len(data["tokens"]), "scores": []}
    with pytest.raises(InvalidFileError, match="'segments' lists no segments"):
        Explanation.load(_edited(data, tmp_path, segments=empty))


# ----------------------------------------------------------------------- noted 3 and 4
def test_token_scores_as_strings_are_refused(saved, tmp_path):
    """Noted 3: ["0.13", ...] loaded as numbers."""
    _, data = saved
    path = _edited(data, tmp_path, scores=[str(v) for v in data["scores"]])
    with pytest.raises(InvalidFileError, match="'scores' holds the string '.*'; scores are"):
        Explanation.load(path)


def test_scores_past_float32_are_refused_in_one_line(saved, tmp_path):
    """Noted 4: 1e39 loaded as inf with a numpy overflow warning per value; NaN and
    Infinity literals still load (null means no value, as documented)."""
    _, data = saved
    path = _edited(data, tmp_path, scores=[1e39] * len(data["scores"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning before the refusal
        with pytest.raises(InvalidFileError, match=r"'scores' holds 1e\+39, beyond"):
            Explanation.load(path)
    literal = tmp_path / "literal.json"
    literal.write_text(json.dumps({**data, "scores": [float("inf")] * len(data["scores"])}))
    assert np.isinf(Explanation.load(literal).scores).all()


# ----------------------------------------------------------------------------------- P03
def test_sanity_top_k_on_short_texts_warns_and_notes_it(model):
    """P03: a whole top_k column of NaN came without a word, the verdicts' note empty;
    the sanity_top_k metric warns for the same case."""
    with pytest.warns(NormXLogitWarning) as caught:
        result = parameter_randomization(model, SHORT, ["random"], top_k=50)
    assert result.frame["top_k"].isna().all()
    said = [str(w.message) for w in caught if "top-k overlap is n/a" in str(w.message)]
    assert len(said) == 1 and "for 2 of 2 texts (random)" in said[0]
    assert "top-50 overlap is undefined for a text of 50 tokens" in said[0]
    assert "choose a smaller one" in said[0]
    note = result.verdicts().iloc[0]["note"]
    assert "top_k n/a for 2 of 2 texts" in note and "top-50 overlap" in note


# ----------------------------------------------------------------------------------- P04
def test_loaders_name_a_folder_a_device_or_an_empty_file(tmp_path, monkeypatch):
    """P04: a folder or /dev/null was "not found" though the path exists."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidFileError, match=r"^\. is a folder, not a saved explanation"):
        Explanation.load(".")
    with pytest.raises(InvalidFileError, match="is a folder, not a saved explanation"):
        normxlogit.load_explanations(tmp_path)
    with pytest.raises(InvalidFileError, match="is a device, not a regular file"):
        normxlogit.load_explanations("/dev/null")
    (tmp_path / "empty.json").write_text("")
    for load in (normxlogit.load_explanations, EvaluationResult.load):
        with pytest.raises(InvalidFileError, match=r"empty\.json is empty \(0 bytes\)"):
            load("empty.json")
    with pytest.raises(InvalidFileError, match="is a device, not a regular file"):
        EvaluationResult.load("/dev/null")


# ----------------------------------------------------------------------------- P05, noted 5
def test_a_registered_method_giving_nan_is_warned_about_once(model, registries):
    """P05: NaN scores of a registered method were made without a word; evaluate then
    refused them. One message however many batches."""
    _nan_probe()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.explain(SHORT, "nan_probe", batch_size=1)
        model.explain(SHORT, "random", batch_size=1)
    said = {str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)}
    assert said == {
        "the registered method 'nan_probe' gave NaN or infinite scores, which rank no "
        "tokens (evaluate refuses its explanations); fix its attribute(), or explain "
        "without it"
    }


def test_a_registered_method_or_metric_that_raises_is_named(model, registries):
    """Noted 5: the page said "internal error (ValueError): boom" of a user's own code;
    the original exception stays chained for Python users."""
    _failing_probe()
    with pytest.raises(InvalidInputError) as caught:
        model.explain(SHORT, "failing_probe")
    assert str(caught.value) == (
        "the registered method 'failing_probe' failed (ValueError: boom); fix its attribute()"
    )
    assert isinstance(caught.value.__cause__, ValueError)

    class Broken(Metric):
        info: ClassVar[MetricInfo] = MetricInfo(
            "broken_probe", "raises", True, (0, 1), None, "mean"
        )

        def rows(self, ctx):
            raise ValueError("bad metric")

    register_metric(Broken, replace=True)
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, model.explain(SHORT, "random"), ["broken_probe"])
    assert str(caught.value) == (
        "the registered metric 'broken_probe' failed (ValueError: bad metric); fix its rows()"
    )
    assert isinstance(caught.value.__cause__, ValueError)


def test_the_page_warns_of_nan_scores_and_names_the_method_to_leave_out(model, registries):
    """P05: the explain job finished with no warning, and the evaluation was refused with
    "leave it out", which the page's evaluate cannot do; a registered method that raised
    was an "internal error"."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from normxlogit.serve import build_app

    from .serve.test_serve_api import finished as _finished

    _nan_probe()
    _failing_probe()
    with TestClient(build_app(loaded={"tiny": model}, builtins=False)) as client:
        body = {"model": "tiny", "text": SHORT[0], "methods": ["random", "nan_probe"]}
        job = _finished(client, client.post("/api/explain", json=body).json())
        assert job["state"] == "done"
        assert any("'nan_probe' gave NaN or infinite" in w for w in job["warnings"])
        response = client.post(
            "/api/evaluate", json={"run": job["result"]["run"], "metrics": ["comp_cd"]}
        )
        error = response.json().get("error") or _finished(client, response.json())["error"]
        assert "nan_probe gave NaN or infinite scores" in error
        assert error.endswith("explain again without nan_probe")
        body = {"model": "tiny", "text": SHORT[0], "methods": ["failing_probe"]}
        job = _finished(client, client.post("/api/explain", json=body).json())
        assert "internal error" not in json.dumps(job)
        assert "the registered method 'failing_probe' failed (ValueError: boom)" in json.dumps(job)
