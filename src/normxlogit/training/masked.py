"""A masked LM tuned to choose a BLiMP pair's target token over its foil.

The NormXLogit paper's fine-tuned setting (section 5): the target word of the good
sentence is replaced by the mask token and the model is optimised to choose the target
over the foil. The loss is the masked LM's cross-entropy over the whole vocabulary for the
target at the mask (it keeps the head a language model over every word, which LogAt of an
unrelated word reads) plus the cross-entropy of target against foil (the choice the paper
trains). Pairs that are not one token apart for the tokenizer are left out (counted by
:meth:`MaskedChoice.select`). Accuracy: the target's logit above the foil's, per paradigm.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..common.errors import InvalidInputError
from ..data.blimp import BlimpPair
from ..data.masked_pairs import MaskedPair, mask_pairs
from .loop import by_length
from .recipes import TrainingRecipe

EVAL_BATCH = 64


class MaskedChoice:
    """Train and score a masked LM on BLiMP pairs (target vs foil at the mask)."""

    def __init__(self, model, tokenizer, recipe: TrainingRecipe):
        self.model, self.tokenizer, self.recipe = model, tokenizer, recipe
        self.masked: dict[tuple[str, int], MaskedPair] = {}
        self.skipped: dict[str, int] = {}

    def select(self, pairs: Sequence[BlimpPair]) -> list[BlimpPair]:
        """The pairs one token apart for the tokenizer (the others are counted in
        ``skipped``, per paradigm)."""
        masked, skipped = mask_pairs(pairs, self.tokenizer)
        for item in masked:
            self.masked[item.pair.paradigm, item.pair.pair_id] = item
        for paradigm, count in skipped.items():
            self.skipped[paradigm] = self.skipped.get(paradigm, 0) + count
        if not masked:
            raise InvalidInputError(
                "no BLiMP pair differs in exactly one token for this tokenizer; nothing to train"
            )
        return [item.pair for item in masked]

    def balance(self, examples: Sequence[BlimpPair]) -> None:
        """Pairs carry no labels to balance: target and foil are both in every pair."""

    def _item(self, pair: BlimpPair) -> MaskedPair:
        return self.masked[pair.paradigm, pair.pair_id]

    def lengths(self, examples: Sequence[BlimpPair]) -> list[int]:
        return [len(self.tokenizer(self._item(p).text)["input_ids"]) for p in examples]

    def mask_logits(self, batch: Sequence[BlimpPair]):
        """Vocabulary logits ``[B, V]`` at each pair's mask token."""
        items = [self._item(pair) for pair in batch]
        encoded = self.tokenizer(
            [item.text for item in items],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=self.recipe.max_length,
        )
        network = self.model
        if hasattr(network, "get_base_model"):  # peft's wrapper: the LoRA-injected model
            network = network.get_base_model()
        states = network.base_model(**encoded).last_hidden_state
        rows, positions = (encoded["input_ids"] == self.tokenizer.mask_token_id).nonzero(
            as_tuple=True
        )
        if len(rows) != len(items):
            raise InvalidInputError("every masked BLiMP sentence must hold one mask token")
        return self.head(network)(states[rows, positions])

    @staticmethod
    def head(network):
        """The masked LM head, as the library's family resolver finds it (the model
        explained later reads the same head)."""
        from ..model.families.registry import resolve_family

        head = resolve_family(network).lm_head(network)
        if head is None:
            raise InvalidInputError(f"{type(network).__name__} has no masked LM head")
        return head

    def _ids(self, batch: Sequence[BlimpPair]):
        import torch

        items = [self._item(pair) for pair in batch]
        return torch.tensor([[item.target_id, item.foil_id] for item in items])

    def loss(self, batch: Sequence[BlimpPair]):
        import torch
        import torch.nn.functional as F

        logits = self.mask_logits(batch).float()
        ids = self._ids(batch)
        vocabulary = F.cross_entropy(logits, ids[:, 0])
        choice = F.cross_entropy(logits.gather(1, ids), torch.zeros(len(batch), dtype=torch.long))
        return vocabulary + choice

    def evaluate(self, examples: Sequence[BlimpPair]) -> dict[str, Any]:
        """Accuracy (target logit above foil logit), overall and per paradigm, and how
        often the target is the head's top word over the whole vocabulary."""
        import torch

        self.model.eval()
        lengths = self.lengths(examples)
        right: dict[str, list[bool]] = defaultdict(list)
        top = 0
        with torch.no_grad():
            for _, batch in by_length(examples, lengths, EVAL_BATCH):
                logits = self.mask_logits(batch).float()
                ids = self._ids(batch)
                chosen = logits.gather(1, ids)
                top += int((logits.argmax(-1) == ids[:, 0]).sum())
                for pair, (target, foil) in zip(batch, chosen.tolist(), strict=True):
                    right[pair.paradigm].append(target > foil)
        total = sum(len(values) for values in right.values())
        return {
            "accuracy": sum(sum(values) for values in right.values()) / total,
            "per_paradigm": {
                paradigm: sum(values) / len(values) for paradigm, values in sorted(right.items())
            },
            "top1": top / total,
            "pairs": {paradigm: len(values) for paradigm, values in sorted(right.items())},
            "left_out": dict(sorted(self.skipped.items())),
        }
