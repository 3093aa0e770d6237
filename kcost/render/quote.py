"""`kcost quote`: the lesson's box, each figure labelled with the cache model behind it, as a table or markdown
(its JSON is the report as it is, `kcost.render.data`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcost.render.display import count, money, per_mtok, percent, rate_per_mtok
from kcost.render.fit import Cell, Column, fitted
from kcost.render.page import Page, Styled
from kcost.results.quote import Quote

if TYPE_CHECKING:
    from kcost.render.registry import View


def quote_table(q: Quote, view: View) -> str:
    width = view.width
    page = Page(width, view.color)
    title = f"One turn: {count(q.prefix_tokens)} tokens of prefix + {count(q.new_tokens)} new"
    if q.output_tokens:
        title += f", {count(q.output_tokens)} output"
    page.print(Styled(f"{title} · {q.model}", "bold"))
    rates = q.prices.rates[q.model]
    columns = [Column("", number=False), Column("hit tokens"), Column("miss tokens"), Column("input $"),
               Column("total $"), Column("cache model", number=False, drop=1)]  # fmt: skip
    rows = [[t.assumption.split(":")[0], count(t.hit_tokens), count(t.miss_tokens), money(t.input_cost),
             money(t.total), t.cache] for t in q.turn]  # fmt: skip
    page.print(fitted(columns, rows, width))
    page.print(f"a hit is {q.ratio}× cheaper than a miss")
    page.print()
    page.print(Styled(f"Across a {q.turns}-turn session", "bold"))
    session: list[list[Cell]] = [[s.assumption, money(s.total, total=True), Styled(s.cache, "dim")]
                                 for s in q.session]  # fmt: skip
    session.append(["saved (all misses - with prefix caching)", Styled(money(q.saved, total=True), "bold"), ""])
    columns = [Column("", number=False), Column(""), Column("", number=False, drop=1)]
    page.print(fitted(columns, session, width, header=False))
    page.print()
    page.print(
        f"blended input price at a {percent(q.hit_rate)} hit rate: "
        f"{q.hit_rate} × {rate_per_mtok(rates.input_cache_hit)} + "
        f"{1 - q.hit_rate} × {rate_per_mtok(rates.input_cache_miss)} = {per_mtok(q.blended_input_per_mtok)}/M"
    )
    page.print(Styled(f"prices: {q.prices.name} ({q.prices.effective})", "dim"))
    return page.text()


def quote_markdown(q: Quote, view: View) -> str:
    rates = q.prices.rates[q.model]
    out = [f"### One turn: {count(q.prefix_tokens)} tokens of prefix + {count(q.new_tokens)} new · {q.model}", ""]
    out += ["| | hit tokens | miss tokens | input $ | total $ | cache model |", "|---|---:|---:|---:|---:|---|"]
    out += [f"| {t.assumption.split(':')[0]} | {count(t.hit_tokens)} | {count(t.miss_tokens)} | "
            f"{money(t.input_cost)} | {money(t.total)} | `{t.cache}` |" for t in q.turn]  # fmt: skip
    out += ["", f"a hit is {q.ratio}× cheaper than a miss", "", f"### Across a {q.turns}-turn session", ""]
    out += ["| | total | cache model |", "|---|---:|---|"]
    out += [f"| {s.assumption} | {money(s.total, total=True)} | `{s.cache}` |" for s in q.session]
    out += [f"| saved (all misses - with prefix caching) | {money(q.saved, total=True)} | |", ""]
    out.append(f"blended input price at a {percent(q.hit_rate)} hit rate: {q.hit_rate} × "
               f"{rate_per_mtok(rates.input_cache_hit)} + {1 - q.hit_rate} × {rate_per_mtok(rates.input_cache_miss)}"
               f" = {per_mtok(q.blended_input_per_mtok)}/M")  # fmt: skip
    out += ["", f"prices: {q.prices.name} ({q.prices.effective})", ""]
    return "\n".join(out)
