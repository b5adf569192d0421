"""Round twenty-three of new-user probes, probe a (the CLI and the bench): a masked LM's
missing mask named with the fix that exists where it is said, the bench naming the data
file's line (P01), and the evidence metrics on a text whose evidence marks no token (P04).
Tiny models."""

from __future__ import annotations

import json
import warnings

import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError

from .conftest import explainable, invoke_in


# ------------------------------------------------------------------ P01
def test_p01_a_missing_mask_names_the_fix_and_the_data_line(tmp_path, tiny_masked_lm):
    """ "or pass mask_position", which nothing on the command line or in a config takes;
    the bench named the text "text 0"."""
    (tmp_path / "d.jsonl").write_text(
        json.dumps({"text": "a [MASK] film", "label": "good"})
        + "\n"
        + json.dumps({"text": "no mask here", "label": "good"})
        + "\n"
    )
    (tmp_path / "g.toml").write_text(
        'metrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_masked_lm}"\ndataset = "d.jsonl"\n'
    )
    result = invoke_in(tmp_path, "bench", "run", "g.toml")
    said = " ".join(result.output.split())
    assert result.exit_code != 0
    assert "d.jsonl line 2 has no [MASK]" in said and "text 1" not in said
    assert "in Python, explain's mask_position= can say where to read instead" in said
    model = explainable("bert", "masked_lm")
    with pytest.raises(InvalidInputError, match="put \\[MASK\\] in it, where the word"):
        model.explain("no mask here")


# ------------------------------------------------------------------ P04
def test_p04_evidence_metrics_leave_a_text_without_evidence_out_and_say_so():
    """evidence_ap was NaN and evidence_dot 0.0 (kept in its mean), with no warning."""
    model = explainable("bert", "masked_lm")
    texts = ["the cat [MASK] here", "a dog [MASK] there"]
    made = {"g": model.explain(texts, "gradient_x_input")}
    sizes = [len(e.tokens) for e in made["g"]]
    evidence = [[0, 0, 1] + [0] * (sizes[0] - 3), [0] * sizes[1]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = normxlogit.evaluate(
            model, made, ["evidence_ap", "evidence_dot"], evidence=evidence
        )
    frame = result.frame
    assert frame[frame["instance"] == 1]["value"].isna().all()
    assert frame[frame["instance"] == 0]["value"].notna().all()
    said = [str(w.message) for w in caught if "marks no token" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("1 of 2 texts have evidence")
    assert "evidence_ap and evidence_dot are n/a for them" in said[0]  # one warning for both
