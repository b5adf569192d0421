"""The ``normxlogit bench`` command line: run, status, export, report, merge, and its
one-line refusals."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from normxlogit.bench import ResultStore, load_config, run_bench

from .helpers import run_cli, stored, write_config


def test_cli_run_status_export_report(tmp_path, sentiment_model):
    config = write_config(tmp_path, sentiment_model, limit=4)
    ran = run_cli("bench", str(config))
    assert ran.returncode == 0, ran.stderr
    assert "N/A" in ran.stderr and (tmp_path / "grid.sqlite").is_file()
    status = run_cli("bench", "status", str(config))
    assert status.returncode == 0 and "8 of 8 instances done" in status.stdout
    status = run_cli("bench", "status", str(config), "--limit", "2")  # as a run with it counts
    assert status.returncode == 0 and "4 of 4 instances done" in status.stdout
    status = run_cli("bench", "status", str(config), "--limit", "0")
    assert status.returncode != 0 and "--limit 0: must be at least 1" in status.stderr
    exported = run_cli("bench", "export", "--store", str(tmp_path / "grid.sqlite"))
    assert exported.returncode == 0
    lines = exported.stdout.strip().splitlines()
    assert lines[0].startswith(
        "model,dataset,dataset_path,split,dataset_options,max_new_tokens,instance,method"
    )
    assert len(lines) - 1 == 2 * 4 * (9 + 9 + 3)
    parquet = tmp_path / "values.parquet"
    run_cli(
        "bench",
        "export",
        "--store",
        str(tmp_path / "grid.sqlite"),
        "-f",
        "parquet",
        "-o",
        str(parquet),
    )
    assert len(pd.read_parquet(parquet)) == len(lines) - 1
    report = run_cli("bench", "report", str(config))
    assert report.returncode == 0, report.stderr
    assert "±: the standard error" not in (tmp_path / "grid-report" / "report.md").read_text()
    report = run_cli("bench", "report", str(config), "--standard-error")
    assert report.returncode == 0, report.stderr
    assert (
        "±: the standard error over the instances"
        in (tmp_path / "grid-report" / "report.md").read_text()
    )
    report = run_cli("bench", "report", str(config), "--versus", "random")
    assert report.returncode == 0, report.stderr
    assert "each method minus random, paired over instances" in report.stdout
    report = run_cli("bench", "report", str(config), "--versus", "Random")
    assert report.returncode != 0 and "--versus 'Random' is no method" in report.stderr
    assert "Traceback" not in report.stderr


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["bench", "missing.toml"], "does not exist"),
        (["bench", "status", "grid.toml"], "no results store"),
        (["bench", "export", "--store", "absent.sqlite"], "no results store"),
        (["bench", "export", "--store", "x.sqlite", "-f", "parquet"], "--output"),
        (["bench", "grid.toml", "--limit", "0"], "at least 1"),
        (["bench", "grid.toml", "--store", "nowhere/x.sqlite"], "does not exist"),
        (["bench", "grid.toml", "--engine", "spark"], "unknown engine"),
        (["bench", "grid.toml", "--experiment", "nope"], "no experiment named nope"),
        (["bench", "grid.toml", "--method", "nope"], "no method shown as nope"),
        (["bench", "grid.toml", "--batch-size", "0"], "at least 1"),
        (["bench", "grid.toml", "--rows-per-forward", "0"], "at least 1"),
        (["bench", "grid.toml", "--tokens-per-forward", "0"], "at least 1"),
        (["bench", "grid.toml", "--execution-option", "batch_size=8"], "no execution option"),
        (["bench", "grid.toml", "--execution-option", "=8"], "[METHOD.]OPTION=VALUE"),
        (["bench", "grid.toml", "--threads", "0"], "--threads 0: must be at least 1"),
        (["bench", "grid.toml", "--device", "tpu9"], "no torch device"),
        (["bench", "grid.toml", "--engine", "ray", "--device", "cpu"], "local engine"),
        (["bench", "merge", "absent.sqlite", "--into", "x.sqlite"], "no results store"),
    ],
)
def test_cli_mistakes_are_one_line_and_exit_2(tmp_path, sentiment_model, args, pattern):
    write_config(tmp_path, sentiment_model)
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert pattern in " ".join(result.stderr.split())
    assert not (tmp_path / "grid.sqlite").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cli_refuses_a_gpu_this_machine_lacks(tmp_path, sentiment_model):
    write_config(tmp_path, sentiment_model)
    result = run_cli("bench", "grid.toml", "--device", "cuda", cwd=tmp_path)
    assert result.returncode == 2 and "no CUDA GPU" in result.stderr
    assert not (tmp_path / "grid.sqlite").exists()


def test_cli_merge(tmp_path, sentiment_model):
    config = load_config(write_config(tmp_path, sentiment_model, methods='["random"]', limit=3))
    with ResultStore(tmp_path / "gpu.sqlite") as store:
        run_bench(config, store)
    result = run_cli("bench", "merge", "gpu.sqlite", "--into", "main.sqlite", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "added 3 instances, 3 explanations" in " ".join(result.stderr.split())
    pd.testing.assert_frame_equal(stored(tmp_path / "main.sqlite"), stored(tmp_path / "gpu.sqlite"))
