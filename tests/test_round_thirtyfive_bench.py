"""Round thirty-five of new-user probes, probe b: a bench method whose every instance has
its own target as contrast showed "–: not computed yet" in the report and was listed as
not computed by the page, with no "Left out" note, although the run was done (P01);
``soft_nc`` and ``soft_ns`` were keyed by ``pis``, which only the pi-Soft metrics read
(P02); ``token_f1`` and ``token_iou`` were keyed by ``top_k`` and ``score_threshold``
whatever ``discretize`` chose, so ``discretize = "rationale"`` computed them again when
either changed (P03). Values stored under the keys of before move to the default's."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.report import build_table, default_tables
from normxlogit.bench.results import experiment_results, export_frame
from normxlogit.bench.runner import protocol_keys
from normxlogit.bench.spec import DatasetSpec, MethodSpec
from normxlogit.bench.store import CellKey, StoredEvaluation

from .bench.helpers import _save_tiny
from .test_round_thirtyfour_bench_keys import _held  # the rows a store holds


@pytest.fixture(scope="module")
def sentiment_model(tmp_path_factory) -> Path:
    """A saved tiny BERT with SST-2's labels (negative, positive)."""
    return _save_tiny(tmp_path_factory.mktemp("tiny-sentiment"), seed=0)


# ------------------------------------------------------------------ P01
OWN_CONTRAST = """seeds = [0]
metrics = ["comp_cd"]
[[methods]]
name = "gradient_x_input"
target = "label"
[[methods]]
name = "gradient_x_input"
label = "GxI"
target = "label"
contrast = "negative"
[[experiments]]
name = "own"
model = "{model}"
dataset = "{data}"
"""


@pytest.fixture(scope="module")
def own_contrast(tmp_path_factory, sentiment_model) -> tuple[Path, Path]:
    """A finished grid whose contrastive method has every instance's target (its gold
    label, negative for all) as its contrast: no instance has a value."""
    folder = tmp_path_factory.mktemp("own-contrast")
    data = folder / "neg.tsv"
    data.write_text("sentence\tlabel\na dull film\t0\nthe plot is bad\t0\nso slow\t0\n")
    config = folder / "grid.toml"
    config.write_text(OWN_CONTRAST.format(model=sentiment_model, data=data))
    store = folder / "s.sqlite"
    with pytest.warns(Warning), ResultStore(store) as opened:
        run_bench(load_config(config), opened)
    return config, store


def _tables(config: Path, store: Path):
    loaded = load_config(config)
    with ResultStore(store) as opened:
        results = [result.common() for result in experiment_results(loaded, opened)]
    return [build_table(spec, results) for spec in default_tables(loaded)]


def test_p01_the_report_shows_a_cell_left_out_not_computed(own_contrast):
    (table,) = _tables(*own_contrast)
    text = table.to_markdown()
    assert "| GxI | n/a |" in text
    assert "not computed yet" not in text
    assert "Left out, with no value" in text and "GxI / " in text and " 3." in text
    assert "every instance of the cell is left out" in text
    assert table.partial == {}


def test_p01_the_pages_table_cell_is_left_out(own_contrast):
    (table,) = _tables(*own_contrast)
    shown = table.to_dict()
    cells = {row["label"]: row["cells"][0]["value"] for row in shown["rows"]}
    assert cells["GxI"] == "n/a"
    assert "GxI" in shown["left_out_note"]


def test_p01_the_pages_experiment_view_does_not_call_it_not_computed(own_contrast):
    pytest.importorskip("fastapi")
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    config, store = own_contrast
    browser = BenchBrowser([BenchEntry.parse(f"{config}={store}")])
    view = browser.experiment(0, "own")
    assert view["not_computed"] == []
    assert view["left_out"] == {"GxI": 3}
    assert "Left out, with no value" in view["left_out_note"] and "GxI 3" in view["left_out_note"]
    with pytest.raises(InvalidInputError, match="Left out, with no value"):
        browser.instances(0, "own", "GxI", "comp_cd")


def test_p01_a_method_not_run_is_still_not_computed(own_contrast, tmp_path):
    config, _ = own_contrast
    store = tmp_path / "empty.sqlite"
    with ResultStore(store) as opened:  # nothing run: every cell not computed yet
        results = [r.common() for r in experiment_results(load_config(config), opened)]
    (table,) = [build_table(spec, results) for spec in default_tables(load_config(config))]
    assert "–: not computed yet." in table.to_markdown()
    assert table.to_dict()["left_out_note"] == ""


# ------------------------------------------------------------------ P02 and P03
def _keys(metrics: list[str], protocol: dict) -> dict[str, str]:
    experiment = SimpleNamespace(
        protocol=protocol, metrics=metrics, generation=False, evaluate_every=1
    )
    return protocol_keys(experiment)


#: soft_nc's key in experiments/stores/pisoft-table2-cpu.sqlite.xz (samples = 15)
TABLE2 = (
    '{"distribution":"auto","pis":[0.05,0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.45,0.5,0.55,0.6,'
    '0.65,0.7,0.75,0.8,0.85,0.9,0.95],"routing":"dynamic","samples":15,"soft_protect":"special"}'
)
SOFT = ["soft_nc", "soft_ns", "pi_soft_nc", "pi_soft_ns"]


def test_p02_pis_keys_the_pi_soft_metrics_alone():
    default, changed = _keys(SOFT, {"samples": 15}), _keys(SOFT, {"samples": 15, "pis": [0.2]})
    assert default["soft_nc"] == changed["soft_nc"] == TABLE2
    assert default["soft_ns"] == changed["soft_ns"] == TABLE2
    assert changed["pi_soft_nc"] != default["pi_soft_nc"]
    assert changed["pi_soft_ns"] != default["pi_soft_ns"]


def test_p02_samples_still_keys_soft_nc():
    assert _keys(["soft_nc"], {"samples": 2}) != _keys(["soft_nc"], {"samples": 3})


#: token_f1's key at the defaults (discretize = "top_k"), as stores hold it
TOKEN_F1 = '{"discretize":"top_k","revision":1,"score_threshold":0.5,"top_k":5}'
RATIONALE = TOKEN_F1.replace('"top_k",', '"rationale",')


@pytest.mark.parametrize("metric", ["token_f1", "token_iou"])
def test_p03_discretize_chooses_what_keys_token_f1(metric):
    def key(**protocol) -> str:
        return _keys([metric], protocol)[metric]

    assert key() == key(score_threshold=0.7) == TOKEN_F1
    assert key(top_k=3) != TOKEN_F1
    rationale = key(discretize="rationale")
    assert rationale == key(discretize="rationale", top_k=2, score_threshold=0.7) == RATIONALE
    threshold = key(discretize="threshold")
    assert threshold == key(discretize="threshold", top_k=2)
    assert threshold != key(discretize="threshold", score_threshold=0.7)


def test_p03_auprc_keeps_its_key():
    assert _keys(["auprc"], {"discretize": "rationale", "top_k": 2}) == _keys(["auprc"], {})


def _store(path, entries: list[tuple[str, str, float]]) -> None:
    """A store with one value per (metric, protocol key, value) entry, on instance 0."""
    dataset = DatasetSpec("sst2", "dev")
    with ResultStore(path) as store:
        for metric, key, value in entries:
            cell = CellKey("tb2", dataset.key, MethodSpec("random").key, 0)
            evaluation = StoredEvaluation(0, metric, key, 0.1, [(None, None, value, None)])
            store.add_unit(cell, [], [evaluation])


def test_p02_p03_values_stored_under_an_unread_setting_move_to_the_default_key(tmp_path):
    path = tmp_path / "old.sqlite"
    other_pis = TABLE2.replace('"pis":[0.05,', '"pis":[0.07,')
    rationale_k2 = RATIONALE.replace('"top_k":5', '"top_k":2')
    top_k_2 = TOKEN_F1.replace('"top_k":5', '"top_k":2')
    threshold = TOKEN_F1.replace('"top_k",', '"threshold",').replace('"top_k":5', '"top_k":2')
    _store(
        path,
        [
            ("soft_nc", other_pis, 0.2),
            ("pi_soft_nc", other_pis, 0.3),
            ("token_f1", rationale_k2, 0.5),
            ("token_f1", RATIONALE, 0.5),  # both keys held: one copy kept
            ("token_iou", top_k_2, 0.4),
            ("token_iou", threshold, 0.6),
        ],
    )
    with ResultStore(path):  # opening moves the outdated keys
        pass
    assert _held(path) == [
        ("pi_soft_nc", other_pis, 0.3),
        ("soft_nc", TABLE2, 0.2),
        ("token_f1", RATIONALE, 0.5),
        ("token_iou", TOKEN_F1.replace('"top_k",', '"threshold",'), 0.6),
        ("token_iou", top_k_2, 0.4),
    ]


SOFT_GRID = """seeds = [0]
metrics = ["soft_nc", "soft_ns"]
methods = ["gradient_x_input"]

[protocol]
samples = 2
pis = {pis}

[[experiments]]
model = "{model}"
dataset = "{data}"
"""


def test_p02_changing_pis_computes_no_soft_nc_again(tmp_path, sentiment_model):
    data = tmp_path / "two.tsv"
    data.write_text("sentence\tlabel\na dull film\t0\na fine and warm film\t1\n")
    path = tmp_path / "s.sqlite"
    for pis in ("[0.1, 0.5]", "[0.2, 0.6]"):
        config = tmp_path / "soft.toml"
        config.write_text(SOFT_GRID.format(pis=pis, model=sentiment_model, data=data))
        with ResultStore(path) as store:
            run_bench(load_config(config), store)
    with ResultStore(path) as store:
        frame = export_frame(store)
    assert frame.groupby("metric")["protocol"].nunique().to_dict() == {"soft_nc": 1, "soft_ns": 1}
    assert len(frame) == 4
