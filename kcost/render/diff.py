"""Reports of `kcost diff`: a terminal table, JSON, markdown for a pull-request comment and an HTML page; and
what `kcost check` shares of them: markdown kept under the size a comment may take, and the diff on a page."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from rich.text import Text

from kcost.render import svg
from kcost.render.display import count, exact, markdown_text, money, percent, plural, signed_money, signed_percent
from kcost.render.fit import Cell, Column, fitted
from kcost.render.html import figures, page, shown_path, table, usd, usd_figure
from kcost.render.terminal import console as make_console
from kcost.results.check import DiffReport, SessionDiff
from kcost.results.common import dump_json

if TYPE_CHECKING:
    from kcost.render.registry import View

MARKDOWN_LIMIT = 60_000  # characters: GitHub refuses a comment past 65,536


def shown(diff: DiffReport, view: View) -> DiffReport:
    """The diff as the table, JSON and HTML show it: without the unchanged sessions where `only_changed`."""
    return diff.changed_only() if view.only_changed else diff


def diff_json(diff: DiffReport, view: View) -> str:
    return dump_json(shown(diff, view), view.numbers) + "\n"


def diff_markdown(diff: DiffReport, view: View) -> str:
    """What changed first, in a table; unchanged sessions folded (or, `only_changed`, counted and left out);
    under `MARKDOWN_LIMIT`."""
    blocks = Blocks(MARKDOWN_LIMIT)
    diff_blocks(diff, blocks, heading="### kcost diff", only_changed=view.only_changed)
    return "\n".join(blocks.lines()) + "\n"


def diff_blocks(diff: DiffReport, blocks: Blocks, *, heading: str, only_changed: bool = False) -> None:
    head = ["| session | status | before | after | change | hit rate | blended /M |", "|---|---|--:|--:|--:|--:|--:|"]

    def row(r: SessionDiff) -> str:
        return (f"| {cell(r.session)} | {r.status} | {_money(r, 'before')} | {_money(r, 'after')} | "
                f"{_change(r)} | {_pair(r, 'hit_rate')} | {_pair(r, 'blended_input_per_mtok')} |")  # fmt: skip

    moved = [r for r in diff.sessions if r.status != "unchanged"]
    moved.sort(key=lambda r: -abs(r.change) if r.change is not None else Decimal(0))  # the largest change first
    same = [r for r in diff.sessions if r.status == "unchanged"]
    blocks.text([heading, "", f"`{diff.before}` -> `{diff.after}`", ""])
    blocks.table(None, head, [row(r) for r in [diff.total, *moved]])
    if same and not only_changed:
        blocks.table(f"{plural(len(same), 'unchanged session')}", head, [row(r) for r in same], folded=True)
    elif same:
        blocks.text([f"{plural(len(same), 'unchanged session')} not shown.", ""])


class Blocks:
    """Markdown within a size: tables take rows while there is room, and say how many they left out."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.out: list[str] = []

    def text(self, lines: list[str]) -> None:
        self.out += lines
        self.room -= lines_size(lines)

    def table(self, title: str | None, head: list[str], rows: list[str], *, folded: bool = False) -> None:
        if not rows:
            return
        opening = [f"<details><summary>{title}</summary>", ""] if folded else ([title, ""] if title else [])
        closing = ["", "</details>", ""] if folded else [""]
        # and 120 for the line saying what was left out
        framing = lines_size(opening) + lines_size(head) + lines_size(closing) + 120
        if self.room < framing + len(rows[0]) + 1:  # not even one row fits: say so in one short line
            note = f"{plural(len(rows), 'row')} left out to keep this comment under {count(MARKDOWN_LIMIT)} characters."
            if self.room >= len(note) + 2:
                self.out += [note, ""]
                self.room -= len(note) + 2
            return
        self.room -= framing
        kept: list[str] = []
        for line in rows:
            if self.room - len(line) - 1 < 0:
                break
            kept.append(line)
            self.room -= len(line) + 1
        self.out += [*opening, *head, *kept]
        if len(kept) < len(rows):
            self.out.append(f"\n{plural(len(rows) - len(kept), 'more row')} left out to keep this comment under "
                            f"{count(MARKDOWN_LIMIT)} characters (the JSON report has them all).")  # fmt: skip
        self.out += closing

    def lines(self) -> list[str]:
        return self.out


def lines_size(lines: list[str]) -> int:
    """The characters `lines` take, with their newlines."""
    return sum(len(line) + 1 for line in lines)


def diff_table(diff: DiffReport, view: View) -> str:
    diff, width = shown(diff, view), view.width
    console, out = make_console(width, view.color)
    console.print(Text(f"{diff.before} -> {diff.after}", style="bold"))
    columns = [Column("session", number=False), Column("status", number=False), Column("before"), Column("after"),
               Column("change"), Column("hit rate", drop=1), Column("blended /M", drop=2)]  # fmt: skip
    rows: list[list[Cell]] = [
        [row.session, row.status, _money(row, "before"), _money(row, "after"),
         Text(_change(row), style="red" if (row.change or 0) > 0 else "green" if (row.change or 0) < 0 else ""),
         _pair(row, "hit_rate"), _pair(row, "blended_input_per_mtok")]
        for row in [*diff.sessions, diff.total]
    ]  # fmt: skip
    console.print(fitted(columns, rows, width))
    return out.getvalue()


def _money(row: SessionDiff, side: str) -> str:
    s = getattr(row, side)
    return money(s.total, total=True) if s else "-"


def _change(row: SessionDiff) -> str:
    if row.change is None:
        return "-"
    share = f" ({signed_percent(row.change_pct / 100)})" if row.change_pct is not None else ""
    return f"{signed_money(row.change)}{share}"


def _pair(row: SessionDiff, field: str) -> str:
    values = []
    for side in (row.before, row.after):
        if side is None:
            values.append("-")
        elif field == "hit_rate":
            values.append(percent(side.hit_rate))
        else:
            values.append(money(getattr(side, field)))
    return " -> ".join(values)


def cell(text: str) -> str:
    """Text for a markdown table's cell: HTML and its bars escaped, on one line."""
    return markdown_text(text)


def diff_html(diff: DiffReport, view: View) -> str:
    """The page: `diff_body` of what `shown` keeps."""
    return page("kcost diff", "two bills side by side: what changed first", [diff_body(shown(diff, view))])


def diff_body(changes: DiffReport) -> str:
    """The diff on a page (the diff's, and the check's against a baseline): the totals, how much each session
    moved as a chart, and every session in a sortable table."""
    # the page's pieces only when a page is asked for: the other formats import no HTML or chart code
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    from html import escape

    t = changes.total
    out = [
        f"<h2>{escape(shown_path(changes.before))} → {escape(shown_path(changes.after))}</h2>",
        figures(
            [
                usd_figure("before", t.before.total) if t.before else ("before", "-", None),
                usd_figure("after", t.after.total, "session-total") if t.after else ("after", "-", "session-total"),
                ("change", signed_money(t.change), None, exact(t.change))
                if t.change is not None
                else ("change", "-", None),
            ]
        ),
    ]

    def delta(s: SessionDiff) -> Decimal:
        return (s.after.total if s.after else Decimal(0)) - (s.before.total if s.before else Decimal(0))

    moved = [s for s in changes.sessions if delta(s)]
    out.append(
        svg.hbars(
            "Change by session",
            "How much each session's cost moved (new sessions count in full, removed ones as savings), largest "
            "first: a decrease left of the zero line, an increase right of it and in the accent colour.",
            [(f"{s.session} ({s.status})", float(delta(s))) for s in moved] or [("no change", 0.0)],
            marks=[f"{s.session} ({s.status})" for s in moved if delta(s) > 0],
        )
    )
    out.append(
        table(
            ["session", "status", "before", "after", "change", "change %"],
            [
                [
                    (s.session, None),
                    (s.status, None),
                    usd(s.before.total, total=True) if s.before else ("-", None),
                    usd(s.after.total, total=True) if s.after else ("-", None),
                    (signed_money(s.change), float(s.change), exact(s.change)) if s.change is not None else ("-", 0.0),
                    (signed_percent(s.change_pct / 100), float(s.change_pct), f"{s.change_pct}%")
                    if s.change_pct is not None
                    else ("-", 0.0),
                ]
                for s in changes.sessions
            ],
            text_columns=(0, 1),
        )
    )
    return "".join(out)
