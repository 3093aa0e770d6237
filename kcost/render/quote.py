"""`kcost quote`: the lesson's box, each figure labelled with the cache model behind it, as a table or markdown
(its JSON is the report as it is, `kcost.render.data`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from kcost.render.fit import Cell, Column, fitted
from kcost.render.terminal import console as make_console
from kcost.render.text import tokens, usd
from kcost.results.quote import Quote

if TYPE_CHECKING:
    from kcost.render.registry import View


def quote_table(q: Quote, view: View) -> str:
    width = view.width
    console, out = make_console(width, view.color)
    title = Text(f"One turn: {tokens(q.prefix_tokens)} tokens of prefix + {tokens(q.new_tokens)} new", style="bold")
    if q.output_tokens:
        title.append(f", {tokens(q.output_tokens)} output", style="bold")
    console.print(title + Text(f" · {q.model}"))
    rates = q.prices.rates[q.model]
    columns = [Column("", number=False), Column("hit tokens"), Column("miss tokens"), Column("input $"),
               Column("total $"), Column("cache model", number=False, drop=1)]  # fmt: skip
    rows = [[t.assumption.split(":")[0], tokens(t.hit_tokens), tokens(t.miss_tokens), usd(t.input_cost, 7),
             usd(t.total, 7), t.cache] for t in q.turn]  # fmt: skip
    console.print(fitted(columns, rows, width))
    console.print(f"a hit is {q.ratio}× cheaper than a miss")
    console.print()
    console.print(Text(f"Across a {q.turns}-turn session", style="bold"))
    session: list[list[Cell]] = [[s.assumption, usd(s.total), Text(s.cache, style="dim")] for s in q.session]
    session.append(["saved (all misses - with prefix caching)", usd(q.saved), ""])
    columns = [Column("", number=False), Column(""), Column("", number=False, drop=1)]
    console.print(fitted(columns, session, width, header=False))
    console.print()
    console.print(
        f"blended input price at a {(q.hit_rate * 100).normalize():f}% hit rate: "
        f"{q.hit_rate} × {usd(rates.input_cache_hit)} + "
        f"{1 - q.hit_rate} × {usd(rates.input_cache_miss)} = {usd(q.blended_input_per_mtok)}/M"
    )
    console.print(Text(f"prices: {q.prices.name} ({q.prices.effective})", style="dim"))
    return out.getvalue()


def quote_markdown(q: Quote, view: View) -> str:
    rates = q.prices.rates[q.model]
    out = [f"### One turn: {tokens(q.prefix_tokens)} tokens of prefix + {tokens(q.new_tokens)} new · {q.model}", ""]
    out += ["| | hit tokens | miss tokens | input $ | total $ | cache model |", "|---|---:|---:|---:|---:|---|"]
    out += [f"| {t.assumption.split(':')[0]} | {tokens(t.hit_tokens)} | {tokens(t.miss_tokens)} | "
            f"{usd(t.input_cost, 7)} | {usd(t.total, 7)} | `{t.cache}` |" for t in q.turn]  # fmt: skip
    out += ["", f"a hit is {q.ratio}× cheaper than a miss", "", f"### Across a {q.turns}-turn session", ""]
    out += ["| | total | cache model |", "|---|---:|---|"]
    out += [f"| {s.assumption} | {usd(s.total)} | `{s.cache}` |" for s in q.session]
    out += [f"| saved (all misses - with prefix caching) | {usd(q.saved)} | |", ""]
    out.append(f"blended input price at a {(q.hit_rate * 100).normalize():f}% hit rate: {q.hit_rate} × "
               f"{usd(rates.input_cache_hit)} + {1 - q.hit_rate} × {usd(rates.input_cache_miss)} = "
               f"{usd(q.blended_input_per_mtok)}/M")  # fmt: skip
    out += ["", f"prices: {q.prices.name} ({q.prices.effective})", ""]
    return "\n".join(out)
