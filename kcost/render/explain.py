"""`kcost explain`: the turns whose avoidable misses cost money, then the causes by dollars, as a table or
markdown (its JSON is the report as it is, `kcost.render.data`; its HTML page is in `kcost.render.html`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from kcost.render.fit import Column, fitted
from kcost.render.terminal import console as make_console
from kcost.render.text import tokens, usd
from kcost.results.explain import Explanation, HourWrites

if TYPE_CHECKING:
    from kcost.render.registry import View


def explain_table(items: list[Explanation], view: View) -> str:
    width = view.width
    console, out = make_console(width, view.color)
    for e in items:
        console.print(Text(f"{e.session} · cache {e.cache}", style="bold"))
        console.print(
            f"total {usd(e.total)}: new input {usd(e.new_input_cost)} (a miss under any cache), "
            f"avoidable misses {usd(e.avoidable, 4)}"
        )
        if e.hour_writes is not None:
            console.print(hour_line(e.hour_writes))
        if not e.ranked:
            console.print("no avoidable misses: every uncached token was new input")
            console.print()
            continue
        columns = [Column("turn"), Column("cost"), Column("tokens"), Column("cause", number=False),
                   Column("detail", number=False, drop=1)]  # fmt: skip
        rows = [[str(t.turn) if i == 0 else "", usd(c.cost, 4), tokens(c.tokens), c.cause, c.detail]
                for t in e.turns for i, c in enumerate(t.causes)]  # fmt: skip
        console.print(fitted(columns, rows, width))
        console.print()
        columns = [Column("cause", number=False), Column("turns"), Column("tokens"), Column("cost"),
                   Column("fix", number=False, drop=1)]  # fmt: skip
        rows = [[r.cause, str(r.turns), tokens(r.tokens), usd(r.cost, 4), r.fix] for r in e.ranked]
        console.print(fitted(columns, rows, width, title="causes by cost"))
        console.print()
    return out.getvalue()


def hour_line(h: HourWrites) -> str:
    """`with 1-hour cache writes this session would cost $X ($D more; N idle gaps of A-B minutes)`."""
    change = f"{usd(abs(h.difference), 4)} {'more' if h.difference > 0 else 'less'}" if h.difference else "the same"
    if h.idle_gaps:
        span = f"{h.shortest_gap_minutes:g}"
        if h.longest_gap_minutes != h.shortest_gap_minutes:
            span += f"-{h.longest_gap_minutes:g}"
        gaps = f"{h.idle_gaps} idle gap{'s' if h.idle_gaps > 1 else ''} of {span} minutes"
    else:
        gaps = "no idle gap between the TTL and an hour"
    return f"with 1-hour cache writes this session would cost {usd(h.total, 4)} ({change}; {gaps})"


def explain_markdown(items: list[Explanation], view: View) -> str:
    out: list[str] = []
    for e in items:
        out += [f"### {e.session} · cache `{e.cache}`", ""]
        out += [f"total **{usd(e.total)}**: new input {usd(e.new_input_cost)} (a miss under any cache), "
                f"avoidable misses **{usd(e.avoidable, 4)}**", ""]  # fmt: skip
        if e.hour_writes is not None:
            out += [hour_line(e.hour_writes), ""]
        if not e.ranked:
            out += ["no avoidable misses: every uncached token was new input", ""]
            continue
        out += ["| cause | turns | tokens | cost | fix |", "|---|---:|---:|---:|---|"]
        out += [f"| {r.cause} | {r.turns} | {tokens(r.tokens)} | {usd(r.cost, 4)} | {r.fix} |" for r in e.ranked]
        out += ["", "| turn | cost | tokens | cause | detail |", "|---:|---:|---:|---|---|"]
        for t in e.turns:
            out += [f"| {t.turn} | {usd(c.cost, 4)} | {tokens(c.tokens)} | {c.cause} | {c.detail} |" for c in t.causes]
        out.append("")
    return "\n".join(out)
