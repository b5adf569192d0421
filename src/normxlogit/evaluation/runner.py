"""Perturbed copies of a batch, through the model in forward passes sized by tokens.

A perturbation is described by rows: ``source`` ``[N]`` (which text of the batch a row
copies) and a boolean mask ``[N, T]`` of the positions to perturb. The runner orders the
rows by their text's length, packs them into forward passes of about a token budget
(rows x the pass's width; a pass that mixes lengths stops before a tenth of it is
padding), trims every pass to the columns its texts fill (no padding
beyond its longest row; a pass of equal-length rows has no padding at all, which lets a
causal model's SDPA take its causal kernel), runs the backbone, reads the head at each
row's reading position, and hands the logits to a ``reduce`` function that keeps only what
a metric needs (a probability, an argmax, a Hellinger distance). Outputs come back in the
rows' own order, so the packing never shows in a result.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate, groupby

import torch
from torch import Tensor

from ..model.adapter import ExplainableModel
from ..model.inputs import Batch
from ..model.routing import clean_attention, replayed_attention

#: (logits [n, C], indices of those rows among the N) -> [n, ...]
Reduce = Callable[[Tensor, Tensor], Tensor]

#: tokens per forward pass when no budget is given: the fastest measured on this project's
#: 2-core CPU (benchmarks/bench_gpu.py); a GPU takes far more (the slot's calibration)
CPU_TOKENS_PER_FORWARD = 4096
GPU_TOKENS_PER_FORWARD = 65536
#: attention-map entries (layers x heads x width^2 per text) that fixed routing holds for
#: one forward pass: 2^28 is 1 GiB in float32
MAP_ENTRIES_PER_FORWARD = 2**28
#: a pass that mixes texts of several lengths stops before its padding passes this share
#: of its real tokens (whole groups of one length are left for the next pass)
MAX_PADDING = 0.1


def metric_precision(values: Tensor) -> Tensor:
    """``values`` (a model's logits) in the precision a metric reduces them in: a float64
    model's own (so its metric values are the float32 ones' exact counterparts, not the
    same float32 numbers), float32 for float32 and half precision."""
    return values if values.dtype == torch.float64 else values.float()


def default_tokens_per_forward(device: torch.device) -> int:
    """The token budget of a forward pass on ``device`` when none is asked for."""
    return GPU_TOKENS_PER_FORWARD if device.type == "cuda" else CPU_TOKENS_PER_FORWARD


@dataclass(frozen=True)
class Window:
    """The columns ``[start, stop)`` of the padded batch a forward pass keeps; ``full``:
    every text of the pass fills them all (no padding: the attention mask is left out, so
    the model neither builds one nor looks at it, which on a GPU would wait for the
    device)."""

    start: int
    stop: int
    full: bool = False
    #: the text of each row of the pass, on the host (what fixed routing groups rows by,
    #: without reading the device)
    texts: tuple[int, ...] = field(default=(), compare=False)


class PerturbationRunner:
    """Runs perturbed rows of one encoded batch in forward passes of at most
    ``tokens_per_forward`` tokens (rows x the pass's trimmed width; default by device),
    ``rows_per_forward`` rows (None: no cap) and, under a memory budget
    ``max_tokens_per_batch``, at most that many tokens. A pass holds at least one row."""

    def __init__(
        self,
        model: ExplainableModel,
        batch: Batch,
        rows_per_forward: int | None = None,
        max_tokens_per_batch: int | None = None,
        tokens_per_forward: int | None = None,
        map_entries_per_forward: int | None = None,
    ):
        self.model = model
        self.batch = batch.to(model.device)
        self.rows_per_forward = rows_per_forward
        budget = tokens_per_forward or default_tokens_per_forward(model.device)
        if max_tokens_per_batch is not None:
            budget = min(budget, max_tokens_per_batch)
        self.tokens_per_forward = budget
        self.map_entries_per_forward = map_entries_per_forward or MAP_ENTRIES_PER_FORWARD
        mask = batch.attention_mask.cpu().bool()
        columns = torch.arange(mask.shape[1])
        #: each text's first and one-past-last real column: padding on either side
        self._first = torch.where(mask, columns, mask.shape[1]).min(-1).values
        self._stop = torch.where(mask, columns + 1, 0).max(-1).values
        self.forward_rows = 0  # rows sent through the model, for cost accounting
        self.forwards = 0  # forward passes run
        #: called with the number of rows after every forward pass (progress bars)
        self.on_rows: Callable[[int], None] | None = None
        self._embeddings: Tensor | None = None

    # ------------------------------------------------------------------ hard
    @torch.no_grad()
    def replaced(self, source: Tensor, perturb: Tensor, replacement: str, reduce: Reduce) -> Tensor:
        """Outputs with the perturbed tokens replaced by the mask token (``"mask"``) or
        deleted (``"delete"``), over the task's output space."""
        build = self._masked if replacement == "mask" else self._deleted

        def run(rows: Tensor, perturbed: Tensor, window: Window) -> Tensor:
            return self._read(*build(rows, perturbed, window))

        return self._stream(source, perturb, run, reduce)

    def _masked(
        self, source: Tensor, perturb: Tensor, window: Window
    ) -> tuple[dict[str, Tensor], Tensor]:
        inputs = self.inputs_for(source, window)
        mask_id = self.model.tokenizer.mask_token_id
        inputs["input_ids"] = inputs["input_ids"].masked_fill(perturb, mask_id)
        return inputs, self.batch.reading_positions[source] - window.start

    def _deleted(
        self, source: Tensor, perturb: Tensor, window: Window
    ) -> tuple[dict[str, Tensor], Tensor]:
        from .perturb import compact

        inputs = self.inputs_for(source, window)
        real = inputs.pop("attention_mask", None)
        keep = ~perturb if real is None else real.bool() & ~perturb
        inputs.pop("position_ids", None)
        inputs, new_index = compact(inputs, keep)
        reading = self.batch.reading_positions[source] - window.start
        reading = new_index.gather(-1, reading.unsqueeze(-1))
        inputs["position_ids"] = self.model.encoder.position_ids(inputs["attention_mask"])
        return self._accepted(inputs), reading.squeeze(-1)

    # ------------------------------------------------------------------ soft
    @torch.no_grad()
    def zeroed(
        self,
        source: Tensor,
        perturb: Tensor,
        reduce: Reduce,
        routing: CleanRouting | None = None,
        vocabulary: bool = False,
    ) -> Tensor:
        """Outputs with the perturbed tokens' input embeddings zeroed.

        ``routing``: the clean pass's attention maps; when given they are replayed (fixed
        routing) instead of recomputed, each text's maps shared by all its rows in a pass
        (never copied per row). ``vocabulary``: read the whole vocabulary rather than the
        task's labels.
        """

        def run(rows: Tensor, zero: Tensor, window: Window) -> Tensor:
            inputs = self.inputs_for(rows, window)
            del inputs["input_ids"]
            embeddings = self.embeddings[rows, window.start : window.stop]
            inputs["inputs_embeds"] = embeddings * (~zero).unsqueeze(-1)
            reading = self.batch.reading_positions[rows] - window.start
            if routing is None:
                return self._read(inputs, reading, vocabulary)
            maps, groups = routing.maps(window)
            with replayed_attention(self.model, maps, groups):
                return self._read(inputs, reading, vocabulary)

        entries = None if routing is None else routing.entries_per_column
        return self._stream(source, perturb, run, reduce, entries)

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
    def window(self, texts: Tensor) -> Window:
        """The columns the texts ``texts`` (indices, on the CPU) fill between them."""
        first, stop = self._first[texts], self._stop[texts]
        start, end = int(first.min()), int(stop.max())
        full = bool((first == start).all() and (stop == end).all())
        return Window(start, end, full, tuple(texts.tolist()))

    def width(self, text: int) -> int:
        """How many columns text ``text`` spans (its real tokens)."""
        return int(self._stop[text] - self._first[text])

    def inputs_for(self, source: Tensor, window: Window) -> dict[str, Tensor]:
        """The batch's model inputs for the rows ``source`` (copies of its texts), cut to
        the pass's columns."""
        inputs = self.model.backbone_inputs(self.batch)
        if window.full:
            inputs.pop("attention_mask", None)
        return {name: value[source, window.start : window.stop] for name, value in inputs.items()}

    def _accepted(self, inputs: dict[str, Tensor]) -> dict[str, Tensor]:
        accepted = self.model.backbone_inputs(self.batch)
        return {name: value for name, value in inputs.items() if name in accepted}

    def plan(self, source: Tensor, entries_per_column: int | None = None) -> list[Tensor]:
        """The rows ``source`` ``[N]`` (CPU) as forward passes: indices into the N rows,
        shortest texts first, each pass within the row, token and (``entries_per_column``:
        attention-map entries per squared column of a text, under fixed routing) map
        budgets. Rows of one text stay in their order."""
        widths = (self._stop - self._first)[source]
        order = torch.sort(widths, stable=True).indices
        sorted_widths = widths[order].tolist()
        texts = source[order].tolist()
        sums = [0, *accumulate(sorted_widths)]
        passes, start, total = [], 0, len(texts)
        while start < total:
            stop = self._pass_end(sorted_widths, texts, start, entries_per_column)
            stop = _padding_end(sorted_widths, sums, start, stop)
            passes.append(order[start:stop])
            start = stop
        return passes

    def _pass_end(
        self, widths: list[int], texts: list[int], start: int, entries: int | None
    ) -> int:
        """One past the last row of the pass that starts at ``start``: rows are sorted by
        width, so the pass's width is its last row's."""
        cap = len(widths) if self.rows_per_forward is None else start + self.rows_per_forward
        cap = min(cap, len(widths))
        # the most rows whose count x last width fits the token budget (widths rise)
        low, high = start + 1, cap
        while low < high:
            middle = (low + high + 1) // 2
            if (middle - start) * widths[middle - 1] <= self.tokens_per_forward:
                low = middle
            else:
                high = middle - 1
        stop = low
        if entries is not None:  # fixed routing: each text's maps, held once per pass
            stop = self._maps_end(widths, texts, start, stop, entries)
        return stop

    def _maps_end(
        self, widths: list[int], texts: list[int], start: int, stop: int, entries: int
    ) -> int:
        """Cut the pass where its texts' maps (``entries`` x width^2 each, at the pass's
        width) would pass the map budget; at least the first text's rows stay."""
        width = widths[stop - 1]
        held = max(1, self.map_entries_per_forward // max(1, entries * width * width))
        boundaries = [start] + [i for i in range(start + 1, stop) if texts[i] != texts[i - 1]]
        if len(boundaries) <= held:
            return stop
        return boundaries[held]

    def _stream(
        self,
        source: Tensor,
        perturb: Tensor,
        run: Callable[[Tensor, Tensor, Window], Tensor],
        reduce: Reduce,
        entries_per_column: int | None = None,
    ) -> Tensor:
        device = self.model.device
        source_cpu = source.cpu()
        source, perturb = source.to(device), perturb.to(device)
        output: Tensor | None = None
        passes = self.plan(source_cpu, entries_per_column)
        # every pass's rows reach the device in one copy: none waits inside the loop
        on_device = torch.cat(passes).to(device).split([len(p) for p in passes]) if passes else ()
        for rows_cpu, rows in zip(passes, on_device, strict=True):
            window = self.window(source_cpu[rows_cpu])
            logits = run(source[rows], perturb[rows, window.start : window.stop], window)
            self.forward_rows += len(rows_cpu)
            self.forwards += 1
            if self.on_rows is not None:
                self.on_rows(len(rows_cpu))
            value = reduce(metric_precision(logits), rows)
            if output is None:
                output = value.new_empty((source.shape[0], *value.shape[1:]))
            output[rows] = value
        return output if output is not None else torch.empty(0, device=device)


def _padding_end(widths: list[int], sums: list[int], start: int, stop: int) -> int:
    """Cut the pass ``[start, stop)`` of rows sorted by width back to a boundary between
    widths until its padding is at most ``MAX_PADDING`` of its real tokens (``sums``: the
    widths' running sums). The rows of its first width have none, so they always stay."""
    while stop > start + 1:
        padded = (stop - start) * widths[stop - 1]
        real = sums[stop] - sums[start]
        if padded <= (1 + MAX_PADDING) * real:
            break
        stop = max(start + 1, bisect.bisect_left(widths, widths[stop - 1], start, stop))
    return stop


class CleanRouting:
    """The clean pass's attention maps of a batch's texts, for fixed routing: computed for
    the texts of a forward pass at that pass's columns and kept while the next pass needs
    the same texts, so memory holds the maps of one pass's texts, not of the batch."""

    def __init__(self, runner: PerturbationRunner):
        self.runner = runner
        model = runner.model
        config = model.model.config
        layers, heads = model.num_layers, _attention_heads(config)
        #: map entries per squared column of one text (every layer's heads)
        self.entries_per_column = layers * heads
        self._held: tuple[tuple[int, ...], Window, list[Tensor]] | None = None

    def maps(self, window: Window) -> tuple[list[Tensor], list[tuple[int, int]]]:
        """Each layer's maps ``[G, H, w, w]`` of the pass's texts and the row span each
        applies to (rows of one text are consecutive in a pass)."""
        groups, distinct, start = [], [], 0
        for text, rows in groupby(window.texts):
            count = len(list(rows))
            distinct.append(text)
            groups.append((start, start + count))
            start += count
        key = tuple(distinct)
        if self._held is None or self._held[0] != key or self._held[1] != window:
            self._held = None  # free the previous pass's maps first
            self._held = (key, window, self._clean(distinct, window))
        return self._held[2], groups

    def _clean(self, texts: list[int], window: Window) -> list[Tensor]:
        runner = self.runner
        index = torch.tensor(texts, device=runner.model.device)
        inputs = runner.inputs_for(index, window)
        return clean_attention(runner.model, **inputs)


def _attention_heads(config) -> int:
    """Query heads per layer (a text's maps hold this many per layer)."""
    for name in ("num_attention_heads", "n_head", "num_heads"):
        if value := getattr(config, name, None):
            return int(value)
    text = getattr(config, "text_config", None)
    return _attention_heads(text) if text is not None else 1
