"""`kcost plan` as a table or markdown (its JSON is the report as it is, `kcost.render.data`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcost.render.display import markdown_text, money, percent, plural
from kcost.results.plan import PlanReport, PlanRow

if TYPE_CHECKING:
    from kcost.render.registry import View

_HEAD = ("plan", "per month", "windows", "API at this pace", "pays for itself", "break-even")


def _lines(report: PlanReport) -> list[str]:
    pace = "" if report.days == report.month_days else (
        f" · at this pace over {plural(report.month_days, 'day')}: {money(report.k3_month, total=True)} and "
        f"{money(report.logged_month, total=True)}")  # fmt: skip
    out = [f"{report.month}, {plural(report.days, 'day')} · {plural(report.sessions, 'session')}, "
           f"{plural(report.calls, 'call')} ({', '.join(report.agents) or 'no agent'}) · under {report.cache} · "
           f"days in {report.timezone}",  # fmt: skip
           f"at API prices so far: {money(report.k3_to_date, total=True)} at K3's rates, "
           f"{money(report.logged_to_date, total=True)} at the logged models' own{pace}"]  # fmt: skip
    if report.unpriced_calls:
        out.append(f"{plural(report.unpriced_calls, 'call')} on models the price table lacks left out of the logged "
                   "models' figure")  # fmt: skip
    return out


def _cells(row: PlanRow) -> list[str]:
    windows = " + ".join("weekly" if h == 168 else f"{h} h" for h in row.windows_hours)
    even = "no use" if row.break_even is None else f"at {percent(row.break_even, 0)} of this month's use"
    verdict = f"yes, saves {money(row.saves, total=True)}" if row.pays_for_itself else (
        f"no, {money(-row.saves, total=True)} above API")  # fmt: skip
    return [row.name, money(row.usd_month, total=True), windows, money(row.api_month, total=True), verdict, even]


def _sources(report: PlanReport) -> list[str]:
    out = []
    for r in report.plans:
        dates = [f"as of {r.as_of}"] * bool(r.as_of) + [f"read {r.read}"] * bool(r.read)
        out.append(f"{r.name}: {r.source}" + (f" ({', '.join(dates)})" if dates else ""))
    return out


def plan_table(report: PlanReport, view: View) -> str:
    from kcost.render.fit import Column, fitted
    from kcost.render.terminal import console as make_console

    console, buffer = make_console(view.width, view.color)
    for line in _lines(report):
        console.print(line, highlight=False)
    columns = [Column(name, number=name in ("per month", "API at this pace"), drop=1 if name == "windows" else 0)
               for name in _HEAD]  # fmt: skip
    console.print(fitted(columns, [_cells(r) for r in report.plans], view.width))
    for line in _sources(report):
        console.print(f"{line}", style="dim", highlight=False)
    return buffer.getvalue().rstrip("\n") + "\n"


def plan_markdown(report: PlanReport, view: View) -> str:
    out = [f"**{markdown_text(_lines(report)[0])}**", "", *(markdown_text(line) + "  " for line in _lines(report)[1:]),
           "", "| " + " | ".join(_HEAD) + " |", "|---|---:|---|---:|---|---|"]  # fmt: skip
    out += ["| " + " | ".join(markdown_text(c) for c in _cells(r)) + " |" for r in report.plans]
    out += ["", *(f"- {markdown_text(s)}" for s in _sources(report))]
    return "\n".join(out) + "\n"
