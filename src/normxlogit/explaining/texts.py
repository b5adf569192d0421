"""``explain``: texts in, :class:`Explanation` objects out.

Texts go through the model in batches; for each batch the model runs one forward pass,
the target columns are resolved against the prediction, and the method scores every
token. Padding is dropped before the scores reach the user.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..common.counts import optional_count, positive_count
from ..common.errors import InvalidInputError, NormXLogitError, NormXLogitWarning
from ..common.numbering import one_text_named
from ..common.outputs import checked_choice, lone_item, short_value
from ..common.targets import check_contrast, check_pairing, check_target
from ..common.tokens import token_names
from ..explanations.explanation import AGGREGATIONS, Explanation
from ..explanations.generation import GenerationExplanation
from ..explanations.segments import SEGMENT_REDUCTIONS
from ..methods import Attribution, AttributionMethod, Layers, get_method, method_options
from ..methods.base import (
    LayerSpec,
    contrast_refusal,
    guard_method,
    method_settings,
    rebuilt_fix,
    run_attribute,
)
from ..methods.segment_methods import SegmentMethod
from ..model.adapter import ExplainableModel, ForwardResult
from ..model.inputs import TextInput, check_texts, pack_by_width
from ..model.precision import precision_settings
from ..model.targets import Targets, TargetSpec, resolve_targets
from ..model.tasks import TaskKind
from .contrast_inputs import contrast_texts, refuse_unchanged, with_contrast_inputs
from .contrast_rule import (
    CONTRAST_IS_TARGET,
    contrast_is_target_refusal,
    contrast_is_target_warning,
    flag_only,
    flagging_contrast_is_target,
)
from .segment_games import check_segment_method, explain_answers, explain_predictions
from .segments import resolved, segment_specs, with_segments
from .steps import DEFAULT_MAX_NEW_TOKENS, checked_explain_steps
from .unrankable import check_unrankable, one_warning_per_method

TOP_TOKENS = 10  # language models: how many next-token probabilities an explanation keeps


def _one_text_named(explain_texts):
    """Messages about a text given alone call it "the text", not "text 0"; a method's NaN
    scores are warned about once in the outermost call."""

    @functools.wraps(explain_texts)
    def explain_named(model, texts, *args, **kwargs):
        with one_text_named(isinstance(texts, str | tuple)), one_warning_per_method():
            return explain_texts(model, texts, *args, **kwargs)

    return explain_named


def _one_meaning_per_keyword(explain_texts):
    """A keyword that is both explain()'s own (``batch_size``, ``method``...) and an option
    of the named method (LIME's ``batch_size``, integrated gradients' ``method``) is
    refused: either reading would silently drop the other."""
    own = frozenset(inspect.signature(explain_texts).parameters) - {"model", "texts", "options"}

    @functools.wraps(explain_texts)
    def explain_checked(model, texts, *args, **kwargs):
        # given positionally, the method leaves a "method" keyword to be an option
        method = args[0] if args else kwargs.get("method", "normxlogit")
        keywords = set(kwargs) - (set() if args else {"method"})
        _refuse_shared_keywords(method, sorted(keywords & own), kwargs)
        return explain_texts(model, texts, *args, **kwargs)

    return explain_checked


def _refuse_shared_keywords(method: Any, keywords: list[str], given: dict[str, Any]) -> None:
    """Refuse the first of ``keywords`` (explain's own) that method ``method`` also takes."""
    if not isinstance(method, str) or not keywords:
        return
    try:
        options = set(method_options(method))
    except NormXLogitError:  # an unknown method: explain refuses it with its own words
        return
    for key in keywords:
        if key in options:
            raise InvalidInputError(
                f"{key}= is both explain()'s own keyword and an option of method {method!r}; "
                f"to set the option, pass the built method: explain(model, texts, "
                f"normxlogit.get_method({method!r}, {key}={given[key]!r}))"
            )


@_one_meaning_per_keyword
@_one_text_named
def explain(
    model: ExplainableModel,
    texts: TextInput | Sequence[TextInput],
    method: str | AttributionMethod = "normxlogit",
    target: TargetSpec = None,
    layer: LayerSpec = None,
    *,
    contrast: TargetSpec = None,
    contrast_input: TextInput | Sequence[TextInput] | None = None,
    batch_size: int = 16,
    max_tokens_per_batch: int | None = None,
    aggregate: str | None = None,
    mask_position: int | None = None,
    progress: Callable[[int], None] | None = None,
    generate: bool = False,
    max_new_tokens: int | None = None,
    continuation: str | Sequence[int] | Sequence[str | Sequence[int]] | None = None,
    explain_steps: Sequence[int] | None = None,
    segments: Any = None,
    segment_reduce: str = "sum",
    **options: Any,
) -> Explanation | list[Explanation] | GenerationExplanation | list[GenerationExplanation]:
    """Explain the model's prediction for one text (returns one explanation) or many.

    Args:
        target: ``None`` (the prediction), a label name/index, a token, ``"all"`` or a list.
        layer: ``None`` (final layer), an index (0 = embeddings), or ``"all"``.
        contrast: explain "why the target rather than this": a label name/index or a
            token (one for every target, or a list of one per target). The scores then
            explain the difference of the two outputs (logits or probabilities, as the
            method's ``attributed_fn``); NormXLogit's are the norm times the difference
            of the two LogAt columns. With ``generate``/``continuation``: a contrast
            continuation, one contrast token per step (see :mod:`~normxlogit.generation`).
            A contrast equal to its target explains nothing: spelt so, it is refused; with
            ``target="all"`` the contrast's own label is left out; a text whose prediction
            (a step whose token) is the contrast is flagged, its scores NaN and
            ``contrast_is_target`` True, with a warning naming them, and refused when that
            is every text (see :mod:`~normxlogit.explaining.contrast_rule`).
        contrast_input: explain the same target under a second input (one text, or a list
            of one per text; a contrast prompt for a generation): aligned tokens score
            their difference, and the diagnostics (step scores) hold the target's
            probability under both and their KL divergence (see
            :mod:`~normxlogit.explaining.contrast_inputs`).
        batch_size: texts per forward pass (generation steps per pass with ``generate``).
        max_tokens_per_batch: a memory budget: a pass holds at most this many tokens,
            texts x the longest one, padding included (a text longer than that goes alone).
            Texts are grouped by length, so batches pad little. None: ``batch_size`` alone.
        aggregate: merge subwords into words with ``"sum"``, ``"mean"``, ``"max"``...
        mask_position: masked LMs: token position of the prediction to explain
            (default: the first mask token).
        progress: called with the number of texts done after every batch (steps done,
            for a generation).
        generate: causal LMs: generate up to ``max_new_tokens`` (default 32) greedily
            after each text (a prompt) and explain every generated token; returns
            :class:`~normxlogit.generation.GenerationExplanation` objects.
            ``max_new_tokens`` without ``generate`` is refused, not ignored.
        continuation: causal LMs: explain this continuation of the prompt instead of
            generating one (teacher forcing): a text, or token ids; with several prompts,
            one for all or a list of one per prompt (texts or lists of ids).
        explain_steps: with ``generate``/``continuation``: explain only these steps (e.g.
            ``range(0, 32, 5)``, the steps the pi-Soft protocol scores; those past a
            generation's end are left out). The others' scores are NaN and
            ``explained_steps`` lists the chosen ones; every step keeps its probability
            and step scores. None: every step.
        segments: the parts of each text an answer may rest on: ``"sentences"``, a list
            of the text's segments (strings as they appear in it, in order, or ``(start,
            end)`` character spans); with several texts ``"sentences"`` or a list of one
            per text. Each explanation gains ``segments``: its tokens' segments and the
            scores reduced over each (see :mod:`~normxlogit.model.segments`).
        segment_reduce: how token scores become a segment's: ``sum`` (default), ``mean``,
            ``max`` or ``absmax``.
        **options: options of the method (see ``normxlogit methods``).
    """
    if not isinstance(model, ExplainableModel):
        raise InvalidInputError(
            f"explain's first argument is the model from normxlogit.load(...), got "
            f"{type(model).__name__}; call normxlogit.explain(model, texts) or model.explain(texts)"
        )
    items, single = check_texts(texts)
    # checked before any explaining, as --aggregate is (np.array("sum"): "sum")
    if aggregate is not None:
        aggregate = checked_choice(aggregate, "aggregate", AGGREGATIONS)
    segment_reduce = checked_choice(segment_reduce, "segment_reduce", SEGMENT_REDUCTIONS)
    generate = lone_item(generate)  # np.array(True), torch.tensor(True): the flag held
    if not isinstance(generate, (bool, np.bool_)):  # "no" or 0.5 would generate, as truthy
        raise InvalidInputError(
            f"generate={short_value(generate)}: give True (generate and explain a continuation) or "
            "False (explain the next token)"
        )
    batch_size = positive_count(batch_size, "batch_size")
    max_tokens_per_batch = optional_count(max_tokens_per_batch, "max_tokens_per_batch")
    if isinstance(method, AttributionMethod):
        if options:
            raise InvalidInputError(
                f"options {sorted(options)} go with a method name; set them on the "
                f"{type(method).__name__} instance instead"
            )
        guard_method(type(method))  # a class never registered: its hooks too
        _refuse_instance_for_model(method, model)
        attribution = method
    elif not isinstance(method, str):
        raise InvalidInputError(
            "method must be one method's name (a string) or an AttributionMethod, got "
            f"{type(method).__name__} {method!r:.60}; explain one method at a time, or use "
            "explain_and_evaluate for several"
        )
    else:
        attribution = get_method(method, **options)
    if contrast is not None:
        refusal = contrast_refusal(attribution)
        if refusal:
            raise InvalidInputError(refusal)
        if not (generate or continuation is not None):
            # inside a caller that flags (a batch of its input), a text's own target
            # spelt as its contrast is flagged with the others, not refused
            check_pairing(check_target(target), check_contrast(contrast), same=not flag_only())
    layers = Layers.resolve(layer, model.num_layers)
    if not (attribution.supports_layers or layers.indices == (model.num_layers,)):
        raise InvalidInputError(f"method {attribution.name!r} has no per-layer variant")
    # the final layer (what a stored explanation records, re-explained by sanity) stays
    last = layers.indices == (model.num_layers,)
    if attribution.reads_token_ids_only and not (layers.axis or last):
        raise InvalidInputError(
            f"method {attribution.name!r} reads only the token ids, so its scores are the "
            "same at every layer; leave the layer out (or use 'all')"
        )
    if (
        layers.indices == (0,)
        and not layers.axis
        and (attribution.reads_rows or attribution.reads_attention)
    ):  # a token-to-token map before any block: each token is only itself
        warnings.warn(
            f"layer 0 is the embeddings, before any block mixes the tokens: "
            f"{attribution.name!r} reads a token-to-token map, which is the identity there, "
            "so the reading position ([CLS], or a causal LM's last token) gets the whole "
            "score and every other token 0; layer 1 is the first block's",
            NormXLogitWarning,
            stacklevel=2,
        )
    if max_new_tokens is not None and not generate:
        raise InvalidInputError(
            "max_new_tokens goes with generate=True"
            + (
                ": the continuation sets the steps; leave max_new_tokens out"
                if continuation is not None
                else "; pass generate=True to explain a generation (without it, only the "
                "next token is explained)"
            )
        )
    if generate and continuation is not None:
        raise InvalidInputError(
            "generate=True writes a continuation and continuation= gives one; pass one of "
            "them (continuation= explains the given text, generate=True what the model writes)"
        )
    if explain_steps is not None and not (generate or continuation is not None):
        raise InvalidInputError(
            "explain_steps= picks the steps of a generation to explain; pass generate=True "
            "or continuation= with it"
        )
    # one number refused before any pass; a generator read once
    explain_steps = checked_explain_steps(explain_steps)
    if mask_position is not None and model.task.kind is not TaskKind.MASKED_LM:
        read = (
            "a causal LM, read at its last token (at every step's, for a generation)"
            if model.task.kind is TaskKind.CAUSAL_LM
            else "a classifier, read where its head reads"
        )
        raise InvalidInputError(
            "mask_position is for masked LMs (which position's prediction to explain); this "
            f"model is {read}, so it would change nothing: leave mask_position out"
        )
    layout = None
    if segments is not None:
        if aggregate:
            raise InvalidInputError(
                "segments= reduce token scores; leave aggregate= out (words and segments "
                "are two groupings of the same tokens)"
            )
        model.encoder.check(items)
        layout = resolved(model, items, segment_specs(segments, items, single), single)
    elif segment_reduce != "sum":
        raise InvalidInputError("segment_reduce= goes with segments=; pass segments='sentences'")
    if isinstance(attribution, SegmentMethod):
        check_segment_method(attribution, layout, layer, contrast_input, segment_reduce)
        if generate or continuation is not None:
            made = explain_answers(
                model,
                items,
                attribution,
                layout,
                continuation,
                max_new_tokens,
                batch_size,
                max_tokens_per_batch,
            )
        else:
            made = explain_predictions(
                model,
                items,
                attribution,
                layout,
                target,
                _explanations,
                batch_size,
                max_tokens_per_batch,
                progress,
            )
        check_unrankable(attribution, made, "combine()")
        return made[0] if single else made
    if generate or continuation is not None:
        made = _explain_generations(
            model,
            items,
            single,
            attribution,
            layers,
            target=target,
            contrast=contrast,
            contrast_input=contrast_input,
            aggregate=aggregate,
            continuation=continuation,
            max_new_tokens=DEFAULT_MAX_NEW_TOKENS if max_new_tokens is None else max_new_tokens,
            batch_size=batch_size,
            max_tokens_per_batch=max_tokens_per_batch,
            progress=progress,
            explain_steps=explain_steps,
        )
        if layout is None:
            return made
        reduced = with_segments(model, [made] if single else made, items, layout, segment_reduce)
        return reduced[0] if single else reduced
    others = None
    if contrast_input is not None:
        others = contrast_texts(items, contrast_input, single)
        refuse_unchanged(model.tokenizer, items, others, single)
        names = (
            ["contrast_input"] if single else [f"contrast_input[{i}]" for i in range(len(items))]
        )
        model.encoder.check(others, names=names)
        model.encoder.check_masks(others, mask_position, names)
    model.encoder.check(items)  # texts the model cannot read fail before any batch runs
    model.encoder.check_masks(items, mask_position)
    results: list[Explanation] = [None] * len(items)  # type: ignore[list-item]
    start = 0
    for picked in _batches(model, items, batch_size, max_tokens_per_batch):
        chunk = [items[i] for i in picked]
        batch = model.encode(chunk, mask_position=mask_position, first_index=start)
        reader = attribution.attention_reader(layers, batch.reading_positions[:, None])
        forward = model.forward(batch, layers.indices, reader)
        targets = resolve_targets(model, forward, target, contrast)
        with torch.no_grad() if not attribution.needs_gradients else torch.enable_grad():
            scores = run_attribute(attribution, model, forward, targets, layers)
        made = _explanations(model, forward, targets, layers, scores, attribution)
        if mask_position is not None:  # where it was read, for whatever reads it again
            for explanation in made:
                explanation.settings["mask_position"] = mask_position
        for index, explanation in zip(picked, made, strict=True):
            results[index] = explanation
        start += len(picked)
        if progress is not None:
            progress(start)
    check_unrankable(attribution, results, "attribute()")
    flagged = [i for i, e in enumerate(results) if e.contrast_is_target]
    if flagged and not flag_only():
        if len(flagged) == len(results):
            raise InvalidInputError(contrast_is_target_refusal(results, target is None))
        warnings.warn(
            contrast_is_target_warning(len(results), flagged, explanations=results),
            NormXLogitWarning,
            stacklevel=2,
        )
    if others is not None:
        settings = {
            "layer": layer,
            "batch_size": batch_size,
            "max_tokens_per_batch": max_tokens_per_batch,
            "mask_position": mask_position,
        }

        def explain_again(texts, targets, contrasts):
            return explain_each(model, texts, targets, attribution, contrasts=contrasts, **settings)

        results = with_contrast_inputs(model, results, others, explain_again)
    if aggregate:
        results = [e.aggregate_words(aggregate) for e in results]
    if layout is not None:
        results = with_segments(model, results, items, layout, segment_reduce)
    return results[0] if single else results


def explain_each(
    model: ExplainableModel,
    texts: Sequence[TextInput],
    targets: Sequence[str | int | None],
    method: str | AttributionMethod = "normxlogit",
    *,
    contrasts: Sequence[str | int | None] | None = None,
    progress: Callable[[int], None] | None = None,
    **settings: Any,
) -> list[Explanation]:
    """Explain each text for its own target (``targets[i]``; None: the prediction), and
    against its own contrast (``contrasts[i]``; None: none), in the texts' order: texts
    with the same target and contrast share batches, one :func:`explain` call per
    distinct pair. ``progress`` gets the number of texts done after each call."""
    if len(targets) != len(texts):
        raise InvalidInputError(
            f"explain_each: {len(texts)} texts but {len(targets)} targets; give one per text"
        )
    if contrasts is not None and len(contrasts) != len(texts):
        raise InvalidInputError(
            f"explain_each: {len(texts)} texts but {len(contrasts)} contrasts; give one per text"
        )
    wanted = list(zip(targets, contrasts or [None] * len(texts), strict=True))
    groups: dict[tuple, list[int]] = {}
    for index, pair in enumerate(wanted):
        groups.setdefault(pair, []).append(index)
    made: dict[int, Explanation] = {}
    outer = flag_only()  # a caller that reports texts whose target is their contrast
    # one group is not the whole input: flag, and say once (a method's NaN scores too)
    with flagging_contrast_is_target(), one_warning_per_method():
        for (target, contrast), indices in groups.items():
            done = explain(
                model, [texts[i] for i in indices], method, target, contrast=contrast, **settings
            )
            made.update(zip(indices, done, strict=True))
            if progress is not None:
                progress(len(made))
    results = [made[i] for i in range(len(texts))]
    flagged = [i for i, e in enumerate(results) if e.contrast_is_target]
    if flagged and not outer:
        if len(flagged) == len(results):
            predicted = all(target is None for target in targets)
            raise InvalidInputError(contrast_is_target_refusal(results, predicted))
        warnings.warn(
            contrast_is_target_warning(len(results), flagged, explanations=results),
            NormXLogitWarning,
            stacklevel=2,
        )
    return results


def forward_batches(
    model: ExplainableModel,
    texts: Sequence[TextInput],
    targets: Sequence[str | int | None],
    batch_size: int,
    max_tokens: int | None = None,
    contrasts: Sequence[str | int | None] | None = None,
) -> list[list[int]]:
    """The forward passes that explaining each text for its own target (and contrast)
    takes, as lists of text indices: texts of one target and contrast together (in
    first-seen order), grouped as :func:`explain` groups them (longest first,
    ``batch_size`` texts and ``max_tokens`` tokens at most). Explaining one of these
    batches is one pass, so it can be timed."""
    model.encoder.check(list(texts))  # texts the model cannot read fail before any pass
    groups: dict[tuple, list[int]] = {}
    pairs = zip(targets, contrasts or [None] * len(targets), strict=True)
    for index, pair in enumerate(pairs):
        groups.setdefault(pair, []).append(index)
    passes = []
    for indices in groups.values():
        chunk = [texts[i] for i in indices]
        passes += [
            [indices[i] for i in batch] for batch in _batches(model, chunk, batch_size, max_tokens)
        ]
    return passes


def _explain_generations(
    model: ExplainableModel,
    prompts: list[TextInput],
    single: bool,
    attribution: AttributionMethod,
    layers: Layers,
    *,
    target: TargetSpec,
    contrast: TargetSpec,
    contrast_input: Any,
    aggregate: str | None,
    **settings: Any,
) -> GenerationExplanation | list[GenerationExplanation]:
    from .generation import explain_generations

    if target is not None:
        raise InvalidInputError(
            "a generation's targets are its own tokens, one per step; leave target unset "
            "(or explain one next token without generate=)"
        )
    if aggregate is not None:
        raise InvalidInputError(
            "aggregate= merges subwords of one text; a generation explanation aggregates "
            "over steps with its .aggregate(how) method"
        )
    if any(isinstance(prompt, tuple) for prompt in prompts):
        raise InvalidInputError("a generation starts from one prompt text, not a pair")
    if contrast_input is not None:
        others = contrast_texts(prompts, contrast_input, single, prompts=True)
        refuse_unchanged(model.tokenizer, prompts, others, single, prompts=True)
        settings["contrast_prompts"] = others
    results = explain_generations(
        model, prompts, attribution, layers, contrast=contrast, **settings
    )
    return results[0] if single else results


def _batches(
    model: ExplainableModel,
    items: Sequence[TextInput],
    batch_size: int,
    max_tokens: int | None,
) -> list[list[int]]:
    """The texts' indices, grouped into forward passes: longest first, so that each batch
    holds texts of similar length and pads little (explanations still come back in input
    order; every method gives a text the same scores in any batch). A batch holds at most
    ``batch_size`` texts and, with ``max_tokens``, at most that many tokens counting the
    padding (a longer text goes alone).

    Input order when everything fits in one batch, and when some text is longer than the
    model reads, so that truncation warnings number texts as given.
    """
    if len(items) <= batch_size and max_tokens is None:
        return [list(range(len(items)))]
    limit = model.encoder.max_length
    lengths = _token_counts(model, items)
    order = list(range(len(items)))
    if max(lengths) <= limit:
        order.sort(key=lambda i: -lengths[i])
    widths = [min(lengths[i], limit) for i in order]
    return [[order[p] for p in group] for group in pack_by_width(widths, batch_size, max_tokens)]


def _token_counts(model: ExplainableModel, items: Sequence[TextInput]) -> list[int]:
    """How many tokens each text is encoded to (before truncation)."""
    tokenizer, prompt = model.tokenizer, model.task.prompt
    if prompt is not None:
        rendered = [prompt.render(tokenizer, text) for text in items]
        ids = tokenizer(rendered, add_special_tokens=False, verbose=False)["input_ids"]
    elif all(isinstance(text, str) for text in items):
        ids = tokenizer(list(items), verbose=False)["input_ids"]
    else:  # pairs, or pairs and single texts
        pairs = [t if isinstance(t, tuple) else (t,) for t in items]
        ids = [tokenizer(*pair, verbose=False)["input_ids"] for pair in pairs]
    return [len(row) for row in ids]


def _explanations(
    model: ExplainableModel,
    forward: ForwardResult,
    targets: Targets,
    layers: Layers,
    attribution: Attribution,
    method: AttributionMethod,
) -> list[Explanation]:
    batch = forward.batch
    settings = {
        **method_settings(method, final_layer=layers.is_final_layer(model.num_layers)),
        "layer": list(layers.indices) if layers.axis else layers.indices[0],
        **precision_settings(model.dtype),
    }
    contrasts = targets.contrast_names
    signature = model.weights_signature()
    same = [False] * len(batch) if targets.same is None else targets.same.tolist()
    out = []
    for row in range(len(batch)):
        real = batch.real_positions(row)
        row_scores = attribution.scores[row][:, real].float().cpu().numpy()  # [L, T, K]
        if same[row]:  # a target against itself: nothing explained (not "all zero")
            row_scores = np.full_like(row_scores, np.nan)
        if not layers.axis:
            row_scores = row_scores[0]
        if targets.single:
            row_scores = row_scores[..., 0]
        label, probs, value = _prediction(model, forward.logits[row])
        tokens = model.tokenizer.convert_ids_to_tokens(batch.input_ids[row, real].tolist())
        out.append(
            Explanation(
                text=batch.texts[row],
                tokens=tokens,
                token_texts=model.encoder.texts(tokens),
                scores=row_scores,
                targets=targets.names[row],
                label=label,
                probs=probs,
                method=method.name,
                settings={
                    **settings,
                    "target": targets.names[row],
                    **({"contrast": contrasts[row]} if contrasts else {}),
                    **({CONTRAST_IS_TARGET: True} if same[row] else {}),
                    "dropped_tokens": batch.dropped[row],
                },
                layers=list(layers.indices) if layers.axis else None,
                special=batch.special_tokens_mask[row, real].tolist(),
                word_ids=batch.word_ids[row] if batch.word_ids else [],
                model=model.name,
                model_signature=signature,
                value=value,
                diagnostics={
                    name: values[row].float().cpu().tolist()
                    for name, values in attribution.diagnostics.items()
                },
                output_texts=_output_texts(
                    model,
                    [label, *targets.names[row], *(contrasts[row] if contrasts else []), *probs],
                ),
                contrasts=contrasts[row] if contrasts else [],
            )
        )
    return out


def _output_texts(model: ExplainableModel, names: list[str]) -> dict[str, str]:
    """Display text of the outputs that are vocabulary tokens (``ĠParis``: `` Paris``)."""
    if model.task.has_label_set:
        return {}
    shown = {name: model.encoder.texts.one(name) for name in dict.fromkeys(names)}
    return {name: text for name, text in shown.items() if text != name}


def _prediction(
    model: ExplainableModel, logits: Tensor
) -> tuple[str, dict[str, float], float | None]:
    """Predicted label (or token), probabilities, and the regression value if any."""
    task = model.task
    if task.kind is TaskKind.REGRESSION:
        return task.labels[0], {}, float(logits[0])
    probs = logits.float().softmax(-1)
    if task.has_label_set:
        names = list(task.labels)
        return (
            names[int(probs.argmax())],
            {n: float(p) for n, p in zip(names, probs, strict=True)},
            None,
        )
    top = probs.topk(min(TOP_TOKENS, probs.numel()))
    tokens = token_names(model.tokenizer, top.indices.tolist())
    return tokens[0], {t: float(p) for t, p in zip(tokens, top.values, strict=True)}, None


def _refuse_instance_for_model(method: AttributionMethod, model: ExplainableModel) -> None:
    """A ReAGent instance that cannot run on ``model`` (see
    :func:`~normxlogit.methods.reagent.model_refusal`), refused with the fix spelt for an
    instance: options passed with it are refused, so the advice builds it again, keeping
    its other options (a name's refusal, when it runs, says ``pass option=value``)."""
    from ..methods.reagent import model_refusal, tagger_refusal

    sampler = "pass method=" + rebuilt_fix(method, "sampler")
    sampler = sampler.format(name="sampler", value="'uniform'")
    if (reason := tagger_refusal([method], model.tokenizer, sampler)) is not None:
        raise InvalidInputError(reason)
    fix = "pass method=" + rebuilt_fix(method, "stopping_condition_top_k")
    if (reason := model_refusal([method], model, fix)) is not None:
        raise InvalidInputError(reason)
