"""Sanity checks of attribution methods: model parameter and data randomisation
(Adebayo et al., 2018). See :mod:`normxlogit.sanity.randomization`, and
:mod:`normxlogit.sanity.definition` for the project's definition and Quantus's MPRT."""

from .definition import PRESETS, SanityDefinition, sanity_definition
from .groups import ParameterGroup, module_units, parameter_groups, randomized
from .randomization import MODES, SanityResult, data_randomization, parameter_randomization

__all__ = [
    "MODES",
    "PRESETS",
    "ParameterGroup",
    "SanityDefinition",
    "SanityResult",
    "data_randomization",
    "module_units",
    "parameter_groups",
    "parameter_randomization",
    "randomized",
    "sanity_definition",
]
