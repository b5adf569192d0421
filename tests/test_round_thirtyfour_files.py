"""Round 34, probe b: the page's bench figures and two saved-file loaders.

- P03: the page listed figures the report never draws (``curve-token_f1`` of methods
  explained at the final layer: one point per method), each refused as "nothing to draw
  yet"; it now lists what the report draws (one rule, ``bench.report.drawable``). A figure
  whose image fails shows the server's own reason (e.g. matplotlib's extra), as text.
- P04: ``EvaluationResult.load`` averaged a curve with a point missing, and showed a
  method with no rows for a metric as NaN, without a word: the first is refused naming the
  text, method, metric and point, the second is warned about.
- P05: ``SanityResult.load`` of a ``.json`` read ``true`` and ``"0.9"`` as Spearman values
  and took any ``settings.top_k``, ``mode``, ``groups`` or ``methods``: refused in one line
  naming the file and field.
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
import warnings
from pathlib import Path

import pytest

import normxlogit
from normxlogit import EvaluationResult, Protocol
from normxlogit.common.errors import InvalidFileError, InvalidInputError, NormXLogitWarning
from normxlogit.sanity import SanityResult, parameter_randomization

from .conftest import explainable

TEXTS = ["a good film indeed", "terrible boring movie", "fine"]


# ------------------------------------------------------------------ P03
@pytest.fixture(scope="module")
def layered_bench(tmp_path_factory, tiny_classifier) -> Path:
    """A finished bench of token_f1 (a curve over layers: one point per method explained
    at the final layer, so never drawn) beside comp_cd (a curve drawn)."""
    from normxlogit.bench import ResultStore, load_config, run_bench

    root = tmp_path_factory.mktemp("r34-bench")
    data = root / "ev.tsv"
    data.write_text(
        "sentence\tlabel\tevidence\na good film indeed\t1\t1 2\nterrible boring movie\t0\t0 1\n"
    )
    config = root / "b.toml"
    config.write_text(
        'title = "layers"\nseeds = [0]\nmetrics = ["token_f1", "comp_cd"]\n'
        'methods = ["normxlogit", "random"]\n[protocol]\nratios = [0.2, 0.5]\ntop_k = 2\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "{data}"\n'
    )
    with ResultStore(root / "b.sqlite") as store:
        run_bench(load_config(config), store)
    return config


def test_p03_the_page_lists_the_figures_the_report_draws(layered_bench, tiny_classifier, tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from normxlogit.bench import ResultStore, load_config
    from normxlogit.bench.report import write_report
    from normxlogit.serve import build_app

    config = load_config(layered_bench)
    with ResultStore(layered_bench.with_suffix(".sqlite"), create=False) as store:
        written = write_report(config, store, tmp_path / "report")
    drawn = sorted(path.stem for path in written if path.suffix == ".png")
    assert "curve-token_f1" not in drawn and "curve-comp_cd" in drawn
    with TestClient(build_app([tiny_classifier], bench=[layered_bench], builtins=False)) as client:
        listed = client.get("/api/bench/0/tables").json()["plots"]
        assert sorted(plot["name"] for plot in listed) == drawn
        for name in drawn:
            assert client.get(f"/api/bench/0/plots/{name}.png").status_code == 200


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make setup installs it)")
def test_p03_a_figure_that_fails_shows_the_servers_reason(
    layered_bench, tiny_classifier, monkeypatch
):
    """The page said "nothing to draw yet" under every figure whose image failed, even
    where the server said to install matplotlib's extra; it shows that reason now, as text
    (markup in it is not read as markup)."""
    pytest.importorskip("playwright")
    uvicorn = pytest.importorskip("uvicorn")
    from playwright.sync_api import sync_playwright

    from normxlogit.bench import plots
    from normxlogit.serve import build_app

    reason = f"{plots.NEEDS_MATPLOTLIB} <b>as text</b>"

    def no_matplotlib(panels):
        raise InvalidInputError(reason)

    monkeypatch.setattr(plots, "_figure", no_matplotlib)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = build_app([tiny_classifier], bench=[layered_bench], builtins=False)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.time() + 30
        while not server.started:
            assert time.time() < deadline, "the server did not start"
            time.sleep(0.05)
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            page.click(".tab[data-tab='bench-tab']")
            page.wait_for_selector("#bench-figures figcaption:has-text('pip install')")
            page.wait_for_function(  # each figure's image fails on its own: wait for all
                "() => [...document.querySelectorAll('#bench-figures figcaption')]"
                ".every(n => n.textContent.includes('pip install'))",
                timeout=20000,
            )
            captions = page.eval_on_selector_all(
                "#bench-figures figcaption",
                "nodes => nodes.map(n => [n.textContent, n.children.length])",
            )
            browser.close()
    finally:
        server.should_exit = True
        thread.join(10)
    assert captions and all(count == 0 for _, count in captions), captions
    assert all(text.endswith(reason) for text, _ in captions), captions
    assert not any("nothing to draw yet" in text for text, _ in captions)


# ------------------------------------------------------------------ P04
@pytest.fixture(scope="module")
def saved_result(tmp_path_factory) -> Path:
    """A real evaluation on a tiny classifier: a ratio curve (comp_cd), a pi curve
    (pi_soft_nc) and a randomisation-step curve (sanity_spearman)."""
    model = explainable("bert", "classification")
    protocol = Protocol(ratios=(0.2, 0.5), pis=(0.25, 0.75), samples=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explained = {name: model.explain(TEXTS, method=name) for name in ("normxlogit", "random")}
        result = normxlogit.evaluate(
            model,
            explained,
            metrics=["comp_cd", "pi_soft_nc", "sanity_spearman"],
            protocol=protocol,
            progress=False,
        )
    return result.save(tmp_path_factory.mktemp("r34-eval") / "ev.json")


def _edited(source: Path, folder: Path, keep) -> Path:
    data = json.loads(source.read_text())
    data["rows"] = [row for row in data["rows"] if keep(row)]
    path = folder / "edited.json"
    path.write_text(json.dumps(data))
    return path


def test_p04_a_saved_result_loads_whole_without_a_word(saved_result):
    with warnings.catch_warnings():
        warnings.simplefilter("error", NormXLogitWarning)
        loaded = EvaluationResult.load(saved_result)
    assert set(loaded.frame["metric"]) == {"comp_cd", "pi_soft_nc", "sanity_spearman"}


@pytest.mark.parametrize(
    ("metric", "x", "point"),
    [("comp_cd", 0.5, "0.5"), ("pi_soft_nc", 0.25, "0.25"), ("sanity_spearman", 1.0, "1")],
)
def test_p04_a_curve_with_a_point_missing_is_refused(saved_result, tmp_path, metric, x, point):
    def keep(row):
        return not (
            row["metric"] == metric
            and row["method"] == "random"
            and row["instance"] == 1
            and row["x"] == x
        )

    path = _edited(saved_result, tmp_path, keep)
    with pytest.raises(InvalidFileError) as raised:
        EvaluationResult.load(path)
    message = str(raised.value)
    assert str(path) in message and "\n" not in message
    assert f"the {metric} curve of method 'random' on text 1 has no row at x = {point}" in message


def test_p04_a_text_left_out_whole_still_loads(saved_result, tmp_path):
    """evaluate writes no row at all for a text it leaves out (its contrast its target):
    no curve is cut short there."""
    path = _edited(saved_result, tmp_path, lambda row: row["instance"] != 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NormXLogitWarning)
        assert sorted(set(EvaluationResult.load(path).frame["instance"])) == [0, 2]


def test_p04_a_method_without_rows_of_a_metric_is_warned_about(saved_result, tmp_path):
    def keep(row):
        return not (row["metric"] == "comp_cd" and row["method"] == "random")

    path = _edited(saved_result, tmp_path, keep)
    with pytest.warns(NormXLogitWarning, match=r"comp_cd has no rows for 'random'"):
        summary = EvaluationResult.load(path).summary().frame
    assert summary.loc["random", "comp_cd"] != summary.loc["random", "comp_cd"]  # NaN, said


def test_p04_a_listed_metric_without_rows_is_warned_about(saved_result, tmp_path):
    path = _edited(saved_result, tmp_path, lambda row: row["metric"] != "pi_soft_nc")
    with pytest.warns(NormXLogitWarning, match=r"pi_soft_nc has no rows \(the summary leaves"):
        EvaluationResult.load(path)


# ------------------------------------------------------------------ P05
@pytest.fixture(scope="module")
def saved_sanity(tmp_path_factory) -> Path:
    model = explainable("bert", "classification")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = parameter_randomization(model, TEXTS[:2], ["normxlogit", "random"], top_k=2)
    return result.save(tmp_path_factory.mktemp("r34-sanity") / "san.json")


def test_p05_a_saved_sanity_result_loads(saved_sanity):
    assert SanityResult.load(saved_sanity).settings["top_k"] == 2


@pytest.mark.parametrize(
    ("where", "key", "value", "said"),
    [
        ("row", "spearman", True, "rows[0]: 'spearman' must be a number or null, not True"),
        ("row", "spearman", "0.9", "rows[0]: 'spearman' must be a number or null, not '0.9'"),
        ("row", "top_k", False, "rows[0]: 'top_k' must be a number or null, not False"),
        ("row", "step", "0", "rows[0]: 'step' must be a whole number from 0, not '0'"),
        ("settings", "top_k", -5, "settings.top_k is -5, not a whole number of at least 1"),
        ("settings", "top_k", None, "settings.top_k is None, not a whole number of at least 1"),
        ("settings", "top_k", 2.5, "settings.top_k is 2.5, not a whole number of at least 1"),
        ("settings", "mode", 3, "settings.mode is 3, not one of cascading, independent, data"),
        ("settings", "groups", "head", "settings.groups is 'head', not a list"),
        ("settings", "methods", ["normxlogit"], "settings.methods is ['normxlogit'], not an"),
        ("settings", "absolute", "false", "settings.absolute is 'false', not true or false"),
        ("settings", "seed", None, "settings.seed is None, not a whole number"),
        ("settings", "preset", 1, "settings.preset is 1, not null or one of"),
    ],
)
def test_p05_a_wrong_type_in_the_json_is_refused(saved_sanity, tmp_path, where, key, value, said):
    data = json.loads(saved_sanity.read_text())
    (data["rows"][0] if where == "row" else data["settings"])[key] = value
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError) as raised:
        SanityResult.load(path)
    message = str(raised.value)
    assert message.startswith(f"{path} is not a saved sanity result: {said}"), message
    assert "\n" not in message
