"""Round thirty-one, what the tool writes and shows: methods tied on a metric are marked
alike in the evaluation summary (bold and green best, red worst; nothing where all are
equal), as the bench report ranks them, and ``best`` refuses a tie instead of breaking it
by row order; names, labels and titles written into Markdown (the summary table, the
bench report's tables, notes and heading) show as written, not as HTML, code, emphasis or
a lost backslash; the terminal views of an explanation and of a generation show every
token where a line of wide characters (emoji, CJK) wraps; a sanity verdict with several
targets a text counts text x target pairs, not texts."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from normxlogit.bench import ResultStore, load_config
from normxlogit.bench.report import RenderedTable, paired_table, write_report
from normxlogit.bench.spec import TableSpec
from normxlogit.common.errors import InvalidInputError
from normxlogit.common.fields import markdown_text
from normxlogit.evaluation.registry import metric_info
from normxlogit.evaluation.summary import SummaryTable
from normxlogit.explanations.explanation import Explanation
from normxlogit.sanity.randomization import SanityResult

from .bench.helpers import _save_tiny, write_config
from .conftest import explainable, sanity_frame

markdown_it = pytest.importorskip("markdown_it")


def _table(values: dict[str, dict[str, float]]) -> SummaryTable:
    """A summary of ``values`` (method -> metric -> value) with the metrics' metadata."""
    frame = pd.DataFrame(values).T
    return SummaryTable(frame, {m: metric_info(m) for m in frame.columns})


def _styles(table: SummaryTable) -> dict[str, str]:
    """Each method's first cell as the terminal view paints it: "best", "worst" or ""."""
    console = Console(record=True, width=120, color_system="truecolor", force_terminal=True)
    console.print(table)
    painted = {}
    for line in console.export_text(styles=True).splitlines():
        for method in table.methods:
            if f" {method} " in line:
                painted[method] = "best" if "[1;32m" in line else "worst" if "[31m" in line else ""
    return painted


def _bold(table: SummaryTable) -> list[str]:
    """The methods whose first value the Markdown table puts in bold."""
    rows = table.to_markdown().splitlines()[2:]
    return [row.split(" | ")[0].lstrip("| ") for row in rows if "**" in row.split(" | ")[1]]


# --- P01: ties are marked alike ------------------------------------------------------------


def test_methods_with_the_same_value_are_not_a_winner_and_a_loser():
    """Two methods with the same token_f1 were shown bold green (best) and red (worst)."""
    table = _table({"first": {"comp_cd": 0.5}, "second": {"comp_cd": 0.5}})
    assert _bold(table) == [] and _styles(table) == {"first": "", "second": ""}
    assert table.bests("comp_cd") == ["first", "second"]
    with pytest.raises(InvalidInputError, match="first, second tie for best on comp_cd"):
        table.best("comp_cd")


def test_every_method_tied_for_best_or_worst_is_marked_alike():
    table = _table(
        {
            "a": {"comp_cd": 0.9, "suff_cd": 0.1},
            "b": {"comp_cd": 0.9, "suff_cd": 0.3},
            "c": {"comp_cd": 0.2, "suff_cd": 0.3},
            "d": {"comp_cd": 0.2, "suff_cd": float("nan")},
        }
    )
    assert _bold(table) == ["a", "b"]
    assert _styles(table) == {"a": "best", "b": "best", "c": "worst", "d": "worst"}
    assert table.bests("suff_cd") == ["a"] and table.best("suff_cd") == "a"  # lower is better
    one = _table({"only": {"comp_cd": 0.4}})
    assert _bold(one) == [] and one.best("comp_cd") == "only"


def test_a_tie_gets_no_gradient_that_paints_it_the_worst():
    table = _table({"first": {"comp_cd": 0.5}, "second": {"comp_cd": 0.5}})
    assert "background-color" not in table.styled().to_html()


# --- P02: user text in Markdown shows as written ---------------------------------------------

NAMES = ["IG <mask> baseline", "LA*2* `sum`", "C:\\|x", "_lean_", "[a](b) ~~c~~ $d$ &lt; #"]


def _cells(markdown: str) -> list[str]:
    """The text of every body cell, as a CommonMark renderer with tables shows it."""
    parser = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table")
    parser.enable("strikethrough")
    html = parser.render(markdown)
    return [_unescaped(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", html)]


def _unescaped(html: str) -> str:
    """HTML text as a browser shows it (a tag is markup, not text)."""
    import html as module

    return None if re.search(r"<[a-z/]", html) else module.unescape(html)


@pytest.mark.parametrize("name", NAMES)
def test_a_name_in_a_markdown_cell_or_heading_renders_as_written(name):
    cell = f"| a |\n|---|\n| {markdown_text(name)} |\n"
    assert _cells(cell) == [name]
    parser = markdown_it.MarkdownIt("commonmark", {"html": True})
    heading = parser.render(f"# {markdown_text(name)}").strip()
    assert _unescaped(heading.removeprefix("<h1>").removesuffix("</h1>")) == name


def test_markdown_text_keeps_plain_names_plain():
    assert markdown_text("integrated_gradients") == "integrated_gradients"
    assert markdown_text("comp_cd (AOPC ↑)") == "comp_cd (AOPC ↑)"
    assert markdown_text("a\nb") == "a b"  # a row is one line


def test_summary_markdown_shows_method_names_as_written():
    values = {name: {"comp_cd": 0.1 * i} for i, name in enumerate(NAMES)}
    cells = _cells(_table(values).to_markdown())
    assert cells[0::2] == NAMES
    assert "**0.400** |" in _table(values).to_markdown()  # the number's bold stays


def test_bench_table_writes_its_title_labels_and_notes_as_data():
    spec = TableSpec(title="<b>x</b> `odd`", metric="comp_cd", paper_note="minilm-* _n_")
    columns = [("sst2", "m<1>", "comp_cd")]
    cells = {(name, 0): 0.1 * i for i, name in enumerate(NAMES)}
    table = RenderedTable(spec, columns, list(NAMES), cells, {(NAMES[0], 0): 0.5}, {}, {}, {})
    markdown = table.to_markdown()
    assert _cells(markdown)[0::2] == NAMES
    assert "**&lt;b&gt;x&lt;/b&gt; \\`odd\\`**" in markdown and "m&lt;1&gt;" in markdown
    assert "minilm-\\* \\_n\\_" in markdown


def test_bench_report_heading_and_paired_table_show_names_as_written(tmp_path):
    model = _save_tiny(tmp_path / "tiny", seed=0)
    path = write_config(tmp_path, model, limit=2, metrics='["comp_cd"]', methods='["random"]')
    path.write_text(path.read_text().replace('title = "tiny grid"', 'title = "<b>x</b> `odd`"'))
    with ResultStore(tmp_path / "empty.sqlite") as store:
        written = write_report(load_config(path), store, tmp_path / "report")
    heading = written[0].read_text().splitlines()[0]
    assert heading == "# &lt;b&gt;x&lt;/b&gt; \\`odd\\`"


def test_paired_table_with_one_method_escapes_its_name():
    class Only:  # an experiment whose one method has values: the one-line answer
        frame = pd.DataFrame({"method": ["<m>"]})
        skipped: dict[str, str] = {}
        experiment = type("E", (), {"name": "e*1*"})()

    line = paired_table(Only(), "<m>")
    assert line.startswith("**e\\*1\\***: &lt;m&gt; is the only method")


# --- P03: every token shown where wide characters wrap --------------------------------------

WIDE = ["it", "is", "g", "ood", "␣", "😀", "中文", "·", "·", "␣", "😀", "漢字", "is", "d", "ul"]


def _wide_explanation() -> Explanation:
    """A classifier's explanation whose tokens are wide (as a byte-level tokenizer's on
    emoji and CJK text)."""
    model = explainable("bert", "classification")
    data = model.explain("one two three four five six seven eight nine ten").to_dict()
    count = len(data["token_texts"])
    data["token_texts"] = (WIDE * 3)[:count]
    return Explanation.from_dict(data)


def _shown(renderable, width: int) -> str:
    console = Console(record=True, width=width, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_the_explanation_view_loses_no_token_where_wide_characters_wrap():
    explanation = _wide_explanation()
    cut = [w for w in range(30, 100) if "…" in _shown(explanation, w)]
    assert cut == []


def test_the_generation_view_loses_no_token_where_wide_characters_wrap():
    model = explainable("llama", "causal_lm")
    data = model.explain("one two three four five six", continuation=" seven eight").to_dict()
    data["token_texts"] = (WIDE * 3)[: len(data["token_texts"])]
    generation = type(model.explain("one", continuation=" two")).from_dict(data)
    cut = [w for w in range(30, 100) if "…" in _shown(generation, w)]
    assert cut == []


# --- P04: a sanity verdict counts what it counts ---------------------------------------------


def test_a_verdict_over_several_targets_a_text_counts_pairs():
    rows = sanity_frame()
    both = pd.concat([rows, rows.assign(target="LABEL_1")], ignore_index=True)
    both.loc[(both["instance"] == 0) & (both["step"] == 1), "spearman"] = np.nan
    verdict = SanityResult(both).verdicts().iloc[0]
    assert "2 of 4 text x target pairs left out" in verdict["note"], verdict["note"]
    rows.loc[(rows["instance"] == 0) & (rows["step"] == 1), "spearman"] = np.nan
    assert "1 of 2 texts left out" in SanityResult(rows).verdicts().iloc[0]["note"]
