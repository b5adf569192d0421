"""The generation page in a real browser (Debian's chromium, driven by Playwright): the
select box recolours the text by the chosen step or aggregate."""

from __future__ import annotations

import shutil

import pytest

from ..conftest import explainable

PROMPT = "the film was a"
CONTINUATION = [2143, 1998, 2009, 2001, 1037]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (make setup installs it)"
)


@pytest.fixture(scope="module")
def page_of(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    model = explainable("llama", "causal_lm")
    explanation = model.explain(PROMPT, continuation=CONTINUATION, method="logat")
    path = tmp_path_factory.mktemp("page") / "generation.html"
    path.write_text(explanation.to_html())
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(path.as_uri())
        yield page, explanation
        browser.close()


def _backgrounds(page) -> list[str]:
    return page.eval_on_selector_all(
        ".coloured .tok", "nodes => nodes.map(n => getComputedStyle(n).backgroundColor)"
    )


def test_the_select_box_offers_every_aggregate_and_step(page_of):
    page, explanation = page_of
    options = page.eval_on_selector_all(".colour-by option", "nodes => nodes.map(n => n.value)")
    assert options[:5] == ["sum over steps", "mean over steps", "max over steps",
                           "absmax over steps", "normalized over steps"]  # fmt: skip
    assert options[5:] == [f"step {s}" for s in range(explanation.steps)]
    assert page.locator("table.steps tbody tr").count() == explanation.steps


def test_a_chosen_step_colours_only_what_it_sees(page_of):
    page, explanation = page_of
    seen = explanation.prompt_length + 2
    page.select_option(".colour-by", "step 2")
    colours = _backgrounds(page)
    assert len(colours) == len(explanation.tokens)
    transparent = "rgba(0, 0, 0, 0)"
    assert all(colour != transparent for colour in colours[:seen] if colour)
    assert all(colour == transparent for colour in colours[seen:])
    current = page.eval_on_selector_all(
        ".coloured .tok", "nodes => nodes.map(n => n.classList.contains('current'))"
    )
    assert current.index(True) == seen and current.count(True) == 1
    titles = page.eval_on_selector_all(".coloured .tok", "nodes => nodes.map(n => n.title)")
    assert titles[seen:] == ["not seen"] * (len(titles) - seen)
    # back to an aggregate: every token but the last is seen by some step
    page.select_option(".colour-by", "sum over steps")
    colours = _backgrounds(page)
    assert colours[-1] == transparent
    assert not any(current for current in page.eval_on_selector_all(
        ".coloured .tok", "nodes => nodes.map(n => n.classList.contains('current'))"
    ))  # fmt: skip
