"""Round 45 (b) findings: bench.

- P01: a mistyped bench sub-command before a config (``bench statuss g.toml``,
  ``bench estimate g.toml``) was read as ``bench run``'s config, and typer blamed the
  real config as an extra argument. The unknown word is now named, with the commands
  (and a "did you mean" where one is close; estimate is scripts/gpu/estimate).
- P02: ``target = "label"`` / ``contrast = "label"`` on a data file with no labels ran,
  explaining the prediction (or against nothing) and storing it under "label". It is now
  refused when the data set is loaded, by bench status and bench run, before any cell.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.runner import plan
from normxlogit.cli.bench import unknown_command
from normxlogit.common.errors import InvalidInputError

from .bench.helpers import _save_tiny, run_cli, table_counts

COMMANDS = ["run", "generate", "status", "merge", "export", "report"]


@pytest.fixture(scope="module")
def sentiment_model(tmp_path_factory) -> Path:
    return _save_tiny(tmp_path_factory.mktemp("tiny-sentiment"), seed=0)


# ------------------------------------------------------------------ P01
def test_a_mistyped_command_is_named_with_the_close_one():
    message = unknown_command(["statuss", "g.toml"], COMMANDS, "normxlogit bench")
    assert message is not None
    assert "no bench command 'statuss'" in message
    assert "did you mean status?" in message
    assert "run, generate, status, merge, export, report" in message
    assert "`normxlogit bench CONFIG`" in message


def test_estimate_is_named_as_the_script_it_is():
    for args in (["estimate", "g.toml"], ["estimate"]):
        message = unknown_command(args, COMMANDS, "normxlogit bench")
        assert message is not None
        assert "no bench command 'estimate'" in message
        assert "scripts/gpu/estimate" in message


def test_a_config_path_is_left_to_run(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grid").write_text("")  # a config without a suffix, that exists
    for args in (["g.toml"], ["missing.toml", "x"], ["sub/grid"], ["grid", "x"], ["--limit"]):
        assert unknown_command(args, COMMANDS, "normxlogit bench") is None, args


def test_the_command_line_names_the_word_not_the_config(tmp_path: Path):
    (tmp_path / "g.toml").write_text("seeds = [0]\n")
    done = run_cli("bench", "statuss", "g.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert "no bench command 'statuss'" in done.stderr
    assert "did you mean status?" in done.stderr
    assert "unexpected extra" not in done.stderr
    assert "bench run" not in done.stderr
    done = run_cli("bench", "estimate", "g.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert "scripts/gpu/estimate" in done.stderr


# ------------------------------------------------------------------ P02
def _grid(folder: Path, model: Path, data: str, method: str, metric: str = "comp_cd") -> Path:
    (folder / "d.tsv").write_text(data)
    path = folder / "grid.toml"
    path.write_text(
        f"""seeds = [0]
metrics = ["{metric}"]

[[methods]]
name = "integrated_gradients"
{method}

[[experiments]]
model = "{model}"
dataset = "d.tsv"
"""
    )
    return path


NO_LABELS = "text\ngood film\nbad film\n"


def _refusals(config: Path) -> list[str]:
    """What the plan (bench status) and run_bench say; the store is left empty."""
    said = []
    with ResultStore(config.with_suffix(".sqlite")) as store:
        for attempt in (
            lambda: plan(load_config(config), store, with_units=False),
            lambda: run_bench(load_config(config), store),
        ):
            with pytest.raises(InvalidInputError) as caught:
                attempt()
            said.append(str(caught.value))
    assert table_counts(config.with_suffix(".sqlite"))["explanations"] == 0
    return said


@pytest.mark.parametrize(
    ("method", "fix"),
    [
        ('target = "label"', 'target = "prediction"'),
        ('contrast = "label"', "take contrast out of method "),
    ],
)
def test_label_target_or_contrast_without_labels_is_refused(
    tmp_path: Path, sentiment_model: Path, method: str, fix: str
):
    config = _grid(tmp_path, sentiment_model, NO_LABELS, method)
    for message in _refusals(config):
        assert method in message, message
        assert "needs each instance's gold label" in message
        assert "d.tsv gives no gold labels" in message
        assert "label / score / gold / classification column" in message
        assert fix in message
        assert "\n" not in message


def test_a_label_metric_without_labels_is_refused_at_the_plan(
    tmp_path: Path, sentiment_model: Path
):
    config = _grid(tmp_path, sentiment_model, NO_LABELS, "", metric="comp_acc")
    for message in _refusals(config):
        assert "metric comp_acc needs each instance's gold label" in message
        assert "take comp_acc out of the experiment's metrics" in message


def test_labelled_data_and_prediction_targets_still_plan(tmp_path: Path, sentiment_model: Path):
    labelled = _grid(
        tmp_path, sentiment_model, "text\tlabel\ngood\t1\nbad\t0\n", 'target = "label"'
    )
    unlabelled = tmp_path / "p" / "grid.toml"
    unlabelled.parent.mkdir()
    _grid(unlabelled.parent, sentiment_model, NO_LABELS, 'target = "prediction"')
    for config in (labelled, unlabelled):
        with ResultStore(config.with_suffix(".sqlite")) as store:
            cells = plan(load_config(config), store, with_units=False)
        assert [cell.total for cell in cells] == [2]


def test_bench_status_refuses_it_on_a_store_filled_before(tmp_path: Path, sentiment_model: Path):
    """A store filled by a plain run, then the method given target = "label": status says why."""
    config = _grid(tmp_path, sentiment_model, NO_LABELS, "")
    assert run_cli("bench", "run", str(config)).returncode == 0
    config.write_text(
        config.read_text().replace("\n\n[[experiments]]", '\ntarget = "label"\n\n[[experiments]]')
    )
    done = run_cli("bench", "status", str(config))
    assert done.returncode == 2
    assert 'target = "label" needs each instance\'s gold label' in done.stderr
