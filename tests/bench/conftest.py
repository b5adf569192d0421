"""Fixtures of the bench tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import _save_tiny


@pytest.fixture(scope="module")
def sentiment_model(tmp_path_factory) -> Path:
    """A saved tiny BERT with SST-2's labels (negative, positive)."""
    return _save_tiny(tmp_path_factory.mktemp("tiny-sentiment"), seed=0)
