"""Tables that fit a width without ever cutting a number.

A renderer describes its columns (which hold numbers, which may go first when space is short) and hands over
plain rows; `fitted` lays them out for the width. Narrower than the table: the optional columns go, the most
dispensable first; then text columns wrap (numbers never do); then, narrower still, every row becomes a record of
`name: value` lines. JSON, CSV and markdown always carry every figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

COMFORT = 24  # a text column is not squeezed below this (or its own width) while optional columns remain
NARROWEST = 8  # nor below this at all: past it, rows become records


@dataclass(frozen=True)
class Column:
    name: str
    number: bool = True  # right-aligned, never cut or wrapped
    drop: int = 0  # 0: always shown; otherwise dropped at narrow widths, the highest first


Cell = str | Text


def fitted(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], width: int, *,
           title: str | None = None, header: bool = True) -> RenderableType:  # fmt: skip
    """`rows` under `columns`, laid out for `width` columns of terminal; `header`: show the column names."""
    natural = [max([cell_len(c.name) if header else 0, *(_len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    keep = list(range(len(columns)))
    for level in sorted({c.drop for c in columns if c.drop}, reverse=True):
        if _need(columns, natural, keep, COMFORT) <= width:
            break
        keep = [i for i in keep if columns[i].drop != level]
    if _need(columns, natural, keep, COMFORT) <= width or _need(columns, natural, keep, NARROWEST) <= width:
        return _table(columns, rows, keep, title, header)
    return _records(columns, rows, title)


def _len(cell: Cell) -> int:
    return cell.cell_len if isinstance(cell, Text) else cell_len(cell)


def _need(columns: Sequence[Column], natural: list[int], keep: list[int], text_floor: int) -> int:
    """The width the kept columns take with text columns squeezed to `text_floor` (or their own width)."""
    widths = [natural[i] if columns[i].number else min(natural[i], text_floor) for i in keep]
    return sum(widths) + max(len(widths) - 1, 0)


def _table(
    columns: Sequence[Column], rows: Sequence[Sequence[Cell]], keep: list[int], title: str | None, header: bool
) -> Table:
    table = Table(title=title, title_justify="left", box=None, pad_edge=False, padding=(0, 1, 0, 0),
                  header_style="bold", show_header=header)  # fmt: skip
    for i in keep:
        c = columns[i]
        if c.number:
            table.add_column(c.name, justify="right", no_wrap=True, min_width=max([_len(r[i]) for r in rows] or [0]))
        else:
            table.add_column(c.name, justify="left", overflow="fold", min_width=min(NARROWEST, cell_len(c.name)))
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    return table


def _records(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], title: str | None) -> RenderableType:
    """One block of `name: value` lines a row: nothing cut, however narrow."""
    label = max(cell_len(c.name) for c in columns)  # (a column with no name: its values alone)
    parts: list[RenderableType] = [Text(title, style="bold")] if title else []
    for n, row in enumerate(rows):
        if n:
            parts.append(Text(""))
        for c, cell in zip(columns, row, strict=True):
            line = Text(f"{c.name:>{label}}: " if c.name else " " * (label + 2), style="bold")
            line.append_text(cell if isinstance(cell, Text) else Text(cell))
            parts.append(line)
    return Group(*parts)
