"""``normxlogit sanity``: model parameter (or data) randomisation checks of methods."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Annotated

import typer

from ..common.errors import InvalidInputError
from ..common.input_paths import check_input_file
from ..common.outputs import (
    check_output_file,
    quoted_name,
    refuse_blank_edges,
    refuse_input_as_output,
    refuse_suffix_only,
    suffix_tail_hint,
)
from .app import (
    DtypeOption,
    MethodOptionsOption,
    MethodsOption,
    ModelOption,
    app,
    at_least,
    options_by_method,
    out,
)
from .helpers import (
    err,
    friendly,
    once_each,
    refuse_missing_tagger,
    refuse_model_file,
    refuse_reagent_model,
)


@app.command(
    cls=once_each(
        model="check each model in its own run",
        mode="run once per mode",
        seed="run once per seed",
        preset="run once per preset",
        shuffled="run once per shuffled model",
        top_k="run once per --top-k",
    )
)
@friendly
def sanity(
    data: Annotated[
        Path,
        typer.Argument(
            help="Texts to explain: .tsv/.csv/.jsonl with a text column, or one text per line."
        ),
    ],
    model: ModelOption = "",
    dtype: DtypeOption = None,
    method: MethodsOption = None,
    option: MethodOptionsOption = None,
    mode: Annotated[
        str,
        typer.Option(
            help="cascading (the head, then blocks last to first, then embeddings, one after "
            "another), independent (one group at a time), or data (against --shuffled)."
        ),
    ] = "cascading",
    preset: Annotated[
        str | None,
        typer.Option(
            help="The definition: quantus-mprt (Quantus 0.6.0's MPRT: every module with "
            "reset_parameters from the last, PyTorch's initialisation, |scores| over every "
            "token; use --seed 42 for its draws). Default: the project's."
        ),
    ] = None,
    units: Annotated[
        str | None,
        typer.Option(help="groups (head, blocks, embeddings) or modules (Quantus's)."),
    ] = None,
    init: Annotated[
        str | None,
        typer.Option(help="model (its own _init_weights) or reset_parameters (PyTorch's)."),
    ] = None,
    tokens: Annotated[
        str | None,
        typer.Option(help="content (special tokens left out) or all (compared too)."),
    ] = None,
    shuffled: Annotated[
        str | None,
        typer.Option(help="With --mode data: the same recipe trained on shuffled labels."),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="Use only the first N texts (default: all).")
    ] = None,
    top_k: Annotated[int, typer.Option("--top-k", help="Tokens of the top-k overlap.")] = 5,
    absolute: Annotated[
        bool | None,
        typer.Option(
            "--absolute/--signed", help="Compare the scores' magnitudes (default: the preset's)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the re-initialisation and methods.")] = 0,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass.")] = 16,
    plot: Annotated[
        Path | None, typer.Option(help="Write the similarity-by-depth figure here (.png).")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write every text's similarities here (.csv, .parquet, or .json with the "
            "settings: SanityResult.load reads it back).",
        ),
    ] = None,
) -> None:
    """Check that explanations change when the model does (Adebayo et al., 2018): explain
    DATA, re-initialise the model's weights from the top (or use a model trained on
    shuffled labels), explain again, and report each method's similarity to itself."""
    at_least(limit, 1, "--limit")
    at_least(top_k, 1, "--top-k")
    at_least(batch_size, 1, "--batch-size")
    if mode not in ("cascading", "independent", "data"):
        raise InvalidInputError(f"--mode {mode!r} is not one of: cascading, independent, data")
    if (mode == "data") != (shuffled is not None):
        raise InvalidInputError(
            "--mode data compares with --shuffled MODEL (trained on shuffled labels); "
            "the other modes randomise --model itself and take no --shuffled"
        )
    if mode == "data" and (units is not None or init is not None):
        raise InvalidInputError("--mode data randomises nothing: --units and --init do not apply")
    if shuffled is not None:
        _refuse_unshuffled(shuffled)
    # every output checked before any work: its name, its folder, and what writes it
    if plot is not None:
        refuse_suffix_only(plot, "--plot", (".png",))
        if plot.suffix.lower() != ".png":
            raise InvalidInputError(
                f"--plot {str(plot)!r}: the figure is a PNG; give the file a .png name"
                f"{suffix_tail_hint(plot, ('.png',))}"
            )
        check_output_file(plot, "--plot", example="sanity.png")
        if importlib.util.find_spec("matplotlib") is None:
            raise InvalidInputError(
                "--plot: the sanity figure is drawn with matplotlib: pip install "
                "'normxlogit[bench]', or leave out --plot"
            )
    if output is not None:
        fmt = _output_format(output)
        check_output_file(output, "--output", example="sanity.csv")
        if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
            raise InvalidInputError(
                "--output: Parquet is written with pyarrow: pip install 'normxlogit[bench]', "
                "or write a .csv"
            )
    check_input_file(data, "data file", "pass a data file (.tsv, .csv, .jsonl, .txt)")
    if output is not None:
        refuse_input_as_output(
            output, data, "--output", "the data file", "write the similarities to another file"
        )
    if plot is not None:
        refuse_input_as_output(
            plot, data, "--plot", "the data file", "draw the figure to another file"
        )
    refuse_model_file(output, model, "--output")
    refuse_model_file(plot, model, "--plot")

    from ..builtin import DEFAULT_MODEL
    from ..common.numbering import lines_of, texts_named
    from ..data import read_examples
    from ..loading import load
    from ..methods import method_class
    from ..model.precision import resolve_dtype
    from ..sanity import data_randomization, parameter_randomization, sanity_definition

    try:  # refused before loading, in the flags' names
        sanity_definition(preset, units=units, init=init, tokens=tokens)
    except InvalidInputError as error:
        raise InvalidInputError(_flagged(str(error))) from None
    methods = method or ["normxlogit", "random"]
    _refuse_repeated(methods)
    for name in methods:  # an unknown method is refused before the model loads
        method_class(name)
    options_of = options_by_method(option or [], methods)
    from ..workflows import methods_by_name

    built = {name: methods_by_name([name], seed, options_of[name])[name] for name in methods}
    if any(options_of.values()):  # built with their options (and seeded) before loading
        methods = built
    refuse_missing_tagger(built.values(), None, "several")
    examples = read_examples(data, limit)
    texts = [example.text for example in examples]
    with texts_named(lines_of(str(data), [example.line for example in examples])):
        precision = resolve_dtype(dtype) if dtype is not None else None
        loaded = load(model or DEFAULT_MODEL, dtype=precision)
        refuse_missing_tagger(built.values(), loaded.tokenizer, "several")
        refuse_reagent_model(built.values(), loaded, "several", option or [])
        settings = {"top_k": top_k, "seed": seed, "batch_size": batch_size}
        settings |= {"preset": preset, "tokens": tokens, "absolute": absolute}
        if mode == "data":
            other = load(shuffled, dtype=precision)
            result = data_randomization(loaded, other, texts, methods, **settings)
        else:
            result = parameter_randomization(
                loaded,
                texts,
                methods,
                mode=mode,
                units=units,
                init=init,
                progress=lambda line: err.print(line),
                **settings,
            )
    out.print(result.summary().round(3).to_string(index=False, na_rep="n/a"))
    verdicts = result.verdicts()
    notes = verdicts.pop("note")
    verdicts["passes"] = ["n/a" if passes is None else str(passes) for passes in verdicts["passes"]]
    out.print(verdicts.round(3).to_string(index=False, na_rep="n/a"))
    for name, tested, note in zip(verdicts["method"], verdicts["mode"], notes, strict=True):
        if note:  # why a verdict is n/a, or how many texts it leaves out
            err.print(f"{name} ({tested}): {note}", soft_wrap=True)
    if mode != "data":
        means = result.averages().groupby(["method", "mode"], sort=False)
        columns = means[["mean_spearman", "quantus_mean_spearman"]].mean().round(3)
        out.print(columns.to_string(na_rep="n/a"))
    if output is not None:
        result.save(output)
        err.print(f"wrote {quoted_name(output)}")
    if plot is not None:
        result.plot(plot)
        err.print(f"wrote {quoted_name(plot)}")


#: the definition's keywords, which these flags pass
_DEFINITION_FLAGS = re.compile(r"^(preset|units|init|tokens)=")


def _flagged(message: str) -> str:
    """A refusal of the definition (``preset='x' is not one of ...``) with the flag named."""
    return _DEFINITION_FLAGS.sub(lambda found: f"--{found[1]} ", message)


def _refuse_repeated(methods: list[str]) -> None:
    """A --method given twice: its rows would replace the other's. The command line has one
    setting per method name, so two settings are two runs."""
    twice = sorted({name for name in methods if methods.count(name) > 1})
    if twice:
        raise InvalidInputError(
            f"--method {', '.join(twice)} is given more than once; give each --method once "
            "(to compare two settings of one method, run sanity twice with --option)"
        )


def _refuse_unshuffled(shuffled: str) -> None:
    """An adapter whose manifest says it was trained on the true labels would make the
    data randomisation test compare two trained models and call that "shuffled"; a
    folder without a manifest (or a hub model) cannot tell, and is taken as given."""
    from ..builtin.adapters import MANIFEST

    path = Path(shuffled) / MANIFEST
    try:
        import json

        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    recipe = manifest.get("recipe") if isinstance(manifest, dict) else None
    if isinstance(recipe, dict) and recipe.get("shuffle_labels") is not True:
        raise InvalidInputError(
            f"--shuffled {shuffled}: its {MANIFEST} says it was trained on the true labels "
            "(shuffle_labels is not true); train the shuffled model with `normxlogit train "
            "TASK --shuffle-labels -o FOLDER` and pass that folder"
        )


def _output_format(path: Path) -> str:
    """``--output``'s format from its suffix (.csv, .parquet, .json); another is refused."""
    refuse_blank_edges(path, "--output")  # "r.csv ": the blank named
    refuse_suffix_only(path, "--output", (".csv", ".parquet", ".json"))
    suffix = path.suffix.lower()
    if suffix in (".csv", ".parquet", ".json"):
        return suffix[1:]
    said = f"the suffix {suffix!r}" if suffix else "a name without a suffix"
    raise InvalidInputError(
        f"--output {path}: cannot tell the format from {said}; end the name in .csv, .parquet "
        "or .json (the rows and the settings)"
    )
