"""Standalone HTML heatmaps: one row per label (and layer), signed colours (paper fig. 1a).

The page has no external assets, so it opens from a file in any browser.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .colors import NEGATIVE, POSITIVE, display_text, rgba, scale, segment_columns

if TYPE_CHECKING:
    from ..explanations.explanation import Explanation

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
.explanation { margin-bottom: 2.5rem; }
.meta { color: #555; font-size: 0.9rem; margin: 0.2rem 0 0.8rem; }
table.heatmap { border-collapse: collapse; }
table.heatmap th { text-align: right; padding-right: 0.8rem; font-weight: 500;
  color: #444; white-space: nowrap; }
.tok { display: inline-block; padding: 0.15rem 0.25rem; margin: 1px; border-radius: 3px;
  font-family: ui-monospace, monospace; }
.special { color: #888; }
.legend span { padding: 0.1rem 0.5rem; margin-right: 0.5rem; border-radius: 3px; }
table.segments { border-collapse: collapse; margin-top: 0.8rem; }
table.segments caption { text-align: left; color: #555; font-size: 0.9rem; }
table.segments th, table.segments td { padding: 0.15rem 0.5rem; text-align: left; }
table.segments td.score { font-family: ui-monospace, monospace; text-align: right; }
"""


def _cell(text: str, score: float, peak: float, special: bool) -> str:
    red, green, blue, alpha = rgba(score, peak)
    shown = html.escape(display_text(text))
    classes = "tok special" if special else "tok"
    return (
        f'<span class="{classes}" title="{score:.4g}" '
        f'style="background: rgba({red},{green},{blue},{alpha})">{shown}</span>'
    )


def _segments(explanation: Explanation) -> str:
    """One row per segment: its score per target (per layer, titled as the heatmap's
    rows are) on a coloured background, each column scaled to its largest absolute
    score, and its text (escaped)."""
    if explanation.segments is None:
        return ""
    titles, scores, _ = segment_columns(
        explanation, lambda layer, title: f"layer {layer} · {title}"
    )
    segments = explanation.segments
    return segments_table(segments.texts, titles, scores, segments.how, segments.token_segments)


def segments_table(
    texts: list[str],
    titles: list[str],
    scores: np.ndarray,
    how: str,
    token_segments: Sequence[int | None] | None = None,
) -> str:
    """The segments table: a row per segment (its text escaped, never markup), a column
    per title, each scaled to its largest absolute score; "not read" for a segment none
    of whose tokens the model read (``token_segments``: past the truncation), n/a where
    another score is not finite."""
    peaks = [scale(scores[:, k]) for k in range(scores.shape[1])]
    head = "".join(f"<th>{html.escape(display_text(title))}</th>" for title in titles)
    read = None if token_segments is None else set(token_segments)
    rows = []
    for index, text in enumerate(texts):
        cells = []
        for score, peak in zip(scores[index], peaks, strict=True):
            if read is not None and index not in read:
                cells.append('<td class="score">not read</td>')
                continue
            if not np.isfinite(score):
                cells.append('<td class="score">n/a</td>')
                continue
            red, green, blue, alpha = rgba(float(score), peak)
            cells.append(
                f'<td class="score" style="background: rgba({red},{green},{blue},{alpha})">'
                f"{score:+.4g}</td>"
            )
        shown = html.escape(display_text(text))
        rows.append(f'<tr>{"".join(cells)}<td class="segment">{shown}</td></tr>')
    return (
        f'<table class="segments"><caption>segments ({html.escape(how)})'
        f"</caption><tr>{head}<th>segment</th></tr>{''.join(rows)}</table>"
    )


def _explanation(explanation: Explanation, index: int) -> str:
    scores = explanation.scores_3d()
    special = explanation.special or [False] * len(explanation.tokens)
    layers = explanation.layers if explanation.has_layers else [None]
    rows = []
    for li, layer in enumerate(layers):
        for ti, title in enumerate(explanation.column_titles):
            row = scores[li, :, ti]
            peak = scale(row)
            cells = "".join(
                _cell(tok, float(s), peak, sp)
                for tok, s, sp in zip(explanation.token_texts, row, special, strict=True)
            )
            shown = display_text(title)
            name = html.escape(shown if layer is None else f"layer {layer} · {shown}")
            rows.append(f"<tr><th>{name}</th><td>{cells}</td></tr>")
    if explanation.value is not None:
        outcome = f"{explanation.label_text} = {explanation.value:.3f}"
    else:
        outcome = ", ".join(
            f"{display_text(explanation.text_of(k))}: {v:.3f}" for k, v in explanation.probs.items()
        )
    shown_settings = dict(explanation.settings)
    for key in ("target", "contrast"):  # vocabulary tokens, as text
        if isinstance(shown_settings.get(key), list):
            shown_settings[key] = [explanation.text_of(t) for t in shown_settings[key]]
    settings = ", ".join(f"{k}={v}" for k, v in shown_settings.items())
    return (
        f'<div class="explanation" id="explanation-{index}">'
        f"<h2>prediction: {html.escape(display_text(explanation.label_text))}</h2>"
        f'<p class="meta">method <b>{html.escape(explanation.method)}</b>'
        f" · model {html.escape(explanation.model)} · {html.escape(outcome)}"
        f"{' · ' + html.escape(settings) if settings else ''}</p>"
        + (
            '<p class="meta">not explained: its target is its contrast (the difference of '
            "an output with itself is zero at every token)</p>"
            if explanation.contrast_is_target
            else ""
        )
        + f'<table class="heatmap">{"".join(rows)}</table>{_segments(explanation)}</div>'
    )


def render_html(explanations: Sequence[Explanation], title: str = "normxlogit explanations") -> str:
    """A whole HTML page for the explanations."""
    legend = (
        '<p class="legend">'
        f'<span style="background: rgba({",".join(map(str, POSITIVE))},0.6)">for the label</span>'
        f'<span style="background: rgba({",".join(map(str, NEGATIVE))},0.6)">against it</span>'
        "each row is scaled to its largest absolute score; hover a token for its score</p>"
    )
    body = "".join(_explanation(e, i) for i, e in enumerate(explanations))
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{legend}{body}</body></html>\n"
    )
