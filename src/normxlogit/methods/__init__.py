"""Attribution methods, registered by name (see :func:`list_methods`)."""

from . import attention, gradient, lime, logit, random, value_zeroing  # noqa: F401
from .base import (
    Attribution,
    AttributionMethod,
    Layers,
    get_method,
    list_methods,
    method_class,
    register_method,
)

__all__ = [
    "Attribution",
    "AttributionMethod",
    "Layers",
    "get_method",
    "list_methods",
    "method_class",
    "register_method",
]
