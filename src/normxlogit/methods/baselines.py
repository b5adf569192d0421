"""What path methods compare the input with: the baseline embeddings of integrated
gradients and DeepLift.

A baseline is the zero vector or one token's word embedding at every position:

- ``"zero"``: the zero embedding (the NormXLogit paper's setting, Captum's default);
- ``"unk"``, ``"pad"``, ``"mask"``: the embedding of the tokenizer's unknown, padding or
  mask token (``"unk"`` is Inseq's default, so the pi-Soft paper's);
- a token id (``5``; as text, ``"id:5"``) or a token of the vocabulary
  (``"<|endoftext|>"``). Text always names a token, never an id: ``"10"`` is the token
  "10" (so its meaning never depends on whether a vocabulary holds it).

``keeps_eos``: positions that hold the end-of-sequence token keep their own embedding, so
they are never compared with anything and score 0 (Inseq's default,
``include_eos_baseline=False``). Position and segment embeddings are the model's own in
every case: only word embeddings are replaced.
"""

from __future__ import annotations

from torch import Tensor

from ..common.errors import InvalidInputError
from ..common.options import ascii_digits, token_text
from ..model.adapter import ExplainableModel
from ..model.inputs import Batch

#: baselines named by the tokenizer's special token they take the embedding of
NAMED_TOKENS = {"unk": "unk_token_id", "pad": "pad_token_id", "mask": "mask_token_id"}
#: every named baseline (anything else names a token)
NAMED_BASELINES = ("zero", *NAMED_TOKENS)


def baseline_token(model: ExplainableModel, baseline: str | int) -> int | None:
    """The token id whose embedding is the baseline (``None``: the zero vector)."""
    tokenizer = model.tokenizer
    if baseline == "zero":
        return None
    if isinstance(baseline, str) and baseline in NAMED_TOKENS:
        token = getattr(tokenizer, NAMED_TOKENS[baseline], None)
        if token is None:
            raise InvalidInputError(
                f"baseline={baseline!r}: this tokenizer has no {baseline} token; use "
                "baseline='zero' or give a token (id or text)"
            )
        return int(token)
    size = model.model.get_input_embeddings().weight.shape[0]
    if isinstance(baseline, str):
        baseline = token_text(baseline)  # "id:5": the id, as get_method reads it
    if isinstance(baseline, int) and not isinstance(baseline, bool):
        if not 0 <= baseline < size:
            raise InvalidInputError(
                f"baseline={baseline}: token ids run from 0 to {size - 1} for this model"
            )
        return baseline
    if isinstance(baseline, str) and baseline in tokenizer.get_vocab():
        return int(tokenizer.convert_tokens_to_ids(baseline))
    if isinstance(baseline, str) and baseline.strip().startswith("id:"):
        raise InvalidInputError(
            f"baseline={baseline!r}: after id: give a token id, a whole number from 0 to "
            f"{size - 1} for this model"
        )
    if isinstance(baseline, str) and ascii_digits(baseline.strip()):
        raise InvalidInputError(digits_refusal(baseline, size))
    raise InvalidInputError(
        f"baseline={baseline!r} is neither {', '.join(NAMED_BASELINES)} nor a token of this "
        "tokenizer's vocabulary; give one of those names, a token id or a token"
    )


def digits_refusal(baseline: str, size: int) -> str:
    """Why the text ``baseline`` (digits, not a token of the vocabulary) is refused: text
    names a token; the id spelling is advised only for an id the model has, so that
    following the advice never meets a second refusal."""
    number = baseline.strip()
    start = f"baseline={baseline!r} is not a token of this tokenizer's vocabulary, and text "
    if int(number) < size:
        return (
            f"{start}always names a token; for the token id write baseline=id:{number} "
            f"(or the number {number} in Python or TOML)"
        )
    return (
        f"{start}always names a token; nor is {number} a token id of this model: ids run "
        f"from 0 to {size - 1} (write one as baseline=id:N, or the number N in Python or TOML)"
    )


def eos_token_id(model: ExplainableModel) -> int | None:
    """The end-of-sequence id that :func:`baseline_ids` leaves alone: the model config's
    (as Inseq reads it), else the tokenizer's."""
    found = getattr(model.model.config, "eos_token_id", None)
    if isinstance(found, (list, tuple)):
        found = found[0] if found else None
    if found is None:
        found = model.tokenizer.eos_token_id
    return None if found is None else int(found)


def baseline_ids(
    model: ExplainableModel, batch: Batch, baseline: str | int, keeps_eos: bool
) -> Tensor | None:
    """The baseline as token ids ``[B, T]`` (``None`` for the zero vector without
    ``keeps_eos``; with it, zero-vector positions hold -1)."""
    token = baseline_token(model, baseline)
    if token is None and not keeps_eos:
        return None
    ids = batch.input_ids.new_full(batch.input_ids.shape, -1 if token is None else token)
    eos = eos_token_id(model) if keeps_eos else None
    if eos is not None:
        ids = ids.where(batch.input_ids != eos, batch.input_ids)
    return ids


def baseline_embeddings(
    model: ExplainableModel, batch: Batch, embeds: Tensor, baseline: str | int, keeps_eos: bool
) -> Tensor | None:
    """The baseline's word embeddings ``[B, T, D]`` beside ``embeds`` (the input's), or
    ``None`` for the zero vector everywhere (the cheap case)."""
    ids = baseline_ids(model, batch, baseline, keeps_eos)
    if ids is None:
        return None
    ids = ids.to(embeds.device)
    table = model.model.get_input_embeddings()
    rows = table(ids.clamp_min(0)).detach().to(embeds.dtype)
    # positions left alone hold their own id, so their row is the input's embedding
    return rows.masked_fill((ids < 0).unsqueeze(-1), 0.0)  # -1: the zero vector
