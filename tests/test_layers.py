"""The package's floors (pyproject.toml, [tool.importlinter]): CI runs the contracts
through this test, so a change that makes a lower floor import a higher one fails."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> str:
    found = Path(sys.executable).with_name("lint-imports")
    if found.exists():
        return str(found)
    on_path = shutil.which("lint-imports")
    if on_path is None:
        pytest.skip("import-linter is not installed (make setup installs it)")
    return on_path


def test_the_import_contracts_are_kept():
    ran = subprocess.run(
        [_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "0 broken" in ran.stdout


def test_a_broken_floor_is_caught(tmp_path):
    """The contracts bite: a copy of the package whose ground floor imports a method is
    refused, naming the import."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "src", copy / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    fields = copy / "src" / "normxlogit" / "common" / "fields.py"
    fields.write_text(fields.read_text() + "\nfrom ..methods import base  # noqa\n")
    ran = subprocess.run(
        [_lint_imports(), "--no-cache"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(copy / "src"), "PATH": ""},
    )
    assert ran.returncode != 0
    assert "normxlogit.common.fields -> normxlogit.methods" in ran.stdout
