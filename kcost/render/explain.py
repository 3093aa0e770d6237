"""`kcost explain`: the turns whose avoidable misses cost money, then the causes by dollars, as a table, markdown
or an HTML page (its JSON is the report as it is, `kcost.render.data`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text

from kcost.render.display import count, markdown_text, money, plural, signed_money
from kcost.render.fit import Column, fitted
from kcost.render.terminal import console as make_console
from kcost.results.explain import Explanation, HourWrites

if TYPE_CHECKING:
    from kcost.render.registry import View


def explain_table(items: list[Explanation], view: View) -> str:
    width = view.width
    console, out = make_console(width, view.color)
    for e in items:
        console.print(Text(f"{e.session} · cache {e.cache}", style="bold"))
        line = Text("total ")
        line.append(money(e.total, total=True), style="bold")
        line.append(f": new input {money(e.new_input_cost)} (a miss under any cache), avoidable misses ")
        line.append(money(e.avoidable), style="yellow" if e.avoidable else "")
        console.print(line)
        if e.hour_writes is not None:
            console.print(hour_line(e.hour_writes))
        if not e.ranked:
            console.print("no avoidable misses: every uncached token was new input")
            console.print()
            continue
        columns = [Column("turn"), Column("cost"), Column("tokens"), Column("cause", number=False),
                   Column("detail", number=False, drop=1)]  # fmt: skip
        rows = [[str(t.turn) if i == 0 else "", money(c.cost), count(c.tokens), c.cause, c.detail]
                for t in e.turns for i, c in enumerate(t.causes)]  # fmt: skip
        console.print(fitted(columns, rows, width))
        console.print()
        columns = [Column("cause", number=False), Column("turns"), Column("tokens"), Column("cost"),
                   Column("fix", number=False, drop=1)]  # fmt: skip
        rows = [[r.cause, count(r.turns), count(r.tokens), money(r.cost), r.fix] for r in e.ranked]
        console.print(fitted(columns, rows, width, title="causes by cost"))
        console.print()
    return out.getvalue()


def hour_line(h: HourWrites) -> str:
    """`with 1-hour cache writes this session would cost $X ($D more; N idle gaps of A-B minutes)`."""
    change = f"{money(abs(h.difference))} {'more' if h.difference > 0 else 'less'}" if h.difference else "the same"
    if h.idle_gaps:
        span = f"{h.shortest_gap_minutes:g}"
        if h.longest_gap_minutes != h.shortest_gap_minutes:
            span += f"-{h.longest_gap_minutes:g}"
        gaps = f"{plural(h.idle_gaps, 'idle gap')} of {span} minutes"
    else:
        gaps = "no idle gap between the TTL and an hour"
    return f"with 1-hour cache writes this session would cost {money(h.total, total=True)} ({change}; {gaps})"


def explain_markdown(items: list[Explanation], view: View) -> str:
    out: list[str] = []
    for e in items:
        out += [f"### {markdown_text(e.session)} · cache `{e.cache}`", ""]
        out += [f"total **{money(e.total, total=True)}**: new input {money(e.new_input_cost)} (a miss under any "
                f"cache), avoidable misses **{money(e.avoidable)}**", ""]  # fmt: skip
        if e.hour_writes is not None:
            out += [hour_line(e.hour_writes), ""]
        if not e.ranked:
            out += ["no avoidable misses: every uncached token was new input", ""]
            continue
        out += ["| cause | turns | tokens | cost | fix |", "|---|---:|---:|---:|---|"]
        out += [f"| {r.cause} | {count(r.turns)} | {count(r.tokens)} | {money(r.cost)} | {r.fix} |" for r in e.ranked]
        out += ["", "| turn | cost | tokens | cause | detail |", "|---:|---:|---:|---|---|"]
        for t in e.turns:
            out += [f"| {t.turn} | {money(c.cost)} | {count(c.tokens)} | {c.cause} | {c.detail} |" for c in t.causes]
        out.append("")
    return "\n".join(out)


def explain_html(items: Sequence[Explanation], view: View) -> str:
    """Each session's avoidable causes by cost, as a chart and a sortable table, with their fixes."""
    # the page's pieces only when a page is asked for: the other formats import no HTML or chart code
    from html import escape

    from kcost.render import svg
    from kcost.render.display import exact
    from kcost.render.html import figures, page, table, usd, usd_figure

    body: list[str] = []
    for e in items:
        body.append(f"<h2>{escape(e.session)} · <code>{escape(e.cache)}</code></h2>")
        body.append(
            figures(
                [
                    usd_figure("total", e.total, "session-total"),
                    usd_figure("new input", e.new_input_cost, total=False),
                    usd_figure("avoidable", e.avoidable, total=False),
                ]
            )
        )
        if e.hour_writes is not None:
            h = e.hour_writes
            body.append(
                f'<p class="note">with 1-hour cache writes this session would cost '
                f'<span title="{exact(h.total)}">{money(h.total, total=True)}</span> '
                f'(<span title="{exact(h.difference)}">{signed_money(h.difference)}</span> against this bill; '
                f"{plural(h.idle_gaps, 'idle gap')} between the TTL and an hour)</p>"
            )
        if not e.ranked:
            body.append("<p>no avoidable misses: every uncached token was new input</p>")
            continue
        body.append(
            svg.hbars(
                f"Causes by cost: {e.session}",
                "What each avoidable cause of misses cost, largest first.",
                [(r.cause, float(r.cost)) for r in e.ranked],
            )
        )
        body.append(
            table(
                ["cause", "turns", "tokens", "cost", "fix"],
                [
                    [
                        (r.cause, None),
                        (count(r.turns), r.turns),
                        (count(r.tokens), r.tokens),
                        usd(r.cost),
                        (r.fix, None),
                    ]
                    for r in e.ranked
                ],
                text_columns=(0, 4),
            )
        )
    return page("kcost explain", "why each session's misses cost money, with fixes", body)
