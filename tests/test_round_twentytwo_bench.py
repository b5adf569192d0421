"""Round twenty-two of new-user probes, probe a (the bench and the CLI): a report's
timing table of several experiments as Markdown (P01), per-layer and final-layer
explanations mixed under a metric over the layers (P02), and an output named by its
suffix alone (P03). Tiny models, a 4-text data file."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError

from .conftest import invoke_in, sharp_model

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]


def _tables(markdown: str) -> list[tuple[str, str]]:
    """(header row, separator row) of each Markdown table."""
    lines = markdown.splitlines()
    return [
        (lines[i - 1], line)
        for i, line in enumerate(lines)
        if i and re.fullmatch(r"\|(:?-{3,}:?\|)+", line) and lines[i - 1].startswith("|")
    ]


# ------------------------------------------------------------------ P01
def test_p01_the_timing_table_of_several_experiments_is_a_table(tmp_path, tiny_classifier):
    """ "|---||---|---:|..." put six separator cells under five headers: no table."""
    (tmp_path / "d.jsonl").write_text(
        "".join(json.dumps({"text": t, "label": i % 2}) + "\n" for i, t in enumerate(TEXTS))
    )
    experiments = "".join(
        f'[[experiments]]\nname = "{name}"\nmodel = "{tiny_classifier}"\ndataset = "d.jsonl"\n'
        f"limit = 2\n{extra}"
        for name, extra in (("A", ""), ("B", 'dtype = "bfloat16"\n'))
    )
    (tmp_path / "g.toml").write_text(f'metrics = ["comp_cd"]\nmethods = ["random"]\n{experiments}')
    assert invoke_in(tmp_path, "bench", "run", "g.toml").exit_code == 0
    result = invoke_in(tmp_path, "bench", "report", "g.toml")
    assert result.exit_code == 0, result.output
    report = (tmp_path / "g-report" / "report.md").read_text()
    tables = _tables(report)
    assert any(header.startswith("| experiment | method") for header, _ in tables)
    for header, separator in tables:
        assert header.count("|") == separator.count("|"), (header, separator)


# ------------------------------------------------------------------ P02
def test_p02_per_layer_and_final_layer_explanations_under_a_layer_metric(tmp_path):
    """auprc was blamed for its own rows ("row 6 of its rows() ... has x that is 0.0, but
    earlier rows of auprc have None"), a check meant for registered metrics."""
    model = sharp_model()
    texts = ["the film is good", "a dull mess"]
    made = {
        "NX": model.explain(texts, "normxlogit"),
        "LAall": model.explain(texts, "logat", layer="all"),
    }
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, made, ["auprc"], evidence=[[0, 1, 0, 0, 0, 0], [0, 1, 0, 0, 0]])
    said = str(caught.value)
    assert "auprc scores per-layer explanations at every layer and the others once" in said
    assert "'LAall' explained with layer='all', 'NX' without" in said
    assert "rows()" not in said
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        apart = normxlogit.evaluate(
            model,
            {"LAall": made["LAall"]},
            ["auprc"],
            evidence=[[0, 1, 0, 0, 0, 0], [0, 1, 0, 0, 0]],
        )
        assert apart.frame["x"].notna().all()
        both = normxlogit.evaluate(model, made, ["comp_cd"], progress=False)  # one layer each
    assert set(both.frame["method"]) == {"NX", "LAall"}


# ------------------------------------------------------------------ P03
@pytest.mark.parametrize(
    "args",
    [
        ("bench", "export", "--store", "s.sqlite", "-o", ".csv"),
        ("bench", "export", "--store", "s.sqlite", "-f", "csv", "-o", ".csv"),
        ("explain", "Good.", "-o", ".json"),
    ],
)
def test_p03_an_output_named_by_its_suffix_alone_is_refused(tmp_path, args):
    """ "cannot tell the format from a name without a suffix; end the name in .csv", of a
    name that is .csv; -f csv then wrote a hidden file .csv."""
    result = invoke_in(tmp_path, *args)
    said = " ".join(result.output.split())
    assert result.exit_code != 0
    assert "is a suffix with no name before it" in said and "e.g. results." in said
    assert not any(Path(tmp_path).iterdir())
