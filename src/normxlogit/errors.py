"""Errors a user can act on.

Every error raised on purpose by normxlogit derives from :class:`NormXLogitError` and
carries a message that names the fix. The command line prints the message alone, never a
stack trace.
"""

from __future__ import annotations


class NormXLogitError(Exception):
    """Base class for errors caused by input the user can change."""


class UnknownModelError(NormXLogitError):
    """A model name that is neither built in nor a loadable path or hub id."""


class UnsupportedModelError(NormXLogitError):
    """A model without a usable head-on-top, or whose head fails verification."""


class InvalidInputError(NormXLogitError):
    """Empty text, a bad target, an unknown label or method option."""


class UnknownMethodError(NormXLogitError):
    """A method name that is not registered."""


class NormXLogitWarning(UserWarning):
    """Something was changed to make the input usable (for example truncation)."""
