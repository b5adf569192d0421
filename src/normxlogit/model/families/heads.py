"""Small builders that turn a model's head modules into token-wise head functions."""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn
from transformers import PreTrainedModel

from .registry import HeadBuilder, HeadFn


def module_at(model: nn.Module, path: str) -> nn.Module | None:
    """The submodule at a dotted path, or ``None`` where any step is missing."""
    current: nn.Module | None = model
    for part in path.split("."):
        current = getattr(current, part, None)
        if current is None:
            return None
    return current


def first_token(path: str) -> Callable[[PreTrainedModel], HeadFn | None]:
    """A head that reads position 0 of a sequence, fed each token as if it were [CLS].

    The final states ``[N, D]`` become ``N`` sequences of length one, so one call of the
    head scores every token (the batched form of the authors' per-token loop).
    """

    def build(model: PreTrainedModel) -> HeadFn | None:
        if module_at(model, path) is None:
            return None
        return lambda states: module_at(model, path)(states.unsqueeze(1))

    return build


def token_wise(path: str) -> Callable[[PreTrainedModel], HeadFn | None]:
    """A head module that already maps ``[..., D]`` to ``[..., C]``.

    The module is looked up at call time, so a temporarily swapped projection (the
    adapter's column restriction) is used.
    """

    def build(model: PreTrainedModel) -> HeadFn | None:
        if module_at(model, path) is None:
            return None
        return lambda states: module_at(model, path)(states)

    return build


def chain(*builders: HeadBuilder) -> HeadBuilder:
    """Compose head pieces left to right; missing any piece means no head."""

    def build(model: PreTrainedModel) -> HeadFn | None:
        parts = [builder(model) for builder in builders]
        if any(part is None for part in parts):
            return None

        def head(states: Tensor) -> Tensor:
            for part in parts:
                states = part(states)
            return states

        return head

    return build


def first_of(*builders: HeadBuilder) -> HeadBuilder:
    """The first builder that finds its modules (for attribute names that vary)."""

    def build(model: PreTrainedModel) -> HeadFn | None:
        for builder in builders:
            if (head := builder(model)) is not None:
                return head
        return None

    return build


def output_embeddings(model: PreTrainedModel) -> HeadFn | None:
    """The language-model projection as transformers exposes it (looked up at call time)."""
    if model.get_output_embeddings() is None:
        return None
    return lambda states: model.get_output_embeddings()(states)


def norm_at(*paths: str) -> Callable[[PreTrainedModel], nn.Module | None]:
    """The first module found at one of ``paths`` (the decoder's final norm)."""

    def find(model: PreTrainedModel) -> nn.Module | None:
        for path in paths:
            if (module := module_at(model, path)) is not None:
                return module
        return None

    return find
