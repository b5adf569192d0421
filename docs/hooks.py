"""MkDocs hooks: the methods and metrics tables, generated from the registries at build
time, so the site's tables cannot drift from what the code registers; and the docstrings'
Sphinx cross-reference roles shown as the names they refer to.

A page asks for a table with a marker line: ``<!-- generated: methods -->`` or
``<!-- generated: metrics -->``.
"""

from __future__ import annotations

import dataclasses
import re

MARKERS = ("methods", "metrics")


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def methods_table() -> str:
    from normxlogit.methods import list_methods, method_class
    from normxlogit.methods.presets import presets_for

    rows = ["| method | what it computes | options (defaults) | presets |", "|---|---|---|---|"]
    for name in list_methods():
        cls = method_class(name)
        options = ", ".join(f"`{f.name}={f.default!r}`" for f in dataclasses.fields(cls))
        named = [
            f"`{preset}`: " + ", ".join(f"{k}={v!r}" for k, v in values.items())
            for preset, values in presets_for(name).items()
        ]
        rows.append(
            f"| `{name}` | {_cell(cls.description)} | {_cell(options) or '—'} | "
            f"{_cell('; '.join(named)) or '—'} |"
        )
    return "\n".join(rows)


def metrics_table() -> str:
    from normxlogit.evaluation import list_metrics, metric_info

    rows = [
        "| metric | what it measures | better | range | curve over | summary |",
        "|---|---|---|---|---|---|",
    ]
    for name in list_metrics():
        info = metric_info(name)
        low, high = info.value_range
        better = {True: "higher", False: "lower", None: "—"}[info.higher_is_better]
        rows.append(
            f"| `{name}` | {_cell(info.description)} | {better} | [{low:g}, {high:g}] | "
            f"{_cell(info.axis or '—')} | {_cell(info.summary)} |"
        )
    return "\n".join(rows)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- generated: methods -->" in markdown:
        markdown = markdown.replace("<!-- generated: methods -->", methods_table())
    if "<!-- generated: metrics -->" in markdown:
        markdown = markdown.replace("<!-- generated: metrics -->", metrics_table())
    return markdown


#: a Sphinx role as mkdocstrings renders a docstring's ``:func:`~a.b.c` ``
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj):<code>(~?)([^<]*)</code>")


def shown_name(match: re.Match) -> str:
    """The code span a role names: ``~a.b.c`` shows ``c`` (Sphinx's rule), ``a.b`` shows
    ``a.b``."""
    short, target = match.group(1), match.group(2)
    return f"<code>{target.rsplit('.', 1)[-1] if short else target}</code>"


def on_page_content(html: str, page, config, files) -> str:
    return ROLE.sub(shown_name, html)
