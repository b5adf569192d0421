"""Attribution methods, registered by name (see :func:`list_methods`)."""

from . import (  # noqa: F401  (methods register on import)
    alti,
    attention,
    attnlrp,
    decompx,
    deeplift,
    globenc,
    grad_ellm,
    gradient,
    lime,
    logit,
    random,
    reagent,
    segment_methods,
    value_zeroing,
)
from .base import (
    Attribution,
    AttributionMethod,
    Layers,
    get_method,
    list_methods,
    method_class,
    method_options,
    register_method,
)

__all__ = [
    "Attribution",
    "AttributionMethod",
    "Layers",
    "get_method",
    "list_methods",
    "method_class",
    "method_options",
    "register_method",
]
