"""`kcost compare`: one row per session and model, the cheapest marked, as text, JSON or markdown."""

from __future__ import annotations

from kcost.render.fit import Column, fitted
from kcost.render.terminal import console as make_console
from kcost.render.text import pct, usd
from kcost.results.common import dump_json
from kcost.results.compare import CompareReport

HEAD = ("model", "provider's cache rule", "hits", "cost", "per turn", "dominant", "counts", "")


def render_compare(report: CompareReport, fmt: str = "table", *, width: int = 100, color: bool = False,
                   numbers: bool = False) -> str:  # fmt: skip
    if fmt == "json":
        return dump_json(report, numbers=numbers) + "\n"
    if fmt == "html":
        from kcost.render.html import compare_html

        return compare_html(report)
    if fmt == "markdown":
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
    console, buffer = make_console(width, color)
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
