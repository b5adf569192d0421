"""The standalone HTML export shows an explanation's segments table (issue 42): each
segment's text, escaped, with its score per target on the tokens' colour scale."""

from __future__ import annotations

import html
import re

from normxlogit.render.colors import rgba, scale
from tests.conftest import sharp_model

TEXT = "The plot is <b>thin</b> & slow. The acting is wonderful!"


def test_the_export_shows_the_segments_escaped_with_their_scores():
    explanation = sharp_model().explain(TEXT, segments="sentences")
    page = explanation.to_html()
    texts = explanation.segments.texts
    assert texts == ["The plot is <b>thin</b> & slow.", "The acting is wonderful!"]
    table = re.search(r'<table class="segments">.*?</table>', page).group(0)
    assert "segments (sum)" in table
    for text, score in zip(texts, explanation.segments.scores, strict=True):
        assert f'<td class="segment">{html.escape(text)}</td>' in table
        red, green, blue, alpha = rgba(float(score), scale(explanation.segments.scores))
        assert (
            f'<td class="score" style="background: rgba({red},{green},{blue},{alpha})">'
            f"{score:+.4g}</td>"
        ) in table
    assert "<b>thin</b>" not in page  # user text is data, never markup


def test_every_label_has_its_own_column_and_no_segments_no_table():
    model = sharp_model()
    explanation = model.explain(TEXT, target="all", segments=["The acting is wonderful!"])
    table = re.search(r'<table class="segments">.*?</table>', explanation.to_html()).group(0)
    headers = re.findall(r"<th>(.*?)</th>", table)
    assert headers == [*explanation.column_titles, "segment"]
    assert table.count('<td class="score"') == len(explanation.column_titles)
    assert 'class="segments"' not in model.explain(TEXT).to_html()


def test_a_generations_page_and_terminal_show_its_segments_by_step():
    """A generation with segments: a segment x step table (each explained step's scores,
    then their sum over the steps), escaped, in the page and in the terminal; wider than
    the terminal's few step columns, the terminal shows the sum alone."""
    import io

    import numpy as np
    from rich.console import Console

    import normxlogit
    from normxlogit.explanations.generation import aggregate_steps
    from tests.conftest import build_model, fresh_tokenizer

    lm = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()))
    made = lm.explain(TEXT, generate=True, max_new_tokens=3, segments="sentences")
    page = made.to_html()
    table = re.search(r'<table class="segments">.*?</table>', page).group(0)
    headers = re.findall(r"<th>(.*?)</th>", table)
    assert len(headers) == made.steps + 2 and headers[-2:] == ["sum over steps", "segment"]
    total = aggregate_steps(made.segments.scores, "sum")
    assert f"{total[0]:+.4g}</td>" in table
    assert f'<td class="segment">{html.escape(made.segments.texts[0])}</td>' in table
    assert "<b>thin</b>" not in page
    shown = io.StringIO()
    Console(file=shown, width=200).print(made)
    assert "sum over steps" in shown.getvalue() and "wonderful" in shown.getvalue()
    longer = lm.explain(TEXT, generate=True, max_new_tokens=9, segments="sentences")
    shown = io.StringIO()
    Console(file=shown, width=200).print(longer)
    assert "step(i).segments_frame()" in shown.getvalue()
    assert np.isfinite(total).all()
