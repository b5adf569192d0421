"""Evidence alignment (NormXLogit paper, section 5.2 and appendix A.4).

How well a score vector singles out the tokens a linguist marks as evidence (the noun a
determiner agrees with, the subject of a verb): the average precision of the ranking and
the dot product with the binary evidence vector, per layer when the explanation has
layers. No model runs: these read the explanations alone.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.numbering import text_name
from ..common.outputs import lone_item, short_value, zero_d_phrase
from ..metrics import average_precision, dot_product
from ..model.tasks import TaskKind
from .context import EvaluationContext, _target_index
from .registry import Metric, MetricInfo, register_metric


def evidence_vector(ctx: EvaluationContext, row: int, length: int) -> np.ndarray:
    """The row's binary evidence over its tokens, checked."""
    return checked_evidence(ctx.evidence[row], ctx.instances[row], length)


def checked_evidence(given: Any, instance: int, length: int) -> np.ndarray:
    """Text ``instance``'s binary evidence over its ``length`` tokens, checked (evaluate
    checks every text's before any metric runs, the metrics again as they read it)."""
    if given is None:
        raise InvalidInputError(missing_evidence(instance))
    vector = _as_numbers(given, instance)
    if vector.shape != (length,):
        raise InvalidInputError(
            f"evidence for {text_name(instance)} must be {length} zeros and ones "
            f"(one per token of its explanation); got shape {vector.shape}"
            f"{word_indices_hint(vector)}"
        )
    wrong = np.flatnonzero(~np.isin(vector, (0.0, 1.0)))
    if len(wrong):
        raise InvalidInputError(
            f"evidence for {text_name(instance)} must be zeros and ones (1 = evidence "
            f"token); got {vector[wrong[0]]:g} at token {wrong[0]}{word_indices_hint(vector)}"
        )
    return vector


def missing_evidence(instance: int) -> str:
    """Why a text's ``None`` in ``evidence=[...]`` is refused, naming the text: the user
    did pass evidence, for the other texts."""
    return (
        f"evidence for {text_name(instance)} is None; every text needs a vector of 0s and 1s "
        "over its explanation's tokens when an evidence metric is asked for (all zeros where "
        "it has no evidence token), or leave that text out"
    )


def _as_numbers(given: Any, instance: int) -> np.ndarray:
    """One text's evidence as floats. Words (the evidence words themselves, or "0"/"1"
    read from a file) are refused, not converted: a token vector is numbers, and words
    have their own argument."""
    if (text := _first_text(given)) is not None:
        fix = (
            "give the numbers 0 and 1, not text"
            if str(text).strip() in ("0", "1", "b'0'", "b'1'")
            else "to mark words, pass their whitespace-word indices as evidence_words= to "
            "normxlogit.explain_and_evaluate(...) or normxlogit.workflows.evaluate_texts(...)"
        )
        raise InvalidInputError(
            f"evidence for {text_name(instance)} holds text ({text!r:.40}); evidence is one "
            "vector of 0/1 numbers per text, one per token of its explanation (1 = evidence "
            f"token); {fix}"
        )
    given = _widened(given)
    try:
        return np.asarray(given, dtype=float)
    except OverflowError:  # 10**400: beyond a float64, so no 0 or 1
        big = next(v for v in _flat(given) if _beyond_float(v))
        raise InvalidInputError(
            f"evidence for {text_name(instance)} must be zeros and ones (1 = evidence "
            f"token); got {short_value(big)}"
        ) from None
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"evidence for {text_name(instance)} must be a list of 0/1 numbers, one per token "
            f"of its explanation (1 = evidence token); got {given!r:.60}"
        ) from None


def _widened(given: Any) -> Any:
    """``given`` with bfloat16 tensors (which NumPy cannot read) widened to float32: one
    tensor, or a list of them (0-d tensors, as iterating a tensor gives)."""
    if getattr(given, "dtype", None) is not None and str(given.dtype) == "torch.bfloat16":
        return given.float()
    if isinstance(given, (list, tuple)) and any(
        str(getattr(item, "dtype", "")) == "torch.bfloat16" for item in given
    ):
        return [
            item.float() if str(getattr(item, "dtype", "")) == "torch.bfloat16" else item
            for item in given
        ]
    return given


def _flat(given: Any) -> Iterator[Any]:
    """The items of ``given``, nested lists read through."""
    if isinstance(given, (list, tuple)):
        for item in given:
            yield from _flat(item)
    else:
        yield given


def _beyond_float(value: Any) -> bool:
    """Whether ``value`` is a whole number too large for a float64 (10**400)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return False
    try:
        float(value)
    except OverflowError:
        return True
    return False


def _first_text(given: Any) -> str | bytes | None:
    """The first string in ``given`` (itself, or one of its items), or None."""
    if isinstance(given, (str, bytes)):
        return given
    items = given.tolist() if isinstance(given, np.ndarray) else given
    if isinstance(items, (list, tuple)):
        return next((item for item in items if isinstance(item, (str, bytes))), None)
    return None


def word_indices_hint(vector: np.ndarray) -> str:
    """What a message about a token evidence vector adds when ``vector`` looks like word
    indices (ERASER's ``Example.evidence``, a data file's ``evidence`` column): a list of
    whole numbers, not all 0 and 1. Empty when it does not."""
    if vector.ndim != 1 or not len(vector) or not np.isfinite(vector).all():
        return ""
    if not (vector == np.round(vector)).all() or np.isin(vector, (0.0, 1.0)).all():
        return ""
    return (
        "; these look like word indices (whole numbers, not 0/1): to map whitespace-word "
        "indices onto the tokens, pass them as evidence_words= to "
        "normxlogit.workflows.evaluate_texts(...) or normxlogit.explain_and_evaluate(...)"
    )


def evidence_word_indices(given: Any, number: int) -> list[int]:
    """One text's evidence words as whole numbers, checked: a word index such as 2.5 or
    "2" matches no word and would be ignored silently (2.0 is refused too, as the command
    line refuses it), and a {word: 0/1} mapping would be read by its keys. ``number`` is
    the text's index in the list (from 0, as every message numbers texts). A repeated
    index is refused, as for evidence segments: it is what a 0/1 mask over the words looks
    like, and reading a mask as indices would mark the first words."""
    held = zero_d_phrase(given)  # torch.tensor(1) has __iter__ but cannot be iterated
    if held or isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
        one = lone_item(given)
        example = f"[[{one}]]" if held and isinstance(one, numbers.Integral) else "[[1, 2]]"
        raise InvalidInputError(
            f"evidence words of {text_name(number)} must be a list of word indices, got "
            f"{held or repr(given)[:60]}; give one list per text (for one text: {example})"
        )
    if isinstance(given, Mapping):  # a {word: 0/1} mask, which its keys would read as all
        raise InvalidInputError(
            f"evidence words of {text_name(number)} must be the list of its evidence word "
            f"indices, e.g. [0, 2]; got dict {given!r:.60} (a mapping would be read by its "
            "keys, marking every word it lists)"
        )
    indices = []
    for word in given:
        word = lone_item(word)  # torch.tensor([0, 1]) iterates 0-d tensors: their values
        unwritten = not isinstance(word, numbers.Integral) and isinstance(word, numbers.Real)
        if unwritten and float(word).is_integer():  # as the command line refuses "1.0"
            raise InvalidInputError(
                f"evidence word index {short_value(word)} of {text_name(number)} is a "
                f"{type(word).__name__}; give word indices as whole numbers (ints, e.g. "
                f"{int(word)}), counting whitespace-separated words from 0"
            )
        if isinstance(word, bool) or not isinstance(word, numbers.Integral):
            raise InvalidInputError(
                f"evidence word index {short_value(word)} of {text_name(number)} is not a whole "
                "number; "
                "word indices count whitespace-separated words from 0"
            )
        if int(word) in indices:
            raise InvalidInputError(
                f"evidence words of {text_name(number)} hold word {int(word)} twice "
                f"({list(given)!r:.60}); give word indices, e.g. [0, 2], not a 0/1 mask"
            )
        indices.append(int(word))
    return indices


def excluded_position(ctx: EvaluationContext, row: int) -> int | None:
    """The target position (a masked LM's mask token), left out of both vectors."""
    if ctx.model.task.kind is not TaskKind.MASKED_LM:
        return None
    batch = ctx.batch
    real = batch.real_positions(row)
    return int((real == batch.reading_positions[row]).nonzero()[0, 0])


def with_evidence(ctx: EvaluationContext) -> Iterator[tuple]:
    """Each explanation with what the evidence metrics read: ``(method index, row,
    explanation, evidence, excluded position, [(layer, scores of the evaluated target)])``."""
    for m, name in enumerate(ctx.methods):
        for b, item in enumerate(ctx.explanations[name]):
            evidence = evidence_vector(ctx, b, len(item.tokens))
            per_layer = item.scores_3d()[..., _target_index(item)]
            layers = list(zip(item.layers or [None], per_layer, strict=True))
            yield m, b, item, evidence, excluded_position(ctx, b), layers


@dataclass
class SharedWarning:
    """The metrics of one chunk that give the same warning (the same texts for each of
    them: evidence that marks nothing), and whether it has been given."""

    names: set[str] = field(default_factory=set)
    told: bool = False


def first_to_tell(shared: list[SharedWarning]) -> str | None:
    """``"a and b are"``: the metrics to name in a warning ``shared`` by the metrics of
    each chunk, said by the first of them to finish; None once it has been said."""
    if any(chunk.told for chunk in shared):
        return None
    for chunk in shared:
        chunk.told = True
    names = sorted(set().union(*(chunk.names for chunk in shared)))
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{listed} {'is' if len(names) == 1 else 'are'}"


class EvidenceMetric(Metric):
    """Evidence alignment (the NormXLogit paper's BLiMP metrics). A text whose evidence
    marks no token (the target position left out) has nothing to align with: n/a and left
    out of the means, as the plausibility metrics' empty rationale, and said once. One
    whose evidence marks every token read (a decoder text without BOS whose every word is
    evidence) scores alike whatever the ranking: kept, and said once, as auprc does."""

    protocol_settings = ("dot_product",)

    #: what a constant explanation scores on this metric, for the warning
    constant_scores: str = ""
    #: what any explanation scores on a text whose evidence marks every token read
    full_scores: str = ""

    def __init__(self) -> None:
        self._texts: set[int] = set()
        self._empty: set[int] = set()
        self._full: set[int] = set()
        self._masked = False  # whether a target position was left out (a masked LM)
        self._constant: dict[str, set[int]] = {}
        #: per chunk, the evidence metrics evaluated there (shared through the context):
        #: the first to finish names them all in one empty-evidence warning
        self._shared: list[SharedWarning] = []

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        shared = ctx.cached(("evidence", "metrics"), SharedWarning)
        shared.names.add(self.info.name)
        self._shared.append(shared)
        out = []
        for m, b, _, evidence, excluded, layers in with_evidence(ctx):
            marked = np.asarray(evidence, dtype=bool).copy()
            if excluded is not None:
                marked[excluded] = False
            self._note(ctx.methods[m], ctx.instances[b], marked, excluded, layers)
            for layer, scores in layers:
                value = (
                    self.score(ctx, scores, evidence, excluded) if marked.any() else float("nan")
                )
                out.append(ctx.row(m, b, layer, value))
        return out

    def _note(self, method: str, instance: int, marked, excluded: int | None, layers) -> None:
        """Count what the warnings at the end report: evidence marking no token or every
        token read, constant explanations."""
        self._texts.add(instance)
        self._masked |= excluded is not None
        if not marked.any():
            self._empty.add(instance)
            return
        if marked.sum() == len(marked) - (excluded is not None):
            self._full.add(instance)
        if _ranks_nothing(layers, excluded):
            self._constant.setdefault(method, set()).add(instance)

    def finish(self, protocol: Any) -> None:
        if self._empty and (named := first_to_tell(self._shared)) is not None:
            left_out = " (the target position left out)" if self._masked else ""
            warnings.warn(
                f"{len(self._empty)} of {len(self._texts)} texts have evidence that marks no "
                f"token{left_out}: {named} n/a for them and left out of the means",
                NormXLogitWarning,
                stacklevel=3,
            )
        if self._full:
            warnings.warn(
                f"{len(self._full)} of {len(self._texts)} texts have evidence that marks every "
                f"token {self.info.name} reads"
                f"{' (the target position left out)' if self._masked else ''}: "
                f"{self.full_scores}",
                NormXLogitWarning,
                stacklevel=3,
            )
        if self._constant:
            which = ", ".join(
                f"{method!r} on {len(texts)} text{'' if len(texts) == 1 else 's'}"
                for method, texts in self._constant.items()
            )
            warnings.warn(
                f"constant explanations ({which}): every token has the same score, so they "
                f"rank nothing, yet {self.info.name} scores them: {self.constant_scores}",
                NormXLogitWarning,
                stacklevel=3,
            )

    def score(self, ctx, scores: np.ndarray, evidence: np.ndarray, excluded: int | None) -> float:
        raise NotImplementedError


def _ranks_nothing(layers: list, excluded: int | None) -> bool:
    """Whether some layer's scores are all alike over the tokens the metric reads (more
    than one of them): such an explanation ranks nothing."""
    for _, scores in layers:
        read = np.delete(scores, excluded) if excluded is not None else np.asarray(scores)
        if len(read) > 1 and np.ptp(read) == 0:
            return True
    return False


@register_metric
class EvidenceAP(EvidenceMetric):
    info = MetricInfo(
        "evidence_ap",
        "average precision of the ranking against the evidence tokens",
        True,
        (0, 1),
        "layer",
        "last",
        needs_evidence=True,
    )
    constant_scores = "the evidence's share of the tokens (chance), whatever the method"
    full_scores = "any explanation scores 1 on them, so they cannot tell methods apart"

    def score(self, ctx, scores, evidence, excluded):
        if excluded is not None:
            scores, evidence = np.delete(scores, excluded), np.delete(evidence, excluded)
        return average_precision(scores, evidence)


@register_metric
class EvidenceDot(EvidenceMetric):
    info = MetricInfo(
        "evidence_dot",
        "dot product of the scores with the evidence vector (protocol: raw or softmax)",
        True,
        (-np.inf, np.inf),
        "layer",
        "last",
        needs_evidence=True,
    )
    constant_scores = (
        "the score times the number of evidence tokens (softmax: their share), whatever the method"
    )
    full_scores = (
        "evidence_dot is the sum of all the scores on them (1 under "
        "Protocol(dot_product='softmax')), whatever they rank: it measures no alignment there"
    )

    def score(self, ctx, scores, evidence, excluded):
        softmax = ctx.protocol.dot_product == "softmax"
        return dot_product(scores, evidence, softmax=softmax, exclude=excluded)
