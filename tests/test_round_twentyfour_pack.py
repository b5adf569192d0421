"""Round twenty-four: ``python3 scripts/gpu/pack`` (as the docs show it) under a Python
without the project's environment ended in a ModuleNotFoundError traceback from inside
the config loader; ``pack`` and ``estimate`` now say which environment to run them in."""

from __future__ import annotations

import importlib.util

import pytest

from normxlogit.bench import estimate, pack


@pytest.mark.parametrize(("module", "script"), [(pack, "pack"), (estimate, "estimate")])
def test_a_script_outside_the_project_environment_names_it(monkeypatch, capsys, module, script):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    assert module.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"scripts/gpu/{script} runs in the project's environment, and torch is not" in err
    assert f"`make setup`, then `.venv/bin/python scripts/gpu/{script}`" in err
