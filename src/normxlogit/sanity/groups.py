"""The parameter groups a randomisation test re-initialises, from the top of the model down.

Adebayo et al. (2018) re-initialise a trained network layer by layer from the output
towards the input: here the head (everything after the last block: a pooler and
classifier, a final norm and language-model head), then each transformer block from the
last to the first, then the embeddings. Groups are found from the loaded model's blocks
and input embeddings, whatever the architecture; re-initialisation is the model's own
(``_init_weights``: the distribution it was trained from), so a randomised model is one
the same code could have started from.

Quantus's units instead (``units="modules"``, :mod:`normxlogit.sanity.definition`): every
module with a ``reset_parameters`` method, last registered first, each re-initialised by
that method (``init="reset_parameters"``) after ``torch.manual_seed(seed + 1)``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from ..common.errors import UnsupportedModelError
from ..model.adapter import ExplainableModel


@dataclass(frozen=True)
class ParameterGroup:
    """Modules re-initialised together: ``head``, ``block 5``, ... ``embeddings``."""

    name: str
    modules: tuple[nn.Module, ...]
    #: whether the modules inside ``modules`` are re-initialised too (False: the module's
    #: own ``reset_parameters`` alone, as Quantus calls it)
    nested: bool = True

    def parameters(self) -> list[nn.Parameter]:
        seen: dict[int, nn.Parameter] = {}
        for module in self.modules:
            for parameter in module.parameters():
                seen.setdefault(id(parameter), parameter)
        return list(seen.values())

    def tensors(self) -> list[torch.Tensor]:
        """Parameters and buffers (a ``reset_parameters`` may reset running statistics)."""
        seen: dict[int, torch.Tensor] = {id(p): p for p in self.parameters()}
        for module in self.modules:
            for buffer in module.buffers():
                seen.setdefault(id(buffer), buffer)
        return list(seen.values())

    def resettable(self) -> list[nn.Module]:
        """The modules whose ``reset_parameters`` re-initialises this group, last
        registered first (Quantus's order)."""
        found: dict[int, nn.Module] = {}
        for module in self.modules:
            inner = list(module.modules()) if self.nested else [module]
            for each in reversed(inner):
                if hasattr(each, "reset_parameters"):
                    found.setdefault(id(each), each)
        return list(found.values())


def parameter_groups(model: ExplainableModel) -> list[ParameterGroup]:
    """The model's groups from the top: head, blocks last to first, embeddings."""
    blocks = model.blocks
    if blocks is None:
        raise UnsupportedModelError(
            f"{type(model.model).__name__} shares its weights across layers (one block used "
            "L times), so its layers cannot be randomised one at a time; randomise its "
            "modules instead (units='modules'; --units modules on the command line, "
            "sanity_units = 'modules' in a protocol), or compare with a model trained on "
            "shuffled labels (data_randomization; --mode data)"
        )
    backbone = model.backbone
    embeddings = _embedding_owner(backbone, model.model.get_input_embeddings())
    head: list[nn.Module] = []
    for child in model.model.children():
        if child is not backbone:
            head.append(child)
    for child in backbone.children():
        if child is not embeddings and not _holds(child, blocks):
            head.append(child)
    head = [module for module in head if any(True for _ in module.parameters())]
    groups = [ParameterGroup("head", tuple(head))] if head else []
    groups += [
        ParameterGroup(f"block {index}", (blocks[index],)) for index in reversed(range(len(blocks)))
    ]
    groups.append(ParameterGroup("embeddings", (embeddings,)))
    return groups


def module_units(model: ExplainableModel) -> list[ParameterGroup]:
    """Quantus 0.6.0's units: every module with ``reset_parameters``, in reverse
    registration order, named as ``named_modules`` names it. A module without the method
    (LLaMA's RMSNorm) is in none."""
    return [
        ParameterGroup(name, (module,), nested=False)
        for name, module in reversed(list(model.model.named_modules()))
        if hasattr(module, "reset_parameters")
    ]


def randomization_units(model: ExplainableModel, units: str = "groups") -> list[ParameterGroup]:
    """The steps' units from the top: ``"groups"`` or ``"modules"`` (Quantus's)."""
    return module_units(model) if units == "modules" else parameter_groups(model)


def randomization_steps(
    model: ExplainableModel, mode: str, units: str = "groups"
) -> list[list[ParameterGroup]]:
    """The units random at each step: ``cascading`` adds one unit per step from the top;
    ``independent`` takes each alone, from the top (Quantus's modules: first registered
    first, as its ``layer_order="independent"`` runs them)."""
    found = randomization_units(model, units)
    if mode == "cascading":
        return [found[: i + 1] for i in range(len(found))]
    if units == "modules":
        found = found[::-1]
    return [[unit] for unit in found]


def _embedding_owner(backbone: nn.Module, words: nn.Module) -> nn.Module:
    """The backbone's child that holds the word embeddings (BERT's ``embeddings`` with
    positions and norm; a decoder's ``embed_tokens`` itself)."""
    for child in backbone.children():
        if child is words or any(module is words for module in child.modules()):
            return child
    return words


def _holds(module: nn.Module, blocks: nn.ModuleList) -> bool:
    return module is blocks or any(inner is blocks for inner in module.modules())


#: the attribute transformers sets on a tensor it considers initialised
_MARK = "_is_hf_initialized"


def group_seed(seed: int, group: ParameterGroup) -> int:
    """The seed of ``group``'s draw from the run's seed and the group's name: a 32-bit
    checksum (the same in every process; torch's CPU generator reads 32 bits of a seed)."""
    return zlib.crc32(f"{seed}:{group.name}".encode())


@contextmanager
def randomized(
    model: ExplainableModel, groups: list[ParameterGroup], seed: int, init: str = "model"
) -> Iterator[ExplainableModel]:
    """``model`` with ``groups`` re-initialised, restored on exit whatever happens: the
    caller's model is never left randomised.

    Each group's draw depends on ``seed`` and the group alone (not on which groups are
    random with it), so a cascading step is the step before with one more group random,
    the earlier groups keeping their draws (Adebayo et al.; Quantus keeps its randomised
    layers too), and the independent test draws the same weights for a group.
    ``init``: ``"model"`` (``_init_weights``, seeded by the seed and the group's name) or
    ``"reset_parameters"`` (PyTorch's defaults, ``manual_seed(seed + 1)`` before each
    module, as Quantus 0.6.0 draws)."""
    saved = {
        id(tensor): (tensor, tensor.detach().clone())
        for group in groups
        for tensor in group.tensors()
    }
    # transformers marks loaded tensors as initialised, and its init functions then leave
    # them alone: lift the mark while re-initialising, and put it back afterwards
    marks = {key: getattr(p, _MARK, None) for key, (p, _) in saved.items()}
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            for tensor, _ in saved.values():
                setattr(tensor, _MARK, False)
            for group in groups:
                _reinitialise(model, group, seed, init)
        yield model
    finally:
        with torch.no_grad():
            for key, (tensor, value) in saved.items():
                tensor.copy_(value)
                if marks[key] is None:
                    if hasattr(tensor, _MARK):
                        delattr(tensor, _MARK)
                else:
                    setattr(tensor, _MARK, marks[key])


def _reinitialise(model: ExplainableModel, group: ParameterGroup, seed: int, init: str) -> None:
    """Draw ``group``'s weights anew (see :func:`randomized`)."""
    if init == "reset_parameters":
        for module in group.resettable():
            torch.manual_seed(seed + 1)
            module.reset_parameters()
        return
    initialise = model.model._init_weights
    torch.manual_seed(group_seed(seed, group))
    for module in group.modules:
        if group.nested:
            module.apply(initialise)
        else:
            initialise(module)
