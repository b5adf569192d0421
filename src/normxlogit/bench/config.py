"""A benchmark grid read from a TOML file: experiments x methods x metrics x seeds.

A config names *experiments* (a model on a dataset split), the *methods* with their
options, the *metrics*, the evaluation *protocol* and the *seeds*; top-level lists apply
to every experiment and an experiment may narrow or change them::

    title = "SST-2 comprehensiveness"
    seeds = [0]
    metrics = ["comp_cd", "suff_cd"]
    methods = ["normxlogit", "random"]          # or [[methods]] tables, below

    [protocol]                                   # Protocol settings (seed comes from seeds)
    samples = 5

    [[methods]]
    name = "integrated_gradients"
    label = "IG"                                 # how tables name it (default: name)
    options = { steps = 50 }

    [[experiments]]
    model = "minilm-sst2"
    dataset = "sst2"
    split = "dev"
    limit = 200

    [[tables]]                                   # what `bench report` renders
    title = "Comprehensiveness (AOPC)"
    metric = { sst2 = "comp_cd", stsb = "comp_acc" }

Everything is checked when the file is read (unknown keys, methods, metrics, options,
datasets, protocol settings), so a typo fails in a second, not after an hour. Nothing
heavy is imported: methods and metrics are checked by name through their registries.
"""

from __future__ import annotations

import json
import math
import os
import sys
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..common.errors import (
    InvalidFileError,
    InvalidInputError,
    InvalidOptionError,
    NormXLogitError,
    UnknownModelError,
)
from ..common.fields import name_problem, unseen_in_name
from ..common.input_paths import (
    bare_name,
    blank_edge_hint,
    check_input_file,
    decode_utf8,
    own_folder,
)
from ..common.options import check_magnitude, toml_spelling
from ..common.outputs import type_phrase
from ..common.targets import ALL, PREDICTION, requested_target
from ..model.precision import dtype_name
from .model_refs import model_ref
from .spec import (
    AVERAGE_ROW,
    CONFIG_OPTION_FIX,
    TARGET_KINDS,
    VERSUS_BEST,
    BenchConfig,
    DatasetSpec,
    Experiment,
    MethodSpec,
    PlotSpec,
    TableSpec,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TOP_KEYS = {
    "title",
    "description",
    "seeds",
    "metrics",
    "methods",
    "protocol",
    "experiments",
    "batch_size",
    "rows_per_forward",
    "tokens_per_forward",
    "max_tokens_per_batch",
    "chunk_size",
    "dtype",
    "tables",
    "plots",
    "segments",
    "segment_reduce",
}
EXPERIMENT_KEYS = {
    "model",
    "dtype",
    "dataset",
    "split",
    "limit",
    "path",
    "options",
    "name",
    "methods",
    "metrics",
    "protocol",
    "batch_size",
    "rows_per_forward",
    "tokens_per_forward",
    "max_tokens_per_batch",
    "max_new_tokens",
    "evaluate_every",
    "target",
    "layer",
    "segments",
    "segment_reduce",
}
METHOD_KEYS = {
    "name",
    "label",
    "options",
    "preset",
    "target",
    "layer",
    "contrast",
    "segment_reduce",
}
#: where an experiment's segments come from: each text split into sentences, or the
#: segments the data set gives each instance (boolq with passage = "sentences")
SEGMENT_SOURCES = ("sentences", "data")
TABLE_KEYS = {
    "title",
    "metric",
    "rows",
    "groups",
    "columns",
    "name",
    "average",
    "standard_error",
    "paper",
    "paper_note",
}
PLOT_KEYS = {"title", "metric", "name", "kind"}


def load_config(path: str | Path) -> BenchConfig:
    """Read and check a bench config; every problem names the file and the key."""
    path = Path(path)
    check_input_file(path, "bench config", "pass a bench config file (.toml)", InvalidFileError)
    # a byte-order mark (a Windows editor's UTF-8) is skipped, as the data readers do;
    # UTF-16 and other encodings are refused with the byte and how to re-encode
    text = decode_utf8(path.read_bytes(), str(path), f"`iconv -t utf-8 {path.name}`")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InvalidFileError(f"{path} is not valid TOML: {error}{toml_fix(error)}") from None
    try:
        return parse_config(data, path)
    except NormXLogitError as error:
        raise type(error)(f"{path}: {error}") from None


#: the keys a config may give as [[key]] tables (each key path as tomllib names it)
TABLE_ARRAYS = {
    ("methods",),
    ("experiments",),
    ("tables",),
    ("plots",),
    ("experiments", "methods"),
}


def toml_fix(
    error: Exception,
    tables: frozenset | set = frozenset(TABLE_ARRAYS),
    keys: frozenset | set | None = None,
    examples: Mapping[str, Any] | None = None,
    document: str = "the config",
) -> str:
    """How to mend what tomllib refuses in its own words, where those name no fix: a key
    given both as a list (``methods = [...]``) and as tables (``[[methods]]``); else "".
    The whole dotted key is named (``[[experiments.methods]]``), and "each as a table" is
    offered only for the keys in ``tables`` (a list of names or numbers takes none).
    ``keys``: every key ``document`` has (a config's, by default); those of them that
    take neither a list nor a table nor a string take one value, advised as
    ``examples`` (added to a config's) shows it."""
    import re

    found = re.search(r"immutable namespace \(((?:'[^']*',? ?)+)\)", str(error))
    if found is None:
        return ""
    parts = tuple(re.findall(r"'([^']*)'", found.group(1)))
    key, dotted = parts[-1], ".".join(parts)
    named = f"an experiment's {key}" if len(parts) == 2 and parts[0] == "experiments" else dotted
    said = f"; {named} is given both as a list ({key} = [...]) and as [[{dotted}]] tables"
    if parts in tables:
        return f"{said}: write them all one way (all in the list, or each as a [[{dotted}]] table)"
    if key in ONE_TABLE_KEYS:  # protocol, a table's paper, a method's or data set's options
        return f"{said}, and {named} is a table: write it once as [{dotted}] (or {key} = {{ ... }})"
    if key in STRING_KEYS:  # an experiment's dataset, say
        return f'{said}, and {named} is a string: write it once, as {key} = "..."'
    if key in one_value_keys(CONFIG_KEYS if keys is None else keys):
        # a method's layer or preset, an experiment's limit, a table's columns
        shown = one_value_example(key, examples)
        return f"{said}, and {named} takes one value: write it once, as {shown}"
    return f"{said}, and [[{dotted}]] is no table {document} has: give them all in the list"


#: the keys a config gives as one table (never a list): toml_fix advises one table
ONE_TABLE_KEYS = frozenset({"protocol", "paper", "options"})
#: the keys a config (or a queue) gives as one string: toml_fix advises the string
STRING_KEYS = frozenset(
    {"title", "description", "model", "dataset", "name", "dtype", "split", "path", "kind"}
    | {"label", "paper_note", "metric", "store", "config", "why", "continuations"}
    | {"target", "contrast", "rows", "groups"}
)
#: the keys a config (or a queue) gives as a list: of values, or of [[key]] tables
LIST_KEYS = frozenset({"seeds", "metrics", "methods", "experiments", "tables", "plots", "entries"})
#: every key a config has, at any level
CONFIG_KEYS = frozenset(TOP_KEYS | EXPERIMENT_KEYS | METHOD_KEYS | TABLE_KEYS | PLOT_KEYS)


def one_value_keys(keys: frozenset | set) -> frozenset:
    """Those of ``keys`` (a document's keys) given as one value: a number, a word, a
    boolean (none of a list's, a table's or a string's)."""
    return frozenset(keys) - LIST_KEYS - ONE_TABLE_KEYS - STRING_KEYS


def one_value_example(key: str, examples: Mapping[str, Any] | None = None) -> str:
    """``key`` with a value it takes, as TOML writes it (``columns = "model"``,
    ``average = true``): from ``examples``, else a config's defaults and choices."""
    from ..explanations.segments import SEGMENT_REDUCTIONS
    from ..methods.presets import PRESETS

    values: dict[str, Any] = {
        "layer": 0,
        "limit": 100,
        "batch_size": 16,
        "chunk_size": 64,
        "rows_per_forward": 64,
        "tokens_per_forward": 4096,
        "max_tokens_per_batch": 8192,
        "max_new_tokens": 32,
        "evaluate_every": 5,
        "segments": SEGMENT_SOURCES[0],
        "segment_reduce": SEGMENT_REDUCTIONS[0],
        "preset": next(iter(PRESETS), "..."),
        "columns": AXIS_DEFAULTS["columns"],
        "average": True,
        "standard_error": True,
        **(examples or {}),
    }
    value = values.get(key, "...")
    if isinstance(value, bool):
        return f"{key} = {str(value).lower()}"
    if isinstance(value, str) and value != "...":
        return f"{key} = {toml_string(value)}"
    return f"{key} = {value}"


def parse_config(data: Mapping[str, Any], path: Path) -> BenchConfig:
    """A config from its parsed TOML (see the module docstring for the keys)."""
    _known(data, TOP_KEYS, "the config")
    seeds = tuple(_int_list(data.get("seeds", [0]), "seeds"))
    if not seeds:
        raise InvalidInputError("'seeds' is empty; give at least one seed, e.g. seeds = [0]")
    for seed in seeds:  # the range a run's protocol takes, refused now rather than mid-run
        check_magnitude(seed, "'seeds' value")
    sizes = {
        "batch_size": _positive(data.get("batch_size", 16), "batch_size"),
        "rows_per_forward": _optional_positive(data.get("rows_per_forward"), "rows_per_forward"),
        "tokens_per_forward": _optional_positive(
            data.get("tokens_per_forward"), "tokens_per_forward"
        ),
        "max_tokens_per_batch": _optional_positive(
            data.get("max_tokens_per_batch"), "max_tokens_per_batch"
        ),
    }
    chunk_size = _positive(data.get("chunk_size", 64), "chunk_size")
    dtype = _dtype(data.get("dtype"), "dtype")
    methods = _methods(data.get("methods", []), "methods")
    metrics = _metrics(data.get("metrics", []), "metrics")
    protocol = _protocol(data.get("protocol", {}), "protocol")
    segmenting = _segmenting(data, "the config")
    raw_experiments = data.get("experiments")
    if isinstance(raw_experiments, dict):  # [experiments]: one experiment, as a plain table
        raise InvalidInputError(
            "experiments is one table ([experiments]); write each experiment as an "
            "[[experiments]] table (double brackets)"
        )
    if not isinstance(raw_experiments, list) or not raw_experiments:
        raise InvalidInputError(
            "no [[experiments]]; add at least one, e.g. [[experiments]] model = "
            '"minilm-sst2" dataset = "sst2"'
        )
    experiments = []
    for number, raw in enumerate(raw_experiments, start=1):
        where = f"experiment {number}"
        if not isinstance(raw, dict):
            raise InvalidInputError(f"{where} must be a table ([[experiments]])")
        experiments.append(
            _experiment(
                raw, own_folder(path), where, methods, metrics, protocol, sizes, dtype, segmenting
            )
        )
    _warn_unread_settings(experiments, protocol)
    names = [e.name for e in experiments]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InvalidInputError(
            f"experiment name(s) {', '.join(repeated)} given twice; give each a distinct "
            "'name' (or a different model / dataset / split)"
        )
    tables = tuple(_table(raw, n) for n, raw in enumerate(_tables(data, "tables"), start=1))
    plots = tuple(_plot(raw, n) for n, raw in enumerate(_tables(data, "plots"), start=1))
    _check_names(tables, "table", "[[tables]]")
    _check_names(plots, "plot", "[[plots]]")
    _check_computed(tables, plots, experiments)
    _check_metric_keys(tables, experiments)
    _check_paper(tables, experiments)
    _check_average_rows(tables, experiments)
    for number, table in enumerate(tables, start=1):
        clash = table.clashes(experiments)
        if clash is not None and clash[2] == "method":
            first, second, _ = clash
            raise InvalidInputError(
                f"table {number}: methods {first!r} and {second!r} of one experiment fall in "
                f"one cell (rows = {table.rows!r}, {table.groups} x {table.columns}: no axis "
                "is the method), so one would hide the other's numbers; set rows = "
                '"method" (or columns / groups), or give each experiment one method'
            )
        if clash is not None:
            first, second, _ = clash
            raise InvalidInputError(
                f"table {number}: experiments {first!r} and {second!r} fall in one cell "
                f"({table.groups} x {table.columns}), so one would hide the other's numbers; "
                'set columns = "experiment" (or rows / groups), or give the second '
                "experiment another model or dataset"
            )
    return BenchConfig(
        path=path,
        title=_title(data, "the config", path.stem),
        description=str(data.get("description", "")),
        experiments=tuple(experiments),
        seeds=seeds,
        chunk_size=chunk_size,
        tables=tables,
        plots=plots,
    )


# ------------------------------------------------------------------ pieces of a config
#: the experiment's own keys that ``options`` (the data set reader's options) cannot hold
_OWN_DATA_KEYS = {
    "split": 'split = "..." beside dataset',
    "limit": "limit = N beside dataset, or --limit on the command line",
    "path": 'path = "..." beside dataset',
    "name": 'dataset = "..." for the data set (name = "..." beside it names the experiment)',
}


def _refuse_own_keys(options: Mapping[str, Any], where: str) -> None:
    """Refuse split, limit, path or name inside an experiment's ``options``: they are the
    experiment's own keys, and passed as options too they would clash."""
    for key in _OWN_DATA_KEYS:
        if key in options:
            raise InvalidInputError(
                f"{where}: {key} goes beside dataset, not in options ({key} = "
                f"{json.dumps(options[key], default=str)} in options); write "
                f"{_OWN_DATA_KEYS[key]}"
            )


def _experiment(
    raw: Mapping[str, Any],
    base: Path,
    where: str,
    methods: tuple[MethodSpec, ...],
    metrics: tuple[str, ...],
    protocol: Mapping[str, Any],
    sizes: Mapping[str, int | None],
    dtype: str | None = None,
    segmenting: Mapping[str, str | None] | None = None,
) -> Experiment:
    _known(raw, EXPERIMENT_KEYS, where)
    for key in ("model", "dataset"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise InvalidInputError(f'{where} needs {key} = "..." (a name or a path)')
    if "name" in raw:  # stored and reported under it, like a method label
        given = _given_name(raw["name"], f"{where} name", "baseline", "the default model:dataset")
        if (problem := name_problem(given)) is not None:
            raise InvalidInputError(f"{where} name {given!r}, {problem}")
    name, model_source = _model(raw["model"], base, where)
    dtype = _dtype(raw["dtype"], f"{where} dtype") if "dtype" in raw else dtype
    model = model_ref(name, dtype)
    limit = raw.get("limit")
    if limit is not None:
        limit = _positive(limit, f"{where} limit")
    options = raw.get("options", {})
    if not isinstance(options, dict):
        raise InvalidInputError(f"{where} options must be a table of dataset options")
    _refuse_own_keys(options, where)
    dataset_name, dataset_source = _dataset(raw["dataset"], base, where)
    _refuse_path_beside_hub(dataset_name, _optional_str(raw.get("path"), f"{where} path"), where)
    path, path_source = _path(_optional_str(raw.get("path"), f"{where} path"), base, where)
    _refuse_folder_path(dataset_name, path, path_source, where)
    _refuse_path_beside_a_file(raw["dataset"], dataset_source or dataset_name, path, where)
    dataset = DatasetSpec(
        name=dataset_name,
        split=_optional_str(raw.get("split"), f"{where} split"),
        limit=limit,
        path=path,
        options=dict(options),
        sources={
            key: source
            for key, source in (
                (dataset_name, dataset_source),
                (path, path_source),
                (name, model_source),  # the model option of data built for its tokenizer
            )
            if key is not None and source is not None
        },
    )
    own_methods = methods
    if "methods" in raw:
        own_methods = _select_methods(raw["methods"], methods, where)
    own_metrics = _metrics(raw["metrics"], f"{where} metrics") if "metrics" in raw else metrics
    if not own_methods:
        raise InvalidInputError(f"{where} runs no method; list methods at the top or in it")
    own_methods = _with_defaults(
        own_methods, _target(raw.get("target"), where), _layer(raw.get("layer"), where)
    )
    own_protocol = {**protocol, **_protocol(raw.get("protocol", {}), f"{where} protocol")}
    segmenting = {**(segmenting or {}), **_segmenting(raw, where)}
    segments = segmenting.get("segments")
    own_methods = _with_segments(own_methods, segments, segmenting.get("segment_reduce"), where)
    _check_segment_units(own_metrics, own_protocol, segments, where)
    own_methods = _label_spelling(own_methods, _classifier_labels(name, model_source))
    _refuse_shared_keys(own_methods, where)
    split = f"/{dataset.split}" if dataset.split else ""
    if _task(dataset.name) == "masked_lm":  # its inputs are built for the model's tokenizer
        dataset = replace(dataset, options={**dataset.options, "model": name})
    generation = _task(dataset.name) == "generation"
    if generation and segments is not None:
        raise InvalidInputError(
            f"{where}: segments apply to experiments on texts, not to the generation data "
            f"set {dataset.name!r}; take segments out (explain a generation's segments with "
            "normxlogit explain --segments)"
        )
    if not generation and ("max_new_tokens" in raw or "evaluate_every" in raw):
        raise InvalidInputError(
            f"{where}: max_new_tokens and evaluate_every apply to generation data sets "
            f"(tellmewhy, wikibio), not to {dataset.name!r}"
        )
    max_new_tokens = _positive(raw.get("max_new_tokens", 32), f"{where} max_new_tokens")
    if generation:
        _generation_metrics(own_metrics, where)
        contrastive = [spec.display for spec in own_methods if spec.contrast is not None]
        if contrastive:
            raise InvalidInputError(
                f"{where}: method {contrastive[0]} sets a contrast, which a generation data "
                "set does not give (each step's contrast is a token of a contrast "
                "continuation); explain contrastive generations with normxlogit explain "
                "--contrast"
            )
        dataset = replace(dataset, max_new_tokens=max_new_tokens)
    else:
        _check_contrasts(own_methods, name, dataset.name, where)
    _check_reagent(own_methods, name, model_source, where)
    return Experiment(
        name=str(raw.get("name") or f"{model_ref(raw['model'], dtype)}:{raw['dataset']}{split}"),
        model=model,
        model_source=model_source,
        dataset=dataset,
        methods=own_methods,
        metrics=own_metrics,
        protocol=own_protocol,
        generation=generation,
        max_new_tokens=max_new_tokens,
        evaluate_every=_positive(raw.get("evaluate_every", 5), f"{where} evaluate_every"),
        **{
            key: _optional_positive(raw.get(key, value), f"{where} {key}")
            for key, value in sizes.items()
        },
    )


def _given_name(given: Any, where: str, example: str, default: str) -> str:
    """An experiment's ``name`` or a method's ``label`` as written: a string with some
    text, since tables and the store show it (an empty one would silently become the
    default, a number a text the user did not write)."""
    if not isinstance(given, str) or not given.strip():
        key = where.rsplit(" ", 1)[-1]
        shown = (  # as TOML writes it, not Python's repr (a date, not datetime.date(...))
            f"= {toml_string(given)}" if isinstance(given, str) else f"is {toml_phrase(given)}"
        )
        raise InvalidInputError(
            f'{where} {shown}: give a {key}, e.g. {key} = "{example}", or '
            f"leave {key} out for {default}"
        )
    return given


def _task(dataset: str) -> str | None:
    """A registered data set's task (generation: prompts to continue; masked_lm: inputs
    built for a model's tokenizer); None for a user's file or a hub data set."""
    from ..data.registry import list_datasets

    if dataset not in list_datasets():
        return None
    from ..data import dataset_info

    return dataset_info(dataset).task


def _check_contrasts(methods: tuple[MethodSpec, ...], model: str, dataset: str, where: str) -> None:
    """What can be known of each method's target and contrast before a model loads: a
    contrast equal to its target (it explains nothing), gold labels or foils the data set
    does not give, and a contrast that is no label of a built-in model (whose labels are
    known without loading it). A token contrast, or a model from a folder or the hub, is
    checked once the model loads, before anything is explained."""
    from ..builtin import BUILTIN_MODELS
    from ..common.targets import SAME_RULE

    task = _task(dataset)
    builtin = BUILTIN_MODELS.get(model)
    for spec in methods:
        if spec.contrast is None:
            continue
        lead = f"{where}: method {spec.display} contrast = {spec.contrast!r}"
        named = builtin is not None and builtin.outputs == "classification"
        if spec.contrast == spec.target or (
            named and str(spec.target).lower() == spec.contrast.lower()
        ):
            reads = {"label": "its gold label", "foil": "its foil"}.get(spec.contrast, "")
            raise InvalidInputError(
                f"{lead} is its target too{f' (each text against {reads})' if reads else ''}: "
                f"{SAME_RULE}, so it explains nothing; contrast it with another output "
                '("foil", "label" or a label / token name)'
            )
        for role, wanted in (("target", spec.target), ("contrast", spec.contrast)):
            if wanted == "label" and task in ("regression", "generation"):
                raise InvalidInputError(
                    f'{where}: method {spec.display} {role} = "label" reads each text\'s gold '
                    f"label, and {dataset}'s gold values are scores (a regression), not labels"
                )
            if wanted == "foil" and task is not None and task != "masked_lm":
                raise InvalidInputError(
                    f'{where}: method {spec.display} {role} = "foil" reads each text\'s foil, '
                    f"which only minimal-pair data sets (blimp) give, not {dataset}"
                )
        if builtin is None or spec.contrast in ("label", "foil"):
            continue
        if builtin.outputs == "regression":
            raise InvalidInputError(
                f"{lead}: model {model} is a regressor, whose one output has nothing to "
                "contrast it with; take contrast out of the method"
            )
        labels = builtin.labels
        if labels and spec.contrast.strip().lower() not in [n.lower() for n in labels]:
            raise InvalidInputError(
                f"{lead} is no label of model {model}, whose labels are: {', '.join(labels)}"
            )


def _check_reagent(
    methods: tuple[MethodSpec, ...], model: str, source: str | None, where: str
) -> None:
    """A ReAGent whose probes cannot watch the model's outputs (a regressor, a classifier
    of no more labels than its stopping top k), known without loading it for a built-in
    model or a folder (its config.json or adapter manifest): its scores would be random,
    and the refusal must come before the grid's first cell, not after the experiments
    before this one. A hub model is checked once it loads."""
    from ..methods import get_method
    from ..methods.reagent import outputs_refusal

    head = _known_outputs(model, source)
    if head is None:
        return
    outputs, labels = head
    for spec in methods:
        built = get_method(spec.name, **spec.options)
        reason = outputs_refusal([built], outputs, labels, CONFIG_OPTION_FIX)
        if reason is not None:
            raise InvalidInputError(f"{where}: method {spec.display}: {reason}")


def _known_outputs(model: str, source: str | None) -> tuple[str, int] | None:
    """A model's head as (``regression``, ``classification`` or ``tokens``, its number of
    labels) where it is known without loading the weights: a built-in model's, or a
    folder's adapter manifest or config.json; None for a hub model or an unreadable folder."""
    from ..builtin import BUILTIN_MODELS

    builtin = BUILTIN_MODELS.get(model)
    if builtin is not None:
        outputs = "tokens" if "label_words" in builtin.options else builtin.outputs
        return outputs, len(builtin.labels)
    folder = Path(source or model)
    if not folder.is_dir():
        return None
    for file, read in (("normxlogit.json", _manifest_outputs), ("config.json", _config_outputs)):
        try:
            data = json.loads((folder / file).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        return read(data) if isinstance(data, dict) else None
    return None


def _manifest_outputs(manifest: dict) -> tuple[str, int] | None:
    """An adapter's head from its manifest (a prompted or masked LM ranks tokens)."""
    task, labels = manifest.get("task"), manifest.get("labels")
    if task == "regression":
        return "regression", 1
    if task == "classification" and isinstance(labels, list):
        return "classification", len(labels)
    return "tokens", 0


def _config_outputs(config: dict) -> tuple[str, int] | None:
    """A transformers folder's head as :func:`..model.tasks.detect_task` reads it: a
    sequence classifier of one output or a regression ``problem_type`` is a regressor;
    any other head ranks tokens."""
    architectures = config.get("architectures") or []
    classifier = any(
        isinstance(a, str) and a.endswith("ForSequenceClassification") for a in architectures
    )
    if not classifier:
        return "tokens", 0
    id2label = config.get("id2label")
    labels = config.get("num_labels", len(id2label) if isinstance(id2label, dict) else 2)
    if not isinstance(labels, int):
        return None
    if labels == 1 or config.get("problem_type") == "regression":
        return "regression", 1
    return "classification", labels


def _generation_metrics(metrics: tuple[str, ...], where: str) -> None:
    from ..evaluation.registry import metric_info

    for name in metrics:
        info = metric_info(name)
        if info.needs_labels or info.needs_evidence:
            raise InvalidInputError(
                f"{where}: metric {name!r} needs gold labels or evidence, which a generation "
                "data set has not; use pi_soft_nc, pi_soft_ns, soft_nc, soft_ns"
            )


def _dtype(value: Any, where: str) -> str | None:
    """A precision's canonical name (``bf16`` is ``bfloat16``), None when not given."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f'{where} must be a string, e.g. dtype = "bfloat16"')
    try:
        return dtype_name(value)
    except InvalidOptionError as error:
        raise InvalidInputError(f"{where}: {error}") from None


def _model(name: str, base: Path, where: str) -> tuple[str, str | None]:
    """A built-in name, a folder, or a hub id (``owner/name``), as (the name cells are
    stored under, where it loads from when that differs); anything else is refused now,
    not after an hour."""
    from ..builtin import BUILTIN_MODELS

    if name in BUILTIN_MODELS:
        return name, None
    found = _found(name, base, Path.exists, f"{where} model")
    if found is not None:
        return found
    # a hub id: loaded (and checked) by from_pretrained; none begins with a blank or an
    # invisible character (" ../m", "\u200b/abs/m": a folder's path, refused now)
    # ("a/b/c", "org/": a folder's path, as loading takes them, refused below)
    if (
        name.count("/") == 1
        and not name.startswith((".", "/"))
        and not name.endswith("/")
        and bare_name(name, end=False) == name
    ):
        _refuse_unseen_in_hub_id(name, where)
        _refuse_invalid_hub_id(name, where)
        return name, None
    raise UnknownModelError(
        f"{where}: model {name!r} is neither a built-in ({', '.join(BUILTIN_MODELS)}) nor "
        f"an existing folder at {_looked(name, base)}"
    )


def _refuse_invalid_hub_id(name: str, where: str) -> None:
    """A hub id that the hub's own rules (those from_pretrained checks it by) refuse,
    refused as the config is read, naming the experiment (from_pretrained refused it only
    once the experiments before it had run, naming none). Checked without the network."""
    try:
        from huggingface_hub.utils import HFValidationError, validate_repo_id
    except ImportError:  # transformers needs huggingface_hub: without it nothing loads
        return
    try:
        validate_repo_id(name)
    except HFValidationError:
        pass
    else:
        return
    if "--" in name or ".." in name:
        problem = "it holds '--' or '..'"
    elif name.endswith(".git"):  # the hub's own rule: a repository id never ends in .git
        problem = "it ends in '.git', which a hub id never does"
    elif long := [
        (part, len(piece))
        for part, piece in zip(
            ("owner", "name")[-len(name.split("/")) :], name.split("/"), strict=False
        )
        if len(piece) > 96
    ]:
        problem = "; ".join(
            f"its {part} is {length} characters long, and a hub id's {part} is at most 96"
            for part, length in long
        )
    else:
        problem = (
            "its owner and name are letters, digits, '-', '_' and '.' only, neither beginning "
            "nor ending in '-' or '.', each at most 96 characters"
        )
    raise InvalidInputError(
        f"{where}: model {name!r} is no hub id: {problem}; write the hub id as its page "
        "spells it (owner/name), or the path of a local model folder"
    )


def _refuse_unseen_in_hub_id(name: str, where: str) -> None:
    """A hub id (``owner/name``) ending in a blank or an invisible character, or holding
    one inside it, refused as the config is read (a hub id holds none; from_pretrained
    refused it only once the experiments before it had run, naming no experiment, and the
    experiment's default name would hold the character)."""
    from ..common.outputs import blank_edge

    def unseen(char: str) -> bool:
        return char.isspace() or unseen_in_name(char)

    if said := blank_edge(name, True):
        problem = f"its name ends in {said}"
    elif inside := [c for c in dict.fromkeys(name) if unseen(c)]:
        problem = "its name holds " + ", ".join(
            "a space or tab"
            if c in " \t"
            else f"U+{ord(c):04X}"
            + (f" ({unicodedata.name(c)})" if unicodedata.name(c, "") else "")
            for c in inside
        )
    else:
        return
    core = bare_name(name)
    if any(c in " \t" for c in core):  # "org/my model": which spelling is meant is not known
        fix = "write the hub id as its page spells it (owner/name, no blanks)"
    else:
        fix = f"write it as model = {toml_string(''.join(c for c in core if not unseen(c)))}"
    raise InvalidInputError(
        f"{where}: model {name!r} is no hub id: {problem}, which a hub id never holds; {fix}"
    )


def _dataset(name: str, base: Path, where: str) -> tuple[str, str | None]:
    """A registered data set, a hub one (``hub:...``), or a file, as :func:`_model`
    gives a model; a file that is nowhere is refused now, naming where it was looked for."""
    from ..data.registry import HUB_PREFIX, list_datasets

    if name in list_datasets() or name.startswith(HUB_PREFIX):
        return name, None
    found = _found(name, base, Path.is_file, f"{where} dataset")
    if found is not None:
        return found
    raise InvalidInputError(
        f"{where} dataset {name!r} is no data set and no file at {_looked(name, base)}; "
        "choose one of "
        f"{', '.join(list_datasets())}, {HUB_PREFIX}<dataset>[/<config>], or the path of a "
        "data file"
    )


def _looked(name: str, base: Path) -> str:
    """The paths a relative data file or model folder was looked for at, for a refusal."""
    hint = blank_edge_hint(Path(name))  # "d.tsv ": the blank, and the file without it
    if not hint and (clean := bare_name(name, end=False)) != name:  # " ../m": the path's start
        from ..common.outputs import blank_edge

        there = Path(clean).exists() or (not Path(clean).is_absolute() and (base / clean).exists())
        exists = f"; {clean} exists" if there else ""
        hint = f" (its name starts with {blank_edge(name, False)}{exists})"
    if Path(name).is_absolute():
        return repr(name) + hint
    if "exists" not in hint:
        hint = blank_edge_hint(base / name) or hint
    return f"{name!r} (from the current folder) or {str(base / name)!r} (beside the config){hint}"


def _found(
    path: str, base: Path, wanted: Callable[[Path], bool], what: str
) -> tuple[str, str | None] | None:
    """A path the config names, when ``wanted`` holds for it: a relative one is read from
    the current folder, else beside the config. Given as (its key: the path from the
    config's folder, so the cells are the same from any folder and on any machine the
    config and its files are copied to; where it is read from, None when the key is that
    path already). A relative path naming two files, one from each, is refused: which one
    is meant cannot be known."""
    if Path(path).is_absolute():
        return (path, None) if wanted(Path(path)) else None
    here, beside = Path(path), base / path
    present = [candidate for candidate in (here, beside) if wanted(candidate)]
    if not present:
        return None
    if len(present) == 2 and not os.path.samefile(here, beside):
        raise InvalidInputError(
            f"{what} {path!r} names two: {str(here.absolute())!r} from the current folder and "
            f"{str(beside.absolute())!r} beside the config; run from the config's folder, or "
            "give the path you mean from there (or an absolute one)"
        )
    source = os.path.abspath(present[0])
    key = Path(os.path.relpath(source, os.path.abspath(base))).as_posix()
    return key, (None if key == source else source)


def _path(path: str | None, base: Path, where: str) -> tuple[str | None, str | None]:
    """A data set's ``path`` (its own file or folder) as :func:`_found` gives it; one
    that is nowhere is refused now, in the config's terms (``path = "..."``), naming where
    it was looked for (and the name without a blank at its edges, where that exists)."""
    if path is None:
        return None, None
    found = _found(path, base, Path.exists, f"{where} path")
    if found is not None:
        return found
    raise InvalidInputError(
        f"{where} path = {toml_string(path)} is no file or folder at "
        f"{_looked(path, base)}; give the path of the data set's file (or folder), or leave "
        "path out to read the shared copy"
    )


#: the registered data sets whose reader reads one file: their ``path`` names a file (the
#: others, BoolQ's ERASER folder and BLiMP's paradigm files, also take a folder)
_ONE_FILE_DATASETS = ("sst2", "mnli", "qnli", "stsb", "imdb", "tellmewhy", "wikibio")


def _refuse_path_beside_hub(dataset: str, path: str | None, where: str) -> None:
    """``path`` beside a hub data set (``hub:...``), refused as the config is read (the
    reader refused it only once the experiments before it had run): a hub data set is
    read by the datasets library, which takes no path."""
    from ..data.registry import HUB_PREFIX

    if path is not None and dataset.startswith(HUB_PREFIX):
        raise InvalidInputError(
            f"{where} path = {toml_string(path)} applies to a registered data set (its own "
            f"copy of the data); dataset = {toml_string(dataset)} is read from the hub, "
            "which takes no path: leave path out (or give the file itself as dataset)"
        )


def _refuse_path_beside_a_file(dataset: str, found: str, path: str | None, where: str) -> None:
    """``path`` beside a ``dataset`` that is a file (not a registered data set), refused
    now in the config's terms: ``path`` names a registered data set's own copy, and the
    reader's refusal ("no splits or options") named a key the config does not have."""
    from ..data.registry import HUB_PREFIX, list_datasets

    if path is None or dataset in list_datasets() or dataset.startswith(HUB_PREFIX):
        return
    if not Path(found).is_file():
        return
    raise InvalidInputError(
        f"{where} path = {toml_string(path)} applies to a registered data set (its own "
        f"copy of the data); dataset = {toml_string(dataset)} is already a file: leave path "
        "out (or name the registered data set as dataset and the file as path)"
    )


def _refuse_folder_path(dataset: str, path: str | None, source: str | None, where: str) -> None:
    """A ``path`` naming a folder for a data set read from one file, refused now in the
    config's terms (as a missing one is), not by the reader's ``path='...'`` once loaded."""
    if path is None or dataset not in _ONE_FILE_DATASETS:
        return
    found = Path(source or path)
    if found.is_dir():
        raise InvalidInputError(
            f"{where} path = {toml_string(path)} is a folder "
            f"({str(found.absolute())!r}); data set {dataset} is read from one file: give the "
            "path of the data set's file, or leave path out to read the shared copy"
        )


def _methods(raw: Any, where: str) -> tuple[MethodSpec, ...]:
    """Method names, or tables with name / label / options; checked against the registry."""
    from ..methods.base import get_method, method_class, method_options

    if not isinstance(raw, list):
        raise InvalidInputError(f"'{where}' must be a list of method names or [[methods]] tables")
    specs = []
    for item in raw:
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise InvalidInputError(
                f"'{where}': each method is a name or a table with name = \"...\""
            )
        _known(item, METHOD_KEYS, f"method {item['name']!r}")
        name = method_class(item["name"]).name
        options = item.get("options", {})
        if not isinstance(options, dict):
            raise InvalidInputError(f"method {name!r}: options must be a table")
        if "preset" in item:  # a paper's settings, stored as the options they are
            from ..methods.presets import preset_options

            options = {**preset_options(str(item["preset"]), name), **options}
        unknown = sorted(set(options) - set(method_options(name)))
        if unknown:
            from ..common.outputs import quoted_name

            raise InvalidInputError(
                f"method {name!r} has no option(s) "
                f"{', '.join(quoted_name(str(u)) for u in unknown)}; it accepts: "
                f"{', '.join(method_options(name)) or 'none'}"
            )
        if "seed" in options:
            raise InvalidInputError(
                f"method {name!r}: give seeds with the top-level seeds = [...], not as an option"
            )
        get_method(name, **options)  # values out of range refused now, as a run would
        options = _typed_options(name, options)
        label = ""
        if "label" in item:
            label = _given_name(item["label"], f"method {name!r} label", "IG", "the method's name")
        layer = _layer(item.get("layer"), f"method {name!r}")
        if (refusal := _layer_refusal(name, layer)) is not None:
            raise InvalidInputError(f"method {name!r} layer = {layer!r}: {refusal}")
        specs.append(
            MethodSpec(
                name,
                dict(options),
                label,
                _target(item.get("target"), f"method {name!r}"),
                layer,
                _contrast(item.get("contrast"), name),
                segment_reduce=_segment_reduce(item.get("segment_reduce"), f"method {name!r}"),
            )
        )
    labels = [spec.display for spec in specs]
    for label in labels:  # stored and reported under it: a saved result must load again
        if (problem := name_problem(label)) is not None:
            raise InvalidInputError(f"method label {label!r}, {problem}")
    for spec in specs:
        _refuse_reserved_label(spec)
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise InvalidInputError(
            f'method(s) {", ".join(repeated)} listed twice; give each variant its own label = "..."'
        )
    return tuple(specs)


#: method labels the report reads as something else: why, in a refusal's words
_RESERVED_LABELS = {
    AVERAGE_ROW: "the name of the row a table with average = true adds (each column's "
    "mean), so the report would take this method's row for it: never ranked, and its "
    "number replaced by the mean",
    VERSUS_BEST: "the word bench report --versus best reads as each metric against its best "
    "method, so --versus could never compare the others with this method",
}


def _refuse_reserved_label(spec: MethodSpec) -> None:
    """Refuse a label the report reads as its Avg row or as ``--versus best``: the
    method's numbers would be shown as, or hidden behind, something else."""
    why = _RESERVED_LABELS.get(spec.display)
    if why is None:
        return
    raise InvalidInputError(
        f"method {spec.name!r} label = {spec.display!r} is {why}; give it another "
        f'label = "..." (or leave label out for {spec.name!r})'
    )


def _target(raw: Any, where: str) -> str | None:
    """``prediction`` (the default, stored as None), ``label``, ``foil``, or a label /
    token name."""
    if not isinstance(raw, str | None) or (isinstance(raw, str) and not raw.strip()):
        # "all" too: the bench takes it, as explain --target does (every label explained)
        given = "an empty string" if isinstance(raw, str) else toml_phrase(raw)
        raise InvalidInputError(
            f"{where} target must be one string: {', '.join(TARGET_KINDS)}, all or a label / "
            f"token name; got {given}"
        )
    return requested_target(raw)  # type: ignore[return-value]  (a name, or None)


def _contrast(raw: Any, name: str) -> str | None:
    """What a method explains its target against: ``label``, ``foil`` or a label / token
    name; None (the default) for no contrast. Refused for a method that has none."""
    if raw is None:
        return None
    # a blank one is kept as written: a byte-level tokenizer's space token (" "), as the
    # command line and the page take it (a classifier refuses it by name, as no label)
    if not isinstance(raw, str) or not raw or raw in (PREDICTION, ALL):
        why = (
            {
                PREDICTION: ": 'prediction' is a target, not a contrast",
                ALL: ": 'all' names no single output to contrast with",
            }.get(raw, "")
            if isinstance(raw, str)
            else f", not {toml_phrase(raw)}"
        )
        raise InvalidInputError(
            f'method {name!r} contrast must be "label", "foil" or a label / token name{why}'
        )
    from ..methods.base import contrast_refusal, get_method

    refusal = contrast_refusal(get_method(name))
    if refusal:
        raise InvalidInputError(refusal)
    return raw


def _layer(raw: Any, where: str) -> str | int | None:
    """``all`` (every layer), a layer index (0 = embeddings), or None (the final layer)."""
    if raw is None or raw == "all":
        return raw
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise InvalidInputError(f'{where} layer must be "all" or a layer index (0 or more)')
    return raw


def _layer_refusal(name: str, layer: str | int | None) -> str | None:
    """Why method ``name`` takes no ``layer`` (None: it does): a method without layers
    would run at its final layer under a new cell, and one that reads only the token ids
    (random) scores alike at every layer, so an index would only copy its final cell."""
    from ..methods.base import method_class

    if layer is None:
        return None
    cls = method_class(name)
    if not cls.supports_layers:
        return "the method has no per-layer variant; take layer out"
    if cls.reads_token_ids_only and layer != "all":
        return (
            "the method reads only the token ids, so its scores are the same at every "
            'layer; take layer out (or set layer = "all")'
        )
    return None


def _with_defaults(
    methods: tuple[MethodSpec, ...], target: str | None, layer: str | int | None
) -> tuple[MethodSpec, ...]:
    """The methods with an experiment's target and layer where they set none (a layer
    only where it means something: not a layer index for a method that reads only the
    token ids, whose run would refuse it)."""
    return tuple(
        replace(
            spec,
            target=spec.target if spec.target is not None else target,
            layer=spec.layer if spec.layer is not None else _default_layer(spec.name, layer),
        )
        for spec in methods
    )


def _default_layer(name: str, layer: str | int | None) -> str | int | None:
    """An experiment's ``layer`` as method ``name`` takes it: as given, but None for a
    layer index on a method that reads only the token ids (the same scores at every
    layer). A method without layers keeps it, as its stored cells are keyed by it."""
    from ..methods.base import method_class

    if isinstance(layer, int) and method_class(name).reads_token_ids_only:
        return None
    return layer


def _segmenting(raw: Mapping[str, Any], where: str) -> dict[str, str]:
    """The ``segments`` and ``segment_reduce`` that ``raw`` (the config, or an experiment)
    sets, checked; the keys it leaves out are absent."""
    found = {}
    if "segments" in raw:
        value = raw["segments"]
        if value not in SEGMENT_SOURCES:
            raise InvalidInputError(
                f"{where} segments is {toml_phrase(value)}; choose "
                '"sentences" (each text split into sentences) or "data" (the segments the data set '
                "gives each instance: boolq "
                'with options = { passage = "sentences" })'
            )
        found["segments"] = value
    if "segment_reduce" in raw:
        found["segment_reduce"] = _segment_reduce(raw["segment_reduce"], where)
    return found


def _segment_reduce(value: Any, where: str) -> str | None:
    """How a token method's scores become a segment's (None: not given)."""
    from ..explanations.segments import SEGMENT_REDUCTIONS

    if value is not None and value not in SEGMENT_REDUCTIONS:
        raise InvalidInputError(
            f"{where} segment_reduce = {value!r}; choose one of {', '.join(SEGMENT_REDUCTIONS)}"
        )
    return value


def _scores_segments(name: str) -> bool:
    """Whether method ``name`` scores segments itself (leave-one-out, ContextCite...)."""
    from ..methods.base import method_class

    return bool(getattr(method_class(name), "needs_segments", False))


def _with_segments(
    methods: tuple[MethodSpec, ...], segments: str | None, reduce: str | None, where: str
) -> tuple[MethodSpec, ...]:
    """The methods with the experiment's segments: a token method's scores reduced by its
    own ``segment_reduce``, else the experiment's, else ``sum``; a segment method's are
    its own. A segment method, or a reduction, without segments is refused."""
    out = []
    for spec in methods:
        native = _scores_segments(spec.name)
        if segments is None:
            if native:
                raise InvalidInputError(
                    f'{where}: method {spec.display} scores segments; add segments = "data" '
                    '(each instance\'s own: boolq with options = { passage = "sentences" }) '
                    'or segments = "sentences" to the experiment or the top of the config'
                )
            if spec.segment_reduce is not None or reduce is not None:
                raise InvalidInputError(
                    f"{where}: segment_reduce goes with segments; add segments = "
                    '"data" or "sentences", or take segment_reduce out'
                )
            out.append(spec)
        elif native:
            if spec.segment_reduce is not None:
                raise InvalidInputError(
                    f"{where}: method {spec.display} scores segments itself; segment_reduce "
                    "is for token methods: take it out of the method"
                )
            out.append(replace(spec, segments=segments))
        else:
            chosen = spec.segment_reduce or reduce or "sum"
            out.append(replace(spec, segments=segments, segment_reduce=chosen))
    return tuple(out)


def _check_segment_units(
    metrics: tuple[str, ...], protocol: Mapping[str, Any], segments: str | None, where: str
) -> None:
    """Metrics that rank segments need them: ``unit = "segment"`` and the segment metrics
    any segments, the segment plausibility metrics the data's own (their evidence numbers
    those)."""
    from ..evaluation.registry import metric_class, metric_info

    if segments is None and protocol.get("unit") == "segment":
        raise InvalidInputError(
            f'{where}: protocol unit = "segment" ranks segments, and the experiment has none; '
            'add segments = "data" or "sentences" to the experiment or the top of the config'
        )
    for name in metrics:
        info = metric_info(name)
        by_evidence = info.needs_evidence and info.evidence == "segments"  # "data" (below)
        if segments is None and metric_class(name).needs_segments and not by_evidence:
            raise InvalidInputError(
                f"{where}: metric {name} reads each explanation's segments, and the "
                'experiment has none; add segments = "sentences" (or "data") to the '
                "experiment or the top of the config"
            )
        if not (info.needs_evidence and info.evidence == "segments"):
            continue
        if segments != "data":
            given = "none" if segments is None else f'segments = "{segments}"'
            raise InvalidInputError(
                f"{where}: metric {name} reads each instance's evidence segments, which "
                f'number the data\'s own segments ({given} given); set segments = "data" '
                '(boolq with options = { passage = "sentences" } gives both)'
            )


def _typed_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with each value written as text turned into its declared type (as
    ``get_method`` does), so ``steps = "4"`` and ``steps = 4`` key one cell; a value already
    of its type keeps its written form, the key stores made before hold."""
    from ..common.options import convert_options
    from ..methods.base import method_class

    converted = convert_options(method_class(name), options, f"method {name!r} option")
    return {key: _as_written(value, converted[key]) for key, value in options.items()}


def _as_written(given: Any, converted: Any) -> Any:
    """``converted`` where ``given`` is text (in a list too), else ``given`` unchanged."""
    if isinstance(given, str):
        return converted
    sequences = isinstance(given, list | tuple) and isinstance(converted, list | tuple)
    if sequences and len(given) == len(converted):
        return [_as_written(g, c) for g, c in zip(given, converted, strict=True)]
    return given


def _classifier_labels(model: str, source: str | None) -> list[str]:
    """A classifier's label names where they are known without loading it: a built-in
    model's, or a folder's (its adapter manifest, or a sequence classifier's config.json);
    none for a language model (its targets are tokens, spelt exactly) or a hub model."""
    from ..builtin import BUILTIN_MODELS

    builtin = BUILTIN_MODELS.get(model)
    if builtin is not None:
        return list(builtin.labels or []) if builtin.outputs == "classification" else []
    folder = Path(source or model)
    for file, read in (("normxlogit.json", _manifest_labels), ("config.json", _config_labels)):
        try:
            data = json.loads((folder / file).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            return read(data)
    return []


def _manifest_labels(manifest: dict) -> list[str]:
    labels = manifest.get("labels")
    if manifest.get("task") != "classification" or not isinstance(labels, list):
        return []
    return [label for label in labels if isinstance(label, str)]


def _config_labels(config: dict) -> list[str]:
    """A sequence classifier's label names from its config.json; none for a regressor
    (one output or a regression ``problem_type``: its ``id2label`` names no class, and
    transformers writes no ``num_labels``) or any other head."""
    id2label, outputs = config.get("id2label"), _config_outputs(config)
    if outputs is None or outputs[0] != "classification" or not isinstance(id2label, dict):
        return []
    return [label for label in id2label.values() if isinstance(label, str)]


def _label_spelling(methods: tuple[MethodSpec, ...], labels: list[str]) -> tuple[MethodSpec, ...]:
    """Targets and contrasts that name a classifier's label, in the model's own spelling:
    label names are read case-insensitively, so ``"Positive"`` and ``"positive"`` are one
    output, and must key one cell (the duplicate check then sees them). A token, or a
    model whose labels are not known before it loads (the hub), is kept as written."""
    if not labels:
        return methods
    spelling = {label.lower(): label for label in labels}

    def spelt(name: str | None) -> str | None:
        if name is None or name in TARGET_KINDS:
            return name
        return spelling.get(name.strip().lower(), name)

    return tuple(
        replace(spec, target=spelt(spec.target), contrast=spelt(spec.contrast)) for spec in methods
    )


def _refuse_shared_keys(methods: tuple[MethodSpec, ...], where: str) -> None:
    """Two methods of an experiment whose results would be one cell's (the same options,
    or options that differ only in rows or tokens per pass, or in one written at its
    default value) are a mistake, named now."""
    seen: dict[str, MethodSpec] = {}
    for spec in methods:
        first = seen.setdefault(spec.key, spec)
        if first is not spec:
            why = _defaults_written(first, spec) or (
                "one method explaining one output, label names read in any case, with "
                "options that differ at most in execution options such as "
                "internal_batch_size, which change speed, not results"
            )
            raise InvalidInputError(
                f"{where}: methods {first.display} and {spec.display} compute the same "
                f"results ({why}); keep one"
            )


def _defaults_written(*methods: MethodSpec) -> str:
    """``steps = 50 is the default of integrated_gradients, ...``: the options of
    ``methods`` written at their default value, which key the cell of leaving them out
    (empty where none is)."""
    from .spec import written_defaults

    written = [
        f"{name} = {json.dumps(value)}"
        for spec in methods
        for name, value in written_defaults(spec.name, spec.options).items()
    ]
    if not written:
        return ""
    listed = ", ".join(dict.fromkeys(written))
    one = len(set(written)) == 1
    return (
        f"{listed} {'is the default' if one else 'are the defaults'} of {methods[0].name}, "
        f"the same as leaving {'it' if one else 'them'} out"
    )


def _select_methods(raw: Any, defined: tuple[MethodSpec, ...], where: str):
    """An experiment's methods: labels of top-level methods, or its own definitions."""
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        by_label = {spec.display: spec for spec in defined}
        if all(item in by_label for item in raw):
            return tuple(by_label[item] for item in raw)
    return _methods(raw, f"{where} methods")


def _metrics(raw: Any, where: str) -> tuple[str, ...]:
    from ..evaluation.registry import metric_info

    if not isinstance(raw, list) or not all(isinstance(m, str) for m in raw):
        raise InvalidInputError(f"'{where}' must be a list of metric names")
    for name in raw:
        metric_info(name)  # unknown names are refused with the list of known ones
    if len(set(raw)) < len(raw):
        raise InvalidInputError(f"'{where}' lists a metric twice")
    return tuple(raw)


def _warn_unread_settings(
    experiments: Sequence[Experiment], shared: Mapping[str, Any] | None = None
) -> None:
    """Warn once per config about protocol settings none of an experiment's metrics reads
    (experiments alike said together, by name): they change no stored value. A setting
    of the experiment's own ``protocol = { ... }`` (not the ``[protocol]`` table's value,
    ``shared``) is named as that key, where the user gave it."""
    import warnings

    from ..common.errors import NormXLogitWarning
    from ..evaluation.unread import unread_message

    said: dict[str, list[str]] = {}
    for experiment in experiments:
        message = unread_message(experiment.protocol, experiment.metrics)
        if message is not None:
            own = _own_settings(experiment.protocol, shared or {})
            said.setdefault(_own_named(message, own), []).append(experiment.name)
    for message, names in said.items():
        where = ("experiment " if len(names) == 1 else "experiments ") + ", ".join(names)
        warnings.warn(f"{where}: {message}", NormXLogitWarning, stacklevel=2)


def _own_settings(protocol: Mapping[str, Any], shared: Mapping[str, Any]) -> set[str]:
    """The settings an experiment's own ``protocol = { ... }`` gave (or changed)."""
    return {name for name, value in protocol.items() if name not in shared or shared[name] != value}


def _own_named(message: str, own: set[str]) -> str:
    """``Protocol(top_k=3)`` of a setting in ``own`` as the key that set it,
    ``[[experiments]] protocol = { top_k = 3 }`` (the ``[protocol]`` table's are named so
    when the message reaches the command line)."""
    import re

    def key(found: re.Match) -> str:
        if found[1] not in own:
            return found[0]
        return f"[[experiments]] protocol = {{ {found[1]} = {toml_spelling(found[2])} }}"

    return re.sub(r"Protocol\((\w+)=([^()]*)\)", key, message)


def _protocol(raw: Any, where: str) -> dict[str, Any]:
    from ..evaluation.protocol import Protocol

    if not isinstance(raw, dict):
        raise InvalidInputError(f"[{where}] must be a table of protocol settings")
    if "seed" in raw:
        raise InvalidInputError(
            f"[{where}] seed: give seeds with the top-level seeds = [...], not in the protocol"
        )
    Protocol().with_options(**raw)  # unknown settings and bad values are refused here
    return dict(raw)


def _tables(data: Mapping[str, Any], key: str) -> list[dict]:
    raw = data.get(key, [])
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise InvalidInputError(f"'{key}' must be [[{key}]] tables")
    return raw


def _table(raw: Mapping[str, Any], number: int) -> TableSpec:
    where = f"table {number}"
    _known(raw, TABLE_KEYS, where)
    metric = raw.get("metric")
    _metrics(sorted(set(_table_metric_names(metric, where))), f"{where} metric")
    axes = {key: raw.get(key, default) for key, default in AXIS_DEFAULTS.items()}
    for key, value in axes.items():
        allowed = (*AXES, "none") if key == "groups" else AXES
        if value not in allowed:
            raise InvalidInputError(
                f"{where} {key} = {value!r}; choose one of {', '.join(allowed)}"
            )
    _distinct_axes(raw, axes, where)
    flags = {key: raw.get(key, False) for key in ("average", "standard_error")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise InvalidInputError(f"{where} {key} must be true or false")
    return TableSpec(
        title=_title(raw, where, f"Table {number}"),
        metric=metric,
        name=_file_name(raw, where, f"table{number}"),
        **flags,
        paper=_paper(raw.get("paper", {}), where),
        paper_note=_paper_note(raw, where),
        **axes,
    )


def _table_metric_names(metric: Any, where: str) -> list[str]:
    """The metric names a table's ``metric`` gives: one name, or a table of names per
    model or data set (a list, a number or a date is refused: a table shows one metric)."""
    if isinstance(metric, str):
        names = [metric]
    elif isinstance(metric, dict):
        names = list(metric.values())
    else:
        names = []
    if not names or not all(isinstance(name, str) for name in names):
        raise InvalidInputError(
            f'{where} needs metric = "comp_cd" or a table such as {{ sst2 = "comp_cd" }}'
        )
    return names


def _paper_note(raw: Mapping[str, Any], where: str) -> str:
    """A table's ``paper_note``: text shown under it (a number, list or date would be
    shown as a text the user did not write)."""
    note = raw.get("paper_note", "")
    if not isinstance(note, str):
        raise InvalidInputError(
            f'{where} paper_note must be a string, e.g. paper_note = "the paper\'s table 2"'
        )
    return note


def _title(raw: Mapping[str, Any], where: str, default: str) -> str:
    """The config's, a table's or a plot's ``title``: a string with some text (a number
    or a list would be shown as a text the user did not write; an empty one becomes a
    Markdown rule ``****``, an empty heading or ``\\caption{}``)."""
    title = raw.get("title", default)
    if not isinstance(title, str):
        raise InvalidInputError(f'{where} title must be a string, e.g. title = "Comprehensiveness"')
    if "title" not in raw:
        return title
    shown = repr(title if len(title) <= 40 else f"{title[:20]}…")
    if len(title) > MAX_TITLE_CHARACTERS:
        raise InvalidInputError(
            f"{where} title {shown} is {len(title)} characters long; a figure or table shows "
            f"{MAX_TITLE_CHARACTERS} at most: give a shorter title (the description holds more)"
        )
    visible = "".join(c for c in title if not (c.isspace() or unseen_in_name(c)))
    if not visible:
        raise InvalidInputError(
            f"{where} title = {title!r} shows nothing; give a title, e.g. title = "
            '"Comprehensiveness", or leave it out'
        )
    # what labels and names refuse: text that shows nothing, reversed or as a box
    if (problem := name_problem(title.strip())) is not None:
        raise InvalidInputError(f"{where} title {shown}, {problem}")
    return title


#: the longest title: drawn above a figure of fixed size, a longer one covers the plot
MAX_TITLE_CHARACTERS = 200


#: the longest table or plot name: the report writes it as a file name (NAME.tex,
#: NAME.png), which a file system holds to 255 bytes, and a character may take 4 in UTF-8
MAX_NAME_CHARACTERS = 100
MAX_NAME_BYTES = 200


def _name_length_problem(name: str) -> str | None:
    """Why ``name`` is too long for a file name, else None (refused when the config is
    read, not when the report fails to write it)."""
    size = len(name.encode("utf-8"))
    if len(name) <= MAX_NAME_CHARACTERS and size <= MAX_NAME_BYTES:
        return None
    shown = f"{name[:20]}…"
    return (
        f"{shown!r} is {len(name)} characters ({size} bytes in UTF-8) long; the report "
        f"writes it as a file name, so it may hold {MAX_NAME_CHARACTERS} characters "
        f"({MAX_NAME_BYTES} bytes) at most: give a shorter name"
    )


def _file_name(raw: Mapping[str, Any], where: str, default: str) -> str:
    """A table's or plot's ``name``: the report writes it as ``NAME.tex`` / ``NAME.png``
    in its folder (and serve names it in a URL), so it must be a plain file name."""
    if "name" not in raw:
        return default
    name = raw["name"]
    if not isinstance(name, str):
        raise InvalidInputError(f'{where} name must be a string, e.g. name = "{default}"')
    cleaned = "-".join(part for part in name.replace("\\", "/").split("/") if part.strip(". "))
    fix = f"e.g. {cleaned!r}" if cleaned and cleaned != name else f'e.g. name = "{default}"'
    if not name.strip():
        raise InvalidInputError(f"{where} name is empty; give it a file name, {fix}")
    if (problem := _name_length_problem(name)) is not None:
        raise InvalidInputError(f"{where} name {problem}")
    if "/" in name or "\\" in name or name in (".", ".."):
        raise InvalidInputError(
            f"{where} name {name!r}: the report writes it as a file in its folder; give a "
            f"file name without folders, {fix}"
        )
    if name.startswith("."):
        raise InvalidInputError(
            f"{where} name {name!r} starts with a dot (a hidden file); give a name without "
            f"it, e.g. {name.lstrip('.') or default!r}"
        )
    if (problem := name_problem(name)) is not None:
        raise InvalidInputError(f"{where} name {name!r} is {problem}")
    return name


def _check_names(specs: Sequence[Any], kind: str, section: str) -> None:
    """Refuse two tables (or two plots) of one name: the report writes each to NAME.tex
    (NAME.png), so the second would overwrite the first."""
    names = [spec.name for spec in specs]
    for number, name in enumerate(names, start=1):
        first = names.index(name) + 1
        if first != number:
            raise InvalidInputError(
                f"{kind} {number} name {name!r} is {kind} {first}'s too; the report writes "
                f"each {section} entry to a file of its name, so give each a distinct name"
            )


def _check_computed(
    tables: Sequence[TableSpec], plots: Sequence[PlotSpec], experiments: Sequence[Experiment]
) -> None:
    """Refuse a table or plot of a metric no experiment computes (it would be left out of
    the report without a word), and a layers plot of a metric without a layer axis."""
    from ..evaluation.registry import list_metrics, metric_info

    computed = list(dict.fromkeys(m for e in experiments for m in e.metrics))
    its = f"its metrics: {', '.join(computed)}" if computed else "it computes no metrics"

    def refuse_uncomputed(where: str, metric: str) -> None:
        if metric not in computed:
            raise InvalidInputError(
                f"{where} metric {metric!r} is computed by no experiment of this config "
                f"({its}); add it to an experiment's metrics, or name one of those"
            )

    for number, table in enumerate(tables, start=1):
        metrics = [table.metric] if isinstance(table.metric, str) else table.metric.values()
        for metric in dict.fromkeys(metrics):
            refuse_uncomputed(f"table {number}", metric)
    # a layers plot draws a value per layer with its band over instances: per-layer
    # metrics, and the sanity checks' randomisation steps (layers, from the head down)
    by_layer = ("layer", "step")
    layered = [name for name in list_metrics() if metric_info(name).axis == "layer"]
    for number, plot in enumerate(plots, start=1):
        if plot.kind not in ("curve", "summary", "layers"):
            continue
        if plot.kind == "layers" and metric_info(plot.metric).axis not in by_layer:
            axis = metric_info(plot.metric).axis
            instead = f"use kind = curve (its axis: {axis})" if axis else "use kind = summary"
            raise InvalidInputError(
                f"plot {number} kind = layers needs a per-layer metric "
                f"({', '.join(layered)}); {plot.metric} has no layers: {instead}"
            )
        refuse_uncomputed(f"plot {number}", plot.metric)


def _check_metric_keys(tables: Sequence[TableSpec], experiments: Sequence[Experiment]) -> None:
    """Refuse a table's ``metric = { KEY = ... }`` whose KEY is no data set of the config
    (nor a value of the table's groups axis, which :meth:`TableSpec.place` also reads):
    its columns would be left out of the report without a word."""
    datasets = list(dict.fromkeys(e.dataset.name for e in experiments))
    for number, table in enumerate(tables, start=1):
        if isinstance(table.metric, str):
            continue
        known = set(datasets) | _axis_values(table.groups, experiments)
        for key in table.metric:
            if key not in known:
                also = f" nor {table.groups}" if table.groups not in ("dataset", "none") else ""
                raise InvalidInputError(
                    f"table {number} metric names {key!r}, which is no data set{also} of this "
                    f"config ({', '.join(map(repr, sorted(known)))}); its columns would show "
                    "nowhere"
                )


def _check_average_rows(tables: Sequence[TableSpec], experiments: Sequence[Experiment]) -> None:
    """Refuse a table with ``average = true`` one of whose rows (a dataset, model or
    experiment name) is named as the Avg row it adds: the report would write the column
    mean into that row's cells. Method rows are refused by their label."""
    for number, table in enumerate(tables, start=1):
        if not table.average or table.rows == "method":
            continue
        if AVERAGE_ROW in _axis_values(table.rows, experiments):
            fix = (
                'give the experiment another name = "..."'
                if table.rows == "experiment"
                else f"rename the {table.rows} {AVERAGE_ROW!r}"
            )
            raise InvalidInputError(
                f"table {number} has average = true and a row {AVERAGE_ROW!r} (rows = "
                f"{table.rows!r}), the name of the row it adds for each column's mean: the "
                f"report would write the mean into that row's cells too; {fix}, or set "
                "average = false"
            )


def _axis_values(axis: str, experiments: Sequence[Experiment]) -> set[str]:
    """What a table's ``axis`` (method, dataset, model, experiment; none) takes in the
    config's experiments."""
    values: dict[str, Any] = {
        "method": lambda e: [m.display for m in e.methods],
        "dataset": lambda e: [e.dataset.name],
        "model": lambda e: [e.model],
        "experiment": lambda e: [e.name],
    }
    if axis not in values:
        return set()
    return {value for e in experiments for value in values[axis](e)}


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string, quoted: its letters as written, and a blank other
    than a space or an invisible character (a zero-width space, a no-break space) as its
    escape (``"d.tsv\\u200b"``), which a terminal would not show."""
    from ..common.fields import unseen_in_name

    return "".join(
        f"\\u{ord(c):04x}" if unseen_in_name(c) or (c.isspace() and c != " ") else c
        for c in json.dumps(text, ensure_ascii=False)
    )


def toml_phrase(value: Any) -> str:
    """What a TOML ``value`` is, in TOML's words and as TOML writes it (a boolean true, a
    date 1979-05-27, a table): not Python's ("a bool True", "datetime.date(...)")."""
    import datetime

    if isinstance(value, bool):
        return f"a boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return f"a string {toml_string(value)[:40]}"
    if isinstance(value, int):
        return f"an integer {value}"
    if isinstance(value, float):
        return f"a float {value!r}"
    if isinstance(value, datetime.datetime):
        return f"a date-time {value.isoformat()}"
    if isinstance(value, datetime.date):
        return f"a date {value.isoformat()}"
    if isinstance(value, datetime.time):
        return f"a time {value.isoformat()}"
    return type_phrase(value)


def _paper(raw: Any, where: str) -> dict[str, dict[str, float]]:
    """``{column key: {method label: number}}``: a paper's numbers to show beside ours,
    under an experiment, model or dataset name; each a finite number (a paper prints no
    nan or inf, and 1e400 is a slip, shown as "(n/a)")."""
    usage = (
        f"{where} paper maps experiment, model or dataset names to tables of method label "
        "= number, e.g. [tables.paper] minilm-sst2 = { normxlogit = 0.42 }"
    )
    if not isinstance(raw, dict):
        raise InvalidInputError(f"{where} paper is {toml_phrase(raw)}; {usage}")
    for key, values in raw.items():
        if not isinstance(values, dict):
            raise InvalidInputError(f"{where} paper[{key!r}] is {toml_phrase(values)}; {usage}")
        for label, value in values.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidInputError(
                    f"{where} paper[{key!r}][{label!r}] is {toml_phrase(value)}, not a "
                    f"number; {usage}"
                )
            if not math.isfinite(value):
                raise InvalidInputError(
                    f"{where} paper[{key!r}][{label!r}] is {value!r}, not a finite number; "
                    "give the number the paper prints (leave out a cell it has none for)"
                )
    return {
        model: {label: float(v) for label, v in values.items()} for model, values in raw.items()
    }


def _check_paper(tables: Sequence[TableSpec], experiments: Sequence[Experiment]) -> None:
    """Refuse a paper number no cell would show: under a key that is no experiment, model
    or dataset of the config, or a label that is no method's (a typo: the report would
    leave the paper's number out without a word)."""
    keys = {k for e in experiments for k in (e.name, e.model, e.dataset.name)}
    labels = {m.display for e in experiments for m in e.methods}
    for number, table in enumerate(tables, start=1):
        for key, values in table.paper.items():
            if key not in keys:
                raise InvalidInputError(
                    f"table {number} paper names {key!r}, which is no experiment, model or "
                    f"dataset of this config ({', '.join(map(repr, sorted(keys)))}); its "
                    "numbers would show nowhere"
                )
            unknown = sorted(set(values) - labels)
            if unknown:
                raise InvalidInputError(
                    f"table {number} paper gives {key!r} a number for {unknown[0]!r}, which "
                    f"is no method label of this config ({', '.join(map(repr, sorted(labels)))})"
                )
        shown = _shown_paper(table, experiments)
        for key, values in table.paper.items():
            for label in values:
                if (key, label) not in shown:
                    raise InvalidInputError(
                        f"table {number} paper gives {key!r} a number for {label!r}, which no "
                        f"cell of the table shows: {_unshown_why(table, experiments, key, label)}"
                        "; its number would show nowhere (leave it out, or ask for the cell)"
                    )


def _shown_paper(table: TableSpec, experiments: Sequence[Experiment]) -> set[tuple[str, str]]:
    """The (key, method label) of ``table``'s paper numbers a cell shows: as the report
    takes them, each asked cell's number under its experiment's name, else its model,
    else its dataset."""
    shown = set()
    for experiment in experiments:
        for method in experiment.methods:
            if table.place(experiment, method) is None:
                continue
            for key in (experiment.name, experiment.model, experiment.dataset.name):
                if method.display in table.paper.get(key, {}):
                    shown.add((key, method.display))
                    break
    return shown


def _unshown_why(table: TableSpec, experiments: Sequence[Experiment], key: str, label: str) -> str:
    """Why no cell shows ``table``'s paper number under ``key`` for ``label``."""
    under = [e for e in experiments if key in (e.name, e.model, e.dataset.name)]
    having = [e for e in under if any(m.display == label for m in e.methods)]
    if len(under) == 1:
        one = under[0].name
        whose = f"experiment {key!r}" if one == key else f"its experiment {one!r}"
        asks, does = "asks", "does"
    else:
        whose = f"its experiments ({', '.join(repr(e.name) for e in under)})"
        asks, does = "ask", "do"
    if not having:
        return f"{whose} {asks} for no method {label!r}"
    if not any(table.place(e, m) for e in having for m in e.methods if m.display == label):
        metric = table.metric if isinstance(table.metric, str) else "its metric"
        return f"{whose} {does} not compute the table's metric ({metric}) for {label!r}"
    return (
        f"each cell of {key!r} for {label!r} shows the number its experiment's name or model "
        "gives instead"
    )


def _plot(raw: Mapping[str, Any], number: int) -> PlotSpec:
    where = f"plot {number}"
    _known(raw, PLOT_KEYS, where)
    kind = raw.get("kind", "curve")
    if kind not in PLOT_KINDS:
        raise InvalidInputError(f"{where} kind = {kind!r}; choose one of {', '.join(PLOT_KINDS)}")
    metric = raw.get("metric", "")
    if kind in ("curve", "summary", "layers"):
        _metrics([metric], f"{where} metric")
    elif "metric" in raw:  # it would be ignored without a word
        draws = "seconds against input length" if kind == "time" else "attribution values"
        raise InvalidInputError(
            f"{where} kind = {kind} draws {draws}, no metric; take metric = {metric!r} out"
        )
    return PlotSpec(
        metric=str(metric),
        kind=kind,
        title=_title(raw, where, ""),
        name=_file_name(raw, where, f"plot{number}"),
    )


#: what a table's rows, column groups and columns can be
AXES = ("method", "dataset", "model", "experiment")
AXIS_DEFAULTS = {"rows": "method", "groups": "dataset", "columns": "model"}
PLOT_KINDS = ("curve", "time", "summary", "distribution", "layers")


def _distinct_axes(raw: Mapping[str, Any], axes: dict[str, str], where: str) -> None:
    """Refuse a table whose rows, groups and columns share an axis, naming the two and,
    where one was left to its default, that default and the setting that fixes it (a
    clash with a key the user never wrote reads as no mistake of theirs)."""
    keys = [key for key, value in axes.items() if value != "none"]
    for position, first in enumerate(keys):
        for second in keys[position + 1 :]:
            if axes[first] != axes[second]:
                continue
            axis = axes[first]
            defaulted = [key for key in (first, second) if key not in raw]
            if not defaulted:
                raise InvalidInputError(
                    f'{where}: {first} and {second} both name "{axis}"; give each a different axis'
                )
            key = defaulted[0]
            given = second if key == first else first
            other = ' = "none" or another axis' if key == "groups" else " = another axis"
            raise InvalidInputError(
                f'{where}: {key} (default "{axis}") is also {given}; set {key}{other}'
            )


def _known(raw: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise InvalidInputError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(allowed))}"
        )


def _positive(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(
            f"'{where}' must be a whole number of at least 1, not {toml_phrase(value)}"
        )
    return value


def _optional_positive(value: Any, where: str) -> int | None:
    return None if value is None else _positive(value, where)


def _int_list(raw: Any, where: str) -> Sequence[int]:
    if not isinstance(raw, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in raw
    ):
        raise InvalidInputError(f"'{where}' must be a list of whole numbers, e.g. [0, 1, 2]")
    if len(set(raw)) < len(raw):
        raise InvalidInputError(f"'{where}' lists a value twice")
    return raw


def _optional_str(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"'{where}' must be a non-empty string")
    return value
