"""`kcost prices`: every provider's models, the rates in force on a day with their dates and sources, as text,
JSON or markdown; one model's whole history with `--model`."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING

from kcost.render.display import markdown_text, rate_per_mtok
from kcost.render.fit import Column, Short, fitted
from kcost.render.terminal import console as make_console
from kcost.results import dump_json
from kcost.results.prices import Period, PriceListing, PriceTable, ProviderPrices

if TYPE_CHECKING:
    from kcost.render.registry import View

HEAD = ("model", "input, cache hit", "input, cache miss", "write, 5 min", "write, 1 h", "output", "since")
SHORT = ("hit", "miss", "w5m", "w1h", "out")  # the rate columns' headers where the table is narrow (a key names them)


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
    table, md = listing.table, markdown_text  # a price file's texts can hold bars and tags
    out = []
    for provider, rows in _groups(listing):
        out += [f"### {md(provider.name)} · {md(provider.currency)} per 1M tokens", "",
                f"snapshot: {md(provider.snapshot)}", "", "| " + " | ".join(HEAD) + " | source |",
                "|---|" + "---:|" * (len(HEAD) - 1) + "---|"]  # fmt: skip
        out += ["| " + " | ".join(map(md, _row(table, name, p))) + f" | {md(p.source)} |" for name, p in rows]
        out.append("")
    return "\n".join(out)


def prices_table(listing: PriceListing, view: View) -> str:
    table, width = listing.table, view.width
    console, buffer = make_console(width, view.color)
    for provider, rows in _groups(listing):
        console.print(f"{provider.name} · {provider.currency} per 1M tokens · {provider.snapshot}")
        cells = [_row(table, name, p) for name, p in rows]
        # narrow: a rate column this provider never fills goes first (it says nothing), then the cache writes
        drops = [2 if all(r[k] == "-" for r in cells) else 1 if k in (3, 4) else 0 for k in range(1, 6)]
        columns = [Column(HEAD[0], number=False)]
        columns += [Column(h, short=s, drop=d) for h, s, d in zip(HEAD[1:6], SHORT, drops, strict=True)]
        columns.append(Column(HEAD[6], number=False))
        console.print(fitted(columns, cells, width))
        sources = dict.fromkeys(p.source for _, p in rows)
        console.print("sources: " + "; ".join(sources))
        console.print("")
    return buffer.getvalue()


def _row(table: PriceTable, name: str, p: Period) -> list[str]:
    """A period's cells (some with a short form for narrow tables: `fit.Short`)."""
    miss = _rate(p.input_cache_miss)
    if p.tiers:  # narrow: `$0.075+t`
        miss = Short(f"{miss} +tiers", f"{miss}+t", "+t=+tiers: other rates past a prompt size")
    return [f"{name}{' (default)' if name == table.default_model else ''}", _rate(p.input_cache_hit), miss,
            _rate(p.cache_write_5m), _rate(p.cache_write_1h), _rate(p.output),
            p.starts.isoformat() if p.starts else _as_of(p.as_of)]  # fmt: skip


def _as_of(day: date) -> str:
    """An undated period's `since`: the day the table was taken (`~2026-11-30` where the table is narrow)."""
    return Short(f"(as of {day.isoformat()})", f"~{day.isoformat()}", "~date=as of that day (no start date known)")


def _start(p: Period) -> date:
    return p.starts or date.min


def _rate(value: Decimal | None) -> str:
    """A rate as the table holds it, at least to the cent: `$0.30`, `$0.123456789012`; `-` where none is given."""
    return "-" if value is None else rate_per_mtok(value)
