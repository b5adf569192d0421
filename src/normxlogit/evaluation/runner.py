"""Perturbed copies of a batch, through the model in batched forward passes.

A perturbation is described by rows: ``source`` ``[N]`` (which text of the batch a row
copies) and a boolean mask ``[N, T]`` of the positions to perturb. The runner builds the
model inputs one chunk of rows at a time (so ``N`` can be large without holding every
perturbed embedding at once), runs the backbone, reads the head at each row's reading
position, and hands the logits to a ``reduce`` function that keeps only what a metric
needs (a probability, an argmax, a Hellinger distance).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from ..model.adapter import ExplainableModel
from ..model.inputs import Batch
from ..model.routing import expand_rows, replayed_attention

#: (logits [n, C], indices of those rows among the N) -> [n, ...]
Reduce = Callable[[Tensor, Tensor], Tensor]


class PerturbationRunner:
    """Runs perturbed rows of one encoded batch in chunks of ``rows_per_forward`` rows, and
    of at most ``max_tokens_per_batch`` tokens (rows x the batch's padded length) when a
    memory budget is given: long texts then go through in fewer rows at a time."""

    def __init__(
        self,
        model: ExplainableModel,
        batch: Batch,
        rows_per_forward: int = 64,
        max_tokens_per_batch: int | None = None,
    ):
        self.model = model
        self.batch = batch.to(model.device)
        self.rows_per_forward = rows_per_forward
        if max_tokens_per_batch is not None:  # a row holds the padded length, at least one
            fitting = max_tokens_per_batch // max(1, batch.input_ids.shape[1])
            self.rows_per_forward = max(1, min(rows_per_forward, fitting))
        self.forward_rows = 0  # rows sent through the model, for cost accounting
        #: called with the number of rows after every forward pass (progress bars)
        self.on_rows: Callable[[int], None] | None = None
        self._embeddings: Tensor | None = None

    # ------------------------------------------------------------------ hard
    @torch.no_grad()
    def replaced(self, source: Tensor, perturb: Tensor, replacement: str, reduce: Reduce) -> Tensor:
        """Outputs with the perturbed tokens replaced by the mask token (``"mask"``) or
        deleted (``"delete"``), over the task's output space."""
        build = self._masked if replacement == "mask" else self._deleted
        return self._stream(source, perturb, lambda s, p: self._read(*build(s, p)), reduce)

    def _masked(self, source: Tensor, perturb: Tensor) -> tuple[dict[str, Tensor], Tensor]:
        inputs = self._rows(source)
        mask_id = self.model.tokenizer.mask_token_id
        inputs["input_ids"] = inputs["input_ids"].masked_fill(perturb, mask_id)
        return inputs, self.batch.reading_positions[source]

    def _deleted(self, source: Tensor, perturb: Tensor) -> tuple[dict[str, Tensor], Tensor]:
        from .perturb import compact

        inputs = self._rows(source)
        keep = inputs.pop("attention_mask").bool() & ~perturb
        inputs.pop("position_ids", None)
        inputs, new_index = compact(inputs, keep)
        reading = new_index.gather(-1, self.batch.reading_positions[source].unsqueeze(-1))
        inputs["position_ids"] = self.model.encoder.position_ids(inputs["attention_mask"])
        return self._accepted(inputs), reading.squeeze(-1)

    # ------------------------------------------------------------------ soft
    @torch.no_grad()
    def zeroed(
        self,
        source: Tensor,
        perturb: Tensor,
        reduce: Reduce,
        routing: Sequence[Tensor] | None = None,
        vocabulary: bool = False,
    ) -> Tensor:
        """Outputs with the perturbed tokens' input embeddings zeroed.

        ``routing``: the clean pass's attention weights per layer ``[B, H, T, T]``; when
        given they are replayed (fixed routing) instead of recomputed. ``vocabulary``: read
        the whole vocabulary rather than the task's labels.
        """

        def run(rows: Tensor, zero: Tensor) -> Tensor:
            inputs = self._rows(rows)
            del inputs["input_ids"]
            inputs["inputs_embeds"] = self.embeddings[rows] * (~zero).unsqueeze(-1)
            reading = self.batch.reading_positions[rows]
            if routing is None:
                return self._read(inputs, reading, vocabulary)
            with replayed_attention(self.model, expand_rows(routing, rows)):
                return self._read(inputs, reading, vocabulary)

        return self._stream(source, perturb, run, reduce)

    @property
    def embeddings(self) -> Tensor:
        """The batch's input (word) embeddings ``[B, T, D]``, what soft masks multiply."""
        if self._embeddings is None:
            with torch.no_grad():
                table = self.model.model.get_input_embeddings()
                self._embeddings = table(self.batch.input_ids)
        return self._embeddings

    def _read(self, inputs: dict[str, Tensor], reading: Tensor, vocabulary: bool = False) -> Tensor:
        """The head's logits at each row's reading position: the task's output space, or
        the whole vocabulary."""
        states = self.model.run_backbone(**inputs).last_hidden_state
        rows = torch.arange(states.shape[0], device=states.device)
        read = states[rows, reading]
        return self.model.all_logits(read) if vocabulary else self.model.output_logits(read)

    # --------------------------------------------------------------- shared
    def _rows(self, source: Tensor) -> dict[str, Tensor]:
        """The batch's model inputs for the rows ``source`` (copies of its texts)."""
        inputs = self.model.backbone_inputs(self.batch)
        return {name: value[source] for name, value in inputs.items()}

    def _accepted(self, inputs: dict[str, Tensor]) -> dict[str, Tensor]:
        accepted = self.model.backbone_inputs(self.batch)
        return {name: value for name, value in inputs.items() if name in accepted}

    def _stream(
        self,
        source: Tensor,
        perturb: Tensor,
        run: Callable[[Tensor, Tensor], Tensor],
        reduce: Reduce,
    ) -> Tensor:
        device = self.model.device
        source, perturb = source.to(device), perturb.to(device)
        outputs = []
        for start in range(0, source.shape[0], self.rows_per_forward):
            end = min(start + self.rows_per_forward, source.shape[0])
            logits = run(source[start:end], perturb[start:end])
            self.forward_rows += end - start
            if self.on_rows is not None:
                self.on_rows(end - start)
            outputs.append(reduce(logits.float(), torch.arange(start, end, device=device)))
        return torch.cat(outputs) if outputs else torch.empty(0, device=device)
