"""The bill's page of `--format html`: the cache models side by side, then each session's figures, its cost per
turn stacked by cause, where its misses start, and every turn in a sortable table. A module of its own, not beside
the bill's JSON (`kcost.render.data`), so that the JSON, JSONL and CSV import no chart code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import partial
from html import escape
from typing import TYPE_CHECKING

from kcost.render import svg
from kcost.render.display import count, money, percent, plural
from kcost.render.html import Figure, figures, page, section, session, shown_path, table, usd, usd_figure
from kcost.render.text import shown_notes
from kcost.results.bill import BillReport, Run, SessionBill, Summary, TurnBill

if TYPE_CHECKING:
    from kcost.render.registry import View

BARS = 240  # at most this many bars in a cost-per-turn chart
MARKS = 2000  # at most this many misses on a timeline
CHARTED = 5  # on a page of several sessions, only the costliest so many get their per-turn charts and turns
COARSE = (120, 500)  # ... and those charts at most so many bars and marks (BARS and MARKS on a session's own page)
SHOWN = 40  # at most this many sessions in the summary's chart of costs (the overview's); all in its table


def bill_html(report: BillReport, view: View, title: str = "kcost bill") -> str:
    """The summary first: the totals, and over several sessions each session's cost as the overview charts it,
    dearest first, and a table of them (with several cache models, the models side by side); then each session
    in a section of its own, collapsed where there are several, dearest first. A page of many sessions stays
    small: only the `CHARTED` costliest sessions of each cache model get their per-turn charts (inside their
    collapsed sections); the others their figures and their turns' table."""
    prices = report.prices
    subtitle = f"{report.generator} · prices: {prices.name} ({prices.effective}), {prices.currency} per {prices.per}"
    first = report.runs[0]
    several = len(first.sessions) > 1
    summary: list[str] = []
    if several or len(report.runs) > 1:
        summary.append(figures([("sessions", count(len(first.sessions)), None),
                                *_totals(first.total, len(report.runs) > 1, first.cache.label)]))  # fmt: skip
    else:
        summary.append(figures(_totals(first.sessions[0].summary, False, "") + [
            ("turns", count(first.sessions[0].summary.turns), None)]))  # fmt: skip
    if len(report.runs) > 1:
        summary += _side_by_side(report)
    elif several:
        summary += _by_session(first)
    body = [section(summary)]
    for run in report.runs:
        body.append(f"<h2>Cache model <code>{escape(run.cache.label)}</code></h2>")
        body.append(
            f'<p class="note">checkpoints: {escape(run.cache.checkpoints)}'
            + (f" · source: {escape(run.cache.source)}" if run.cache.source else "")
            + "</p>"
        )
        if len(report.runs) > 1 and several:
            body.append(figures(_totals(run.total, False, "")))
        for rank, b in enumerate(_dearest(run.sessions)):
            charted = rank < CHARTED or not several
            heading = (f"{escape(b.name)} <span class=\"note\">· {escape(b.model)} · "
                       f"{escape(money(b.summary.total, total=True))}</span>")  # fmt: skip
            body.append(session(heading, _session(b, view.verbose, charted=charted, headline=several),
                                opened=not several))  # fmt: skip
    return page(title, subtitle, body)


def _dearest(bills: Sequence[SessionBill]) -> list[SessionBill]:
    """The sessions dearest first (the order they were read in among equals), as the overview sorts them."""
    return sorted(bills, key=lambda b: -b.summary.total)


def _totals(s: Summary, named: bool, label: str) -> list[Figure]:
    """The headline figures of a summary (a run's, or the one session's); `named`: the total says its model."""
    return [
        usd_figure(f"total ({label})" if named else "total", s.total, "session-total"),
        ("hit rate", percent(s.hit_rate), None),
        usd_figure("input", s.input_cost, total=False),
        usd_figure("output", s.output_cost, total=False),
        usd_figure("without caching", s.uncached_total),
        usd_figure("saved", s.saved),
    ]


def _by_session(run: Run) -> list[str]:
    """Each session's cost, dearest first: the overview's chart (the `SHOWN` dearest) and a table of all."""
    dearest = _dearest(run.sessions)
    out = [
        svg.hbars(
            "Cost by session",
            f"Each session's total under {run.cache.label}, dearest first"
            + (f" (the {SHOWN} dearest of {len(dearest)}; every one in the table)." if len(dearest) > SHOWN else "."),
            [(b.name, float(b.summary.total)) for b in dearest[:SHOWN]],
            total=True,
        )
    ]
    out.append(
        table(
            ["session", "model", "turns", "hit rate", "cost"],
            [
                [
                    (b.name, None),
                    (b.model, None),
                    (count(b.summary.turns), b.summary.turns),
                    (percent(b.summary.hit_rate), b.summary.hit_rate),
                    usd(b.summary.total, total=True),
                ]
                for b in dearest
            ],
            text_columns=(0, 1),
        )
    )
    return out


def _side_by_side(report: BillReport) -> list[str]:
    """The cache models side by side: what all sessions cost under each, and each session under each (dearest
    first under the first)."""
    out = ["<h2>Cache models side by side</h2>"]
    out.append(
        svg.hbars(
            "Total cost by cache model",
            "What all sessions cost under each cache model.",
            [(r.cache.label, float(r.total.total)) for r in report.runs],
            total=True,
        )
    )
    out.append(
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
    labels = [r.cache.label for r in report.runs]
    rows = sorted(zip(*(r.sessions for r in report.runs), strict=True), key=lambda bills: -bills[0].summary.total)
    out.append(
        table(
            ["session", *labels],
            [[(bills[0].name, None), *(usd(b.summary.total, total=True) for b in bills)] for bills in rows],
            caption="each session's total under each cache model",
        )
    )
    return out


def _cause_cost(cause: str, turn: TurnBill) -> Decimal:
    return sum((m.cost for m in turn.misses if m.reason == cause), Decimal(0))


def _session(b: SessionBill, verbose: bool = False, *, charted: bool = True, headline: bool = True) -> list[str]:
    """A session's part of the page: where it comes from, its figures (`headline`: else the summary has them),
    its cost per turn stacked by cause and where its misses start (`charted`), and its turns in a table."""
    s = b.summary
    out = [f'<p class="note">{escape(shown_path(b.source))} · token counts: {escape(b.token_counts)}</p>']
    if headline:
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
    if charted:
        out += _charts(b, *(COARSE if headline else (BARS, MARKS)))
        out += _turns(b)
    else:
        out.append(
            f'<p class="note">a page of several sessions charts its {CHARTED} costliest and lists their '
            f"turns; <code>kcost bill {escape(shown_path(b.source))} --format html</code> does this one's</p>"
        )
    notes = shown_notes(b.notes, verbose)
    if notes:
        out.append('<ul class="note">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    return out


def _charts(b: SessionBill, bars: int, marks: int) -> list[str]:
    """The session's cost per turn, stacked by cause, in at most `bars` bars, and where its avoidable misses start
    (the `marks` largest)."""
    s = b.summary
    out: list[str] = []
    causes = list(s.miss_by_reason)
    # a bar a turn, or, past BARS turns, a bar for each run of turns (their costs summed): the chart stays legible
    # and the file small on a session of any length
    size = -(-len(b.turns) // bars)
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
    if len(points) > marks:  # the largest misses: the rest would be marks a pixel wide
        points = sorted(sorted(points, key=lambda p: -p[2])[:marks])
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
    return out


def _turns(b: SessionBill) -> list[str]:
    """Every turn in a sortable table, folded."""
    out = ["<details><summary>every turn (click a column to sort)</summary>"]
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
    return out
