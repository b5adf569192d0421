"""Terminal rendering with rich: tokens on a coloured background, one line per target."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from .colors import display_text, rgba, scale, segment_columns
from .fitting import SCORE_WIDTH, SEGMENT_WIDTH, fits_beside_segment, fitting_chunks

if TYPE_CHECKING:
    from ..explanations.explanation import Explanation


def _blend(score: float, peak: float) -> str:
    red, green, blue, alpha = rgba(score, peak)
    mix = [round(255 + (c - 255) * alpha) for c in (red, green, blue)]
    return "rgb({},{},{})".format(*mix)


def _line(texts: list[str], scores, peak: float) -> Text:
    text = Text()
    for token, score in zip(texts, scores, strict=True):
        shown = display_text(token).strip()
        text.append(shown, style=f"black on {_blend(float(score), peak)}")
        text.append(" ")
    return text


def header(explanation: Explanation) -> Text:
    """One line: model, method, prediction and its probability."""
    if explanation.value is not None:
        outcome = f"{explanation.label_text} = {explanation.value:.3f}"
    else:
        probability = explanation.probs.get(explanation.label)
        shown = display_text(explanation.label_text).strip()
        outcome = shown + (f" ({probability:.1%})" if probability is not None else "")
    text = Text()
    text.append(f"{explanation.method}", style="bold")
    text.append(f" on {explanation.model}: " if explanation.model else ": ")
    text.append(outcome, style="bold")
    return text


def render_rich(explanation: Explanation) -> Iterator:
    """Renderables for ``rich.print``: header, then a row of tokens per target (per layer)."""
    yield header(explanation)
    if "contrast_input" in explanation.settings:
        yield from contrast_input_lines(explanation)
    if explanation.contrast_is_target:
        yield Text(
            "not explained: its target is its contrast (the difference of an output with "
            "itself is zero at every token)",
            style="yellow",
        )
    scores = explanation.scores_3d()
    table = Table(show_header=False, box=None, padding=(0, 1))
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")  # rich's default cuts a token to "…" where a wide one wraps
    layers = explanation.layers if explanation.has_layers else [None]
    for li, layer in enumerate(layers):
        for ti, title in enumerate(explanation.column_titles):
            row = scores[li, :, ti]
            shown = display_text(title).strip()
            name = shown if layer is None else f"L{layer} {shown}"
            table.add_row(Text(name), _line(explanation.token_texts, row, scale(row)))
    yield table
    if explanation.segments is not None:
        yield segments_table(explanation)


def contrast_input_lines(explanation: Explanation) -> Iterator[Text]:
    """One line per target of an explanation against a contrast input, so its colours
    are not read as a plain explanation's: the two inputs compared (user text, shown as
    data, never as markup) and the target's output under each (with the KL divergence
    of the two distributions)."""
    compared = (
        f'"{_input_text(explanation.text)}" vs '
        f'"{_input_text(explanation.settings["contrast_input"])}"'
    )
    found = explanation.diagnostics
    for ti, title in enumerate(explanation.target_texts):
        line = Text()
        line.append(display_text(title).strip(), style="bold")
        line.append(f": {compared}")
        line.append(_under_both(found, ti), style="dim")
        yield line


def _input_text(value: object) -> str:
    """An input as one line of text: a pair's two texts joined by " | "."""
    parts = list(value) if isinstance(value, list | tuple) else [value]
    return display_text(" | ".join(str(part) for part in parts))


def _under_both(diagnostics: dict, column: int) -> str:
    """`` (p 91.7% vs 40.1%, KL 0.12)``: the target's output under the input and the
    contrast input (a regressor's value), from the explanation's diagnostics; empty
    where they are missing (a file saved without them)."""

    def at(key: str) -> float | None:
        values = diagnostics.get(key)
        return float(values[column]) if isinstance(values, list) and column < len(values) else None

    p, q = at("target_probability"), at("contrast_input_probability")
    if p is not None and q is not None:
        kl = at("kl_divergence")
        return f"  (p {p:.1%} vs {q:.1%}" + (f", KL {kl:.3g})" if kl is not None else ")")
    value, other = at("target_value"), at("contrast_input_value")
    if value is not None and other is not None:
        return f"  (value {value:.3f} vs {other:.3f})"
    return ""


def segments_table(explanation: Explanation) -> SegmentsTables:
    """One row per segment: its score per target (per layer, labelled as the token rows
    are) on a coloured background scaled per layer, and its text (user text: shown as
    data, never as markup). A segment the model read no token of (past the truncation)
    scores NaN: "not read". Too wide for the console (every layer, many labels), the
    columns are split over tables that fit, one layer each where one fits, so every row
    names its segment and no score is cut."""
    return SegmentsTables(explanation)


class SegmentsTables:
    """The segments table of :func:`segments_table`, laid out for the console's width."""

    def __init__(self, explanation: Explanation) -> None:
        self.titles, self.scores, self.groups = segment_columns(
            explanation, lambda layer, title: f"L{layer} {title}"
        )
        self.layers = explanation.layers if explanation.has_layers else [None]
        self.how = explanation.segments.how
        self.texts = explanation.segments.texts
        self.read = set(explanation.segments.token_segments)
        group_of = np.asarray(self.groups)
        self.peaks = [scale(self.scores[:, group_of == group]) for group in self.groups]

    def table(self, columns: list[int], title: str | None = None) -> Table:
        table = Table(box=None, padding=(0, 1), title=title or f"segments ({self.how})")
        for column in columns:
            shown = display_text(self.titles[column]).strip()
            table.add_column(shown, justify="right", no_wrap=True, min_width=SCORE_WIDTH)
        table.add_column(
            "segment", overflow="fold", min_width=SEGMENT_WIDTH
        )  # wide characters fold
        for index, text in enumerate(self.texts):
            cells = [
                Text("not read", style="dim")
                if index not in self.read
                else Text(
                    f"{self.scores[index, c]:+.3f}",
                    style=f"black on {_blend(float(self.scores[index, c]), self.peaks[c])}",
                )
                for c in columns
            ]
            table.add_row(*cells, Text(display_text(text)))
        return table

    def parts(self, fits: Callable[[Table], bool]) -> list[Table]:
        """One table if it fits, else the columns in tables that do: a layer's columns
        together where they fit, else as many of them as fit beside the segment."""
        every = list(range(len(self.titles)))
        if fits(self.table(every)):
            return [self.table(every)]
        chunks = [
            chunk
            for group in dict.fromkeys(self.groups)
            for chunk in fitting_chunks(
                (c for c in every if self.groups[c] == group), lambda run: fits(self.table(run))
            )
        ]
        tables = []
        for number, chunk in enumerate(chunks, 1):
            layer = self.layers[self.groups[chunk[0]]]
            whole = sum(g == self.groups[chunk[0]] for g in self.groups) == len(chunk)
            where = f"layer {layer}" if layer is not None and whole else None
            where = where or f"part {number} of {len(chunks)}"
            tables.append(self.table(chunk, f"segments ({self.how}), {where}"))
        return tables

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.parts(fits_beside_segment(options.max_width))
