"""Round thirty-six of new-user probes, probe b: the page's refusal of an unknown figure
listed one it never draws (P01); a loaded file's out-of-range values got a metric
author's advice (P02); the bench's refusal of an empty evidence cell suggested the file it
was reading (P03); a contrast given as a label index text was advised the target's
--label-id (P04); the page dropped a whitespace contrast without a word (P05); a data file's
corrected evidence went unnoticed by a bench store (P06); a sanity result opened with
another loader was called an unknown explanation kind (P07)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import normxlogit
from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.runner import plan
from normxlogit.common.errors import NormXLogitError, NormXLogitWarning, StaleResultsError
from normxlogit.evaluation import EvaluationResult
from normxlogit.sanity import SanityResult

from .bench.helpers import _save_tiny, all_done, stale_refusals
from .conftest import explainable, invoke_in, sanity_frame, sharp_model
from .test_round_thirtyfour_files import layered_bench  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def sentiment_model(tmp_path_factory) -> Path:
    """A saved tiny BERT with SST-2's labels (negative, positive)."""
    return _save_tiny(tmp_path_factory.mktemp("tiny-sentiment-36"), seed=0)


# ------------------------------------------------------------------ P01
def test_p01_an_unknown_figure_is_answered_with_the_figures_the_page_lists(
    layered_bench,  # noqa: F811
    tiny_classifier,
):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from normxlogit.serve import build_app

    with TestClient(build_app([tiny_classifier], bench=[layered_bench], builtins=False)) as client:
        listed = [p["name"] for p in client.get("/api/bench/0/tables").json()["plots"]]
        refusal = client.get("/api/bench/0/plots/curve-soft_nc.png").json()["error"]
        assert refusal == f"no figure 'curve-soft_nc'; this config draws {', '.join(listed)}"
        assert "curve-token_f1" not in refusal
        undrawn = client.get("/api/bench/0/plots/curve-token_f1.png").json()["error"]
    assert "yet" not in undrawn
    assert "token_f1 has a curve over layers only" in undrawn


# ------------------------------------------------------------------ P02
def test_p02_a_loaded_files_values_outside_a_builtin_range_are_not_a_metric_authors_fix(
    tmp_path,
):
    model = sharp_model()
    explanations = {"g": model.explain(["a good film indeed", "so dull"], "gradient_x_input")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = normxlogit.evaluate(model, explanations, ["soft_nc"], progress=False).save(
            tmp_path / "r.json"
        )
    data = json.loads(path.read_text())
    for row in data["rows"]:
        row["value"] = -3.0
    path.write_text(json.dumps(data))
    with pytest.warns(NormXLogitWarning) as caught:
        EvaluationResult.load(path)
    message = str(caught[0].message)
    assert "declare the range" not in message and "MetricInfo" not in message
    assert "is -3, which soft_nc never gives (its values lie in [0, inf])" in message
    assert "edited or written by another program" in message


# ------------------------------------------------------------------ P03
def test_p03_the_bench_names_the_empty_evidence_cell_and_the_fix(tmp_path, sentiment_model):
    data = tmp_path / "ev.tsv"
    data.write_text(
        "sentence\tlabel\tevidence\na good film indeed\t1\t1 2\nterrible boring movie\t0\t\n"
    )
    config = tmp_path / "c.toml"
    config.write_text(
        'seeds = [0]\nmetrics = ["token_f1"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{sentiment_model}"\ndataset = "{data}"\n'
    )
    with ResultStore(tmp_path / "s.sqlite") as store, pytest.raises(NormXLogitError) as caught:
        run_bench(load_config(config), store)
    message = str(caught.value)
    assert "ev.tsv, line 3 (instance 1) gives none" in message
    assert "write [] for a text whose rationale is empty" in message
    assert '[protocol] empty_rationale = "score"' in message
    assert "a data file with an evidence column" not in message


# ------------------------------------------------------------------ P04
def test_p04_a_label_index_as_contrast_is_advised_the_contrasts_own_option():
    model = sharp_model()
    with pytest.raises(NormXLogitError) as caught:
        model.explain("a good film", "gradient_x_input", contrast="1")
    assert "--contrast-id 1 on the command line" in str(caught.value)
    assert "--label-id" not in str(caught.value)
    with pytest.raises(NormXLogitError) as caught:
        model.explain("a good film", "gradient_x_input", target="1")
    assert "--label-id 1 on the command line" in str(caught.value)


def test_p04_the_cli_advises_contrast_id_and_it_works(tmp_path, sentiment_model):
    refused = invoke_in(
        tmp_path, "explain", "-m", str(sentiment_model), "a good film", "--method",
        "gradient_x_input", "--contrast", "1",
    )  # fmt: skip
    assert refused.exit_code == 2
    assert "--contrast-id 1" in refused.output and "--label-id" not in refused.output
    followed = invoke_in(
        tmp_path, "explain", "-m", str(sentiment_model), "a good film", "--method",
        "gradient_x_input", "--contrast-id", "1",
    )  # fmt: skip
    assert followed.exit_code == 0, followed.output
    assert "vs positive" in followed.output


def test_p04_the_bench_advises_the_name_only(tmp_path, sentiment_model):
    data = tmp_path / "d.tsv"
    data.write_text("sentence\tlabel\na good film\t1\nso dull\t0\n")
    config = tmp_path / "c.toml"
    config.write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\n[[methods]]\nname = "gradient_x_input"\n'
        f'contrast = "1"\n[[experiments]]\nmodel = "{sentiment_model}"\ndataset = "{data}"\n'
    )
    with ResultStore(tmp_path / "s.sqlite") as store, pytest.raises(NormXLogitError) as caught:
        run_bench(load_config(config), store)
    message = str(caught.value)
    assert message.endswith("label index 1 is 'positive': give that name")
    assert "command line" not in message and "int in Python" not in message


# ------------------------------------------------------------------ P04, P05 on the page
@pytest.fixture(scope="module")
def page():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from normxlogit.serve import build_app

    app = build_app(
        [],
        loaded={"tiny": sharp_model(), "tiny-decoder": explainable("llama", "causal_lm")},
        builtins=False,
    )
    with TestClient(app) as client:
        yield client


def _explained(client, **body) -> dict:
    from .serve.test_serve_api import finished

    response = client.post("/api/explain", json={"methods": ["gradient_x_input"], **body})
    assert response.status_code == 200, response.text
    return finished(client, response.json())


def test_p04_the_page_advises_no_option_for_a_label_index_contrast(page):
    job = _explained(page, model="tiny", text="a good film", contrast="1")
    assert job["state"] == "failed"
    assert job["error"].endswith("give that name"), job["error"]
    assert "--" not in job["error"]


def test_p05_a_space_contrast_of_a_language_model_is_read_as_the_cli_reads_it(page):
    """Taken as the token it names, as the command line takes it: this test tokenizer
    (WordPiece) has no space token, so it is refused by name, never dropped."""
    job = _explained(page, model="tiny-decoder", text="the film is", contrast=" ")
    assert job["state"] == "failed"
    assert "contrast (rather than): contrast ' ' reads as no token" in job["error"]


def test_p05_a_blank_contrast_of_a_classifier_is_refused_not_dropped(page):
    job = _explained(page, model="tiny", text="a good film", contrast="   ")
    assert job["state"] == "failed"
    assert "contrast (rather than): unknown label '   '" in job["error"]


# ------------------------------------------------------------------ P06
def _evidence_bench(folder: Path, model: Path, evidence: str) -> Path:
    data = folder / "ev.tsv"
    data.write_text(
        f"sentence\tlabel\tevidence\na good film indeed\t1\t{evidence}\n"
        "terrible boring movie\t0\t0 1\n"
    )
    config = folder / "c.toml"
    config.write_text(
        'seeds = [0]\nmetrics = ["auprc"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\n'
    )
    return config


def test_p06_corrected_evidence_is_refused_by_run_and_status(tmp_path, sentiment_model):
    config = _evidence_bench(tmp_path, sentiment_model, "1 2")
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(load_config(config), store)
    _evidence_bench(tmp_path, sentiment_model, "0 3")  # the annotation corrected
    for message in stale_refusals(config, tmp_path / "s.sqlite"):
        assert "gives instance 0 other evidence than" in message
        assert "(evidence 0 3, stored 1 2)" in message
    _evidence_bench(tmp_path, sentiment_model, "1 2")  # the data the store was filled from
    assert all_done(config, tmp_path / "s.sqlite")


def test_p06_a_store_written_before_the_record_opens_and_records_it(tmp_path, sentiment_model):
    """A store without recorded evidence (an earlier normxlogit's) is read as before, and
    the next run records the evidence it reads."""
    import sqlite3

    config = _evidence_bench(tmp_path, sentiment_model, "1 2")
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(load_config(config), store)
    with sqlite3.connect(tmp_path / "s.sqlite") as conn:
        conn.execute("DROP TABLE annotations")
    _evidence_bench(tmp_path, sentiment_model, "0 3")
    with ResultStore(tmp_path / "s.sqlite", create=False) as store:
        assert all(
            cell.done == cell.total for cell in plan(load_config(config), store, with_units=False)
        )
        run_bench(load_config(config), store)
    _evidence_bench(tmp_path, sentiment_model, "1 2")
    store = ResultStore(tmp_path / "s.sqlite", create=False)
    with store, pytest.raises(StaleResultsError):
        run_bench(load_config(config), store)


def test_p06_stores_filled_from_other_evidence_do_not_merge(tmp_path, sentiment_model):
    for store_name, evidence in (("a.sqlite", "1 2"), ("b.sqlite", "0 3")):
        config = _evidence_bench(tmp_path, sentiment_model, evidence)
        with ResultStore(tmp_path / store_name) as store:
            run_bench(load_config(config), store)
    store = ResultStore(tmp_path / "a.sqlite", create=False)
    with store, pytest.raises(NormXLogitError) as caught:
        store.merge_from(tmp_path / "b.sqlite")
    assert "other evidence for instance 0" in str(caught.value)


# ------------------------------------------------------------------ P07
def test_p07_each_loader_names_the_loader_of_another_kind_of_file(tmp_path):
    sanity = SanityResult(sanity_frame()).save(tmp_path / "sanity.json")
    model = sharp_model()
    explanation = model.explain("a good film", "gradient_x_input")
    explanation.save(tmp_path / "explanation.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = normxlogit.evaluate(model, {"g": [explanation]}, ["comp_cd"], progress=False)
    evaluation = result.save(tmp_path / "evaluation.json")
    cases = [
        (normxlogit.Explanation.load, sanity, "normxlogit.sanity.SanityResult.load"),
        (EvaluationResult.load, sanity, "normxlogit.sanity.SanityResult.load"),
        (SanityResult.load, evaluation, "normxlogit.EvaluationResult.load"),
        (SanityResult.load, tmp_path / "explanation.json", "normxlogit.Explanation.load"),
    ]
    for loader, path, named in cases:
        with pytest.raises(NormXLogitError) as caught:
            loader(path)
        assert f"use {named}" in str(caught.value), str(caught.value)
        assert "does not know" not in str(caught.value)
