"""What a model parameter randomisation test randomises, how, and how it compares.

Two definitions are in use, and their numbers cannot be compared with each other:

- the project's (the default): ``units="groups"`` (the head, each block from the last,
  the embeddings: 8 steps on MiniLM), ``init="model"`` (the model's own
  ``_init_weights``, seeded per group), ``tokens="content"`` (special tokens left out)
  and signed scores (``absolute=False``);
- ``preset="quantus-mprt"``: Quantus 0.6.0's ``MPRT`` with its defaults.
  ``units="modules"``: every module with a ``reset_parameters`` method, in reverse
  registration order (54 on MiniLM; a module without one, such as LLaMA's RMSNorm, is
  never randomised); ``init="reset_parameters"``: PyTorch's default initialisation,
  ``torch.manual_seed(seed + 1)`` before each module; ``tokens="all"`` ([CLS] and [SEP]
  included) and ``absolute=True``. Quantus also divides the scores by their largest
  magnitude first, which no rank changes. Its seed defaults to 42.

Each setting can also be given alone (``units="modules"`` with the model's own
initialisation, say), to see which of them moves a number.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from ..common.errors import InvalidInputError
from ..common.options import is_bool
from ..common.outputs import checked_choice, lone_item, type_phrase

#: the protocol setting of each field (the evaluation protocol is shared by every metric)
PROTOCOL_NAMES = MappingProxyType(
    {
        "units": "sanity_units",
        "init": "sanity_init",
        "tokens": "sanity_tokens",
        "absolute": "sanity_absolute",
    }
)


@dataclass(frozen=True)
class SanityDefinition:
    """The settings that decide what a randomisation number means (see the module)."""

    units: str = "groups"
    init: str = "model"
    tokens: str = "content"
    absolute: bool = False

    def __post_init__(self) -> None:
        # the choices live with the protocol, which loads this package's metrics
        from ..evaluation.protocol import SANITY_INITS, SANITY_TOKENS, SANITY_UNITS

        choices_of = {"units": SANITY_UNITS, "init": SANITY_INITS, "tokens": SANITY_TOKENS}
        for name, choices in choices_of.items():  # a 0-d array read; an array refused
            object.__setattr__(self, name, checked_choice(getattr(self, name), name, choices))
        if is_bool(self.absolute):  # numpy's too (read from a table)
            object.__setattr__(self, "absolute", bool(self.absolute))
        else:  # "false" would be taken as true
            raise InvalidInputError(
                f"absolute={self.absolute!r} is {type_phrase(self.absolute)}; give True "
                "(compare the scores' magnitudes) or False (their signed values)"
            )

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def protocol_options(self) -> dict[str, Any]:
        """This definition as evaluation protocol settings (``sanity_units``, ...)."""
        return {PROTOCOL_NAMES[name]: value for name, value in self.to_dict().items()}

    @classmethod
    def from_protocol(cls, protocol: Any) -> SanityDefinition:
        """The definition an evaluation protocol's ``sanity_*`` settings give."""
        return cls(**{name: getattr(protocol, key) for name, key in PROTOCOL_NAMES.items()})


#: preset -> its settings (the rest: the defaults, the project's)
PRESETS = MappingProxyType(
    {
        "normxlogit": MappingProxyType({}),
        "quantus-mprt": MappingProxyType(
            {"units": "modules", "init": "reset_parameters", "tokens": "all", "absolute": True}
        ),
    }
)


def sanity_definition(preset: str | None = None, **changes: Any) -> SanityDefinition:
    """A preset's definition (None: the project's), with the settings given that are not
    None changed."""
    preset = lone_item(preset)  # np.array("adebayo"): the name it holds
    if preset is not None:
        preset = checked_choice(preset, "preset", PRESETS)  # a list refused in one line
    given = {k: lone_item(v) for k, v in changes.items() if lone_item(v) is not None}
    return SanityDefinition(**{**PRESETS[preset or "normxlogit"], **given})
