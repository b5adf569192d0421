"""Every evaluation data set by name: what it is (:class:`DatasetInfo`) and how to read it.

``load_dataset(name, split)`` is the one entry point the benchmark uses. A name is a
registered data set (:func:`list_datasets`), ``hub:<dataset>[/<config>]`` for the HF
``datasets`` library, or the path of a user's own file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..common.errors import InvalidInputError, InvalidOptionError
from .boolq import BOOLQ_LABELS, BOOLQ_SPLITS, read_boolq
from .files import Example, read_examples
from .glue import (
    GLUE_SPLITS,
    HALF_SPLITS,
    MNLI_LABELS,
    QNLI_LABELS,
    SST2_LABELS,
    read_mnli,
    read_qnli,
    read_sst2,
    read_stsb,
)
from .imdb import IMDB_LABELS, IMDB_SPLITS, read_imdb
from .masked_pairs import BLIMP_SPLITS, read_blimp_masked
from .prompts import TELLMEWHY_SPLITS, WIKIBIO_SPLITS, read_tellmewhy, read_wikibio
from .sources import check_limit, check_split, shared_file

HUB_PREFIX = "hub:"


@dataclass(frozen=True)
class DatasetInfo:
    """What a data set holds: its task, label names (in id order; () for a regression),
    splits, the names of the text parts, and where it comes from."""

    name: str
    task: Literal["classification", "regression", "generation", "masked_lm"]
    labels: tuple[str, ...]
    splits: tuple[str, ...]
    default_split: str
    fields: tuple[str, ...]
    description: str


@dataclass(frozen=True)
class _Entry:
    info: DatasetInfo
    reader: Callable[..., list[Example]]
    options: tuple[str, ...] = ()  # keyword options the reader takes beyond split/path/limit


def _halves(name: str) -> str:
    return (
        f"only the {name} dev set is staged, so split train = its even rows (0, 2, 4, ...), "
        "heldout = its odd rows (experiments run on these), dev = all rows"
    )


def _read_blimp(split: str, *, tokenizer: Any = None, **options: Any) -> list[Example]:
    if options.get("path") is None:
        shared_file("blimp")  # a missing staged folder is named first, with the fix
    if tokenizer is None or isinstance(tokenizer, (str, Path)):
        raise InvalidOptionError(
            "blimp needs tokenizer=...: the masked LM's tokenizer, which decides which token "
            "is masked (normxlogit.load(name).tokenizer, or normxlogit.loading."
            "load_tokenizer(name) without the weights; the bench passes its model's)"
        )
    return read_blimp_masked(split, tokenizer=tokenizer, **options)


_ENTRIES: dict[str, _Entry] = {
    entry.info.name: entry
    for entry in (
        _Entry(
            DatasetInfo(
                "sst2",
                "classification",
                SST2_LABELS,
                GLUE_SPLITS,
                "dev",
                ("sentence",),
                "GLUE SST-2 movie-review sentences (sst2/train.tsv 67,349, sst2/dev.tsv 872)",
            ),
            read_sst2,
        ),
        _Entry(
            DatasetInfo(
                "mnli",
                "classification",
                MNLI_LABELS,
                HALF_SPLITS,
                "heldout",
                ("premise", "hypothesis"),
                f"MNLI dev-matched pairs (mnli/dev_matched.jsonl, 9,815); {_halves('MNLI')}",
            ),
            read_mnli,
        ),
        _Entry(
            DatasetInfo(
                "qnli",
                "classification",
                QNLI_LABELS,
                HALF_SPLITS,
                "heldout",
                ("question", "sentence"),
                f"GLUE QNLI dev pairs (qnli/dev.tsv, 5,463); {_halves('QNLI')}",
            ),
            read_qnli,
        ),
        _Entry(
            DatasetInfo(
                "stsb",
                "regression",
                (),
                GLUE_SPLITS,
                "dev",
                ("sentence1", "sentence2"),
                "GLUE STS-B sentence pairs scored 0-5 (stsb/train.tsv 5,749, stsb/dev.tsv 1,500)",
            ),
            read_stsb,
        ),
        _Entry(
            DatasetInfo(
                "imdb",
                "classification",
                IMDB_LABELS,
                IMDB_SPLITS,
                "test",
                ("text",),
                "IMDb reviews: a 2,000-review balanced subset of the aclImdb test split "
                "(imdb/test_subset_2000.jsonl)",
            ),
            read_imdb,
        ),
        _Entry(
            DatasetInfo(
                "boolq",
                "classification",
                BOOLQ_LABELS,
                BOOLQ_SPLITS,
                "val",
                ("question", "passage"),
                "ERASER BoolQ yes/no questions (boolq_eraser/: val 1,491, test 2,807, "
                "test_original 2,817); the passage is the evidence span (the original BoolQ "
                "passage), the whole Wikipedia document with passage='document', or the evidence "
                "in context words of its document with passage='window' (plausibility: "
                "evidence marks the human rationale), or the evidence sentences with context "
                "sentences on each side with passage='sentences' (context attribution: the "
                "sentences are segments, the evidence sentences marked)",
            ),
            read_boolq,
            ("passage", "context", "max_words"),
        ),
        _Entry(
            DatasetInfo(
                "tellmewhy",
                "generation",
                (),
                TELLMEWHY_SPLITS,
                "test",
                ("prompt",),
                "TellMeWhy why-questions about short narratives, prompts in ReAGent's setting "
                "(narrative + question): test = the 464 annotated test questions, reagent = "
                "ReAGent's 20 benchmark prompts",
            ),
            read_tellmewhy,
        ),
        _Entry(
            DatasetInfo(
                "wikibio",
                "generation",
                (),
                WIKIBIO_SPLITS,
                "test",
                ("prompt",),
                "WikiBio biographies to continue: the first sentence of the first 100 "
                "articles of each split (wikibio/<split>_100.summary), detokenised",
            ),
            read_wikibio,
        ),
        _Entry(
            DatasetInfo(
                "blimp",
                "masked_lm",
                (),
                BLIMP_SPLITS,
                "heldout",
                ("sentence",),
                "BLiMP minimal pairs (blimp/<paradigm>.jsonl; by default the NormXLogit "
                "paper's five paradigms) as a masked LM's inputs: the target token masked "
                "for the masked LM's tokenizer=..., the evidence words from a dependency "
                "parse; "
                "heldout = each paradigm's odd pairs, train = the even ones",
            ),
            _read_blimp,
            ("tokenizer", "paradigms", "pipeline"),
        ),
    )
}


def list_datasets() -> list[str]:
    """The names of the registered data sets."""
    return list(_ENTRIES)


def dataset_options(name: str) -> tuple[str, ...]:
    """The keyword options a registered data set's reader takes beyond split, path and
    limit (``tokenizer`` for a data set built for a model's tokenizer)."""
    name = _checked_name(name)
    if name not in _ENTRIES:
        raise _unknown(name)
    return _ENTRIES[name].options


def dataset_info(name: str) -> DatasetInfo:
    """What ``name`` holds: a registered data set, a ``hub:`` data set (its metadata is
    fetched), or a user's file (read, and its task guessed from its labels)."""
    name = _checked_name(name)
    if name.startswith(HUB_PREFIX):
        from .hub import hub_info

        return hub_info(name)
    if name in _ENTRIES:
        return _ENTRIES[name].info
    if Path(name).is_file():
        return _file_info(name, read_examples(name))
    raise _unknown(name)


def load_dataset(
    name: str,
    split: str | None = None,
    *,
    limit: int | None = None,
    path: str | Path | None = None,
    **options: Any,
) -> list[Example]:
    """The examples of a split (default: the data set's ``default_split``).

    Classification labels are ids into ``dataset_info(name).labels``, regression labels
    floats; each example's ``row`` is its row in the file. ``limit`` keeps the first
    examples of the split, ``path=`` reads your own file (or folder) of the same format,
    and ``options`` go to the reader (``passage=`` for boolq; for ``hub:`` names, to
    ``datasets.load_dataset``). A name that is the path of a file is read with
    :func:`read_examples` (labels as written, names stay names).
    """
    limit = check_limit(limit)
    name = _checked_name(name)
    _check_path(path)
    if name.startswith(HUB_PREFIX):
        if path is not None:
            raise InvalidOptionError(
                f"path= does not apply to {name}; read a local file with load_dataset(<its path>)"
            )
        from .hub import load_hub

        return load_hub(name, split, limit=limit, **options)
    entry = _ENTRIES.get(name)
    if entry is None:
        if Path(name).is_file():
            if split is not None or path is not None or options:
                raise InvalidOptionError(
                    f"{name} is read as a user file, which has no splits or options; it "
                    "takes a limit only (load_dataset(file, limit=N); in a bench config "
                    "limit = N beside dataset, or --limit). To read your own copy of a "
                    "registered data set, name that data set and give the file as path "
                    '(path= in Python, path = "..." beside dataset in a bench config)'
                )
            return read_examples(name, limit)
        raise _unknown(name)
    unknown = sorted(set(options) - set(entry.options))
    if unknown:
        takes = ", ".join(entry.options) or "none"
        raise InvalidOptionError(
            f"{name} takes no option {unknown[0]!r}; its options: {takes}. The split, "
            "limit and path are no options: they are load_dataset's own arguments (split=, "
            "limit=, path=), and in a bench config they go beside dataset (split = ..., "
            "limit = ... or --limit, path = ...), not in options"
        )
    split = check_split(
        name, entry.info.default_split if split is None else split, entry.info.splits
    )
    return entry.reader(split, path=path, limit=limit, **options)


def _checked_name(name: Any) -> str:
    """``name`` as text (a file's path may come as a Path); anything else is refused in
    one line, not by the string method it lacks."""
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str):
        raise InvalidInputError(
            f"name= must be a string (a data set such as 'sst2', "
            f"{HUB_PREFIX}<dataset>, or a file's path), not {type(name).__name__}"
        )
    return name


def _check_path(path: Any) -> None:
    """Refuse a ``path=`` that is no file or folder path (a list of files, a number)."""
    if path is None or isinstance(path, str):
        return
    if isinstance(path, os.PathLike) and isinstance(os.fspath(path), str):
        return
    raise InvalidInputError(
        f"path= must be one file's or folder's path (a str or Path), not "
        f"{type(path).__name__}; read several files with one load_dataset call each"
    )


def _unknown(name: str) -> InvalidInputError:
    return InvalidInputError(
        f"unknown data set {name!r}; choose one of {', '.join(_ENTRIES)}, "
        f"{HUB_PREFIX}<dataset>[/<config>] for the HF datasets library, or give the path of "
        "an existing file (.tsv, .csv, .jsonl, or one text per line)"
    )


#: label ids a user's file may hold: above any vocabulary's size (a language model's label
#: is a token id), below what listing one name per id could hold in memory
MAX_LABEL_INDEX = 2**20


def _file_info(name: str, examples: list[Example]) -> DatasetInfo:
    """A user file's info, the task guessed from its labels: whole numbers from 0 are class
    ids, other numbers scores, names stay names (in order of first appearance), and so do
    labels that are no ids (-1, true): they must match the model's names."""
    labels = [e.label for e in examples if e.label is not None]
    task: Literal["classification", "regression"] = "classification"
    names: tuple[str, ...] = ()
    whole = [label for label in labels if isinstance(label, int) and not isinstance(label, bool)]
    if labels and len(whole) == len(labels) and min(whole) >= 0:  # ids: 0, 1, ...
        if max(whole) >= MAX_LABEL_INDEX:  # one name per id up to it would fill the memory
            raise InvalidInputError(
                f"{name}: label {max(whole)} is no label index a model has (they stay below "
                f"{MAX_LABEL_INDEX:,}); write each label as its index (0, 1, ...) or its name"
            )
        names = tuple(str(i) for i in range(max(whole) + 1))
    elif labels and all(
        isinstance(label, (int, float)) and not isinstance(label, bool) for label in labels
    ):
        task = "regression"
    elif labels:
        names = tuple(dict.fromkeys(str(label) for label in labels))
    first = examples[0].text
    fields = ("text",) if isinstance(first, str) else ("text1", "text2")
    return DatasetInfo(name, task, names, ("file",), "file", fields, f"user file {name}")
