"""The in-process runner of the command line (:mod:`tests.cli_inprocess`) is no looser than
a subprocess and leaves nothing behind."""

from __future__ import annotations

import logging
import os
import random
import warnings

import torch

from ..cli_inprocess import run_cli


def test_an_exception_let_out_is_a_traceback_and_exit_1(monkeypatch):
    import normxlogit.builtin

    class Broken(dict):
        def values(self):
            raise ValueError("a bug the user would see as a traceback")

    monkeypatch.setattr(normxlogit.builtin, "BUILTIN_MODELS", Broken())
    ran = run_cli("models")
    assert ran.returncode == 1
    assert "Traceback (most recent call last)" in ran.stderr
    assert "ValueError: a bug the user would see as a traceback" in ran.stderr


def test_the_run_leaves_no_state_behind(tmp_path):
    folder, environment = os.getcwd(), dict(os.environ)
    threads, seed = torch.get_num_threads(), torch.get_rng_state()
    python_seed = random.getstate()
    filters, handlers = list(warnings.filters), list(logging.getLogger().handlers)
    (tmp_path / "texts.txt").write_text("a\n\nb\n")
    ran = run_cli(
        "explain", "--input", "texts.txt", "-o", "out.json", cwd=tmp_path, env={"X_RUN": "1"}
    )
    assert ran.returncode == 2 and "line 2" in ran.stderr, ran.stderr
    torch.manual_seed(1234)  # and a run changing torch's state
    after = torch.get_rng_state()
    run_cli("models", env={"OMP_NUM_THREADS": "3"})
    assert os.getcwd() == folder and dict(os.environ) == environment
    assert torch.get_num_threads() == threads and torch.equal(torch.get_rng_state(), after)
    assert not torch.equal(seed, after) and random.getstate() == python_seed
    assert warnings.filters == filters and logging.getLogger().handlers == handlers


def test_a_method_a_test_registered_is_not_seen(registries):
    from ..test_round_eighteen_files import _failing_probe  # a method a test registers

    _failing_probe()
    listed = run_cli("methods")
    assert listed.returncode == 0 and "normxlogit" in listed.stdout
    assert "failing_probe" not in listed.stdout
    from normxlogit.methods.base import _METHODS

    assert "failing_probe" in _METHODS  # and the test's registration is back after the run
