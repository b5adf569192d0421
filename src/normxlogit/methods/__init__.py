"""Attribution methods, registered by name (see :func:`list_methods`)."""

from . import logit  # noqa: F401  (methods register on import)
from .base import (
    AttributionMethod,
    Layers,
    get_method,
    list_methods,
    method_class,
    register_method,
)

__all__ = [
    "AttributionMethod",
    "Layers",
    "get_method",
    "list_methods",
    "method_class",
    "register_method",
]
