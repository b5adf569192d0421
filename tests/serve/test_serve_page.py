"""``normxlogit serve`` in a real browser: Debian's chromium driven by Playwright.

The server runs in this process (uvicorn in a thread) on tiny models; the tests type a
text, run two methods, and check that the heatmaps, the curves, the sorted table and the
perturbed tokens show the library's own numbers. Screenshots are kept under
``test-output/`` (or $NORMXLOGIT_TEST_OUTPUT).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

import normxlogit  # noqa: E402
from normxlogit.serve import build_app  # noqa: E402

from ..conftest import explainable  # noqa: E402
from .test_serve_api import tiny_site  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (make setup installs it)"
)

TEXT = "a gripping and beautifully acted film"
OUTPUT = Path(os.environ.get("NORMXLOGIT_TEST_OUTPUT", Path(__file__).parents[2] / "test-output"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The page on a tiny classifier, a tiny decoder and a tiny bench store."""
    root = tmp_path_factory.mktemp("serve-page")
    model, config = tiny_site(root)
    passages = root / "passages.jsonl"  # a data file with its own segments
    passages.write_text(
        '{"text": "The plot is thin. The acting is wonderful!", "label": 1, '
        '"segments": ["The plot is thin.", "The acting is wonderful!"]}\n'
    )
    app = build_app(
        [model],
        data=[passages],
        loaded={
            "tiny-decoder": explainable("llama", "causal_lm"),
            "tiny-regressor": explainable("bert", "regression"),
        },
        bench=[config],
        builtins=False,
    )
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        assert time.time() < deadline, "the server did not start"
        time.sleep(0.05)
    yield {"url": f"http://127.0.0.1:{port}/", "model": model}
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser, site):
    context = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    context.on("pageerror", lambda error: errors.append(str(error)))
    context.goto(site["url"])
    context.wait_for_selector("#model-status:has-text('classification')")
    yield context
    context.close()
    assert not errors, f"the page raised: {errors}"


def _screenshot(page, name: str) -> Path:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / name
    page.screenshot(path=str(path), full_page=True)
    return path


def _choose_methods(page, names) -> None:
    for box in page.query_selector_all("#methods input"):
        box.set_checked(box.get_attribute("value") in names)


def _panel_scores(page, method: str) -> list[list[float]]:
    """Each heatmap row's token scores in the panel of ``method``."""
    return page.eval_on_selector_all(
        f".panel[data-method='{method}'] .heatmap-row",
        "rows => rows.map(r => [...r.querySelectorAll('.tok')].map(t => Number(t.dataset.score)))",
    )


def test_type_a_text_run_two_methods_and_their_curves(page, site):
    page.fill("#text", TEXT)
    _choose_methods(page, {"normxlogit", "gradient_x_input"})
    page.select_option("#target", "all")
    page.click("#explain-btn")
    page.wait_for_selector(".panel[data-method='gradient_x_input']")
    assert page.locator("#heatmaps .panel").count() == 2
    model = normxlogit.load(site["model"])
    for method in ("normxlogit", "gradient_x_input"):
        expected = model.explain(TEXT, method=method, target="all")
        rows = _panel_scores(page, method)
        assert len(rows) == 2  # one signed row per label
        np.testing.assert_allclose(np.array(rows).T, expected.scores, rtol=1e-5, atol=1e-7)
        tokens = page.eval_on_selector_all(
            f".panel[data-method='{method}'] .heatmap-row:first-child .tok",
            "nodes => nodes.map(n => n.textContent)",
        )
        assert tokens == expected.token_texts
    probability = page.locator(".prob").first.inner_text()
    assert expected.label in probability

    for box in page.query_selector_all("#metrics input"):
        box.set_checked(box.get_attribute("value") in {"comp_cd", "suff_cd"})
    page.click("#evaluate-btn")
    page.wait_for_selector(".chart[data-metric='suff_cd'] canvas")
    assert page.locator("#curves .chart").count() == 2
    explanations = {m: [model.explain(TEXT, method=m)] for m in ("normxlogit", "gradient_x_input")}
    result = normxlogit.evaluate(model, explanations, metrics=["comp_cd", "suff_cd"])
    summary = result.summary().frame
    cells = page.eval_on_selector_all(
        "#summary tbody td[data-metric]",
        "cells => cells.map(c => "
        "[c.parentElement.dataset.method, c.dataset.metric, Number(c.dataset.value)])",
    )
    assert len(cells) == 4
    for method, metric, value in cells:
        assert value == pytest.approx(summary.loc[method, metric], rel=1e-6)
    curve = page.get_attribute(".chart[data-metric='comp_cd']", "data-curve")
    import json

    drawn = json.loads(curve)
    expected_curve = result.curves()
    normx = expected_curve[
        (expected_curve["metric"] == "comp_cd") & (expected_curve["method"] == "normxlogit")
    ]
    assert drawn["methods"]["normxlogit"] == pytest.approx(normx["value"].tolist())
    # the table sorts itself: comp_cd first (higher is better), then by suff_cd (lower)
    order = page.eval_on_selector_all(
        "#summary tbody tr", "rows => rows.map(r => r.dataset.method)"
    )
    assert order == list(summary["comp_cd"].sort_values(ascending=False).index)
    page.click("#summary th[data-metric='suff_cd']")
    order = page.eval_on_selector_all(
        "#summary tbody tr", "rows => rows.map(r => r.dataset.method)"
    )
    assert order == list(summary["suff_cd"].sort_values(ascending=True).index)

    # which tokens comprehensiveness removes at ratio 0.5
    page.select_option("#perturb-metric", "comp_cd")
    page.select_option("#perturb-method", "normxlogit")
    page.fill("#perturb-ratio", "0.5")
    page.dispatch_event("#perturb-ratio", "input")
    page.wait_for_selector("#perturb-ratio-value:has-text('0.5')")
    page.wait_for_function(
        f"document.querySelectorAll('#perturbed-tokens .tok.perturbed').length === "
        f"{int(len(explanations['normxlogit'][0].tokens) * 0.5)}"
    )
    from normxlogit.evaluation.hard import perturbed_tokens

    mask = perturbed_tokens(model, explanations["normxlogit"][0], "comp_cd", 0.5)
    shown = page.eval_on_selector_all(
        "#perturbed-tokens .tok", "nodes => nodes.map(n => n.classList.contains('perturbed'))"
    )
    assert shown == mask
    assert _screenshot(page, "serve-explain.png").stat().st_size > 10_000


def test_a_contrast_makes_the_rows_why_rather_than(page, site):
    page.fill("#text", TEXT)
    _choose_methods(page, {"normxlogit", "attention"})
    page.select_option("#target", "positive")
    page.fill("#contrast", "negative")
    page.click("#explain-btn")
    page.wait_for_selector(".panel[data-method='normxlogit']")
    names = page.eval_on_selector_all(
        ".panel[data-method='normxlogit'] .row-name", "nodes => nodes.map(n => n.textContent)"
    )
    assert names == ["positive vs negative"]
    expected = normxlogit.load(site["model"]).explain(
        TEXT, method="normxlogit", target="positive", contrast="negative"
    )
    (row,) = _panel_scores(page, "normxlogit")
    np.testing.assert_allclose(row, expected.scores, rtol=1e-5, atol=1e-7)
    assert "nothing to contrast" in page.locator("#method-errors").inner_text()
    _screenshot(page, "contrast.png")


def test_the_layer_slider_shows_each_layer(page, site):
    page.fill("#text", TEXT)
    _choose_methods(page, {"logat"})
    page.select_option("#layer", "all")
    page.click("#explain-btn")
    page.wait_for_selector(".panel[data-method='logat'] .layer-slider")
    expected = normxlogit.load(site["model"]).explain(TEXT, method="logat", layer="all")
    for layer in (0, 1, 2):
        page.fill(".layer-slider", str(layer))
        page.dispatch_event(".layer-slider", "input")
        rows = _panel_scores(page, "logat")
        np.testing.assert_allclose(rows[0], expected.scores[layer], rtol=1e-5, atol=1e-7)
    assert page.locator(".layer-matrix tr").count() == 1 + 3  # header + a row per layer


def test_a_decoder_generation_shows_the_step_by_token_matrix(page):
    page.select_option("#model", "tiny-decoder")
    page.wait_for_selector("#model-status:has-text('causal_lm')")
    assert page.is_visible("#generate")
    page.fill("#text", "the film was a")
    page.fill("#max-new-tokens", "4")
    _choose_methods(page, {"logat"})
    page.click("#explain-btn")
    page.wait_for_selector(".panel[data-method='logat'] table.steps")
    expected = explainable("llama", "causal_lm").explain(
        "the film was a", generate=True, max_new_tokens=4, method="logat"
    )
    assert page.locator("table.steps tbody tr").count() == expected.steps
    assert page.inner_text(".generated-text") == expected.generated_text
    page.select_option(".colour-by", "step:1")
    scores = page.eval_on_selector_all(
        ".coloured .tok",
        "nodes => nodes.map(n => n.dataset.score === '' ? null : Number(n.dataset.score))",
    )
    seen = expected.prompt_length + 1
    np.testing.assert_allclose(scores[:seen], expected.scores[1, :seen], rtol=1e-5, atol=1e-7)
    assert all(score is None for score in scores[seen:])


def test_steps_not_explained_are_marked_and_not_offered(page):
    """A generation explained at some steps (a bench store's): the others keep their row,
    marked, and the colour-by choice offers only the explained ones."""
    from normxlogit.serve.payloads import generation_payload

    explanation = explainable("llama", "causal_lm").explain(
        "the film was a", continuation=[2143, 1998, 2009, 2001, 1037, 2204], explain_steps=[0, 5]
    )
    drawn = page.evaluate(
        """(data) => {
          const panel = document.createElement("div");
          document.body.append(panel);
          drawGeneration(panel, data);
          return {
            options: [...panel.querySelectorAll(".colour-by option")].map((o) => o.value),
            marked: [...panel.querySelectorAll("table.steps tbody tr")].map(
              (r) => r.textContent.includes("not explained")),
          };
        }""",
        generation_payload(explanation),
    )
    assert [o for o in drawn["options"] if o.startswith("step:")] == ["step:0", "step:5"]
    assert drawn["marked"] == [False, True, True, True, True, False]


def test_a_regressor_greys_out_the_curves_it_cannot_have(page):
    """No page metric applies to a regression model: every box is greyed out with its
    reason, Run curves is off, and the note names what does score a regressor."""
    page.select_option("#model", "tiny-regressor")
    page.wait_for_selector("#model-status:has-text('regression')")
    # every curve but the sanity metrics' and the segment checks' (which read the output
    # itself) needs class probabilities or a distribution
    boxes = [
        box
        for box in page.query_selector_all("#metrics input")
        if not box.get_attribute("value").startswith(("sanity_", "segment_"))
    ]
    assert boxes and all(box.is_disabled() and not box.is_checked() for box in boxes)
    title = page.get_attribute("#metrics label:has(input[value='comp_cd'])", "title")
    assert "class probabilities" in title
    assert page.is_enabled("#evaluate-btn")  # the sanity curves remain for a regressor
    assert page.is_enabled("#metrics input[value='sanity_spearman']")
    assert "comp_acc / suff_acc" in page.inner_text("#metrics-note")
    _choose_methods(page, {"normxlogit"})
    page.click("#explain-btn")  # explaining a regressor works as ever
    page.wait_for_selector(".panel[data-method='normxlogit']")
    _screenshot(page, "serve-regressor.png")
    page.select_option("#model", site_model_name(page))
    page.wait_for_selector("#model-status:has-text('classification')")
    assert page.is_enabled("#metrics input[value='comp_cd']") and page.is_enabled("#evaluate-btn")
    assert page.is_hidden("#metrics-note")


def site_model_name(page) -> str:
    """The tiny classifier's name in the model list (its folder's name)."""
    return page.eval_on_selector("#model option", "option => option.value")


def test_long_work_shows_progress_and_the_cancel_button_stops_it(slow_method, page):
    """A method of 500 forward passes: the bar counts them, Cancel stops it, and the page
    goes on working."""
    page.fill("#text", TEXT)
    _choose_methods(page, {"slow_probe"})
    page.click("#explain-btn")
    message = "document.querySelector('#explain-progress .message').textContent"
    page.wait_for_function(f"/forward pass [0-9]+/.test({message})")
    assert page.is_disabled("#explain-btn")
    page.click("#explain-progress .cancel")
    page.wait_for_selector("#explain-error:has-text('cancelled')")
    assert page.is_hidden("#explain-progress") and page.is_enabled("#explain-btn")
    assert len(slow_method) < 100
    _choose_methods(page, {"l2_norm"})
    page.click("#explain-btn")
    page.wait_for_selector(".panel[data-method='l2_norm']")


def test_bad_input_shows_a_message_not_a_trace(page):
    page.fill("#text", "")
    page.click("#explain-btn")
    page.wait_for_selector("#explain-error:not([hidden])")
    message = page.inner_text("#explain-error")
    assert message.startswith("text:") and "Traceback" not in message


def test_browse_bench_results_down_to_an_explanation(page):
    page.click(".tab[data-tab='bench-tab']")
    page.wait_for_selector("#bench-summary td[data-metric='comp_cd']")
    page.wait_for_selector("#bench-tables table.report")
    # each number with its standard error (a tiny model's values may all print alike, so
    # no cell need be marked best: ranks compare values as printed)
    assert page.locator("#bench-tables table.report td", has_text="±").count() > 0
    page.wait_for_function(
        "[...document.querySelectorAll('#bench-figures img')].some(i => i.naturalWidth > 100)"
    )
    assert page.locator("#bench-curves .chart").count() == 3
    page.click("#bench-summary tr[data-method='normxlogit'] td[data-metric='comp_cd']")
    page.wait_for_selector("#drill-instances tbody tr")
    assert page.locator("#drill-instances tbody tr").count() == 4
    page.click("#drill-instances tbody tr >> nth=0")
    page.wait_for_selector("#drill-explanation .panel .heatmap-row")
    assert "instance" in page.inner_text("#drill-explanation h3")
    _screenshot(page, "serve-bench.png")


SEGMENTED = "The plot is thin. The <b>acting</b> is wonderful! I would see it again."


def _segment_chips(page, method: str) -> list[dict]:
    return page.eval_on_selector_all(
        f".panel[data-method='{method}'] .seg",
        "nodes => nodes.map(n => ({text: n.querySelector('.seg-text').textContent, "
        "score: Number(n.dataset.score), background: n.style.backgroundColor, "
        "markup: n.querySelectorAll('b').length}))",
    )


def _marked_tokens(page, method: str) -> list[int]:
    return page.eval_on_selector_all(
        f".panel[data-method='{method}'] .tok.in-segment",
        "nodes => nodes.map(n => Number(n.dataset.index))",
    )


def test_sentences_show_beside_the_tokens_and_hovering_one_marks_its_tokens(page, site):
    """Segments by sentence (issue 42): each segment's text with its score on the tokens'
    colour scale, hovering (or clicking) one marks its tokens, and the curves take
    segments as their units."""
    page.fill("#text", SEGMENTED)
    _choose_methods(page, {"normxlogit", "leave_one_out"})
    page.dispatch_event("#methods input[value='leave_one_out']", "change")
    assert page.inner_text("#methods-note").startswith("leave_one_out scores segments: under")
    page.select_option("#segments-mode", "sentences")
    assert page.is_hidden("#methods-note") and page.is_hidden("#segments-box")
    page.click("#explain-btn")
    page.wait_for_selector(".panel[data-method='leave_one_out'] .seg")
    model = normxlogit.load(site["model"])
    expected = {
        m: model.explain(SEGMENTED, method=m, segments="sentences")
        for m in ("normxlogit", "leave_one_out")
    }
    for method, explanation in expected.items():
        chips = _segment_chips(page, method)
        assert [c["text"] for c in chips] == explanation.segments.texts
        assert chips[1]["text"] == "The <b>acting</b> is wonderful!"  # as text, not markup
        assert not any(c["markup"] for c in chips)
        np.testing.assert_allclose(
            [c["score"] for c in chips], explanation.segments.scores, rtol=1e-5, atol=1e-7
        )
        for chip, score in zip(chips, explanation.segments.scores, strict=True):
            blue, red = "30, 120, 230", "220, 50, 47"
            assert (blue if score >= 0 else red) in chip["background"]
    members = expected["normxlogit"].segments.token_segments
    page.hover(".panel[data-method='normxlogit'] .seg[data-segment='1']")
    assert _marked_tokens(page, "normxlogit") == [i for i, s in enumerate(members) if s == 1]
    assert _marked_tokens(page, "leave_one_out") == []  # only the hovered panel's tokens
    _screenshot(page, "serve-segments.png")
    page.mouse.move(5, 5)
    assert _marked_tokens(page, "normxlogit") == []
    page.click(".panel[data-method='normxlogit'] .seg[data-segment='2']")  # kept after hover
    page.hover(".panel[data-method='normxlogit'] .seg[data-segment='0']")
    page.mouse.move(5, 5)
    assert _marked_tokens(page, "normxlogit") == [i for i, s in enumerate(members) if s == 2]

    assert page.is_visible("#unit-field")
    page.select_option("#unit", "segment")
    for box in page.query_selector_all("#metrics input"):
        box.set_checked(box.get_attribute("value") == "comp_cd")
    page.click("#evaluate-btn")
    page.wait_for_selector("#summary td[data-metric='comp_cd']")
    from normxlogit.evaluation import Protocol

    made = {m: [e] for m, e in expected.items()}
    summary = normxlogit.evaluate(
        model, made, metrics=["comp_cd"], protocol=Protocol(unit="segment")
    ).summary()
    cells = page.eval_on_selector_all(
        "#summary tbody td[data-metric]",
        "cells => cells.map(c => [c.parentElement.dataset.method, Number(c.dataset.value)])",
    )
    for method, value in cells:
        assert value == pytest.approx(summary.frame.loc[method, "comp_cd"], rel=1e-6)
    assert page.is_hidden("#perturbation")  # it shows tokens, not segments, perturbed


def test_segments_one_per_line_from_the_context_box(page, site):
    page.fill("#text", SEGMENTED)
    _choose_methods(page, {"normxlogit"})
    page.select_option("#segments-mode", "lines")
    page.click("#explain-btn")  # an empty box: one line saying what to do
    page.wait_for_selector("#explain-error:not([hidden])")
    assert page.inner_text("#explain-error") == (
        "the segments box is empty: list the text's segments one per line, or choose sentences"
    )
    page.fill("#segments-box", "The plot is thin.\n\n  I would see it again.  \n")
    page.select_option("#segment-reduce", "max")
    page.click("#explain-btn")
    page.wait_for_selector(".panel[data-method='normxlogit'] .seg")
    expected = normxlogit.load(site["model"]).explain(
        SEGMENTED,
        segments=["The plot is thin.", "I would see it again."],
        segment_reduce="max",
    )
    chips = _segment_chips(page, "normxlogit")
    assert [c["text"] for c in chips] == expected.segments.texts
    np.testing.assert_allclose([c["score"] for c in chips], expected.segments.scores, rtol=1e-5)
    assert "segments (max)" in page.inner_text(".panel[data-method='normxlogit'] .segments")
    page.fill("#segments-box", "not in the text")
    page.click("#explain-btn")
    page.wait_for_selector("#explain-error:has-text('segment 1')")
    assert "is not in the text" in page.inner_text("#explain-error")


def test_a_segment_past_the_truncation_shows_not_read(page, site):
    """T11 (round ten): a segment the model never read showed "n/a" like any missing
    score; it says why."""
    page.fill("#text", "good " * 600 + "I would see it again.")
    _choose_methods(page, {"normxlogit"})
    page.select_option("#segments-mode", "lines")
    page.fill("#segments-box", "good good\nI would see it again.")
    page.click("#explain-btn")
    page.wait_for_selector(".panel[data-method='normxlogit'] .seg")
    shown = page.eval_on_selector_all(
        ".panel[data-method='normxlogit'] .seg-score", "nodes => nodes.map(n => n.textContent)"
    )
    assert shown[1] == "not read" and shown[0] not in ("not read", "n/a")


def test_a_generations_segments_follow_the_colour_by_choice(page):
    """A generation's segments show one step's segment scores, or their aggregate."""
    from normxlogit.serve.payloads import generation_payload

    explanation = explainable("llama", "causal_lm").explain(
        "The film opens slowly. Then it soars.",
        continuation=[2143, 1998, 2009],
        segments="sentences",
    )
    drawn = page.evaluate(
        """(data) => {
          const panel = document.createElement("div");
          document.body.append(panel);
          drawGeneration(panel, data);
          const scores = () => [...panel.querySelectorAll(".seg")]
            .map((s) => Number(s.dataset.score));
          const select = panel.querySelector(".colour-by");
          const shown = { [select.value]: scores() };
          select.value = "step:2";
          select.dispatchEvent(new Event("change"));
          shown[select.value] = scores();
          const second = panel.querySelector(".seg[data-segment='1']");
          second.dispatchEvent(new MouseEvent("mouseenter"));
          shown.marked = [...panel.querySelectorAll(".tok.in-segment")]
            .map((t) => Number(t.dataset.index));
          return shown;
        }""",
        generation_payload(explanation),
    )
    steps = explanation.segments.scores
    np.testing.assert_allclose(drawn["agg:sum"], steps.sum(0), rtol=1e-5)
    np.testing.assert_allclose(drawn["step:2"], steps[2], rtol=1e-5)
    members = explanation.segments.token_segments
    assert drawn["marked"] == [i for i, s in enumerate(members) if s == 1]


def test_what_the_library_warns_about_is_shown_under_the_result(page):
    """A warning (here: a text longer than the model reads) went to the server's log
    only; the page lists it under the progress box, as text."""
    page.fill("#text", "a <b>long</b> film " * 200)  # under the page's 4,000 characters
    _choose_methods(page, {"normxlogit"})
    page.click("#explain-btn")
    page.wait_for_selector(".panel[data-method='normxlogit']")
    notes = page.locator(".job-notes li").all_inner_texts()
    assert any(n.startswith("the text has") and "tokens but the model reads" in n for n in notes)
    assert page.locator(".job-notes b").count() == 0  # text, never markup
    _screenshot(page, "page-warnings.png")
    page.fill("#text", TEXT)
    page.click("#explain-btn")
    page.wait_for_selector(".job-notes", state="hidden")


def test_an_example_with_its_own_segments_fills_the_segments_box(page):
    """A data file's segments came to the page without them: picking the example lists
    them one per line, and the explanation scores those segments."""
    page.select_option("#dataset", "passages.jsonl")
    page.wait_for_selector("#example:not([disabled])")
    page.select_option("#example", "0")
    assert page.input_value("#segments-mode") == "lines"
    assert page.input_value("#segments-box") == "The plot is thin.\nThe acting is wonderful!"
    _choose_methods(page, {"normxlogit"})
    page.click("#explain-btn")
    page.wait_for_selector(".panel[data-method='normxlogit']")
    shown = page.locator(".panel[data-method='normxlogit']").inner_text()
    assert "The acting is wonderful!" in shown
