"""The bench's figures, drawn with matplotlib (Agg) and written as PNG files atomically."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from ..common.errors import InvalidInputError
from ..common.figures import PLAIN_TEXT, plain_legend
from ..common.outputs import save_figure
from .results import ExperimentResults, timings_by_experiment
from .spec import BenchConfig, MethodSpec

AXIS_LABELS = {
    "ratio": "perturbation ratio",
    "pi": "retaining probability π",
    "step": "step",
    "layer": "layer",
}
#: the x axis of a per-layer plot, by the metric's axis: layers, or the sanity metrics'
#: randomisation steps (one more block random at each)
LAYER_AXIS_LABELS = {
    "layer": "layer (0 = embeddings)",
    "step": "randomisation step\n(0: the head random; each step one more group, top down)",
}


def _title(figure, text: str) -> None:
    """The figure's title, wrapped to its width (a one-panel figure is narrow), drawn
    as written (a config's title is text, not matplotlib's math)."""
    import textwrap

    characters = max(40, int(figure.get_figwidth() * 11))  # ~11 characters an inch at 11 pt
    figure.suptitle(textwrap.fill(text, characters), fontsize=11, **PLAIN_TEXT)


#: why a figure cannot be drawn in the core install
NEEDS_MATPLOTLIB = "the bench's figures are drawn with matplotlib: pip install 'normxlogit[bench]'"


def check_matplotlib() -> None:
    """Refuse, before any file is written, a report whose figures cannot be drawn."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise InvalidInputError(NEEDS_MATPLOTLIB)


def _figure(panels: int):
    try:
        import matplotlib
    except ImportError:
        raise InvalidInputError(NEEDS_MATPLOTLIB) from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(panels, 3)
    rows = math.ceil(panels / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.6 * rows), squeeze=False)
    for extra in axes.flat[panels:]:
        extra.set_visible(False)
    return plt, figure, list(axes.flat)


def _save(plt, figure, path: Path) -> None:
    """Write the PNG whole or not at all (a temporary file renamed into place)."""
    try:
        save_figure(figure, path)
    finally:
        plt.close(figure)


#: the mark after a method drawn from part of its instances, as the report's tables mark it
PARTIAL_MARK = "†"


def unfinished_in(panels: Sequence[tuple[ExperimentResults, Sequence[str]]], metric: str):
    """Per method drawn from part of its instances (its cell partial in the report's
    tables), the panels it is so in with its count ("exp 2/11"): what the figure marks
    †. ``panels``: each panel's results and the methods drawn in it. The page draws
    every method on the instances all share, where none is partial."""
    unfinished: dict[str, list[str]] = {}
    for result, drawn in panels:
        for method, count in result.unfinished(list(dict.fromkeys(drawn)), [metric]).items():
            unfinished.setdefault(method, []).append(f"{result.experiment.name} {count}")
    return unfinished


def marked(label: str, unfinished: Mapping[str, Sequence[str]]) -> str:
    """``label`` with † where that method is drawn from part of its instances."""
    return label + PARTIAL_MARK if label in unfinished else label


def _laid_out(figure, unfinished: Mapping[str, Sequence[str]]) -> None:
    """Lay the figure out, with the tables' † note under its panels where a method is
    drawn from part of its instances (beside complete ones, its curve is no final one)."""
    import textwrap

    if not unfinished:
        figure.tight_layout()
        return
    counts = ", ".join(
        f"{method} / {where}" for method, places in unfinished.items() for where in places
    )
    note = f"{PARTIAL_MARK}: not every instance is done yet (instances done: {counts})."
    characters = max(60, int(figure.get_figwidth() * 15))  # ~15 characters an inch at 7 pt
    note = textwrap.fill(note, characters)
    height = figure.get_figheight()
    bottom = min(0.4, (0.14 * (note.count("\n") + 1) + 0.1) / height)
    figure.tight_layout(rect=(0, bottom, 1, 1))
    figure.text(0.01, 0.01, note, fontsize=7, va="bottom", ha="left", **PLAIN_TEXT)


def method_colours(methods) -> dict[str, tuple]:
    """One colour per method, the same in every panel (in the order methods come)."""
    import matplotlib

    names = list(dict.fromkeys(methods))
    palette = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: palette(i % palette.N) for i, name in enumerate(names)}


def explained_at(method: MethodSpec) -> str:
    """The layer a method's one value (no curve over layers) was explained at: its own
    index where the config fixes one (``layer = 1``), else the final layer."""
    return f"layer {method.layer}" if isinstance(method.layer, int) else "final layer"


def summary_axis_label(metric: str, methods: Sequence[MethodSpec]) -> str:
    """A summary plot's y axis. A per-layer metric is summarised at the final layer,
    except for a method explained at a fixed layer, whose value is that layer's: named,
    so the axis does not claim the final layer for it."""
    from ..evaluation.registry import metric_info

    info = metric_info(metric)
    if info.axis != "layer" or info.summary != "last":
        return f"{metric} {info.summary.upper()} ({info.direction})"
    fixed = [f"{m.display} at {explained_at(m)}" for m in methods if isinstance(m.layer, int)]
    final = ["final layer"] if len(fixed) < len(methods) else []
    where = "; ".join([*final, *fixed])
    return f"{metric} ({where})\n({info.direction})"


def plot_curves(results: list[ExperimentResults], metric: str, path: Path, title: str = "") -> bool:
    """``metric`` against its axis, one line per method, one panel per experiment.

    The NormXLogit paper's figures 2-3 and 6-46 (comprehensiveness / sufficiency against
    the ratio) and the pi-Soft paper's figure 3 (pi-Soft curves against pi).
    """
    from ..evaluation.registry import metric_info

    info = metric_info(metric)
    shown = curve_panels(results, metric)
    if not shown:  # no figure of empty axes: the tables hold the one value (or its n/a)
        return False
    plt, figure, axes = _figure(len(shown))
    colours = method_colours(m.display for r, _ in shown for m in r.experiment.methods)
    drawn = {}
    for axis, (result, curves) in zip(axes, shown, strict=False):
        for method in dict.fromkeys(curves["method"]):
            line = curves[curves["method"] == method].sort_values("x")
            (drawn[method],) = axis.plot(
                line["x"], line["value"], marker="o", markersize=3, color=colours[method]
            )
        axis.set_title(result.experiment.name, fontsize=10, **PLAIN_TEXT)
        axis.set_xlabel(AXIS_LABELS.get(info.axis, info.axis))
        axis.set_ylabel(f"{metric} ({info.direction})")
        axis.grid(alpha=0.3)
    # one legend for all panels: a method missing from the first (N/A there) still shows
    ordered = [m for m in colours if m in drawn]
    unfinished = unfinished_in([(r, list(c["method"])) for r, c in shown], metric)
    labels = [marked(m, unfinished) for m in ordered]
    plain_legend(axes[0], [drawn[m] for m in ordered], labels, fontsize=8)
    _title(figure, title or f"{info.description}")
    _laid_out(figure, unfinished)
    _save(plt, figure, path)
    return True


def curve_panels(
    results: list[ExperimentResults], metric: str
) -> list[tuple[ExperimentResults, pd.DataFrame]]:
    """The panels of ``metric``'s curve figure: each experiment with a curve of it to draw
    (see :func:`has_curve`), with its curves; none for a metric of one number per text."""
    from ..evaluation.registry import metric_info

    if metric_info(metric).axis is None:
        return []
    return [
        (result, curve)
        for result in results
        if metric in result.experiment.metrics
        and not result.frame.empty
        and has_curve(curve := metric_curve(result, metric))
    ]


def metric_panels(results: list[ExperimentResults], metric: str) -> list[ExperimentResults]:
    """The panels of ``metric``'s summary or per-layer figure: the experiments with values."""
    return [r for r in results if metric in r.experiment.metrics and not r.frame.empty]


def distribution_panels(values: dict[str, dict[str, list]]) -> dict[str, dict[str, list]]:
    """The panels of the distribution figure: the experiments with some value."""
    return {name: methods for name, methods in values.items() if any(methods.values())}


def timing_panels(config: BenchConfig, timings: pd.DataFrame) -> list:
    """The panels of the time figure: the experiments with timings of the config's cells."""
    return [] if timings.empty else timings_by_experiment(config, timings)


def metric_curve(result: ExperimentResults, metric: str) -> pd.DataFrame:
    """One metric's curve points per method (an n/a point kept: the line breaks there)."""
    curves = result.curves()
    return curves[curves["metric"] == metric]


def has_curve(curves: pd.DataFrame) -> bool:
    """Whether some method has a curve to draw: values at two points of the axis or more.
    A metric read at the explained layer only (token_f1 at the final layer) has one point
    per method, and an all-n/a one (one-token texts) none: a figure of them would be empty
    axes under a legend."""
    valued = curves[curves["value"].notna()]
    return bool(len(valued)) and bool((valued.groupby("method")["x"].nunique() > 1).any())


def plot_time(config: BenchConfig, timings: pd.DataFrame, path: Path, title: str = "") -> bool:
    """Seconds per instance against input length, per method (NormXLogit table 2 as a plot)."""
    groups = timing_panels(config, timings)  # this config's cells, per experiment
    if not groups:
        return False
    plt, figure, axes = _figure(len(groups))  # one panel per experiment: models not mixed
    for axis, (experiment, rows) in zip(axes, groups, strict=False):
        lines = {}
        for label, method_rows in rows.groupby("label", sort=False):
            by_length = method_rows.groupby("tokens")["seconds"].median()
            (lines[label],) = axis.plot(by_length.index, by_length.values, marker=".")
        axis.set_yscale("log")
        axis.set_xlabel("input length (tokens)")
        axis.set_ylabel("seconds per instance (median)")
        axis.grid(alpha=0.3, which="both")
        plain_legend(axis, lines.values(), lines.keys(), fontsize=8)
        if len(groups) > 1:
            axis.set_title(experiment, fontsize=10, **PLAIN_TEXT)
    _title(figure, title or "explain time against input length")
    figure.tight_layout()
    _save(plt, figure, path)
    return True


def plot_summary(
    results: list[ExperimentResults], metric: str, path: Path, title: str = ""
) -> bool:
    """Each method's summary of ``metric`` (AOPC / AUC), methods along the x axis in the
    config's order, one panel per experiment: a sweep over one option, each value a method
    with its own label (the pi-Soft paper's figure 5: Grad-ELLM's aggregated layers)."""
    from ..evaluation.registry import metric_info

    info = metric_info(metric)
    shown = metric_panels(results, metric)
    if not shown:
        return False
    plt, figure, axes = _figure(len(shown))
    summaries = [result.summary() for result in shown]
    drawn = [
        [m.display for m in result.experiment.methods if m.display in summary.index]
        for result, summary in zip(shown, summaries, strict=True)
    ]
    unfinished = unfinished_in(list(zip(shown, drawn, strict=True)), metric)
    for axis, result, summary, labels in zip(axes, shown, summaries, drawn, strict=False):
        values = [summary.loc[label, metric] for label in labels]
        axis.plot(range(len(labels)), values, marker="o")
        axis.set_xticks(
            range(len(labels)),
            [marked(label, unfinished) for label in labels],
            rotation=30,
            ha="right",
            fontsize=8,
            **PLAIN_TEXT,
        )
        axis.set_title(result.experiment.name, fontsize=10, **PLAIN_TEXT)
        axis.set_ylabel(summary_axis_label(metric, result.experiment.methods))
        axis.grid(alpha=0.3)
    _title(figure, title or f"{info.description}")
    _laid_out(figure, unfinished)
    _save(plt, figure, path)
    return True


def plot_distribution(
    values: dict[str, dict[str, list]],
    path: Path,
    title: str = "",
    units: Mapping[str, str] | None = None,
    bins: int = 20,
) -> bool:
    """How each method's attribution values spread over [0, 1] (every explanation min-max
    rescaled first, as the pi-Soft metrics rescale them): experiment -> method -> values,
    one panel per experiment (the pi-Soft paper's figure 6); ``units``: what a value of each
    experiment belongs to (tokens by default, segments where its metrics rank segments)."""
    import numpy as np

    shown = distribution_panels(values)
    if not shown:
        return False
    plt, figure, axes = _figure(len(shown))
    colours = method_colours(m for methods in shown.values() for m in methods)
    edges = np.linspace(0.0, 1.0, bins + 1)
    centres = (edges[:-1] + edges[1:]) / 2
    for axis, (name, methods) in zip(axes, shown.items(), strict=False):
        lines = {}
        for method, scores in methods.items():
            if len(scores):
                counts, _ = np.histogram(scores, bins=edges)
                (lines[method],) = axis.plot(centres, counts / counts.sum(), color=colours[method])
        axis.set_title(name, fontsize=10, **PLAIN_TEXT)
        axis.set_xlabel("attribution value (min-max rescaled per explanation)")
        axis.set_ylabel(f"share of {(units or {}).get(name, 'tokens')}")
        axis.set_yscale("log")
        axis.grid(alpha=0.3)
        plain_legend(axis, lines.values(), lines.keys(), fontsize=7)
    _title(figure, title or "attribution-value distributions")
    figure.tight_layout()
    _save(plt, figure, path)
    return True


def plot_layers(results: list[ExperimentResults], metric: str, path: Path, title: str = "") -> bool:
    """A per-layer metric (evidence_dot, evidence_ap) against the layer, one line per
    method with its 95% confidence band over instances, one panel per experiment; a method
    without layers (gradients, or one explained at a fixed ``layer = N``) is a dashed line
    at its mean, labelled with that layer (the NormXLogit paper's figures 4-5 and 48-51)."""
    import numpy as np

    from ..evaluation.registry import metric_info

    info = metric_info(metric)
    shown = metric_panels(results, metric)
    if not shown:
        return False
    plt, figure, axes = _figure(len(shown))
    colours = method_colours(m.display for r in shown for m in r.experiment.methods)
    unfinished = unfinished_in(
        [(r, list(r.frame.loc[r.frame["metric"] == metric, "method"])) for r in shown], metric
    )
    for axis, result in zip(axes, shown, strict=False):
        specs = {m.display: m for m in result.experiment.methods}
        rows = result.frame[result.frame["metric"] == metric]
        # one value per instance, method and layer: seeds averaged first
        per_instance = rows.groupby(["method", "x", "instance"], dropna=False)["value"].mean()
        lines = {}
        for method in dict.fromkeys(rows["method"]):
            values = per_instance.loc[method].reset_index()
            layered = values[values["x"].notna()]
            stats = layered.groupby("x")["value"].agg(["mean", "std", "count"])
            colour = colours[method]
            if not stats.empty:
                band = 1.96 * stats["std"].fillna(0.0) / np.sqrt(stats["count"])
                (lines[marked(method, unfinished)],) = axis.plot(
                    stats.index, stats["mean"], marker="o", markersize=3, color=colour
                )
                axis.fill_between(
                    stats.index,
                    stats["mean"] - band,
                    stats["mean"] + band,
                    color=colour,
                    alpha=0.15,
                    linewidth=0,
                )
            final = values[values["x"].isna()]["value"]
            if len(final):
                lines[f"{marked(method, unfinished)} ({explained_at(specs[method])})"] = (
                    axis.axhline(final.mean(), linestyle="--", linewidth=1, color=colour)
                )
        axis.set_title(result.experiment.name, fontsize=10, **PLAIN_TEXT)
        axis.set_xlabel(LAYER_AXIS_LABELS.get(info.axis, AXIS_LABELS.get(info.axis, info.axis)))
        axis.set_ylabel(f"{metric} ({info.direction})")
        axis.grid(alpha=0.3)
        plain_legend(
            axis,
            lines.values(),
            lines.keys(),
            fontsize=7,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
        )
    width, height = figure.get_size_inches()
    figure.set_size_inches(width + 2.6, height + 0.6)  # room for the legend at the right
    _title(figure, title or f"{info.description}, per layer")
    _laid_out(figure, unfinished)
    _save(plt, figure, path)
    return True
