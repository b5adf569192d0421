"""Examples the page may fill the text box with: the registered data sets (from the
shared data folder, where it is staged) and the files named on the command line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..common.errors import InvalidFileError, InvalidInputError
from ..common.input_paths import check_input_file
from ..data.files import check_data_suffix


class ExampleSources:
    """Data sets by name; a request names one of these, never a path."""

    def __init__(self, files: list[Path]):
        self.files: dict[str, Path] = {}
        for path in files:
            path = Path(path).expanduser()
            check_input_file(path, "data file", "pass --data with a data file (.tsv, .csv, .jsonl)")
            check_data_suffix(path, "--data")
            _check_readable(path)
            name = path.name
            while name in self.files:
                name = f"{name}'"
            self.files[name] = path.resolve()

    def listing(self) -> list[dict[str, Any]]:
        from ..data.registry import dataset_info, list_datasets

        listed = [{"name": name, "kind": "file", "task": ""} for name in self.files]
        for name in list_datasets():
            info = dataset_info(name)
            listed.append({"name": name, "kind": "registered", "task": info.task})
        return listed

    def examples(
        self, name: str, limit: int, model: Any = None, shown: str | None = None
    ) -> dict[str, Any]:
        """The first ``limit`` examples of ``name`` (its default split). ``model``: the
        built-in name or folder of the page's model (or the model, loaded), for data sets
        built for a tokenizer; ``shown``: its name on the page."""
        from ..data.registry import dataset_info, dataset_options, list_datasets, load_dataset

        if name in self.files:
            try:
                read = load_dataset(str(self.files[name]), limit=limit)
            except InvalidFileError as error:
                raise InvalidFileError(_segments_from_one(str(error))) from None
            labels: tuple[str, ...] = dataset_info(str(self.files[name])).labels
        elif name in list_datasets():
            options = {}
            if "tokenizer" in dataset_options(name):
                options["tokenizer"] = _masked_lm_tokenizer(name, model, shown)
            read = load_dataset(name, limit=limit, **options)
            labels = dataset_info(name).labels
        else:
            raise InvalidInputError(
                f"no data set {name!r} on this page; start `normxlogit serve --data FILE` to add "
                "your own"
            )
        return {
            "name": name,
            "examples": [
                {
                    "text": e.text if isinstance(e.text, str) else list(e.text),
                    "label": _label(e.label, labels),
                    "foil": e.foil,
                    # a data file's own segments (its passage's, in a pair): the page
                    # lists them one per line in its segments box
                    "segments": list(e.segments) if e.segments is not None else None,
                }
                for e in read
            ],
        }


def _check_readable(path: Path) -> None:
    """Refuse at start, as a misnamed .json is, a data file whose bytes are no text (a
    binary file, NUL bytes, text that is not UTF-8), in the words the page's list of
    examples refused it with; its rows are checked when the page lists them."""
    from ..common.input_paths import read_text

    try:
        read_text(path)
    except InvalidFileError as error:
        raise InvalidFileError(f"--data {error}") from None


def _masked_lm_tokenizer(name: str, model: Any, shown: str | None) -> Any:
    """The tokenizer of the page's model for ``name`` (BLiMP: which token is masked
    depends on it), refused in the page's words when there is none or it has no mask."""
    from ..builtin import BUILTIN_MODELS
    from ..loading import load_tokenizer

    masked = [m.name for m in BUILTIN_MODELS.values() if m.task.startswith("masked LM")]
    choose = f"choose a masked LM, e.g. {', '.join(masked)}" if masked else "choose a masked LM"
    if not model:
        raise InvalidInputError(
            f"{name} examples are chosen for a masked LM's tokenizer (which token is "
            f"masked): {choose} (the examples request's model=NAME)"
        )
    tokenizer = load_tokenizer(model) if isinstance(model, str) else model.tokenizer
    if getattr(tokenizer, "mask_token", None) is None:
        raise InvalidInputError(
            f"{shown or model} is not a masked LM (its tokenizer has no mask token), and "
            f"{name} pairs are asked of a masked LM: {choose}"
        )
    return tokenizer


def _label(label: Any, labels: tuple[str, ...]) -> Any:
    """A label id as its name where the data set names its labels."""
    if isinstance(label, int) and not isinstance(label, bool) and 0 <= label < len(labels):
        return labels[label]
    return label


def _segments_from_one(message: str) -> str:
    """A data file's refusal with a row's segments numbered from 1, as the page numbers
    them (the file reader numbers them from 0, as ``evidence_segments`` indexes them: an
    evidence segment's index is left as it is)."""
    return re.sub(
        r"(?<!evidence )\bsegment (\d+)(?= \(| is\b)",
        lambda m: f"segment {int(m[1]) + 1}",
        message,
    )
