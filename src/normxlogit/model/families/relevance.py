"""Where the rules of layer-wise relevance propagation go in an architecture's blocks.

AttnLRP (Achtibat et al., ICML 2024) rules a transformer operation by operation. Two kinds
of module it finds by their type in any model: normalisation modules (LayerNorm, RMSNorm)
and elementwise activation modules (GELU, SiLU, the pooler's tanh). The rest depends on
how an architecture lays out its blocks, and a family declares it here: the modules whose
outputs are the query, key and value vectors of self-attention, and, for a gated MLP, the
module whose input is the product ``act(gate) * up``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RelevanceLayout:
    """Paths, inside one transformer block, of the modules AttnLRP's products rule.

    ``query``, ``key`` and ``value`` are the projections whose outputs (before any
    reshaping or rotary embedding, which are linear) enter ``softmax(q kᵀ) v``; each must
    be a module of its own (fused projections have no such path). ``gated_product``: the
    module whose input is the gated MLP's product of two embedding-dependent factors
    (LLaMA's ``down_proj``), or ``None`` where the MLP has no gate.
    """

    query: str
    key: str
    value: str
    gated_product: str | None = None
