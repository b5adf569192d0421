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


# ------------------------------------------------------------------ the slot's agreement
def test_a_device_that_disagrees_with_the_cpu_runs_no_entry(tmp_path, capsys, monkeypatch):
    """The second H200 slot's agreement calibration (tests/data: its variants' largest and
    mean differences) found 0.038 on the device and on its own CPU, and the slot stored
    2,208 cells anyway; now such a slot stores none and says why."""
    import json
    from pathlib import Path

    from normxlogit.bench import slot as slot_module

    measured = json.loads(
        (Path(__file__).parent / "data" / "agreement-h200-tf517.json").read_text()
    )
    why = slot_module.disagreement({"agreement": measured})
    assert "largest difference 0.038, allowed 0.0001" in why
    assert "on this machine's CPU too (0.038): its software, not the device" in why
    assert "--write-reference" in why
    agreeing = {"variants": {"device as it comes, 1024 rows a pass": {"largest": 2e-6}}}
    assert slot_module.disagreement({"agreement": agreeing}) is None
    assert slot_module.disagreement({"agreement": {"failed": -15}}) is None  # not run: no word
    assert slot_module.disagreement({}) is None

    def never(*args, **kwargs):
        raise AssertionError("an entry ran")

    monkeypatch.setattr(slot_module, "receive", lambda part, home: {"deadline": 100})
    for name in ("assemble", "install", "environment", "check_torch"):
        monkeypatch.setattr(slot_module, name, lambda *a, **k: "")
    monkeypatch.setattr(slot_module, "export", lambda *a: [])
    monkeypatch.setattr(slot_module, "calibrate", lambda *a: {"agreement": measured})
    monkeypatch.setattr(slot_module, "run_queue", never)
    out = tmp_path / "out"
    args = ["run", "p", "--out", str(out), "--home", str(tmp_path)]
    assert slot_module.main(args) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: this device does not compute the reference CPU's pi-Soft")
    report = json.loads((out / "slot-report.json").read_text())
    assert report["entries"] == [] and "largest difference 0.038" in report["refused"]
