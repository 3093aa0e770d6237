"""`kcost prices`: the table in use, its source and date, as text, JSON or markdown."""

from __future__ import annotations

from kcost.render.text import usd
from kcost.results.prices import PriceTable


def render_prices(table: PriceTable, fmt: str = "table") -> str:
    if fmt == "json":
        from kcost.results import adapter

        written: bytes = adapter(PriceTable).dump_json(table, indent=2)
        return written.decode() + "\n"
    if fmt == "markdown":
        rows = [f"| {name}{' (default)' if name == table.default_model else ''} | {usd(p.input_cache_hit)} | "
                f"{usd(p.input_cache_miss)} | {usd(p.output)} |" for name, p in table.models.items()]  # fmt: skip
        head = [f"### {table.name} · {table.currency} per 1M tokens · effective {table.effective}", "",
                f"source: {table.source}", "", "| model | input, cache hit | input, cache miss | output |",
                "|---|---:|---:|---:|"]  # fmt: skip
        return "\n".join([*head, *rows, ""])
    lines = [
        f"{table.name} · {table.currency} per 1M tokens · effective {table.effective}",
        f"source: {table.source}",
        f"{'model':<20} {'input, cache hit':>17} {'input, cache miss':>18} {'output':>10}",
    ]
    for name, p in table.models.items():
        mark = " (default)" if name == table.default_model else ""
        lines.append(f"{name:<20} {usd(p.input_cache_hit):>17} {usd(p.input_cache_miss):>18} {usd(p.output):>10}{mark}")
    return "\n".join(lines) + "\n"
