"""Data: a user's files of texts and labels, and every evaluation data set by name.

- :mod:`.files`: reading a user's file (:func:`read_examples`) and the checked building
  blocks (UTF-8, tables, JSON lines) the other readers use.
- :mod:`.glue` (SST-2, STS-B, MNLI, QNLI), :mod:`.imdb`, :mod:`.boolq` (ERASER BoolQ):
  the staged data sets (see ``SOURCES.md`` in the data folder, :func:`data_root`).
- :mod:`.blimp`: BLiMP minimal pairs with their target and evidence words
  (:func:`read_blimp`, :func:`evidence_report`; spaCy is imported only when reading).
- :mod:`.hub`: ``hub:<dataset>[/<config>]`` through the HF ``datasets`` library.
- :mod:`.registry`: :func:`load_dataset` by name, :func:`dataset_info`, :func:`list_datasets`.

Importing this package loads neither torch nor transformers nor datasets nor spaCy.
"""

from ..common.input_paths import decode_utf8, read_text
from .blimp import BlimpPair, evidence_report, read_blimp
from .boolq import read_boolq
from .files import (
    DATA_ENV,
    LABEL_COLUMNS,
    PAIR_COLUMNS,
    TEXT_COLUMNS,
    Example,
    data_root,
    read_examples,
    read_jsonl,
    read_tsv,
    text_lines,
)
from .glue import read_mnli, read_qnli, read_sst2, read_stsb
from .imdb import read_imdb
from .prompts import read_tellmewhy, read_wikibio
from .registry import DatasetInfo, dataset_info, list_datasets, load_dataset

__all__ = [
    "DATA_ENV",
    "LABEL_COLUMNS",
    "PAIR_COLUMNS",
    "TEXT_COLUMNS",
    "BlimpPair",
    "DatasetInfo",
    "Example",
    "data_root",
    "dataset_info",
    "decode_utf8",
    "evidence_report",
    "list_datasets",
    "load_dataset",
    "read_blimp",
    "read_boolq",
    "read_examples",
    "read_imdb",
    "read_jsonl",
    "read_mnli",
    "read_qnli",
    "read_sst2",
    "read_stsb",
    "read_tellmewhy",
    "read_text",
    "read_tsv",
    "read_wikibio",
    "text_lines",
]
