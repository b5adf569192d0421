"""What the page receives: explanations, generations and evaluations as plain JSON.

Tokens are sent as the renderers show them (``display_text``: newlines as arrows,
invisible characters named), scores as nested lists with NaN as ``null`` (JSON has no
NaN), so the page only draws.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..evaluation import EvaluationResult, metric_info
from ..evaluation.registry import metric_class
from ..explanations.explanation import Explanation
from ..explanations.generation import STEP_AGGREGATIONS, GenerationExplanation, aggregate_steps
from ..render.colors import display_text, display_token


def plain(values: Any) -> Any:
    """Nested lists of floats with NaN and infinities as ``None``."""
    if isinstance(values, np.ndarray):
        values = values.tolist()
    if isinstance(values, list):
        return [plain(v) for v in values]
    if isinstance(values, float) and not math.isfinite(values):
        return None
    return values


def payload(explanation: Explanation | GenerationExplanation) -> dict[str, Any]:
    """Either kind of explanation, as the page draws it."""
    if isinstance(explanation, GenerationExplanation):
        return generation_payload(explanation)
    return explanation_payload(explanation)


def explanation_payload(explanation: Explanation) -> dict[str, Any]:
    """One method's explanation of one text: scores ``[L][T][K]`` (L = 1 without layers)."""
    probs = sorted(explanation.probs.items(), key=lambda item: -item[1])
    return {
        "kind": "explanation",
        "method": explanation.method,
        "tokens": [display_text(text) for text in explanation.token_texts],
        "special": explanation.special or [False] * len(explanation.tokens),
        # what each score row explains: "positive", or "positive vs negative"
        "targets": [display_text(text) for text in explanation.column_titles],
        "label": display_text(explanation.label_text),
        "value": explanation.value,
        "probs": [[display_text(explanation.text_of(name)), p] for name, p in probs],
        "layers": explanation.layers,
        # per layer, what the slider says beside the layer's number (None: nothing)
        "layer_notes": _layer_notes(explanation),
        "scores": plain(explanation.scores_3d()),
        "segments": explanation_segments(explanation),
        "settings": plain_settings(explanation.settings),
    }


#: NormXLogit's last row of an every-layer run: not the final-layer explanation
_OWN_NORM = (
    "this layer's own norm (EachLayerNormXLogit), not NormXLogit at Layers: final layer, "
    "which uses the input-embedding norm"
)


def _layer_notes(explanation: Explanation) -> list[str | None] | None:
    """NormXLogit per layer multiplies by each layer's own norm (``norm="layer"``), so its
    last row differs from the final-layer NormXLogit (eq. 4: the input-embedding norm):
    the last layer is labelled so."""
    layers = explanation.layers
    if not layers or explanation.method != "normxlogit":
        return None
    if explanation.settings.get("norm", "layer") != "layer":
        return None
    return [None] * (len(layers) - 1) + [_OWN_NORM]


def explanation_segments(explanation: Explanation) -> dict[str, Any] | None:
    """The text's segments, each token's segment (None: of none) and the segment scores
    ``[L][S][K]`` as the token scores; None without segments."""
    segments = explanation.segments
    if segments is None:
        return None
    scores = segments.scores if explanation.has_layers else segments.scores[None]
    scores = scores if explanation.has_targets_axis else scores[..., None]
    return {
        "texts": [display_text(text) for text in segments.texts],
        "token_segments": list(segments.token_segments),
        "scores": plain(scores),
        "how": segments.how,
    }


def generation_payload(explanation: GenerationExplanation) -> dict[str, Any]:
    """A generation: the step x token matrix ``[S][T]`` (final layer) with NaN where a
    step cannot see the token (a step not explained: all NaN, and left out of
    ``explained_steps``), and every step aggregate."""
    scores = explanation.scores[:, -1] if explanation.has_layers else explanation.scores
    return {
        "kind": "generation",
        "method": explanation.method,
        "tokens": [display_text(text) for text in explanation.token_texts],
        "special": explanation.special or [False] * len(explanation.tokens),
        "prompt_length": explanation.prompt_length,
        "step_probs": plain([float(p) for p in explanation.step_probs]),
        "step_scores": {name: plain(values) for name, values in explanation.step_scores.items()},
        "contrasts": (
            [display_text(t) for t in explanation.contrast_texts or explanation.contrasts]
            if explanation.contrasts
            else None
        ),
        "predicted": [display_text(display_token(t)) for t in explanation.predicted],
        "generated_text": explanation.generated_text,
        "scores": plain(scores),
        # a step whose token is its contrast's explains nothing: shown as not explained
        "explained_steps": [
            step for step in explanation.steps_with_scores if step not in _same_steps(explanation)
        ],
        "aggregates": {how: plain(explanation.aggregate(how)) for how in STEP_AGGREGATIONS},
        "segments": generation_segments(explanation),
        "settings": plain_settings(explanation.settings),
    }


def generation_segments(explanation: GenerationExplanation) -> dict[str, Any] | None:
    """The prompt's segments: each step's segment scores ``[S][n]`` (final layer; NaN for
    a step not explained) and their aggregates over the steps, as the token scores'."""
    segments = explanation.segments
    if segments is None:
        return None
    steps = segments.scores[:, -1] if explanation.has_layers else segments.scores
    return {
        "texts": [display_text(text) for text in segments.texts],
        "token_segments": list(segments.token_segments),
        "steps": plain(steps),
        "aggregates": {how: plain(over_steps(steps, how)) for how in STEP_AGGREGATIONS},
        "how": segments.how,
    }


def over_steps(scores: np.ndarray, how: str) -> np.ndarray:
    """Scores ``[steps, n]`` aggregated over the steps as
    :meth:`GenerationExplanation.aggregate` aggregates token scores (NaN steps left out)."""
    return aggregate_steps(np.asarray(scores, dtype=np.float64), how)


def _same_steps(explanation: GenerationExplanation) -> list[Any]:
    """The steps whose token is the contrast's own (nothing explained), as saved."""
    steps = explanation.settings.get("contrast_is_target_steps")
    return steps if isinstance(steps, list) else []


def plain_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings as JSON-safe values, as the saved explanation writes them: a list (a
    bench method's ``target = ["negative"]``) as a JSON list, not its Python text;
    anything else JSON has no value for as its text."""
    return {k: _plain_setting(v) for k, v in settings.items()}


def _plain_setting(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain_setting(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain_setting(item) for key, item in value.items()}
    if isinstance(value, np.generic):  # a numpy scalar: its number
        return _plain_setting(value.item())
    return str(value)


def evaluation_payload(result: EvaluationResult) -> dict[str, Any]:
    """Curves and the summary table of an evaluation (see :func:`results_payload`); a
    contrastive run's metrics carry the range its values lie in."""
    return results_payload(result.summary().frame, result.curves(), result.contrastive)


def results_payload(
    summary: pd.DataFrame, curves: pd.DataFrame, contrastive: bool = False
) -> dict[str, Any]:
    """A summary (methods x metrics) with each metric's metadata, so the page sorts and
    colours it the right way, and each metric's curve per method (one value per x:
    instances and steps already combined); ``contrastive``: the methods explain a
    contrast, so a metric that reads p(target) - p(contrast) has its contrastive range."""
    drawn: dict[str, Any] = {}
    for metric, rows in curves.groupby("metric", sort=False):
        xs = sorted(rows["x"].unique().tolist())
        drawn[str(metric)] = {
            "axis": metric_info(str(metric)).axis,
            "x": plain(xs),
            "methods": {
                method: plain(part.set_index("x")["value"].reindex(xs).astype(float).tolist())
                for method, part in rows.groupby("method", sort=False)
            },
        }
    metrics = []
    for metric in summary.columns:
        info = metric_class(metric).ranged_info(contrastive)
        metrics.append(
            {
                "name": metric,
                "description": info.description,
                "higher_is_better": info.higher_is_better,
                "range": plain(list(info.value_range)),
                "summary": info.summary,
            }
        )
    rows = [
        {"method": method, "values": {m: plain(float(summary.loc[method, m])) for m in summary}}
        for method in summary.index
    ]
    return {"metrics": metrics, "rows": rows, "curves": drawn}
