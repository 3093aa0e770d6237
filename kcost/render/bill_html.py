"""The bill's page of `--format html`: the cache models side by side, then each session's figures, its cost per
turn stacked by cause, where its misses start, and every turn in a sortable table. A module of its own, not beside
the bill's JSON (`kcost.render.data`), so that the JSON, JSONL and CSV import no chart code."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from functools import partial
from html import escape
from typing import TYPE_CHECKING

from kcost.render import svg
from kcost.render.display import count, money, percent, plural
from kcost.render.html import figures, page, shown_path, table, usd, usd_figure
from kcost.render.text import shown_notes
from kcost.results.bill import BillReport, SessionBill, TurnBill

if TYPE_CHECKING:
    from kcost.render.registry import View

BARS = 240  # at most this many bars in a cost-per-turn chart
MARKS = 2000  # at most this many misses on a timeline


def bill_html(report: BillReport, view: View, title: str = "kcost bill") -> str:
    prices = report.prices
    subtitle = f"{report.generator} · prices: {prices.name} ({prices.effective}), {prices.currency} per {prices.per}"
    body: list[str] = []
    if len(report.runs) > 1:  # several cache models: side by side
        body.append("<h2>Cache models side by side</h2>")
        body.append(
            svg.hbars(
                "Total cost by cache model",
                "What all sessions cost under each cache model.",
                [(r.cache.label, float(r.total.total)) for r in report.runs],
                total=True,
            )
        )
        body.append(
            table(
                ["cache model", "total", "hit rate", "input", "output"],
                [
                    [
                        (r.cache.label, None),
                        usd(r.total.total, total=True),
                        (percent(r.total.hit_rate), r.total.hit_rate),
                        usd(r.total.input_cost),
                        usd(r.total.output_cost),
                    ]
                    for r in report.runs
                ],
            )
        )
        # each session under each model, a column a model
        labels = [r.cache.label for r in report.runs]
        body.append(
            table(
                ["session", *labels],
                [
                    [(bills[0].name, None), *(usd(b.summary.total, total=True) for b in bills)]
                    for bills in zip(*(r.sessions for r in report.runs), strict=True)
                ],
                caption="each session's total under each cache model",
            )
        )
    for run in report.runs:
        body.append(f"<h2>Cache model <code>{escape(run.cache.label)}</code></h2>")
        body.append(
            f'<p class="note">checkpoints: {escape(run.cache.checkpoints)}'
            + (f" · source: {escape(run.cache.source)}" if run.cache.source else "")
            + "</p>"
        )
        if len(run.sessions) > 1:
            body.append(
                figures(
                    [
                        ("sessions", count(len(run.sessions)), None),
                        usd_figure("total", run.total.total, "run-total"),
                        ("hit rate", percent(run.total.hit_rate), None),
                    ]
                )
            )
            body.append(
                svg.hbars(
                    "Cost by session",
                    "Each session's total under this cache model.",
                    [(b.name, float(b.summary.total)) for b in run.sessions],
                    total=True,
                )
            )
        for b in run.sessions:
            body += _session(b, view.verbose)
    return page(title, subtitle, body)


def _cause_cost(cause: str, turn: TurnBill) -> Decimal:
    return sum((m.cost for m in turn.misses if m.reason == cause), Decimal(0))


def _session(b: SessionBill, verbose: bool = False) -> list[str]:
    s = b.summary
    out = [
        f"<h3>{escape(b.name)} · {escape(b.model)}</h3>",
        f'<p class="note">{escape(shown_path(b.source))} · token counts: {escape(b.token_counts)}</p>',
    ]
    out.append(
        figures(
            [
                usd_figure("total", s.total, "session-total"),
                ("turns", count(s.turns), None),
                ("hit rate", percent(s.hit_rate), None),
                usd_figure("input", s.input_cost, total=False),
                usd_figure("output", s.output_cost, total=False),
                usd_figure("without caching", s.uncached_total),
                usd_figure("saved", s.saved),
            ]
        )
    )
    causes = list(s.miss_by_reason)
    # a bar a turn, or, past BARS turns, a bar for each run of turns (their costs summed): the chart stays legible
    # and the file small on a session of any length
    size = -(-len(b.turns) // BARS)
    groups = [b.turns[k : k + size] for k in range(0, len(b.turns), size)]
    labels = [str(g[0].turn) if len(g) == 1 else f"{g[0].turn}-{g[-1].turn}" for g in groups]

    def summed(cost: Callable[[TurnBill], Decimal]) -> list[float]:
        return [float(sum((cost(t) for t in g), Decimal(0))) for g in groups]

    parts = [svg.Part("cache hits", summed(lambda t: t.hit_cost), svg.HITS)]
    for cause in causes:
        parts.append(svg.Part(f"misses: {cause}", summed(partial(_cause_cost, cause)), svg.cause_color(cause)))
    if s.write_premium:
        parts.append(svg.Part("cache writes", summed(lambda t: t.write_premium), svg.WRITES))
    parts.append(svg.Part("output", summed(lambda t: t.output_cost), svg.OUTPUT))
    per = "turn" if size == 1 else plural(size, "turn")
    out.append(
        svg.stacked_bars(
            f"Cost per {per}: {b.name}",
            f"{plural(s.turns, 'turn')} costing {money(s.total, total=True)} in all; each bar splits the cost of a "
            f"{per} into cache hits, misses by cause and output; the line is the cumulative cost.",
            labels,
            parts,
            line=[float(g[-1].cumulative) for g in groups],
            y_label=f"cost per {per}",
            x_label="turn",
        )
    )
    points = [(t.turn, m.at, m.tokens, m.reason) for t in b.turns for m in t.misses if m.reason != "new-input"]
    if len(points) > MARKS:  # the largest misses: the rest would be marks a pixel wide
        points = sorted(sorted(points, key=lambda p: -p[2])[:MARKS])
    if points:
        shown = list(dict.fromkeys(p[3] for p in points))
        out.append(
            svg.timeline(
                f"Misses by cause: {b.name}",
                f"Where in each prompt the avoidable misses start, by cause: {', '.join(shown)}.",
                points,
                shown,
                len(b.turns),
            )
        )
    out.append("<details><summary>every turn (click a column to sort)</summary>")
    out.append(
        table(
            ["turn", "input", "hits", "misses", "output", "hit rate", "cost", "cumulative", "why"],
            [
                [
                    (str(t.turn) + (f" {t.label}" if t.label else ""), t.turn),
                    (count(t.input_tokens), t.input_tokens),
                    (count(t.hit_tokens), t.hit_tokens),
                    (count(t.miss_tokens), t.miss_tokens),
                    (count(t.output_tokens), t.output_tokens),
                    (percent(t.hit_rate), t.hit_rate),
                    usd(t.total),
                    usd(t.cumulative, total=True),
                    (t.reason, None),
                ]
                for t in b.turns
            ],
            text_columns=(8,),
        )
    )
    out.append("</details>")
    notes = shown_notes(b.notes, verbose)
    if notes:
        out.append('<ul class="note">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    return out
