"""Named option sets: a paper's settings for a method, by one name.

``get_method("integrated_gradients", preset="pi-soft")`` is integrated gradients as the
pi-Soft paper ran it through Inseq (16 steps, internal batch size 8; appendix D). Options
given alongside a preset override its values.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from ..errors import InvalidInputError

#: preset -> method -> options
PRESETS: MappingProxyType[str, MappingProxyType[str, dict[str, Any]]] = MappingProxyType(
    {
        "pi-soft": MappingProxyType(
            {
                # appendix D: Inseq's defaults; Inseq's attention output has a layer and
                # a head axis, and its default aggregation averages both
                "attention": {"layer_mean": True},
                # appendix D: "16 integration steps with an internal batch size of 8"
                "integrated_gradients": {"steps": 16, "internal_batch_size": 8},
                # appendix D: "Inseq-based methods were used with their default
                # hyperparameters"; Inseq 0.7.1's value zeroing: each block's own map,
                # distances under 1e-5 dropped, rows normalised, the mean over blocks
                "value_zeroing": {"rollout": False, "layer_mean": True, "min_distance": 1e-5},
                # appendix D: ReAGent's probe settings (also the method's defaults)
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
