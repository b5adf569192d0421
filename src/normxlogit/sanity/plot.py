"""The sanity-check figure: similarity to the trained model's explanations by how much of
the model is random, one line per method (Adebayo et al., 2018, figure 2)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.errors import InvalidInputError, NormXLogitWarning, OutputPathError
from ..common.figures import DRAWING, PLAIN_TEXT, plain_legend

if TYPE_CHECKING:
    from .randomization import SanityResult

LABELS = {"spearman": "Spearman rank correlation", "top_k": "top-k overlap"}
#: how to get matplotlib, which draws the figure (an extra: the core install has none)
MATPLOTLIB = "the sanity figure is drawn with matplotlib: pip install 'normxlogit[bench]'"


def check_plotting(instead: str = "") -> None:
    """Refuse, before any work, a figure that cannot be drawn for want of matplotlib
    (``instead``: what else the user can do, e.g. "or leave out --plot")."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise InvalidInputError(MATPLOTLIB + (f", {instead}" if instead else ""))


def plot_sanity(result: SanityResult, path: Path, metric: str = "spearman") -> Path:
    """Mean similarity per method (with its spread over texts) at each randomisation step;
    the x axis names the group made random at that step. Written atomically as a PNG."""
    from ..common.outputs import (
        refuse_blank_edges,
        refuse_suffix_only,
        save_figure,
        suffix_tail_hint,
    )

    if metric not in LABELS:
        raise InvalidInputError(f"metric={metric!r} is not one of: {', '.join(LABELS)}")
    refuse_suffix_only(path, suffixes=(".png",))
    if path.suffix.lower() != ".png":
        raise OutputPathError(
            f"{path}: the figure is a PNG; give the file a .png name"
            f"{suffix_tail_hint(path, ('.png',))}"
        )
    refuse_blank_edges(path)  # " p.png": before the figure is drawn
    check_plotting()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with DRAWING:  # one figure at a time: matplotlib is not thread-safe
        frame = result.frame
        modes = list(dict.fromkeys(frame["mode"]))
        methods = list(dict.fromkeys(frame["method"]))
        palette = matplotlib.colormaps["tab10" if len(methods) <= 10 else "tab20"]
        colours = {method: palette(index % palette.N) for index, method in enumerate(methods)}
        figure, axes = plt.subplots(1, len(modes), figsize=(6.5 * len(modes), 4.2), squeeze=False)
        undrawn: list[str] = []
        for axis, mode in zip(axes[0], modes, strict=True):
            part = frame[frame["mode"] == mode]
            names = list(dict.fromkeys(part["randomized"]))
            lines = {}  # the legend's entries, given explicitly: a label may start with "_"
            for method, rows in part.groupby("method", sort=False):
                grouped = rows.groupby("step")[metric]
                mean, spread = grouped.mean(), grouped.std().fillna(0.0)
                if mean.isna().all():  # n/a for every text: a lone "trained" point would mislead
                    (lines[f"{method} (n/a)"],) = axis.plot([], [], color=colours[method])
                    undrawn.append(f"{method} ({mode})")
                    continue
                steps = [0, *(s + 1 for s in mean.index)]
                values = [1.0, *mean.tolist()]
                line = lines[method] = axis.plot(steps, values, marker="o", color=colours[method])[
                    0
                ]
                axis.fill_between(
                    steps[1:],
                    (mean - spread).tolist(),
                    (mean + spread).tolist(),
                    color=line.get_color(),
                    alpha=0.12,
                )
            axis.set_xticks(range(len(names) + 1))
            axis.set_xticklabels(
                ["trained", *names], rotation=45, ha="right", fontsize=8, **PLAIN_TEXT
            )
            axis.axhline(0.0, color="#999", linewidth=0.8)
            axis.set_ylim(-1.05 if metric == "spearman" else -0.05, 1.05)
            axis.set_ylabel(LABELS[metric])
            title = {
                "cascading": "cascading randomisation (from the top)",
                "independent": "independent randomisation (one group at a time)",
                "data": "data randomisation",
            }
            axis.set_title(title.get(mode, mode))
            plain_legend(axis, lines.values(), lines.keys(), fontsize=7, loc="lower left")
        figure.tight_layout()
        if undrawn:
            warnings.warn(
                _undrawn_message(undrawn, metric, result), NormXLogitWarning, stacklevel=3
            )
        try:
            return save_figure(figure, path, dpi=130)
        finally:
            plt.close(figure)


def _undrawn_message(undrawn: list[str], metric: str, result: SanityResult) -> str:
    """Why some methods have no line in the figure."""
    from .randomization import UNDEFINED, top_k_undefined

    k = result.settings.get("top_k", 5)
    why = UNDEFINED if metric == "spearman" else top_k_undefined(k)
    return (
        f"the figure draws no {LABELS[metric]} for {', '.join(undrawn)}: it is n/a for every "
        f"text ({why}); give longer texts" + ("" if metric == "spearman" else " or a smaller top_k")
    )
