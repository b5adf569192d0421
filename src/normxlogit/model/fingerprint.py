"""What a model's results were computed with: a full fingerprint for the bench's store,
and a cheap weights signature stamped on every explanation.

The store keys results by the name a config gives a model. A name can come to mean
other weights (a built-in adapter retrained, a folder overwritten, a hub model updated),
and results of the old weights would then be reused as if they were the new ones'.
:func:`model_fingerprint` hashes what decides a model's outputs (every parameter and
buffer, the task with its labels, label words and prompt, the tokenizer's size and chat
template), so the store can refuse to mix the two. Bytes are hashed, not values, so the
same weights give the same fingerprint on any device.

An explanation scored with another model than the one that made it is meaningless, and
names do not tell (two models built from one config share a class name, two checkpoints a
tokenizer). :func:`weights_signature` hashes a strided sample of every tensor (cheap
enough for each ``explain`` call) with the dtype in front, so evaluation can refuse
explanations of other weights at the same precision; precisions differ in their bytes,
so explanations made at another precision are not compared.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import torch

#: bytes per slice copied off the device while hashing (bounds the memory it takes)
_SLICE_BYTES = 64 * 2**20
#: values read from each tensor for the weights signature
_SAMPLES = 256


def model_fingerprint(model: Any) -> str:
    """A short hex digest of an ``ExplainableModel``'s weights, task and tokenizer."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(json.dumps(_description(model), sort_keys=True).encode())
    for name, tensor in _unique_tensors(model.model):
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)};".encode())
        _hash_tensor(digest, tensor)
    return digest.hexdigest()


def weights_signature(network: torch.nn.Module, dtype: torch.dtype) -> str:
    """``"<dtype>:<hex>"``: a digest of the names, shapes and ``_SAMPLES`` evenly strided
    values of every parameter and buffer of ``network`` (one copy off the device)."""
    digest = hashlib.blake2b(digest_size=12)
    samples = []
    for name, tensor in _unique_tensors(network):
        digest.update(f"{name}:{tuple(tensor.shape)};".encode())
        flat = tensor.detach().reshape(-1)
        step = max(1, flat.numel() // _SAMPLES)
        samples.append(flat[::step][:_SAMPLES].float())
    if samples:
        digest.update(torch.cat(samples).cpu().numpy().tobytes())
    return f"{str(dtype).removeprefix('torch.')}:{digest.hexdigest()}"


def signature_key(network: torch.nn.Module) -> tuple:
    """Changes whenever a tensor of ``network`` is replaced or written in place (its
    version counter), so a cached signature is recomputed only then."""
    state = network.state_dict(keep_vars=True)
    return tuple((tensor.data_ptr(), tensor._version) for tensor in state.values())


def _unique_tensors(network: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """Parameters and buffers by name, tied ones (embeddings and LM head) once."""
    seen: set[tuple[int, int]] = set()
    state = network.state_dict(keep_vars=False)
    for name in sorted(state):
        tensor = state[name]
        if tensor.is_meta:
            continue
        where = (tensor.untyped_storage().data_ptr(), tensor.storage_offset())
        if where in seen:
            continue
        seen.add(where)
        yield name, tensor


def _description(model: Any) -> dict[str, Any]:
    task, tokenizer = model.task, model.tokenizer
    prompt = task.prompt.to_dict() if task.prompt is not None else None
    return {
        "kind": task.kind.value,
        "labels": list(task.labels),
        "label_words": list(task.label_words),
        "prompt": prompt,
        "vocabulary": len(tokenizer),
        "chat_template": getattr(tokenizer, "chat_template", None),
    }


def _hash_tensor(digest: Any, tensor: torch.Tensor) -> None:
    flat = tensor.detach().reshape(-1)
    step = max(1, _SLICE_BYTES // max(1, flat.element_size()))
    for start in range(0, flat.numel(), step):
        part = flat[start : start + step].cpu().contiguous()
        digest.update(part.view(torch.uint8).numpy().tobytes())
