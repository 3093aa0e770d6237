"""`kcost compare`: one row per session and model, the cheapest marked, as text, markdown or an HTML page (its
JSON is the report as it is, `kcost.render.data`). Several sessions: one row per model for all of them together
first, then (unless `view.summary`) each session's rows, the dearest first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from kcost.render import svg
from kcost.render.display import markdown_text, money, percent, plural, trimmed
from kcost.render.fit import Cell, Column, fitted
from kcost.render.html import page, section, session, table, usd
from kcost.render.terminal import console as make_console
from kcost.results.compare import CompareReport, CompareTotal, ModelTotal, Priced, SessionOnModels

if TYPE_CHECKING:
    from kcost.render.registry import View

HEAD = ("model", "provider's cache rule", "hits", "cost", "per turn", "dominant", "counts", "")
CHEAPEST_FOR = "cheapest for"


def dearest_first(report: CompareReport) -> list[SessionOnModels]:
    """The sessions by what they cost on the first model compared, the dearest first (those that cost as much in
    their order)."""
    return sorted(report.sessions, key=lambda s: -s.rows[0].cost if s.rows else 0)


def shown_sessions(report: CompareReport, view: View) -> list[SessionOnModels]:
    """The sessions whose rows are shown: the one there is; of several, none under `view.summary`, else all, the
    dearest first."""
    if len(report.sessions) <= 1:
        return report.sessions
    return [] if view.summary else dearest_first(report)


def total_title(t: CompareTotal) -> str:
    """`7 sessions together · 133 turns · cheapest: deepseek-chat`."""
    return f"{plural(t.sessions, 'session')} together · {plural(t.turns, 'turn')} · cheapest: {t.cheapest}"


def session_title(s: SessionOnModels) -> str:
    return f"{s.session} · {plural(s.turns, 'turn')} · cheapest: {s.cheapest}"


def cheapest_for(r: ModelTotal, t: CompareTotal) -> str:
    """`3 of 7`: the sessions this model is the cheapest for."""
    return f"{r.cheapest_in} of {t.sessions}"


HINT = "--sessions: each session on each model ({n} tables), the dearest first"


def compare_markdown(report: CompareReport, view: View) -> str:
    out: list[str] = []
    several = len(report.sessions) > 1
    if several:
        t = report.total
        out += [f"### {total_title(t).replace(f'cheapest: {t.cheapest}', f'cheapest: **{t.cheapest}**')}", "",
                "| " + " | ".join((*HEAD[:-1], CHEAPEST_FOR)) + " |", "|---|---|---:|---:|---:|---|---|---:|"]
        out += [_markdown_row(r) + f" {cheapest_for(r, t)} |" for r in t.rows]
        out.append("")
        if view.summary:
            out += [f"`{HINT.format(n=t.sessions).replace(':', '`:', 1)}", ""]
    for s in shown_sessions(report, view):
        out += [f"### {markdown_text(s.session)} · {plural(s.turns, 'turn')} · cheapest: **{s.cheapest}**", "",
                "| " + " | ".join(HEAD[:-1]) + " |", "|---|---|---:|---:|---:|---|---|"]  # fmt: skip
        out += [_markdown_row(r) for r in s.rows]
        out.append("")
    return "\n".join([*out, report.note, ""])


def _markdown_row(r: Priced | ModelTotal) -> str:
    name = f"**{r.model}**" if r.cheapest else r.model
    return (f"| {name} | `{r.cache}` | {percent(r.hit_rate)} | {money(r.cost, total=True)} | "
            f"{money(r.cost_per_turn)} | {r.dominant} | {r.counts} |")  # fmt: skip


def compare_table(report: CompareReport, view: View) -> str:
    width = view.width
    console, buffer = make_console(width, view.color)
    if len(report.sessions) > 1:
        t = report.total
        console.print(Text(total_title(t), style="bold"))
        columns = [*_columns(), Column(CHEAPEST_FOR, drop=1)]
        columns[-2], columns[-1] = columns[-1], columns[-2]  # the mark last
        rows = [[*_cells(r)[:-1], cheapest_for(r, t), _cells(r)[-1]] for r in t.rows]
        console.print(fitted(columns, rows, width))
        if view.summary:
            console.print(HINT.format(n=t.sessions))
        console.print()
    for s in shown_sessions(report, view):
        console.print(session_title(s))
        console.print(fitted(_columns(), [_cells(r) for r in s.rows], width))
        console.print()
    console.print(report.note)
    return trimmed(buffer.getvalue())


def _columns() -> list[Column]:
    return [Column(HEAD[0], number=False), Column(HEAD[1], number=False, drop=2), Column(HEAD[2]),
            Column(HEAD[3]), Column(HEAD[4]), Column(HEAD[5], number=False, drop=1),
            Column(HEAD[6], number=False, drop=1), Column(HEAD[7], number=False)]  # fmt: skip


def _cells(r: Priced | ModelTotal) -> list[Cell]:
    cost = Text(money(r.cost, total=True), style="bold" if r.cheapest else "")
    mark = Text("cheapest", style="green") if r.cheapest else ""
    return [r.model, r.cache, percent(r.hit_rate), cost, money(r.cost_per_turn), r.dominant, r.counts, mark]


def compare_html(report: CompareReport, view: View) -> str:
    """Each session's cost on each model, as a chart (the cheapest marked) and a sortable table. Several sessions:
    every session together first, then each session collapsed, the dearest first."""
    # the page's pieces only when a page is asked for: the other formats import no HTML or chart code
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    from html import escape

    note = f'<p class="note">{escape(report.note)}</p>'
    several = len(report.sessions) > 1
    body = [] if several else [note]
    if several:
        t = report.total
        parts = _rows_html(f"Cost by model: all {t.sessions} sessions together", "The sessions' summed cost on each "
                           "model under its provider's cache rule; the cheapest in the accent colour.", t.rows,
                           t.cheapest, t)  # fmt: skip
        body.append(section([f"<h2>{escape(total_title(t))}</h2>", *parts, note]))
        body.append(f"<h2>Each session, the dearest first ({t.sessions})</h2>")
    for s in dearest_first(report) if several else report.sessions:
        parts = _rows_html(f"Cost by model: {s.session}", "The session's cost on each model under its provider's "
                           "cache rule; the cheapest in the accent colour.", s.rows, s.cheapest)  # fmt: skip
        if several:
            body.append(session(escape(_summary_line(s)), parts))
        else:
            body += [f"<h2>{escape(session_title(s))}</h2>", *parts]
    return page("kcost compare", f"{report.generator} · prices: {report.prices.name}", body)


def _summary_line(s: SessionOnModels) -> str:
    """`growing chat · 10 turns · $0.38 on kimi-k3 · cheapest: deepseek-chat ($0.04)`: a collapsed session."""
    first = s.rows[0]
    least = next(r for r in s.rows if r.cheapest)
    return (f"{s.session} · {plural(s.turns, 'turn')} · {money(first.cost, total=True)} on {first.model} · "
            f"cheapest: {least.model} ({money(least.cost, total=True)})")  # fmt: skip


def _rows_html(title: str, desc: str, rows: list[Priced] | list[ModelTotal], cheapest: str,
               total: CompareTotal | None = None) -> list[str]:  # fmt: skip
    """A chart of the rows' costs, the cheapest marked, and their sortable table (with `total`: how many sessions
    each model is the cheapest for)."""
    chart = svg.hbars(title, desc, [(r.model, float(r.cost)) for r in rows], marks=[cheapest], total=True)
    head = ["model", "provider's cache rule", "hits", "cost", "per turn", "dominant", "counts"]
    cells = [[(r.model, None), (r.cache, None), (percent(r.hit_rate), r.hit_rate), usd(r.cost, total=True),
              usd(r.cost_per_turn), (r.dominant, None), (r.counts, None)] for r in rows]  # fmt: skip
    if total is not None:
        head.append(CHEAPEST_FOR)
        for row, r in zip(cells, rows, strict=True):
            assert isinstance(r, ModelTotal)
            row.append((cheapest_for(r, total), r.cheapest_in))
    return [chart, table(head, cells, text_columns=(0, 1, 5, 6))]
