"""Tables that fit a width without ever cutting a number or splitting a word.

A renderer describes its columns (which hold numbers, which may go first when space is short, a shorter header)
and hands over plain rows, and perhaps short codes for long words (a miss reason's); `fitted` lays them out for
the width. Narrower than the table: the optional columns go, the most dispensable first, and (from the level the
renderer names) the long words and headers give way to their codes first, with a legend under the table naming
each one shown; text columns wrap between words, never inside one (numbers never wrap), and within `lines` lines
a row where the renderer asks for that, while a column of names (`Column.middle`) keeps each on one line, shortened
in the middle (`2026-11-30-refac…renderer`) where it is longer than the column can be; narrower still, every row
becomes a record of `name: value` lines (an empty value left out). JSON, CSV and markdown always carry every
figure, and every name whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from kcost.model.frozen import frozen
from kcost.render.page import Styled, cell_len, row_line

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.table import Table
    from rich.text import Text

COMFORT = 24  # a text column is not squeezed below this (or its own width) while optional columns remain
LEAST_NAME = 16  # a `middle` column is not squeezed below this (or its own width, or its header's)
ELLIPSIS = "\u2026"  # where a shortened name's middle was


@frozen
class Column:
    name: str
    number: bool = True  # right-aligned, never cut or wrapped
    drop: int = 0  # 0: always shown; otherwise dropped at narrow widths, the highest first
    short: str | None = None  # a shorter header for narrow widths (the legend names it)
    middle: bool = False  # names (text): each on one line, shortened in the middle where the column is narrower


class Short(str):
    """A cell's text with a shorter form for narrow tables, and the key entry that explains the short form (`~date`:
    `as of that day`), shown under a table that uses it."""

    short: str
    key: str

    def __new__(cls, text: str, short: str, key: str = "") -> Short:
        cell = super().__new__(cls, text)
        cell.short, cell.key = short, key
        return cell


Cell: TypeAlias = "str | Styled | Text"


@frozen
class _Plan:
    keep: list[int]
    short: bool  # codes for long words, short headers
    under: bool = False  # the `tail` column on a line of its own under each row


def fitted(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], width: int, *,
           title: str | None = None, header: bool = True, codes: Mapping[str, str] | None = None,
           shorten_from: int | None = None, lines: int | None = None,
           tail: int | None = None) -> Laid:  # fmt: skip
    """`rows` under `columns`, laid out for `width` columns of terminal; `header`: show the column names.

    `codes`: a short code for a word of a text cell (`block-granularity` -> `blk`), used, like the columns' short
    headers, only where the table would not fit otherwise: before the columns of drop level `shorten_from` or
    lower go (by default before any column goes). `lines`: the most lines a row may take (text wraps between
    words; no text column is then held at a comfortable width). `tail`: the index of the (last, text) column
    whose cells, once codes are in use and before any further column goes, may each go on a line of their own
    under their row where the row's line has no room for them. A table that cannot keep to all this becomes
    records."""
    codes = dict(codes or {})
    can_shorten = bool(codes) or any(c.short for c in columns)
    levels = sorted({c.drop for c in columns if c.drop}, reverse=True)
    keeps = [list(range(len(columns)))]
    for level in levels:
        keeps.append([i for i in keeps[-1] if columns[i].drop != level])
    plans: list[_Plan] = []
    short = False
    for n, keep in enumerate(keeps):
        plans.append(_Plan(keep, short))
        upcoming = levels[n] if n < len(levels) else 0  # the level that would go next
        if can_shorten and not short and (shorten_from is None or upcoming <= shorten_from):
            short = True  # codes before the next columns go (and from here on)
            plans.append(_Plan(keep, short))
        if tail is not None and (short or not can_shorten) and tail in keep:
            plans.append(_Plan(keep, short, under=True))
    for plan in plans:  # text at a comfortable width while optional columns remain, else as tight as words allow
        shown = _shorten(rows, columns, codes) if plan.short else rows
        if plan.under:
            assert tail is not None
            room = _under_room(columns, shown, plan, tail, width, header)
            if room is not None:
                return Laid(_under, (columns, shown, plan, tail, room, title, header, codes, rows), width)
            continue
        comfort = lines is None and _optional(columns, plan.keep)
        widths = _widths(columns, shown, plan, width, comfort, lines, header)
        if widths is not None:
            shown = _middled(columns, shown, plan, widths)
            return Laid(_table, (columns, shown, plan, widths, title, header, codes, rows), width)
    return Laid(_records, (columns, rows, title), width)


class Laid:
    """A table laid out for its width: drawn by rich (it is a rich renderable), or written as plain lines by a
    `kcost.render.page.Page` where it is a grid of one-line cells."""

    def __init__(self, draw: Any, args: tuple[Any, ...], width: int) -> None:
        self.draw, self.args, self.width = draw, args, width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.draw(*self.args)

    def plain_lines(self, color: bool) -> list[str] | None:
        """The table's lines as rich draws them, or None where only rich can draw it."""
        if self.draw is not _table:
            return None
        columns, rows, plan, widths, title, header, codes, original = self.args
        if title or min(widths, default=0) < 1:
            return None  # a title rich styles, a column rich widens to one cell
        numbers = [columns[i].number for i in plan.keep]
        out: list[str | None] = []
        if header:
            names = [_header(columns[i], plan.short) for i in plan.keep]
            out.append(row_line(list(zip(names, widths, numbers, strict=True)), color, "bold"))
        for row in rows:
            cells = [row[i] for i in plan.keep]
            if any(not isinstance(c, str | Styled) for c in cells):
                return None  # a rich Text: drawn by rich
            out.append(row_line(list(zip(cells, widths, numbers, strict=True)), color))
        legend = _legend(columns, plan, codes, original, header) if plan.short else ""
        if legend:
            if cell_len(legend) > self.width:
                return None  # rich wraps it
            out.append(row_line([(Styled(legend, "dim"), cell_len(legend), False)], color))
        if any(line is None for line in out):
            return None
        return [line for line in out if line is not None]


_INDENT = 2  # a tail line's indent


_Room = tuple[str, list[int], list[int], int]  # a tail line's lead, the other columns, their widths, the tail's


def _under(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], plan: _Plan, tail: int, laid: _Room,
           title: str | None, header: bool, codes: Mapping[str, str],
           original: Sequence[Sequence[Cell]]) -> RenderableType:  # fmt: skip
    """Every row on one line, its `tail` cell in the last column where it fits there on one line, else on a line
    of its own under the row (`  why: ...`), as `_under_room` laid it out."""
    # deferred: rich: loaded only where used (start-up; tests/test_cli.py)
    from rich.console import Group
    from rich.text import Text

    lead, others, natural, room = laid
    inline = [_len(r[tail]) <= room for r in rows]
    shown = [[*(r[i] for i in others), r[tail] if fits else ""] for r, fits in zip(rows, inline, strict=True)]
    as_columns = [*(columns[i] for i in others), columns[tail]]
    table = _grid(as_columns, shown, _Plan(list(range(len(as_columns))), plan.short), [*natural, room], None, header)
    tails = [None if fits else Text(lead) + _text(r[tail]) for r, fits in zip(rows, inline, strict=True)]
    parts: list[RenderableType] = [Text(title, style="bold")] if title else []
    parts.append(_Stacked(table, tails))
    legend = _legend(columns, plan, codes, original, header) if plan.short else ""
    if legend:
        parts.append(Text(legend, style="dim"))
    return Group(*parts)


def _under_room(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], plan: _Plan, tail: int, width: int,
                header: bool) -> _Room | None:  # fmt: skip
    """`_under`'s layout at `width`: a tail line's lead, the other columns and their widths, and what the tail
    column has on a row's line; None where a row, the tail column's header or a tail line would not fit."""
    name = _header(columns[tail], plan.short)
    lead = " " * _INDENT + (f"{name}: " if name else "")
    if any(cell_len(lead) + _len(r[tail]) > width for r in rows):
        return None
    others = [i for i in plan.keep if i != tail]
    natural = [max([cell_len(_header(columns[i], plan.short)) if header else 0, *(_len(r[i]) for r in rows)])
               for i in others]  # fmt: skip
    room = width - sum(natural) - len(natural)  # what the tail column has on the row's line
    if room < max(cell_len(name) if header else 1, 3):
        return None
    return lead, others, natural, room


class _Stacked:
    """A table of one-line rows, each followed by its tail line where it has one."""

    def __init__(self, table: Table, tails: list[Text | None]) -> None:
        self.table, self.tails = table, tails

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # deferred: rich: loaded only where used (start-up; tests/test_cli.py)
        from rich.segment import Segment

        lines = console.render_lines(self.table, options, pad=False)
        top = len(lines) - len(self.tails)  # the header's lines
        for n, line in enumerate(lines):
            yield from line
            yield Segment.line()
            if n >= top and (tail := self.tails[n - top]) is not None:
                yield from console.render(tail, options)


def _optional(columns: Sequence[Column], keep: list[int]) -> bool:
    return any(columns[i].drop for i in keep)


def _len(cell: Cell) -> int:
    return cell_len(cell) if isinstance(cell, str) else cell.cell_len


def _text(cell: Cell) -> Text:
    # deferred: rich: loaded only where used (start-up; tests/test_cli.py)
    from rich.text import Text

    if isinstance(cell, str):
        return Text(cell)
    return cell.rich() if isinstance(cell, Styled) else cell


def _plain(cell: Cell) -> str:
    return cell if isinstance(cell, str) else cell.plain


def _words(text: str) -> list[str]:
    return [w for w in text.split(" ") if w]


def _wrapped(text: str, width: int) -> int:
    """The lines `text` takes wrapped between words at `width` (a word longer than `width`: never asked)."""
    count, line = 1, 0
    for word in _words(text):
        size = cell_len(word)
        if line and line + 1 + size > width:
            count, line = count + 1, size
        else:
            line = line + 1 + size if line else size
    return count


def _floor(texts: Sequence[str], lines: int | None) -> int:
    """The least width at which no word of `texts` splits and (with `lines`) none takes more than `lines` lines."""
    words = [cell_len(w) for t in texts for w in _words(t)]
    low = max(words or [1])
    if lines is None:
        return low
    high = max([cell_len(t) for t in texts] or [low])
    while low < high:
        mid = (low + high) // 2
        if all(_wrapped(t, mid) <= lines for t in texts):
            high = mid
        else:
            low = mid + 1
    return low


def _header(column: Column, short: bool) -> str:
    return column.short if short and column.short else column.name


def _widths(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], plan: _Plan, width: int, comfort: bool,
            lines: int | None, header: bool) -> list[int] | None:  # fmt: skip
    """Each kept column's width for `plan`, or None where it cannot fit `width`."""
    natural, floor = [], []
    for i in plan.keep:
        name = _header(columns[i], plan.short) if header else ""
        cells = [_plain(r[i]) for r in rows]
        most = max([cell_len(name), *(cell_len(c) for c in cells)])
        if columns[i].number:
            natural.append(most)
            floor.append(most)
            continue
        if columns[i].middle:  # shortened, never wrapped: as narrow as a readable name
            least = max(min(most, LEAST_NAME), cell_len(name))
        else:
            least = max(_floor(cells, lines), _floor([name], None) if name else 0)
        if comfort:
            least = max(least, min(most, COMFORT))
        natural.append(most)
        floor.append(min(least, most))
    room = width - max(len(plan.keep) - 1, 0)
    spare = room - sum(floor)
    if spare < 0:
        return None
    widths = list(floor)
    for k in sorted(range(len(widths)), key=lambda k: natural[k] - floor[k]):  # the least short first: all get some
        give = min(spare, natural[k] - widths[k])
        widths[k] += give
        spare -= give
    return widths


def _middled(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], plan: _Plan,
             widths: list[int]) -> Sequence[Sequence[Cell]]:  # fmt: skip
    """The rows with each cell of a `middle` column longer than its width shortened in the middle to it."""
    narrowed = {i: w for i, w in zip(plan.keep, widths, strict=True) if columns[i].middle}
    if not any(_len(r[i]) > w for r in rows for i, w in narrowed.items()):
        return rows
    return [[middle(c, narrowed[i]) if i in narrowed and _len(c) > narrowed[i] else c for i, c in enumerate(r)]
            for r in rows]  # fmt: skip


def middle(cell: Cell, width: int) -> Cell:
    """A name at most `width` cells wide: its start and its end, with `…` for what is left out between them (a
    name's end tells apart names that begin alike: dated files, one project's sessions); its style kept."""
    # deferred: rich: loaded only where used (start-up; tests/test_cli.py)
    from rich.cells import set_cell_size

    text = _plain(cell)
    if cell_len(text) <= width:
        return cell
    head = width // 2
    tail = width - 1 - head
    start = set_cell_size(text, head).rstrip()
    end = text[len(text) - _chars_from_end(text, tail) :] if tail > 0 else ""
    shortened = start + ELLIPSIS + end.lstrip()
    if isinstance(cell, str):
        return shortened
    return Styled(shortened, cell.style) if isinstance(cell, Styled) else type(cell)(shortened, style=cell.style)


def _chars_from_end(text: str, cells: int) -> int:
    """How many characters at the end of `text` fill at most `cells` cells."""
    taken, count = 0, 0
    for char in reversed(text):
        size = cell_len(char)
        if taken + size > cells:
            break
        taken, count = taken + size, count + 1
    return count


def _shorten(rows: Sequence[Sequence[Cell]], columns: Sequence[Column], codes: Mapping[str, str]) -> list[list[Cell]]:
    """The rows with each word of a text cell that has a code replaced by it."""
    out: list[list[Cell]] = []
    for row in rows:
        cells: list[Cell] = []
        for c, cell in zip(columns, row, strict=True):
            if isinstance(cell, Short):
                cells.append(cell.short)
            elif c.number or not isinstance(cell, str):
                cells.append(cell)
            else:
                cells.append(" ".join(codes.get(w, w) for w in cell.split(" ")))
        out.append(cells)
    return out


def _table(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], plan: _Plan, widths: list[int],
           title: str | None, header: bool, codes: Mapping[str, str],
           original: Sequence[Sequence[Cell]]) -> RenderableType:  # fmt: skip
    # deferred: rich: loaded only where used (start-up; tests/test_cli.py)
    from rich.console import Group
    from rich.text import Text

    table = _grid(columns, rows, plan, widths, title, header)
    if not plan.short:
        return table
    legend = _legend(columns, plan, codes, original, header)
    return Group(table, Text(legend, style="dim")) if legend else table


def _grid(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], plan: _Plan, widths: list[int],
          title: str | None, header: bool) -> Table:  # fmt: skip
    # deferred: rich: loaded only where used (start-up; tests/test_cli.py)
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=None, pad_edge=False, padding=(0, 1, 0, 0),
                  header_style="bold", show_header=header)  # fmt: skip
    for i, w in zip(plan.keep, widths, strict=True):
        c = columns[i]
        name = _header(c, plan.short)
        if c.number:
            table.add_column(name, justify="right", no_wrap=True, min_width=w)
        else:
            table.add_column(name, justify="left", overflow="fold", width=w)
    for row in rows:
        table.add_row(*(cell.rich() if isinstance(cell, Styled) else cell for cell in (row[i] for i in plan.keep)))
    return table


def _legend(columns: Sequence[Column], plan: _Plan, codes: Mapping[str, str],
            rows: Sequence[Sequence[Cell]], header: bool) -> str:  # fmt: skip
    """`key: blk=block-granularity · hit%=hit rate`: each code and short header the table shows (an entry one
    word, so that wrapping never parts a code from its meaning)."""
    used: dict[str, str] = {}
    if header:
        used |= {columns[i].short: columns[i].name for i in plan.keep if columns[i].short}  # type: ignore[misc]
    words = {w for row in rows for i in plan.keep if not columns[i].number for w in _plain(row[i]).split(" ")}
    used |= {code: word for word, code in codes.items() if word in words}
    for row in rows:
        for i in plan.keep:
            cell = row[i]
            if isinstance(cell, Short) and cell.key:
                code, _, meaning = cell.key.partition("=")
                used[code] = meaning
    entries = (f"{code}={word}".replace(" ", "\u00a0") for code, word in used.items())
    return "key: " + " · ".join(entries) if used else ""


def _records(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], title: str | None) -> RenderableType:
    """One block of `name: value` lines a row: nothing cut, however narrow."""
    # deferred: rich: loaded only where used (start-up; tests/test_cli.py)
    from rich.console import Group
    from rich.text import Text

    label = max(cell_len(c.name) for c in columns)  # (a column with no name: its values alone)
    parts: list[RenderableType] = [Text(title, style="bold")] if title else []
    for n, row in enumerate(rows):
        if n:
            parts.append(Text(""))
        for c, cell in zip(columns, row, strict=True):
            if not _plain(cell).strip():
                continue  # an empty value (a total's agent, model, start) says nothing
            line = Text(f"{c.name:>{label}}: " if c.name else " " * (label + 2), style="bold")
            line.append_text(_text(cell))
            parts.append(line)
    return Group(*parts)
