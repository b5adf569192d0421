"""Decoder families: the head reads the last non-padding token.

In transformers 5 the last entry of ``hidden_states`` already has the final norm applied;
earlier layers do not, so per-layer scores pass them through ``final_norm`` first (the
logit lens).
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from .heads import norm_at, output_embeddings, token_wise
from .registry import Family, HeadFn, Reading, register_family
from .relevance import RelevanceLayout


def _softcapped_lm_head(model: PreTrainedModel) -> HeadFn | None:
    """Gemma 2/3 squash their logits with ``cap * tanh(x / cap)``; Gemma 1 does not."""
    projection = output_embeddings(model)
    cap = getattr(model.config, "final_logit_softcapping", None)
    if projection is None or not cap:
        return projection
    return lambda states: cap * torch.tanh(projection(states) / cap)


def _scaled_lm_head(model: PreTrainedModel) -> HeadFn | None:
    """Granite divides its logits by ``logits_scaling`` after the projection."""
    projection = output_embeddings(model)
    scale = getattr(model.config, "logits_scaling", None)
    if projection is None or not scale or scale == 1:
        return projection
    return lambda states: projection(states) / scale


def _decoder(
    name: str,
    model_types: tuple[str, ...],
    *norm_paths: str,
    lm=output_embeddings,
    values: str | None = "self_attn.v_proj",
    value_part: tuple[int, int] = (0, 1),
    relevance: RelevanceLayout | None = None,
):
    return register_family(
        Family(
            name=name,
            model_types=model_types,
            reading=Reading.LAST,
            classification_head=token_wise("score"),
            lm_head=lm,
            final_norm=norm_at(*norm_paths),
            value_projection=values,
            value_part=value_part,
            relevance=relevance,
        )
    )


GPT2 = _decoder("gpt2", ("gpt2",), "transformer.ln_f", values="attn.c_attn", value_part=(2, 3))
LLAMA_RELEVANCE = RelevanceLayout(
    query="self_attn.q_proj",
    key="self_attn.k_proj",
    value="self_attn.v_proj",
    gated_product="mlp.down_proj",  # down_proj(act(gate_proj(x)) * up_proj(x))
)
LLAMA = _decoder(
    "llama",
    ("llama", "mistral", "qwen2", "qwen3", "olmo", "olmo2", "smollm3"),
    "model.norm",
    relevance=LLAMA_RELEVANCE,
)
# the LLaMA layout with its logits divided by logits_scaling (its embedding, residual
# and attention multipliers act inside the model's own forward)
GRANITE = _decoder(
    "granite", ("granite",), "model.norm", lm=_scaled_lm_head, relevance=LLAMA_RELEVANCE
)
# GPT-NeoX interleaves q, k, v per head and Phi-3 fuses them with grouped sizes: no
# value slot is declared for them yet
GPT_NEOX = _decoder("gpt-neox", ("gpt_neox",), "gpt_neox.final_layer_norm", values=None)
PHI = _decoder("phi", ("phi",), "model.final_layernorm")
PHI3 = _decoder("phi3", ("phi3",), "model.norm", values=None)
GEMMA = _decoder("gemma", ("gemma", "gemma2", "gemma3_text"), "model.norm", lm=_softcapped_lm_head)
