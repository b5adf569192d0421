"""Round seventeen of new-user probes, P01 to P07: ``bench export`` onto its store or a
TOML file, outputs onto a file of the model folder, experiment names checked like method
labels, empty protocol grids, and two experiments on one model and data set (the report
table and the run's progress)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.progress import BenchProgress
from normxlogit.bench.report import build_table, default_tables
from normxlogit.bench.results import experiment_results
from normxlogit.common.errors import InvalidInputError, OutputPathError
from normxlogit.evaluation import Protocol

from .conftest import invoke_in

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]


def _data(folder: Path) -> Path:
    path = folder / "d.jsonl"
    path.write_text(
        "".join(json.dumps({"text": t, "label": i % 3}) + "\n" for i, t in enumerate(TEXTS))
    )
    return path


def _two(
    folder: Path, model: Path, first: str = "small", second: str = "big", extra: str = ""
) -> Path:
    """Two experiments on one model and data set, differing only in their limit."""
    data = _data(folder)
    path = folder / "two.toml"
    path.write_text(
        'title = "t"\nseeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nname = "{first}"\nmodel = "{model}"\ndataset = "{data}"\nlimit = 2\n'
        f'[[experiments]]\nname = "{second}"\nmodel = "{model}"\ndataset = "{data}"\nlimit = 3\n'
        + extra
    )
    return path


# ------------------------------------------------------------------ P01, P02
@pytest.mark.parametrize("name", ["x.db", "store", "new.csv"])
def test_export_refuses_its_own_store_as_output(tmp_path, name):
    """P01: ``bench export --store S -o S`` replaced the store with its CSV."""
    store = tmp_path / name
    ResultStore(tmp_path / "made.sqlite").close()  # a new store is refused a table's name
    (tmp_path / "made.sqlite").rename(store)
    before = store.read_bytes()
    for spelling in (name, f"./{name}"):
        result = invoke_in(
            tmp_path, "bench", "export", "--store", name, "-o", spelling, "-f", "csv"
        )
        assert result.exit_code != 0
        assert "is the store being exported" in result.output
    link = tmp_path / "link.db"
    link.symlink_to(store)
    result = invoke_in(tmp_path, "bench", "export", "--store", name, "-o", "link.db", "-f", "csv")
    assert "is the store being exported" in result.output
    assert store.read_bytes() == before


@pytest.mark.parametrize("name", ["new.csv", "new.JSON", "grid.toml"])
def test_a_new_store_is_refused_a_tables_or_configs_name(tmp_path, name):
    """Noted in round seventeen: ``bench run --store new.csv`` made an SQLite store under a
    CSV name, which an export to that name then took for its output."""
    with pytest.raises(OutputPathError, match=r"that name says .*, and a store is SQLite"):
        ResultStore(tmp_path / name)
    assert not (tmp_path / name).exists()
    result = invoke_in(tmp_path, "bench", "export", "--store", name, "-o", "out.csv")
    assert result.exit_code != 0 and "Traceback" not in result.output


def test_export_refuses_a_toml_output_for_csv(tmp_path):
    """P02: ``-f csv -o CONFIG.toml`` overwrote the bench config."""
    ResultStore(tmp_path / "s.sqlite").close()
    config = tmp_path / "c.toml"
    config.write_text('title = "t"\n')
    result = invoke_in(
        tmp_path, "bench", "export", "--store", "s.sqlite", "-o", "c.toml", "-f", "csv"
    )
    assert result.exit_code != 0
    assert "names a TOML file" in result.output and ".csv" in result.output
    assert config.read_text() == 'title = "t"\n'


# ------------------------------------------------------------------ P07
def _model_copy(tmp_path: Path, tiny_classifier: Path) -> Path:
    model = tmp_path / "m"
    shutil.copytree(tiny_classifier, model)
    return model


@pytest.mark.parametrize(
    "args",
    [
        ("explain", "good film", "-m", "m", "-o", "m/config.json"),
        ("evaluate", "d.jsonl", "-m", "m", "-o", "m/config.json"),
        ("evaluate", "d.jsonl", "-m", "m", "--save", "./m/config.json"),
        ("evaluate", "d.jsonl", "-m", "m", "-o", "m/tokenizer.json"),
    ],
)
def test_outputs_onto_a_file_of_the_model_are_refused(tmp_path, tiny_classifier, args):
    """P07: ``-o``/``--save`` onto the model folder's config.json broke the model."""
    model = _model_copy(tmp_path, tiny_classifier)
    _data(tmp_path)
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    result = invoke_in(tmp_path, *args)
    assert result.exit_code != 0
    assert "is a file of the model m; write elsewhere" in result.output
    assert {p.name: p.read_bytes() for p in model.iterdir()} == before


def test_sanity_refuses_a_file_of_the_model(tmp_path, tiny_classifier):
    model = _model_copy(tmp_path, tiny_classifier)
    _data(tmp_path)
    (model / "old.csv").write_text("keep\n")
    result = invoke_in(tmp_path, "sanity", "d.jsonl", "-m", "m", "-o", "m/old.csv")
    assert result.exit_code != 0
    assert "is a file of the model m" in result.output
    assert (model / "old.csv").read_text() == "keep\n"


def test_a_new_file_inside_the_model_folder_stays_allowed(tmp_path):
    from normxlogit.cli.helpers import refuse_model_file

    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    refuse_model_file(model / "new.json", str(model), "--output")  # not there yet
    refuse_model_file(tmp_path / "x.json", str(model), "--output")
    refuse_model_file(model / "config.json", "tinyllama", "--output")  # no folder
    with pytest.raises(Exception, match="is a file of the model"):
        refuse_model_file(model / "config.json", str(model), "--output")


# ------------------------------------------------------------------ P05
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (" spaced ", "with spaces around it; write it as 'spaced'"),
        ("same ", "with spaces around it"),
        ("a\u200bb", "U+200B"),
        ("", "give a name"),
        ("   ", "give a name"),
    ],
)
def test_experiment_names_are_checked_like_method_labels(tmp_path, tiny_classifier, name, expected):
    path = _two(tmp_path, tiny_classifier, first=name)
    with pytest.raises(InvalidInputError, match="experiment 1 name") as caught:
        load_config(path)
    assert expected in str(caught.value)


# ------------------------------------------------------------------ P06
@pytest.mark.parametrize("grid", ["ratios", "pis", "drop_k"])
def test_an_empty_grid_is_called_empty(grid):
    with pytest.raises(InvalidInputError, match=f"{grid} is empty; give at least one value"):
        Protocol(**{grid: ()})


def test_an_empty_grid_on_the_command_line(tmp_path, tiny_classifier):
    _data(tmp_path)
    result = invoke_in(
        tmp_path, "evaluate", "d.jsonl", "-m", str(tiny_classifier), "--protocol", "pis=[]"
    )
    assert result.exit_code != 0
    assert "pis is empty" in result.output


# ------------------------------------------------------------------ P03, P04
def test_the_default_table_splits_experiments_on_one_model_and_data_set(tmp_path, tiny_classifier):
    """P03: both experiments' numbers went into one (dataset, model) cell; the last won."""
    config = load_config(_two(tmp_path, tiny_classifier))
    (spec,) = default_tables(config)
    assert spec.columns == "experiment"
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(config, store)
        results = experiment_results(config, store)
    table = build_table(spec, results)
    assert [column[1] for column in table.columns] == ["small", "big"]
    assert len([v for v in table.values.values() if isinstance(v, float)]) == 2


def test_the_default_table_keeps_model_columns_without_a_clash(tmp_path, tiny_classifier):
    other = tmp_path / "other"
    shutil.copytree(tiny_classifier, other)
    data = _data(tmp_path)
    path = tmp_path / "c.toml"
    path.write_text(
        'title = "t"\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "{data}"\n'
        f'[[experiments]]\nmodel = "{other}"\ndataset = "{data}"\n'
    )
    (spec,) = default_tables(load_config(path))
    assert spec.columns == "model"


def test_a_table_whose_cells_clash_is_refused_at_load(tmp_path, tiny_classifier):
    extra = '[[tables]]\ntitle = "x"\nmetric = "comp_cd"\n'
    with pytest.raises(InvalidInputError, match="'small' and 'big' fall in one cell") as caught:
        load_config(_two(tmp_path, tiny_classifier, extra=extra))
    assert 'columns = "experiment"' in str(caught.value)
    fixed = extra + 'columns = "experiment"\n'
    assert load_config(_two(tmp_path, tiny_classifier, extra=fixed)).tables


def test_progress_names_each_experiment_and_never_counts_past_its_total(tmp_path, tiny_classifier):
    """P04: the lines named the last experiment of a shared cell and said 5/3."""
    config = load_config(_two(tmp_path, tiny_classifier))
    buffer = io.StringIO()
    progress = BenchProgress(Console(file=buffer, width=200), log_every=0.0)
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(config, store, progress=progress)
    lines = [line for line in buffer.getvalue().splitlines() if "seed 0" in line]
    assert lines
    for line in lines:  # each line its own experiment's count, never past its total
        assert line.startswith(("small random seed 0 2/2;", "big random seed 0 3/3;")) or (
            line.startswith(("small random seed 0 ", "big random seed 0 "))
            and "5/3" not in line
            and "3/2" not in line
        ), line
    assert any(line.startswith("small ") for line in lines)
    assert any(line.startswith("big ") for line in lines)
    assert lines[-1].endswith("grid 5/5 after 0.0 min") or "grid 5/5" in lines[-1]
