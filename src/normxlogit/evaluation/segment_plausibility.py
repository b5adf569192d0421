"""Plausibility at the segment level: does a method rank the segments a person marked as
evidence (the evidence sentences of an ERASER BoolQ passage) first?

The evidence of a text is the list of its evidence segments' indices
(``evaluate(..., evidence=[[0, 2], [1], ...])``, one list per text, over the segments of
``explain(..., segments=...)``). Segments are ranked by the explanation's segment scores
(ties: the earlier segment, or numpy's ``argsort`` order with ``Protocol(ties="argsort")``).

- ``segment_auprc``: the area under the precision-recall curve of the segment scores
  against the evidence (scikit-learn's curve, trapezoid area: ERASER's AUPRC over
  segments);
- ``segment_hit_1``, ``segment_hit_3``: whether an evidence segment is among the top 1 or
  3 segments.

A text without evidence segments has no value (NaN, left out of the means, with a
warning that counts them). Like the token plausibility metrics, they run no model.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..common.errors import InvalidInputError, NormXLogitWarning
from .context import EvaluationContext, segmented
from .plausibility import auprc, ranking
from .protocol import Protocol
from .registry import Metric, MetricInfo, register_metric


def segment_evidence(value: Any, segments: int, where: str) -> np.ndarray:
    """A text's evidence segment indices as a 0/1 vector over its ``segments``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence | np.ndarray):
        raise InvalidInputError(
            f"{where} must be the list of the text's evidence segment indices, e.g. [0, 2]; "
            f"got {type(value).__name__}"
        )
    marked = np.zeros(segments, dtype=np.int64)
    for index in value:
        if isinstance(index, bool) or not isinstance(index, int | np.integer):
            raise InvalidInputError(f"{where} holds {index!r}; give segment indices (ints)")
        if not 0 <= index < segments:
            raise InvalidInputError(
                f"{where} holds segment {index}, but the text has {segments} segments "
                f"(0 to {segments - 1})"
            )
        marked[index] = 1
    return marked


class SegmentPlausibility(Metric):
    """One value per method and text from the segment scores and the evidence."""

    protocol_settings = ("ties",)
    reads_answers = True  # scores and evidence only: a whole answer's are ranked alike

    def __init__(self) -> None:
        self._texts: set[int] = set()
        self._empty: set[int] = set()

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        out = []
        for m, b, item, scores in segmented(ctx, self.info.name, "ranks segments"):
            where = f"evidence[{ctx.instances[b]}]"
            marked = segment_evidence(ctx.evidence[b], len(item.segments.texts), where)
            self._texts.add(ctx.instances[b])
            if not marked.any():
                self._empty.add(ctx.instances[b])
                value = float("nan")
            elif np.isnan(scores).any():
                value = float("nan")  # a segment the model did not read: no ranking
            else:
                value = self.judge(ctx.protocol, scores, marked)
            out.append(ctx.row(m, b, None, value))
        return out

    def judge(self, protocol: Protocol, scores: np.ndarray, marked: np.ndarray) -> float:
        raise NotImplementedError

    def finish(self, protocol: Protocol) -> None:
        if self._empty:
            warnings.warn(
                f"{len(self._empty)} of {len(self._texts)} texts have no evidence segment; "
                "they have no value and are left out of the means",
                NormXLogitWarning,
                stacklevel=3,
            )


def _info(name: str, description: str) -> MetricInfo:
    return MetricInfo(
        name, description, True, (0, 1), None, "mean", needs_evidence=True, evidence="segments"
    )


@register_metric
class SegmentAUPRC(SegmentPlausibility):
    info = _info("segment_auprc", "AUPRC of the segment scores against the evidence segments")

    def judge(self, protocol, scores, marked):
        return auprc(scores, marked)


class SegmentHit(SegmentPlausibility):
    k: int

    def judge(self, protocol, scores, marked):
        return float(marked[ranking(scores, protocol.ties)[: self.k]].any())


@register_metric
class SegmentHit1(SegmentHit):
    info = _info("segment_hit_1", "whether the top segment is an evidence segment")
    k = 1


@register_metric
class SegmentHit3(SegmentHit):
    info = _info("segment_hit_3", "whether an evidence segment is among the top 3 segments")
    k = 3
