"""ContextCite's two checks of a segment attribution (Cohen-Wang et al., 2024, section 4),
for any method's segment scores: they remove segments from the text itself (as the
segment methods do, :mod:`normxlogit.model.segments`), not tokens from its embeddings.

- ``segment_drop``: the target's log-probability with every segment minus with the top k
  segments removed, for each k of ``Protocol.drop_k`` (1, 3, 5): a faithful ranking puts
  the segments whose removal costs most first. A k at or above a text's segment count
  removes all of them (the top 5 of 3 segments are the 3), which every ranking does
  alike: a warning counts those texts per k, and the AOPC over the k's stays a number.
- ``segment_lds``: the linear datamodeling score: on ``Protocol.lds_ablations`` random
  subsets (each segment kept with probability 1/2, drawn from the protocol's seed and
  held apart from ContextCite's own training subsets), the Spearman correlation of the
  target's log-probability with the sum of the kept segments' scores. A text of fewer
  than 2 segments has no value (over subsets of one segment the correlation is ±1
  whatever its score), nor one whose sums or log-probabilities do not vary over the
  subsets; a warning counts them.

Both score predictions (a label, a token, a regressor's output) and whole answers (a
segment method's explanation with ``generate=``/``continuation=``): an answer's value is
the log-probability of its tokens, summed, after the prompt with the segments removed, as
ContextCite scores its responses.

Segments are removed where the explanation placed them: each segment's text is found at
the characters of its own tokens, so a segment whose text appears twice is removed where
it was explained. Only the segments the model read are ranked, drawn and removed (a
segment past a text's truncation is left in), with a warning that counts them.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from ..common.errors import InvalidInputError
from ..common.numbering import text_name, text_word
from ..explanations.segments import SegmentScores
from ..model.inputs import TextInput
from ..model.segment_values import answer_log_probs, prompt_ids, read_values
from ..model.segments import Segments, resolve_segments
from .context import EvaluationContext, segmented
from .plausibility import ranking
from .protocol import Protocol
from .registry import Metric, MetricInfo, register_metric
from .segment_plausibility import unread_message, warn_caller

#: ``segment_lds`` subset i is drawn by ``RandomState(seed + LDS_SEED_OFFSET + i)``, apart
#: from ContextCite's ``RandomState(i)`` for its own surrogate
LDS_SEED_OFFSET = 1_000_003

Place = tuple[int, int, int]


def explained_segments(
    text: TextInput, segments: SegmentScores, places: list[Place | None], where: str
) -> Segments:
    """The explanation's segments as character spans of ``text``: each segment's text is
    found where the explanation's own tokens (their ``places``, from
    ``Encoder.token_places``) put it, not by a search from the start, so a segment whose
    text appears twice ("Good. Good.") is the occurrence that was explained. A segment the
    model did not read has no token: it is the next occurrence after the segment before."""
    parts = (text,) if isinstance(text, str) else tuple(text)
    first: dict[int, Place] = {}
    for member, place in zip(segments.token_segments, places, strict=False):
        if member is not None and place is not None:
            first.setdefault(member, place)
    spans: list[Place] = []
    part, cursor = 0, 0
    for index, piece in enumerate(segments.texts):
        span = _located(parts, piece, first.get(index), part, cursor)
        if span is None:
            raise InvalidInputError(
                f"{where}: segment {index} ({piece[:40]!r}) is not in the text where its "
                "tokens are; explain the text again with its segments"
            )
        spans.append(span)
        part, _, cursor = span
    return resolve_segments(text, Segments(tuple(spans)), where)


def _located(
    parts: tuple[str, ...], piece: str, place: Place | None, part: int, cursor: int
) -> Place | None:
    """``piece``'s span: the occurrence holding ``place`` (its first token read), else
    the first one from ``part`` and ``cursor`` on; None when there is none."""
    if place is not None:
        at, start, _ = place
        found = parts[at].rfind(piece, 0, start + len(piece))  # the last to begin by start
        if found < 0 or found + len(piece) <= start or (at, found) < (part, cursor):
            return None
        return (at, found, found + len(piece))
    while part < len(parts):
        if (found := parts[part].find(piece, cursor)) >= 0:
            return (part, found, found + len(piece))
        part, cursor = part + 1, 0
    return None


class SegmentCheck(Metric):
    """Renderings of every method's texts read in batched calls per chunk: predictions
    in one, whole answers (each rendering of the prompt followed by the answer) in one.
    The ranking and the draws are over the segments the model read."""

    reads_answers = True
    needs_segments = True
    perturbs_input = True

    def __init__(self) -> None:
        self._texts: set[int] = set()
        self._unread: dict[int, int] = {}  # text: its segments the model did not read

    def renderings(self, ctx: EvaluationContext, scores: np.ndarray) -> np.ndarray:
        """Keep masks ``[R, S]`` over the ``S`` segments read (``R`` may be 0: no value)."""
        raise NotImplementedError

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        predictions, answers = [], []  # (plan, request) of each kind
        done: dict[tuple[int, int], list[dict]] = {}  # rows by (method, row)
        for m, b, item, scores, read in segmented(ctx, self.info.name, "removes segments"):
            text, instance = ctx.batch.texts[b], ctx.instances[b]
            self._texts.add(instance)
            if not read.all():
                self._unread[instance] = int((~read).sum())
            scores = scores[read]
            masks = self.renderings(ctx, scores)
            if not len(masks):  # nothing to read: the text has no value
                done[(m, b)] = self.judged(ctx, m, b, scores, masks, np.empty(0))
                continue
            places = ctx.cached(
                ("token_places", b), lambda text=text: ctx.model.encoder.token_places(text)[1]
            )
            where = f"the {ctx.methods[m]!r} explanation of {text_name(instance)}"
            segments = explained_segments(text, item.segments, places, where)
            keep = np.ones((len(masks), len(read)), dtype=bool)
            keep[:, read] = masks  # a segment not read stays in
            renderings = [segments.without(text, row) for row in keep]
            plan = (m, b, scores, masks)
            if (answer := item.settings.get("answer_ids")) is not None:
                view = ctx.model.language_model_view()  # ids checked by evaluate first
                rows = [prompt_ids(view, rendering) for rendering in renderings]
                answers.append((plan, (rows, None, list(answer))))
            else:
                predictions.append((plan, (renderings, ctx.targets[m, b].reshape(1).cpu())))
        if predictions:
            texts, columns = zip(*(request for _, request in predictions), strict=True)
            read_back = read_values(ctx.model, texts, columns, 16, None)
            for (plan, _), v in zip(predictions, read_back, strict=True):
                done[plan[:2]] = self.judged(ctx, *plan, v[:, 0])
        if answers:
            view = ctx.model.language_model_view()
            read_back = answer_log_probs(view, [request for _, request in answers], 16, None)
            for (plan, _), v in zip(answers, read_back, strict=True):
                done[plan[:2]] = self.judged(ctx, *plan, v.sum(-1))
        return [row for key in sorted(done) for row in done[key]]

    def judged(self, ctx, m, b, scores, masks, values) -> list[dict]:
        raise NotImplementedError

    def finish(self, protocol: Protocol) -> None:
        """Say how many segments the model did not read (the words the segment
        plausibility metrics use, so the warning shows once), then what else the values
        alone do not say."""
        unread = [unread_message(self._unread, len(self._texts))] if self._unread else []
        for message in unread + self.messages(protocol):
            warn_caller(message)

    def messages(self, protocol: Protocol) -> list[str]:
        """The metric's own warnings, at the end of an evaluation."""
        return []


@register_metric
class SegmentDrop(SegmentCheck):
    info = MetricInfo(
        "segment_drop",
        "log-probability lost when the top k segments are removed (ContextCite's top-k drop)",
        True,
        (-np.inf, np.inf),
        "sources",
        "aopc",
    )
    protocol_settings = ("drop_k",)
    revision = 1  # k above a text's segment count: all removed (n/a before); spans kept

    def __init__(self) -> None:
        super().__init__()
        self._whole: dict[int, set[int]] = {}  # k: the texts it removes entirely

    def renderings(self, ctx, scores):
        order = ranking(scores)
        masks = [np.ones(len(scores), dtype=bool)]
        for k in ctx.protocol.drop_k:
            keep = np.ones(len(scores), dtype=bool)
            keep[order[:k]] = False  # the top k of fewer segments: all of them
            masks.append(keep)
        return np.stack(masks)

    def judged(self, ctx, m, b, scores, masks, values):
        for k in ctx.protocol.drop_k:
            if k >= len(scores):
                self._whole.setdefault(k, set()).add(ctx.instances[b])
        return [
            ctx.row(m, b, k, values[0] - values[i]) for i, k in enumerate(ctx.protocol.drop_k, 1)
        ]

    def messages(self, protocol):
        if not self._whole:
            return []
        total = len(self._texts)
        counts = ", ".join(f"k={k} on {len(t)} of {total}" for k, t in sorted(self._whole.items()))
        return [
            "segment_drop removes every segment of a text at a k at or above its segment "
            f"count ({counts} texts; the top k of fewer segments are all of them): that value "
            "is the same for every method, whatever its ranking, and tells none apart; "
            "smaller k's in Protocol(drop_k=...) rank those texts"
        ]


@register_metric
class SegmentLDS(SegmentCheck):
    info = MetricInfo(
        "segment_lds",
        "Spearman correlation of the kept segments' summed scores with the log-probability "
        "on random held-out subsets (ContextCite's LDS)",
        True,
        (-1, 1),
        None,
        "mean",
    )
    protocol_settings = ("lds_ablations", "seed")
    revision = 1  # under 2 segments: n/a (±1 before); spans kept; truncated texts ranked

    def __init__(self) -> None:
        super().__init__()
        self._few: set[int] = set()  # under 2 segments read
        self._flat: dict[str, set[int]] = {}  # no variation over the subsets, by method

    def renderings(self, ctx, scores):
        protocol = ctx.protocol
        if len(scores) < 2:  # one segment: the correlation is its score's sign
            return np.zeros((0, len(scores)), dtype=bool)
        return np.stack(
            [
                np.random.RandomState(protocol.seed + LDS_SEED_OFFSET + i).choice(
                    [False, True], size=len(scores), p=[0.5, 0.5]
                )
                for i in range(protocol.lds_ablations)
            ]
        )

    def judged(self, ctx, m, b, scores, masks, values):
        if len(scores) < 2:
            self._few.add(ctx.instances[b])
            return [ctx.row(m, b, None, float("nan"))]
        predicted = masks.astype(np.float64) @ scores
        if np.ptp(predicted) == 0 or np.ptp(values) == 0:
            self._flat.setdefault(ctx.methods[m], set()).add(ctx.instances[b])
            return [ctx.row(m, b, None, float("nan"))]
        return [ctx.row(m, b, None, float(spearmanr(predicted, values).statistic))]

    def messages(self, protocol):
        total, out = len(self._texts), []
        if self._few:
            out.append(
                f"{len(self._few)} of {total} {text_word()} have fewer than 2 segments the model "
                "read: over subsets of one segment the Spearman correlation is ±1 whatever "
                "its score, so segment_lds gives them no value (n/a, left out of the means)"
            )
        if self._flat:
            which = ", ".join(f"{name!r} on {len(t)}" for name, t in self._flat.items())
            out.append(
                f"segment_lds has no value (n/a, left out of the means) for {which} texts: "
                "the kept segments' summed scores or the log-probabilities do not vary over "
                f"the {protocol.lds_ablations} subsets (all-zero scores, removals that do not "
                "move the model, or too few subsets)"
            )
        return out
