"""ContextCite's two checks of a segment attribution (Cohen-Wang et al., 2024, section 4),
for any method's segment scores: they remove segments from the text itself (as the
segment methods do, :mod:`normxlogit.model.segments`), not tokens from its embeddings.

- ``segment_drop``: the target's log-probability with every segment minus with the top k
  segments removed, for each k of ``Protocol.drop_k`` (1, 3, 5): a faithful ranking puts
  the segments whose removal costs most first. A text with fewer than k segments has no
  value at k.
- ``segment_lds``: the linear datamodeling score: on ``Protocol.lds_ablations`` random
  subsets (each segment kept with probability 1/2, drawn from the protocol's seed and
  held apart from ContextCite's own training subsets), the Spearman correlation of the
  target's log-probability with the sum of the kept segments' scores.

Both score predictions (a label, a token, a regressor's output) and whole answers (a
segment method's explanation with ``generate=``/``continuation=``): an answer's value is
the log-probability of its tokens, summed, after the prompt with the segments removed, as
ContextCite scores its responses.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from ..model.segment_values import answer_log_probs, prompt_ids, read_values
from ..model.segments import resolve_segments
from .context import EvaluationContext, segmented
from .plausibility import ranking
from .registry import Metric, MetricInfo, register_metric

#: ``segment_lds`` subset i is drawn by ``RandomState(seed + LDS_SEED_OFFSET + i)``, apart
#: from ContextCite's ``RandomState(i)`` for its own surrogate
LDS_SEED_OFFSET = 1_000_003


class SegmentCheck(Metric):
    """Renderings of every method's texts read in batched calls per chunk: predictions
    in one, whole answers (each rendering of the prompt followed by the answer) in one."""

    reads_answers = True

    def renderings(self, ctx: EvaluationContext, scores: np.ndarray) -> list[np.ndarray]:
        raise NotImplementedError

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        predictions, answers = [], []  # (plan, request) of each kind
        for m, b, item, scores in segmented(ctx, self.info.name, "removes segments"):
            text = ctx.batch.texts[b]
            segments = resolve_segments(text, item.segments.texts)
            masks = self.renderings(ctx, scores)
            renderings = [segments.without(text, keep) for keep in masks]
            plan = (m, b, scores, masks)
            if (answer := item.settings.get("answer_ids")) is not None:
                view = ctx.model.language_model_view()
                rows = [prompt_ids(view, rendering) for rendering in renderings]
                answers.append((plan, (rows, None, list(answer))))
            else:
                predictions.append((plan, (renderings, ctx.targets[m, b].reshape(1).cpu())))
        values = {}
        if predictions:
            texts, columns = zip(*(request for _, request in predictions), strict=True)
            read = read_values(ctx.model, texts, columns, 16, None)
            values |= {id(p): v[:, 0] for (p, _), v in zip(predictions, read, strict=True)}
        if answers:
            view = ctx.model.language_model_view()
            read = answer_log_probs(view, [request for _, request in answers], 16, None)
            values |= {id(p): v.sum(-1) for (p, _), v in zip(answers, read, strict=True)}
        out = []
        for plan, _ in sorted(predictions + answers, key=lambda pair: pair[0][:2]):
            out.extend(self.judged(ctx, *plan, values[id(plan)]))
        return out

    def judged(self, ctx, m, b, scores, masks, values) -> list[dict]:
        raise NotImplementedError


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

    def renderings(self, ctx, scores):
        order = ranking(scores)
        masks = [np.ones(len(scores), dtype=bool)]
        for k in ctx.protocol.drop_k:
            keep = np.ones(len(scores), dtype=bool)
            keep[order[: min(k, len(scores))]] = False
            masks.append(keep)
        return np.stack(masks)

    def judged(self, ctx, m, b, scores, masks, values):
        return [
            ctx.row(m, b, k, values[0] - values[i] if k <= len(scores) else float("nan"))
            for i, k in enumerate(ctx.protocol.drop_k, 1)
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

    def renderings(self, ctx, scores):
        protocol = ctx.protocol
        return np.stack(
            [
                np.random.RandomState(protocol.seed + LDS_SEED_OFFSET + i).choice(
                    [False, True], size=len(scores), p=[0.5, 0.5]
                )
                for i in range(protocol.lds_ablations)
            ]
        )

    def judged(self, ctx, m, b, scores, masks, values):
        predicted = masks.astype(np.float64) @ scores
        if np.ptp(predicted) == 0 or np.ptp(values) == 0:
            return [ctx.row(m, b, None, float("nan"))]
        return [ctx.row(m, b, None, float(spearmanr(predicted, values).statistic))]
