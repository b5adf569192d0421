"""``ExplainableModel``: a transformers model, its tokenizer, and where its head-on-top is.

The adapter runs the backbone once, applies the head-on-top to every token's state in one
batched call, and checks itself on construction: the head applied to the reading
position's final state must reproduce the model's own logits. A model that fails the
check is refused instead of explained wrongly.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers import PreTrainedModel

from ..common.errors import InvalidInputError, UnsupportedModelError
from .families import Family, HeadFn, resolve_family
from .families.attention import attention_slots
from .fingerprint import signature_key, weights_signature
from .inputs import (
    Batch,
    Encoder,
    TextInput,
    check_prompt_room,
    check_room,
    checked_max_length,
    max_input_length,
    position_limit,
)
from .precision import resolve_dtype
from .routing import read_attention_maps, rows_of
from .tasks import ChatPrompt, Task, TaskKind, detect_task

#: takes one block's head-averaged attention weights ``[B, T, T]``, blocks in order; a
#: sink with a ``rows`` attribute ``[B, R]`` (positions) takes those rows ``[B, R, T]``
AttentionSink = Callable[[Tensor], None]

VERIFY_TOLERANCE = 1e-4
_PROBE = "The quick brown fox jumps over the lazy dog."


#: the pad-token fix where the model is a saved folder (the command line, a bench config)
_IN_A_FOLDER = ' (a saved model folder: its tokenizer_config.json\'s "pad_token")'


@dataclass
class ForwardResult:
    """One forward pass: the states of the layers asked for, and the prediction.

    ``states`` maps a layer index to its states ``[B, T, D]``: 0 is the embedding output
    (``hidden_states[0]``) and ``num_layers`` the final states the head reads; the layers
    in between are kept only when asked for. ``logits`` are ``[B, C]`` over the output
    space at the reading positions: labels, label words, or the vocabulary.
    """

    batch: Batch
    states: dict[int, Tensor]
    logits: Tensor
    #: head-averaged attention weights ``[B, L, T, T]`` (row: query, column: key) of every
    #: layer, when the pass was asked for them (``forward(..., attentions=True)``)
    attentions: Tensor | None = None
    #: the sink that took each layer's head-averaged weights as the pass ran
    #: (``forward(..., attentions=sink)``), holding what its method kept of them
    attention_sink: AttentionSink | None = None

    def state(self, layer: int) -> Tensor:
        if layer not in self.states:
            raise KeyError(f"layer {layer} was not kept; pass it to forward(layers=...)")
        return self.states[layer]

    @property
    def embeddings(self) -> Tensor:
        return self.states[0]

    @property
    def final_states(self) -> Tensor:
        return self.states[max(self.states)]


class _Columns(nn.Module):
    """A vocabulary projection restricted to some rows, so heads compute only needed logits."""

    def __init__(self, projection: nn.Linear, ids: Tensor):
        super().__init__()
        self.weight = projection.weight[ids]
        self.bias = None if projection.bias is None else projection.bias[ids]

    def forward(self, states: Tensor) -> Tensor:
        return F.linear(states, self.weight, self.bias)


class _Blocked(nn.Module):
    """A vocabulary projection computed in blocks of output rows: the same logits, but the
    gradient w.r.t. its input sums the vocabulary block by block. A single state's
    gradient through a whole vocabulary is otherwise one float32 sum over every word,
    whose rounding reaches 1e-4 relative when the target's probability is differentiated
    (measured on SmolLM2's 49,152 words; in blocks: 1e-5, as with many states at once)."""

    def __init__(self, projection: nn.Linear, rows: int = 4096):
        super().__init__()
        self.weights = projection.weight.split(rows)
        bias = projection.bias
        self.biases = [None] * len(self.weights) if bias is None else bias.split(rows)

    def forward(self, states: Tensor) -> Tensor:
        return torch.cat(
            [F.linear(states, w, b) for w, b in zip(self.weights, self.biases, strict=True)],
            dim=-1,
        )


class ExplainableModel:
    """A model ready to be explained token by token.

    Args:
        model: a transformers model with a head-on-top (classification, regression,
            masked-LM or causal-LM).
        tokenizer: its tokenizer.
        label_words: for a causal LM, ``{label: word}`` (or a list of words) that turns it
            into a prompted classifier read at the last position.
        prompt: a chat prompt wrapped around every text.
        name: shown in results; defaults to the model's path.
        verify: check the head against the model's own logits (on by default).
        max_length: most tokens read per text; defaults to the model's limit.
        device: move the model there first (default: leave it where it is).
        dtype: cast the model's weights to ``float32``, ``float64``, ``bfloat16`` or
            ``float16`` first
            (default: leave them as they are); results record it when not float32.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: Any,
        *,
        label_words: dict[str, str] | Sequence[str] | None = None,
        prompt: ChatPrompt | None = None,
        name: str | None = None,
        verify: bool = True,
        max_length: int | None = None,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
    ):
        if dtype is not None:
            model = model.to(resolve_dtype(dtype))
        self.model = model.eval() if device is None else model.to(device).eval()
        self.tokenizer = tokenizer
        self.family: Family = resolve_family(model)
        self.task: Task = detect_task(model, label_words, prompt)
        if self.task.prompt is not None:  # refused here, also when verify=False
            self.task.prompt.check_tokenizer(tokenizer)
        self.name = name or getattr(model, "name_or_path", "") or type(model).__name__
        self._ensure_pad_token()
        self._check_vocabulary_fits()
        self.backbone = model.base_model
        self._accepts = set(inspect.signature(self.backbone.forward).parameters)
        if self.num_layers < 1:
            raise UnsupportedModelError(
                f"{type(model).__name__} has {self.num_layers} transformer layers; explaining "
                "reads the layers' states, so load a model with at least one layer"
            )
        self._head = self._build_head()
        self._label_token_ids = self._resolve_label_words()
        self._restrict_columns = self.task.over_vocabulary
        self.blocks = self._find_blocks()
        self._first_layer = self.blocks[0] if self.blocks is not None else None
        offset = self.family.position_offset(model)
        limit = position_limit(model, offset)
        max_length = checked_max_length(max_length, limit, self.name)
        if max_length is not None and self.task.prompt is None:
            check_room(tokenizer, max_length, limit, self.name)
        elif max_length is not None:
            check_prompt_room(tokenizer, self.task.prompt, max_length, self.name)
        self.encoder = Encoder(
            tokenizer,
            self.family,
            self.task,
            max_length if max_length is not None else max_input_length(model, tokenizer, offset),
            offset,
        )
        if verify:
            self.verify()
        else:  # the light forward path is only taken once verification has checked it
            self._first_layer = None

    # ----------------------------------------------------------------- description
    @property
    def num_layers(self) -> int:
        """Transformer layers; per-layer results have ``num_layers + 1`` entries."""
        config = self.model.config
        for key in ("num_hidden_layers", "n_layer", "n_layers", "num_layers"):
            if (value := getattr(config, key, None)) is not None:
                return int(value)
        raise UnsupportedModelError(f"cannot tell how many layers {type(self.model).__name__} has")

    @property
    def labels(self) -> tuple[str, ...]:
        """Names of the output space when it is a label set (else empty)."""
        return self.task.labels

    def __repr__(self) -> str:
        return (
            f"ExplainableModel(name={self.name!r}, family={self.family.name!r}, "
            f"task={self.task.kind.value!r}, labels={list(self.labels)})"
        )

    # ------------------------------------------------------------------- set-up
    def _ensure_pad_token(self) -> None:
        tokenizer = self.tokenizer
        if tokenizer.pad_token is None:
            fallback = tokenizer.eos_token or tokenizer.unk_token
            if fallback is None:
                raise UnsupportedModelError(
                    "the tokenizer has no padding, end-of-sequence or unknown token; set "
                    f"tokenizer.pad_token before loading{_IN_A_FOLDER}"
                )
            tokenizer.pad_token = fallback
        self._check_pad_token()

    def _check_pad_token(self) -> None:
        """Refuse a pad token the model has no embedding row for: every batch with padding
        (a generation's gradient passes, several texts) would fail inside torch."""
        try:
            rows = self.model.get_input_embeddings().num_embeddings
        except (AttributeError, NotImplementedError):
            return
        pad = self.tokenizer.pad_token_id
        if isinstance(pad, int) and not 0 <= pad < rows:
            raise UnsupportedModelError(
                f"the tokenizer's pad token {self.tokenizer.pad_token!r} has id {pad}, past the "
                f"model's {rows} embedding rows; set tokenizer.pad_token to a token the model "
                f"has (its eos_token, say) before loading{_IN_A_FOLDER}"
            )

    def _check_vocabulary_fits(self) -> None:
        """Refuse a tokenizer with ids past the model's embedding rows (a token added
        without resizing the model, a vocabulary file with a repeated entry): a text using
        one would fail inside torch mid-run. A tokenizer smaller than the table is normal
        (a padded vocabulary)."""
        try:
            rows = self.model.get_input_embeddings().num_embeddings
            largest = max(self.tokenizer.get_vocab().values(), default=-1)
        except (AttributeError, NotImplementedError, TypeError):
            return
        if largest < rows:
            return
        needed = max(len(self.tokenizer), largest + 1)  # a repeated entry leaves a hole
        raise UnsupportedModelError(
            f"the tokenizer of {self.name} has ids up to {largest}, past the model's {rows} "
            "embedding rows (a token added without resizing the model?); call "
            f"model.resize_token_embeddings({needed}) and save the model again, or load it "
            "with the tokenizer it was trained with"
        )

    def _build_head(self) -> HeadFn:
        builder = (
            self.family.lm_head if self.task.over_vocabulary else self.family.classification_head
        )
        head = builder(self.model)
        if head is None:
            raise UnsupportedModelError(
                f"{type(self.model).__name__} (model_type {self.model.config.model_type!r}, "
                f"family {self.family.name!r}) has no usable head-on-top for a "
                f"{self.task.kind.value} task; register a family for it in "
                "normxlogit.model.families"
            )
        return head

    def _resolve_label_words(self) -> Tensor | None:
        if not self.task.prompted:
            return None
        ids = []
        for word in self.task.label_words:
            pieces = self.tokenizer(word, add_special_tokens=False)["input_ids"]
            if not pieces:
                raise InvalidInputError(f"label word {word!r} is empty after tokenisation")
            ids.append(pieces[0])
        if len(set(ids)) != len(ids):
            raise InvalidInputError(
                f"label words {list(self.task.label_words)} share a first token; choose words "
                "that start differently"
            )
        return torch.tensor(ids)

    def language_model_view(self) -> ExplainableModel:
        """This model as a plain causal LM over the whole vocabulary (same weights, same chat
        prompt), for explaining what it generates: a prompted classifier's label words
        stop mattering once it writes free text. The model itself when already one."""
        if self.task.kind is not TaskKind.CAUSAL_LM:
            raise InvalidInputError(
                f"only a causal language model generates text; {self.name} is a "
                f"{self.task.kind.value} model"
            )
        if not self.task.prompted:
            return self
        view = copy.copy(self)
        view.task = Task(TaskKind.CAUSAL_LM, prompt=self.task.prompt)
        view._label_token_ids = None
        view.encoder = copy.copy(self.encoder)
        view.encoder.task = view.task
        return view

    # ------------------------------------------------------------------ running
    def explain(self, texts, *args, **options):
        """Explain the prediction for a text or texts: see :func:`normxlogit.explain`
        (``method``, ``target``, ``layer`` may come positionally; a ``method`` keyword
        beside a positional method is the method's own option, which explain refuses)."""
        from ..explaining.texts import explain

        return explain(self, texts, *args, **options)

    def encode(
        self,
        texts: Sequence[TextInput],
        mask_position: int | Sequence[int | None] | None = None,
        first_index: int | Sequence[int] = 0,
    ) -> Batch:
        """Tokenise and pad ``texts`` (see :class:`normxlogit.model.inputs.Encoder`)."""
        return self.encoder.encode(texts, mask_position, first_index)

    @property
    def device(self) -> torch.device:
        """Where the model's weights are; batches are moved there."""
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        """The floating-point type the model computes in (its first floating weight's)."""
        for parameter in self.model.parameters():
            if parameter.is_floating_point():
                return parameter.dtype
        return torch.float32

    def weights_signature(self) -> str:
        """``"<dtype>:<digest>"`` of the weights as they are now (see
        :mod:`normxlogit.model.fingerprint`), stamped on every explanation so evaluation
        can refuse explanations made by other weights; recomputed only after a weight
        changes."""
        key = signature_key(self.model)
        cached = getattr(self, "_signature", None)
        if cached is None or cached[0] != key:
            cached = self._signature = (key, weights_signature(self.model, self.dtype))
        return cached[1]

    def backbone_inputs(self, batch: Batch) -> dict[str, Tensor]:
        """The batch's tensors that this backbone's forward accepts."""
        return {k: v for k, v in batch.model_inputs().items() if k in self._accepts}

    def run_backbone(self, **inputs: Any) -> Any:
        """The backbone's forward, never building a KV cache (nothing is generated)."""
        if "use_cache" in self._accepts:
            inputs.setdefault("use_cache", False)
        return self.backbone(**inputs)

    @torch.no_grad()
    def forward(
        self,
        batch: Batch,
        layers: Sequence[int] = (),
        attentions: bool | AttentionSink | None = False,
    ) -> ForwardResult:
        """One forward pass: embeddings, final states, ``layers``, and the prediction.

        Intermediate layers are kept only when asked for; otherwise the embedding output is
        caught on its way into the first layer, so memory stays that of a bare forward.
        ``attentions``: the pass also reads the attention weights, so a method that reads
        them needs no pass of its own. ``True`` returns every layer's head average in
        ``ForwardResult.attentions``; a sink takes them one block at a time as the pass runs,
        so the method keeps only what it needs (see :meth:`_attach`: the weights are computed
        beside SDPA, a sink naming rows gets those rows alone; where a model cannot, eager
        attention runs and each block's ``[B, H, T, T]`` is freed before the next).
        """
        batch = batch.to(self.device)
        inputs = self.backbone_inputs(batch)
        collected: list[Tensor] = []
        sink: AttentionSink | None = None
        if attentions is True:
            sink = collected.append
        elif callable(attentions):
            sink = attentions
        last = self.num_layers
        with ExitStack() as stack:
            caught = sink is None or self._attach(sink, stack)
            if not caught:  # the architecture's blocks do not say: transformers collects them
                inputs["output_attentions"] = True
            if self._first_layer is not None and set(layers) <= {0, last}:
                with self._catch_first_layer_input() as first:
                    outputs = self.run_backbone(**inputs)
                states = {0: first["states"], last: outputs.last_hidden_state}
            else:
                outputs = self.run_backbone(**inputs, output_hidden_states=True)
                states = dict(enumerate(outputs.hidden_states))
        if sink is not None and not caught:
            for weights in getattr(outputs, "attentions", None) or ():
                if weights is not None:
                    sink(_wanted_rows(weights.mean(dim=1), sink))
        rows = torch.arange(len(batch), device=self.device)
        reading = states[last][rows, batch.reading_positions]
        logits = self.output_logits(reading)
        if not bool(torch.isfinite(logits).all()):
            row = int((~torch.isfinite(logits)).any(dim=-1).nonzero()[0])
            raise UnsupportedModelError(
                f"the model computes non-finite logits (NaN or inf) for the text "
                f"{_shown(batch.texts[row])}: its weights or dtype overflow on it (half "
                "precision on a long input, say); load it in float32, or other weights"
            )
        maps = torch.stack(collected, dim=1) if collected else None
        fed = attentions if callable(attentions) else None
        return ForwardResult(batch, states, logits, maps, fed)

    def _attach(self, sink: AttentionSink, stack: ExitStack) -> bool:
        """Make the pass hand ``sink`` each block's head-averaged attention weights (only
        the rows ``sink.rows`` ``[B, R]`` when it names them); returns whether it could
        (``False``: the caller asks transformers for every layer's weights instead).

        Where the model routes attention through transformers' AttentionInterface, the
        weights are computed beside SDPA's output (rows alone, or whole maps a tile of rows
        at a time); otherwise eager attention runs and a hook on each block's attention
        module takes its weights and drops them at once."""
        rows = getattr(sink, "rows", None)
        try:
            rows = None if rows is None else rows.to(self.device)
            stack.enter_context(read_attention_maps(self, rows, sink))
            return True
        except UnsupportedModelError:
            pass
        stack.enter_context(self.eager_attention())
        slots = attention_slots(self.model, self.num_layers)
        if not slots:
            return False

        def hook_for(index: int):
            def hook(module, args, output):
                weights = output[index]
                if weights is None:
                    return output
                sink(_wanted_rows(weights.mean(dim=1), sink))
                return (*output[:index], None, *output[index + 1 :])

            return hook

        for slot in slots:
            stack.callback(slot.module.register_forward_hook(hook_for(slot.index)).remove)
        return True

    @contextmanager
    def eager_attention(self) -> Iterator[None]:
        """Run the model with eager attention (the only path that returns weights in
        transformers 5), and switch back after."""
        config = self.model.config
        previous = getattr(config, "_attn_implementation", None)
        if previous in (None, "eager"):
            yield
            return
        self.model.set_attn_implementation("eager")
        try:
            yield
        finally:
            self.model.set_attn_implementation(previous)

    @contextmanager
    def _catch_first_layer_input(self) -> Iterator[dict[str, Tensor]]:
        caught: dict[str, Tensor] = {}

        def hook(module, args, kwargs):
            if "states" not in caught:  # shared-weight layers run more than once
                caught["states"] = args[0] if args else kwargs["hidden_states"]

        handle = self._first_layer.register_forward_pre_hook(hook, with_kwargs=True)
        try:
            yield caught
        finally:
            handle.remove()

    def _find_blocks(self) -> nn.ModuleList | None:
        """The transformer blocks in order (``None`` where layers share weights)."""
        for module in self.backbone.modules():
            if isinstance(module, nn.ModuleList) and len(module) == self.num_layers:
                return module
        return None

    def output_logits(self, states: Tensor) -> Tensor:
        """The full output space for states ``[N, D]``: labels, label words or vocabulary."""
        if self._label_token_ids is not None:
            count = len(self._label_token_ids)
            labels = torch.arange(count, device=states.device).expand(states.shape[0], -1)
            return self.head_logits(states.unsqueeze(1), labels).squeeze(1)
        return self._head(states)

    def output_probabilities(self, states: Tensor) -> Tensor:
        """The model's probabilities of the output space for states ``[N, D]``, columns as in
        :meth:`output_logits`: the softmax over *every* output of the head (a prompted
        model's label words keep their share of the whole vocabulary, as the network
        computes it, not a softmax renormalised over the label words)."""
        if self.task.kind is TaskKind.REGRESSION:
            raise InvalidInputError(
                "a regression model outputs a value, not probabilities; attribute its "
                "output with attributed_fn='logit'"
            )
        with self._swapped_projection(_Blocked):
            probabilities = self._head(states).softmax(-1)
        if self._label_token_ids is None:
            return probabilities
        return probabilities[:, self._label_token_ids.to(probabilities.device)]

    def all_logits(self, states: Tensor) -> Tensor:
        """Every output of the head for states ``[N, D]``: the whole vocabulary for language
        models (prompted ones included), the labels for classifiers."""
        return self._head(states)

    def full_output_columns(self, columns: Tensor) -> Tensor:
        """Target columns ``[B, K]`` as columns of :meth:`all_logits`: a prompted model's
        label indices become their label words' vocabulary ids; others are unchanged."""
        if self._label_token_ids is None:
            return columns
        return self._label_token_ids.to(columns.device)[columns]

    def layer_states(self, forward: ForwardResult, layers: Sequence[int]) -> Tensor:
        """States ``[B, len(layers), T, D]`` ready for the head.

        Decoders apply their final norm to every layer but the last (which transformers
        already returns normed), so the head sees states of the kind it was trained on.
        """
        last = self.num_layers
        norm = self.family.final_norm(self.model)
        states = []
        for layer in layers:
            state = forward.state(layer)
            if layer != last and norm is not None:
                state = norm(state)
            states.append(state)
        return torch.stack(states, dim=1)

    def head_logits(self, states: Tensor, columns: Tensor | None = None) -> Tensor:
        """The head applied to every token: states ``[B, ..., D]`` to ``[B, ..., K]``.

        ``columns`` ``[B, K]`` picks the outputs per row (label indices, label-word indices
        or vocabulary ids); ``None`` keeps all of a label head's outputs. Vocabulary heads
        compute only the requested columns.
        """
        if columns is not None:
            columns = columns.to(states.device)
        if self.task.over_vocabulary:
            if columns is None:
                raise InvalidInputError("a language-model head needs target tokens to score")
            if self._label_token_ids is not None:
                columns = self._label_token_ids.to(states.device)[columns]
            return self.vocabulary_logits(states, columns)
        lead = states.shape[:-1]
        logits = self._head(states.reshape(-1, states.shape[-1])).reshape(*lead, -1)
        return logits if columns is None else _gather_columns(logits, columns)

    def vocabulary_logits(self, states: Tensor, ids: Tensor) -> Tensor:
        """Logits of vocabulary ``ids`` ``[B, K]`` for states ``[B, ..., D]``."""
        lead = states.shape[:-1]
        flat = states.reshape(-1, states.shape[-1])
        union, inverse = torch.unique(ids.to(states.device), return_inverse=True)
        restricting = self._swapped_projection(
            lambda projection: _Columns(projection, union), self._restrict_columns
        )
        with restricting as restricted:
            logits = self._head(flat) if restricted else self._head(flat)[:, union]
        return _gather_columns(logits.reshape(*lead, union.numel()), inverse)

    @contextmanager
    def _swapped_projection(
        self, make: Callable[[nn.Linear], nn.Module], allowed: bool = True
    ) -> Iterator[bool]:
        """Swap the vocabulary projection for ``make(projection)`` inside (yields whether
        it could: the model has a linear projection, and ``allowed``)."""
        slot = self._projection_slot() if allowed else None
        if slot is None:
            yield False
            return
        parent, attribute, projection = slot
        setattr(parent, attribute, make(projection))
        try:
            yield True
        finally:
            setattr(parent, attribute, projection)

    def _projection_slot(self) -> tuple[nn.Module, str, nn.Linear] | None:
        projection = self.model.get_output_embeddings()
        if not isinstance(projection, nn.Linear):
            return None
        for module in self.model.modules():
            for child_name, child in module.named_children():
                if child is projection:
                    return module, child_name, projection
        return None

    # ------------------------------------------------------------- verification
    @torch.no_grad()
    def verify(self) -> None:
        """Refuse the model unless the head reproduces its own logits (to 1e-4)."""
        probe: TextInput = _PROBE
        if self.task.prompt is not None and self.task.prompt.takes_pairs:
            probe = ("Is the fox quick?", _PROBE)  # a prompt of (question, passage) pairs
        mask_position = None
        if self.task.kind is TaskKind.MASKED_LM:
            probe = f"The quick brown fox {self.tokenizer.mask_token} over the lazy dog."
            mask_position = None if self.tokenizer.mask_token else 1
        self.encoder.quiet = True  # load's own text: its truncation is no news to the user
        try:
            batch = self.encode([probe], mask_position=mask_position)
        finally:
            self.encoder.quiet = False
        expected = self._model_logits(batch)
        forward = self.forward(batch, layers=range(self.num_layers + 1))
        light = self.forward(batch)
        if not torch.equal(light.embeddings, forward.embeddings):
            self._first_layer = None  # the first block does not take hidden_states[0]
        if self.task.over_vocabulary:
            full = self._head(forward.final_states[0])
            got, want = full, expected[0]
            # the column-restricted path must agree with the full head too
            columns = torch.tensor([[0, want.shape[-1] - 1, int(want[-1].argmax())]])
            restricted = self.vocabulary_logits(forward.final_states, columns)[0]
            if not torch.allclose(restricted, full[:, columns[0]], atol=1e-5, rtol=1e-5):
                self._restrict_columns = False
        else:
            got, want = forward.logits[0], expected[0]
        if not (torch.isfinite(want).all() and torch.isfinite(got).all()):
            raise UnsupportedModelError(
                f"{type(self.model).__name__} computes non-finite logits (NaN or inf) on a "
                "plain sentence: its weights are broken (a diverged training run, a bad "
                "conversion or an overflowing dtype); load other weights, or float32"
            )
        scale = max(1.0, float(want.abs().max()))
        error = float((got - want).abs().max()) if got.shape == want.shape else float("inf")
        if not error <= VERIFY_TOLERANCE * scale:  # NaN fails too
            raise UnsupportedModelError(
                f"verification failed for {type(self.model).__name__} (model_type "
                f"{self.model.config.model_type!r}, family {self.family.name!r}): the "
                f"head-on-top applied to the final states differs from the model's own logits "
                f"by {error:.3g}; this architecture needs its own entry in "
                "normxlogit.model.families (see register_family)"
            )

    def _model_logits(self, batch: Batch) -> Tensor:
        logits = self.model(**self.backbone_inputs(batch.to(self.device))).logits
        if self.task.over_vocabulary:
            return logits  # [1, T, V]: every position
        return logits.reshape(1, -1)


def _wanted_rows(maps: Tensor, sink: AttentionSink) -> Tensor:
    """Maps ``[B, T, T]``, or the rows ``[B, R, T]`` the sink names in ``sink.rows``."""
    rows = getattr(sink, "rows", None)
    return maps if rows is None else rows_of(maps, rows)


def _gather_columns(logits: Tensor, columns: Tensor) -> Tensor:
    """Pick per-row columns ``[B, K]`` from ``[B, ..., C]`` logits."""
    lead = logits.shape[:-1]
    index = columns.view(columns.shape[0], *([1] * (len(lead) - 1)), columns.shape[1])
    return logits.gather(-1, index.expand(*lead, columns.shape[1]))


def _shown(text: TextInput) -> str:
    """A text as a message quotes it: repr, cut to 60 characters."""
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def check_model(model: Any, where: str) -> None:
    """Refuse, in one line, a first argument that is not a loaded model (a name, a
    transformers model): ``where`` names the function."""
    if isinstance(model, ExplainableModel):
        return
    hint = (
        f"load it first: {where}(normxlogit.load({model!r}), ...)"
        if isinstance(model, str)
        else "load it with normxlogit.load(name, folder or (model, tokenizer))"
    )
    raise InvalidInputError(
        f"{where}'s model is {'a str' if isinstance(model, str) else type(model).__name__}, "
        f"not a model from normxlogit.load(...); {hint}"
    )
