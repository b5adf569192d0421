"""Registered methods that tests of the extension points share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from normxlogit.methods import Attribution, AttributionMethod, register_method


def ramp_method(name: str, step: float) -> type[AttributionMethod]:
    """Register (replacing) a method ``name`` scoring 0, step, 2·step, ... over the
    tokens: the same source each call, closing over ``step``, so its code fingerprint
    changes with ``step`` alone."""

    @dataclass
    class Ramp(AttributionMethod):
        description: ClassVar[str] = "scores rising along the text"

        def attribute(self, model, forward, targets, layers):
            B, T = forward.batch.input_ids.shape
            shape = (B, len(layers.indices), T, targets.columns.shape[1])
            scores = torch.arange(T, dtype=torch.float32).mul(step)
            return Attribution(scores.view(1, 1, -1, 1).expand(shape).clone())

    Ramp.name = name
    return register_method(Ramp, replace=True)
