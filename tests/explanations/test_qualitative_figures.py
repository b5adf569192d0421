"""scripts/qualitative_figures.py: top-k selection, the user's text tokens, the drawings."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from ..conftest import explainable, prompted_llama

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "qualitative_figures.py"


@pytest.fixture(scope="module")
def figures():
    spec = importlib.util.spec_from_file_location("qualitative_figures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def prompted():
    """A tiny random LLaMA read as a prompted classifier, its text in a chat prompt."""
    return prompted_llama(
        {"negative": "bad", "positive": "good"}, "classify the text", "Text: {text} (end)"
    )


def test_top_fraction_rounds_up_and_breaks_ties_by_position(figures):
    scores = np.array([0.1, 0.9, 0.5, 0.9, np.nan, 0.2, 0.0, 0.3, 0.4, 0.6, 0.7])
    assert np.flatnonzero(figures.top_fraction(scores, 0.1)).tolist() == [1, 3]
    assert figures.top_fraction(scores, 0.01).sum() == 1
    assert figures.top_fraction(np.full(3, np.nan), 0.5).sum() == 2
    assert figures.top_fraction(np.zeros(0), 0.1).size == 0


def test_user_text_tokens_leave_out_special_tokens(figures):
    model = explainable("bert", "classification")
    explanation = model.explain("a gripping movie .", method="attention")
    tokens = figures.user_text_tokens(model, explanation)
    assert tokens.positions == list(range(1, len(explanation.tokens) - 1))
    assert tokens.spans[0] == (0, 1) and tokens.spans[-1] == (17, 18)


def test_user_text_tokens_leave_out_the_chat_prompt(figures, prompted):
    text = "never boring , visually engrossing ."
    explanation = prompted.explain(text, method="attention")
    tokens = figures.user_text_tokens(prompted, explanation)
    own = prompted.tokenizer.tokenize(text)
    assert [explanation.tokens[p] for p in tokens.positions] == own
    assert len(explanation.tokens) > len(own) + 6  # the template's tokens were there
    assert [text[a:b] for a, b in tokens.spans] == [t.lstrip("#") for t in own]


def test_flow_tokens_wraps_within_the_width(figures):
    tokens = ["word", " another", " token", ",", " and", " more", " text"] * 4
    placed = figures.flow_tokens(tokens, 120.0, 10)
    assert max(p.line for p in placed) > 0
    assert all(p.x + p.width <= 120.0 + 1e-6 for p in placed)
    assert all(p.x == 0 for p in placed if p.index and p.line != placed[p.index - 1].line)
    assert placed[1].text == "another"  # a leading space is advance, not glyphs


def test_figures_are_written(figures, prompted, tmp_path):
    text = "a gripping movie , played with performances that are all understated ."
    methods = [
        figures.MethodSpec("attention", "Attention", "pi-soft", "#1f77b4"),
        figures.MethodSpec("grad_ellm", "Grad-ELLM", None, "#d62728"),
    ]
    explained = figures.explain_text(prompted, text, methods)
    start = text.index("played")
    record = figures.pisoft_figure(
        explained, methods, 0.2, tmp_path / "bars.png", "test", span=(start, len(text))
    )
    assert record["shown"] == text[start:]
    assert all(len(m["top"]) == record["top_count"] for m in record["methods"].values())
    rows = [("Signed", ["[CLS]", "a", "b"], np.array([0.5, -1.0, 0.2]), True)]
    rows.append(("Unsigned", ["[CLS]", "a", "b"], np.array([0.5, 1.0, 0.2]), False))
    figures.heatmap_figure(rows, "title", tmp_path / "rows.png")
    for name in ("bars.png", "rows.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_arguments_default_to_every_figure(figures):
    arguments = figures.parse_arguments([])
    assert arguments.figures is None and arguments.threads == 1
    assert arguments.output == figures.DEFAULT_OUTPUT
