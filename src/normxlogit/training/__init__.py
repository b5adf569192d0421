"""Train the small LoRA adapters of the built-in models from the shared data.

``normxlogit train NAME`` runs the recipe of the built-in ``NAME`` (see
:mod:`.recipes`: ``minilm-sst2``, ``smollm2-sst2``, ``smollm2-sst2-prompted``...; ``sst2``
and ``stsb`` are aliases of the MiniLM ones): a LoRA adapter plus a trained head (or, for
a prompted model, the adapter alone), saved in peft's format with a ``normxlogit.json``
manifest (labels, recipe, train size, the measured score, seconds). Seeds make runs
repeatable on the same machine.

The package's parts: :mod:`.recipes` (what each built-in is trained from),
:mod:`.loop` (the shared loop), :mod:`.classifier` and :mod:`.prompted` (the two
objectives), :mod:`.writing` (where the adapter goes, written atomically).

Importing this package is cheap: torch, transformers and peft are imported when training
starts, after the checks.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, replace

from ..builtin.adapters import MASKED_LM, PROMPTED, base_model
from ..builtin.sources import WEIGHTS_DIR
from ..common.errors import InvalidInputError
from ..data.files import DATA_ENV
from .classifier import SequenceClassification, evaluate_dev
from .loop import batches, optimise, seed_everything
from .recipes import (
    ALIASES,
    OVERRIDABLE,
    READERS,
    RECIPES,
    TrainingRecipe,
    check_recipe,
    get_recipe,
    resolve_name,
)
from .writing import PACKAGE_DIR, builtin_output, check_output, default_output, write_adapter

__all__ = [
    "ALIASES",
    "OVERRIDABLE",
    "PACKAGE_DIR",
    "READERS",
    "RECIPES",
    "WEIGHTS_DIR",
    "TrainingRecipe",
    "batches",
    "build_model",
    "builtin_output",
    "check_output",
    "check_recipe",
    "default_output",
    "evaluate_dev",
    "get_recipe",
    "resolve_name",
    "train",
    "write_adapter",
]


#: peft's task type per recipe task (a masked LM's is none: peft's generic model)
_PEFT_TASKS = {PROMPTED: "CAUSAL_LM", MASKED_LM: None}


def build_model(recipe: TrainingRecipe):
    """The recipe's base with a fresh head (or none: prompted), wrapped with a LoRA
    adapter, and its tokenizer."""
    from peft import LoraConfig, get_peft_model

    from ..builtin.quiet import quiet_transformers

    model, tokenizer = base_model(recipe.base, recipe.task, recipe.labels)
    config = LoraConfig(
        r=recipe.lora_rank,
        lora_alpha=recipe.lora_alpha,
        lora_dropout=recipe.lora_dropout,
        target_modules=list(recipe.target_modules),  # copies: peft adds to its lists
        modules_to_save=list(recipe.modules_to_save) or None,
        task_type=_PEFT_TASKS.get(recipe.task, "SEQ_CLS"),
    )
    with quiet_transformers():
        return get_peft_model(model, config), tokenizer


def _objective(model, tokenizer, recipe: TrainingRecipe):
    if recipe.task == PROMPTED:
        from .prompted import PromptedAnswer

        return PromptedAnswer(model, tokenizer, recipe)
    if recipe.task == MASKED_LM:
        from .masked import MaskedChoice

        return MaskedChoice(model, tokenizer, recipe)
    return SequenceClassification(model, tokenizer, recipe)


def _read(recipe: TrainingRecipe, split: str, size: int | None, rng=None):
    try:
        examples = READERS[recipe.dataset](split)
    except InvalidInputError as error:  # a missing staged file: "pass path=" is no option here
        missing = getattr(error, "data_file", None)
        if missing is None:
            raise
        raise InvalidInputError(
            f"data file {missing} not found; training {recipe.name} reads the "
            f"{recipe.train_split} and {recipe.eval_split} splits of {recipe.dataset} from "
            f"the shared data: set ${DATA_ENV} to the folder that holds "
            f"{error.data_folder}/ (train takes no path of its own; put your copy there "  # type: ignore[attr-defined]
            "under the same names)"
        ) from None
    if not examples:
        raise InvalidInputError(f"the {split} split of {recipe.dataset} holds no examples")
    if size is not None and size < len(examples):
        return rng.sample(examples, size) if rng is not None else examples[:size]
    return examples


def _finite(metrics: dict, split: str, log: Callable[[str], None]) -> dict:
    """``metrics`` with a value that is no finite number (a Pearson correlation of constant
    predictions or constant gold scores is NaN) as None, so normxlogit.json stays standard
    JSON (null), with a warning naming it."""
    kept = dict(metrics)
    for key, value in metrics.items():
        if isinstance(value, float) and not math.isfinite(value):
            kept[key] = None
            log(
                f"warning: {split} {key} is {value} (constant predictions or gold values, or "
                "a training that diverged); recorded as null"
            )
    return kept


def shuffled_labels(examples: list, rng: random.Random) -> list:
    """The examples with their labels permuted among them: the same texts and the same
    label counts, but no label belongs to its text any more."""
    labels = [example.label for example in examples]
    rng.shuffle(labels)
    return [replace(example, label=label) for example, label in zip(examples, labels, strict=True)]


def _warn_one_class(train_set: list, recipe: TrainingRecipe, log: Callable[[str], None]) -> None:
    """A classifier trained on examples of one label learns to answer that label whatever
    the text: its explanations explain a constant. Said, not refused (a sanity check's data
    randomisation may want exactly that)."""
    if len(recipe.labels) < 2:  # a regressor
        return
    seen = {example.label for example in train_set}
    if len(seen) == 1:
        (label,) = seen
        name = (
            recipe.labels[label]
            if isinstance(label, int) and 0 <= label < len(recipe.labels)
            else label
        )
        log(
            f"warning: all {len(train_set)} training examples are labelled {name!r}, so the "
            f"model can learn only that label; raise --train-size (overrides train_size in "
            f"Python; now {recipe.train_size}) or check the data"
        )


def _refuse_diverged(model, recipe) -> None:
    """A training whose loss went NaN leaves NaN weights; written, the adapter would load
    and explain with NaN everywhere. Nothing is written instead."""
    import torch

    broken = sum(int((~torch.isfinite(p)).sum()) for p in model.parameters() if p.requires_grad)
    if broken:
        raise InvalidInputError(
            f"training {recipe.name} diverged: {broken} of the adapter's trained weights are "
            "NaN or infinite, so nothing was written; train with a lower learning rate "
            f"(overrides={{'learning_rate': {recipe.learning_rate / 10:g}}} in Python), or "
            "check the data for extreme values"
        )


def train(
    task: str,
    output: str | os.PathLike | None = None,
    overrides: dict | None = None,
    log: Callable[[str], None] = print,
    *,
    overwrite_builtin: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Train one built-in adapter and write it (with its manifest) to ``output``.

    Args:
        task: the built-in model to train (``minilm-sst2``, ``smollm2-stsb``...) or an
            alias (``sst2``, ``stsb``).
        output: the folder to write (default ``./normxlogit-<task>``); see
            :func:`check_output` for what is refused, before any work.
        overrides: recipe settings to change (``train_size`` >= 1, ``epochs`` > 0, ``seed``...).
        overwrite_builtin: write the package's own adapter (the built-in model changes).
        progress: called with ``(steps done, total steps)`` after every step.

    Returns the manifest written: the recipe, the train size, the score on the evaluation
    split (``dev_metrics``; ``eval_split`` says which split), and the seconds taken.
    """
    recipe = check_recipe(task, overrides)
    target = check_output(task, output, overwrite_builtin)
    seed_everything(recipe.seed)
    rng = random.Random(recipe.seed)
    train_set = _read(recipe, recipe.train_split, recipe.train_size, rng)
    if recipe.shuffle_labels:
        train_set = shuffled_labels(train_set, rng)
    eval_set = _read(recipe, recipe.eval_split, recipe.eval_size)

    model, tokenizer = build_model(recipe)
    objective = _objective(model, tokenizer, recipe)
    train_set, eval_set = objective.select(train_set), objective.select(eval_set)
    if recipe.balance_classes:
        objective.balance(train_set)
    _warn_one_class(train_set, recipe, log)
    log(f"training {recipe.name} on {len(train_set)} examples; writing {target}")
    baseline = None
    if recipe.zero_shot_baseline:  # the LoRA update starts at zero: this is the base model
        log(f"scoring the untuned model on {len(eval_set)} {recipe.eval_split} examples")
        baseline = _finite(objective.evaluate(eval_set), recipe.eval_split, log)
        log(f"untuned: {baseline}")

    start = time.time()
    optimise(model, objective, train_set, recipe, rng, log, progress)
    _refuse_diverged(model, recipe)
    trained = time.time()
    log(f"evaluating on {len(eval_set)} {recipe.eval_split} examples")
    metrics = _finite(objective.evaluate(eval_set), recipe.eval_split, log)
    elapsed = time.time() - start
    log(f"{recipe.eval_split} {metrics} after {elapsed:.0f}s")
    # record the base by package name, not by this machine's folder
    model.peft_config["default"].base_model_name_or_path = recipe.base
    manifest = {
        "name": recipe.name,
        "base": recipe.base,
        "task": recipe.task,
        "labels": recipe.labels,
    }
    if recipe.task == PROMPTED:
        manifest["label_words"] = objective.words
        manifest["prompt"] = objective.prompt.to_dict()
    manifest.update(
        {
            "dataset": recipe.dataset,
            "train_split": recipe.train_split,
            "eval_split": recipe.eval_split,
            "dev_metrics": metrics,
            "eval_examples": len(eval_set),
            "train_examples": len(train_set),
            "train_seconds": round(trained - start),
            "eval_seconds": round(elapsed - (trained - start)),
        }
    )
    if baseline is not None:
        manifest["zero_shot_metrics"] = baseline
    manifest["recipe"] = asdict(recipe)
    write_adapter(model, manifest, target)
    log(f"wrote {target}")
    return manifest
