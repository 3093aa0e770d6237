"""Markdown for a pull-request comment or a notebook: a summary and a per-turn table per session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcost.render.display import count, markdown_text, money, percent
from kcost.render.text import assumptions, bill_sparkline, session_title, summary_lines, turn_groups
from kcost.results import BillReport, SessionBill

if TYPE_CHECKING:
    from kcost.render.registry import View


def render_markdown(report: BillReport, view: View) -> str:
    summary = view.summary
    out: list[str] = []
    for run in report.runs:
        for bill in run.sessions:
            out.append(f"### {markdown_text(session_title(bill, run))}\n")
            out += [f"- {line}" for line in summary_lines(bill.summary)]
            out.append(f"- cost by turn: `{bill_sparkline(bill)}`")
            out += [f"- {markdown_text(line)}" for line in assumptions(report, bill, view.verbose)]
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
                f"| `{run.cache.label}` | {count(len(run.sessions))} | {percent(s.hit_rate)} | {money(s.input_cost)} | "
                f"{money(s.output_cost)} | {money(s.total, total=True)} | {money(s.saved, total=True)} | "
                f"{money(s.blended_input_per_mtok)} |"
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
            label += f" · {markdown_text(t.label)}"
        rows.append(
            f"| {label} | {count(t.input_tokens)} | {count(t.hit_tokens)} | {count(t.miss_tokens)} | "
            f"{count(t.output_tokens)} | {percent(t.hit_rate)} | {money(t.hit_cost)} | {money(t.miss_cost)} | "
            f"{money(t.output_cost)} | {money(t.total)} | {money(end.cumulative, total=True)} | {t.reason} |"
        )
    return rows
