"""`kcost compare`: one row per session and model, the cheapest marked, as text, markdown or an HTML page (its
JSON is the report as it is, `kcost.render.data`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from kcost.render import svg
from kcost.render.display import markdown_text, money, percent, plural
from kcost.render.fit import Cell, Column, fitted
from kcost.render.html import page, table, usd
from kcost.render.terminal import console as make_console
from kcost.results.compare import CompareReport

if TYPE_CHECKING:
    from kcost.render.registry import View

HEAD = ("model", "provider's cache rule", "hits", "cost", "per turn", "dominant", "counts", "")


def compare_markdown(report: CompareReport, view: View) -> str:
    out = []
    for s in report.sessions:
        out += [f"### {markdown_text(s.session)} · {plural(s.turns, 'turn')} · cheapest: **{s.cheapest}**", "",
                "| " + " | ".join(HEAD[:-1]) + " |", "|---|---|---:|---:|---:|---|---|"]  # fmt: skip
        for r in s.rows:
            name = f"**{r.model}**" if r.cheapest else r.model
            out.append(f"| {name} | `{r.cache}` | {percent(r.hit_rate)} | {money(r.cost, total=True)} | "
                       f"{money(r.cost_per_turn)} | {r.dominant} | {r.counts} |")  # fmt: skip
        out.append("")
    return "\n".join([*out, report.note, ""])


def compare_table(report: CompareReport, view: View) -> str:
    width = view.width
    console, buffer = make_console(width, view.color)
    for s in report.sessions:
        console.print(f"{s.session} · {plural(s.turns, 'turn')} · cheapest: {s.cheapest}")
        columns = [Column(HEAD[0], number=False), Column(HEAD[1], number=False, drop=2), Column(HEAD[2]),
                   Column(HEAD[3]), Column(HEAD[4]), Column(HEAD[5], number=False, drop=1),
                   Column(HEAD[6], number=False, drop=1), Column(HEAD[7], number=False)]  # fmt: skip
        rows: list[list[Cell]] = [
            [r.model, r.cache, percent(r.hit_rate), Text(money(r.cost, total=True), style="bold" if r.cheapest else ""),
             money(r.cost_per_turn), r.dominant, r.counts, Text("cheapest", style="green") if r.cheapest else ""]
            for r in s.rows
        ]  # fmt: skip
        console.print(fitted(columns, rows, width))
        console.print()
    console.print(report.note)
    return buffer.getvalue()


def compare_html(report: CompareReport, view: View) -> str:
    """Each session's cost on each model, as a chart (the cheapest marked) and a sortable table."""
    # the page's pieces only when a page is asked for: the other formats import no HTML or chart code
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    from html import escape

    body = [f'<p class="note">{escape(report.note)}</p>']
    for s in report.sessions:
        body.append(f"<h2>{escape(s.session)} · {plural(s.turns, 'turn')} · cheapest: {escape(s.cheapest)}</h2>")
        body.append(
            svg.hbars(
                f"Cost by model: {s.session}",
                "The session's cost on each model under its provider's cache rule; the cheapest in the accent colour.",
                [(r.model, float(r.cost)) for r in s.rows],
                marks=[s.cheapest],
                total=True,
            )
        )
        body.append(
            table(
                ["model", "provider's cache rule", "hits", "cost", "per turn", "dominant", "counts"],
                [
                    [
                        (r.model, None),
                        (r.cache, None),
                        (percent(r.hit_rate), r.hit_rate),
                        usd(r.cost, total=True),
                        usd(r.cost_per_turn),
                        (r.dominant, None),
                        (r.counts, None),
                    ]
                    for r in s.rows
                ],
                text_columns=(0, 1, 5, 6),
            )
        )
    return page("kcost compare", f"{report.generator} · prices: {report.prices.name}", body)
