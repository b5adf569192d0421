"""Data sets of the HF hub through the ``datasets`` library (the optional extra ``hub``).

``hub:<dataset>[/<config>]`` names one: ``hub:glue/sst2``, ``hub:imdb``; an owner-qualified
name takes its config third (``hub:nyu-mll/glue/sst2``) or a trailing slash without one
(``hub:stanfordnlp/imdb/``). Columns are mapped as :func:`~normxlogit.data.read_examples`
maps a file's header; ``ClassLabel`` names become the labels. The library is imported only
here, when such a name is used, so ``import normxlogit.data`` stays light.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from ..common.errors import InvalidInputError, NormXLogitError
from .files import LABEL_COLUMNS, PAIR_COLUMNS, TEXT_COLUMNS, Example, checked_text

PREFIX = "hub:"
HUB_LABEL_COLUMNS = (*LABEL_COLUMNS, "answer")
INSTALL = "pip install 'normxlogit[hub]'"


def parse(spec: str) -> tuple[str, str | None]:
    """(dataset, config) of a ``hub:`` name."""
    parts = spec.removeprefix(PREFIX).split("/")
    if len(parts) == 3:
        name, config = f"{parts[0]}/{parts[1]}", parts[2]
    else:
        name, config = parts[0], parts[1] if len(parts) == 2 else ""
    if len(parts) > 3 or not all(name.split("/")):
        raise InvalidInputError(
            f"{spec!r} is not a hub data set name; write hub:<dataset>[/<config>] (e.g. "
            "hub:glue/sst2) or hub:<owner>/<dataset>/[<config>]"
        )
    return name, config or None


def _library() -> Any:
    try:
        import datasets
    except ImportError:
        raise InvalidInputError(
            f"hub: data sets are read with the HF datasets library, which is not installed: "
            f"{INSTALL} (or pip install 'datasets>=2.19')"
        ) from None
    return datasets


def _call(spec: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(...)``, any failure of the library turned into an error naming the fix."""
    try:
        return function(*args, **kwargs)
    except NormXLogitError:
        raise
    except Exception as error:  # the library's own errors: network, unknown name, options
        raise InvalidInputError(
            f"{spec}: the datasets library failed ({type(error).__name__}: {error}); check the "
            "data set and config names on the hub, the options, and that the data is in your "
            "HF cache or the hub can be reached"
        ) from error


def _splits(spec: str, library: Any, name: str, config: str | None, options: dict) -> list[str]:
    return list(_call(spec, library.get_dataset_split_names, name, config, **options))


def _default_split(splits: list[str]) -> str:
    """``validation`` where there is one (hub test sets are often unlabelled), else
    ``test``, else the first."""
    return next((s for s in ("validation", "test") if s in splits), splits[0] if splits else "")


def _columns(spec: str, columns: list[str]) -> tuple[tuple[str, ...], str | None]:
    """The text column(s) and the label column (None if there is none)."""
    label = next((c for c in HUB_LABEL_COLUMNS if c in columns), None)
    for first, second in PAIR_COLUMNS:
        if first in columns and second in columns:
            return (first, second), label
    text = next((c for c in TEXT_COLUMNS if c in columns), None)
    if text is None:
        raise InvalidInputError(
            f"{spec} has no text column: expected one of {', '.join(TEXT_COLUMNS)} or a pair "
            f"such as sentence1/sentence2; its columns: {', '.join(columns)}; download it and "
            "rename the column, then read the file by its path"
        )
    return (text,), label


def _label_kind(feature: Any) -> tuple[str, tuple[str, ...]]:
    """("names" | "bool" | "int" | "float" | "other", label names) of a label feature."""
    names = getattr(feature, "names", None)
    if names:
        return "names", tuple(map(str, names))
    dtype = str(getattr(feature, "dtype", ""))
    if dtype == "bool":
        return "bool", ("false", "true")
    if dtype.startswith(("int", "uint")):
        return "int", ()
    if dtype.startswith("float"):
        return "float", ()
    return "other", ()


def hub_info(spec: str) -> Any:
    """The :class:`~normxlogit.data.DatasetInfo` of a hub data set, from its metadata."""
    from .registry import DatasetInfo

    name, config = parse(spec)
    library = _library()
    splits = _splits(spec, library, name, config, {})
    builder = _call(spec, library.load_dataset_builder, name, config)
    features = builder.info.features or {}
    fields, label = _columns(spec, list(features))
    kind, labels = _label_kind(features[label]) if label else ("other", ())
    return DatasetInfo(
        name=spec,
        task="regression" if kind == "float" else "classification",
        labels=labels,
        splits=tuple(splits),
        default_split=_default_split(splits),
        fields=fields,
        description=f"{name}{f' ({config})' if config else ''} from the HF hub, through the "
        "datasets library",
    )


def load_hub(
    spec: str, split: str | None = None, *, limit: int | None = None, **options: Any
) -> list[Example]:
    """The examples of a hub data set's split (default ``validation``, else ``test``).

    ``options`` go to ``datasets.load_dataset`` (``revision=``, ``data_files=`` ...).
    Class labels are ids (``-1``, an unlabelled row, becomes None), booleans 0/1,
    scores floats.
    """
    name, config = parse(spec)
    library = _library()
    splits = _splits(spec, library, name, config, options)
    split = _default_split(splits) if split is None else split
    if splits and split not in splits:
        raise InvalidInputError(f"{spec} has no split {split!r}; choose one of {', '.join(splits)}")
    dataset = _call(spec, library.load_dataset, name, config, split=split, **options)
    columns = list(getattr(dataset, "column_names", None) or dataset.features)
    fields, label = _columns(spec, columns)
    kind, _ = _label_kind(dataset.features[label]) if label else ("other", ())
    source = f"{spec} ({split} split)"
    examples = []
    for index, row in enumerate(itertools.islice(dataset, limit)):
        texts = [checked_text(row, key, source, index + 1) for key in fields]
        text = texts[0] if len(texts) == 1 else (texts[0], texts[1])
        examples.append(Example(text, _label(row[label], kind) if label else None, index))
    return examples


def _label(value: Any, kind: str) -> int | float | str | None:
    if value is None:
        return None
    if kind == "float":
        return float(value)
    if kind in ("names", "int", "bool"):
        return None if int(value) < 0 else int(value)
    return value
