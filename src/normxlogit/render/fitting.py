"""Laying a segments table out for a terminal's width: score columns are never cut and
every table keeps its segment column, so a table too wide is split into tables that fit
(an explanation's segments by layer and target, a generation's segments by step)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.cells import cell_len
from rich.table import Table

#: a score cell's width: ``+0.123`` or ``not read``, never cut
SCORE_WIDTH = len("not read")
#: the narrowest the segment column gets (its text folds onto more lines)
SEGMENT_WIDTH = 12


def fits_beside_segment(width: int) -> Callable[[Table], bool]:
    """Whether a table (its last column the segment) fits ``width``: every score column
    whole, header too, beside the segment column at its narrowest."""

    def fits(table: Table) -> bool:
        needed = sum(
            max(SCORE_WIDTH, cell_len(str(column.header))) + 2 for column in table.columns[:-1]
        )
        return needed + SEGMENT_WIDTH + 2 <= width

    return fits


def fitting_chunks(
    columns: Iterable[int], fits_with: Callable[[list[int]], bool]
) -> list[list[int]]:
    """``columns`` cut, in order, into runs that each fit (``fits_with(run)``); a column
    that fits with none of its neighbours is a run alone."""
    chunks: list[list[int]] = []
    chunk: list[int] = []
    for column in columns:
        if chunk and not fits_with([*chunk, column]):
            chunks.append(chunk)
            chunk = []
        chunk.append(column)
    chunks.append(chunk)
    return chunks
