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
warning that counts them). Like the token plausibility metrics, they run no model, and
they warn, counting the texts, where a value cannot tell methods apart: every segment
marked as evidence (any ranking scores 1), too few segments that are not evidence for
hit@k (with k or fewer segments, or only k - 1 not marked, the top k always hold an
evidence segment), and constant segment scores (they rank nothing; the tie order
decides). A segment the model did not read (the text truncated before it) is left out
of the ranking and of the evidence, with a warning that counts them.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.outputs import lone_item, short_value, zero_d_phrase
from .context import EvaluationContext, segmented
from .evidence import SharedWarning, first_to_tell
from .plausibility import auprc, ranking
from .protocol import Protocol
from .registry import Metric, MetricInfo, register_metric


def segment_evidence(value: Any, segments: int, where: str) -> np.ndarray:
    """A text's evidence segment indices as a 0/1 vector over its ``segments``. A
    repeated index is refused: it is what a 0/1 mask over three or more segments looks
    like, and reading a mask as indices would mark the wrong segments."""
    if held := zero_d_phrase(value):  # np.array(0) passes as an array, yet cannot be iterated
        one = lone_item(value)
        example = f"[[{one}]]" if isinstance(one, numbers.Integral) else "[[0, 2]]"
        raise InvalidInputError(
            f"{where} must be a list of segment indices, got {held}; give one list per text "
            f"(for one text: {example})"
        )
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence | np.ndarray):
        raise InvalidInputError(
            f"{where} must be the list of the text's evidence segment indices, e.g. [0, 2]; "
            f"got {type(value).__name__}"
        )
    marked = np.zeros(segments, dtype=np.int64)
    for index in value:
        if isinstance(index, bool) or not isinstance(index, int | np.integer):
            raise InvalidInputError(
                f"{where} holds {short_value(index)}; give segment indices (ints)"
            )
        if not 0 <= index < segments:
            raise InvalidInputError(
                f"{where} holds segment {short_value(index)}, but the text has {segments} "
                f"segment{'' if segments == 1 else 's'} "
                f"(0 to {segments - 1})"
            )
        if marked[index]:
            raise InvalidInputError(
                f"{where} holds segment {index} twice ({short_value(list(value))}); give segment "
                "indices, e.g. [0, 2], not a 0/1 mask"
            )
        marked[index] = 1
    return marked


class SegmentPlausibility(Metric):
    """One value per method and text from the scores and the evidence of the segments
    the model read."""

    protocol_settings = ("ties",)
    reads_answers = True  # scores and evidence only: a whole answer's are ranked alike
    needs_segments = True
    revision = 1  # a truncated text: its read segments ranked (n/a before)

    def __init__(self) -> None:
        self._texts: set[int] = set()
        self._empty: set[int] = set()
        self._unread_evidence: set[int] = set()  # its evidence only in segments not read
        self._full: set[int] = set()  # every segment read is evidence
        self._few: set[int] = set()  # hit@k is 1 whatever the ranking
        self._constant: dict[str, set[int]] = {}
        self._unread: dict[int, int] = {}  # text: its segments the model did not read
        #: per chunk, the segment metrics evaluated there: the first to finish names them
        #: all in one no-evidence warning
        self._shared: list[SharedWarning] = []

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        shared = ctx.cached(("segment evidence", "metrics"), SharedWarning)
        shared.names.add(self.info.name)
        self._shared.append(shared)
        out = []
        for m, b, _, scores, read in segmented(ctx, self.info.name, "ranks segments"):
            where = f"evidence[{ctx.instances[b]}]"
            given = segment_evidence(ctx.evidence[b], len(read), where)
            scores, marked = scores[read], given[read]
            self._note(ctx.methods[m], ctx.instances[b], scores, marked, given, read)
            value = self.judge(ctx.protocol, scores, marked) if marked.any() else float("nan")
            out.append(ctx.row(m, b, None, value))
        return out

    def judge(self, protocol: Protocol, scores: np.ndarray, marked: np.ndarray) -> float:
        raise NotImplementedError

    def blind(self, segments: int, marked: int) -> bool:
        """Whether every ranking of ``segments`` with ``marked`` evidence scores alike."""
        return False

    def _note(self, method, instance, scores, marked, given, read) -> None:
        """Count what the warnings at the end report."""
        self._texts.add(instance)
        if not read.all():
            self._unread[instance] = int((~read).sum())
        if not marked.any():
            self._empty.add(instance)
            if given.any():
                self._unread_evidence.add(instance)
        elif marked.all():
            self._full.add(instance)
        elif self.blind(len(scores), int(marked.sum())):
            self._few.add(instance)
        if len(scores) > 1 and np.ptp(scores) == 0:
            self._constant.setdefault(method, set()).add(instance)

    def finish(self, protocol: Protocol) -> None:
        """Say once per evaluation what the values alone do not (the same words from
        each segment plausibility metric, so a warning shows once)."""
        total = len(self._texts)
        if self._empty and (named := first_to_tell(self._shared)) is not None:
            why = (
                f" ({len(self._unread_evidence)} of them mark only segments the model did not read)"
                if self._unread_evidence
                else ""
            )
            warn_caller(
                f"{len(self._empty)} of {total} texts have no evidence segment{why}: {named} "
                "n/a for them and left out of the means"
            )
        if self._unread:
            warn_caller(unread_message(self._unread, total))
        if self._full:
            warn_caller(
                f"{len(self._full)} of {total} texts mark every segment the model read as "
                "evidence (a text of one segment always does): any explanation scores the "
                "same on them (segment_auprc and segment_hit_k 1), so they cannot tell "
                "methods apart"
            )
        if self._few:
            warn_caller(self.few_message(len(self._few), total))
        if self._constant:
            which = ", ".join(f"{name!r} on {len(t)}" for name, t in self._constant.items())
            warn_caller(
                f"constant segment scores ({which} texts): every segment has the same "
                "score, so they rank nothing, yet segment plausibility scores them: "
                "segment_hit_k by the tie order alone (the first segments by default) and "
                "segment_auprc is (1 + the evidence's share of the segments) / 2, above chance"
            )

    def few_message(self, few: int, total: int) -> str:
        """The warning about the texts :meth:`blind` found."""
        raise NotImplementedError


def unread_message(unread: dict[int, int], total: int) -> str:
    """The warning about segments the model did not read (one text for every segment
    metric, so it shows once)."""
    return (
        f"{len(unread)} of {total} texts have segments the model did not read "
        f"({sum(unread.values())} segments in all, past the truncation): the segment "
        "metrics rank, remove and score only the segments it read"
    )


def warn_caller(message: str) -> None:
    """A warning pointing at the line that called ``evaluate`` (via ``finish``)."""
    warnings.warn(message, NormXLogitWarning, stacklevel=4)


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

    def blind(self, segments, marked):
        # fewer than k segments are not evidence: the top k always hold one
        return segments - marked < self.k

    def few_message(self, few, total):
        k = self.k
        return (
            f"{few} of {total} texts have fewer than {k} segments that are not evidence "
            f"(texts of {k} segments or fewer among them), so the top {k} always hold an "
            f"evidence segment: {self.info.name} is 1 for any explanation of them and "
            "cannot tell methods apart"
        )


@register_metric
class SegmentHit1(SegmentHit):
    info = _info("segment_hit_1", "whether the top segment is an evidence segment")
    k = 1


@register_metric
class SegmentHit3(SegmentHit):
    info = _info("segment_hit_3", "whether an evidence segment is among the top 3 segments")
    k = 3
