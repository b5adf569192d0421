"""The one place that knows how architectures differ.

A :class:`Family` says, for a group of transformers ``model_type`` values, how to apply
the head-on-top to any token's final state, which position the head normally reads, which
norm a decoder applies before its head (for per-layer logit-lens scores), and whether
position ids must be passed explicitly so that padding on either side gives the same
numbers. Families register themselves; :func:`resolve_family` falls back to a generic
family that guesses from common attribute names. Every guess is checked by the adapter's
verification, so a wrong guess is an error, never wrong attributions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from torch import Tensor, nn
from transformers import PreTrainedModel

from .relevance import RelevanceLayout

#: A head applied token-wise: states ``[N, D]`` to outputs ``[N, C]``.
HeadFn = Callable[[Tensor], Tensor]
#: Builds a :data:`HeadFn` for one loaded model, or returns ``None`` if it has no such head.
HeadBuilder = Callable[[PreTrainedModel], HeadFn | None]


class Reading(str, Enum):
    """Which position the head-on-top reads for a sequence-level prediction."""

    FIRST = "first"  # encoders: [CLS] / <s>
    LAST = "last"  # decoders: the last non-padding token


def _no_norm(model: PreTrainedModel) -> nn.Module | None:
    return None


def _no_offset(model: PreTrainedModel) -> int:
    return 0


def padding_idx_offset(model: PreTrainedModel) -> int:
    """RoBERTa-style models count positions from ``padding_idx + 1``."""
    return int(model.base_model.embeddings.padding_idx) + 1


@dataclass(frozen=True)
class Family:
    """How one group of architectures exposes its head-on-top."""

    name: str
    model_types: tuple[str, ...]
    reading: Reading
    classification_head: HeadBuilder
    lm_head: HeadBuilder
    final_norm: Callable[[PreTrainedModel], nn.Module | None] = field(default=_no_norm)
    #: first position id of a real token; positions are always counted over real tokens
    #: from the attention mask, so padding on either side gives the same numbers
    position_offset: Callable[[PreTrainedModel], int] = field(default=_no_offset)
    #: path, inside one transformer block, of the module whose output holds the value
    #: vectors (``None``: not known, so value zeroing is refused)
    value_projection: str | None = None
    #: the value vectors' share of that output when q, k, v are fused: (index, parts)
    value_part: tuple[int, int] = (0, 1)
    #: blocks laid out as BERT's (attention.self.{query,key,value}, attention.output.
    #: {dense,LayerNorm}, post-LN): what the vector-based decompositions need
    bert_layout: bool = False
    #: the classification head as (first linear, activation, second linear) paths, read
    #: at the first token; "tanh" names torch.tanh (DecompX decomposes through it)
    head_mlp: tuple[str, str, str] | None = None
    #: where AttnLRP's rules go in a block (``None``: not declared, so attnlrp is refused)
    relevance: RelevanceLayout | None = None

    @property
    def is_decoder(self) -> bool:
        return self.reading is Reading.LAST


_FAMILIES: dict[str, Family] = {}
_BY_MODEL_TYPE: dict[str, Family] = {}
_GENERIC: list[Family] = []


def register_family(family: Family, generic: bool = False) -> Family:
    """Add a family; ``generic`` marks the fallback used for unknown model types."""
    _FAMILIES[family.name] = family
    if generic:
        _GENERIC.append(family)
    for model_type in family.model_types:
        _BY_MODEL_TYPE[model_type] = family
    return family


def list_families() -> list[str]:
    """Names of the registered families (the generic fallbacks last)."""
    return sorted(_FAMILIES, key=lambda name: (_FAMILIES[name] in _GENERIC, name))


def families_declaring(attribute: str) -> list[str]:
    """Names of the families whose ``attribute`` is declared (not ``None``), for messages
    that say which families a method supports."""
    return [name for name in list_families() if getattr(_FAMILIES[name], attribute) is not None]


def resolve_family(model: PreTrainedModel) -> Family:
    """The family of a loaded model: by ``config.model_type``, else a generic fallback."""
    model_type = getattr(model.config, "model_type", "")
    if model_type in _BY_MODEL_TYPE:
        return _BY_MODEL_TYPE[model_type]
    decoder = bool(getattr(model.config, "is_decoder", False)) or _looks_causal(model)
    return next(f for f in _GENERIC if f.is_decoder == decoder)


def _looks_causal(model: PreTrainedModel) -> bool:
    """Unknown model types: a decoder if transformers knows it as a causal LM only."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    if type(model).__name__ in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values():
        return True
    model_type = getattr(model.config, "model_type", "")
    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and (
        model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
    )
