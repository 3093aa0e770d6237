"""Markdown for a pull-request comment or a notebook: a summary and a per-turn table per session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcost.render.text import (
    assumptions,
    pct,
    session_title,
    sparkline,
    summary_lines,
    tokens,
    turn_groups,
    usd,
)
from kcost.results import BillReport, SessionBill

if TYPE_CHECKING:
    from kcost.render.registry import View


def render_markdown(report: BillReport, view: View) -> str:
    summary = view.summary
    out: list[str] = []
    for run in report.runs:
        for bill in run.sessions:
            out.append(f"### {session_title(bill, run)}\n")
            out += [f"- {line}" for line in summary_lines(bill.summary)]
            out.append(f"- cost by turn: `{sparkline([t.total for t in bill.turns])}`")
            out += [f"- {line}" for line in assumptions(report, bill)]
            out.append("")
            if not summary:
                out += _turns(bill)
                out.append("")
    if len(report.runs) > 1 or len(report.runs[0].sessions) > 1:
        out.append("### Totals\n")
        out.append("| cache model | sessions | hit rate | input | output | total | saved | blended /M |")
        out.append("|---|--:|--:|--:|--:|--:|--:|--:|")
        for run in report.runs:
            s = run.total
            out.append(
                f"| `{run.cache.label}` | {len(run.sessions)} | {pct(s.hit_rate)} | {usd(s.input_cost)} | "
                f"{usd(s.output_cost)} | {usd(s.total)} | {usd(s.saved)} | {usd(s.blended_input_per_mtok)} |"
            )
        out.append("")
    return "\n".join(out)


def _turns(bill: SessionBill) -> list[str]:
    rows = [
        "| turn | input | hit | miss | output | hit % | hit $ | miss $ | output $ | total $ | cumulative $ | why |",
        "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for first, last, t, end in turn_groups(bill.turns):
        label = str(first) if first == last else f"{first}–{last} (×{last - first + 1})"
        if t.label:
            label += f" · {t.label}"
        rows.append(
            f"| {label} | {tokens(t.input_tokens)} | {tokens(t.hit_tokens)} | {tokens(t.miss_tokens)} | "
            f"{tokens(t.output_tokens)} | {pct(t.hit_rate)} | {usd(t.hit_cost, 4)} | {usd(t.miss_cost, 4)} | "
            f"{usd(t.output_cost, 4)} | {usd(t.total, 4)} | {usd(end.cumulative)} | {t.reason} |"
        )
    return rows
