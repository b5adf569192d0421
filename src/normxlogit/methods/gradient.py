"""Gradient baselines: saliency, gradient x input, integrated gradients.

(DeepLift, which needs rules of its own at every nonlinearity, lives in the ``deeplift`` package.)

Attribution is taken at the word-embedding layer: the model is run from
``inputs_embeds`` (the word-embedding rows), so it adds position and segment embeddings
itself and computes exactly the function ``model(input_ids)`` computes (the authors' code
fed the embedding layer's *output* back in, adding positions twice and dropping segment
ids). Captum is the engine of saliency and gradient x input; integrated gradients runs
Captum's quadrature in passes of its own (see :class:`IntegratedGradients`). The model's
weights never require gradients while a gradient method runs: only the embeddings do.

Every gradient method says what it attributes and how it reduces:

- ``attributed_fn``: the target's ``"logit"`` (the NormXLogit paper's setting, the
  default) or its ``"probability"`` (the softmax over the model's whole output, a prompted
  model's whole vocabulary included: Inseq's default, so the pi-Soft paper's);
- ``reduce``: the hidden dimension reduced by the ``"l1"`` norm (default), the ``"l2"``
  norm (Inseq's default) or a signed ``"sum"``.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from ..common.errors import InvalidInputError, InvalidOptionError
from ..common.options import token_field
from ..model.adapter import ExplainableModel, ForwardResult
from ..model.inputs import Batch
from ..model.targets import Targets
from ..model.tasks import TaskKind
from .base import (
    Attribution,
    AttributionMethod,
    Layers,
    bounded,
    check_choice,
    register_method,
)
from .baselines import baseline_embeddings

#: the most steps of any quadrature: each is a forward and a backward pass of every text
MAX_STEPS = 10_000
#: the most Gauss-Legendre steps: NumPy finds its nodes as the eigenvalues of a steps x
#: steps matrix, which takes seconds beyond this (minutes and gigabytes at 10,000)
MAX_GAUSS_LEGENDRE_STEPS = 1_000


#: what a gradient method differentiates: the target's logit or its probability
ATTRIBUTED_FNS = ("logit", "probability")

REDUCTIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "l1": lambda grads: grads.abs().sum(-1),
    "l2": lambda grads: grads.norm(dim=-1),
    "sum": lambda grads: grads.sum(-1),
}


class ReadingOutput(nn.Module):
    """``inputs_embeds`` -> the head's outputs ``[B, C]`` at each row's reading position:
    logits, or the model's probabilities (``attributed_fn="probability"``).

    The rest of the batch (attention mask, reading positions, segment and position ids)
    comes as extra arguments, so Captum repeats it along with the inputs it expands. The
    network is a submodule, so Captum's DeepLift finds the activation modules it rules.
    """

    def __init__(
        self, model: ExplainableModel, extra_names: tuple[str, ...], attributed_fn: str = "logit"
    ):
        super().__init__()
        self.explainable = model
        self.network = model.model
        self.extra_names = extra_names
        self.attributed_fn = attributed_fn

    def forward(self, embeds: Tensor, mask: Tensor, reading: Tensor, *extra: Tensor) -> Tensor:
        inputs = dict(zip(self.extra_names, extra, strict=True))
        states = self.explainable.run_backbone(
            inputs_embeds=embeds, attention_mask=mask, **inputs
        ).last_hidden_state
        rows = torch.arange(states.shape[0], device=states.device)
        return attributed_outputs(self.explainable, states[rows, reading], self.attributed_fn)


class ContrastOutput(nn.Module):
    """A :class:`ReadingOutput` minus its output at a contrast column per row: Captum's
    ``target=A`` then differentiates ``f_A - f_B``. The contrast columns come first among
    the extra arguments, so Captum repeats them with the inputs it expands."""

    def __init__(self, function: ReadingOutput):
        super().__init__()
        self.function = function

    def forward(self, embeds: Tensor, contrast: Tensor, *extra: Tensor) -> Tensor:
        outputs = self.function(embeds, *extra)
        return outputs - outputs.gather(1, contrast.to(outputs.device).unsqueeze(1))


def contrasted(
    function: ReadingOutput, extra: tuple, targets: Targets, k: int
) -> tuple[nn.Module, tuple]:
    """What Captum differentiates for target column ``k``, and its extra arguments:
    ``function`` itself, or its difference from the contrast column."""
    if not targets.contrastive:
        return function, extra
    return ContrastOutput(function), (targets.contrast[:, k], *extra)


def attributed_outputs(model: ExplainableModel, states: Tensor, attributed_fn: str) -> Tensor:
    """What a gradient method differentiates, for reading states ``[B, D]``: ``[B, C]``
    logits or probabilities over the output space (the target columns index it)."""
    if attributed_fn == "probability":
        return model.output_probabilities(states)
    return model.output_logits(states)


def clean_outputs(model: ExplainableModel, forward: ForwardResult, attributed_fn: str) -> Tensor:
    """:func:`attributed_outputs` at the input, read from explain's forward pass."""
    if attributed_fn == "logit":
        return forward.logits
    rows = torch.arange(len(forward.batch), device=forward.final_states.device)
    return attributed_outputs(
        model, forward.final_states[rows, forward.batch.reading_positions], attributed_fn
    )


def check_attributed_fn(model: ExplainableModel, attributed_fn: str) -> None:
    """Refuse an attributed function the model has no meaning for, before any work."""
    check_choice("attributed_fn", attributed_fn, ATTRIBUTED_FNS)
    if attributed_fn == "probability" and model.task.kind is TaskKind.REGRESSION:
        raise InvalidInputError(
            "attributed_fn='probability': a regression model outputs a value, not "
            "probabilities; use attributed_fn='logit'"
        )


def word_embeddings(model: ExplainableModel, batch: Batch) -> Tensor:
    """The word-embedding rows of the batch ``[B, T, D]``, the point of attribution."""
    return model.model.get_input_embeddings()(batch.input_ids)


def reading_output(
    model: ExplainableModel, batch: Batch, attributed_fn: str = "logit"
) -> tuple[ReadingOutput, tuple]:
    """The function Captum differentiates, and its extra arguments for ``batch``."""
    inputs = model.backbone_inputs(batch)
    names = tuple(n for n in ("token_type_ids", "position_ids") if n in inputs)
    extra = (batch.attention_mask, batch.reading_positions, *(inputs[n] for n in names))
    return ReadingOutput(model, names, attributed_fn), extra


@dataclass
class GradientMethod(AttributionMethod):
    """Shared machinery: one Captum attribution per target column, then a reduction."""

    needs_gradients: ClassVar[bool] = True
    single_forward: ClassVar[bool] = False
    signed: ClassVar[bool] = False

    #: the hidden dimension's reduction: "l1", "l2" or a signed "sum"
    reduce: str = "l1"
    #: what is differentiated: the target's "logit" or its "probability"
    attributed_fn: str = "logit"

    #: the Captum attribution class this method runs
    captum_class: ClassVar[str]

    def captum_options(self, function: ReadingOutput, embeds: Tensor) -> dict[str, Any]:
        """Keyword arguments for the Captum class's ``attribute``."""
        return {}

    def captum_attribute(
        self, function: nn.Module, embeds: Tensor, target: Tensor, extra: tuple[Tensor, ...]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Attributions ``[B, T, D]`` for one target column, and diagnostics ``[B]``."""
        import captum.attr

        engine = getattr(captum.attr, self.captum_class)(function)
        with warnings.catch_warnings():  # Captum announces the hooks it sets
            warnings.simplefilter("ignore", UserWarning)
            result = engine.attribute(
                embeds,
                target=target,
                additional_forward_args=extra,
                **self.captum_options(function, embeds),
            )
        if isinstance(result, tuple):  # (attributions, convergence delta)
            return result[0], {"convergence_delta": result[1]}
        return result, {}

    def attribute(self, model, forward: ForwardResult, targets: Targets, layers: Layers):
        check_choice("reduce", self.reduce, tuple(REDUCTIONS))
        check_attributed_fn(model, self.attributed_fn)
        batch = forward.batch
        function, extra = reading_output(model, batch, self.attributed_fn)
        scores, diagnostics = [], {}
        with frozen_parameters(model.model):
            embeds = word_embeddings(model, batch).detach().requires_grad_(True)
            columns = targets.columns.to(embeds.device)
            for k in range(columns.shape[1]):
                differentiated, arguments = contrasted(function, extra, targets, k)
                attributions, found = self.captum_attribute(
                    differentiated, embeds, columns[:, k], arguments
                )
                scores.append(REDUCTIONS[self.reduce](attributions.detach()))
                for name, values in found.items():
                    diagnostics.setdefault(name, []).append(values.detach())
        return Attribution(
            torch.stack(scores, dim=-1).unsqueeze(1),  # [B, 1, T, K]
            {name: torch.stack(values, dim=-1) for name, values in diagnostics.items()},
        )


@register_method
@dataclass
class GradientNorm(GradientMethod):
    """Saliency: the gradient of the target's logit (or probability) w.r.t. each word
    embedding, reduced over the hidden dimension."""

    name: ClassVar[str] = "gradient_norm"
    description: ClassVar[str] = (
        "saliency: the norm of the target logit's (or probability's) gradient at each word "
        "embedding"
    )
    captum_class: ClassVar[str] = "Saliency"

    def captum_options(self, function, embeds):
        return {"abs": False}


@register_method
@dataclass
class GradientXInput(GradientMethod):
    """Gradient times the word embedding."""

    name: ClassVar[str] = "gradient_x_input"
    description: ClassVar[str] = "gradient x word embedding, reduced over the hidden dimension"
    captum_class: ClassVar[str] = "InputXGradient"


@register_method
@dataclass
class IntegratedGradients(GradientMethod):
    """Integrated gradients from a baseline embedding (zeros by default; see
    :mod:`~normxlogit.methods.baselines`) to the input.

    The path integral is Captum's quadrature (``method``, ``steps`` points), computed here
    so that it costs what the steps cost and no more:

    - each text's steps are rows of a pass, and a pass holds at most ``tokens_per_pass``
      tokens (rows x length) or ``internal_batch_size`` rows: memory is bounded, and on
      a CPU the time per token hardly depends on the pass size;
    - a pass holds texts of one length and is cut to their tokens: the batch's padding
      (which gets no gradient anyway) is left out, so a short text in a long text's
      batch costs its own length;
    - one forward per pass serves every target column (one backward each);
    - the completeness error (``convergence_delta``: sum of attributions minus the
      output change) reads the output at the input from the prediction pass that
      ``explain`` already ran, and costs one forward of the baselines;
    - the model's weights do not require gradients while it runs.
    """

    name: ClassVar[str] = "integrated_gradients"
    description: ClassVar[str] = (
        "integrated gradients from a baseline embedding (zero, unk, pad, mask or a token; 50 steps)"
    )

    steps: int = bounded(
        50, low=1, high=MAX_STEPS, why_high="each step is a forward and a backward pass"
    )
    #: "zero", "unk", "pad", "mask", a token id (an int, or "id:N" as text) or a token
    #: (see ``baselines``): text is never read as an id
    baseline: str | int = token_field("zero")
    #: end-of-sequence positions keep their own embedding (Inseq's default)
    baseline_keeps_eos: bool = False
    method: str = "gausslegendre"
    #: most tokens (rows x length) per pass, which bounds memory; ``None``: no bound
    tokens_per_pass: int | None = 2048
    #: most rows per pass, instead of ``tokens_per_pass`` (Captum's option)
    internal_batch_size: int | None = None

    #: both only cut the steps into passes: the sums are the same but for float rounding
    execution_options: ClassVar[frozenset[str]] = frozenset(
        {"tokens_per_pass", "internal_batch_size"}
    )

    def __post_init__(self) -> None:
        """The quadrature's own bounds on ``steps`` first: a Riemann sum's minimum is 2
        whatever the step count that is refused."""
        check_choice("method", self.method, QUADRATURES)
        if (problem := steps_problem(self.method, self.steps)) is not None:
            raise InvalidOptionError(
                f"method 'integrated_gradients' option steps={self.steps} {problem}"
            )
        super().__post_init__()

    def attribute(self, model, forward, targets, layers):
        check_choice("reduce", self.reduce, tuple(REDUCTIONS))
        check_attributed_fn(model, self.attributed_fn)
        for option in ("steps", "tokens_per_pass", "internal_batch_size"):
            value = getattr(self, option)
            if (value is not None or option == "steps") and value < 1:
                raise InvalidInputError(f"{option} must be at least 1, got {value}")
        batch = forward.batch
        function, extra = reading_output(model, batch, self.attributed_fn)
        with frozen_parameters(model.model):
            embeds = word_embeddings(model, batch).detach()
            baseline = baseline_embeddings(
                model, batch, embeds, self.baseline, self.baseline_keeps_eos
            )
            grads = self._path_gradients(function, extra, embeds, baseline, targets)
            delta_in = embeds if baseline is None else embeds - baseline
            attributions = grads * delta_in  # [K, B, T, D]
            with torch.no_grad():
                start_point = torch.zeros_like(embeds) if baseline is None else baseline
                start = function(start_point, *extra)
        clean = clean_outputs(model, forward, self.attributed_fn)
        change = torch.stack(
            [targets.pick(clean - start, k) for k in range(targets.columns.shape[1])], dim=1
        )
        delta = attributions.sum((-1, -2)).T - change  # [B, K]
        scores = REDUCTIONS[self.reduce](attributions).permute(1, 2, 0)  # [B, T, K]
        return Attribution(scores.unsqueeze(1), {"convergence_delta": delta})

    def _path_gradients(
        self,
        function: ReadingOutput,
        extra: tuple[Tensor, ...],
        embeds: Tensor,
        baseline: Tensor | None,
        targets: Targets,
    ) -> Tensor:
        """Step-weighted sums of the target outputs' gradients (contrastive: of their
        differences from the contrasts') along the path ``[K, B, T, D]``."""
        columns = targets.columns
        step_sizes, step_alphas = quadrature(self.method, self.steps)
        sizes = torch.tensor(step_sizes, dtype=torch.float32, device=embeds.device)
        alphas = torch.tensor(step_alphas, dtype=embeds.dtype, device=embeds.device)
        mask, reading, *named = extra
        spans = _token_spans(mask, leading="position_ids" in function.extra_names)
        total = None  # made after the first pass's peak
        for (lo, hi), rows in self._passes(spans):
            text = torch.tensor([t for t, first, end in rows for _ in range(first, end)])
            step = torch.tensor([s for _, first, end in rows for s in range(first, end)])
            text, step = text.to(embeds.device), step.to(embeds.device)
            points = self._points(embeds, baseline, alphas, text, step, lo, hi)
            outputs = function(
                points, mask[text, lo:hi], reading[text] - lo, *(n[text, lo:hi] for n in named)
            )
            for k in range(columns.shape[1]):
                picked = targets.pick(outputs, k, rows=text).sum()
                last = k == columns.shape[1] - 1
                (grad,) = torch.autograd.grad(picked, points, retain_graph=not last)
                weighted = grad * sizes[step].view(-1, 1, 1).to(grad.dtype)
                if total is None:
                    total = grad.new_zeros((columns.shape[1], *embeds.shape))
                offset = 0
                for t, first, end in rows:  # each text's rows are consecutive
                    count = end - first
                    total[k, t, lo:hi] += weighted[offset : offset + count].sum(0)
                    offset += count
                del grad, weighted
            del points, outputs  # free this pass before the next one runs
        return total

    @staticmethod
    def _points(embeds, baseline, alphas, text, step, lo, hi) -> Tensor:
        """The path's points for the rows ``(text, step)``, columns ``lo:hi`` (Captum's
        ``baseline + alpha * (input - baseline)``); nothing else stays alive."""
        alpha = alphas[step].view(-1, 1, 1)
        if baseline is None:
            return (alpha * embeds[text, lo:hi]).requires_grad_(True)
        start = baseline[text, lo:hi]
        return (start + alpha * (embeds[text, lo:hi] - start)).requires_grad_(True)

    def _passes(
        self, spans: list[tuple[int, int]]
    ) -> list[tuple[tuple[int, int], list[tuple[int, int, int]]]]:
        """Each pass's token span and ``(text, first step, end step)`` row ranges.

        A pass holds texts of one span only (so no row is padded beyond its own tokens;
        widest texts first, texts of equal span together) and at most
        ``internal_batch_size`` rows, or rows x width <= ``tokens_per_pass`` (one row at
        least); with both ``None`` the rows of a span are not bounded. The rows of a span
        are spread evenly over the fewest passes that respect the bound.
        """
        texts_of = Counter(spans)
        passes: list[tuple[tuple[int, int], list[tuple[int, int, int]]]] = []
        current: list[tuple[int, int, int]] = []
        rows, span = 0, spans[0] if spans else (0, 0)
        for text in sorted(range(len(spans)), key=lambda t: (spans[t][0] - spans[t][1], t)):
            if current and spans[text] != span:
                passes.append((span, current))
                current, rows = [], 0
            span = spans[text]
            room = self._rows_per_pass(span[1] - span[0], texts_of[span] * self.steps)
            step = 0
            while step < self.steps:
                if rows >= room:
                    passes.append((span, current))
                    current, rows = [], 0
                take = min(room - rows, self.steps - step)
                current.append((text, step, step + take))
                rows, step = rows + take, step + take
        if current:
            passes.append((span, current))
        return passes

    def _rows_per_pass(self, width: int, rows: int) -> int:
        """Rows per pass for ``rows`` rows of ``width`` tokens: within the bound, and as
        even as the number of passes allows (50 rows under a bound of 38: 25 and 25)."""
        if self.internal_batch_size is not None:
            bound = self.internal_batch_size
        elif self.tokens_per_pass is not None:
            bound = max(1, self.tokens_per_pass // width)
        else:
            return rows
        passes = -(-rows // bound)
        return -(-rows // passes)


#: the quadratures Captum implements (``method``)
QUADRATURES = (
    "gausslegendre",
    "riemann_left",
    "riemann_right",
    "riemann_middle",
    "riemann_trapezoid",
)


def steps_problem(method: str, steps: int) -> str | None:
    """What is wrong with ``steps`` for the quadrature ``method`` (None: nothing)."""
    if not isinstance(steps, int):  # a type get_method refuses; the class built by hand
        return None
    if method == "gausslegendre" and steps > MAX_GAUSS_LEGENDRE_STEPS:
        return (
            f"is too large for method='gausslegendre': at most {MAX_GAUSS_LEGENDRE_STEPS} "
            "(its nodes are the eigenvalues of a steps x steps matrix); use "
            f"method='riemann_trapezoid' for up to {MAX_STEPS}"
        )
    if method != "gausslegendre" and steps < 2:
        return f"must be at least 2 for method={method!r} (a Riemann sum needs two points)"
    return None


def quadrature(method: str, steps: int) -> tuple[list[float], list[float]]:
    """Step sizes (weights) and alphas (points in [0, 1]) of ``method``, as Captum's
    ``approximation_parameters`` computes them (without importing Captum)."""
    if (problem := steps_problem(method, steps)) is not None:
        raise InvalidInputError(f"steps={steps} {problem}")
    if method == "gausslegendre":
        import numpy as np

        points, weights = np.polynomial.legendre.leggauss(steps)
        return (0.5 * weights).tolist(), (0.5 * (1 + points)).tolist()
    sizes = [1 / steps] * steps
    if method == "riemann_trapezoid":
        sizes[0] /= 2
        sizes[-1] /= 2
    start, end = {
        "riemann_trapezoid": (0, 1),
        "riemann_left": (0, 1 - 1 / steps),
        "riemann_middle": (1 / (2 * steps), 1 - 1 / (2 * steps)),
        "riemann_right": (1 / steps, 1),
    }[method]
    return sizes, torch.linspace(start, end, steps).tolist()


def _token_spans(mask: Tensor, leading: bool) -> list[tuple[int, int]]:
    """Each row's ``[first, end)`` columns that hold its real tokens.

    Columns outside every row's span of a pass are padding in all its rows and are cut
    from that pass. Trailing columns can always go; leading ones (left padding) only
    when positions are passed explicitly, so that the kept tokens keep theirs.
    """
    real = mask.bool()
    length = real.shape[1]
    columns = torch.arange(length, device=mask.device)
    end = torch.where(real, columns + 1, 0).amax(1).tolist()
    first = torch.where(real, columns, length).amin(1).tolist() if leading else [0] * len(end)
    return [(a, max(b, a + 1)) for a, b in zip(first, end, strict=True)]


@contextmanager
def frozen_parameters(module: nn.Module) -> Iterator[None]:
    """Weights stop requiring gradients inside: autograd then keeps only what the
    gradients w.r.t. the inputs need (no saved activations for weight gradients)."""
    trainable = [p for p in module.parameters() if p.requires_grad]
    for parameter in trainable:
        parameter.requires_grad_(False)
    try:
        yield
    finally:
        for parameter in trainable:
            parameter.requires_grad_(True)
