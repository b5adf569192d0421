"""Round nine of new-user probes, saved files: an edited evaluation result with a broken
``step``, a repeated row, or a blank method. Tiny models."""

from __future__ import annotations

import json

import pytest

import normxlogit
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.evaluation import EvaluationResult, Protocol

from .conftest import sharp_model


def _saved(tmp_path, drop_k=(1,)):
    """A real result's rows, and a function that saves them edited and loads the file."""
    model = sharp_model()
    texts = ["The plot is thin. The acting is wonderful!", "Bad. Worse. Worst."]
    explained = model.explain(texts, "leave_one_out", segments="sentences")
    result = normxlogit.evaluate(
        model, {"l": explained}, ["segment_drop"], protocol=Protocol(drop_k=drop_k)
    )
    path = result.save(tmp_path / "r.json")
    data = json.loads(path.read_text())

    def load(rows) -> EvaluationResult:
        path.write_text(json.dumps(dict(data, rows=rows)))
        return EvaluationResult.load(path)

    return data["rows"], load


@pytest.fixture
def saved(tmp_path):
    return _saved(tmp_path)


def test_a_step_on_some_rows_only_or_not_a_whole_number_is_refused(saved):
    """N01: a step on one row only, "a" or null crashed in pandas; refused naming the row.
    A step on every row (a generation's result) still loads."""
    rows, load = saved
    for step, said in ((0, r"rows\[1\]: 'step' is missing"), ("a", "'step' is 'a'")):
        with pytest.raises(InvalidFileError, match=rf"{said}; give a whole number from 0"):
            load([dict(rows[0], step=step), *rows[1:]])
    for bad in (None, -1, 1.5, True):
        with pytest.raises(InvalidFileError, match=rf"rows\[0\]: 'step' is {bad!r}; give"):
            load([dict(row, step=bad) for row in rows])
    assert set(load([dict(row, step=3) for row in rows]).frame["step"]) == {3}


def test_a_repeated_row_is_refused_naming_both(saved, tmp_path):
    """N08: a copy of a row (same metric, method, instance, step and x) was averaged in;
    a protocol that would write such copies itself (a repeated k) is refused."""
    rows, load = saved
    with pytest.raises(InvalidFileError, match=rf"rows\[{len(rows)}\] repeats rows\[0\]"):
        load([*rows, dict(rows[0], value=100.0)])
    stepped = [dict(row, step=0) for row in rows]
    assert len(load([*stepped, dict(stepped[0], step=1)]).frame) == len(rows) + 1
    with pytest.raises(InvalidInputError, match=r"drop_k repeats a value \(\[1, 1\]\)"):
        Protocol(drop_k=(1, 1))


def test_a_blank_or_null_method_or_metric_is_refused(saved):
    """N09: a blank or null method gave a summary row named '' or 'nan'."""
    rows, load = saved
    for key in ("method", "metric"):
        for name in ("", " ", None):
            with pytest.raises(InvalidFileError, match=rf"rows\[1\]: '{key}' is {name!r}; name"):
                load([rows[0], dict(rows[1], **{key: name}), *rows[2:]])
