"""Soft perturbation metrics: Soft-NC/NS and pi-Soft-NC/NS (pi-Soft paper, eqs. 1-7).

A token's input embedding is kept with probability ``s_i`` (Soft-NS) or ``1 - s_i``
(Soft-NC) and zeroed otherwise; the effect is the Hellinger distance between the clean and
the perturbed output distributions, normalised by the effect of zeroing every eligible
token. The pi-versions first rescale the scores into [0, 1] and raise them to the power
``alpha`` that makes their mean the target retaining probability pi, so every method keeps
the same expected number of tokens.

A text with one unit to perturb (or none), whether the units are tokens or segments
(``Protocol(unit="segment")``), keeps it with the same probability whatever its score (pi;
0.5 unscaled), so it has no value (NaN, left out of the means) and a warning counts those
texts.

Random draws are seeded per text (from the protocol's seed and the text's token ids), so a
text gets the same keep masks alone or in any batch, and every method is scored on the
same uniform draws: differences between methods are not sampling noise.
"""

from __future__ import annotations

import warnings
import zlib
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.numbering import text_names, text_word
from ..metrics import calibrate, rescale_unit
from .constant import constant_by_method, constant_which
from .context import EvaluationContext
from .perturb import eligible
from .protocol import Protocol
from .registry import Metric, MetricInfo, register_metric
from .runner import CleanRouting

#: a zero-baseline effect below this means the output ignores the input: the metric is NaN
MIN_BASELINE_EFFECT = 1e-6
#: a Soft-NC value this many times the all-zero input's change: the baseline it is divided
#: by is small, so one such text can outweigh the others in a mean (said, kept as computed)
OUTSIZED_NC = 10.0


def hellinger_rows(p: Tensor, q: Tensor) -> Tensor:
    """Hellinger distance between rows of two probability tables ``[N, C]``."""
    return (p.sqrt() - q.sqrt()).pow(2).sum(-1).clamp_min(0).sqrt() / 2**0.5


def uniforms(ctx: EvaluationContext, samples: int) -> Tensor:
    """Uniform draws ``[B, S, T]`` seeded per text (padding gets 1: never kept)."""
    batch = ctx.batch
    draws = torch.ones(len(batch), samples, batch.input_ids.shape[1])
    all_ids, masks = batch.input_ids.cpu(), batch.attention_mask.cpu().bool()  # one copy each
    for row in range(len(batch)):
        real = masks[row].nonzero().squeeze(-1)
        ids = np.asarray(all_ids[row, real], dtype=np.int64)
        # torch's CPU generator keeps 32 bits of a seed: mix the seed into the hash itself
        key = zlib.crc32(ids.tobytes(), zlib.crc32(str(ctx.protocol.seed).encode()))
        generator = torch.Generator().manual_seed(key)
        draws[row][:, real] = torch.rand(samples, real.numel(), generator=generator)
    return draws.to(ctx.model.device)


class SoftRun:
    """The clean distribution, the zero baseline and the routing of one context."""

    def __init__(self, ctx: EvaluationContext):
        self.ctx = ctx
        protocol = ctx.protocol
        self.allowed = eligible(ctx.batch, protocol.soft_protect)
        if ctx.units is not None:  # only segments' tokens are kept or zeroed
            self.allowed = self.allowed & (ctx.units.members >= 0)
        self.vocabulary = protocol.distribution == "vocabulary"
        self.routing = CleanRouting(ctx.runner) if protocol.routing == "fixed" else None
        texts = torch.arange(len(ctx.batch), device=self.allowed.device)
        self.reference = self._distributions(texts, torch.zeros_like(self.allowed))
        self.baseline = self.effect(texts, self.allowed)  # [B]

    def _distributions(self, source: Tensor, zero: Tensor) -> Tensor:
        return self.ctx.runner.zeroed(
            source, zero, lambda logits, rows: logits.softmax(-1), self.routing, self.vocabulary
        )

    def effect(self, source: Tensor, zero: Tensor) -> Tensor:
        """Hellinger distance from the clean output for each perturbed row ``[N]``."""
        reference = self.reference

        def reduce(logits: Tensor, rows: Tensor) -> Tensor:
            return hellinger_rows(logits.softmax(-1), reference[source[rows]])

        return self.ctx.runner.zeroed(source, zero, reduce, self.routing, self.vocabulary)


#: why the soft metrics cannot score a regression model
NO_DISTRIBUTION = "compares output distributions; a regression model has none"


def soft_run(ctx: EvaluationContext) -> SoftRun:
    if ctx.is_regression:
        raise InvalidInputError(f"soft metrics {NO_DISTRIBUTION}")
    return ctx.cached("soft", lambda: SoftRun(ctx))


def keep_probabilities(ctx: EvaluationContext, allowed: Tensor, pis: tuple[float, ...] | None):
    """Keep probabilities ``[M, B, P, T]`` of the ``allowed`` (eligible) tokens ``[B, T]``:
    the scores rescaled into [0, 1] (P = 1 without pis) or calibrated to each pi
    (``metrics.calibrate``). Other positions hold placeholders; the caller never perturbs
    them."""
    scores = ctx.scores
    if ctx.units is not None:  # [M, B, U]: one keep probability per segment
        allowed, scores = ctx.units.allowed(allowed), ctx.units.scores
    mask = allowed.cpu().numpy()  # [B, T], broadcast over the methods
    unit = rescale_unit(np.nan_to_num(scores.cpu().numpy()), mask=mask)
    keep = unit[:, :, None, :] if pis is None else calibrate(unit, np.asarray(pis), mask=mask)
    return torch.as_tensor(np.ascontiguousarray(keep), dtype=torch.float, device=allowed.device)


def soft_scores(ctx: EvaluationContext, pis: tuple[float, ...] | None, complement: bool) -> Tensor:
    """Soft-NC (``complement``) or Soft-NS per method, text and pi ``[M, B, P]``."""
    run = soft_run(ctx)
    # NS and NC of a context share the calibration and the draws: computed once
    keep = ctx.cached(("keep", pis), lambda: keep_probabilities(ctx, run.allowed, pis))
    if complement:
        keep = 1.0 - keep
    samples = ctx.protocol.samples
    draws = ctx.cached(("uniforms", samples), lambda: uniforms(ctx, samples))  # [B, S, T]
    if ctx.units is None:
        kept = draws[None, :, None] < keep[:, :, :, None, :]  # [M, B, P, S, T]
        zero = run.allowed[None, :, None, None, :] & ~kept
    else:  # each segment kept or zeroed whole, on its first token's draw
        first = ctx.units.first_positions(run.allowed)  # [B, U]
        unit_draws = draws.gather(-1, first[:, None, :].expand(-1, samples, -1))
        kept = unit_draws[None, :, None] < keep[:, :, :, None, :]  # [M, B, P, S, U]
        units = ctx.units.allowed(run.allowed)
        zero = ctx.units.to_tokens(units[None, :, None, None, :] & ~kept, run.allowed)
    methods, texts, points = zero.shape[:3]
    source = torch.arange(texts, device=zero.device)[None, :, None, None].expand(zero.shape[:4])
    effects = run.effect(source.reshape(-1), zero.reshape(-1, zero.shape[-1]))
    effects = effects.reshape(methods, texts, points, samples)
    baseline = run.baseline[None, :, None, None]
    kept = effects if complement else (baseline - effects).clamp_min(0)
    ratio = kept / baseline
    ratio = ratio.masked_fill(baseline <= MIN_BASELINE_EFFECT, float("nan"))
    return ratio.mean(-1).cpu()


@dataclass
class SoftConstant:
    """One chunk's constant explanations, shared by its soft metrics (``ctx.cached``), so
    an evaluation warns once, not once per soft metric or chunk."""

    unit: str  # "token" or "segment"
    #: method -> the chunk's instances whose explanation scores every perturbed unit alike
    found: dict[str, set[int]] | None = None  # None: not looked at yet
    told: bool = False  # the evaluation's warning was given


def constant_units(ctx: EvaluationContext, allowed: Tensor) -> dict[str, set[int]]:
    """Per method, the instances whose explanation gives every unit the soft metrics
    perturb (``allowed``, ``[B, T]``) the same score: each is kept with one probability."""
    scores = ctx.scores
    if ctx.units is not None:
        allowed, scores = ctx.units.allowed(allowed), ctx.units.scores
    return constant_by_method(ctx, allowed, scores.nan_to_num(0.0))


def soft_constant_message(chunks: list[SoftConstant]) -> str | None:
    """The warning about constant explanations the soft metrics scored (None: none)."""
    which = constant_which(chunk.found for chunk in chunks)
    if which is None:
        return None
    unit = chunks[0].unit
    return (
        f"constant explanations ({which}): every {unit} has the same score, so Soft-NC/NS "
        f"and pi-Soft-NC/NS keep every {unit} with the same probability (pi, or 0.5 "
        "unscaled): their values reflect no ranking; they are kept in the means"
    )


#: the settings the pi-Soft metrics read (raw Soft-NC/NS read all but ``pis``)
SOFT_SETTINGS = ("soft_protect", "samples", "pis", "routing", "distribution", "seed", "unit")


class SoftMetric(Metric):
    protocol_settings = SOFT_SETTINGS
    regression_refusal = NO_DISTRIBUTION
    perturbs_input = True
    complement: bool
    calibrated: bool

    def __init__(self) -> None:
        self._texts: set[int] = set()
        self._single: set[int] = set()  # one unit (token or segment) or none to perturb
        self._outsized: dict[int, float] = {}  # Soft-NC: text -> its largest value
        self._constant: list[SoftConstant] = []  # shared with the other soft metrics

    def planned_rows(self, protocol: Protocol, methods: int, texts: int) -> dict:
        """The clean distributions and the zero baseline (shared by every soft metric),
        then one row per method, text, pi and sample."""
        points = len(protocol.pis) if self.calibrated else 1
        return {
            "soft": 2 * texts,
            ("soft", self.info.name): methods * texts * points * protocol.samples,
        }

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        pis = ctx.protocol.pis if self.calibrated else None
        values = soft_scores(ctx, pis, self.complement)
        self._texts.update(ctx.instances)
        # one unit (token or segment) is kept alike whatever its score: no value
        allowed = soft_run(ctx).allowed
        if ctx.units is not None:
            allowed = ctx.units.allowed(allowed)
        single = (allowed.sum(-1) <= 1).cpu()
        self._note_constant(ctx, soft_run(ctx).allowed)
        values[:, single] = float("nan")
        self._single.update(i for i, s in zip(ctx.instances, single.tolist(), strict=True) if s)
        if self.complement:
            largest = values.nan_to_num(0.0).amax(dim=(0, 2))  # [B]: over methods and pis
            for instance, value in zip(ctx.instances, largest.tolist(), strict=True):
                if value > OUTSIZED_NC:
                    self._outsized[instance] = value
        points = pis or (None,)
        return [
            ctx.row(m, b, x, values[m, b, p])
            for m in range(len(ctx.methods))
            for b in range(len(ctx.instances))
            for p, x in enumerate(points)
        ]

    def _note_constant(self, ctx: EvaluationContext, allowed: Tensor) -> None:
        """Note the chunk's constant explanations, once for its soft metrics."""
        unit = "token" if ctx.units is None else "segment"
        chunk = ctx.cached(("soft", "constant"), lambda: SoftConstant(unit))
        if not self._constant or self._constant[-1] is not chunk:
            self._constant.append(chunk)
        if chunk.found is None:
            chunk.found = constant_units(ctx, allowed)

    def _warn_constant(self) -> None:
        """Warn once per evaluation (by the first soft metric to finish, for them all)
        about constant explanations."""
        if not self._constant or any(chunk.told for chunk in self._constant):
            return
        for chunk in self._constant:
            chunk.told = True
        if (message := soft_constant_message(self._constant)) is not None:
            warnings.warn(message, NormXLogitWarning, stacklevel=4)

    def finish(self, protocol: Protocol) -> None:
        """Say how many texts had one unit (token or segment) or none to perturb (the same
        words from every soft metric, so the warning shows once), and which texts' Soft-NC
        is outsized by a small baseline, and which explanations were constant."""
        self._warn_constant()
        if self._outsized:
            named = sorted(self._outsized, key=self._outsized.get, reverse=True)
            warnings.warn(
                f"{self.info.name}: {len(named)} of {len(self._texts)} {text_word()} reach "
                f"more than {OUTSIZED_NC:g} times the all-zero input's change (largest "
                f"{self._outsized[named[0]]:.3g}, {text_names(named, 5)}): zeroing every token "
                "changes their output little, so the ratio is large and can outweigh the other "
                "texts in the mean; compare methods text by text (instance_summaries(), "
                "paired_differences()) or look at those texts",
                NormXLogitWarning,
                stacklevel=3,
            )
        if self._single:
            warnings.warn(
                f"{len(self._single)} of {len(self._texts)} {text_word()} have one "
                f"{protocol.unit} or none the soft metrics perturb (unit={protocol.unit!r}): "
                "it is kept with the same probability whatever its score, so Soft-NC/NS and "
                "pi-Soft-NC/NS cannot tell methods apart there and give those "
                f"{text_word()} no value (n/a, left out of the means)",
                NormXLogitWarning,
                stacklevel=3,
            )


def _info(name: str, description: str, calibrated: bool, value_range) -> MetricInfo:
    axis, summary = ("pi", "auc") if calibrated else (None, "mean")
    return MetricInfo(name, description, True, value_range, axis, summary)


@register_metric
class SoftNS(SoftMetric):
    info = _info(
        "soft_ns", "Soft-NS: output kept when tokens are kept with p = score", False, (0, 1)
    )
    #: keeps each token with p = score itself: ``pis`` is pi-Soft's alone
    protocol_settings = tuple(name for name in SOFT_SETTINGS if name != "pis")
    #: its values were once keyed by ``pis`` too
    keyed_at_default = ("pis",)
    complement, calibrated = False, False


@register_metric
class SoftNC(SoftMetric):
    info = _info(
        "soft_nc",
        "Soft-NC: output change when tokens are kept with p = 1 - score",
        False,
        (0, np.inf),  # normalised by the all-zero input's change, which can be smaller
    )
    #: keeps each token with p = score itself: ``pis`` is pi-Soft's alone
    protocol_settings = tuple(name for name in SOFT_SETTINGS if name != "pis")
    #: its values were once keyed by ``pis`` too
    keyed_at_default = ("pis",)
    complement, calibrated = True, False


@register_metric
class ExpectedRetained(Metric):
    """E[R], the expected number of tokens raw Soft-NS keeps: the sum of the rescaled keep
    probabilities over the eligible tokens (pi-Soft paper, eq. 6 and table 2). Raw
    Soft-NC/NS compare methods at different E[R]; the pi-versions fix it at pi x m. It
    perturbs nothing, and has no better direction: it says what a raw score means."""

    info = MetricInfo(
        "expected_retained",
        "E[R]: expected number of tokens raw Soft-NS keeps (the rescaled scores' sum)",
        None,
        (0, np.inf),
        None,
        "mean",
    )
    protocol_settings = ("soft_protect", "unit")
    regression_refusal = (
        "describes raw Soft-NC/NS, which compare output distributions; a regression model has none"
    )

    def planned_rows(self, protocol: Protocol, methods: int, texts: int) -> dict:
        return {}

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        allowed = eligible(ctx.batch, ctx.protocol.soft_protect)
        keep = keep_probabilities(ctx, allowed, None)[:, :, 0]  # [M, B, T] (or units)
        if ctx.units is not None:
            allowed = ctx.units.allowed(allowed & (ctx.units.members >= 0))
        retained = (keep * allowed[None].to(keep.dtype)).sum(-1).cpu()
        return [
            ctx.row(m, b, None, retained[m, b])
            for m in range(len(ctx.methods))
            for b in range(len(ctx.instances))
        ]


@register_metric
class PiSoftNS(SoftMetric):
    info = _info("pi_soft_ns", "pi-Soft-NS: Soft-NS at retaining probability pi", True, (0, 1))
    complement, calibrated = False, True


@register_metric
class PiSoftNC(SoftMetric):
    info = _info("pi_soft_nc", "pi-Soft-NC: Soft-NC at retaining probability pi", True, (0, np.inf))
    complement, calibrated = True, True
