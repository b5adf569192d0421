"""Round thirty, the page (``normxlogit serve``): compressed stores browse, an experiment
counts against its planned instances and names methods not started, no curve figure of a
metric without a curve, ``Layers: every layer`` refused with a generation, NormXLogit's
final-layer settings name the norm it used, and clearer refusals for BLiMP examples and
``--model`` with a built-in name."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from normxlogit.bench import ResultStore, load_config, run_bench  # noqa: E402
from normxlogit.bench.archive import compress_store  # noqa: E402
from normxlogit.bench.report import default_plots  # noqa: E402
from normxlogit.serve import build_app  # noqa: E402
from normxlogit.serve.browse import BenchBrowser, BenchEntry  # noqa: E402
from normxlogit.serve.models import ModelPool  # noqa: E402

from .bench.helpers import _save_tiny, write_config  # noqa: E402
from .cli_inprocess import run_cli  # noqa: E402
from .conftest import explainable  # noqa: E402

TEXT = "a gripping and beautifully acted film"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A tiny classifier's bench (4 texts, comp_cd and soft_nc) in a plain store, and the
    store compressed as .xz and .gz; a changed config (6 texts, one more method) that
    reads the same store."""
    root = tmp_path_factory.mktemp("round30")
    model = _save_tiny(root / "tiny-sentiment", seed=0)
    config = write_config(
        root, model, limit=4, metrics='["comp_cd", "soft_nc"]', methods='["normxlogit", "random"]'
    )
    store = root / "grid.sqlite"
    with ResultStore(store) as opened:
        run_bench(load_config(config), opened)
    compress_store(store, root / "copy.sqlite.xz")
    compress_store(store, root / "copy.sqlite.gz")
    (root / "changed").mkdir()
    changed = write_config(
        root / "changed",
        model,
        '[[plots]]\nmetric = "soft_nc"\nname = "soft"\n',
        limit=6,
        metrics='["comp_cd", "soft_nc"]',
        methods='["normxlogit", "random", "attention_rollout"]',
    )
    return {"root": root, "model": model, "config": config, "store": store, "changed": changed}


@pytest.fixture(scope="module")
def client(site):
    root = site["root"]
    unmasked = explainable("llama", "causal_lm")
    unmasked.tokenizer.mask_token = None  # as a real decoder's tokenizer: no mask token
    app = build_app(
        [site["model"]],
        loaded={"tiny-decoder": explainable("llama", "causal_lm"), "tiny-unmasked": unmasked},
        bench=[
            f"{site['config']}={root / 'copy.sqlite.xz'}",
            f"{site['config']}={root / 'copy.sqlite.gz'}",
            f"{site['changed']}={site['store']}",
            str(site["config"]),
        ],
        builtins=False,
    )
    with TestClient(app) as test_client:
        yield test_client


def _experiment(client, index: int) -> dict:
    name = client.get("/api/info").json()["bench"][index]["experiments"][0]
    response = client.get(f"/api/bench/{index}/experiment", params={"name": name})
    assert response.status_code == 200, response.text
    return response.json()


# P02: a compressed store is browsed, as `bench status/report/export` read it


@pytest.mark.parametrize("index", [0, 1], ids=["xz", "gz"])
def test_a_compressed_store_is_browsed_like_the_plain_one(client, index):
    plain = _experiment(client, 3)
    packed = _experiment(client, index)
    assert packed["rows"] == plain["rows"] and packed["instances"] == 4
    tables = client.get(f"/api/bench/{index}/tables")
    assert tables.status_code == 200, tables.text
    assert tables.json()["tables"] == client.get("/api/bench/3/tables").json()["tables"]
    name = client.get("/api/info").json()["bench"][index]["experiments"][0]
    drill = client.get(
        f"/api/bench/{index}/instances",
        params={"experiment": name, "method": "normxlogit", "metric": "comp_cd"},
    )
    assert drill.status_code == 200, drill.text
    assert [i["instance"] for i in drill.json()["instances"]] == [0, 1, 2, 3]
    plot = client.get(f"/api/bench/{index}/plots/curve-comp_cd.png")
    assert plot.status_code == 200 and plot.content[:4] == b"\x89PNG"


def test_a_compressed_store_is_decompressed_once_for_requests_at_once_and_removed(site):
    packed = site["root"] / "copy.sqlite.xz"
    browser = BenchBrowser([BenchEntry.parse(f"{site['config']}={packed}")])
    answers, failures = [], []

    def ask():
        try:
            answers.append(browser.tables(0))
        except Exception as error:  # noqa: BLE001 - collected, asserted below
            failures.append(error)

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures and len(answers) == 6
    assert all(answer == answers[0] for answer in answers)
    folder = Path(browser._folder.name)
    assert len(list(folder.glob("*.sqlite"))) == 1  # decompressed once
    browser.close()
    assert not folder.exists()


def test_a_damaged_compressed_store_names_the_file_given(tmp_path, site):
    broken = tmp_path / "cut.sqlite.xz"
    broken.write_bytes((site["root"] / "copy.sqlite.xz").read_bytes()[:200])
    browser = BenchBrowser([BenchEntry.parse(f"{site['config']}={broken}")])
    with pytest.raises(Exception, match="cut.sqlite.xz") as caught:
        browser.tables(0)
    assert "--store" not in str(caught.value)
    browser.close()


# P03: the experiment view counts the planned instances and names methods not started


def test_an_unfinished_experiment_counts_its_planned_instances_and_names_missing_methods(
    client, site
):
    page = _experiment(client, 2)
    assert page["of"] == 6  # the changed config plans 6 texts; the store holds 4
    assert page["instances"] == 4
    assert page["not_computed"] == ["attention_rollout"]
    assert [row["method"] for row in page["rows"]] == ["normxlogit", "random"]
    done = _experiment(client, 3)
    assert done["of"] == 4 and done["not_computed"] == []


def test_the_page_says_which_methods_are_not_computed_yet():
    script = (Path(__file__).parents[1] / "src/normxlogit/serve/static/app.js").read_text()
    assert "not computed yet: ${notComputed(data)}" in script
    assert "return data.not_computed.map(" in script


# P04: no curve figure of a metric that is one number per text


def test_no_curve_figure_is_offered_for_a_metric_without_a_curve(client, site):
    plots = [p["name"] for p in client.get("/api/bench/3/tables").json()["plots"]]
    assert "curve-comp_cd" in plots and "curve-soft_nc" not in plots
    assert [p.name for p in default_plots(load_config(site["config"]))] == [
        "curve-comp_cd",
        "time-vs-length",
    ]
    asked = client.get("/api/bench/3/plots/curve-soft_nc.png")
    assert asked.status_code == 400 and "no figure 'curve-soft_nc'" in asked.json()["error"]


def test_a_named_curve_figure_of_such_a_metric_says_why_it_has_none(client):
    asked = client.get("/api/bench/2/plots/soft.png")
    assert asked.status_code == 400
    message = asked.json()["error"]
    assert "soft_nc is one number per text (no curve)" in message and "yet" not in message


# P01: every layer is refused with a generation, before any work


@pytest.mark.parametrize("given", [{"generate": True}, {"continuation": " film"}])
def test_every_layer_with_a_generation_is_refused_before_any_work(client, given):
    response = client.post(
        "/api/explain",
        json={
            "model": "tiny-decoder",
            "text": "it is a good",
            "methods": ["normxlogit"],
            "layer": "all",
            **given,
        },
    )
    assert response.status_code == 400, response.text
    assert response.json()["error"] == (
        "a generation is shown at its final layer; choose Layers: final layer"
    )


# P05: NormXLogit's final-layer settings name the norm it used; the slider labels its last row


def test_final_layer_normxlogit_records_the_embedding_norm_it_used(site):
    model = explainable("llama", "causal_lm")
    final = model.explain(TEXT, method="normxlogit")
    assert final.settings["norm"] == "embedding"
    explicit = model.explain(TEXT, method="normxlogit", norm="embedding")
    assert (final.scores == explicit.scores).all()  # the same scores as before
    every = model.explain(TEXT, method="normxlogit", layer="all")
    assert every.settings["norm"] == "layer"
    one = model.explain(TEXT, method="normxlogit", layer=1)
    assert one.settings["norm"] == "layer"
    # the bench keys a method by the config's options, never by recorded settings
    method = load_config(site["config"]).experiments[0].methods[0]
    assert method.name == "normxlogit" and "embedding" not in method.key


def test_every_layer_run_labels_normxlogits_last_row_as_its_own_norm(client):
    from .serve.test_serve_api import finished

    response = client.post(
        "/api/explain",
        json={
            "model": "tiny-decoder",
            "text": "it is a good",
            "methods": ["normxlogit", "logat"],
            "layer": "all",
        },
    )
    job = finished(client, response.json())
    assert job["state"] == "done", job["error"]
    drawn = {e["method"]: e for e in job["result"]["explanations"]}
    notes = drawn["normxlogit"]["layer_notes"]
    assert len(notes) == len(drawn["normxlogit"]["layers"]) and notes[:-1] == [None] * (
        len(notes) - 1
    )
    assert "EachLayerNormXLogit" in notes[-1] and "final layer" in notes[-1]
    assert drawn["logat"]["layer_notes"] is None
    script = (Path(__file__).parents[1] / "src/normxlogit/serve/static/app.js").read_text()
    assert "explanation.layer_notes" in script


# P06: BLiMP examples with a decoder name the model and the fix


def test_blimp_examples_with_a_decoder_name_the_model_and_a_masked_lm(client):
    response = client.get(
        "/api/datasets/blimp/examples", params={"limit": 2, "model": "tiny-unmasked"}
    )
    assert response.status_code == 400
    message = response.json()["error"]
    assert message.startswith("tiny-unmasked is not a masked LM")
    assert "minilm-blimp" in message and "TokenizersBackend" not in message


def test_blimp_examples_without_a_model_say_what_the_page_needs(client):
    response = client.get("/api/datasets/blimp/examples", params={"limit": 2})
    assert response.status_code == 400
    message = response.json()["error"]
    assert "masked LM" in message and "normxlogit.load" not in message


# P07: a built-in name given to --model is the built-in


def test_a_builtin_name_given_as_a_model_is_the_builtin():
    pool = ModelPool.build(["minilm-sst2"], builtins=False)
    assert pool.names() == ["minilm-sst2"]
    assert pool.entry("minilm-sst2").source == "minilm-sst2"
    offered = ModelPool.build(["minilm-sst2"])  # offered once, not twice
    assert offered.names().count("minilm-sst2") == 1 and "minilm-sst2'" not in offered.names()


def test_a_missing_model_folder_says_what_model_takes():
    done = run_cli("serve", "--model", "/no/such/folder", prog_name="python -m normxlogit")
    assert done.returncode == 2
    assert "a local model folder or a built-in name" in done.stderr
