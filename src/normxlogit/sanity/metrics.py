"""The randomisation check as a metric family, so ``evaluate``, ``normxlogit evaluate``,
the bench and the page run it like any other metric.

``sanity_spearman`` and ``sanity_top_k`` re-explain each text exactly as its explanation
was made (:func:`explain_again`: the method rebuilt from the explanation's settings, its
options and preset included, for the same target, against the same contrast, under the
same contrast input, at the same layer), after each randomisation step (protocol
``randomization``: ``cascading`` or ``independent``), and compare with the explanation
given: the scores evaluate reads (the predicted label's column where there are several
targets, the layer ``evaluate(layer=)`` names). A Spearman correlation that is undefined
(a one-token text, scores all equal) is n/a, left out of the mean, with a warning. The
protocol's ``sanity_units``, ``sanity_init``,
``sanity_tokens`` and ``sanity_absolute`` choose the definition (the project's by
default; Quantus 0.6.0's MPRT: see :mod:`normxlogit.sanity.definition`). The curve runs
along the steps (``x``: 0 = the head random, then the blocks from the last, then the
embeddings; or Quantus's modules from the last); its summary is the last step
(the whole model random, in the cascading test). Lower is better: an explanation should
stop resembling itself once the model it explains is gone. A segment method's
explanations are refused (:func:`~normxlogit.sanity.randomization.segment_method_refusal`):
its token scores only copy each segment's score, so they rank nothing to compare.

Registered from :mod:`normxlogit.evaluation` (a listed delegation: the metric explains
again, which the evaluation floor cannot do itself).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from ..common.errors import InvalidInputError, NormXLogitWarning
from ..common.numbering import text_name
from ..common.targets import as_target
from ..evaluation.context import EvaluationContext, _target_index
from ..evaluation.protocol import Protocol
from ..evaluation.registry import Metric, MetricInfo, register_metric
from ..explanations.explanation import Explanation
from ..model.adapter import ExplainableModel
from ..model.targets import recorded_spec
from ..model.tasks import TaskKind
from .definition import PROTOCOL_NAMES, SanityDefinition
from .groups import randomization_steps, randomized
from .randomization import (
    NONFINITE,
    UNDEFINED,
    finite_scores,
    segment_method_refusal,
    similarity,
    top_k_undefined,
)


def _similarities(ctx: EvaluationContext) -> dict[str, Any]:
    """Per method, step and text: (group name, Spearman, top-k overlap, whether the scores
    were numbers); run once per chunk for both metrics."""
    mode = ctx.protocol.randomization
    definition = SanityDefinition.from_protocol(ctx.protocol)
    steps = randomization_steps(ctx.model, mode, definition.units)
    # every explanation's recipe first: one that cannot be made again is refused before
    # any weight is randomised
    recipes = {name: Recipes(ctx.explanations[name]) for name in ctx.methods}
    from ..explaining.unrankable import rankless_said_elsewhere

    found: dict[str, list[list[tuple[str, float, float, bool]]]] = {}
    for name in ctx.methods:
        items = ctx.explanations[name]
        per_step = []
        for randomised in steps:
            with (
                randomized(ctx.model, randomised, ctx.protocol.seed, definition.init),
                rankless_said_elsewhere(),  # its scores are the result, not a fault
            ):
                again = recipes[name].explain(ctx.model)
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
) -> tuple[float, float, bool]:
    """The similarity of the scores evaluate reads: the layer it was asked for, and the
    predicted label's column where an explanation has several targets; and whether both
    sides' scores were numbers (the reason a NaN is given)."""
    compared = (before, after, ctx.protocol.top_k, definition.absolute, definition.tokens)
    where = {"layer": ctx.layer, "target": _target_index(before)}
    return (*similarity(*compared, **where), finite_scores(*compared, **where))


class Recipes:
    """How each of ``items`` was made, to make it again (:func:`explain_again`): the
    method rebuilt from the explanation's settings (its options, a preset's included),
    its target(s), contrast(s), contrast input, layer, word aggregation and (a masked LM's)
    mask position. Explanations made the same way are explained together."""

    def __init__(self, items: Sequence[Explanation]) -> None:
        from ..methods import get_method, list_methods, method_class, method_options

        self.texts = [item.text for item in items]
        self.groups: dict[tuple, list[int]] = {}
        self.calls: dict[tuple, dict[str, Any]] = {}
        self.contrast_inputs: list[Any] = []
        self.contrast_tokens = [item.settings.get("contrast_input_tokens") for item in items]
        for index, item in enumerate(items):
            known = item.method in list_methods()
            if known and getattr(method_class(item.method), "needs_segments", False):
                raise InvalidInputError(segment_method_refusal(item.method))
            if item.input_ids is not None:
                raise InvalidInputError(
                    "the sanity metrics (sanity_spearman, sanity_top_k) explain each text "
                    "again, which a generation's steps cannot be: leave them out of the "
                    "metrics, or check the method on the prompts' next token (explain "
                    "without generate=True)"
                )
            if not known:
                raise InvalidInputError(
                    f"the sanity metrics explain each text again with the method that made "
                    f"its explanation, and {item.method!r} is not a registered method; leave "
                    "the sanity metrics out, or register the method (normxlogit.register_method)"
                )
            accepted = set(method_options(item.method))
            options = {k: v for k, v in item.settings.items() if k in accepted}
            call = {
                "target": as_target(item.targets),
                "layer": "all" if item.has_layers else item.settings.get("layer"),
                "contrast": as_target(item.contrasts) if item.contrasts else None,
                "aggregate": item.settings.get("aggregate"),
                # a masked LM's prediction read at another mask than the first
                "mask_position": item.settings.get("mask_position"),
            }
            other = item.settings.get("contrast_input")
            if isinstance(other, list):  # a pair, stored as a list
                other = tuple(other)
            self.contrast_inputs.append(other)
            key = (
                item.method,
                repr(sorted(options.items())),
                repr(sorted(call.items())),
                other is not None,
            )
            if key not in self.calls:
                self.calls[key] = {"method": get_method(item.method, **options), **call}
            self.groups.setdefault(key, []).append(index)

    def explain(self, model: ExplainableModel) -> list[Explanation]:
        """Every explanation made again with ``model`` (as it is now), in order."""
        from ..explaining.texts import explain

        made: dict[int, Explanation] = {}
        masked = model.task.kind is TaskKind.MASKED_LM
        for key, indices in self.groups.items():
            call = self.calls[key]
            others = [self.contrast_inputs[i] for i in indices]
            again = explain(
                model,
                [self.texts[i] for i in indices],
                call["method"],
                recorded_spec(model, call["target"]),
                call["layer"],
                contrast=recorded_spec(model, call["contrast"]),
                contrast_input=others if key[-1] else None,
                aggregate=call["aggregate"],
                # a causal LM's file may record one it never used (an older explain)
                mask_position=call["mask_position"] if masked else None,
            )
            made.update(zip(indices, again, strict=True))
        for index, item in made.items():
            self._check_contrast_tokens(index, item)
        return [made[i] for i in range(len(self.texts))]

    def _check_contrast_tokens(self, index: int, again: Explanation) -> None:
        """The contrast input, explained again, gives the tokens the file recorded: an
        edited ``settings.contrast_input`` would re-explain against another text than the
        scores were made against, and the similarity would compare two different things."""
        stored, made = self.contrast_tokens[index], again.settings.get("contrast_input_tokens")
        if stored is None or list(stored) == list(made or []):
            return
        raise InvalidInputError(
            f"the explanation of {text_name(index)} records contrast input "
            f"{self.contrast_inputs[index]!r:.60}, whose tokens "
            f"{made!r:.60} are not its recorded "
            f"contrast_input_tokens {stored!r:.60}: the file was edited or made with another "
            "tokenizer; restore the file as saved, or explain the text again"
        )


def explain_again(model: ExplainableModel, items: Sequence[Explanation]) -> list[Explanation]:
    """``items`` explained again with ``model`` exactly as they were made (see
    :class:`Recipes`): with the model unchanged, the same scores."""
    return Recipes(items).explain(model)


#: the settings one pass of re-explaining reads (both metrics' values come from it, so it is
#: cached under all of them and shared by the two metrics)
SIMILARITY_SETTINGS = ("randomization", "top_k", "seed", *PROTOCOL_NAMES.values())


class SanityMetric(Metric):
    protocol_settings = SIMILARITY_SETTINGS
    #: added after values were stored: keyed only when not at their defaults
    keyed_unless_default = tuple(PROTOCOL_NAMES.values())
    # 1: a cascading step keeps the earlier groups' draws (0 drew them anew); 2: re-explains
    # with the explanation's own contrast, contrast input, layer and options (1 did not)
    revision = 2
    position: int  # which similarity of the pair

    def undefined(self, protocol: Protocol) -> str:
        """Why a value of this metric can be n/a."""
        return UNDEFINED

    @classmethod
    def explanation_refusal(cls, methods) -> str | None:
        """A segment method's explanations: refused before any work (see the module)."""
        from ..methods import list_methods, method_class

        for name in methods:
            if name in list_methods() and getattr(method_class(name), "needs_segments", False):
                return segment_method_refusal(name)
        return None

    @classmethod
    def run_refusal(cls, model, explanations) -> str | None:
        """A ReAGent explanation made with the pos sampler is made again here, which needs
        spaCy (or its tokenizer's cached groups): refused before any method's work."""
        from ..methods.reagent.samplers import pos_sampler_refusal

        if not any(
            item.method == "reagent" and item.settings.get("sampler", "pos") == "pos"
            for item in explanations
        ):
            return None
        return pos_sampler_refusal(
            model.tokenizer,
            "explain with sampler='uniform' and evaluate those explanations (the sanity "
            "metrics explain again as the explanation was made)",
        )

    def __init__(self) -> None:
        self._undefined: set[tuple[str, int]] = set()  # (method, text) with an n/a value
        self._nonfinite: set[tuple[str, int]] = set()  # those n/a for NaN or infinite scores
        self._texts: set[int] = set()
        #: (method, text) -> [steps with an n/a value, steps in all]
        self._steps: dict[tuple[str, int], list[int]] = {}

    def rows(self, ctx: EvaluationContext) -> list[dict]:
        key = ("sanity", *(getattr(ctx.protocol, name) for name in SIMILARITY_SETTINGS))
        found = ctx.cached(key, lambda: _similarities(ctx))
        out = []
        for m, name in enumerate(ctx.methods):
            for step, values in enumerate(found[name]):
                for b, value in enumerate(values):
                    row = ctx.row(m, b, step, value[self.position], randomized=value[0])
                    counted = self._steps.setdefault((name, row["instance"]), [0, 0])
                    counted[1] += 1
                    if row["value"] != row["value"]:  # NaN: undefined
                        chosen = self._undefined if value[3] else self._nonfinite
                        chosen.add((name, row["instance"]))
                        counted[0] += 1
                    self._texts.add(row["instance"])
                    out.append(row)
        return out

    def finish(self, protocol: Protocol) -> None:
        """Say how many texts' similarities are n/a, and why (NaN scores apart from the
        one-token reason)."""
        for pairs, why in ((self._nonfinite, NONFINITE), (self._undefined, None)):
            if not pairs:
                continue
            texts = len({text for _, text in pairs})
            methods = ", ".join(dict.fromkeys(name for name, _ in sorted(pairs)))
            every = all(self._steps[pair][0] == self._steps[pair][1] for pair in pairs)
            where = "at every step" if every else "at some steps"
            warnings.warn(
                f"{self.info.name} is n/a {where} for {texts} of {len(self._texts)} "
                f"texts ({methods}): {why or self.undefined(protocol)}; those values are "
                "left out of the mean",
                NormXLogitWarning,
                stacklevel=3,
            )


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
    #: a rank correlation over every token: ``top_k`` is sanity_top_k's alone
    protocol_settings = tuple(name for name in SIMILARITY_SETTINGS if name != "top_k")
    #: its values were once keyed by ``top_k`` too
    keyed_at_default = ("top_k",)


@register_metric
class SanityTopK(SanityMetric):
    info = _info(
        "sanity_top_k",
        "top-k overlap with the explanation after randomising the model from the top",
        0.0,
    )
    position = 2

    def undefined(self, protocol: Protocol) -> str:
        return f"{top_k_undefined(protocol.top_k)} (Protocol(top_k=...) sets k)"
