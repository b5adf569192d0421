"""ReAGent (Zhao & Shan, 2024): importance learned by replacing tokens and watching the
target's probability, as Inseq's ``reagent`` runs it (``docs/design/reagent.md``).

Each text (and target) runs ``num_probes`` probes. A probe starts from random logits
``z ~ U[0, 1)`` over the text's tokens and, for at most ``max_probe_steps`` steps:

1. replaces each token with probability ``replacing_ratio`` by a sampled one, and takes
   ``d = p(target | text) - p(target | replaced)`` (softmax over the whole output space);
2. adds ``logit((1 + d) / 2)`` to the replaced tokens' logits and subtracts it from the
   kept ones' (a token whose replacement lowers the target's probability gains);
3. keeps only the ``keep_top_n`` highest-scoring tokens (softmax of ``z``), replaces every
   other, and stops once the target is still among the top ``stopping_condition_top_k``
   predictions.

The scores are the softmax of ``z``, averaged over the probes that stopped; where none did,
the mean over all probes (Inseq from April 2026) or NaN (``on_no_convergence="nan"``, Inseq
0.6-0.7.1). Probes of all texts run as rows of one batch; every draw comes from a generator
seeded by ``seed``, the text's token ids and the target, so a text gets the same scores
alone or in any batch. The defaults are the pi-Soft paper's settings.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor

from ...common.errors import InvalidInputError, InvalidOptionError
from ...model.adapter import ExplainableModel, ForwardResult
from ..base import Attribution, AttributionMethod, bounded, check_choice, register_method
from .samplers import PYTHON_FIX, TokenSampler, get_sampler, pos_sampler_refusal

#: keeps logit((1 + d) / 2) finite where d rounds to +-1
_EDGE = 1e-6
#: probe steps whose random draws are made together and sent to the device at once
DRAW_BLOCK = 8
#: the most probes per text (the paper runs 2, Inseq 16): every probe is a row of each
#: forward pass, with the whole output distribution, and all of them (texts x probes) are
#: built before the first, so a count far past any study's fails in the allocator
MAX_PROBES = 1_000
#: the most steps per probe (the paper runs 32, Inseq up to 3000): each step is two
#: forward passes, as integrated gradients' steps are bounded (``gradient.MAX_STEPS``)
MAX_PROBE_STEPS = 10_000


@register_method
@dataclass
class ReAGent(AttributionMethod):
    """Replace tokens by sampled ones, learn which replacements move the target."""

    name: ClassVar[str] = "reagent"
    description: ClassVar[str] = (
        "ReAGent: replacement probes with a part-of-speech token sampler (Zhao & Shan 2024)"
    )
    signed: ClassVar[bool] = False
    single_forward: ClassVar[bool] = False

    keep_top_n: int = 3
    stopping_condition_top_k: int = 3
    replacing_ratio: float = 0.25
    max_probe_steps: int = bounded(
        32,
        low=1,
        high=MAX_PROBE_STEPS,
        why_high="each step is two forward passes of every probe still running",
    )
    num_probes: int = bounded(
        2,
        low=1,
        high=MAX_PROBES,
        why_high="each probe is a row of every forward pass: texts x num_probes rows, built "
        "up front",
    )
    #: "pos" (same part-of-speech tag, as Inseq), "uniform" (any token), or
    #: "masked_lm:NAME" (a masked LM's prediction at each position, the ReAGent paper's)
    sampler: str = "pos"
    #: where no probe stops: "mean" over all probes (Inseq HEAD) or "nan" (Inseq <= 0.7.1)
    on_no_convergence: str = "mean"
    seed: int = 0

    no_contrast: ClassVar[str | None] = (
        "its probes stop when the target ranks among the top predictions, a test about one "
        "output; explain the target alone, or use a gradient method or normxlogit"
    )

    def __post_init__(self) -> None:
        """Refused when built (get_method, a bench config, the page), not at the first text."""
        super().__post_init__()
        self._check()

    def _check(self) -> None:
        check_choice("on_no_convergence", self.on_no_convergence, ("mean", "nan"))
        for option in ("keep_top_n", "stopping_condition_top_k"):
            if (value := getattr(self, option)) < 1:
                raise InvalidOptionError(
                    f"method 'reagent' option {option}={value} must be at least 1"
                )
        if not 0.0 < self.replacing_ratio < 1.0:
            raise InvalidOptionError(
                f"method 'reagent' option replacing_ratio={self.replacing_ratio} must lie "
                "strictly between 0 and 1"
            )

    def attribute(self, model, forward, targets, layers) -> Attribution:
        self._check()
        if (reason := model_refusal([self], model)) is not None:
            raise InvalidInputError(reason)
        sampler = get_sampler(self.sampler, model.tokenizer)
        batch = forward.batch
        columns = model.full_output_columns(targets.columns.to(batch.input_ids.device))
        scores, converged, steps = [], [], []
        for k in range(columns.shape[1]):
            run = _Probes(self, model, forward, sampler, columns[:, k])
            result = run.learn()
            scores.append(result)
            converged.append(run.converged_fraction)
            steps.append(run.steps_taken)
        values = torch.stack(scores, dim=-1).unsqueeze(1)  # [B, 1, T, K]
        return Attribution(
            values,
            {
                "converged_probes": torch.stack(converged, dim=-1),
                "probe_steps": torch.stack(steps, dim=-1),
            },
        )


def tagger_refusal(
    methods: Iterable[Any], tokenizer: Any | None, fix: str = PYTHON_FIX
) -> str | None:
    """Why one of ``methods`` (a ReAGent with the pos sampler) cannot run here, checked
    before any method runs so that no other method's work is computed and then lost;
    ``fix`` is ``sampler='uniform'`` in the words of the entry point in use (see
    :func:`~.samplers.pos_sampler_refusal` for ``tokenizer``). None: nothing stops them."""
    if not any(uses_pos_sampler(m) for m in methods):
        return None
    return pos_sampler_refusal(tokenizer, fix)


#: an option's fix in Python's words, ``{name}`` and ``{value}`` filled in (the command
#: line, a bench config and the page pass their own spelling of it)
PYTHON_OPTION_FIX = "pass {name}={value}"


def model_refusal(
    methods: Iterable[Any], model: ExplainableModel, fix: str = PYTHON_OPTION_FIX
) -> str | None:
    """Why a ReAGent of ``methods`` would give scores that do not depend on ``model``
    (None: nothing stops them), checked before any method runs; see :func:`outputs_refusal`."""
    from ...model.tasks import TaskKind

    kind = model.task.kind
    if kind is TaskKind.REGRESSION:
        outputs = "regression"
    elif kind is TaskKind.CLASSIFICATION and not model.task.label_words:
        outputs = "classification"
    else:  # a language model's or prompted classifier's probes rank the whole vocabulary
        outputs = "tokens"
    return outputs_refusal(methods, outputs, len(model.labels), fix)


def outputs_refusal(
    methods: Iterable[Any], outputs: str, labels: int, fix: str = PYTHON_OPTION_FIX
) -> str | None:
    """Why a ReAGent of ``methods`` cannot explain a model whose head gives ``outputs``
    (``regression``, ``classification`` over ``labels`` labels, or ``tokens``), known
    without loading it: a regressor's one output has no probability to watch (its softmax
    is 1 whatever the input), and a classifier of no more labels than
    ``stopping_condition_top_k`` has the target among its top k whatever is replaced, so
    every probe stops after one step. Either way the scores are the probes' random start.
    ``fix`` spells an option as the entry point in use takes it."""
    for method in methods:
        if not isinstance(method, ReAGent):
            continue
        if outputs == "regression":
            return (
                "method 'reagent' cannot explain a regression model: its probes watch the "
                "target's probability, and a regressor's one output has none (its softmax is "
                "1 whatever the input), so the scores would be the probes' random start; use "
                "another method (e.g. normxlogit or integrated_gradients)"
            )
        top_k = method.stopping_condition_top_k
        if outputs == "classification" and top_k >= labels:
            setting = fix.format(name="stopping_condition_top_k", value=1)
            return (
                f"method 'reagent' stopping_condition_top_k={top_k} on a classifier of "
                f"{labels} labels: the target is always among its top {top_k} outputs, so "
                "every probe would stop after one step and the scores would be its random "
                "start; "
                f"{setting} (below the number of labels)"
            )
    return None


def uses_pos_sampler(method: Any) -> bool:
    """Whether ``method`` draws its replacements with the pos sampler (spaCy's tags)."""
    return isinstance(method, ReAGent) and method.sampler == "pos"


class _Probes:
    """The probes of every text of a batch for one target column, as rows ``[B * P, T]``."""

    def __init__(
        self,
        method: ReAGent,
        model: ExplainableModel,
        forward: ForwardResult,
        sampler: TokenSampler,
        target: Tensor,
    ):
        self.method, self.model, self.sampler = method, model, sampler
        batch = forward.batch
        self.batch = batch
        probes = method.num_probes
        self.probes = probes
        device = batch.input_ids.device
        self.source = torch.arange(len(batch), device=device).repeat_interleave(probes)
        self.target = target[self.source]  # [R]
        self.real = [batch.real_positions(row).cpu() for row in range(len(batch))]
        self.ids = [batch.input_ids[row, self.real[row]].cpu() for row in range(len(batch))]
        self.generators = [
            torch.Generator().manual_seed(_seed(method.seed, ids, int(target[row])))
            for row, ids in enumerate(self.ids)
        ]
        self.inputs = {k: v[self.source] for k, v in model.backbone_inputs(batch).items()}
        self.reading = batch.reading_positions[self.source]
        self.allowed = batch.attention_mask.bool()[self.source]  # [R, T]
        self.converged_fraction = torch.zeros(len(batch))
        self.steps_taken = torch.zeros(len(batch))

    # ------------------------------------------------------------------ draws
    def _per_text(self, draw) -> list[Tensor]:
        """One draw per text from its own generator, in text order."""
        return [draw(row, generator) for row, generator in enumerate(self.generators)]

    def _padded(self, parts: list[Tensor], fill, move: bool = True) -> Tensor:
        """Per-text ``[P, L_b]`` values placed into ``[R, T]`` rows (on the device, unless
        ``move`` is False)."""
        out = torch.full(tuple(self.allowed.shape), fill, dtype=parts[0].dtype)
        for row, part in enumerate(parts):
            out[row * self.probes : (row + 1) * self.probes, self.real[row]] = part
        return out.to(self.allowed.device) if move else out

    def _step_draws(self, steps: int) -> tuple[Tensor, Tensor, Tensor]:
        """The random draws of the next ``steps`` probe steps, each ``[steps, R, T]`` on the
        device in one transfer: the replacement mask, the tokens that replace (step 1) and
        those that fill the non-kept positions (step 3). Each text's generator is read in
        the order the loop uses them (mask, replacements, fillers; step after step), so the
        draws equal those of one step at a time; draws past the last step are never used."""
        ratio = self.method.replacing_ratio
        masks, replacing, filling = [], [], []
        for _ in range(steps):
            mask_parts, replace_parts, fill_parts = [], [], []
            for row, generator in enumerate(self.generators):
                length = len(self.ids[row])
                mask_parts.append(torch.rand(self.probes, length, generator=generator) < ratio)
                ids = self.ids[row].expand(self.probes, -1)
                replace_parts.append(self.sampler(ids, generator))
                fill_parts.append(self.sampler(ids, generator))
            masks.append(self._padded(mask_parts, False, move=False))
            replacing.append(self._padded(replace_parts, 0, move=False))
            filling.append(self._padded(fill_parts, 0, move=False))
        device = self.allowed.device
        return tuple(torch.stack(part).to(device) for part in (masks, replacing, filling))

    # ---------------------------------------------------------------- forward
    @torch.no_grad()
    def _probabilities(self, ids: Tensor, rows: Tensor) -> Tensor:
        """The whole output distribution at the reading position, for ``rows`` ``[n, V]``."""
        inputs = {name: value[rows] for name, value in self.inputs.items()}
        inputs["input_ids"] = ids[rows]
        states = self.model.run_backbone(**inputs).last_hidden_state
        index = torch.arange(len(rows), device=states.device)
        read = states[index, self.reading[rows]]
        return self.model.all_logits(read).float().softmax(-1)

    # ------------------------------------------------------------------- loop
    def learn(self) -> Tensor:
        """Scores ``[B, T]`` (zero on padding)."""
        method = self.method
        original = self.inputs["input_ids"]
        everything = torch.arange(len(original), device=original.device)
        base = self._probabilities(original, everything)
        start = base.gather(1, self.target.unsqueeze(1)).squeeze(1)  # [R]
        logits = self._padded(
            self._per_text(lambda row, g: torch.rand(self.probes, len(self.ids[row]), generator=g)),
            0.0,
        ).float()
        stopped = torch.zeros(len(original), dtype=torch.bool, device=original.device)
        steps = torch.zeros(len(original), device=original.device)
        for step in range(method.max_probe_steps):
            # the rows still probing: the step's one look at the device's results
            active = (~stopped).nonzero().squeeze(-1)
            if not len(active):
                break
            if step % DRAW_BLOCK == 0:
                draws = self._step_draws(min(DRAW_BLOCK, method.max_probe_steps - step))
            mask, replacing, filling = (part[step % DRAW_BLOCK] for part in draws)
            # 1. a random replacement, and how it moves the target's probability
            replaced = torch.where(mask, replacing, original)
            drop = torch.zeros(len(original), device=original.device)
            probs = self._probabilities(replaced, active)
            moved = probs.gather(1, self.target[active].unsqueeze(1)).squeeze(1)
            drop[active] = start[active] - moved
            # 2. replaced tokens gain logit((1 + d) / 2), kept ones lose it
            signed = torch.where(mask, drop.unsqueeze(1), -drop.unsqueeze(1))
            signed = signed.clamp(-1 + _EDGE, 1 - _EDGE)
            update = torch.logit(0.5 * signed + 0.5)
            logits = torch.where(stopped.unsqueeze(1), logits, logits + update * self.allowed)
            steps = steps + (~stopped).float()
            # 3. keep the top tokens only: is the target still among the top predictions?
            scores = self._softmax(logits)
            keep = self._top(scores)
            kept = torch.where(keep, original, filling)
            probs = self._probabilities(kept, active)
            top = probs.topk(min(method.stopping_condition_top_k, probs.shape[1]), -1).indices
            hit = (top == self.target[active].unsqueeze(1)).any(-1)
            stopped[active] = stopped[active] | hit
        return self._combine(self._softmax(logits), stopped, steps)

    def _softmax(self, logits: Tensor) -> Tensor:
        return logits.masked_fill(~self.allowed, float("-inf")).softmax(-1).nan_to_num(0.0)

    def _top(self, scores: Tensor) -> Tensor:
        """The ``keep_top_n`` highest-scoring real positions of each row ``[R, T]``."""
        order = scores.masked_fill(~self.allowed, -1.0).argsort(
            dim=-1, descending=True, stable=True
        )
        keep = torch.zeros_like(self.allowed)
        count = min(self.method.keep_top_n, order.shape[1])
        keep.scatter_(1, order[:, :count], True)
        return keep & self.allowed

    def _combine(self, scores: Tensor, stopped: Tensor, steps: Tensor) -> Tensor:
        """The mean over each text's converged probes (or the fallback)."""
        texts = len(self.batch)
        scores = scores.view(texts, self.probes, -1)
        stopped = stopped.view(texts, self.probes).float()
        count = stopped.sum(1, keepdim=True)
        converged = (scores * stopped.unsqueeze(-1)).sum(1) / count.clamp_min(1.0)
        fallback = (
            scores.mean(1)
            if self.method.on_no_convergence == "mean"
            else torch.full_like(converged, float("nan"))
        )
        result = torch.where(count > 0, converged, fallback)
        self.converged_fraction = (count.squeeze(1) / self.probes).cpu()
        self.steps_taken = steps.view(texts, self.probes).max(1).values.cpu()
        return result.masked_fill(~self.batch.attention_mask.bool(), 0.0)


def _seed(seed: int, ids: Tensor, target: int) -> int:
    """A generator seed from the option, the text's token ids and the target."""
    key = zlib.crc32(f"{seed}:{target}".encode())
    return zlib.crc32(ids.numpy().astype("int64").tobytes(), key)
