"""`kcost prices`: the table in use, its source and date, as text, JSON or markdown."""

from __future__ import annotations

from decimal import Decimal

from kcost.render.fit import Column, fitted
from kcost.render.terminal import console as make_console
from kcost.render.text import usd
from kcost.results import money_text
from kcost.results.prices import PriceTable


def render_prices(table: PriceTable, fmt: str = "table", *, width: int = 100, color: bool = False) -> str:
    if fmt == "json":
        from kcost.results import adapter

        written: bytes = adapter(PriceTable).dump_json(table, indent=2)
        return written.decode() + "\n"
    if fmt == "markdown":
        lines = [f"| {name}{' (default)' if name == table.default_model else ''} | {_rate(p.input_cache_hit)} | "
                 f"{_rate(p.input_cache_miss)} | {_rate(p.output)} |" for name, p in table.models.items()]  # fmt: skip
        head = [f"### {table.name} · {table.currency} per 1M tokens · effective {table.effective}", "",
                f"source: {table.source}", "", "| model | input, cache hit | input, cache miss | output |",
                "|---|---:|---:|---:|"]  # fmt: skip
        return "\n".join([*head, *lines, ""])
    console, out = make_console(width, color)
    console.print(f"{table.name} · {table.currency} per 1M tokens · effective {table.effective}")
    console.print(f"source: {table.source}")
    columns = [Column("model", number=False), Column("input, cache hit"), Column("input, cache miss"),
               Column("output"), Column("", number=False, drop=1)]  # fmt: skip
    rows = [[name, _rate(p.input_cache_hit), _rate(p.input_cache_miss), _rate(p.output),
             "(default)" if name == table.default_model else ""] for name, p in table.models.items()]  # fmt: skip
    console.print(fitted(columns, rows, width))
    return out.getvalue()


def _rate(value: Decimal) -> str:
    """A rate as the table holds it, at least to the cent: `$0.30`, `$0.123456789012`."""
    exact = money_text(value)
    return usd(value) if len(exact.partition(".")[2]) <= 2 else f"${exact}"
