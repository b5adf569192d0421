"""The tracer: records the reference pass's operands, then applies the rules."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from ...common.errors import UnsupportedModelError
from .catalogue import CATALOGUE, activation_types, is_float_tensor, is_norm
from .rules import rescale


@dataclass
class _Record:
    tensors: tuple[Tensor, ...]
    versions: tuple[int, ...]


class Tracer(TorchFunctionMode):
    """Sees every torch call; records reference operands, then applies the rules."""

    def __init__(self) -> None:
        super().__init__()
        self.recording = True
        self.tape: deque[_Record] = deque()
        self.paused = 0  # inside an activation module, which is ruled as one function
        self.in_norm = 0  # inside a normalisation module

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rule = None if self.paused else CATALOGUE.get(func)
        operands = rule.operands(args, kwargs) if rule is not None else None
        if not operands or not any(t.requires_grad for t in operands):
            return func(*args, **kwargs)
        references = self.exchange(operands)
        if references is None:
            return func(*args, **kwargs)
        return rule.apply(self, func, args, kwargs, operands, references)

    def exchange(self, operands: tuple[Tensor, ...]) -> tuple[Tensor, ...] | None:
        """Reference pass: store the operands (returns None). Input pass: their reference."""
        if self.recording:
            self.tape.append(
                _Record(tuple(t.detach() for t in operands), tuple(t._version for t in operands))
            )
            return None
        if not self.tape:
            raise mismatch("ran more nonlinear operations from the input than from the reference")
        record = self.tape.popleft()
        if any(t._version != v for t, v in zip(record.tensors, record.versions, strict=True)):
            raise mismatch("changed a recorded tensor in place")
        if tuple(t.shape for t in record.tensors) != tuple(t.shape for t in operands):
            raise mismatch("ran different operations from the input and from the reference")
        return record.tensors

    # modules ruled as a whole --------------------------------------------------------
    def before_activation(self, module: nn.Module, args: tuple) -> None:
        self.paused += 1

    def after_activation(self, module: nn.Module, args: tuple, output: Any) -> Tensor | None:
        try:
            x = args[0] if args else None
            if self.paused > 1:  # inside another activation module, which rules it all
                return None
            if not (is_float_tensor(x) and x.requires_grad and isinstance(output, Tensor)):
                return None
            references = self.exchange((x,))
            if references is None:
                return None
            # a module without weights applies one function to any shape of input
            free = next(iter(module.parameters()), None) is None
            free = free and next(iter(module.buffers()), None) is None
            value = output.detach()
            return rescale(module.forward, x, references[0], lambda: value, gather=free)
        finally:
            self.paused -= 1

    def before_norm(self, module: nn.Module, args: tuple) -> None:
        self.in_norm += 1

    def after_norm(self, module: nn.Module, args: tuple, output: Any) -> None:
        self.in_norm -= 1


def mismatch(what: str) -> UnsupportedModelError:
    return UnsupportedModelError(
        f"deeplift cannot follow this model: it {what}; its forward must run the same "
        "operations whatever the embeddings (use integrated_gradients instead)"
    )


def discard(tensor: Tensor) -> None:
    """Saved-tensor hook of the reference pass, which never runs backward."""
    return None


@contextmanager
def traced(network: nn.Module) -> Iterator[Tracer]:
    """A tracer with the network's activation and norm modules hooked, its parameters
    frozen (so that ``requires_grad`` means "depends on the embeddings") and in-place
    activations made out-of-place; everything is restored on exit."""
    tracer = Tracer()
    frozen = [(p, p.requires_grad) for p in network.parameters()]
    inplace = [m for m in network.modules() if getattr(m, "inplace", False) is True]
    handles = []
    activations = activation_types()
    try:
        for parameter, _ in frozen:
            parameter.requires_grad_(False)
        for module in inplace:
            module.inplace = False
        for module in network.modules():
            if isinstance(module, activations):
                handles.append(module.register_forward_pre_hook(tracer.before_activation))
                handles.append(module.register_forward_hook(tracer.after_activation))
            elif is_norm(module):
                handles.append(module.register_forward_pre_hook(tracer.before_norm))
                handles.append(module.register_forward_hook(tracer.after_norm))
        yield tracer
    finally:
        for handle in handles:
            handle.remove()
        for module in inplace:
            module.inplace = True
        for parameter, flag in frozen:
            parameter.requires_grad_(flag)
