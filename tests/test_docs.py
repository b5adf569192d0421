"""The documentation site builds strict (CI runs this, so a broken link, a page missing
from the site or a docstring mkdocstrings cannot read fails), and its methods and metrics
tables come from the registries."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _mkdocs() -> str:
    found = Path(sys.executable).with_name("mkdocs")
    if not found.exists():
        pytest.skip("mkdocs is not installed (make setup installs it)")
    return str(found)


def test_the_site_builds_strict_with_the_generated_tables(tmp_path):
    site = tmp_path / "site"
    ran = subprocess.run(
        [_mkdocs(), "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    import normxlogit
    from normxlogit.evaluation import list_metrics

    methods = (site / "reference" / "methods" / "index.html").read_text()
    for name in normxlogit.list_methods():
        assert f"<code>{name}</code>" in methods, name
    metrics = (site / "guide" / "evaluating" / "index.html").read_text()
    for name in list_metrics():
        assert f"<code>{name}</code>" in metrics, name
    assert (site / "reference" / "explaining" / "index.html").read_text().count("doc-heading") > 5


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 12 * 1024
    assert "make docs" in readme
