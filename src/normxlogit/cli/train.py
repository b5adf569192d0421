"""``normxlogit train``: a built-in recipe or a data file -> an adapter folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..common.progress import TerminalBar
from .app import app, out
from .helpers import err, friendly, once_each


@app.command(cls=once_each(seed="train once per seed, each to its own --output"))
@friendly
def train(
    task: Annotated[
        str,
        typer.Argument(
            help="The built-in model to train: minilm-sst2, minilm-stsb, minilm-mnli, "
            "minilm-qnli, minilm-blimp, smollm2-sst2, smollm2-stsb, smollm2-mnli, smollm2-qnli, "
            "smollm2-sst2-prompted, smollm2-boolq-prompted (sst2 and stsb: the MiniLM ones).",
            metavar="NAME",
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Folder to write the adapter to (default: ./normxlogit-NAME). A folder that "
            "holds other files is refused; a previous adapter there is replaced.",
        ),
    ] = None,
    overwrite_builtin: Annotated[
        bool,
        typer.Option(
            "--overwrite-builtin",
            help="Replace the built-in model's adapter inside the installed package "
            "(the built-in model changes); `make train` does this.",
        ),
    ] = False,
    train_size: Annotated[
        int | None,
        typer.Option(help="Training examples, at least 1 (default: the recipe's, mostly all)."),
    ] = None,
    epochs: Annotated[
        float | None, typer.Option(help="Epochs, above 0 (default: the recipe's).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed (default: the recipe's).")] = None,
    eval_size: Annotated[
        int | None,
        typer.Option(
            help="Score on the first N examples of the evaluation split (default: the "
            "recipe's, mostly all)."
        ),
    ] = None,
    shuffle_labels: Annotated[
        bool,
        typer.Option(
            "--shuffle-labels",
            help="Permute the training labels across the examples (the model `normxlogit "
            "sanity --mode data` compares with).",
        ),
    ] = False,
) -> None:
    """Train a built-in adapter from ../shared/data (or $NORMXLOGIT_DATA).

    Writes ./normxlogit-NAME (or --output); the built-in model in the installed package is
    replaced only with --overwrite-builtin. Everything is checked before training starts,
    and the adapter is written to a temporary folder and renamed into place when complete.
    """
    import json

    from ..training import check_output, check_recipe
    from ..training import train as run_training

    overrides = {
        key: value
        for key, value in {
            "train_size": train_size,
            "epochs": epochs,
            "seed": seed,
            "eval_size": eval_size,
            "shuffle_labels": shuffle_labels or None,
        }.items()
        if value is not None
    }
    check_recipe(task, overrides, flags=True)  # refusals before torch is even imported
    target = check_output(task, output, overwrite_builtin)
    with TerminalBar(
        "training", unit="steps", elapsed=True, force=True, transient=False, console=err
    ) as bar:
        manifest = run_training(
            task,
            target,
            overrides,
            log=err.print,
            overwrite_builtin=overwrite_builtin,
            progress=bar.update,
        )
    out.print(json.dumps(manifest["dev_metrics"]))
