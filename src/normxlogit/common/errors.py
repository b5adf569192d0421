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


class InvalidOptionError(InvalidInputError):
    """A method option, protocol setting or training setting of the wrong type or range."""


class OutputPathError(InvalidInputError):
    """An output that cannot be written there, or whose format its name does not tell."""


class InvalidFileError(InvalidInputError):
    """A data or explanation file that cannot be read as one: not UTF-8, broken JSON, a
    missing cell or key, a null where text belongs, scores whose shape does not fit."""


class StaleResultsError(InvalidInputError):
    """A results store holds, under the same model or dataset name, results computed with
    other weights or other data than the run now has."""


class UnknownMethodError(NormXLogitError):
    """A method name that is not registered."""


class UnknownMetricError(InvalidInputError):
    """A metric name that is not registered."""


class NormXLogitWarning(UserWarning):
    """Something was changed to make the input usable (for example truncation)."""


def refuse_surrogate(text: str, name: str) -> None:
    """Refuse, in one line naming ``name`` and the position, a text holding a lone
    surrogate (a JSON ``"\\ud800"`` escape, undecodable bytes Python kept, half of a
    UTF-16 pair): UTF-8 and so no tokenizer encodes it, and it ended in a TypeError."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        raise InvalidInputError(
            f"{name} holds U+{code:04X}, a surrogate, which is no character, at character "
            f"{error.start} (undecodable bytes, or half of a UTF-16 pair); pass the "
            "character itself"
        ) from None
