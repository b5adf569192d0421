"""Rendering a generation explanation: a step x token heatmap (as Inseq draws one), and the
prompt and continuation coloured by one chosen step or by an aggregate over steps.

Cells a step cannot see (its own token and after) are blank, not white-as-zero; a step
left unexplained (``explain_steps=``) keeps its token and numbers, marked "not explained".
With segments, a segment x step table follows: each explained step's segment scores and
their sum over the steps.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from ..common.outputs import json_text
from .colors import NEGATIVE, POSITIVE, display_text, rgba
from .fitting import SCORE_WIDTH, SEGMENT_WIDTH, fits_beside_segment, fitting_chunks
from .html import segments_table

if TYPE_CHECKING:
    from ..explanations.generation import GenerationExplanation


def _peak(values: np.ndarray) -> float:
    finite = np.abs(values[np.isfinite(values)])
    peak = float(finite.max()) if finite.size else 0.0
    return peak if peak > 0 else 1.0


def _final_layer(explanation: GenerationExplanation) -> np.ndarray:
    """Scores ``[S, T]``: the last layer of a per-layer explanation."""
    return explanation.scores[:, -1] if explanation.has_layers else explanation.scores


def segment_columns(explanation: GenerationExplanation) -> list[tuple[str, np.ndarray]]:
    """The segment table's columns (final layer): each explained step's segment scores,
    titled by its number and token, then their sum over the steps (a segment no step
    scores: NaN)."""
    from ..explanations.generation import aggregate_steps

    scores = explanation.segments.scores
    if explanation.has_layers:
        scores = scores[:, -1]
    steps = explanation.steps_with_scores
    columns = [(f"{s} {step_title(explanation, s)}", scores[s]) for s in steps]
    return [*columns, ("sum over steps", aggregate_steps(scores[steps], "sum"))]


# ---------------------------------------------------------------------- terminal
def _blend(score: float, peak: float) -> str:
    red, green, blue, alpha = rgba(score, peak)
    mix = [round(255 + (c - 255) * alpha) for c in (red, green, blue)]
    return "rgb({},{},{})".format(*mix)


def _unexplained(explanation: GenerationExplanation, step: int) -> str:
    """Why a step's row is not coloured."""
    if explanation.is_explained(step):  # its token is its contrast's own
        return "not explained: its token is its contrast's (nothing to explain)"
    return "not explained"


def step_title(explanation: GenerationExplanation, step: int) -> str:
    """A step's token as text, and its contrast's (``Paris vs Rome``) if it has one."""
    token = display_text(explanation.token_texts[explanation.prompt_length + step]).strip()
    if not explanation.contrasts:
        return token
    other = (explanation.contrast_texts or explanation.contrasts)[step]
    return f"{token} vs {display_text(other).strip()}"


#: step scores shown beside each step, and how
_SHOWN_STEP_SCORES = (
    ("entropy", "H {:.2f}"),
    ("same_prefix_prob_diff", "\u0394p {:+.0%}"),  # what the contrastive scores explain
    ("kl_divergence", "KL {:.2f}"),
)


def step_numbers(explanation: GenerationExplanation, step: int) -> str:
    """What tells a user whether a step is worth explaining: its probability, the
    entropy, and the contrast's difference or KL divergence when there is one."""
    shown = [f"{explanation.step_probs[step]:.0%}"]
    for key, form in _SHOWN_STEP_SCORES:
        values = explanation.step_scores.get(key)
        if values:
            shown.append(form.format(values[step]))
    return ", ".join(shown)


def render_generation_rich(explanation: GenerationExplanation) -> Iterator:
    """Renderables for ``rich.print``: a header, then one line per step (the step's token
    and probability, then the tokens it sees coloured by their scores)."""
    header = Text()
    header.append(explanation.method, style="bold")
    header.append(f" on {explanation.model}: " if explanation.model else ": ")
    header.append(display_text(explanation.prompt).strip())
    header.append(" \u2192 ")
    header.append(display_text(explanation.generated_text), style="bold")
    if explanation.has_layers:  # the rows and segments below are one layer's, not each's
        header.append(f"  (layer {explanation.layers[-1]}, the last explained)", style="dim")
    yield header
    scores = _final_layer(explanation)
    table = Table(show_header=False, box=None, padding=(0, 1))
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")  # rich's default cuts a token to "…" where a wide one wraps
    for step in range(explanation.steps):
        shown = step_title(explanation, step)
        label = Text(f"{step} {shown} ({step_numbers(explanation, step)})")
        if not explanation.shown_as_explained(step):
            table.add_row(label, Text(_unexplained(explanation, step), style="dim italic"))
            continue
        end = explanation.prompt_length + step
        row = scores[step, :end]
        line = Text()
        peak = _peak(row)
        for token, score in zip(explanation.token_texts[:end], row, strict=True):
            line.append(display_text(token).strip(), style=f"black on {_blend(float(score), peak)}")
            line.append(" ")
        table.add_row(label, line)
    yield table
    if explanation.segments is not None:
        yield _segments_rich(explanation)


#: the most steps the terminal's segment table shows one by one
_TERMINAL_STEP_COLUMNS = 6


def _segments_rich(explanation: GenerationExplanation) -> SegmentStepTables:
    """Segments (rows) x explained steps (columns), each column on its own scale; the
    segments' text is user text, shown as data. Too wide for the console (up to
    :data:`_TERMINAL_STEP_COLUMNS` steps and their sum), the columns are split over tables
    that fit, each naming its segments, so no segment column is lost and no number cut
    (as the terminal's segments table of an explanation is laid out)."""
    return SegmentStepTables(explanation)


class SegmentStepTables:
    """The segment x step table of :func:`_segments_rich`, laid out for the console."""

    def __init__(self, explanation: GenerationExplanation) -> None:
        columns = segment_columns(explanation)
        self.title = f"segments ({explanation.segments.how})"
        if len(columns) > _TERMINAL_STEP_COLUMNS + 1:  # too many for a terminal: the sum alone
            columns = columns[-1:]
            self.title += "; each step's: to_html(), or step(i).segments_frame()"
        self.columns = columns
        self.peaks = [_peak(values) for _, values in columns]
        self.read = set(explanation.segments.token_segments)  # past the truncation: not read
        self.texts = explanation.segments.texts

    def table(self, chosen: list[int], title: str | None = None) -> Table:
        table = Table(box=None, padding=(0, 1), title=title or self.title)
        for column in chosen:
            table.add_column(
                self.columns[column][0], justify="right", no_wrap=True, min_width=SCORE_WIDTH
            )
        # wide characters fold: no text cut to "…"
        table.add_column("segment", overflow="fold", min_width=SEGMENT_WIDTH)
        for index, text in enumerate(self.texts):
            cells = []
            for column in chosen:
                score = float(self.columns[column][1][index])
                shown = f"{score:+.3f}" if np.isfinite(score) else "n/a"
                if index not in self.read:
                    shown = "not read"
                cells.append(Text(shown, style=f"black on {_blend(score, self.peaks[column])}"))
            table.add_row(*cells, Text(display_text(text)))
        return table

    def parts(self, fits: Callable[[Table], bool]) -> list[Table]:
        """One table if it fits, else the columns (steps, then their sum) in as many
        tables as fit beside the segment column, in order."""
        every = list(range(len(self.columns)))
        if fits(self.table(every)):
            return [self.table(every)]
        chunks = fitting_chunks(every, lambda run: fits(self.table(run)))
        return [
            self.table(chunk, f"{self.title}, part {number} of {len(chunks)}")
            for number, chunk in enumerate(chunks, 1)
        ]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.parts(fits_beside_segment(options.max_width))


# -------------------------------------------------------------------------- HTML
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
.meta { color: #555; font-size: 0.9rem; }
table.steps { border-collapse: collapse; font-family: ui-monospace, monospace; font-size: 0.85rem; }
table.steps th { font-weight: 500; color: #444; padding: 0.1rem 0.3rem; white-space: nowrap; }
table.steps thead th { writing-mode: vertical-rl; transform: rotate(180deg); text-align: left; }
table.steps td { min-width: 1.4rem; height: 1.4rem; border: 1px solid #f2f2f2; }
table.steps td.unexplained { color: #888; font-style: italic; font-family: system-ui; }
table.steps td.unseen { background: repeating-linear-gradient(45deg, #fafafa, #fafafa 3px,
  #eee 3px, #eee 5px); }
th.generated { color: #1e5aa0; }
.tok { display: inline-block; padding: 0.15rem 0.25rem; margin: 1px; border-radius: 3px;
  font-family: ui-monospace, monospace; }
.tok.generated { border-bottom: 2px solid #1e5aa0; }
.tok.current { outline: 2px solid #222; }
.generation { margin-bottom: 2.5rem; }
.legend span { padding: 0.1rem 0.5rem; margin-right: 0.5rem; border-radius: 3px; }
table.segments { border-collapse: collapse; margin-top: 0.5rem; font-size: 0.85rem; }
table.segments caption { text-align: left; color: #555; }
table.segments th, table.segments td { padding: 0.15rem 0.5rem; text-align: left; }
table.segments td.score { font-family: ui-monospace, monospace; text-align: right; }
"""

_SCRIPT = """
function colour(score, peak, data) {
  if (score === null) return 'transparent';
  const base = score >= 0 ? data.positive : data.negative;
  const alpha = Math.min(Math.abs(score) / peak, 1).toFixed(3);
  return `rgba(${base.join(',')},${alpha})`;
}
document.querySelectorAll('.generation').forEach(section => {
  const data = JSON.parse(section.querySelector('.generation-data').textContent);
  const choice = section.querySelector('.colour-by');
  function paint() {
    const values = data.views[choice.value];
    const finite = values.filter(v => v !== null).map(Math.abs);
    const peak = Math.max(...finite, 0) || 1;
    const step = choice.value.startsWith('step ') ? Number(choice.value.slice(5)) : null;
    const current = step === null ? -1 : data.prompt_length + step;
    section.querySelectorAll('.coloured .tok').forEach((node, i) => {
      node.style.background = colour(values[i], peak, data);
      node.title = values[i] === null ? 'not seen' : values[i].toPrecision(4);
      node.classList.toggle('current', i === current);
    });
  }
  choice.addEventListener('change', paint);
  paint();
});
"""


def _views(explanation: GenerationExplanation) -> dict[str, list[float | None]]:
    """What the text can be coloured by: each step, and each aggregate over steps."""
    from ..explanations.generation import STEP_AGGREGATIONS

    def listed(values: np.ndarray) -> list[float | None]:
        return [None if not np.isfinite(v) else round(float(v), 6) for v in values]

    scores = _final_layer(explanation)
    views = {f"{how} over steps": listed(explanation.aggregate(how)) for how in STEP_AGGREGATIONS}
    views.update({f"step {s}": listed(scores[s]) for s in explanation.steps_shown})
    return views


def _section(explanation: GenerationExplanation, index: int) -> str:
    scores = _final_layer(explanation)
    texts = [display_text(t) for t in explanation.token_texts]
    generated = explanation.prompt_length
    head = "".join(
        f'<th class="{"generated" if i >= generated else ""}">{html.escape(t)}</th>'
        for i, t in enumerate(texts[:-1])
    )
    rows = []
    for step in range(explanation.steps):
        label = html.escape(f"{step_title(explanation, step)} ({step_numbers(explanation, step)})")
        if not explanation.shown_as_explained(step):
            why = html.escape(_unexplained(explanation, step))
            rows.append(
                f'<tr><th class="generated">{label}</th>'
                f'<td class="unexplained" colspan="{len(texts) - 1}">{why}</td></tr>'
            )
            continue
        end = generated + step
        row = scores[step]
        peak = _peak(row[:end])
        cells = []
        for position in range(len(texts) - 1):
            if position >= end:
                cells.append('<td class="unseen"></td>')
                continue
            red, green, blue, alpha = rgba(float(row[position]), peak)
            cells.append(
                f'<td title="{row[position]:.4g}" '
                f'style="background: rgba({red},{green},{blue},{alpha})"></td>'
            )
        rows.append(f'<tr><th class="generated">{label}</th>{"".join(cells)}</tr>')
    views = _views(explanation)
    options = "".join(
        f'<option value="{html.escape(name)}"{" selected" if i == 0 else ""}>'
        f"{html.escape(name)}</option>"
        for i, name in enumerate(views)
    )
    tokens = "".join(
        f'<span class="tok{" generated" if i >= generated else ""}">{html.escape(t)}</span>'
        for i, t in enumerate(texts)
    )
    data = {
        "views": views,
        "prompt_length": generated,
        "positive": list(POSITIVE),
        "negative": list(NEGATIVE),
    }
    payload = json_text(data).replace("</", "<\\/")
    layer = " · final layer" if explanation.has_layers else ""
    how = "generated greedily" if explanation.generated_by_model else "given continuation"
    return (
        f'<div class="generation" id="generation-{index}">'
        f"<h2>{html.escape(display_text(explanation.prompt))} \u2192 "
        f"{html.escape(display_text(explanation.generated_text))}</h2>"
        f'<p class="meta">method <b>{html.escape(explanation.method)}</b> · model '
        f"{html.escape(explanation.model)} · {explanation.steps} steps{_explained(explanation)}"
        f"{layer} · {how}</p>"
        '<h3>Text coloured by <select class="colour-by">' + options + "</select></h3>"
        f'<p class="coloured">{tokens}</p>'
        "<h3>Steps (rows) x tokens (columns)</h3>"
        f'<table class="steps"><thead><tr><th></th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{_segments_html(explanation)}"
        f'<script type="application/json" class="generation-data">{payload}</script></div>'
    )


def _segments_html(explanation: GenerationExplanation) -> str:
    """Segments (rows) x explained steps (columns), each column scaled to its largest
    absolute score, the segments' text escaped."""
    if explanation.segments is None:
        return ""
    columns = segment_columns(explanation)
    scores = np.stack([values for _, values in columns], axis=1)
    segments = explanation.segments
    titles = [t for t, _ in columns]
    table = segments_table(segments.texts, titles, scores, segments.how, segments.token_segments)
    return f"<h3>Segments (rows) x explained steps (columns)</h3>{table}"


def _explained(explanation: GenerationExplanation) -> str:
    """How many steps have scores, when not all do (`` (7 explained)``)."""
    if explanation.explained_steps is None:
        return ""
    return f" ({len(explanation.explained_steps)} explained)"


def render_generation_html(
    explanations: Sequence[GenerationExplanation],
    title: str = "normxlogit: explained generations",
) -> str:
    """A standalone page: per generation, the text coloured by a chosen step or aggregate
    (a select box) and the step x token heatmap; no external assets."""
    legend = (
        '<p class="legend">'
        f'<span style="background: rgba({",".join(map(str, POSITIVE))},0.6)">for the step\'s '
        "token</span>"
        f'<span style="background: rgba({",".join(map(str, NEGATIVE))},0.6)">against it</span>'
        "each row is scaled to its largest absolute score; striped cells: not seen by the step</p>"
    )
    body = "".join(_section(e, i) for i, e in enumerate(explanations))
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{legend}{body}<script>{_SCRIPT}</script></body></html>\n"
    )
