"""Render the papers' qualitative figures as PNGs (with the scores behind them as JSON).

python scripts/qualitative_figures.py                      # every figure: 6 minutes on 1 CPU thread
python scripts/qualitative_figures.py --figure figure47    # one figure
python scripts/qualitative_figures.py --skip-slow          # no value zeroing, ReAGent: 1 min

- ``normxlogit-figure47.png``: NormXLogit paper, figure 47. One SST-2 sentence explained by
  integrated gradients, LIME and NormXLogit on ``minilm-sst2`` (defaults: the paper's
  settings), one row per method, tokens coloured by score / the row's max |score|.
- ``pisoft-figure4a.png``, ``pisoft-figure4b.png``, ``pisoft-figure7.png``,
  ``pisoft-figure8.png``: pi-Soft paper, figures 4, 7 and 8. Token-level attributions of
  ``smollm2-sst2-prompted``'s sentiment prediction; a coloured bar above a token marks it
  among a method's top 10% (figure 8: top 20%) scores over the user's text (the chat
  prompt's template tokens are neither ranked nor shown). ``pisoft-figure4a-dev.png``: the
  same for an SST-2 dev sentence.

Everything runs on the CPU; ``--threads`` (default 1) bounds the torch threads.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_OUTPUT = REPOSITORY / "docs" / "results" / "qualitative"

FONT = "DejaVu Sans"
#: text is measured at this resolution (points x 10) so that widths are not rounded to 1 pt
MEASURE_DPI = 720


# --------------------------------------------------------------------------- examples
@dataclass(frozen=True)
class MethodSpec:
    """A method as a figure shows it: its registry name, label, preset and colour."""

    name: str
    label: str
    preset: str | None = None
    color: str = "#1f77b4"
    options: dict[str, Any] = field(default_factory=dict)


#: NormXLogit paper, figure 47: the paper's settings are the methods' defaults
FIGURE47_METHODS = (
    MethodSpec("integrated_gradients", "Integrated Gradients"),
    MethodSpec("lime", "LIME"),
    MethodSpec("normxlogit", "NormXLogit"),
)
#: pi-Soft paper, figures 4, 7, 8: the paper's methods, as Inseq ran them ("pi-soft")
PISOFT_METHODS = (
    MethodSpec("attention", "Attention", "pi-soft", "#1f77b4"),
    MethodSpec("deeplift", "DeepLIFT", "pi-soft", "#ff7f0e"),
    MethodSpec("gradient_x_input", "Input×Gradient", "pi-soft", "#2ca02c"),
    MethodSpec("integrated_gradients", "Integrated Gradients", "pi-soft", "#9467bd"),
    MethodSpec("gradient_norm", "Saliency", "pi-soft", "#8c564b"),
    MethodSpec("value_zeroing", "Value Zeroing", "pi-soft", "#e377c2"),
    MethodSpec("reagent", "ReAGent", "pi-soft", "#7f7f7f"),
    MethodSpec("grad_ellm", "Grad-ELLM", None, "#d62728"),
)
#: methods that re-run the model per token or per probe step (about a minute a review)
SLOW_METHODS = frozenset({"value_zeroing", "reagent"})

FIGURE47_TEXT = "the film's direction kept me engaged from start to finish ."
#: the pi-Soft paper's positive example: its text names "engrossing" and "never boring",
#: which occur together only in this SST-2 train sentence (not among the 4,000 training
#: sentences of smollm2-sst2-prompted)
SST2_PAPER_POSITIVE = (
    "wickedly funny , visually engrossing , never boring , this movie challenges us to "
    "think about the ways we consume pop culture ."
)
#: a short, clearly positive SST-2 dev sentence (predicted positive, p = 0.92)
SST2_DEV_POSITIVE = (
    "a gripping movie , played with performances that are all understated and touching ."
)
#: no review in the staged IMDb subset holds "very little positive" (the paper's figure
#: 4b / 7 example); the shortest negative review whose decisive phrase turns "positive"
#: around, as the paper's does: "about the only positives I can find are ..."
IMDB_FIGURE7 = "test/neg/9867_2"
IMDB_FIGURE4B_SENTENCE = (
    'Music, acting, lighting, sets, "special" effects... about the only positives I can '
    "find are that Sue looks cute in her blue tights and that the Thing make-up is almost "
    "passable (face only)."
)
#: figure 8 (the paper: "nothing positive", "terrible piece of film"): the shortest
#: negative review opening with such a phrase, "There is nothing at all redeeming ..."
IMDB_FIGURE8 = "test/neg/10597_1"

FIGURES = ("figure47", "figure4a", "figure4a-dev", "figure4b7", "figure8")


def data_root() -> Path:
    """The shared data folder (``$NORMXLOGIT_DATA`` or ``../shared/data``)."""
    from normxlogit.data.sources import data_root as shared_root

    return Path(shared_root())


def sst2_label(text: str, root: Path) -> tuple[str, int]:
    """The split and gold label of ``text`` in the staged SST-2 files, or an error."""
    for split in ("dev", "train"):
        with (root / "sst2" / f"{split}.tsv").open(encoding="utf-8") as lines:
            for line in lines:
                sentence, _, label = line.rstrip("\n").rpartition("\t")
                if sentence.strip() == text:
                    return split, int(label)
    raise ValueError(f"{text!r} is not an SST-2 sentence under {root / 'sst2'}")


def imdb_review(review_id: str, root: Path) -> dict[str, Any]:
    """One review (``id``, ``text``, ``label``, ``rating``) of the staged IMDb subset."""
    with (root / "imdb" / "test_subset_2000.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if row["id"] == review_id:
                return row
    raise ValueError(f"no review {review_id!r} under {root / 'imdb'}")


# --------------------------------------------------------------------------- scores
@dataclass
class TextTokens:
    """The tokens of the user's text inside an explanation: positions and character spans."""

    positions: list[int]
    spans: list[tuple[int, int]]  # character offsets in the user's text
    texts: list[str]  # each token as text (``Explanation.token_texts``)


def user_text_tokens(model: Any, explanation: Any) -> TextTokens:
    """The tokens of ``explanation.text`` itself, leaving out special tokens and, for a
    model that wraps its input in a chat prompt, the prompt's template tokens.

    The prompt is rendered as the model renders it, tokenised with character offsets, and
    the tokens that overlap the text's characters are kept (a leading space the template
    puts before the text may sit in the text's first token).
    """
    text = explanation.text
    if not isinstance(text, str):
        raise ValueError("only single texts are supported, not pairs")
    prompt = model.task.prompt
    if prompt is None:
        rendered, start = text, 0
        encoded = model.tokenizer(text, return_offsets_mapping=True)
    else:
        rendered = prompt.render(model.tokenizer, text)
        user = prompt.user.format(text=text)
        start = rendered.index(user) + prompt.user.index("{text}")
        encoded = model.tokenizer(rendered, return_offsets_mapping=True, add_special_tokens=False)
    ids = encoded["input_ids"]
    if model.tokenizer.convert_ids_to_tokens(ids) != list(explanation.tokens):
        raise ValueError("the text's tokenisation does not match the explanation's tokens")
    end = start + len(text)
    tokens = TextTokens([], [], [])
    for position, (first, last) in enumerate(encoded["offset_mapping"]):
        if explanation.special[position] or last <= start or first >= end or last == first:
            continue
        tokens.positions.append(position)
        tokens.spans.append((max(first, start) - start, min(last, end) - start))
        tokens.texts.append(explanation.token_texts[position])
    return tokens


def top_fraction(scores: np.ndarray, fraction: float) -> np.ndarray:
    """A mask of the ``ceil(fraction * n)`` highest scores (ties: the earlier token).
    NaN scores are never selected before a number."""
    scores = np.asarray(scores, dtype=float)
    if scores.size == 0:
        return np.zeros(0, dtype=bool)
    count = min(scores.size, max(1, math.ceil(fraction * scores.size)))
    ranked = np.where(np.isnan(scores), -np.inf, scores)
    order = np.argsort(-ranked, kind="stable")
    mask = np.zeros(scores.size, dtype=bool)
    mask[order[:count]] = True
    return mask


def is_signed(method: str, scores: np.ndarray) -> bool:
    """Whether a row is drawn with the diverging scale: the method's scores can be
    negative (its registry flag) or some are."""
    from normxlogit.methods.base import method_class

    return bool(method_class(method).signed or np.nanmin(scores) < 0)


def explain_all(model: Any, text: str, methods: Sequence[MethodSpec]) -> dict[str, Any]:
    """``{method name: (explanation, seconds)}`` for each method on ``text``."""
    results = {}
    for spec in methods:
        options = dict(spec.options)
        if spec.preset:
            options["preset"] = spec.preset
        began = time.perf_counter()
        explanation = model.explain(text, method=spec.name, **options)
        seconds = time.perf_counter() - began
        print(f"  {spec.label:<22} {seconds:6.1f} s", flush=True)
        results[spec.name] = (explanation, seconds)
    return results


# --------------------------------------------------------------------------- layout
def text_width(text: str, size: float, weight: str = "normal") -> float:
    """The advance width of ``text`` in points at font ``size`` (spaces included)."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    renderer = _renderer(RendererAgg)
    width, _, _ = renderer.get_text_width_height_descent(
        text, FontProperties(family=FONT, size=size, weight=weight), ismath=False
    )
    return width * 72 / MEASURE_DPI


_RENDERERS: dict[type, Any] = {}


def _renderer(kind: type) -> Any:
    if kind not in _RENDERERS:
        _RENDERERS[kind] = kind(10, 10, MEASURE_DPI)
    return _RENDERERS[kind]


@dataclass
class Placed:
    """A token placed on a line: the text drawn, where its glyphs start and their width."""

    index: int
    text: str
    line: int
    x: float
    width: float


def shown_text(token: str) -> str:
    """A token's text as drawn: newlines and other invisible characters made visible."""
    from normxlogit.render.colors import display_text

    leading = len(token) - len(token.lstrip(" "))
    return " " * leading + display_text(token.lstrip(" ")) if token.strip() else token


def flow_tokens(tokens: Sequence[str], max_width: float, size: float) -> list[Placed]:
    """Lay ``tokens`` out as running text (each keeps its leading space) in lines of
    at most ``max_width`` points; a line never starts with a space."""
    placed, line, x = [], 0, 0.0
    for index, token in enumerate(tokens):
        drawn = shown_text(token)
        body = drawn.lstrip(" ") or drawn
        space = text_width(drawn[: len(drawn) - len(body)], size)
        width = text_width(body, size)
        if x > 0 and x + space + width > max_width:
            line, x = line + 1, 0.0
        x += space if x > 0 else 0.0
        placed.append(Placed(index, body, line, x, width))
        x += width
    return placed


def box_tokens(
    tokens: Sequence[str], max_width: float, size: float, pad: float, gap: float
) -> list[Placed]:
    """Lay ``tokens`` out as separate boxes (``pad`` inside, ``gap`` between) in lines
    of at most ``max_width`` points."""
    placed, line, x = [], 0, 0.0
    for index, token in enumerate(tokens):
        body = shown_text(token).strip(" ") or "\u2423"
        width = text_width(body, size) + 2 * pad
        if x > 0 and x + width > max_width:
            line, x = line + 1, 0.0
        placed.append(Placed(index, body, line, x, width))
        x += width + gap
    return placed


# --------------------------------------------------------------------------- figures
def heatmap_figure(
    rows: Sequence[tuple[str, Sequence[str], np.ndarray, bool]],
    title: str,
    path: Path,
    size: float = 13,
    width_in: float = 11,
) -> None:
    """One row of coloured token boxes per method: ``(label, tokens, scores, signed)``.

    Scores are divided by the row's largest |score|; signed rows use the whole diverging
    scale (blue: for the predicted label, red: against it), unsigned rows its blue half.
    """
    import matplotlib.pyplot as plt
    from matplotlib.colors import Normalize
    from matplotlib.patches import FancyBboxPatch

    cmap = plt.get_cmap("RdBu")
    label_width = max(text_width(label, size, "bold") for label, *_ in rows) + 24
    pad, gap, line_height, row_gap = 4.0, 3.0, size * 2.1, size * 1.2
    available = width_in * 72 - label_width - 24
    layouts = [box_tokens(tokens, available, size, pad, gap) for _, tokens, *_ in rows]
    used = max(p.x + p.width for layout in layouts for p in layout)
    width_in = max(label_width + used + 24, text_width(title, size) + 36, 460) / 72
    heights = [(max(p.line for p in layout) + 1) * line_height for layout in layouts]
    title_height, bar_height = size * 4.0, size * 4.6
    total = title_height + sum(heights) + row_gap * len(rows) + bar_height
    figure = plt.figure(figsize=(width_in, total / 72), dpi=150)
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, width_in * 72)
    axes.set_ylim(total, 0)
    axes.axis("off")
    axes.text(12, size * 1.6, title, fontsize=size, fontfamily=FONT, va="center")
    y = title_height
    for (label, _, scores, signed), layout, height in zip(rows, layouts, heights, strict=True):
        peak = float(np.nanmax(np.abs(scores))) or 1.0
        axes.text(
            12,
            y + line_height / 2,
            label,
            fontsize=size,
            fontfamily=FONT,
            va="center",
            fontweight="bold",
        )
        for item in layout:
            value = float(scores[item.index]) / peak
            colour = cmap(0.5 + 0.5 * value)  # RdBu: red at 0, white at 0.5, blue at 1
            top = y + item.line * line_height + 3
            axes.add_patch(
                FancyBboxPatch(
                    (label_width + item.x, top),
                    item.width,
                    line_height - 6,
                    boxstyle="round,pad=0,rounding_size=3",
                    facecolor=colour,
                    edgecolor="#bbbbbb",
                    linewidth=0.5,
                )
            )
            dark = abs(value) > 0.6
            axes.text(
                label_width + item.x + item.width / 2,
                top + (line_height - 6) / 2,
                item.text,
                fontsize=size,
                fontfamily=FONT,
                ha="center",
                va="center_baseline",
                color="white" if dark else "black",
                parse_math=False,
            )
        axes.text(
            label_width - 6,
            y + line_height / 2 + size * 0.9,
            "signed" if signed else "unsigned",
            fontsize=size * 0.75,
            fontfamily=FONT,
            color="#555555",
            ha="right",
            va="center",
        )
        y += height + row_gap
    bar = figure.add_axes((0.3, (bar_height * 0.45) / total, 0.4, (size * 0.9) / total))
    figure.colorbar(
        plt.cm.ScalarMappable(norm=Normalize(-1, 1), cmap=cmap), cax=bar, orientation="horizontal"
    )
    bar.tick_params(labelsize=size * 0.75)
    bar.set_title("score / row's max |score|  (unsigned rows: 0 to 1)", fontsize=size * 0.8, pad=3)
    figure.savefig(path)
    plt.close(figure)


def topk_figure(
    tokens: Sequence[str],
    selections: Sequence[tuple[MethodSpec, np.ndarray]],
    title: Sequence[str],
    path: Path,
    size: float = 12,
    width_in: float = 11,
) -> None:
    """Running text with one coloured bar slot per method above each token; a bar marks a
    token among that method's top scores (``selections``: the method and its mask).
    ``title``: its lines."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    margin, slot, slot_gap = 16.0, 4.2, 1.0
    bars = len(selections) * (slot + slot_gap)
    line_height = bars + size * 1.9
    layout = flow_tokens(tokens, width_in * 72 - 2 * margin, size)
    lines = max(p.line for p in layout) + 1
    title_height = size * 1.45 * len(title)
    header = title_height + size * 3.6
    total = header + lines * line_height + size * 0.6
    figure = plt.figure(figsize=(width_in, total / 72), dpi=150)
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, width_in * 72)
    axes.set_ylim(total, 0)
    axes.axis("off")
    for number, line in enumerate(title):
        axes.text(
            margin,
            size * (0.6 + 1.45 * number),
            line,
            fontsize=size,
            fontfamily=FONT,
            va="top",
            parse_math=False,
        )
    figure.legend(
        handles=[Patch(color=spec.color, label=spec.label) for spec, _ in selections],
        loc="upper left",
        bbox_to_anchor=(margin / (width_in * 72), 1 - (title_height + size * 0.4) / total),
        ncol=len(selections),
        fontsize=size * 0.8,
        frameon=False,
        handlelength=1.2,
        columnspacing=1.0,
        handletextpad=0.4,
        title="bar order, top to bottom:",
        title_fontsize=size * 0.75,
        alignment="left",
    )
    for item in layout:
        top = header + item.line * line_height
        for row, (spec, mask) in enumerate(selections):
            y = top + row * (slot + slot_gap)
            chosen = bool(mask[item.index])
            axes.add_patch(
                Rectangle(
                    (margin + item.x + 0.6, y),
                    max(item.width - 1.2, 1.0),
                    slot,
                    facecolor=spec.color if chosen else "#f1f1f1",
                    linewidth=0,
                )
            )
        axes.text(
            margin + item.x,
            top + bars + size * 0.15,
            item.text,
            fontsize=size,
            fontfamily=FONT,
            va="top",
            parse_math=False,
        )
    figure.savefig(path)
    plt.close(figure)


# --------------------------------------------------------------------------- figures' data
def figure47(output: Path) -> dict[str, Any]:
    """NormXLogit paper, figure 47: IG, LIME and NormXLogit on ``minilm-sst2``."""
    import normxlogit

    model = normxlogit.load("minilm-sst2")
    print("figure 47: minilm-sst2", flush=True)
    results = explain_all(model, FIGURE47_TEXT, FIGURE47_METHODS)
    rows, record = [], {}
    for spec in FIGURE47_METHODS:
        explanation, seconds = results[spec.name]
        scores = np.asarray(explanation.scores, dtype=float)
        signed = is_signed(spec.name, scores)
        rows.append((spec.label, explanation.token_texts, scores, signed))
        record[spec.name] = {
            "seconds": round(seconds, 2),
            "signed": signed,
            "tokens": explanation.token_texts,
            "scores": scores.round(6).tolist(),
            "settings": _jsonable(explanation.settings),
        }
    first = results[FIGURE47_METHODS[0].name][0]
    title = (
        f"minilm-sst2 predicts {first.label} (p = {first.probs[first.label]:.2f}); "
        f"token scores for {first.label}"
    )
    heatmap_figure(rows, title, output / "normxlogit-figure47.png")
    return {
        "figure": "NormXLogit paper, figure 47",
        "model": "minilm-sst2",
        "text": FIGURE47_TEXT,
        "label": first.label,
        "probs": first.probs,
        "methods": record,
    }


@dataclass
class Explained:
    """Every method's explanation of one text, with the user's text tokens located."""

    text: str
    results: dict[str, Any]
    tokens: TextTokens

    @property
    def first(self) -> Any:
        return next(iter(self.results.values()))[0]

    def scores(self, method: str) -> np.ndarray:
        explanation = self.results[method][0]
        return np.asarray(explanation.scores, dtype=float)[self.tokens.positions]


def explain_text(model: Any, text: str, methods: Sequence[MethodSpec]) -> Explained:
    """Explain ``text`` with every method; locate the user's tokens once."""
    results = explain_all(model, text, methods)
    return Explained(text, results, user_text_tokens(model, next(iter(results.values()))[0]))


def topk_record(
    explained: Explained, methods: Sequence[MethodSpec], fraction: float, keep: np.ndarray
) -> tuple[list[tuple[MethodSpec, np.ndarray]], dict[str, Any]]:
    """Each method's top-``fraction`` mask over the user's tokens (restricted to ``keep``
    for the drawing), and the JSON record of the scores and the tokens selected."""
    selections, record = [], {}
    for spec in methods:
        scores = explained.scores(spec.name)
        mask = top_fraction(scores, fraction)
        selections.append((spec, mask[keep]))
        explanation, seconds = explained.results[spec.name]
        record[spec.name] = {
            "seconds": round(seconds, 2),
            "top": [explained.tokens.texts[i] for i in np.flatnonzero(mask)],
            "scores": scores.round(6).tolist(),
            "settings": _jsonable(explanation.settings),
            "diagnostics": _jsonable(explanation.diagnostics),
        }
    return selections, record


def pisoft_figure(
    explained: Explained,
    methods: Sequence[MethodSpec],
    fraction: float,
    path: Path,
    source: str,
    span: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """One pi-Soft figure: the top-``fraction`` bars over the user's text, or over the
    tokens inside the character ``span`` of it (ranked over the whole text all the same)."""
    spans = explained.tokens.spans
    keep = np.array([span is None or (last > span[0] and first < span[1]) for first, last in spans])
    selections, record = topk_record(explained, methods, fraction, keep)
    first = explained.first
    shown = [text for text, kept in zip(explained.tokens.texts, keep, strict=True) if kept]
    count = max(1, math.ceil(fraction * len(spans)))
    title = [
        f"{source}: smollm2-sst2-prompted predicts {first.label} "
        f"(p = {first.probs[first.label]:.2f})",
        f"Bars: each method's top {fraction:.0%} ({count} of the text's {len(spans)} tokens)"
        + ("; the key sentence is shown" if span is not None else ""),
    ]
    topk_figure(shown, selections, title, path)
    return {
        "source": source,
        "model": "smollm2-sst2-prompted",
        "text": explained.text,
        "shown": explained.text[span[0] : span[1]] if span else explained.text,
        "label": first.label,
        "probs": first.probs,
        "fraction": fraction,
        "top_count": count,
        "tokens": explained.tokens.texts,
        "methods": record,
    }


def pisoft_figures(
    output: Path, figures: Sequence[str], methods: Sequence[MethodSpec], root: Path
) -> dict[str, Any]:
    """pi-Soft paper, figures 4a, 4b, 7 and 8 on ``smollm2-sst2-prompted``."""
    import normxlogit

    model = normxlogit.load("smollm2-sst2-prompted")
    records = {}
    sentences = {"figure4a": SST2_PAPER_POSITIVE, "figure4a-dev": SST2_DEV_POSITIVE}
    for name, sentence in sentences.items():
        if name not in figures:
            continue
        split, gold = sst2_label(sentence, root)
        print(f"{name}: SST-2 {split} sentence", flush=True)
        explained = explain_text(model, sentence, methods)
        records[name] = pisoft_figure(
            explained,
            methods,
            0.10,
            output / f"pisoft-{name}.png",
            f"SST-2 {split} (gold: {('negative', 'positive')[gold]})",
        )
    if "figure4b7" in figures:
        review = imdb_review(IMDB_FIGURE7, root)
        print(f"figures 4b, 7: IMDb {IMDB_FIGURE7}", flush=True)
        explained = explain_text(model, review["text"], methods)
        start = review["text"].index(IMDB_FIGURE4B_SENTENCE)
        source = f"IMDb {review['id']} (rating {review['rating']}/10)"
        records["figure4b"] = pisoft_figure(
            explained,
            methods,
            0.10,
            output / "pisoft-figure4b.png",
            source,
            span=(start, start + len(IMDB_FIGURE4B_SENTENCE)),
        )
        records["figure7"] = pisoft_figure(
            explained, methods, 0.10, output / "pisoft-figure7.png", source
        )
    if "figure8" in figures:
        review = imdb_review(IMDB_FIGURE8, root)
        print(f"figure 8: IMDb {IMDB_FIGURE8}", flush=True)
        explained = explain_text(model, review["text"], methods)
        records["figure8"] = pisoft_figure(
            explained,
            methods,
            0.20,
            output / "pisoft-figure8.png",
            f"IMDb {review['id']} (rating {review['rating']}/10)",
        )
    return records


def _jsonable(value: Any) -> Any:
    """``value`` with numpy scalars and arrays turned into plain Python."""
    return json.loads(json.dumps(value, default=lambda v: np.asarray(v).tolist()))


# --------------------------------------------------------------------------- command line
def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--output", type=Path, default=DEFAULT_OUTPUT, help="folder for the PNGs and JSON"
    )
    parser.add_argument(
        "--figure",
        action="append",
        choices=FIGURES,
        dest="figures",
        help="a figure to make (repeatable; default: all)",
    )
    parser.add_argument(
        "--skip-slow",
        action="store_true",
        help="leave out value zeroing and ReAGent (about a minute each per review)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument(
        "--data", type=Path, default=None, help="shared data folder (default: $NORMXLOGIT_DATA)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(arguments.threads))
    import torch

    torch.set_num_threads(arguments.threads)
    figures = arguments.figures or list(FIGURES)
    output = arguments.output
    output.mkdir(parents=True, exist_ok=True)
    methods = [m for m in PISOFT_METHODS if not (arguments.skip_slow and m.name in SLOW_METHODS)]
    began = time.perf_counter()
    records: dict[str, Any] = {}
    if "figure47" in figures:
        records["figure47"] = figure47(output)
    if set(figures) - {"figure47"}:
        records.update(pisoft_figures(output, figures, methods, arguments.data or data_root()))
    for name, record in records.items():
        stem = "normxlogit-figure47" if name == "figure47" else f"pisoft-{name}"
        record["threads"] = arguments.threads
        text = json.dumps(record, indent=1, ensure_ascii=False)
        (output / f"{stem}.json").write_text(text + "\n", encoding="utf-8")
    print(f"wrote {output} in {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
