"""Round thirty-four of new-user probes, probe b, P08: a method option written at its
default value keyed a cell of its own, so ``integrated_gradients`` and the same with
``options = { steps = 50 }`` (50 being the default) passed the duplicate check, were both
computed and exported as two settings with identical values, and spelling a default out in
a config computed the method again. Written and implied defaults now key one cell; stores
holding keys with defaults spelt out (a preset's ReAGent) move them on open. Tiny models."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from normxlogit.bench import ResultStore, load_config, plan, run_bench
from normxlogit.bench.results import status_frame
from normxlogit.bench.spec import MethodSpec, canonical, current_method_key, result_options
from normxlogit.common.errors import InvalidInputError
from normxlogit.methods.presets import preset_options

from .bench.helpers import EXPERIMENTS, _save_tiny, stored, table_counts, write_config

METHOD_TABLES = ("explanations", "evaluations", "skipped")
RANDOM = '{"name":"random","options":{}}'
#: the key stores of pi-Soft's ReAGent hold (experiments/stores/pisoft-classification):
#: the preset spells out ReAGent's defaults
PISOFT_REAGENT = (
    '{"name":"reagent","options":{"keep_top_n":3,"max_probe_steps":32,"num_probes":2,'
    '"replacing_ratio":0.25,"stopping_condition_top_k":3}}'
)


def _config(folder: Path, model: Path, methods: str, name: str = "grid") -> Path:
    sub = folder / name
    sub.mkdir(exist_ok=True)
    return write_config(sub, model, methods=methods, metrics='["comp_cd"]', limit=2)


def _keys(path: Path) -> set[str]:
    """The method keys a store holds, read with SQL of its own."""
    with sqlite3.connect(path) as conn:
        union = " UNION ".join(f"SELECT method FROM {table}" for table in METHOD_TABLES)
        return {row[0] for row in conn.execute(union)}


# ------------------------------------------------------------------ keys
@pytest.mark.parametrize(
    ("name", "option"),
    [("integrated_gradients", "steps = 50"), ("random", "equal = false")],
)
def test_an_option_at_its_default_keys_the_cell_of_leaving_it_out(
    tmp_path, tiny_classifier, name, option
):
    plain = load_config(_config(tmp_path, tiny_classifier, f'["{name}"]', "plain"))
    written = f'[{{ name = "{name}", options = {{ {option} }} }}]'
    spelt = load_config(_config(tmp_path, tiny_classifier, written, "spelt"))
    key = spelt.experiments[0].methods[0].key
    assert key == plain.experiments[0].methods[0].key == canonical({"name": name, "options": {}})


def test_an_option_off_its_default_stays_in_the_key(tmp_path, tiny_classifier):
    methods = '[{ name = "integrated_gradients", options = { steps = 4 } }]'
    spec = load_config(_config(tmp_path, tiny_classifier, methods)).experiments[0].methods[0]
    assert spec.key == '{"name":"integrated_gradients","options":{"steps":4}}'


def test_a_default_is_compared_by_value_not_by_truth():
    """``True`` is never the count 1, and 1 is 1.0 (the method reads it as its float)."""
    assert result_options("random", {"equal": True}) == {"equal": True}
    assert result_options("random", {"equal": 0}) == {"equal": 0}
    assert result_options("lime", {"kernel_width": 1}) == {}
    assert result_options("lime", {"kernel_width": 0.75}) == {"kernel_width": 0.75}
    assert result_options("nothing_registered", {"steps": 50}) == {"steps": 50}


@pytest.mark.parametrize(
    ("name", "option", "shown"),
    [
        ("integrated_gradients", "steps = 50", "steps = 50 is the default of integrated_gradients"),
        ("random", "equal = false", "equal = false is the default of random"),
    ],
)
def test_a_default_written_out_is_refused_as_a_second_method(
    tmp_path, tiny_classifier, name, option, shown
):
    methods = (
        f'[{{ name = "{name}", label = "A" }}, '
        f'{{ name = "{name}", label = "B", options = {{ {option} }} }}]'
    )
    with pytest.raises(InvalidInputError) as caught:
        load_config(_config(tmp_path, tiny_classifier, methods))
    message = str(caught.value)
    assert "methods A and B compute the same results" in message
    assert f"({shown}, the same as leaving it out); keep one" in message
    assert "\n" not in message


# ------------------------------------------------------------------ stores
@pytest.fixture(scope="module")
def sentiment(tmp_path_factory) -> Path:
    """A saved tiny BERT with SST-2's labels (negative, positive)."""
    return _save_tiny(tmp_path_factory.mktemp("tiny-sentiment"), seed=0)


@pytest.fixture(scope="module")
def filled(tmp_path_factory, sentiment) -> tuple[Path, Path]:
    """A config of the random baseline and the store it filled."""
    folder = tmp_path_factory.mktemp("filled")
    config_path = _config(folder, sentiment, '["random"]')
    with ResultStore(folder / "results.sqlite") as store:
        run_bench(load_config(config_path), store)
    return config_path, folder / "results.sqlite"


def _spelt_out(store: Path, folder: Path) -> Path:
    """A copy of ``store`` as normxlogit wrote it for ``options = { equal = false }``."""
    copy = folder / "spelt.sqlite"
    copy.write_bytes(store.read_bytes())
    with sqlite3.connect(copy) as conn:
        for table in METHOD_TABLES:
            conn.execute(
                f"UPDATE {table} SET method=? WHERE method=?",
                ('{"name":"random","options":{"equal":false}}', RANDOM),
            )
    return copy


def test_a_config_spelling_a_default_out_computes_nothing_again(tmp_path, filled, sentiment):
    _, store = filled
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(store.read_bytes())
    methods = '[{ name = "random", options = { equal = false } }]'
    spelt = load_config(_config(tmp_path, sentiment, methods))
    with ResultStore(copy) as results:
        assert run_bench(spelt, results).units == 0
    assert _keys(copy) == {RANDOM}
    assert {**table_counts(copy), "runs": 0} == {**table_counts(store), "runs": 0}


def test_a_store_with_a_default_in_its_keys_resolves_to_the_cells(tmp_path, filled):
    config_path, store = filled
    old = _spelt_out(store, tmp_path)
    with ResultStore(old, create=False) as results:  # bench status opens it so
        frame = status_frame(load_config(config_path), results)
        (cell,) = plan(load_config(config_path), results)
    assert frame[["done", "state"]].values.tolist() == [[2, "done"]]
    assert cell.done == 2 and not cell.units
    assert _keys(old) == {RANDOM}
    assert table_counts(old) == table_counts(store)
    assert stored(old).equals(stored(store))


def test_a_store_holding_both_spellings_keeps_one_copy(tmp_path, filled):
    _, store = filled
    both = tmp_path / "both.sqlite"
    both.write_bytes(store.read_bytes())
    with ResultStore(both) as results:
        results.merge_from(_spelt_out(store, tmp_path))
    assert _keys(both) == {RANDOM}
    assert table_counts(both) == table_counts(store)


# ------------------------------------------------------------------ committed keys
def test_the_pisoft_reagent_key_stores_hold_is_the_presets_cell():
    spec = MethodSpec("reagent", preset_options("pi-soft", "reagent"))
    assert current_method_key(PISOFT_REAGENT) == spec.key == '{"name":"reagent","options":{}}'


def test_the_committed_pisoft_config_finds_the_reagent_cells_its_stores_hold():
    config = load_config(EXPERIMENTS / "pisoft-classification.toml")
    keys = {m.key for e in config.experiments for m in e.methods if m.name == "reagent"}
    assert keys == {current_method_key(PISOFT_REAGENT)}


def test_a_key_of_a_method_no_longer_registered_keeps_its_options():
    key = '{"name":"gone_method","options":{"steps":50}}'
    assert current_method_key(key) == key
    assert json.loads(current_method_key(RANDOM)) == {"name": "random", "options": {}}
