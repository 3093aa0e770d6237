"""`kcost prices`: every provider's models, the rates in force on a day with their dates and sources, as text,
JSON or markdown; one model's whole history with `--model`."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING

from kcost.render.display import rate_per_mtok
from kcost.render.fit import Column, fitted
from kcost.render.terminal import console as make_console
from kcost.results import dump_json
from kcost.results.prices import Period, PriceListing, PriceTable, ProviderPrices

if TYPE_CHECKING:
    from kcost.render.registry import View

HEAD = ("model", "input, cache hit", "input, cache miss", "write, 5 min", "write, 1 h", "output", "since")


def prices_json(listing: PriceListing, view: View) -> str:
    """The whole table, in the shape a `--prices` file takes (whatever `--at` and `--model` say)."""
    return dump_json(listing.table) + "\n"


def _groups(listing: PriceListing) -> list[tuple[ProviderPrices, list[tuple[str, Period]]]]:
    """Per provider, the rows to show: each model's rates in force on `when`, or `model`'s every period."""
    table, model = listing.table, listing.model
    groups: list[tuple[ProviderPrices, list[tuple[str, Period]]]] = []
    if model is not None:
        provider, entry = table.entry(model)
        groups.append((provider, [(entry.id, p) for p in sorted(entry.prices, key=_start)]))
    else:
        for provider in table.providers:
            groups.append((provider, [(m.id, m.period(listing.when)) for m in provider.models]))
    return groups


def prices_markdown(listing: PriceListing, view: View) -> str:
    table = listing.table
    out = []
    for provider, rows in _groups(listing):
        out += [f"### {provider.name} · {provider.currency} per 1M tokens", "",
                f"snapshot: {provider.snapshot}", "", "| " + " | ".join(HEAD) + " | source |",
                "|---|" + "---:|" * (len(HEAD) - 1) + "---|"]  # fmt: skip
        out += ["| " + " | ".join(_row(table, name, p)) + f" | {p.source} |" for name, p in rows]
        out.append("")
    return "\n".join(out)


def prices_table(listing: PriceListing, view: View) -> str:
    table, width = listing.table, view.width
    console, buffer = make_console(width, view.color)
    for provider, rows in _groups(listing):
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
    return "-" if value is None else rate_per_mtok(value)
