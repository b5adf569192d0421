"""Sanity checks of attribution methods: model parameter and data randomisation
(Adebayo et al., 2018). See :mod:`normxlogit.sanity.randomization`."""

from .groups import ParameterGroup, parameter_groups, randomized
from .randomization import MODES, SanityResult, data_randomization, parameter_randomization

__all__ = [
    "MODES",
    "ParameterGroup",
    "SanityResult",
    "data_randomization",
    "parameter_groups",
    "parameter_randomization",
    "randomized",
]
