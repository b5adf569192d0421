"""``Protocol``: how inputs are perturbed, as data saved with every result.

Two families of metrics read it. The hard metrics (comprehensiveness, sufficiency,
insertion, deletion) follow the NormXLogit paper and its authors' code: tokens are
replaced by the mask token in MLM-trained encoders and deleted in decoders, ``int(len * k)``
tokens are perturbed at ratio ``k`` with special tokens counted in ``len``, and [CLS] is
never ranked or perturbed while [SEP] is. The soft metrics (Soft-NC/NS and their
pi-versions) follow the pi-Soft paper: Bernoulli keep masks on the input embeddings,
Hellinger distance over the output distribution, 15 Monte Carlo samples, pi from 0.05 to
0.95, dynamic or fixed attention routing.

The position the prediction is read at is never perturbed (the mask token a masked LM
fills, the last token a decoder predicts from), nor is padding.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..common.errors import InvalidInputError
from ..common.options import convert_options
from ..common.outputs import type_phrase
from ..model.tasks import TaskKind

NINE_RATIOS = tuple(round(0.1 * k, 1) for k in range(1, 10))
PI_GRID = tuple(round(0.05 * k, 2) for k in range(1, 20))

REPLACEMENTS = ("auto", "mask", "delete")
PROTECTIONS = ("first", "special", "none")
ROUTINGS = ("dynamic", "fixed")
DISTRIBUTIONS = ("auto", "labels", "vocabulary")
DOT_FORMS = ("raw", "softmax")
RANDOMIZATIONS = ("cascading", "independent")
SANITY_UNITS = ("groups", "modules")
SANITY_INITS = ("model", "reset_parameters")
SANITY_TOKENS = ("content", "all")
DISCRETIZATIONS = ("top_k", "rationale", "threshold")
TIES = ("earlier", "argsort")
EMPTY_RATIONALES = ("skip", "score")
UNITS = ("token", "segment")
#: settings added after bench stores keyed values by protocol: keyed only when they differ
#: from their defaults, so values stored before are still found
LATER_SETTINGS = ("unit", "drop_k", "lds_ablations")


@dataclass(frozen=True)
class Protocol:
    """Every setting that changes a faithfulness or plausibility number.

    Hard metrics (NormXLogit paper):
        replacement: ``"mask"`` (the mask token, attention mask unchanged), ``"delete"``
            (tokens removed), or ``"auto"``: mask for models with a mask token, deletion
            for decoders.
        protect: special tokens never ranked or perturbed: ``"first"`` (a special first
            token such as [CLS] or BOS; [SEP] stays eligible), ``"special"`` (all) or
            ``"none"``.
        ratios: fractions ``k`` of comprehensiveness and sufficiency; ``int(len * k)``
            tokens are perturbed (``len`` counts special tokens, as the authors did).
        step, steps: insertion and deletion perturb ``int(len * step * i)`` tokens at step
            ``i = 1..steps`` and record whether the prediction flips.

    Soft metrics (pi-Soft paper):
        soft_protect: which special tokens keep their embeddings (default all).
        samples: Monte Carlo samples of the Bernoulli keep masks.
        pis: target retaining probabilities of pi-Soft-NC/NS.
        routing: ``"dynamic"`` (attention recomputed) or ``"fixed"`` (the clean pass's
            attention maps reused).
        distribution: output distribution the Hellinger distance compares: ``"labels"``,
            ``"vocabulary"`` or ``"auto"`` (vocabulary for language models, labels for
            classifiers).

    Evidence alignment (NormXLogit paper, section 5.2):
        dot_product: ``"raw"`` (the paper's definition) or ``"softmax"`` (the authors'
            code: scores softmaxed first, the target position left out).

    Plausibility against human rationales (ERASER's definitions; ferret's with
    ``FERRET_PLAUSIBILITY``, see :mod:`normxlogit.evaluation.plausibility`):
        discretize: how ``token_f1`` and ``token_iou`` turn scores into a rationale:
            ``"top_k"`` (the ``top_k`` highest-scoring tokens), ``"rationale"`` (as many
            top tokens as the human rationale has, so precision equals recall) or
            ``"threshold"`` (every token scoring at least ``score_threshold`` times the
            text's highest score).
        top_k: the ``k`` of ``"top_k"`` (5, the default of ferret's evaluators); also of
            ``sanity_top_k``.
        score_threshold: the share of the highest score of ``"threshold"``, in (0, 1].
        only_positive: ferret's ``only_pos``: the chosen tokens scoring <= 0 are dropped
            (so fewer than k, or none, may be chosen) and ``auprc`` reads negative scores
            as 0. Off by default: the raw scores are ranked.
        ties: which of two equal scores is chosen first: the ``"earlier"`` token (the
            default), or as numpy's default ``argsort`` taken from the top leaves them
            (``"argsort"``, ferret's order, which numpy does not define: its introsort
            puts the later token first below 17 tokens, its AVX-512 kernels order them by
            the data).
        empty_rationale: a text whose rationale marks none of the tokens the metrics read
            is ``"skip"``-ped (NaN, left out of the means; the default) or given a
            ``"score"``, ferret's: token F1 and IOU 0, AUPRC 0.5. Either way a warning
            says how many texts it concerns.

    Sanity checks (Adebayo et al., 2018):
        randomization: ``"cascading"`` (the head, then blocks from the last, then the
            embeddings re-initialised one after another) or ``"independent"`` (each alone).
        sanity_units, sanity_init, sanity_tokens, sanity_absolute: the definition
            (:mod:`normxlogit.sanity.definition`): the project's by default; Quantus
            0.6.0's MPRT is ``"modules"``, ``"reset_parameters"``, ``"all"``, ``True``.

    Both:
        seed: seeds every random draw; the same seed gives the same numbers.
        unit: what the faithfulness metrics rank, keep and perturb: ``"token"`` (the
            default) or ``"segment"``: each explanation's segments
            (``explain(..., segments=...)``), scored by their segment scores, a segment's
            tokens perturbed together; ratios count segments, pi is the expected share of
            segments kept (see :mod:`normxlogit.evaluation.units`).
        drop_k: ContextCite's top-k drop (``segment_drop``) removes the top k segments
            for each k here.
        lds_ablations: the held-out random ablations of ``segment_lds``.
    """

    replacement: str = "auto"
    protect: str = "first"
    ratios: tuple[float, ...] = NINE_RATIOS
    step: float = 0.05
    steps: int = 20
    soft_protect: str = "special"
    samples: int = 15
    pis: tuple[float, ...] = PI_GRID
    routing: str = "dynamic"
    distribution: str = "auto"
    dot_product: str = "raw"
    discretize: str = "top_k"
    top_k: int = 5
    score_threshold: float = 0.5
    only_positive: bool = False
    ties: str = "earlier"
    empty_rationale: str = "skip"
    randomization: str = "cascading"
    sanity_units: str = "groups"
    sanity_init: str = "model"
    sanity_tokens: str = "content"
    sanity_absolute: bool = False
    seed: int = 0
    unit: str = "token"
    drop_k: tuple[int, ...] = (1, 3, 5)
    lds_ablations: int = 32

    def __post_init__(self) -> None:
        # every setting converted to its declared type, or refused naming it (text from
        # the command line such as "5" or "[0.2,0.5]" included)
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in convert_options(Protocol, given, "protocol setting").items():
            object.__setattr__(self, name, value)
        for name, choices in (
            ("replacement", REPLACEMENTS),
            ("protect", PROTECTIONS),
            ("soft_protect", PROTECTIONS),
            ("routing", ROUTINGS),
            ("distribution", DISTRIBUTIONS),
            ("dot_product", DOT_FORMS),
            ("randomization", RANDOMIZATIONS),
            ("sanity_units", SANITY_UNITS),
            ("sanity_init", SANITY_INITS),
            ("sanity_tokens", SANITY_TOKENS),
            ("discretize", DISCRETIZATIONS),
            ("ties", TIES),
            ("empty_rationale", EMPTY_RATIONALES),
            ("unit", UNITS),
        ):
            if getattr(self, name) not in choices:
                raise InvalidInputError(
                    f"protocol {name}={getattr(self, name)!r} is not one of: {', '.join(choices)}"
                )
        for name, example in (
            ("ratios", "a ratio in (0, 1], e.g. ratios=[0.1,0.5]"),
            ("pis", "a value strictly between 0 and 1, e.g. pis=[0.25,0.5,0.75]"),
            ("drop_k", "a whole number >= 1, e.g. drop_k=[1,3,5]"),
        ):
            if not getattr(self, name):  # nothing lies out of range: the grid is empty
                raise InvalidInputError(f"{name} is empty; give at least one value, {example}")
        if not self.ratios or not all(0 < r <= 1 for r in self.ratios):
            raise InvalidInputError(f"ratios must lie in (0, 1], got {self.ratios}")
        if not self.pis or not all(0 < p < 1 for p in self.pis):
            raise InvalidInputError(f"pis must lie strictly between 0 and 1, got {self.pis}")
        if not self.drop_k or not all(k >= 1 for k in self.drop_k):
            raise InvalidInputError(f"drop_k must be whole numbers >= 1, got {self.drop_k}")
        for name in ("ratios", "pis", "drop_k"):  # a repeat would write each point twice
            grid = getattr(self, name)
            if len(set(grid)) < len(grid):
                raise InvalidInputError(
                    f"{name} repeats a value ({list(grid)}); give each point of the grid once"
                )
        if self.lds_ablations < 3:
            raise InvalidInputError(
                f"lds_ablations must be at least 3 (a rank correlation), got {self.lds_ablations}"
            )
        if self.top_k < 1:
            raise InvalidInputError(f"top_k must be at least 1, got {self.top_k}")
        if not 0 < self.score_threshold <= 1:
            raise InvalidInputError(
                f"score_threshold must lie in (0, 1], got {self.score_threshold}"
            )
        if self.samples < 1 or self.steps < 1 or not 0 < self.step <= 1:
            raise InvalidInputError(
                "samples and steps must be at least 1 and step in (0, 1]; got "
                f"samples={self.samples}, steps={self.steps}, step={self.step}"
            )

    @property
    def step_fractions(self) -> tuple[float, ...]:
        """The fractions of tokens perturbed at each insertion/deletion step."""
        return tuple(round(self.step * i, 10) for i in range(1, self.steps + 1))

    def resolved(self, model) -> Protocol:
        """This protocol with every ``"auto"`` replaced by what it means for ``model``."""
        replacement = self.replacement
        if replacement == "auto":
            has_mask = getattr(model.tokenizer, "mask_token_id", None) is not None
            replacement = "delete" if model.family.is_decoder or not has_mask else "mask"
        if replacement == "mask" and getattr(model.tokenizer, "mask_token_id", None) is None:
            raise InvalidInputError(f"{model.name} has no mask token; use replacement='delete'")
        distribution = self.distribution
        if distribution == "auto":
            over_vocabulary = model.task.kind in (TaskKind.MASKED_LM, TaskKind.CAUSAL_LM)
            distribution = "vocabulary" if over_vocabulary else "labels"
        if distribution == "vocabulary" and not model.task.over_vocabulary:
            raise InvalidInputError(
                f"{model.name} is a classifier; its output distribution is over labels "
                "(distribution='labels')"
            )
        return replace(self, replacement=replacement, distribution=distribution)

    def with_options(self, **changes: Any) -> Protocol:
        """A copy with some settings changed.

        Unknown names are refused; values are converted to each setting's type (text such
        as ``"5"`` or ``"[0.2,0.5]"`` from the command line included), and a value that
        does not fit raises :class:`~normxlogit.common.errors.InvalidOptionError` naming the
        setting and its type.
        """
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise InvalidInputError(
                f"unknown protocol setting(s) {unknown}; known: {', '.join(sorted(known))}"
            )
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratios"], data["pis"] = list(self.ratios), list(self.pis)
        data["drop_k"] = list(self.drop_k)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Protocol:
        return cls().with_options(**data)


def given_protocol(protocol: Any) -> Protocol:
    """``protocol=`` as the evaluating functions take it: a :class:`Protocol`, or None for
    the default; anything else (a dict of settings, command-line text) refused in one line."""
    if protocol is None:
        return Protocol()
    if not isinstance(protocol, Protocol):
        hint = ""
        if isinstance(protocol, dict):
            hint = " (a dict of settings: Protocol.from_dict(settings))"
        raise InvalidInputError(
            f"protocol is {type_phrase(protocol)}; give a normxlogit.Protocol, e.g. "
            f"protocol=Protocol(ratios=(0.5,)){hint}"
        )
    return protocol
