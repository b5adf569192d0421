"""``GenerationExplanation``: scores of every token for every generated step.

``tokens`` are the prompt's tokens followed by the generated ones; step ``t`` predicts
``tokens[P + t]`` and scores the ``P + t`` tokens before it. ``scores`` are ``[S, T]``
(``[S, L, T]`` with a layer axis) with NaN at and after each step's own position: a token
the step could not see has no score, which is not the same as a score of zero. A
generation explained at chosen steps only (``explain_steps=``, listed in
``explained_steps``) has NaN rows for the others: their probability and step scores are
there, their token scores are not.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field, replace
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from ..common.errors import InvalidInputError
from ..common.fields import (
    ARRAY,
    BOOLEAN,
    BOOLEANS,
    INTEGER,
    INTEGERS,
    NUMBER_LISTS_BY_NAME,
    NUMBERS,
    OBJECT,
    STRING,
    STRINGS,
    check_token_ids,
    check_within,
    shown_value,
)
from ..common.outputs import checked_choice
from ..common.saved_kinds import GENERATION_KIND
from .base import ExplanationBase
from .explanation import Explanation, layer_position
from .segments import SegmentScores

KIND = GENERATION_KIND  # the "kind" key of a saved generation explanation

#: what :meth:`GenerationExplanation.from_dict` needs, and what each field must hold
_REQUIRED = {
    "prompt": STRING,
    "tokens": STRINGS,
    "prompt_length": INTEGER,
    "scores": ARRAY,
    "method": STRING,
}
_OPTIONAL = {
    "step_probs": NUMBERS,
    "predicted": STRINGS,
    "generated_by_model": BOOLEAN,
    "settings": OBJECT,
    "layers": INTEGERS,
    "special": BOOLEANS,
    "model": STRING,
    "diagnostics": OBJECT,
    "token_texts": STRINGS,
    "input_ids": INTEGERS,
    "step_scores": NUMBER_LISTS_BY_NAME,
    "contrasts": STRINGS,
    "contrast_texts": STRINGS,
    "explained_steps": INTEGERS,
    "model_signature": STRING,
    "segments": OBJECT,
}


def _renamed_step_scores(scores: dict[str, list[float]]) -> dict[str, list[float]]:
    """Step scores saved before ``same_prefix_prob_diff`` had its name: those files called
    it ``contrast_prob_diff`` (beside ``contrast_probability``, with no Inseq difference),
    a name that now means Inseq's."""
    old = "contrast_prob_diff" in scores and "contrast_probability" in scores
    if not old or "same_prefix_prob_diff" in scores:
        return scores
    renamed = {k: v for k, v in scores.items() if k != "contrast_prob_diff"}
    return {**renamed, "same_prefix_prob_diff": scores["contrast_prob_diff"]}


#: how :meth:`GenerationExplanation.aggregate` merges steps into one score per token
STEP_AGGREGATIONS = ("sum", "mean", "max", "absmax", "normalized")


@dataclass
class GenerationExplanation(ExplanationBase):
    """What a causal LM wrote after ``prompt``, explained step by step."""

    KIND = KIND
    REQUIRED = _REQUIRED
    OPTIONAL = _OPTIONAL

    prompt: str
    tokens: list[str]
    prompt_length: int
    scores: np.ndarray
    method: str
    #: the model's probability of each step's token given its prefix
    step_probs: list[float]
    #: the model's own most likely token at each step (differs from the step's token only
    #: where a given continuation is explained)
    predicted: list[str]
    #: True when the model wrote the continuation (greedy), False when it was given
    generated_by_model: bool = True
    settings: dict[str, Any] = field(default_factory=dict)
    layers: list[int] | None = None
    special: list[bool] = field(default_factory=list)
    model: str = ""
    #: per-step numbers a method reports about itself, e.g. IG's ``convergence_delta``
    diagnostics: dict[str, list[float]] = field(default_factory=dict)
    token_texts: list[str] = field(default_factory=list)
    #: the token ids of ``tokens`` (what evaluation runs the model on)
    input_ids: list[int] | None = None
    #: per-step numbers to choose the steps worth explaining: ``probability`` and
    #: ``entropy``; with a contrast ``contrast_probability`` and ``same_prefix_prob_diff``
    #: (the contrast token after the explained prefix); with a contrast prompt
    #: ``kl_divergence`` and ``pcxmi``; with either, Inseq's ``contrast_prob_diff`` (the
    #: contrast token after the contrast's own prefix; see ``generation``)
    step_scores: dict[str, list[float]] = field(default_factory=dict)
    #: a contrastive explanation's contrast token at every step (the tokenizer's
    #: spelling, and as text); empty otherwise
    contrasts: list[str] = field(default_factory=list)
    contrast_texts: list[str] = field(default_factory=list)
    #: the steps that have token scores, in order (None: every step); the others' rows
    #: are NaN (explained with ``explain_steps=``, e.g. only the steps an evaluation scores)
    explained_steps: list[int] | None = None
    #: ``"<dtype>:<digest>"`` of the weights that made it (see ``Explanation``)
    model_signature: str = ""
    #: the prompt's segments and each step's segment scores ``[steps, (L,) S]``
    segments: SegmentScores | None = None

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.float32)
        if self.explained_steps is not None:
            self.explained_steps = sorted({int(s) for s in self.explained_steps})
        problem = self._shape_problem() or self._steps_problem()
        if problem:
            raise InvalidInputError(f"inconsistent generation explanation: {problem}")
        if self.explained_steps == list(range(self.steps)):
            self.explained_steps = None  # every step: one way to say it
        if not self.token_texts:
            from ..common.tokens import TokenTexts

            self.token_texts = TokenTexts.guess(self.tokens, self.special)

    def _shape_problem(self) -> str | None:
        shape = list(self.scores.shape)
        steps = len(self.tokens) - self.prompt_length
        if not 0 < self.prompt_length < len(self.tokens):
            return f"prompt_length {self.prompt_length} leaves no prompt or no generated token"
        expected = [steps, len(self.tokens)]
        if self.layers is not None:
            expected.insert(1, len(self.layers))
        if shape != expected:
            axes = "[steps, layers, tokens]" if self.layers is not None else "[steps, tokens]"
            return f"scores of shape {shape}, expected {axes} = {expected}"
        for name, values in (("step_probs", self.step_probs), ("predicted", self.predicted)):
            if len(values) != steps:
                return f"{steps} steps but {len(values)} entries in {name!r}"
        for key, values in self.diagnostics.items():
            if not isinstance(values, (list, tuple, np.ndarray)) or len(values) != steps:
                given = (
                    f"{len(values)} entries"
                    if isinstance(values, (list, tuple, np.ndarray))
                    else f"one {type(values).__name__} ({values!r:.20})"
                )
                return (
                    f"{steps} steps but {given} in 'diagnostics.{key}'; a generation's "
                    "diagnostics hold one value per step"
                )
        stepwise = {f"step_scores[{k!r}]": v for k, v in self.step_scores.items()}
        contrasts = {"contrasts": self.contrasts, "contrast_texts": self.contrast_texts}
        for name, values in {**stepwise, **contrasts}.items():
            if values and len(values) != steps:
                return f"{steps} steps but {len(values)} entries in {name}"
        pairs = (
            ("special", self.special),
            ("token_texts", self.token_texts),
            ("input_ids", self.input_ids or []),
        )
        for name, values in pairs:
            if values and len(values) != len(self.tokens):
                return f"{len(self.tokens)} tokens but {len(values)} entries in {name!r}"
        return None

    def _steps_problem(self) -> str | None:
        """Explained steps that do not exist, or a step left out that has scores."""
        if self.explained_steps is None:
            return None
        outside = [s for s in self.explained_steps if not 0 <= s < self.steps]
        if outside:
            return f"explained step {outside[0]} of a generation of {self.steps} steps"
        left_out = sorted(set(range(self.steps)) - set(self.explained_steps))
        scored = [s for s in left_out if not np.isnan(self.scores[s]).all()]
        if scored:
            return f"step {scored[0]} has scores but is not among explained_steps"
        return None

    # ------------------------------------------------------------------ views
    @property
    def steps(self) -> int:
        return len(self.tokens) - self.prompt_length

    @property
    def generated(self) -> list[str]:
        """The S generated (or given) tokens, in the tokenizer's own spelling."""
        return self.tokens[self.prompt_length :]

    @property
    def generated_text(self) -> str:
        """The continuation as text."""
        return "".join(self.token_texts[self.prompt_length :])

    @property
    def has_layers(self) -> bool:
        return self.layers is not None

    @property
    def steps_with_scores(self) -> list[int]:
        """The steps explained: every step, or those of ``explained_steps``."""
        if self.explained_steps is None:
            return list(range(self.steps))
        return list(self.explained_steps)

    def is_explained(self, step: int) -> bool:
        """Whether step ``step`` (0 .. S-1) has token scores."""
        return self.explained_steps is None or step in self.explained_steps

    @property
    def contrast_is_target_steps(self) -> list[int]:
        """The steps whose token is their contrast's own: they explain nothing (their
        scores are NaN), and every view shows them as not explained."""
        saved = self.settings.get("contrast_is_target_steps")
        steps = {int(s) for s in saved} if isinstance(saved, list) else set()
        if self.contrasts:
            start = self.prompt_length
            steps |= {
                s
                for s, contrast in enumerate(self.contrasts[: self.steps])
                if start + s < len(self.tokens) and self.tokens[start + s] == contrast
            }
        return sorted(s for s in steps if 0 <= s < self.steps)

    def shown_as_explained(self, step: int) -> bool:
        """Whether the views colour step ``step``: explained, and its token is not its
        contrast's own."""
        return self.is_explained(step) and step not in self.contrast_is_target_steps

    @property
    def steps_shown(self) -> list[int]:
        """The steps the views colour (see :meth:`shown_as_explained`)."""
        return [s for s in self.steps_with_scores if s not in self.contrast_is_target_steps]

    def step(self, index: int, layer: int | None = None) -> Explanation:
        """Step ``index`` as an ordinary
        :class:`~normxlogit.explanations.explanation.Explanation` of its prefix, with the
        step's token as its target (so it renders and evaluates like any next-token
        explanation). ``layer``: one layer of a per-layer explanation."""
        if isinstance(index, bool) or not isinstance(index, Integral):
            raise InvalidInputError(
                f"step() takes a step number, an int (0 .. {self.steps - 1}, or negative "
                f"from the end), got {shown_value(index)}"
            )
        index = int(index)
        if not -self.steps <= index < self.steps:
            raise InvalidInputError(
                f"step {index} does not exist; this generation has {self.steps}"
            )
        index %= self.steps
        if not self.is_explained(index):
            raise InvalidInputError(
                f"step {index} was not explained; this generation explains steps "
                f"{_listed(self.steps_with_scores)} (pick among these, or explain it again "
                f"with explain_steps= including {index})"
            )
        end = self.prompt_length + index
        scores = self.scores[index]
        layers = self.layers
        position = None if layer is None else self._layer_index(layer)
        if self.has_layers and position is not None:
            scores, layers = scores[position], None
        scores = scores[..., :end]
        segments = None
        if self.segments is not None:
            picked = self.segments.scores[index]
            if self.has_layers and position is not None:
                picked = picked[position]
            segments = replace(
                self.segments, token_segments=self.segments.token_segments[:end], scores=picked
            )
        token = self.tokens[end]
        shown = {token: self.token_texts[end]}
        contrasts = []
        if self.contrasts:
            contrasts = [self.contrasts[index]]
            shown[contrasts[0]] = (self.contrast_texts or self.contrasts)[index]
        return Explanation(
            text=self.prompt,
            tokens=self.tokens[:end],
            scores=scores.copy(),
            targets=[token],
            label=token,
            probs={token: float(self.step_probs[index])},
            method=self.method,
            settings={**self.settings, "step": index},
            layers=layers,
            special=self.special[:end],
            model=self.model,
            diagnostics={k: [v[index]] for k, v in self.diagnostics.items()},
            token_texts=self.token_texts[:end],
            output_texts=shown,
            input_ids=None if self.input_ids is None else self.input_ids[:end],
            contrasts=contrasts,
            model_signature=self.model_signature,
            segments=segments,
        )

    def _layer_index(self, layer: object) -> int:
        """The index along the layer axis of ``layer``: one of ``layers`` or an index
        from the end; without layers only the final layer's (-1, or 0), checked as
        :meth:`Explanation.top_tokens` checks it."""
        return layer_position(self.layers, layer, len(self.layers or [None]))

    def aggregate(self, how: str = "sum", layer: int = -1) -> np.ndarray:
        """One score per token ``[T]`` from every explained step that sees it.

        ``sum``, ``mean``, ``max``, ``absmax`` over the steps (a step that cannot see a token
        is left out, not counted as zero); ``normalized`` first divides each step's scores by
        their absolute sum (so long and short steps weigh alike), then averages. Generated
        tokens are scored only by the steps after them; the last has no score (NaN).
        """
        how = checked_choice(how, "aggregate", STEP_AGGREGATIONS)  # np.array("sum"): "sum"
        position = self._layer_index(layer)  # without layers: checked, the final one's
        scores = self.scores[:, position] if self.has_layers else self.scores
        return aggregate_steps(scores, how)

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.scores.shape))
        chosen = "" if self.explained_steps is None else f", explained={self.explained_steps}"
        return (
            f"GenerationExplanation(method={self.method!r}, prompt_tokens={self.prompt_length}, "
            f"steps={self.steps}{chosen}, scores=[{shape}])"
        )

    # --------------------------------------------------------------- exports
    def to_dict(self) -> dict[str, Any]:
        scores = np.where(np.isnan(self.scores), None, self.scores.astype(object))
        return {
            "kind": KIND,
            "prompt": self.prompt,
            "tokens": self.tokens,
            "prompt_length": self.prompt_length,
            "scores": scores.tolist(),
            "method": self.method,
            "step_probs": [float(p) for p in self.step_probs],
            "predicted": self.predicted,
            "generated_by_model": self.generated_by_model,
            "settings": self.settings,
            "layers": self.layers,
            "special": self.special,
            "model": self.model,
            "diagnostics": self.diagnostics,
            "token_texts": self.token_texts,
            "input_ids": self.input_ids,
            "step_scores": self.step_scores,
            **(
                {"contrasts": self.contrasts, "contrast_texts": self.contrast_texts}
                if self.contrasts
                else {}
            ),
            **({} if self.explained_steps is None else {"explained_steps": self.explained_steps}),
            **({"model_signature": self.model_signature} if self.model_signature else {}),
            **({"segments": self.segments.to_dict()} if self.segments is not None else {}),
        }

    @classmethod
    def _missing(cls, missing: list[str], data: dict[str, Any]) -> str:
        return f"a generation explanation without {', '.join(missing)}"

    @classmethod
    def _from_checked(cls, data: dict[str, Any], scores: np.ndarray) -> GenerationExplanation:
        _check_step_values(data)
        generation = cls(
            prompt=data["prompt"],
            tokens=list(data["tokens"]),
            prompt_length=int(data["prompt_length"]),
            scores=scores,
            method=data["method"],
            step_probs=[float(p) for p in data.get("step_probs") or []],
            predicted=list(data.get("predicted") or []),
            generated_by_model=bool(data.get("generated_by_model", True)),
            settings=dict(data.get("settings") or {}),
            layers=data.get("layers"),
            special=list(data.get("special") or []),
            model=data.get("model") or "",
            diagnostics=dict(data.get("diagnostics") or {}),
            token_texts=list(data.get("token_texts") or []),
            input_ids=data.get("input_ids"),
            step_scores=_renamed_step_scores(
                {
                    str(k): [float("nan") if x is None else float(x) for x in v]
                    for k, v in (data.get("step_scores") or {}).items()
                }
            ),
            contrasts=list(data.get("contrasts") or []),
            contrast_texts=list(data.get("contrast_texts") or []),
            explained_steps=data.get("explained_steps"),
            model_signature=data.get("model_signature") or "",
        )
        if data.get("segments") is not None:  # fits the token scores, checked first
            generation.segments = SegmentScores.from_dict(data["segments"], scores, -1)
        return generation

    def to_frame(self) -> pd.DataFrame:
        """Tidy scores: one row per explained step, (layer,) and token the step sees; with
        contrasts, each step's contrast and whether it is the step's own token (NaN scores)."""
        records = []
        layers = self.layers if self.has_layers else [None]
        for step in self.steps_with_scores:
            end = self.prompt_length + step
            contrast = self._contrast_columns(step)
            for li, layer in enumerate(layers):
                row = self.scores[step, li] if self.has_layers else self.scores[step]
                for position in range(end):
                    records.append(
                        {
                            "step": step,
                            "step_token": self.tokens[end],
                            "step_text": self.token_texts[end],
                            "layer": layer,
                            "position": position,
                            "token": self.tokens[position],
                            "text": self.token_texts[position],
                            "generated": position >= self.prompt_length,
                            **(
                                {"segment": self.segments.token_segments[position]}
                                if self.segments is not None
                                else {}
                            ),
                            **contrast,
                            "score": float(row[position]),
                        }
                    )
        return self._finish_frame(pd.DataFrame.from_records(records), self.has_layers)

    def _contrast_columns(self, step: int) -> dict[str, Any]:
        """A frame row's contrast cells: the step's contrast token and whether it is the
        step's own (its scores NaN: the step explains nothing); none without contrasts."""
        if not self.contrasts:
            return {}
        flagged = step in self.contrast_is_target_steps
        return {"contrast": self.contrasts[step], "contrast_is_target": flagged}

    def segments_frame(self) -> pd.DataFrame:
        """Tidy segment scores: one row per explained step, (layer,) and segment of the
        prompt, as :meth:`Explanation.segments_frame` gives for one prediction."""
        if self.segments is None:
            raise InvalidInputError(
                "this explanation has no segments; explain with segments='sentences' or a "
                "list of the prompt's segments"
            )
        layers = self.layers if self.has_layers else [None]
        records = []
        for step in self.steps_with_scores:
            end = self.prompt_length + step
            for li, layer in enumerate(layers):
                row = (
                    self.segments.scores[step, li]
                    if self.has_layers
                    else self.segments.scores[step]
                )
                for index, text in enumerate(self.segments.texts):
                    records.append(
                        {
                            "step": step,
                            "step_token": self.tokens[end],
                            "step_text": self.token_texts[end],
                            "layer": layer,
                            "segment": index,
                            "text": text,
                            **self._contrast_columns(step),
                            "score": float(row[index]),
                            "reduction": self.segments.how,
                        }
                    )
        return self._finish_frame(pd.DataFrame.from_records(records), self.has_layers)

    def to_html(self) -> str:
        """A standalone page: the step x token heatmap, and the text coloured by a chosen
        step or by an aggregate over steps."""
        from ..render.generation import render_generation_html

        return render_generation_html([self])

    def __rich_console__(self, console, options):
        from ..render.generation import render_generation_rich

        yield from render_generation_rich(self)


#: step scores that are probabilities (of the step's token, of the contrast token after
#: the same prefix or after the contrast prompt), each from 0 to 1, null where missing
_PROBABILITY_SCORES = ("probability", "contrast_probability", "contrast_input_probability")
#: step scores that are differences of two such probabilities, each from -1 to 1
_DIFFERENCE_SCORES = ("same_prefix_prob_diff", "contrast_prob_diff")
_SLACK = 1e-6  # float32 rounding


def _check_step_values(data: dict[str, Any]) -> None:
    """Refuse a saved generation's numbers no model writes (their types are checked): token
    ids past 64 bits, which fail inside the tokenizer; step probabilities outside 0..1 or
    NaN, shown as they are, and their differences outside -1..1; a negative entropy. Ids
    past the vocabulary are refused where the model is known (evaluation)."""
    if data.get("input_ids") is not None:
        check_token_ids(data["input_ids"], "input_ids")
    probability = "the probability of each step's token, a number from 0 to 1"
    check_within(data.get("step_probs") or [], "step_probs", 0.0, 1.0 + _SLACK, probability)
    for key, values in (data.get("step_scores") or {}).items():
        name = f"step_scores.{key}"
        if key in _PROBABILITY_SCORES:
            what = "probabilities, numbers from 0 to 1 (null where missing)"
            check_within(values, name, 0.0, 1.0 + _SLACK, what, missing=True)
        elif key in _DIFFERENCE_SCORES:
            what = "differences of two probabilities, numbers from -1 to 1 (null where missing)"
            check_within(values, name, -1.0 - _SLACK, 1.0 + _SLACK, what, missing=True)
        elif key == "entropy":
            what = "each step's entropy over the vocabulary, a number from 0 (null where missing)"
            check_within(values, name, -_SLACK, sys.float_info.max, what, missing=True)


def _listed(steps: list[int]) -> str:
    """Steps as a short list for a message (``0, 5, 10, ... 30``)."""
    shown = [str(s) for s in steps]
    return ", ".join(shown if len(shown) <= 8 else [*shown[:6], "...", shown[-1]]) or "none"


def aggregate_steps(scores: np.ndarray, how: str) -> np.ndarray:
    """Scores ``[steps, n]`` (tokens or segments) merged over the steps as
    :meth:`GenerationExplanation.aggregate` says; a column no step scores stays NaN."""
    with warnings.catch_warnings():  # a column no step sees: NaN, on purpose
        warnings.simplefilter("ignore", RuntimeWarning)
        if how == "normalized":
            total = np.nansum(np.abs(scores), axis=1, keepdims=True)
            return np.nanmean(scores / np.where(total > 0, total, 1.0), axis=0)
        if how == "absmax":
            filled = np.where(np.isnan(scores), 0.0, np.abs(scores))
            picked = np.take_along_axis(scores, filled.argmax(0)[None], axis=0)[0]
            return np.where(np.isnan(scores).all(0), np.nan, picked)
        return {"sum": _nansum, "mean": np.nanmean, "max": np.nanmax}[how](scores, axis=0)


def _nansum(scores: np.ndarray, axis: int) -> np.ndarray:
    """Sum over steps, NaN where no step sees the token (numpy's nansum gives 0)."""
    return np.where(np.isnan(scores).all(axis), np.nan, np.nansum(scores, axis=axis))
