"""The value of a text's renderings (segments removed or replaced): what the segment
methods combine into scores and the segment checks of the evaluation compare.

A prediction's value is the target's log-probability at the reading position (a
regressor's output itself); an answer's, the log-probability of each of its tokens after
the prompt. Renderings of many texts are read together, packed by length into passes.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..common.errors import NormXLogitWarning
from .adapter import ExplainableModel
from .inputs import Batch, TextInput, pack_by_width
from .tasks import TaskKind


def encode_renderings(model: ExplainableModel, renderings: Sequence[TextInput]) -> Batch:
    """The renderings encoded as the model reads them, without a truncation warning each:
    a rendering is no text of the user's (numbering it as one names texts that do not
    exist), and its text's own warning has already come."""
    with warnings.catch_warnings():
        dropped = ".* tokens but the model reads at most"
        warnings.filterwarnings("ignore", dropped, NormXLogitWarning)
        return model.encoder.encode(list(renderings), check=False)


def rendering_ids(model: ExplainableModel, text: TextInput) -> list[int]:
    """The token ids the model reads for ``text`` (its chat prompt around it, if any)."""
    batch = encode_renderings(model, [text])
    return batch.input_ids[0, batch.real_positions(0)].tolist()


def mask_segment(model: ExplainableModel, text: TextInput, members: list[int | None]) -> int | None:
    """The segment holding the mask token a masked LM reads its prediction at (its first
    one); None on other models, or when no segment holds it."""
    mask_id = model.tokenizer.mask_token_id
    if model.task.kind is not TaskKind.MASKED_LM or mask_id is None:
        return None
    ids = rendering_ids(model, text)
    return members[ids.index(mask_id)] if mask_id in ids else None


def prompt_ids(model: ExplainableModel, prompt: str) -> list[int]:
    """The prompt's token ids as a language model reads them before its answer (its chat
    template applied, if any)."""
    chat = model.task.prompt
    tokenizer = model.tokenizer
    if chat is not None:
        rendered = chat.render(tokenizer, prompt)
        return list(tokenizer(rendered, add_special_tokens=False)["input_ids"])
    return list(tokenizer(prompt)["input_ids"])


@torch.no_grad()
def read_values(
    model: ExplainableModel,
    texts: Sequence[Sequence[TextInput]],
    columns: Sequence[torch.Tensor],
    batch_size: int,
    max_tokens: int | None,
) -> list[np.ndarray]:
    """For each request (a text's subset renderings and its target columns ``[K]``), the
    value of every rendering ``[N, K]``: all requests' renderings read together, packed
    by length into passes of at most ``batch_size`` rows (and ``max_tokens`` tokens)."""
    flat = [(r, i, text) for r, group in enumerate(texts) for i, text in enumerate(group)]
    lengths = [len(model.encoder.token_places(text)[1]) for _, _, text in flat]
    order = sorted(range(len(flat)), key=lengths.__getitem__)
    out = [np.zeros((len(group), len(columns[r]))) for r, group in enumerate(texts)]
    for picked in pack_by_width([lengths[i] for i in order], batch_size, max_tokens):
        rows = [flat[order[p]] for p in picked]
        batch = encode_renderings(model, [text for _, _, text in rows])
        forward = model.forward(batch)
        reading = forward.final_states[torch.arange(len(rows)), batch.reading_positions]
        wanted = torch.stack([columns[r] for r, _, _ in rows])
        for (r, i, _), value in zip(rows, values_at(model, reading, wanted), strict=True):
            out[r][i] = value
    return out


@torch.no_grad()
def values_at(model: ExplainableModel, reading: torch.Tensor, columns: torch.Tensor) -> np.ndarray:
    """The value ``[N, K]`` of the target ``columns`` ``[N, K]`` from the final states at
    the reading positions ``[N, D]``: log-probabilities over the head's whole output (a
    regressor's outputs themselves)."""
    wanted = columns.to(reading.device)
    logits = model.all_logits(reading).float()
    if model.task.kind is TaskKind.REGRESSION:
        return logits.gather(1, wanted).double().cpu().numpy()
    log_probs = F.log_softmax(logits, -1)
    return log_probs.gather(1, model.full_output_columns(wanted)).double().cpu().numpy()


@torch.no_grad()
def answer_log_probs(
    view: ExplainableModel,
    requests: Sequence[tuple[Sequence[Sequence[int]], np.ndarray, Sequence[int]]],
    batch_size: int,
    max_tokens: int | None,
) -> list[np.ndarray]:
    """For each request (prompt renderings' token ids, ..., the answer's ids), the
    log-probability of each answer token after each rendering ``[N, R]``; renderings of
    every request packed by length into passes."""
    flat = [
        (r, i, list(row) + list(answer))
        for r, (rows, _, answer) in enumerate(requests)
        for i, row in enumerate(rows)
    ]
    order = sorted(range(len(flat)), key=lambda i: len(flat[i][2]))
    out = [np.zeros((len(rows), len(answer))) for rows, _, answer in requests]
    for picked in pack_by_width(
        [len(flat[order[p]][2]) for p in range(len(order))], batch_size, max_tokens
    ):
        rows = [flat[order[p]] for p in picked]
        batch = view.encoder.encode_ids([ids for _, _, ids in rows], [""] * len(rows))
        forward = view.forward(batch)
        for row, (r, i, _) in enumerate(rows):
            answer = requests[r][2]
            real = batch.real_positions(row)
            reading = real[-len(answer) - 1 : -1].to(forward.final_states.device)
            logits = view.all_logits(forward.final_states[row, reading]).float()
            wanted = torch.as_tensor(answer, device=logits.device)[:, None]
            picked_log_probs = F.log_softmax(logits, -1).gather(1, wanted)[:, 0]
            out[r][i] = picked_log_probs.double().cpu().numpy()
    return out
