"""Round twenty-one of new-user probes, probe a (the bench and the CLI): a method's target
refused with its experiment and method (P01), every method's layer, target and contrast
checked before the first is computed (P02), a language model's gold labels asked for as
tokens (P03), two experiments sharing cells computing them once (P04), and an output name
of another format not sent to --format (P05). Tiny models, a 4-text data file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.common.errors import InvalidInputError

from .conftest import invoke_in, saved_tiny

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]


def _grid(folder: Path, model: Path, methods: str, experiments: str = "", labels=None) -> Path:
    """A config of ``methods`` (TOML tables) on a 4-text data file with ``model``."""
    labels = labels or [i % 2 for i in range(len(TEXTS))]
    (folder / "d.jsonl").write_text(
        "".join(
            json.dumps({"text": t, "label": y}) + "\n" for t, y in zip(TEXTS, labels, strict=True)
        )
    )
    path = folder / "grid.toml"
    path.write_text(
        'title = "t"\nseeds = [0]\nmetrics = ["comp_cd"]\n'
        + methods
        + (experiments or f'[[experiments]]\nmodel = "{model}"\ndataset = "d.jsonl"\n')
    )
    return path


def _run(path: Path) -> tuple[Exception | None, int]:
    """The refusal of a run of ``path`` (None: it ran) and the explanations it stored."""
    store = path.with_suffix(".sqlite")
    try:
        with ResultStore(store) as opened:
            run_bench(load_config(path), opened)
        refused = None
    except InvalidInputError as error:
        refused = error
    with sqlite3.connect(store) as connection:
        return refused, connection.execute("SELECT COUNT(*) FROM explanations").fetchone()[0]


FIRST = '[[methods]]\nname = "gradient_x_input"\nlabel = "G"\n'


# ------------------------------------------------------------------ P01, P02
@pytest.mark.parametrize(
    ("second", "said"),
    [
        ('target = "joy"', "method N2 target = 'joy': unknown label 'joy'"),
        ('contrast = "joy"', "method N2 contrast = 'joy': unknown label 'joy'"),
        ("layer = 7", "method N2 layer = 7 does not exist"),
    ],
)
def test_p01_p02_every_method_is_checked_before_the_first_is_computed(
    tmp_path, tiny_classifier, second, said
):
    """A bad target said only "unknown label 'joy'"; a bad second method was refused
    after the first had run in full."""
    methods = FIRST + f'[[methods]]\nname = "normxlogit"\nlabel = "N2"\n{second}\n'
    refused, stored = _run(_grid(tmp_path, tiny_classifier, methods))
    assert refused is not None and said in str(refused)
    assert str(refused).startswith("experiment ")
    assert stored == 0  # nothing computed before the refusal


# ------------------------------------------------------------------ P03
def test_p03_a_language_models_gold_labels_are_asked_for_as_tokens(tmp_path):
    """It suggested "whole label indices from 0", which the file had and which no
    language model reads."""
    model = saved_tiny(tmp_path / "lm", "llama", "causal_lm")
    methods = '[[methods]]\nname = "normxlogit"\ntarget = "label"\n'
    refused, _ = _run(_grid(tmp_path, model, methods))
    said = str(refused)
    assert "a language model has no label indices" in said and '"positive"' in said
    assert "indices from 0" not in said


def test_p03_a_classifiers_gold_label_indices_still_run(tmp_path, tiny_classifier):
    methods = '[[methods]]\nname = "normxlogit"\ntarget = "label"\n'
    refused, stored = _run(_grid(tmp_path, tiny_classifier, methods))
    assert refused is None and stored == len(TEXTS)


# ------------------------------------------------------------------ P04
def test_p04_two_experiments_sharing_cells_compute_them_once(tmp_path, tiny_classifier):
    """B (limit 2) computed A's first two instances again, then said "another run on this
    store had stored 1 unit(s) computed here first"."""
    experiments = "".join(
        f'[[experiments]]\nname = "{name}"\nmodel = "{tiny_classifier}"\ndataset = "d.jsonl"\n'
        + extra
        for name, extra in (("A", ""), ("B", "limit = 2\n"), ("C", 'metrics = ["suff_cd"]\n'))
    )
    path = _grid(tmp_path, tiny_classifier, 'methods = ["normxlogit"]\n', experiments)
    with ResultStore(path.with_suffix(".sqlite")) as store:
        report = run_bench(load_config(path), store)
        assert report.stored_elsewhere == 0
        assert report.units == 2  # A's, and C's suff_cd (B's work was A's)
    result = invoke_in(tmp_path, "bench", "run", "grid.toml")
    assert result.exit_code == 0 and "another run" not in result.output
    with sqlite3.connect(path.with_suffix(".sqlite")) as connection:
        rows = connection.execute("SELECT metric, COUNT(*) FROM evaluations GROUP BY metric")
        assert dict(rows) == {"comp_cd": len(TEXTS), "suff_cd": len(TEXTS)}


# ------------------------------------------------------------------ P05
@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("bench", "export", "--store", "s.sqlite", "-o", "x.json"), "x.json names a JSON file"),
        (("explain", "Good.", "-o", "x.csv"), "x.csv names a CSV file"),
        (("evaluate", "d.tsv", "-o", "x.html"), "x.html names an HTML file"),
    ],
)
def test_p05_an_output_of_another_format_is_not_sent_to_format(tmp_path, args, named):
    """ "or pass --format csv/parquet", which was then refused as "names a JSON file"."""
    result = invoke_in(tmp_path, *args)
    said = " ".join(result.output.split())
    assert result.exit_code != 0
    assert f"{named}, a format this command does not write; end the name in ." in said
    assert "--format" not in said
