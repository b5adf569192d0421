"""Methods native to segments: they remove whole segments of the text, read the model
again, and score each segment from how the target's log-probability moves.

Each method says which segment subsets it needs read (:meth:`SegmentMethod.plan`, kept
segments as ``[N, S]`` masks) and how their values become scores
(:meth:`SegmentMethod.combine`); :mod:`normxlogit.explaining.segment_games` reads every
text's subsets in batched forward passes. The value of a subset is the log-probability
of the target (a label, a token, or a whole answer's tokens summed), the output itself
for a regressor.

- ``leave_one_out``: the value with every segment minus the value without segment k;
  the same numbers as Captum's ``FeatureAblation`` over the segments with empty
  baselines (``tests/context/test_captum_segments.py``).
- ``feature_ablation``: Captum's ``FeatureAblation`` with a replacement text: segment k
  becomes ``replacement`` instead of disappearing.
- ``shapley_sampling``: Captum's ``ShapleyValueSampling``: ``samples`` random orders
  (``torch.randperm`` from a generator seeded by ``seed``, as Captum draws after
  ``torch.manual_seed(seed)``), each segment credited with what adding it changes.
- ``contextcite``: ContextCite's surrogate (Cohen-Wang et al., 2024): ``ablations``
  random subsets (each segment kept with probability ``keep``; NumPy's
  ``RandomState(seed + i)`` per subset, as ContextCite draws), and a Lasso
  (``alpha``) of the answer's logit-probability ``log p - log(1 - p)`` on the kept masks;
  the scores are its weights. A regressor's output is no probability: it is fitted as it
  is (``output="logit_prob"`` is refused there).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import ClassVar

import numpy as np
import torch

from ..common.errors import InvalidInputError
from ..model.tasks import TaskKind
from .base import AttributionMethod, bounded, register_method


@dataclass
class SegmentPlan:
    """The kept-segment masks ``[N, S]`` a method needs valued, and what it needs besides
    to combine their values (a Shapley sample's orders)."""

    masks: np.ndarray
    orders: list[list[int]] = field(default_factory=list)


@dataclass
class SegmentMethod(AttributionMethod):
    """A method that scores segments by removing them (``explain(..., segments=...)``)."""

    single_forward: ClassVar[bool] = False
    no_contrast: ClassVar[str | None] = (
        "segment methods score the target's own log-probability; explain a contrast with a "
        "token method and segments="
    )
    #: the segment methods need segments: explain refuses them without
    needs_segments: ClassVar[bool] = True
    #: what a removed segment becomes ("" removes it)
    replacement: ClassVar[str] = ""
    #: its subsets share long prefixes with the whole text (one segment removed each): on
    #: a causal model each is read from the key-value cache of its shared prefix
    reuses_prefix: ClassVar[bool] = False

    def attribute(self, model, forward, targets, layers):
        raise InvalidInputError(
            f"{self.name!r} scores segments; pass segments='sentences' (or the text's "
            "segments) to explain"
        )

    @abstractmethod
    def plan(self, count: int) -> SegmentPlan:
        """The subsets (kept masks) to read for a text of ``count`` segments."""

    @abstractmethod
    def combine(self, plan: SegmentPlan, values: np.ndarray, tokens: int = 1) -> np.ndarray:
        """Scores ``[S, K]`` from the plan's values ``[N, K]`` (one column per target);
        ``tokens``: how many tokens the target has (an answer's length, else 1)."""

    def for_task(self, kind: TaskKind) -> SegmentMethod:
        """The method as it reads a model of this ``kind`` (called before any work, so
        what it cannot do there is refused first)."""
        return self

    def excess_draws(self, count: int) -> str | None:
        """Why this method's random draws cannot serve a text of ``count`` segments (None:
        they can): far beyond the distinct subsets (or orders), which are read once each,
        so the draws alone would run for minutes only to repeat them; or (ContextCite) all
        the same subset, which leaves nothing to fit. Refused before any work."""
        return None

    def unvaried_draws(self, count: int) -> str | None:
        """Why some of ``count`` segments are kept in all of this method's random draws or
        dropped in all, so their scores measure nothing (None: each varies). Warned before
        any work."""
        return None

    def forward_passes(self, count: int) -> int:
        """Forward passes per explained text of ``count`` segments (the cost metadata):
        the distinct subsets of its plan and the whole text (explain's own pass, or an
        answer's value with every segment), each read once. Leave-one-out and feature
        ablation: S + 1; Shapley sampling: up to samples x S + 1; ContextCite:
        ablations + 1 (fewer where draws repeat)."""
        everything = np.ones((1, count), dtype=bool)
        masks = np.concatenate([everything, self.plan(count).masks.astype(bool)])
        return len(np.unique(masks, axis=0))

    def cost(self) -> str:
        """The cost in forward passes, in words (``normxlogit methods``)."""
        return "passes: see forward_passes(S)"


#: random draws (ablations, orders) beyond this many per distinct subset or order of a
#: text's segments only repeat them: refused before any work (drawing 10**7 ablations of
#: 3 segments ran for many minutes, to read 8 subsets)
DRAWS_PER_DISTINCT = 1000
#: the most draws (ablations, orders) whatever the text: each costs forward passes, and
#: no study of a text's segments needs more
MAX_DRAWS = 100_000


def _too_many_draws(method: str, option: str, value: int, count: int, distinct: int, what: str):
    """Why ``value`` draws are far beyond the ``distinct`` subsets or orders (``what``) of
    ``count`` segments (None: they are not)."""
    limit = DRAWS_PER_DISTINCT * distinct
    if value <= limit:
        return None
    segments = f"{count} segment{'s' if count != 1 else ''}"
    return (
        f"{method} {option}={value} is far more than the {distinct} distinct {what}s of "
        f"{segments}: the draws would repeat each about {value // distinct} times, adding "
        f"time (the model reads each subset once), not information; give {option} at most "
        f"{limit} ({DRAWS_PER_DISTINCT} per {what})"
    )


@lru_cache(maxsize=16)
def _ablations(seed: int, keep: float, ablations: int, count: int) -> np.ndarray:
    """ContextCite's kept masks ``[ablations, count]`` (RandomState(seed + i) draws
    ablation i, as ContextCite draws): cached, as explain checks them before reading them
    (100000 ablations take seconds to draw). Read-only: :meth:`ContextCite.plan` copies."""
    masks = np.stack(
        [
            np.random.RandomState(seed + i).choice([False, True], size=count, p=[1 - keep, keep])
            for i in range(ablations)
        ]
    )
    masks.flags.writeable = False
    return masks


def _segments(count: int) -> str:
    return f"{count} segment{'s' if count != 1 else ''}"


def _all_and_each_removed(count: int) -> np.ndarray:
    masks = np.ones((count + 1, count), dtype=bool)
    masks[np.arange(1, count + 1), np.arange(count)] = False
    return masks


@register_method
@dataclass
class LeaveOneOut(SegmentMethod):
    """Each segment scored by the value lost when it alone is removed."""

    name: ClassVar[str] = "leave_one_out"
    description: ClassVar[str] = (
        "segments: value with all minus value without the segment (S + 1 passes)"
    )
    reuses_prefix: ClassVar[bool] = True

    def plan(self, count: int) -> SegmentPlan:
        return SegmentPlan(_all_and_each_removed(count))

    def combine(self, plan: SegmentPlan, values: np.ndarray, tokens: int = 1) -> np.ndarray:
        return values[0][None] - values[1:]

    def cost(self) -> str:
        return "S + 1 passes"


@register_method
@dataclass
class FeatureAblation(LeaveOneOut):
    """Captum's FeatureAblation over segments: each segment replaced by ``replacement``."""

    name: ClassVar[str] = "feature_ablation"
    description: ClassVar[str] = (
        "segments: Captum's FeatureAblation, each segment replaced by a text (S + 1 passes)"
    )

    #: what an ablated segment becomes ("" removes it: then equal to leave_one_out)
    replacement: str = ""


@register_method
@dataclass
class ShapleySampling(SegmentMethod):
    """Captum's ShapleyValueSampling over segments."""

    name: ClassVar[str] = "shapley_sampling"
    description: ClassVar[str] = (
        "segments: Shapley value sampling over random orders (about samples x S passes)"
    )

    samples: int = bounded(
        25, low=1, high=MAX_DRAWS, why_high="each order is a forward pass per segment"
    )
    seed: int = 0
    #: what a segment not yet added becomes ("" removes it)
    replacement: str = ""

    def plan(self, count: int) -> SegmentPlan:
        generator = torch.Generator().manual_seed(self.seed)
        orders = [torch.randperm(count, generator=generator).tolist() for _ in range(self.samples)]
        masks = [np.zeros(count, dtype=bool)]
        for order in orders:
            kept = np.zeros(count, dtype=bool)
            for segment in order:
                kept = kept.copy()
                kept[segment] = True
                masks.append(kept)
        return SegmentPlan(np.stack(masks), orders)

    def combine(self, plan: SegmentPlan, values: np.ndarray, tokens: int = 1) -> np.ndarray:
        count = plan.masks.shape[1]
        scores = np.zeros((count, values.shape[1]))
        row = 1
        for order in plan.orders:
            before = values[0]
            for segment in order:
                scores[segment] += values[row] - before
                before = values[row]
                row += 1
        return scores / len(plan.orders)

    def excess_draws(self, count: int) -> str | None:
        distinct = math.factorial(min(count, 20))  # beyond 20, no sample count comes near
        return _too_many_draws(
            "shapley_sampling", "samples", self.samples, count, distinct, "order"
        )

    def cost(self) -> str:
        return "up to samples x S + 1 passes (repeated subsets read once)"


@register_method
@dataclass
class ContextCite(SegmentMethod):
    """ContextCite's sparse linear surrogate on random ablations. On a regressor the
    surrogate fits the output itself: ContextCite's logit-probability assumes a
    probability, and a regressor's output is none."""

    name: ClassVar[str] = "contextcite"
    description: ClassVar[str] = (
        "segments: ContextCite's Lasso surrogate on random ablations (ablations passes)"
    )

    ablations: int = bounded(
        64,
        low=2,
        high=MAX_DRAWS,
        why_low="the surrogate is fitted to them",
        why_high="each is a forward pass",
    )
    #: the probability of keeping each segment in an ablation
    keep: float = 0.5
    #: the Lasso's regularisation
    alpha: float = 0.01
    #: the surrogate's target: ContextCite's "logit_prob" (log p - log(1 - p)) or
    #: "log_prob" (the value itself); None: "logit_prob", but a regressor's output as it is
    #: (it is no probability)
    output: str | None = None
    #: NumPy's RandomState(seed + i) draws ablation i (so it must be >= 0)
    seed: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.keep < 1.0:
            raise InvalidInputError(f"contextcite keep={self.keep} must lie strictly in (0, 1)")
        if self.output not in (None, "logit_prob", "log_prob"):
            raise InvalidInputError(
                f"contextcite output={self.output!r}: use 'logit_prob' (ContextCite's) or "
                "'log_prob'"
            )
        if not self.alpha >= 0:
            raise InvalidInputError(
                f"contextcite alpha={self.alpha} must be >= 0 (the Lasso's penalty; 0: none)"
            )
        if self.seed < 0:
            raise InvalidInputError(
                f"contextcite seed={self.seed} must be >= 0 (NumPy's RandomState(seed + i) "
                "draws ablation i, as ContextCite draws)"
            )

    def for_task(self, kind: TaskKind) -> ContextCite:
        """The output the surrogate fits resolved for the model: a regressor's output is
        no probability, so it is fitted as it is and ``"logit_prob"`` is refused."""
        if kind is not TaskKind.REGRESSION:
            return replace(self, output=self.output or "logit_prob")
        if self.output == "logit_prob":
            raise InvalidInputError(
                "contextcite output='logit_prob' reads the value as a probability, and a "
                "regressor's output is none; leave output out (the output is fitted as it is)"
            )
        return replace(self, output="log_prob")

    def plan(self, count: int) -> SegmentPlan:
        return SegmentPlan(_ablations(self.seed, self.keep, self.ablations, count).copy())

    def combine(self, plan: SegmentPlan, values: np.ndarray, tokens: int = 1) -> np.ndarray:
        columns = range(values.shape[1])
        return np.stack([self.surrogate(plan.masks, values[:, k], tokens)[0] for k in columns], -1)

    def surrogate(
        self, masks: np.ndarray, log_probs: np.ndarray, tokens: int = 1
    ) -> tuple[np.ndarray, float]:
        """The Lasso's weights and bias on the kept ``masks`` for the values' outputs, as
        ContextCite's ``LassoRegression.fit`` computes them: outputs divided by the
        answer's ``tokens`` before the fit (which scales the penalty's effect) and the
        weights multiplied back."""
        from sklearn.linear_model import Lasso
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        outputs = self.outputs(log_probs) / tokens
        scaler, lasso = StandardScaler(), Lasso(alpha=self.alpha, random_state=0)
        make_pipeline(scaler, lasso).fit(masks.astype(np.float32), outputs)
        weight = lasso.coef_ / scaler.scale_
        bias = float(lasso.intercept_ - (scaler.mean_ / scaler.scale_) @ lasso.coef_)
        return weight * tokens, bias * tokens

    def outputs(self, log_probs: np.ndarray) -> np.ndarray:
        """The surrogate's regression targets from the values (log-probabilities, or a
        regressor's outputs, which :meth:`for_task` fits as they are)."""
        if self.output == "log_prob":
            return log_probs
        return log_probs - np.log1p(-np.exp(np.minimum(log_probs, -1e-12)))

    def excess_draws(self, count: int) -> str | None:
        distinct = 2 ** min(count, 40)  # beyond 40, no ablation count comes near
        too_many = _too_many_draws(
            "contextcite", "ablations", self.ablations, count, distinct, "subset"
        )
        if too_many is not None:
            return too_many
        if len(self._constant_segments(count)) < count:
            return None
        return (
            f"contextcite draws the same subset in all {self.ablations} ablations of "
            f"{_segments(count)} (keep={self.keep}, seed={self.seed}): the surrogate has "
            f"nothing to fit and every score would be 0; {self._fix()}"
        )

    def unvaried_draws(self, count: int) -> str | None:
        constant = self._constant_segments(count)
        if not constant or len(constant) == count:  # all: refused by excess_draws
            return None
        which = ", ".join(str(k) for k in constant[:10]) + (", ..." if len(constant) > 10 else "")
        return (
            f"contextcite keeps or drops {len(constant)} of {_segments(count)} (numbered "
            f"from 0: {which}) in all {self.ablations} ablations (keep={self.keep}, "
            f"seed={self.seed}): "
            + ("its score of 0 measures" if len(constant) == 1 else "their scores of 0 measure")
            + f" nothing; {self._fix()}"
        )

    def _constant_segments(self, count: int) -> list[int]:
        """The segments kept in every ablation or dropped in every one."""
        masks = _ablations(self.seed, self.keep, self.ablations, count)
        return np.flatnonzero(masks.all(axis=0) | ~masks.any(axis=0)).tolist()

    def _fix(self) -> str:
        return (
            "give keep nearer 0.5 (each segment's chance of being kept) or more ablations"
            if min(self.keep, 1 - self.keep) < 0.1
            else "give more ablations"
        )

    def cost(self) -> str:
        return "ablations passes"
