"""Helpers the bench tests share (and tests elsewhere that build a tiny grid): a saved
tiny classifier, a grid config, the stored values, the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import torch
import transformers as T

from normxlogit.bench import ResultStore
from normxlogit.bench.results import export_frame

from ..cli_inprocess import Ran
from ..cli_inprocess import run_cli as run_in_process
from ..conftest import SMALL, fresh_tokenizer, tokenizer

#: the command line in a process of its own (signals, two processes at once)
CLI = [sys.executable, "-m", "normxlogit"]
#: what a stand-in for an ExperimentResults adds to be read as fully done (the difference
#: tables mark a method not done on every instance of every planned seed)
COMPLETE = {
    "total": 3,
    "done": lambda method, metric: 3,
    "valueless": {},
    "seeds_not_started": lambda method: [],
    "unfinished": lambda methods, metrics: {},
    "correlated_metrics": lambda: [],
}
EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def write_config(folder: Path, model: Path, body: str = "", **values) -> Path:
    """A grid of ``model`` on SST-2 dev; ``values`` replace the defaults below."""
    settings = {
        "metrics": '["comp_cd", "suff_acc", "pi_soft_nc"]',
        "methods": '["normxlogit", "random", "grad_ellm"]',
        "limit": 8,
        "chunk_size": 3,
        **values,
    }
    path = folder / "grid.toml"
    path.write_text(
        f"""title = "tiny grid"
seeds = [0]
metrics = {settings["metrics"]}
methods = {settings["methods"]}
chunk_size = {settings["chunk_size"]}

[protocol]
samples = 2
pis = [0.25, 0.5, 0.75]

[[experiments]]
model = "{model}"
dataset = "sst2"
split = "dev"
limit = {settings["limit"]}
{body}"""
    )
    return path


def stored(path: Path) -> pd.DataFrame:
    """Every metric value in a store, sorted by its full key."""
    with ResultStore(path, create=False) as store:
        frame = export_frame(store)
    keys = ["model", "dataset", "instance", "method", "seed", "metric", "protocol", "x"]
    return frame.sort_values(keys).reset_index(drop=True)


def table_counts(path: Path) -> dict[str, int]:
    with ResultStore(path, create=False) as store:
        return store.counts()


def run_cli(*args: str, cwd: Path | None = None) -> Ran:
    """``python -m normxlogit ARGS`` from ``cwd``, run in this process (see
    :mod:`tests.cli_inprocess`; tests of the process itself run :data:`CLI`)."""
    return run_in_process(*args, cwd=cwd, prog_name="python -m normxlogit")


#: the device's slot script, run as a device command runs it
SLOT = Path(__file__).resolve().parents[2] / "scripts" / "gpu" / "slot"


def run_slot(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """``scripts/gpu/slot ARGS`` run from ``folder`` (a repository copy, as on the device)."""
    return subprocess.run(
        [sys.executable, str(SLOT), *args], cwd=folder, capture_output=True, text=True, timeout=600
    )


def _save_tiny(folder: Path, seed: int) -> Path:
    torch.manual_seed(seed)
    config = T.BertConfig(
        vocab_size=len(tokenizer()),
        num_labels=2,
        id2label={0: "negative", 1: "positive"},
        label2id={"negative": 0, "positive": 1},
        **SMALL,
    )
    T.BertForSequenceClassification(config).eval().save_pretrained(folder)
    fresh_tokenizer().save_pretrained(folder)
    return folder


def config_refusal(path: Path, *words: str) -> str:
    """The one-line refusal ``load_config(path)`` raises, holding each of ``words``."""
    import pytest

    from normxlogit.bench import load_config
    from normxlogit.common.errors import NormXLogitError

    with pytest.raises(NormXLogitError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


def good_manifest() -> dict:
    """A slot part's manifest.json that passes every check: one part, no entries."""
    from normxlogit.bench.slot import FORMAT

    return {
        "format": FORMAT,
        "this_part": "part-1",
        "parts": 1,
        "queue_sha256": "0" * 64,
        "deadline": 60,
        "entries": [],
        "files": [],
    }


def stale_refusals(config: Path, store_path: Path) -> list[str]:
    """What ``bench status`` (the plan) and ``bench run`` say, in that order, on a store
    filled from data that has changed since: each must refuse it."""
    import pytest

    from normxlogit.bench import load_config, run_bench
    from normxlogit.bench.runner import plan
    from normxlogit.common.errors import StaleResultsError

    said = []
    with ResultStore(store_path, create=False) as store:
        for attempt in (lambda: plan(load_config(config), store, with_units=False),
                        lambda: run_bench(load_config(config), store)):  # fmt: skip
            with pytest.raises(StaleResultsError) as caught:
                attempt()
            said.append(str(caught.value))
    return said


def all_done(config: Path, store_path: Path) -> bool:
    """Whether every cell of ``config`` is complete in the store (the data put back)."""
    from normxlogit.bench import load_config
    from normxlogit.bench.runner import plan

    with ResultStore(store_path, create=False) as store:
        return all(cell.done == cell.total for cell in plan(load_config(config), store))


def with_a_seed_not_started(config: Path) -> Path:
    """Run ``config`` (seed 0) into ``grid.sqlite`` beside it, then add seed 1 and run only
    ``random`` there: every other method has a planned seed not started."""
    from normxlogit.bench import ResultStore, load_config, run_bench

    store = config.parent / "grid.sqlite"
    with ResultStore(store) as opened:
        run_bench(load_config(config), opened)
    config.write_text(config.read_text().replace("seeds = [0]", "seeds = [0, 1]"))
    with ResultStore(store) as opened:
        run_bench(load_config(config).only_methods(["random"]), opened)
    return store
