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
    explaining = (site / "reference" / "explaining" / "index.html").read_text()
    assert explaining.count("doc-heading") > 5
    # the docstrings' Sphinx roles show as the names they refer to, never as written
    for page in (site / "reference").glob("*/index.html"):
        text = page.read_text()
        assert ":func:" not in text and ":class:" not in text and ":meth:" not in text, page


def test_a_role_shows_the_name_sphinx_would_show():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from hooks import on_page_content
    finally:
        sys.path.remove(str(ROOT / "docs"))
    html = ":func:<code>~normxlogit.evaluate</code> and :class:<code>a.B</code>"
    assert on_page_content(html, None, None, None) == "<code>evaluate</code> and <code>a.B</code>"


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 12 * 1024
    assert "make docs" in readme


def test_every_method_and_option_has_its_words_in_the_methods_guide():
    """The generated table lists each method; the guide's prose says what each option
    means, so a new method or option without words fails here instead of drifting."""
    import dataclasses
    import re

    import normxlogit
    from normxlogit.methods import method_class

    guide = (ROOT / "docs" / "guide" / "methods.md").read_text()
    sections = dict(re.findall(r"^#### `(\w+)`\n(.*?)(?=^#### |^## |\Z)", guide, re.S | re.M))
    for name in normxlogit.list_methods():
        assert name in sections, f"no '#### `{name}`' section in docs/guide/methods.md"
        for option in dataclasses.fields(method_class(name)):
            assert f"`{option.name}`" in sections[name], f"{name}: option {option.name}"
