"""Round eighteen of new-user probes (bench): labels and names with ``|`` or LaTeX's
special characters in the report, a registered method's code in the export, config
checks at read time (table metric keys, seeds, method labels and options, layers of
methods without them, plots), a layer's advice in a run, and a relative data path read
beside the config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.report import _tex, write_report
from normxlogit.bench.results import export_frame
from normxlogit.common.errors import InvalidInputError

from .bench.helpers import config_refusal
from .conftest import explainable, invoke_in
from .registered import ramp_method

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]


def _data(folder: Path, name: str = "d.jsonl") -> Path:
    path = folder / name
    path.write_text(
        "".join(json.dumps({"text": t, "label": i % 3}) + "\n" for i, t in enumerate(TEXTS))
    )
    return path


def _config(folder: Path, model: Path, top: str = "", experiment: str = "", tail: str = ""):
    """One experiment of ``model`` on a 4-text file: ``top`` before it (methods, plots...),
    ``experiment`` inside it, ``tail`` after it."""
    data = _data(folder)
    path = folder / "grid.toml"
    path.write_text(
        f'title = "t"\nseeds = [0]\nmetrics = ["comp_cd"]\nchunk_size = 4\n{top}\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\nlimit = 2\n{experiment}\n' + tail
    )
    return path


_refused = config_refusal


# ------------------------------------------------------------------ P03
def test_p03_pipes_and_tex_specials_in_labels_and_names_keep_the_report_tables(
    tmp_path, tiny_classifier
):
    """A ``|`` in a label or experiment name split a Markdown cell (table 1 stopped being
    a table; the time table's numbers moved a column); ``^ ~ { }`` reached the LaTeX raw."""
    path = _config(
        tmp_path,
        tiny_classifier,
        '[[methods]]\nname = "normxlogit"\nlabel = "NX|v2"\n'
        '[[methods]]\nname = "random"\nlabel = "r^2 {x}~"\n',
        'name = "tiny|cls"',
        '[[tables]]\nmetric = "comp_cd"\ncolumns = "experiment"\n[[plots]]\nkind = "time"\n',
    )
    config = load_config(path)
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(config, store)
        write_report(config, store, tmp_path / "report")
    lines = (tmp_path / "report" / "report.md").read_text().splitlines()
    for rows in _tables(lines):  # every row of a table has its header's cells
        counts = {len(_cells(row)) for row in rows}
        assert len(counts) == 1, rows
    assert any(r"NX\|v2" in line for line in lines) and any(r"tiny\|cls" in line for line in lines)
    tex = (tmp_path / "report" / "table1.tex").read_text()
    assert r"r\textasciicircum{}2 \{x\}\textasciitilde{} &" in tex
    assert _tex("a\\b_{c}") == r"a\textbackslash{}b\_\{c\}"


def _tables(lines: list[str]) -> list[list[str]]:
    tables, current = [], []
    for line in [*lines, ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells (``\\|`` stays inside its cell)."""
    return row.replace(r"\|", "\0").strip().strip("|").split("|")


# ------------------------------------------------------------------ P04
def _ramp(step: float):
    return ramp_method("ramp18", step)


def test_p04_the_export_tells_two_versions_of_a_registered_method_apart(
    registries, tmp_path, tiny_classifier
):
    """Both versions were stored (the key holds the code) but exported as identical rows."""
    path = _config(tmp_path, tiny_classifier, 'methods = ["ramp18", "random"]')
    with ResultStore(tmp_path / "s.sqlite") as store:
        for step in (1.0, -1.0):
            _ramp(step)
            run_bench(load_config(path), store)
        frame = export_frame(store)
    keys = [column for column in frame.columns if column not in ("value", "gold")]
    assert not frame.duplicated(keys).any()
    codes = frame.groupby("method")["method_code"].agg(lambda c: set(c.dropna()))
    assert len(codes["ramp18"]) == 2 and codes["random"] == set()


# ------------------------------------------------------------------ P05
def test_p05_a_table_metric_keyed_by_no_data_set_is_refused(tmp_path, tiny_classifier):
    """The table vanished from the report, exit 0."""
    path = _config(
        tmp_path,
        tiny_classifier,
        'methods = ["random"]',
        tail='[[tables]]\nmetric = { d = "comp_cd" }\n',
    )
    _refused(path, "table 1 metric names 'd'", "no data set", "d.jsonl")
    # the data set's name, and a value of the groups axis, stay accepted
    data = str(tmp_path / "d.jsonl")
    path.write_text(path.read_text().replace('{ d = "comp_cd" }', f'{{ "{data}" = "comp_cd" }}'))
    assert load_config(path).tables[0].metric == {data: "comp_cd"}


# ------------------------------------------------------------------ P06
@pytest.mark.parametrize("seed", [2**31, 2**63, -(2**31) - 1])
def test_p06_seeds_beyond_32_bits_are_refused_when_read(tmp_path, tiny_classifier, seed):
    """2**63 ended status and run in an OverflowError; 2**31 passed status and was refused
    by run as a "protocol setting seed"."""
    path = _config(tmp_path, tiny_classifier, 'methods = ["random"]')
    path.write_text(path.read_text().replace("seeds = [0]", f"seeds = [{seed}]"))
    _refused(path, f"'seeds' value {seed} is too large; at most 2147483647")


# ------------------------------------------------------------------ P09
def test_p09_a_layer_past_the_model_is_advised_in_the_configs_terms(tmp_path, tiny_classifier):
    """The run advised "a negative index", which the config refuses."""
    path = _config(tmp_path, tiny_classifier, 'methods = [{name = "normxlogit", layer = 99}]')
    with ResultStore(tmp_path / "s.sqlite") as store, pytest.raises(InvalidInputError) as caught:
        run_bench(load_config(path), store)
    message = str(caught.value)
    assert "layer = 99 does not exist" in message and "negative" not in message
    assert 'layer = "all"' in message


# ------------------------------------------------------------------ P11
def test_p11_a_relative_data_path_is_read_beside_the_config(tmp_path, tiny_classifier, monkeypatch):
    """From another folder, the data file beside the config was an "unknown data set"."""
    folder = tmp_path / "sub"
    folder.mkdir()
    _data(folder, "d2.jsonl")
    path = folder / "rel.toml"
    path.write_text(
        'metrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d2.jsonl"\n'
    )
    monkeypatch.chdir(tmp_path)
    experiment = load_config(path).experiments[0]
    assert experiment.dataset.name == "d2.jsonl"  # keyed by its path from the config's folder
    read = experiment.dataset.located(experiment.dataset.name)
    assert Path(read).resolve() == (folder / "d2.jsonl").resolve()
    assert experiment.name.endswith(":d2.jsonl")
    (folder / "d2.jsonl").unlink()
    _refused(path, "'d2.jsonl'", "current folder", str(folder / "d2.jsonl"), "beside the config")


# ------------------------------------------------------------------ P12
@pytest.mark.parametrize("label", ['""', '"  "', "5"])
def test_p12_a_method_label_is_checked_like_an_experiment_name(tmp_path, tiny_classifier, label):
    """``label = ""`` became the method's name without a word, ``label = 5`` the text "5"."""
    path = _config(tmp_path, tiny_classifier, f'methods = [{{name = "random", label = {label}}}]')
    _refused(path, "method 'random' label ", "give a label", "leave label out")


# ------------------------------------------------------------------ noted 1
@pytest.mark.parametrize("steps", ["-5", "nan"])
def test_method_options_are_checked_when_the_config_is_read(tmp_path, tiny_classifier, steps):
    """``steps = -5`` passed bench status and was refused only by bench run."""
    path = _config(
        tmp_path,
        tiny_classifier,
        f'methods = [{{name = "integrated_gradients", options = {{steps = {steps}}}}}]',
    )
    _refused(path, "integrated_gradients", "steps=")


# ------------------------------------------------------------------ noted 2
@pytest.mark.parametrize(
    ("method", "layer", "why"),
    [
        ("random", "1", "same at every layer"),
        ("integrated_gradients", "1", "no per-layer variant"),
        ("integrated_gradients", '"all"', "no per-layer variant"),
    ],
)
def test_a_layer_is_refused_for_a_method_without_layers(
    tmp_path, tiny_classifier, method, layer, why
):
    """``layer = 1`` on random made a new cell of the same scores."""
    path = _config(tmp_path, tiny_classifier, f'methods = [{{name = "{method}", layer = {layer}}}]')
    _refused(path, f"method '{method}' layer = ", why, "take layer out")


def test_an_experiments_layer_leaves_random_at_its_final_layer(tmp_path, tiny_classifier):
    """The experiment's layer index applies to the methods that have one."""
    path = _config(tmp_path, tiny_classifier, 'methods = ["normxlogit", "random"]', "layer = 1")
    layers = {m.name: m.layer for m in load_config(path).experiments[0].methods}
    assert layers == {"normxlogit": 1, "random": None}


def test_explain_refuses_a_layer_index_for_random(tmp_path, tiny_classifier):
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match="same at every layer"):
        model.explain("a fine day", method="random", layer=1)
    assert model.explain("a fine day", method="random", layer="all").scores.ndim == 2
    final = model.explain("a fine day", method="random", layer=model.num_layers)
    assert final.scores.ndim == 1  # the final layer, as sanity re-explains it, stays
    result = invoke_in(
        tmp_path, "explain", "a fine day", "-m", str(tiny_classifier), "--method", "random",
        "--layer", "1", "-f", "json",
    )  # fmt: skip
    assert result.exit_code == 2 and "same at every layer" in result.output


# ------------------------------------------------------------------ noted 3
@pytest.mark.parametrize(
    ("plot", "words"),
    [
        ('kind = "time"\nmetric = "nope"', ("plot 1 kind = time", "take metric = 'nope' out")),
        ('kind = "distribution"\nmetric = "comp_cd"', ("plot 1 kind = distribution",)),
        ('metric = "comp_cd"\ntitle = 5', ("plot 1 title must be a string",)),
    ],
)
def test_a_plots_ignored_metric_or_non_string_title_is_refused(
    tmp_path, tiny_classifier, plot, words
):
    path = _config(tmp_path, tiny_classifier, 'methods = ["random"]', tail=f"[[plots]]\n{plot}\n")
    _refused(path, *words)


def test_a_tables_non_string_title_is_refused(tmp_path, tiny_classifier):
    tail = '[[tables]]\nmetric = "comp_cd"\ntitle = ["a"]\n'
    path = _config(tmp_path, tiny_classifier, 'methods = ["random"]', tail=tail)
    _refused(path, "table 1 title must be a string")
