"""Named option sets: a paper's settings for a method, by one name.

``get_method("integrated_gradients", preset="pi-soft")`` is integrated gradients as the
pi-Soft paper ran it through Inseq 0.7.1 with its defaults. Options given alongside a
preset override its values.

The ``pi-soft`` preset is what Inseq 0.7.1 computes with its defaults (checked against
Inseq's own outputs on SmolLM2 in the tests, ``shared/reference/README-inseq.md``):

- the gradient methods (saliency, input x gradient, integrated gradients, DeepLift)
  attribute the target's **probability**, reduce the hidden dimension with the **L2
  norm**, and (IG, DeepLift) start from the **unk token's embedding**, with
  end-of-sequence positions keeping their own;
- integrated gradients: 16 Gauss-Legendre steps, internal batch size 8;
- DeepLift is **Captum's** (``rules="captum"``), the shortcut Inseq runs: Captum rules only
  the activation modules it knows, and on LLaMA-like models it knows none of them, so the
  paper's "DeepLIFT" is the gradient at the input times (input - baseline). The
  project's exact DeepLift stays the default of ``deeplift``;
- attention: the mean over heads, then over layers;
- value zeroing: each block's own map, distances under 1e-5 dropped, rows normalised,
  the mean over blocks; the last block compared after the final norm, distances as
  float32 ``1 - cos``;
- ReAGent: the probe settings of the paper's appendix (Inseq's defaults).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from ..common.errors import InvalidInputError

#: Inseq's defaults for every gradient method: the probability, the L2 norm
INSEQ_GRADIENTS = MappingProxyType({"attributed_fn": "probability", "reduce": "l2"})
#: Inseq's default baseline (``include_eos_baseline=False``)
INSEQ_BASELINE = MappingProxyType({"baseline": "unk", "baseline_keeps_eos": True})

#: preset -> method -> options
PRESETS: MappingProxyType[str, MappingProxyType[str, dict[str, Any]]] = MappingProxyType(
    {
        "pi-soft": MappingProxyType(
            {
                # appendix A: Inseq's defaults; Inseq's attention output has a layer and
                # a head axis, and its default aggregation averages both
                "attention": {"layer_mean": True},
                # Inseq's default attributed function (the target's probability), its
                # aggregation of gradients (the L2 norm over the hidden dimension)
                "gradient_norm": dict(INSEQ_GRADIENTS),
                "gradient_x_input": dict(INSEQ_GRADIENTS),
                # appendix A: "16 integration steps with an internal batch size of 8";
                # Inseq's baseline: the unk embedding, eos positions keep their own
                "integrated_gradients": {
                    **INSEQ_GRADIENTS,
                    **INSEQ_BASELINE,
                    "steps": 16,
                    "internal_batch_size": 8,
                },
                # Captum's DeepLift inside Inseq (see the module docstring)
                "deeplift": {**INSEQ_GRADIENTS, **INSEQ_BASELINE, "rules": "captum"},
                # appendix A: "Inseq-based methods were used with their default
                # hyperparameters"; Inseq 0.7.1's value zeroing: each block's own map,
                # distances under 1e-5 dropped, rows normalised, the mean over blocks
                # the last block read after the final norm, float32 1 - cos
                "value_zeroing": {
                    "rollout": False,
                    "layer_mean": True,
                    "min_distance": 1e-5,
                    "last_block_normed": True,
                    "cosine": "one_minus",
                },
                # appendix A: ReAGent's probe settings (also the method's defaults)
                "reagent": {
                    "keep_top_n": 3,
                    "stopping_condition_top_k": 3,
                    "replacing_ratio": 0.25,
                    "max_probe_steps": 32,
                    "num_probes": 2,
                },
            }
        ),
    }
)


def list_presets() -> dict[str, list[str]]:
    """Each preset and the methods it sets."""
    return {name: sorted(methods) for name, methods in PRESETS.items()}


def presets_for(method: str) -> dict[str, dict[str, Any]]:
    """Each preset that sets ``method``'s options, with those options."""
    return {name: dict(methods[method]) for name, methods in PRESETS.items() if method in methods}


def preset_options(preset: str, method: str) -> dict[str, Any]:
    """The options ``preset`` gives ``method``; a refusal that lists what exists."""
    if preset not in PRESETS:
        raise InvalidInputError(
            f"unknown preset {preset!r}; presets: {', '.join(PRESETS) or 'none'}"
        )
    methods = PRESETS[preset]
    if method not in methods:
        raise InvalidInputError(
            f"preset {preset!r} sets no options for method {method!r}; it covers "
            f"{', '.join(sorted(methods))}"
        )
    return dict(methods[method])
