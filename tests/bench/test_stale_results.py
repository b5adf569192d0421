"""Results of other weights or data: a changed model or data file is refused, not mixed."""

from __future__ import annotations

import sqlite3

import pytest
import torch

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.results import status_frame
from normxlogit.common.errors import StaleResultsError

from ..conftest import SHARED_DATA
from .helpers import _save_tiny, table_counts, write_config


def test_a_model_whose_weights_changed_is_refused_not_mixed(tmp_path):
    """Results are keyed by the model's name; new weights under the old name (a retrained
    adapter, an overwritten folder) must not be scored together with the old results."""
    model = _save_tiny(tmp_path / "model", seed=0)
    store_path = tmp_path / "results.sqlite"
    with ResultStore(store_path) as store:
        run_bench(load_config(write_config(tmp_path, model, methods='["random"]', limit=2)), store)
        fingerprint = store.model_fingerprint(str(model))
    assert fingerprint is not None and len(fingerprint) == 32
    _save_tiny(model, seed=0)  # saved again, the same weights: the same model
    larger = load_config(write_config(tmp_path, model, methods='["random"]', limit=3))
    with ResultStore(store_path) as store:
        assert run_bench(larger, store).units == 1
    _save_tiny(model, seed=1)  # other weights under the same path
    before = table_counts(store_path)
    largest = load_config(write_config(tmp_path, model, methods='["random"]', limit=4))
    with (
        ResultStore(store_path) as store,
        pytest.raises(StaleResultsError, match=r"weights, task or tokenizer changed.*--store"),
    ):
        run_bench(largest, store)
    results = ("explanations", "evaluations", "metric_values", "skipped")
    assert {k: table_counts(store_path)[k] for k in results} == {k: before[k] for k in results}
    with ResultStore(tmp_path / "new.sqlite") as store:  # what the message advises
        assert run_bench(largest, store).units == 2
        assert store.model_fingerprint(str(model)) != fingerprint


def test_a_data_file_that_changed_is_refused_not_mixed(tmp_path, sentiment_model):
    data = tmp_path / "sst2.tsv"
    original = (SHARED_DATA / "sst2" / "dev.tsv").read_text().splitlines(keepends=True)[:6]
    data.write_text("".join(original))
    body = f'path = "{data}"'
    config = write_config(tmp_path, sentiment_model, body, methods='["random"]', limit=4)
    store_path = tmp_path / "results.sqlite"
    with ResultStore(store_path) as store:
        run_bench(load_config(config), store)
    before = table_counts(store_path)
    sentence, label = original[2].rstrip("\n").split("\t")  # instance 1
    for changed in (
        f"an entirely different sentence .\t{label}\n",
        f"{sentence}\t{1 - int(label)}\n",
    ):
        data.write_text("".join([*original[:2], changed, *original[3:]]))
        with (
            ResultStore(store_path) as store,
            pytest.raises(StaleResultsError, match=r"instance 1 another text or label.*changed"),
        ):
            run_bench(load_config(config), store)
        assert table_counts(store_path) == before
    data.write_text("".join(original))  # the data the store was filled from: nothing to do
    with ResultStore(store_path) as store:
        assert run_bench(load_config(config), store).units == 0


def test_status_only_reads_the_store_a_run_may_be_writing(tmp_path, sentiment_model):
    data = tmp_path / "sst2.tsv"
    original = (SHARED_DATA / "sst2" / "dev.tsv").read_text().splitlines(keepends=True)[:7]
    data.write_text("".join(original))
    body = f'path = "{data}"'
    config = load_config(write_config(tmp_path, sentiment_model, body, methods='["random"]'))
    store_path = tmp_path / "results.sqlite"
    with ResultStore(store_path) as store:
        run_bench(config, store, limit=2)
    before = table_counts(store_path)
    writer = sqlite3.connect(store_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a run in the middle of storing a unit
    try:
        with ResultStore(store_path, create=False) as store:
            store._conn.execute("PRAGMA busy_timeout=1000")  # a write would fail, not wait
            frame = status_frame(config, store)
            assert frame[["done", "total"]].values.tolist() == [[2, 6]]
            sentence, label = original[2].rstrip("\n").split("\t")  # instance 1
            data.write_text("".join([*original[:2], f"changed .\t{label}\n", *original[3:]]))
            with pytest.raises(StaleResultsError, match=r"instance 1 another text or label"):
                status_frame(config, store)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert table_counts(store_path) == before  # the 4 instances beyond the run: not recorded


def test_merge_refuses_results_of_another_model_under_the_same_name(tmp_path):
    model = _save_tiny(tmp_path / "model", seed=0)
    config = load_config(write_config(tmp_path, model, methods='["random"]', limit=2))
    with ResultStore(tmp_path / "a.sqlite") as store:
        run_bench(config, store)
    _save_tiny(model, seed=1)
    with ResultStore(tmp_path / "b.sqlite") as store:
        run_bench(config, store)
    before = table_counts(tmp_path / "a.sqlite")
    with (
        ResultStore(tmp_path / "a.sqlite") as store,
        pytest.raises(StaleResultsError, match="model changed between the runs"),
    ):
        store.merge_from(tmp_path / "b.sqlite")
    assert table_counts(tmp_path / "a.sqlite") == before


def test_fingerprint_is_of_the_weights_not_the_object(sentiment_model):
    import normxlogit
    from normxlogit.model.fingerprint import model_fingerprint

    first, second = normxlogit.load(str(sentiment_model)), normxlogit.load(str(sentiment_model))
    assert model_fingerprint(first) == model_fingerprint(second)
    with torch.no_grad():
        next(second.model.parameters()).view(-1)[0] += 1e-6
    assert model_fingerprint(first) != model_fingerprint(second)
