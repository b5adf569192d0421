"""Round eight of new-user probes, saved files: the Python saves' suffixes, an edited
evaluation result with no rows or an infinite value, and a sanity CSV with a blank
``randomized`` cell or a step that is not a whole number. Tiny models."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import normxlogit
from normxlogit.common.errors import InvalidFileError, InvalidInputError, OutputPathError
from normxlogit.evaluation import EvaluationResult, Protocol
from normxlogit.sanity import SanityResult, parameter_randomization

from .conftest import sharp_model

TEXT = "The plot is thin. The acting is wonderful!"


def _result(model):
    explained = model.explain([TEXT, "Bad. Worse. Worst."], "leave_one_out", segments="sentences")
    protocol = Protocol(drop_k=(1,))
    result = normxlogit.evaluate(model, {"l": explained}, ["segment_drop"], protocol=protocol)
    return explained, result


def test_the_python_saves_refuse_a_suffix_other_than_json(tmp_path):
    """E03: .csv, .json.gz and .html names were given plain JSON; refused before writing,
    as SanityResult.save and the command line's --save already do."""
    explained, result = _result(sharp_model())
    for name in ("r.csv", "r.json.gz", "r"):
        with pytest.raises(OutputPathError, match=r"saved as JSON; end the name in \.json"):
            result.save(tmp_path / name)
    with pytest.raises(OutputPathError, match=r"result\.frame\.to_csv\(\) writes the rows"):
        result.save(tmp_path / "r.csv")
    with pytest.raises(OutputPathError, match=r"end the name in \.json \(to_html\(\) writes"):
        explained[0].save(tmp_path / "e.html")
    with pytest.raises(OutputPathError, match=r"explanations are saved as JSON; end the name"):
        normxlogit.save_explanations(explained, tmp_path / "e.json.gz")
    with pytest.raises(OutputPathError, match="is a folder; give a file name inside it"):
        result.save(tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing written
    assert EvaluationResult.load(result.save(tmp_path / "r.JSON")).metrics == ["segment_drop"]
    assert len(normxlogit.load_explanations(explained[0].save(tmp_path / "e.json"))) == 1


def test_an_evaluation_result_with_no_rows_or_an_infinite_value_is_refused(tmp_path):
    """E08: no rows gave an empty table; an Infinity value was shown in bold as the best.
    A null or NaN value (no value) still loads."""
    path = _result(sharp_model())[1].save(tmp_path / "r.json")
    saved = json.loads(path.read_text())

    def edited(rows) -> None:
        path.write_text(json.dumps(dict(saved, rows=rows)))

    edited([])
    with pytest.raises(InvalidFileError, match="'rows' is empty; evaluate again"):
        EvaluationResult.load(path)
    for infinite in (float("inf"), float("-inf")):
        edited([*saved["rows"][:1], dict(saved["rows"][1], value=infinite)])
        with pytest.raises(InvalidFileError, match=r"rows\[1\]: 'value' is -?inf; give a finite"):
            EvaluationResult.load(path)
    for missing in (None, float("nan")):
        edited([dict(saved["rows"][0], value=missing), *saved["rows"][1:]])
        assert EvaluationResult.load(path).frame["value"].isna().sum() == 1


def test_a_sanity_frame_with_a_blank_randomized_cell_or_a_broken_step_is_refused(tmp_path):
    """E09: a blank 'randomized' column emptied summary() while verdicts() still passed
    the method; a step 'x' was shown as is. Named by row and CSV line, as for 'method'."""
    made = parameter_randomization(
        sharp_model(), ["The plot is thin.", "Good fun."], ["gradient_x_input"], mode="independent"
    )
    frame = pd.read_csv(made.save(tmp_path / "s.csv"))
    for column, value, said in (
        ("randomized", "", "randomized is blank, but each row names the group randomised"),
        ("randomized", " ", "randomized is blank"),
        ("step", "", "step is blank, but a step is a whole number from 0"),
        ("step", "x", "step is 'x', but a step is a whole number"),
        ("step", 1.5, "step is 1.5, but"),
        ("step", -1, "step is -1, but"),
    ):
        edited = frame.astype({column: object})
        edited.loc[1, column] = value
        edited.to_csv(tmp_path / "edited.csv", index=False)
        with pytest.raises(InvalidInputError, match=rf"row 1 \(line 3 of its CSV\): {said}"):
            SanityResult(pd.read_csv(tmp_path / "edited.csv"))
    back = SanityResult(frame.astype({"step": float}))  # 0.0, 1.0 read back as whole steps
    assert back.frame["step"].dtype == int
    pd.testing.assert_frame_equal(back.summary(), made.summary())
