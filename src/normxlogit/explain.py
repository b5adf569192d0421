"""``explain``: texts in, :class:`Explanation` objects out.

Texts go through the model in batches; for each batch the model runs one forward pass,
the target columns are resolved against the prediction, and the method scores every
token. Padding is dropped before the scores reach the user.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from .adapter import ExplainableModel, ForwardResult
from .errors import InvalidInputError
from .explanation import Explanation
from .inputs import TextInput, check_texts
from .methods import Attribution, AttributionMethod, Layers, get_method
from .methods.base import LayerSpec
from .targets import Targets, TargetSpec, resolve_targets
from .tasks import TaskKind

TOP_TOKENS = 10  # language models: how many next-token probabilities an explanation keeps


def explain(
    model: ExplainableModel,
    texts: TextInput | Sequence[TextInput],
    method: str | AttributionMethod = "normxlogit",
    target: TargetSpec = None,
    layer: LayerSpec = None,
    *,
    batch_size: int = 16,
    aggregate: str | None = None,
    mask_position: int | None = None,
    progress: Callable[[int], None] | None = None,
    **options: Any,
) -> Explanation | list[Explanation]:
    """Explain the model's prediction for one text (returns one explanation) or many.

    Args:
        target: ``None`` (the prediction), a label name/index, a token, ``"all"`` or a list.
        layer: ``None`` (final layer), an index (0 = embeddings), or ``"all"``.
        batch_size: texts per forward pass.
        aggregate: merge subwords into words with ``"sum"``, ``"mean"``, ``"max"``...
        mask_position: masked LMs: token position of the prediction to explain
            (default: the first mask token).
        progress: called with the number of texts done after every batch.
        **options: options of the method (see ``normxlogit methods``).
    """
    items, single = check_texts(texts)
    if batch_size < 1:
        raise InvalidInputError(f"batch_size must be at least 1, got {batch_size}")
    if isinstance(method, AttributionMethod):
        if options:
            raise InvalidInputError(
                f"options {sorted(options)} go with a method name; set them on the "
                f"{type(method).__name__} instance instead"
            )
        attribution = method
    else:
        attribution = get_method(method, **options)
    layers = Layers.resolve(layer, model.num_layers)
    if not (attribution.supports_layers or layers.indices == (model.num_layers,)):
        raise InvalidInputError(f"method {attribution.name!r} has no per-layer variant")
    results: list[Explanation] = []
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        batch = model.encode(chunk, mask_position=mask_position, first_index=start)
        forward = model.forward(batch, layers.indices)
        targets = resolve_targets(model, forward, target)
        with torch.no_grad() if not attribution.needs_gradients else torch.enable_grad():
            scores = attribution.attribute(model, forward, targets, layers)
        if not isinstance(scores, Attribution):
            scores = Attribution(scores)
        results.extend(_explanations(model, forward, targets, layers, scores, attribution))
        if progress is not None:
            progress(len(results))
    if aggregate:
        results = [e.aggregate_words(aggregate) for e in results]
    return results[0] if single else results


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
        **method.settings(),
        "layer": list(layers.indices) if layers.axis else layers.indices[0],
    }
    out = []
    for row in range(len(batch)):
        real = batch.real_positions(row)
        row_scores = attribution.scores[row][:, real].float().cpu().numpy()  # [L, T, K]
        if not layers.axis:
            row_scores = row_scores[0]
        if targets.single:
            row_scores = row_scores[..., 0]
        label, probs, value = _prediction(model, forward.logits[row])
        ids = batch.input_ids[row, real].tolist()
        out.append(
            Explanation(
                text=batch.texts[row],
                tokens=model.tokenizer.convert_ids_to_tokens(ids),
                scores=row_scores,
                targets=targets.names[row],
                label=label,
                probs=probs,
                method=method.name,
                settings={
                    **settings,
                    "target": targets.names[row],
                    "dropped_tokens": batch.dropped[row],
                },
                layers=list(layers.indices) if layers.axis else None,
                special=batch.special_tokens_mask[row, real].tolist(),
                word_ids=batch.word_ids[row] if batch.word_ids else [],
                model=model.name,
                value=value,
                diagnostics={
                    name: values[row].float().cpu().tolist()
                    for name, values in attribution.diagnostics.items()
                },
            )
        )
    return out


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
    tokens = model.tokenizer.convert_ids_to_tokens(top.indices.tolist())
    return tokens[0], {t: float(p) for t, p in zip(tokens, top.values, strict=True)}, None
