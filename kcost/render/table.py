"""The terminal report: a per-turn table with a cost bar, a summary and a sparkline per session, and a
side-by-side comparison when several cache models ran."""

from __future__ import annotations

from decimal import Decimal

from rich.table import Table
from rich.text import Text

from kcost.render.terminal import console as make_console
from kcost.render.text import (
    assumptions,
    bar,
    pct,
    session_title,
    sparkline,
    summary_lines,
    tokens,
    turn_groups,
    usd,
)
from kcost.results import BillReport, SessionBill


def render_table(report: BillReport, *, width: int, color: bool, summary: bool) -> str:
    console, out = make_console(width, color)
    for run in report.runs:
        for bill in run.sessions:
            console.print(Text(session_title(bill, run), style="bold"))
            if not summary:
                console.print(_turns(bill, width))
            for line in summary_lines(bill.summary):
                console.print(line)
            console.print(
                f"cost by turn: {sparkline([t.total for t in bill.turns], width=max(1, min(60, width - 14)))}"
            )
            for line in assumptions(report, bill):
                console.print(Text(line, style="dim"))
            console.print()
        if len(run.sessions) > 1:
            console.print(Text(f"all {len(run.sessions)} sessions · cache {run.cache.label}", style="bold"))
            for line in summary_lines(run.total):
                console.print(line)
            console.print()
    if len(report.runs) > 1:
        console.print(_comparison(report))
    return out.getvalue()


# Columns by how much a person needs them: the per-part costs and the bar go first when the terminal is narrow
# (JSON, CSV and markdown always carry every figure).
_PART_COSTS_FROM = 128  # the width at which hit $, miss $ and out $ fit beside the rest
_BAR_FROM = 100


def _turns(bill: SessionBill, width: int) -> Table:
    parts, with_bar = width >= _PART_COSTS_FROM, width >= _BAR_FROM
    table = Table(box=None, pad_edge=False, padding=(0, 1, 0, 0), header_style="bold")
    names = ["turn", "input", "hit", "miss", "output", "hit%"]
    names += ["hit $", "miss $", "out $"] if parts else []
    names += ["total $", "cum. $"]
    checked = any(t.check for t in bill.turns)
    if checked:
        names.insert(3, "reported")  # the log's cached tokens, beside the simulator's hits
    for name in names:
        table.add_column(name, justify="right", no_wrap=True)
    if with_bar:
        table.add_column("cost", no_wrap=True)
    table.add_column("why", no_wrap=True, overflow="ellipsis")
    top = max((t.total for t in bill.turns), default=Decimal(0))
    for first, last, t, end in turn_groups(bill.turns):
        why = t.reason + "".join(f" at {m.at:,}" for m in t.misses if m.reason == t.reason == "prefix-changed")
        if t.label:
            why = f"{why} · {t.label}"
        row = [
            str(first) if first == last else f"{first}-{last}",
            tokens(t.input_tokens),
            tokens(t.hit_tokens),
            tokens(t.miss_tokens),
            tokens(t.output_tokens),
            pct(t.hit_rate),
        ]
        row += [usd(t.hit_cost, 4), usd(t.miss_cost, 4), usd(t.output_cost, 4)] if parts else []
        row += [usd(t.total, 4), usd(end.cumulative)]
        if checked:
            row.insert(3, tokens(t.check.reported_cached_tokens) if t.check else "-")
        row += [bar(t.total, top, width=8)] if with_bar else []
        table.add_row(*row, why)
    return table


def _comparison(report: BillReport) -> Table:
    table = Table(
        title="cache models compared", box=None, pad_edge=False, padding=(0, 1, 0, 0), header_style="bold",
        title_justify="left",
    )  # fmt: skip
    for name in (
        "cache model",
        "checkpoints",
        "hit rate",
        "input $",
        "out $",
        "total $",
        "saved",
        "blended /M",
    ):
        table.add_column(name, justify="left" if name in ("cache model", "checkpoints") else "right", no_wrap=True)
    for run in report.runs:
        s = run.total
        table.add_row(
            run.cache.label,
            run.cache.checkpoints,
            pct(s.hit_rate),
            usd(s.input_cost),
            usd(s.output_cost),
            usd(s.total),
            usd(s.saved),
            usd(s.blended_input_per_mtok),
        )
    return table
