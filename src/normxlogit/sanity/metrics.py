"""The randomisation check as a metric family, so ``evaluate``, ``normxlogit evaluate``,
the bench and the page run it like any other metric.

``sanity_spearman`` and ``sanity_top_k`` re-explain each text with the method that made
its explanation (rebuilt from the explanation's settings), for the same target, after each
randomisation step (protocol ``randomization``: ``cascading`` or ``independent``), and
compare with the explanation given. The protocol's ``sanity_units``, ``sanity_init``,
``sanity_tokens`` and ``sanity_absolute`` choose the definition (the project's by
default; Quantus 0.6.0's MPRT: see :mod:`normxlogit.sanity.definition`). The curve runs
along the steps (``x``: 0 = the head random, then the blocks from the last, then the
embeddings; or Quantus's modules from the last); its summary is the last step
(the whole model random, in the cascading test). Lower is better: an explanation should
stop resembling itself once the model it explains is gone.

Registered from :mod:`normxlogit.evaluation` (a listed delegation: the metric explains
again, which the evaluation floor cannot do itself).
"""

from __future__ import annotations

from typing import Any

from ..common.errors import InvalidInputError
from ..common.targets import as_target
from ..evaluation.context import EvaluationContext
from ..evaluation.registry import Metric, MetricInfo, register_metric
from ..explanations.explanation import Explanation
from .definition import PROTOCOL_NAMES, SanityDefinition
from .groups import randomization_steps, randomized
from .randomization import similarity


def _similarities(ctx: EvaluationContext) -> dict[str, Any]:
    """Per method, step and text: (group name, Spearman, top-k overlap); run once per
    chunk for both metrics."""
    from ..explaining.texts import explain_each
    from ..methods import get_method, list_methods, method_options

    mode = ctx.protocol.randomization
    definition = SanityDefinition.from_protocol(ctx.protocol)
    steps = randomization_steps(ctx.model, mode, definition.units)
    found: dict[str, list[list[tuple[str, float, float]]]] = {}
    for name in ctx.methods:
        items = ctx.explanations[name]
        if any(item.input_ids is not None for item in items):
            raise InvalidInputError(
                "sanity metrics explain texts again; a generation's steps are not supported"
            )
        first = items[0]
        if first.method not in list_methods():
            raise InvalidInputError(
                f"the sanity metrics explain each text again with the method that made its "
                f"explanation, and {first.method!r} is not a registered method; leave the "
                "sanity metrics out, or register the method (normxlogit.register_method)"
            )
        accepted = set(method_options(first.method))
        method = get_method(
            first.method, **{k: v for k, v in first.settings.items() if k in accepted}
        )
        targets = [as_target(e.targets) for e in items]
        per_step = []
        for randomised in steps:
            with randomized(ctx.model, randomised, ctx.protocol.seed, definition.init):
                again = explain_each(ctx.model, [e.text for e in items], targets, method)
            per_step.append(
                [
                    (randomised[-1].name, *_similarity(before, after, ctx, definition))
                    for before, after in zip(items, again, strict=True)
                ]
            )
        found[name] = per_step
    return found


def _similarity(
    before: Explanation, after: Explanation, ctx: EvaluationContext, definition: SanityDefinition
) -> tuple[float, float]:
    top_k = ctx.protocol.top_k
    return similarity(before, after, top_k, definition.absolute, definition.tokens)


class SanityMetric(Metric):
    protocol_settings = ("randomization", "top_k", "seed", *PROTOCOL_NAMES.values())
    #: added after values were stored: keyed only when not at their defaults
    keyed_unless_default = tuple(PROTOCOL_NAMES.values())
    revision = 1  # 1: a cascading step keeps the earlier groups' draws (0 drew them anew)
    position: int  # which similarity of the pair

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        key = ("sanity", *(getattr(ctx.protocol, name) for name in self.protocol_settings))
        found = ctx.cached(key, lambda: _similarities(ctx))
        out = []
        for m, name in enumerate(ctx.methods):
            for step, values in enumerate(found[name]):
                for b, value in enumerate(values):
                    out.append(ctx.row(m, b, step, value[self.position], randomized=value[0]))
        return out


def _info(name: str, description: str, low: float) -> MetricInfo:
    return MetricInfo(name, description, False, (low, 1.0), "step", "last")


@register_metric
class SanitySpearman(SanityMetric):
    info = _info(
        "sanity_spearman",
        "Spearman correlation with the explanation after randomising the model from the top "
        "(lower: the explanation follows the model)",
        -1.0,
    )
    position = 1


@register_metric
class SanityTopK(SanityMetric):
    info = _info(
        "sanity_top_k",
        "top-k overlap with the explanation after randomising the model from the top",
        0.0,
    )
    position = 2
