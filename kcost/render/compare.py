"""`kcost compare`: one row per session and model, the cheapest marked, as text or markdown (its JSON is the
report as it is, `kcost.render.data`; its HTML page is in `kcost.render.html`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcost.render.fit import Column, fitted
from kcost.render.terminal import console as make_console
from kcost.render.text import pct, usd
from kcost.results.compare import CompareReport

if TYPE_CHECKING:
    from kcost.render.registry import View

HEAD = ("model", "provider's cache rule", "hits", "cost", "per turn", "dominant", "counts", "")


def compare_markdown(report: CompareReport, view: View) -> str:
    out = []
    for s in report.sessions:
        out += [f"### {s.session} · {s.turns} turns · cheapest: **{s.cheapest}**", "",
                "| " + " | ".join(HEAD[:-1]) + " |", "|---|---|---:|---:|---:|---|---|"]  # fmt: skip
        for r in s.rows:
            name = f"**{r.model}**" if r.cheapest else r.model
            out.append(f"| {name} | `{r.cache}` | {pct(r.hit_rate)} | {usd(r.cost, 4)} | "
                       f"{usd(r.cost_per_turn, 4)} | {r.dominant} | {r.counts} |")  # fmt: skip
        out.append("")
    return "\n".join([*out, report.note, ""])


def compare_table(report: CompareReport, view: View) -> str:
    width = view.width
    console, buffer = make_console(width, view.color)
    for s in report.sessions:
        console.print(f"{s.session} · {s.turns} turns · cheapest: {s.cheapest}")
        columns = [Column(HEAD[0], number=False), Column(HEAD[1], number=False, drop=2), Column(HEAD[2]),
                   Column(HEAD[3]), Column(HEAD[4]), Column(HEAD[5], number=False, drop=1),
                   Column(HEAD[6], number=False, drop=1), Column(HEAD[7], number=False)]  # fmt: skip
        rows = [[r.model, r.cache, pct(r.hit_rate), usd(r.cost, 4), usd(r.cost_per_turn, 4), r.dominant, r.counts,
                 "cheapest" if r.cheapest else ""] for r in s.rows]  # fmt: skip
        console.print(fitted(columns, rows, width))
        console.print()
    console.print(report.note)
    return buffer.getvalue()
