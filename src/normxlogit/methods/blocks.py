"""Catching what each transformer block receives and returns during one forward pass.

Methods that re-run or decompose single blocks (value zeroing, GlobEnc, ALTI, DecompX)
need each block's exact inputs; hooks record them without any per-architecture code.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from torch import nn


@contextmanager
def caught_block_calls(blocks: nn.ModuleList) -> Iterator[list[dict[str, Any]]]:
    """Record each block's call (args, kwargs) and output during a forward pass."""
    calls: list[dict[str, Any]] = [{} for _ in blocks]
    handles = []
    for index, block in enumerate(blocks):

        def before(module, args, kwargs, index=index):
            calls[index].update(args=args, kwargs=kwargs)

        def after(module, args, kwargs, output, index=index):
            calls[index]["output"] = output[0] if isinstance(output, tuple) else output

        handles.append(block.register_forward_pre_hook(before, with_kwargs=True))
        handles.append(block.register_forward_hook(after, with_kwargs=True))
    try:
        yield calls
    finally:
        for handle in handles:
            handle.remove()
