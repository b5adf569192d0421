"""Round thirty-four of new-user probes, probe b: ``bench export`` wrote the data set as
``path or name``, so ``dataset = "sst2", path = "mini.tsv"`` and ``dataset = "mini.tsv"``
(two store keys: with a path, the name chooses the reader and task) exported alike (P01);
``sanity_spearman`` was keyed by ``top_k``, which only ``sanity_top_k`` reads, so changing
``top_k`` computed and stored it again, exported under two protocols with equal values;
values stored under a ``top_k`` key are now moved to the key of the default (P02)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.results import EXPORT_COLUMNS, export_frame
from normxlogit.bench.runner import protocol_keys
from normxlogit.bench.spec import DatasetSpec, MethodSpec
from normxlogit.bench.store import CellKey, StoredEvaluation

from .bench.helpers import _save_tiny


@pytest.fixture(scope="module")
def sentiment_model(tmp_path_factory) -> Path:
    """A saved tiny BERT with SST-2's labels (negative, positive)."""
    return _save_tiny(tmp_path_factory.mktemp("tiny-sentiment"), seed=0)


# ------------------------------------------------------------------ P01
def _store_value(store: ResultStore, dataset: DatasetSpec) -> None:
    cell = CellKey("tb2", dataset.key, MethodSpec("random").key, 0)
    evaluation = StoredEvaluation(0, "comp_cd", "{}", 0.1, [("ratio", 0.1, 0.5, None)])
    store.add_unit(cell, [], [evaluation])


def _exported(tmp_path, *datasets: DatasetSpec):
    with ResultStore(tmp_path / "s.sqlite") as store:
        for dataset in datasets:
            _store_value(store, dataset)
        return export_frame(store)


def test_p01_a_reader_named_with_a_path_and_the_file_itself_export_apart(tmp_path):
    frame = _exported(tmp_path, DatasetSpec("sst2", path="mini.tsv"), DatasetSpec("mini.tsv"))
    keys = [c for c in EXPORT_COLUMNS if c not in ("value", "gold")]
    assert not frame.duplicated(subset=keys).any()
    rows = sorted(zip(frame["dataset"], frame["dataset_path"].fillna("-"), strict=True))
    assert rows == [("mini.tsv", "-"), ("sst2", "mini.tsv")]


def test_p01_two_readers_of_one_file_export_apart(tmp_path):
    frame = _exported(
        tmp_path, DatasetSpec("stsb", path="x.tsv"), DatasetSpec("sst2", path="x.tsv")
    )
    assert sorted(frame["dataset"]) == ["sst2", "stsb"]
    assert set(frame["dataset_path"]) == {"x.tsv"}


def test_p01_a_registered_data_set_exports_as_before(tmp_path):
    frame = _exported(tmp_path, DatasetSpec("sst2", "dev"))
    assert frame["dataset"].tolist() == ["sst2"]
    assert frame["dataset_path"].isna().all()
    assert EXPORT_COLUMNS.index("dataset_path") == EXPORT_COLUMNS.index("dataset") + 1


# ------------------------------------------------------------------ P02
#: the key sanity_spearman's values were stored under with the default settings (top_k 5)
STORED = '{"randomization":"cascading","revision":2,"top_k":5}'


def _keys(protocol: dict) -> dict[str, str]:
    experiment = SimpleNamespace(
        protocol=protocol,
        metrics=["sanity_spearman", "sanity_top_k"],
        generation=False,
        evaluate_every=1,
    )
    return protocol_keys(experiment)


def test_p02_top_k_keys_sanity_top_k_only():
    default, changed = _keys({}), _keys({"top_k": 3})
    assert default["sanity_spearman"] == changed["sanity_spearman"] == STORED
    assert default["sanity_top_k"] == STORED
    assert changed["sanity_top_k"] != STORED and '"top_k":3' in changed["sanity_top_k"]


def test_p02_randomization_still_keys_both():
    default, changed = _keys({}), _keys({"randomization": "independent"})
    assert all(changed[m] != default[m] for m in default)


def _top_k_key(k: int) -> str:
    return STORED.replace('"top_k":5', f'"top_k":{k}')


def _sanity_store(path, entries: list[tuple[str, str, float]]) -> None:
    """A store with one value per (metric, protocol key, value) entry, on instance 0."""
    dataset = DatasetSpec("sst2", "dev")
    with ResultStore(path) as store:
        for metric, key, value in entries:
            cell = CellKey("tb2", dataset.key, MethodSpec("random").key, 0)
            evaluation = StoredEvaluation(0, metric, key, 0.1, [("step", 0.0, value, None)])
            store.add_unit(cell, [], [evaluation])


def _held(path) -> list[tuple[str, str, float]]:
    connection = sqlite3.connect(path)
    rows = connection.execute(
        "SELECT e.metric, e.protocol, v.value FROM evaluations e "
        "JOIN metric_values v ON v.evaluation = e.id ORDER BY 1, 2"
    ).fetchall()
    connection.close()
    return rows


def test_p02_spearman_stored_under_another_top_k_is_read_at_the_default_key(tmp_path):
    path = tmp_path / "old.sqlite"
    _sanity_store(
        path, [("sanity_spearman", _top_k_key(2), 0.25), ("sanity_top_k", _top_k_key(2), 0.5)]
    )
    with ResultStore(path):  # opening moves the outdated key
        pass
    assert _held(path) == [
        ("sanity_spearman", STORED, 0.25),
        ("sanity_top_k", _top_k_key(2), 0.5),
    ]


def test_p02_a_store_holding_both_keys_keeps_one_copy(tmp_path):
    path = tmp_path / "both.sqlite"
    _sanity_store(
        path, [("sanity_spearman", STORED, 0.25), ("sanity_spearman", _top_k_key(3), 0.25)]
    )
    with ResultStore(path):
        pass
    assert _held(path) == [("sanity_spearman", STORED, 0.25)]


def test_p02_a_merge_moves_the_source_key(tmp_path):
    source, into = tmp_path / "source.sqlite", tmp_path / "into.sqlite"
    _sanity_store(source, [])
    _sanity_store(into, [])
    with sqlite3.connect(source) as raw:  # as a normxlogit before the fix wrote it
        raw.execute(
            "INSERT INTO evaluations (model, dataset, instance, method, seed, metric, protocol, "
            "seconds) VALUES ('tb2', ?, 0, ?, 0, 'sanity_spearman', ?, 0.1)",
            (DatasetSpec("sst2", "dev").key, MethodSpec("random").key, _top_k_key(2)),
        )
        raw.execute("INSERT INTO metric_values VALUES (last_insert_rowid(), 'step', 0, 0.25, NULL)")
    with ResultStore(into) as store:
        store.merge_from(source)
    assert _held(into) == [("sanity_spearman", STORED, 0.25)]


SANITY_GRID = """seeds = [0]
metrics = ["sanity_spearman", "sanity_top_k"]
methods = ["random"]

[protocol]
top_k = {top_k}
randomization = "independent"

[[experiments]]
model = "{model}"
dataset = "sst2"
split = "dev"
limit = 2
"""


def _counts(path) -> dict[str, int]:
    connection = sqlite3.connect(path)
    rows = connection.execute("SELECT metric, COUNT(*) FROM evaluations GROUP BY 1").fetchall()
    connection.close()
    return dict(rows)


def test_p02_changing_top_k_computes_sanity_top_k_alone(tmp_path, sentiment_model):
    store_path = tmp_path / "s.sqlite"
    for top_k in (2, 3):
        config = tmp_path / f"k{top_k}.toml"
        config.write_text(SANITY_GRID.format(top_k=top_k, model=sentiment_model))
        with ResultStore(store_path) as store:
            run_bench(load_config(config), store)
    assert _counts(store_path) == {"sanity_spearman": 2, "sanity_top_k": 4}
    with ResultStore(store_path) as store:
        frame = export_frame(store)
    spearman = frame[frame["metric"] == "sanity_spearman"]
    independent = STORED.replace("cascading", "independent")
    assert spearman["protocol"].unique().tolist() == [independent]
