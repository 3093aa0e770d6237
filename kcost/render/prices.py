"""`kcost prices`: every provider's models, the rates in force on a day with their dates and sources, as text,
JSON or markdown; one model's whole history with `--model`."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from kcost.render.fit import Column, fitted
from kcost.render.terminal import console as make_console
from kcost.render.text import usd
from kcost.results import money_text
from kcost.results.prices import Period, PriceTable, ProviderPrices

HEAD = ("model", "input, cache hit", "input, cache miss", "write, 5 min", "write, 1 h", "output", "since")


def render_prices(
    table: PriceTable,
    fmt: str = "table",
    *,
    width: int = 100,
    color: bool = False,
    when: date | None = None,
    model: str | None = None,
) -> str:
    """The table's rates in force on `when` (None: the latest), or `model`'s every period."""
    if fmt == "json":
        from kcost.results import adapter

        written: bytes = adapter(PriceTable).dump_json(table, indent=2)
        return written.decode() + "\n"
    groups: list[tuple[ProviderPrices, list[tuple[str, Period]]]] = []
    if model is not None:
        provider, entry = table.entry(model)
        groups.append((provider, [(entry.id, p) for p in sorted(entry.prices, key=_start)]))
    else:
        for provider in table.providers:
            groups.append((provider, [(m.id, m.period(when)) for m in provider.models]))
    if fmt == "markdown":
        out = []
        for provider, rows in groups:
            out += [f"### {provider.name} · {provider.currency} per 1M tokens", "",
                    f"snapshot: {provider.snapshot}", "", "| " + " | ".join(HEAD) + " | source |",
                    "|---|" + "---:|" * (len(HEAD) - 1) + "---|"]  # fmt: skip
            out += ["| " + " | ".join(_row(table, name, p)) + f" | {p.source} |" for name, p in rows]
            out.append("")
        return "\n".join(out)
    console, buffer = make_console(width, color)
    for provider, rows in groups:
        console.print(f"{provider.name} · {provider.currency} per 1M tokens · {provider.snapshot}")
        columns = [Column(HEAD[0], number=False), *(Column(h) for h in HEAD[1:6]), Column(HEAD[6], number=False)]
        console.print(fitted(columns, [_row(table, name, p) for name, p in rows], width))
        sources = dict.fromkeys(p.source for _, p in rows)
        console.print("sources: " + "; ".join(sources))
        console.print("")
    return buffer.getvalue()


def _row(table: PriceTable, name: str, p: Period) -> list[str]:
    tiered = " +tiers" if p.tiers else ""
    return [f"{name}{' (default)' if name == table.default_model else ''}", _rate(p.input_cache_hit),
            _rate(p.input_cache_miss) + tiered, _rate(p.cache_write_5m), _rate(p.cache_write_1h), _rate(p.output),
            p.starts.isoformat() if p.starts else f"(as of {p.as_of.isoformat()})"]  # fmt: skip


def _start(p: Period) -> date:
    return p.starts or date.min


def _rate(value: Decimal | None) -> str:
    """A rate as the table holds it, at least to the cent: `$0.30`, `$0.123456789012`; `-` where none is given."""
    if value is None:
        return "-"
    exact = money_text(value)
    return usd(value) if len(exact.partition(".")[2]) <= 2 else f"${exact}"
