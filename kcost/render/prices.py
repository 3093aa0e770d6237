"""`kcost prices`: each provider's current models, the rates in force on a day with their dates and sources, as
text, JSON or markdown (`--all`: every model); one model's whole history with `--model`.

What is current is read from the snapshot itself, which marks no model retired: on the day the snapshot was taken
(or `--at`), the models of the newest major version of the line most of a heading's models belong to (Claude 5,
GPT-6, Gemini 4, Kimi K3, DeepSeek V4), each family (its id with the version taken out: `gpt-#-sol`) at its newest
version, and the default model. So ada, davinci, GPT-4 and Claude 3 are left to `--all`, as are ids with no version
(`deepseek-chat`, an alias of whatever is newest). Rates that start after the day are shown as scheduled (`from
2027-01-01`), under the rates in force then.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, NamedTuple

from kcost.render.display import markdown_text, plural, rate_per_mtok
from kcost.render.fit import Column, Short, fitted
from kcost.render.terminal import console as make_console
from kcost.results import dump_json
from kcost.results.prices import (
    ModelPrices,
    Period,
    PriceListing,
    ProviderPrices,
    Section,
    line,
    main_line,
    section_of,
    sections,
)

if TYPE_CHECKING:
    from kcost.render.registry import View

HEAD = ("model", "cache hit", "cache miss", "write 5m", "write 1h", "output", "in force")  # input rates, then output
SHORT = ("hit", "miss", "w5m", "w1h", "out")  # the rate columns' headers where the table is narrow (a key names them)
# a model id's version: `5.5`, `4-5` (Claude's), `3` of `kimi-k3`; not a size (`120b`, `8k`) nor a date (`002`)
_VERSION = re.compile(r"(?<![0-9.])(\d{1,2})(?:[.-](\d)(?![0-9]))?(?![0-9]|[kb]\b)")
_TAKEN = re.compile(r"\btaken (\d{4}-\d{2}-\d{2})\b")
_URL = re.compile(r"https?://[^\s,;)]+")


class _Row(NamedTuple):
    name: str
    period: Period
    day: date  # the day the listing is of: a period starting after it is scheduled
    default: bool  # the default model's rates in force on `day`


class _Group(NamedTuple):
    section: Section
    rows: list[_Row]
    left: int  # the section's models not shown


def prices_json(listing: PriceListing, view: View) -> str:
    """The whole table, in the shape a `--prices` file takes (whatever `--at`, `--all` and `--model` say)."""
    return dump_json(listing.table) + "\n"


def snapshot_day(provider: ProviderPrices) -> date:
    """The day a provider's snapshot was taken, as it says (`genai-prices 0.2.3, taken 2026-11-30`), else the
    latest day its rates were checked."""
    found = _TAKEN.search(provider.snapshot)
    if found is not None:
        try:
            return date.fromisoformat(found.group(1))
        except ValueError:
            pass
    return max(p.as_of for m in provider.models for p in m.prices)


def version(model: str) -> tuple[int, int] | None:
    """A model id's version (major, minor): `(5, 5)` of `claude-opus-5-5`, `(6, 1)` of `gpt-6.1-sol`; None where
    the id has none (`ada`, `deepseek-chat`)."""
    found = _VERSION.search(model)
    return (int(found.group(1)), int(found.group(2) or 0)) if found else None


def family(model: str) -> str:
    """A model id with its version taken out: `gpt-#-sol` of both `gpt-6-sol` and `gpt-6.1-sol`."""
    return _VERSION.sub("#", model, count=1)


def current(section: Section, day: date, default: str) -> list[ModelPrices]:
    """The section's current models on `day`, in its order (the module's docstring says which); every model where
    its main line names no version in force."""

    def in_force(m: ModelPrices) -> bool:
        return any(_start(p) <= day for p in m.prices)

    main = main_line(section.models)
    versioned = [(m, v) for m in section.models if line(m.id) == main and (v := version(m.id)) and in_force(m)]
    if not versioned:
        return list(section.models)
    newest = max(v[0] for _, v in versioned)
    best: dict[str, tuple[ModelPrices, tuple[int, int]]] = {}
    for m, v in versioned:
        if v[0] == newest and (family(m.id) not in best or v > best[family(m.id)][1]):
            best[family(m.id)] = (m, v)
    shown = {id(m) for m, _ in best.values()}
    return [m for m in section.models if id(m) in shown or m.id == default]


def _rows(entry: ModelPrices, day: date, default: str, every_period: bool) -> list[_Row]:
    """A model's rows: the rates in force on `day` (as a bill of that day takes them) and those scheduled after
    it; `every_period`: its earlier rates too."""
    live = entry.period(day)
    ordered = sorted(entry.prices, key=_start)
    return [_Row(entry.id, p, day, entry.id == default and p is live) for p in ordered
            if p is live or _start(p) > day or every_period]  # fmt: skip


def _groups(listing: PriceListing) -> list[_Group]:
    """Per heading, the rows to show: its current (or every) model's rates on the day, or `model`'s every
    period."""
    table, default = listing.table, listing.table.default_model
    if listing.model is not None:
        provider, entry = table.entry(listing.model)
        day = listing.when or snapshot_day(provider)
        return [_Group(section_of(table, entry), _rows(entry, day, default, every_period=True), 0)]
    groups = []
    for section in sections(table):
        day = listing.when or snapshot_day(section.provider)
        models = section.models if listing.every else current(section, day, default)
        rows = [row for m in models for row in _rows(m, day, default, every_period=False)]
        groups.append(_Group(section, rows, len(section.models) - len(models)))
    return groups


def prices_markdown(listing: PriceListing, view: View) -> str:
    md = markdown_text  # a price file's texts can hold bars and tags
    out = []
    groups = _groups(listing)
    for group in groups:
        provider = group.section.provider
        out += [f"### {md(group.section.title)} · {md(provider.currency)} per 1M tokens", "",
                f"snapshot: {md(provider.snapshot)}", "", "| " + " | ".join(HEAD) + " | source |",
                "|---|" + "---:|" * (len(HEAD) - 2) + "---|---|"]  # fmt: skip
        out += ["| " + " | ".join(map(md, _cells(row))) + f" | {md(row.period.source)} |" for row in group.rows]
        out.append("")
    left = _left(groups)
    if left:
        out += [f"{left} (`kcost prices --all` lists them).", ""]
    return "\n".join(out)


def prices_table(listing: PriceListing, view: View) -> str:
    width = view.width
    console, buffer = make_console(width, view.color)
    groups = _groups(listing)
    for group in groups:
        provider = group.section.provider
        console.print(f"{group.section.title} · {provider.currency} per 1M tokens · {provider.snapshot}")
        cells = [_cells(row) for row in group.rows]
        # narrow: a rate column this provider never fills goes first (it says nothing), then the cache writes
        drops = [2 if all(r[k] == "-" for r in cells) else 1 if k in (3, 4) else 0 for k in range(1, 6)]
        columns = [Column(HEAD[0], number=False)]
        columns += [Column(h, short=s, drop=d) for h, s, d in zip(HEAD[1:6], SHORT, drops, strict=True)]
        columns.append(Column(HEAD[6], number=False))
        console.print(fitted(columns, cells, width))
        console.print(_sources(group.rows))
        console.print("")
    left = _left(groups)
    console.print(f"{left + ' (--all lists them); ' if left else ''}each row's source: --format markdown")
    return buffer.getvalue().rstrip("\n") + "\n"


def _left(groups: list[_Group]) -> str:
    """What the listing leaves out (`12 older models not shown`), or nothing."""
    left = sum(g.left for g in groups)
    return f"{plural(left, 'older model')} not shown" if left else ""


def _sources(rows: list[_Row]) -> str:
    """The rows' sources in one short line: the page most rows cite, and how many others (markdown and JSON give
    each row's whole source)."""
    pages = Counter(url for row in rows for url in dict.fromkeys(_URL.findall(row.period.source) or
                                                                  [row.period.source]))  # fmt: skip
    if not pages:
        return "source: none given"
    first = pages.most_common(1)[0][0]
    more = len(pages) - 1
    return f"source: {first}" + (f" and {more} more" if more else "")


def _cells(row: _Row) -> list[str]:
    """A row's cells (some with a short form for narrow tables: `fit.Short`)."""
    p = row.period
    miss = _rate(p.input_cache_miss)
    if p.tiers:  # narrow: `$0.075+t`
        miss = Short(f"{miss} +tiers", f"{miss}+t", "+t=+tiers: other rates past a prompt size")
    return [f"{row.name}{' (default)' if row.default else ''}", _rate(p.input_cache_hit), miss,
            _rate(p.cache_write_5m), _rate(p.cache_write_1h), _rate(p.output), _dates(p, row.day)]  # fmt: skip


def _dates(p: Period, day: date) -> str:
    """When a period is in force: from its start (`2026-10-15`; `from 2027-01-01` where that is after the day
    shown: scheduled), or, undated, as of the day it was checked (`~2026-11-30` where the table is narrow)."""
    if p.starts is not None:
        return f"from {p.starts.isoformat()}" if p.starts > day else p.starts.isoformat()
    day_text = p.as_of.isoformat()
    return Short(f"(as of {day_text})", f"~{day_text}", "~date=as of that day (no start date known)")


def _start(p: Period) -> date:
    return p.starts or date.min


def _rate(value: Decimal | None) -> str:
    """A rate as the table holds it, at least to the cent: `$0.30`, `$0.123456789012`; `-` where none is given."""
    return "-" if value is None else rate_per_mtok(value)
