"""Fallback families for model types no family names: guesses that verification checks."""

from __future__ import annotations

from .heads import (
    chain,
    first_of,
    first_token,
    norm_at,
    output_embeddings,
    token_wise,
)
from .registry import Family, Reading, register_family

GENERIC_ENCODER = register_family(
    Family(
        name="generic-encoder",
        model_types=(),
        reading=Reading.FIRST,
        classification_head=first_of(
            chain(first_token("pooler"), token_wise("classifier")),
            first_token("classifier"),
        ),
        lm_head=first_of(token_wise("lm_head"), token_wise("cls"), token_wise("predictions")),
    ),
    generic=True,
)

GENERIC_DECODER = register_family(
    Family(
        name="generic-decoder",
        model_types=(),
        reading=Reading.LAST,
        classification_head=first_of(token_wise("score"), token_wise("classifier")),
        lm_head=output_embeddings,
        final_norm=norm_at(
            "model.norm",
            "transformer.ln_f",
            "model.final_layernorm",
            "transformer.norm_f",
            "model.decoder.final_layer_norm",
        ),
    ),
    generic=True,
)
