"""Round ten of new-user probes (issue 41), the evaluation and segment findings: each test
is one finding of /work/probes-round10/findings.md (T08, T11), with a tiny model."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from rich.console import Console

import normxlogit
from normxlogit.common.errors import NormXLogitWarning
from normxlogit.evaluation import Protocol
from tests.conftest import sharp_model

#: past the 512 tokens the model reads: the last segment is never read
LONG = " ".join(["The plot is thin and the acting is wonderful."] * 60) + " I would see it again."
LONG_SEGMENTS = ["The plot is thin and the acting is wonderful.", "I would see it again."]


def _said(call) -> list[str]:
    """The messages of the NormXLogitWarnings ``call()`` gives."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in seen if issubclass(w.category, NormXLogitWarning)]


def _unperturbed(said: list[str]) -> list[str]:
    return [m for m in said if "int(n·k) = 0" in m]


def test_t08_ratios_that_perturb_no_token_are_told_once_per_evaluation():
    """T08: int(n·k) = 0 made comprehensiveness perturb nothing (0.000 for every method,
    bold as a tie) and sufficiency everything, with no warning. The values are kept (the
    authors' convention); one warning counts the texts per ratio, over every metric and
    chunk."""
    model = sharp_model()
    texts = ["Good fun", "A much longer text, with many more tokens in it than the first one."]
    made = {m: model.explain(texts, m) for m in ("gradient_x_input", "random")}
    result = None

    def run():
        nonlocal result
        result = normxlogit.evaluate(
            model,
            made,
            ["comp_cd", "suff_cd", "deletion"],
            protocol=Protocol(ratios=(0.1, 0.2, 0.5)),
            batch_size=1,  # two chunks: still one warning
            progress=False,
        )

    said = _unperturbed(_said(run))
    assert len(said) == 1, said
    (message,) = said
    assert message.startswith("2 of 2 texts have ratios k at which int(n·k) = 0 of their n tokens")
    assert "comp_cd, suff_cd at k=0.1 (1 text), 0.2 (1 text)" in message
    assert "deletion at k=0.05 (2 texts)" in message
    assert "the same for every method" in message
    frame = result.frame
    short = frame[(frame["instance"] == 0) & (frame["metric"] == "comp_cd")]
    assert (short[short["x"] <= 0.2]["value"] == 0).all()  # the convention is kept
    suff = frame[(frame["instance"] == 0) & (frame["metric"] == "suff_cd") & (frame["x"] == 0.1)]
    # every method alike (to float rounding: each method's chunks run apart)
    assert suff["value"].max() - suff["value"].min() < 1e-6


def test_t08_no_warning_where_every_ratio_perturbs_a_token():
    model = sharp_model()
    made = {
        "g": model.explain(["A much longer text, with many more tokens in it."], "gradient_x_input")
    }
    said = _said(
        lambda: normxlogit.evaluate(
            model, made, ["comp_cd", "suff_cd"], protocol=Protocol(ratios=(0.5,)), progress=False
        )
    )
    assert not _unperturbed(said)


def test_t08_segment_units_count_segments():
    """The repro: two sentences at ratios up to 0.4 perturb no segment at all."""
    model = sharp_model()
    text = ["Good fun. Bad end."]
    made = {m: model.explain(text, m, segments="sentences") for m in ("leave_one_out", "random")}
    protocol = Protocol(unit="segment", ratios=(0.1, 0.2, 0.3, 0.4))
    said = _said(
        lambda: normxlogit.evaluate(
            model, made, ["comp_cd", "suff_cd"], protocol=protocol, progress=False
        )
    )
    (message,) = _unperturbed(said)
    assert message.startswith(
        "1 of 1 texts have ratios k at which int(n·k) = 0 of their n segments"
    )
    assert "k=0.1 (1 text), 0.2 (1 text), 0.3 (1 text), 0.4 (1 text)" in message
    assert "comp_cd perturbs no segment and suff_cd perturbs every segment" in message


@pytest.fixture(scope="module")
def truncated():
    """A segment method's and a token method's explanations of a text whose last segment
    lies past the truncation, and the warnings explain gave."""
    model = sharp_model()
    made = {}

    def run():
        for method in ("leave_one_out", "gradient_x_input"):
            made[method] = model.explain(LONG, method, segments=LONG_SEGMENTS)

    return made, _said(run)


def test_t11_explain_names_the_segments_past_the_truncation(truncated):
    """T11: only the generic "the last N tokens were dropped" was said."""
    made, said = truncated
    unread = [m for m in said if "past the 512 tokens the model reads" in m]
    assert len(unread) == 2  # once per call, one call per method
    assert unread[0].startswith("1 segment lies past the 512 tokens the model reads")
    assert "the text: 1 of 2 ('I would see it again.')" in unread[0]
    for explanation in made.values():  # the data keeps its NaN (JSON null, pandas NaN)
        assert np.isnan(explanation.segments.scores.reshape(2, -1)[1]).all()


def test_t11_the_segment_tables_say_not_read(truncated):
    """T11: the terminal showed "+nan  I would see it again."."""
    made, _ = truncated
    for explanation in made.values():
        console = Console(record=True, width=200, color_system=None)
        console.print(explanation)
        shown = console.export_text()
        assert "nan" not in shown
        (line,) = [row for row in shown.splitlines() if "I would see it again." in row]
        assert line.split() == ["not", "read", "I", "would", "see", "it", "again."]
        page = explanation.to_html()
        assert '<td class="score">not read</td><td class="segment">I would see it again.' in page


def test_t11_no_warning_when_every_segment_is_read():
    model = sharp_model()
    said = _said(lambda: model.explain("Good fun. Bad end.", segments="sentences"))
    assert not [m for m in said if "the model read no token" in m]
