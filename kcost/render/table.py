"""The terminal report: a per-turn table with a cost bar, a summary and a sparkline per session, and a
side-by-side comparison when several cache models ran."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from kcost.render.display import count, money, percent, plural
from kcost.render.fit import Cell, Column, Laid, fitted
from kcost.render.page import Page, Styled
from kcost.render.text import (
    REASON_CODES,
    assumptions,
    bar,
    bill_sparkline,
    session_title,
    summary_lines,
    turn_groups,
)
from kcost.results import BillReport, SessionBill

if TYPE_CHECKING:
    from kcost.render.registry import View


def render_table(report: BillReport, view: View) -> str:
    width, summary = view.width, view.summary
    page = Page(width, view.color)
    for run in report.runs:
        for bill in run.sessions:
            page.print(Styled(session_title(bill, run), "bold"))
            if not summary:
                page.print(_turns(bill, width))
            for line in summary_lines(bill.summary):
                page.print(figures(line))
            page.print(f"cost by turn: {bill_sparkline(bill, width=max(1, min(60, width - 14)))}")
            for line in assumptions(report, bill, view.verbose):
                page.print(Styled(line, "dim"))
            page.print()
        if len(run.sessions) > 1:
            page.print(Styled(f"all {plural(len(run.sessions), 'session')} · cache {run.cache.label}", "bold"))
            for line in summary_lines(run.total):
                page.print(figures(line))
            page.print()
    if len(report.runs) > 1:
        page.print(_comparison(report, width))
    return page.text()


def figures(line: str) -> Styled:
    """A summary line with the figures that matter marked (shown only where colour is on): the total bold, the
    misses' cost yellow."""
    text = Styled(line).highlighted(r"(?<=\btotal )<?\$[\d,.]*\d", "bold")
    return text.highlighted(r"(?<=\bmisses )<?\$[\d,.]*\d", "yellow")


def _turns(bill: SessionBill, width: int) -> Laid:
    """A row per turn (identical consecutive turns as one), at most two lines each. Narrow: the per-part costs go
    first, then the cost bar; then the reasons give way to their codes (a legend names them) and, where the row
    still has no room for them, go on a line of their own under it; then the reported, output and hit token
    counts go (input = hit + miss). JSON, CSV and markdown always carry every figure; numbers
    are never cut, words never split."""
    checked = any(t.check for t in bill.turns)
    columns = [Column("turn"), Column("input"), Column("hit", drop=2)]
    columns += [Column("reported", drop=4)] if checked else []  # the log's cached tokens, beside the simulator's hits
    columns += [Column("miss"), Column("output", drop=3), Column("hit%")]
    columns += [Column("hit $", drop=6), Column("miss $", drop=6), Column("out $", drop=6)]
    columns += [Column("total $"), Column("cum. $"), Column("cost", number=False, drop=5), Column("why", number=False)]
    top = max((t.total for t in bill.turns), default=Decimal(0))
    rows: list[list[Cell]] = []
    for first, last, t, end in turn_groups(bill.turns):
        why = t.reason + "".join(f" at {count(m.at)}" for m in t.misses if m.reason == t.reason == "prefix-changed")
        if t.label:
            why = f"{why} · {t.label}"
        row: list[Cell] = [str(first) if first == last else f"{first}-{last}", count(t.input_tokens)]
        row.append(count(t.hit_tokens))
        row += [count(t.check.reported_cached_tokens) if t.check else "-"] if checked else []
        row += [count(t.miss_tokens), count(t.output_tokens), percent(t.hit_rate)]
        miss = Styled(money(t.miss_cost), "yellow" if t.miss_cost else "")
        row += [money(t.hit_cost), miss, money(t.output_cost)]
        row += [money(t.total), money(end.cumulative, total=True), bar(t.total, top, width=8), why]
        rows.append(row)
    return fitted(columns, rows, width, codes=REASON_CODES, shorten_from=4, lines=2, tail=len(columns) - 1)


def _comparison(report: BillReport, width: int) -> Laid:
    columns = [Column("cache model", number=False), Column("checkpoints", number=False, drop=1)]
    columns += [Column(n) for n in ("hit rate", "input $", "out $", "total $", "saved", "blended /M")]
    rows: list[list[Cell]] = []
    for run in report.runs:
        s = run.total
        rows.append([run.cache.label, run.cache.checkpoints, percent(s.hit_rate), money(s.input_cost),
                     money(s.output_cost), Styled(money(s.total, total=True), "bold"), money(s.saved, total=True),
                     money(s.blended_input_per_mtok)])  # fmt: skip
    return fitted(columns, rows, width, title="cache models compared")
