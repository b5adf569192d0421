"""Plausibility: agreement of an explanation with a human rationale (ERASER; ferret).

The human rationale is the evidence vector over the explanation's tokens (1: a token a
person marked as the reason), as for evidence alignment. Only the tokens of the text
itself take part: special tokens, a chat prompt's own tokens (its system message, the
template around the text) and a masked LM's target position are left out of both
vectors (ferret drops the first and last token), since no person could mark them.

- ``token_f1``: the F1 of the explanation's chosen tokens against the rationale, per text
  (ERASER's token-level F1, macro-averaged). The protocol's ``discretize`` chooses them:
  the ``top_k`` highest-scoring (k = 5 by default), as many as the rationale has
  (precision = recall), or those scoring at least ``score_threshold`` of the highest;
- ``token_iou``: their intersection over union (ERASER's token-level IOU);
- ``auprc``: the area under the precision-recall curve of the scores against the
  rationale (ERASER's soft-score metric: scikit-learn's curve, trapezoid area).

By default the raw scores are ranked, ties go to the earlier token, and a text whose
rationale is empty (after the tokens above are left out) is left out of every metric's
mean. ferret 0.4.2's evaluators differ in all three: ``FERRET_PLAUSIBILITY`` gives its
behaviour (equal to its output: ``tests/evaluation/data/ferret_plausibility_reference.json``).
Like the evidence metrics, they read the explanations alone: no model runs.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.numbering import text_name
from ..common.outputs import short_value
from .context import EvaluationContext
from .evidence import evidence_word_indices, with_evidence
from .protocol import Protocol
from .registry import Metric, MetricInfo, register_metric

#: ferret 0.4.2's plausibility evaluators (``only_pos=True``, numpy's ``argsort`` taken from
#: the top, an empty rationale scored 0, 0 and 0.5): ``Protocol(**FERRET_PLAUSIBILITY)``,
#: with ``top_k`` its evaluators' default 5 or its ``Benchmark``'s, the data set's mean
#: rationale length (:func:`rationale_k`).
FERRET_PLAUSIBILITY: dict[str, Any] = {
    "only_positive": True,
    "ties": "argsort",
    "empty_rationale": "score",
}


def ranking(scores: np.ndarray, ties: str = "earlier") -> np.ndarray:
    """Token positions from the highest score down. Equal scores: the earlier token first,
    or (``"argsort"``) as ferret ranks, numpy's default ``argsort`` reversed, which leaves
    them in an order numpy does not define (the later token first below 17 tokens, except
    where AVX-512 sorting networks order them by the data)."""
    if ties == "argsort":
        return np.asarray(scores).argsort()[::-1]
    return np.argsort(-scores, kind="stable")


def top_k_tokens(
    scores: np.ndarray, k: int, ties: str = "earlier", only_positive: bool = False
) -> np.ndarray:
    """A 0/1 vector marking the ``k`` highest scores; ``only_positive`` then drops those
    scoring <= 0 (ferret's ``only_pos``: fewer than ``k``, or none, may stay)."""
    order = ranking(scores, ties)[:k]
    if only_positive:
        order = order[scores[order] > 0]
    chosen = np.zeros(len(scores))
    chosen[order] = 1.0
    return chosen


def threshold_tokens(scores: np.ndarray, share: float) -> np.ndarray:
    """A 0/1 vector marking the scores at least ``share`` times the highest (none when no
    score is positive: a threshold relative to a non-positive peak selects nothing)."""
    peak = float(scores.max()) if len(scores) else 0.0
    if peak <= 0:
        return np.zeros(len(scores))
    return (scores >= share * peak).astype(float)


def chosen_tokens(scores: np.ndarray, rationale: np.ndarray, protocol: Protocol) -> np.ndarray:
    """The explanation's discrete rationale, as the protocol's ``discretize`` says."""
    if protocol.discretize == "threshold":
        return threshold_tokens(scores, protocol.score_threshold)
    k = int(rationale.sum()) if protocol.discretize == "rationale" else protocol.top_k
    return top_k_tokens(scores, k, protocol.ties, protocol.only_positive)


def token_f1(chosen: np.ndarray, rationale: np.ndarray) -> float:
    """F1 of the chosen tokens against the rationale (0 when either is empty)."""
    overlap = float((chosen * rationale).sum())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / chosen.sum(), overlap / rationale.sum()
    return 2 * precision * recall / (precision + recall)


def token_iou(chosen: np.ndarray, rationale: np.ndarray) -> float:
    """Intersection over union of the chosen tokens and the rationale (0 when both are
    empty)."""
    union = float(np.maximum(chosen, rationale).sum())
    return 0.0 if union == 0 else float((chosen * rationale).sum()) / union


def auprc(scores: np.ndarray, rationale: np.ndarray, only_positive: bool = False) -> float:
    """Area under the precision-recall curve of ``scores`` against the rationale (negative
    scores read as 0 with ``only_positive``, as ferret does); NaN when the rationale marks
    no token (no curve exists)."""
    from sklearn.metrics import auc, precision_recall_curve

    if rationale.sum() == 0:
        return float("nan")
    if only_positive:
        scores = np.maximum(scores, 0)
    precision, recall, _ = precision_recall_curve(rationale, scores)
    return float(auc(recall, precision))


def rationale_k(model, texts: Sequence[Any], evidence_words: Sequence[Sequence[int]]) -> int:
    """ferret's ``Benchmark`` k (after DeYoung et al.): the mean number of rationale tokens
    per text, over the tokens the metrics read, rounded half up (ferret hard-codes it per
    data set: HateXplain 7, movie reviews 78, SST 10, any other 5); at least 1."""
    from ..common.words import text_word_count
    from ..model.adapter import check_model

    check_model(model, "rationale_k")
    if not isinstance(texts, (str, tuple, list)):  # a generator or other iterable: read once
        texts = list(texts)
    if not texts or len(texts) != len(evidence_words):
        raise InvalidInputError(
            f"{len(evidence_words)} rationales for {len(texts)} texts; give one list of word "
            "indices per text, and one text or more"
        )
    sizes = []
    for number, (text, given) in enumerate(zip(texts, evidence_words, strict=True)):
        marked = set(evidence_word_indices(given, number))
        count = text_word_count(text)
        wrong = sorted(w for w in marked if not 0 <= w < count)
        if wrong:  # evaluate refuses it; here it would count as no word, silently
            raise InvalidInputError(
                f"evidence word index {short_value(wrong[0])} of {text_name(number)} is out of "
                f"range: the text has {count} words (whitespace-separated, counted from 0)"
            )
        read = [word is not None and word in marked for word in model.encoder.token_words(text)]
        target = _masked_target(model, text)
        if target is not None:  # a masked LM's target: no plausibility metric reads it
            read[target] = False
        sizes.append(sum(read))
    return max(1, math.floor(float(np.mean(sizes)) + 0.5))


def _masked_target(model, text: Any) -> int | None:
    """A masked LM's target position among the text's tokens (None for other models)."""
    from ..model.tasks import TaskKind

    if model.task.kind is not TaskKind.MASKED_LM:
        return None
    batch = model.encode([text])
    real = batch.real_positions(0)
    return int((real == batch.reading_positions[0]).nonzero()[0, 0])


#: per ``discretize``, the settings choosing the tokens it does not read
UNREAD_BY_DISCRETIZE = {
    "top_k": ("score_threshold",),
    "threshold": ("top_k",),
    "rationale": ("top_k", "score_threshold"),
}


class PlausibilityMetric(Metric):
    """Scores and rationale over the tokens a person could mark: no special token, no
    masked target; one value per text (and layer)."""

    protocol_settings = (
        "discretize",
        "top_k",
        "score_threshold",
        "only_positive",
        "ties",
        "empty_rationale",
    )
    #: added after values were stored: under their defaults those values are still found
    keyed_unless_default = ("only_positive", "ties", "empty_rationale")
    #: what a text with an empty rationale scores under ``empty_rationale="score"``
    empty_score: float = 0.0
    #: whether the metric scores the tokens ``discretize`` chooses (token F1 and IOU)
    chooses: bool = True

    @classmethod
    def keyed_at_defaults(cls, settings: Mapping[str, Any]) -> tuple[str, ...]:
        """``top_k`` and ``score_threshold`` as ``discretize`` leaves them unread: the
        values of ``discretize="rationale"`` depend on neither."""
        unread = UNREAD_BY_DISCRETIZE.get(settings.get("discretize"), ()) if cls.chooses else ()
        return (*super().keyed_at_defaults(settings), *unread)

    def __init__(self) -> None:
        self._texts: set[int] = set()
        self._empty: set[int] = set()
        self._left_out: set[int] = set()  # empty once special / prompt tokens are out
        self._constant: dict[str, set[int]] = {}
        self._full: set[int] = set()  # the rationale marks every token read
        self._few: set[int] = set()  # top_k chooses every token read
        #: the plausibility metrics of this evaluation (shared through the context), so
        #: the warnings name only those asked for
        self._evaluated: dict[str, type[PlausibilityMetric]] = {}

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        self._evaluated = ctx.cached(("plausibility", "metrics"), dict)
        self._evaluated[self.info.name] = type(self)
        out = []
        for m, b, item, rationale, excluded, layers in with_evidence(ctx):
            kept = _text_tokens(ctx, item)
            if excluded is not None:
                kept[excluded] = False
            self._note(ctx, m, b, rationale, kept, layers)
            for layer, scores in layers:
                value = self.value(ctx.protocol, scores[kept], rationale[kept])
                out.append(ctx.row(m, b, layer, value))
        return out

    def value(self, protocol: Protocol, scores: np.ndarray, rationale: np.ndarray) -> float:
        """One text's value, the empty-rationale rule applied (one rule for every
        plausibility metric: NaN and left out, or ferret's score)."""
        if not rationale.any():
            return float("nan") if protocol.empty_rationale == "skip" else self.empty_score
        return self.judge(protocol, scores, rationale)

    def judge(self, protocol: Protocol, scores: np.ndarray, rationale: np.ndarray) -> float:
        raise NotImplementedError

    def _note(self, ctx, m: int, b: int, rationale, kept, layers) -> None:
        """Count what the warnings at the end report: empty rationales, constant scores."""
        instance = ctx.instances[b]
        self._texts.add(instance)
        read = rationale[kept]
        if not read.any():
            self._empty.add(instance)
            if rationale.any():
                self._left_out.add(instance)
        elif read.all():
            self._full.add(instance)
        elif self.chooses and _chooses_every_token(ctx.protocol, int(kept.sum())):
            self._few.add(instance)
        if kept.sum() > 1 and any(np.ptp(scores[kept]) == 0 for _, scores in layers):
            self._constant.setdefault(ctx.methods[m], set()).add(instance)

    def finish(self, protocol: Protocol) -> None:
        """Say once per evaluation how many texts had no rationale and which methods gave
        a constant explanation (the same words from each plausibility metric)."""
        metrics = _in_order(self._evaluated or {self.info.name: type(self)})
        total = len(self._texts)
        messages = [
            self._empty
            and empty_message(len(self._empty), len(self._left_out), total, protocol, metrics),
            self._constant and constant_message(self._constant, metrics),
            self._full and full_message(len(self._full), total, metrics),
            self._few and few_tokens_message(len(self._few), total, protocol.top_k, metrics),
        ]
        for message in messages:
            if message:
                warnings.warn(message, NormXLogitWarning, stacklevel=3)


#: the order the warnings name the plausibility metrics in (any other after them)
_ORDER = ("token_f1", "token_iou", "auprc")


def _in_order(metrics: Mapping[str, type[PlausibilityMetric]]) -> dict[str, type]:
    """``metrics`` in one order, whichever finished first: each metric's warning is then
    the same words, shown once."""
    rank = {name: i for i, name in enumerate(_ORDER)}
    return dict(sorted(metrics.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])))


def _listed(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _choosers(metrics: Mapping[str, type]) -> list[str]:
    """The metrics that score the tokens ``discretize`` chooses (token F1 and IOU)."""
    return [name for name, cls in metrics.items() if cls.chooses]


def _rankers(metrics: Mapping[str, type]) -> list[str]:
    """The metrics that read the whole ranking (auprc)."""
    return [name for name, cls in metrics.items() if not cls.chooses]


def _chooses_every_token(protocol: Protocol, tokens: int) -> bool:
    """Whether ``discretize="top_k"`` chooses every one of ``tokens``, whatever the scores
    (``only_positive`` drops those scoring <= 0, so the scores still matter there)."""
    top_k = protocol.discretize == "top_k" and not protocol.only_positive
    return top_k and tokens <= protocol.top_k


def full_message(full: int, total: int, metrics: Mapping[str, type]) -> str:
    """The warning about rationales that mark every token read."""
    parts = [f"{name} 1" for name in _rankers(metrics)]
    if choosers := _choosers(metrics):
        parts.append(f"{_listed(choosers)} by how many tokens are chosen, whatever their ranking")
    return (
        f"{full} of {total} texts have a rationale that marks every token the plausibility "
        f"metrics read: any explanation scores the same on them ({'; '.join(parts)}), so "
        "they cannot tell methods apart"
    )


def few_tokens_message(few: int, total: int, k: int, metrics: Mapping[str, type]) -> str:
    """The warning about texts with no more tokens read than ``top_k`` chooses."""
    choosers = _choosers(metrics)
    return (
        f"{few} of {total} texts have {k} or fewer tokens the plausibility metrics read, so "
        f"top_k={k} chooses all of them: {_listed(choosers)} "
        f"{'is' if len(choosers) == 1 else 'are'} the same for every explanation of them; "
        "a smaller Protocol(top_k=...) or Protocol(discretize='rationale') ranks them"
    )


def empty_message(
    empty: int, left_out: int, total: int, protocol: Protocol, metrics: Mapping[str, type]
) -> str:
    """The warning about texts whose rationale marks none of the tokens read."""
    why = (
        f" ({left_out} of them mark only special tokens, a chat prompt's own tokens or a "
        "masked target, which no plausibility metric reads)"
        if left_out
        else ""
    )
    scores = ", ".join(f"{name} {cls.empty_score:g}" for name, cls in metrics.items())
    if protocol.empty_rationale == "skip":
        rule = (
            f"they are left out of {_listed(list(metrics))} (n/a); "
            f"Protocol(empty_rationale='score') scores them as ferret does ({scores})"
        )
    else:
        rule = (
            f"they are scored as ferret does ({scores}) and kept in the means "
            "(Protocol(empty_rationale='score'))"
        )
    return f"{empty} of {total} texts have an empty rationale{why}: {rule}"


def constant_message(constant: dict[str, set[int]], metrics: Mapping[str, type]) -> str:
    """The warning about explanations that give every token the same score."""
    which = ", ".join(
        f"{method!r} on {len(texts)} text{'' if len(texts) == 1 else 's'}"
        for method, texts in constant.items()
    )
    parts = []
    if choosers := _choosers(metrics):
        parts.append(
            f"{_listed(choosers)} choose by the tie order alone (the first k tokens by default)"
            if len(choosers) > 1
            else f"{choosers[0]} chooses by the tie order alone (the first k tokens by default)"
        )
    if rankers := _rankers(metrics):
        parts.append(
            f"{_listed(rankers)} {'is' if len(rankers) == 1 else 'are'} (1 + the rationale's "
            "share of the tokens) / 2, above chance"
        )
    return (
        f"constant explanations ({which}): every token has the same score, so they "
        f"rank nothing, yet plausibility scores them: {' and '.join(parts)}"
    )


def _text_tokens(ctx: EvaluationContext, item) -> np.ndarray:
    """Which of the explanation's tokens belong to a word of its text (not a special
    token, not a chat prompt's own token)."""
    kept = np.ones(len(item.tokens), dtype=bool)
    if item.special:
        kept &= ~np.asarray(item.special, dtype=bool)
    if item.input_ids is None:  # the text's own tokenisation: its words are known
        # once per text for the three metrics and every method
        key = ("token_words", repr(item.text))
        words = ctx.cached(key, lambda: ctx.model.encoder.token_words(item.text))
        if len(words) == len(item.tokens):
            kept &= np.array([word is not None for word in words])
    return kept


def _info(name: str, description: str) -> MetricInfo:
    return MetricInfo(name, description, True, (0, 1), "layer", "last", needs_evidence=True)


@register_metric
class TokenF1(PlausibilityMetric):
    info = _info("token_f1", "F1 of the top tokens against the human rationale (ERASER)")
    revision = 1  # an empty rationale: NaN and left out (0 before)

    def judge(self, protocol, scores, rationale):
        return token_f1(chosen_tokens(scores, rationale, protocol), rationale)


@register_metric
class TokenIOU(PlausibilityMetric):
    info = _info("token_iou", "intersection over union of the top tokens and the rationale")
    revision = 1  # an empty rationale: NaN and left out (0 before)

    def judge(self, protocol, scores, rationale):
        return token_iou(chosen_tokens(scores, rationale, protocol), rationale)


@register_metric
class AUPRC(PlausibilityMetric):
    info = _info("auprc", "area under the precision-recall curve of the scores (ERASER)")
    protocol_settings = ("only_positive", "empty_rationale")
    chooses = False  # it reads the whole ranking, not the tokens discretize chooses
    #: ferret's value: scikit-learn's curve with no positive token has recall 1 at every
    #: threshold, so the trapezoid area is 0.5 whatever the scores
    empty_score = 0.5

    def judge(self, protocol, scores, rationale):
        return auprc(scores, rationale, protocol.only_positive)
