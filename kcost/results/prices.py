"""Prices: per provider, the models with the ids they are logged under, and their rates (USD per million tokens)
through time, each period with its date and source, as the shipped snapshot (`kcost/pricing/data/`) and a
`--prices` file hold them. Loaded and validated by `kcost.pricing.prices`.

A model's rates at a date are those of its latest period starting on or before it (a period with no start was in
force before any dated change kcost knows). Rates a provider does not publish fall back: no cached-input rate
means a hit costs a miss, no write rate means a write costs a miss. Tiers raise a rate for prompts of at least
`from_tokens` tokens, as Anthropic's and Google's long-context rates do.
"""

from __future__ import annotations

import math
import re
from dataclasses import field
from datetime import date
from decimal import Decimal
from typing import Annotated, Any

from kcost.errors import InputError
from kcost.model.bounds import PER
from kcost.model.frozen import frozen
from kcost.pricing.providers import by_id
from kcost.results.common import Doc, PriceInfo, Rates

RATES = ("input_cache_miss", "input_cache_hit", "cache_write_5m", "cache_write_1h", "output")


@frozen(slots=True, kw_only=True)
class ModelPrice:
    """One model's flat rates, for one prompt size at one date: what a turn is billed at."""

    __pydantic_config__ = {"extra": "forbid"}
    input_cache_hit: Decimal
    input_cache_miss: Decimal
    output: Decimal
    cache_write_5m: Decimal | None = None
    cache_write_1h: Decimal | None = None

    def hit_cost(self, tokens: int) -> Decimal:
        return tokens * self.input_cache_hit / PER

    def miss_cost(self, tokens: int) -> Decimal:
        return tokens * self.input_cache_miss / PER

    def output_cost(self, tokens: int) -> Decimal:
        return tokens * self.output / PER

    def write_rate(self, hour: bool) -> Decimal:
        """USD per million tokens written to a cache that keeps them 5 minutes (or an hour)."""
        rate = self.cache_write_1h if hour else self.cache_write_5m
        if rate is None and hour:  # one write rate for every lifetime (OpenAI's GPT-5.6: 1.25x for 30m and 12h)
            rate = self.cache_write_5m
        return rate if rate is not None else self.input_cache_miss

    def write_premium(self, tokens: int, hour: bool) -> Decimal:
        """What writing `tokens` costs above billing them as misses (0 where writes cost a miss)."""
        return tokens * (self.write_rate(hour) - self.input_cache_miss) / PER


@frozen(slots=True, kw_only=True)
class Tier:
    __pydantic_config__ = {"extra": "forbid"}
    from_tokens: Annotated[int, Doc("Prompts of at least this many tokens pay this rate.")]
    rate: Decimal


@frozen(slots=True, kw_only=True)
class Window:
    """Rates in force for part of the day (a provider's peak hours): from `start` to `end` on `weekdays`, in the
    provider's own clock (`utc_offset_minutes` east of UTC); outside every window the period's own rates apply."""

    __pydantic_config__ = {"extra": "forbid"}
    label: Annotated[str, Doc("What the window is called: peak.")]
    utc_offset_minutes: Annotated[int, Doc("The clock the window is in, minutes east of UTC (Beijing: 480).")]
    weekdays: Annotated[list[int], Doc("ISO weekdays the window applies on, 1 Monday to 7 Sunday, in that clock.")]
    start: Annotated[str, Doc("HH:MM, inclusive.")]
    end: Annotated[str, Doc("HH:MM, exclusive.")]
    source: str
    input_cache_miss: Decimal
    input_cache_hit: Decimal | None = None
    cache_write_5m: Decimal | None = None
    cache_write_1h: Decimal | None = None
    output: Decimal

    def holds(self, moment: float) -> bool:
        """Whether the Unix time `moment` falls in this window. Its clock and weekday are counted from the seconds
        (to the microsecond, as `datetime` rounds them), not read through `datetime`, which cannot hold a time on
        the calendar's last day that the window's offset carries past 9999-12-31."""
        days, second = divmod(math.floor(round(moment, 6)) + 60 * self.utc_offset_minutes, 86_400)
        clock = f"{second // 3600:02d}:{second // 60 % 60:02d}"
        return (days + 3) % 7 + 1 in self.weekdays and self.start <= clock < self.end  # 1970-01-01: a Thursday


@frozen(slots=True, kw_only=True)
class Period:
    """The rates in force from `starts` (None: before every dated change known) until the next period."""

    __pydantic_config__ = {"extra": "forbid"}
    starts: Annotated[date | None, Doc("The first day these rates were in force; null: before any known change.")]
    as_of: Annotated[date, Doc("The day these rates were last checked against their source.")]
    source: Annotated[str, Doc("Where these rates are published (and the snapshot they came through).")]
    input_cache_miss: Decimal
    input_cache_hit: Annotated[Decimal | None, Doc("null: no cached-input rate (a hit costs a miss).")] = None
    cache_write_5m: Annotated[Decimal | None, Doc("Writes kept 5 minutes; null: a write costs a miss.")] = None
    cache_write_1h: Annotated[Decimal | None, Doc("Writes kept an hour; null: a write costs a miss.")] = None
    output: Decimal
    tiers: Annotated[dict[str, list[Tier]], Doc("Per rate name, higher rates for long prompts.")] = field(
        default_factory=dict
    )
    write_discount: Annotated[
        bool, Doc("true: a cache write costs less than a miss here, a discount the bill shows as such.")
    ] = False
    hours: Annotated[
        list[Window],
        Doc("Rates for part of the day (peak hours), by each call's logged time; a call with no time is billed at "
            "the first window's rates (the higher, where they are peak rates)."),
    ] = field(default_factory=list)  # fmt: skip

    def tier(self, prompt: int) -> tuple[int, ...]:
        """Which tiers a prompt of `prompt` tokens reaches (their starts): prompts with the same pay the same."""
        if not self.tiers:  # most rates have none
            return ()
        return tuple(t.from_tokens for tiers in self.tiers.values() for t in tiers if prompt >= t.from_tokens)

    def window(self, moment: float | None) -> Window | None:
        """The window of the day a call at `moment` falls in (None: none; an untimed call: the first window)."""
        if not self.hours:
            return None
        if moment is None:
            return self.hours[0]
        return next((w for w in self.hours if w.holds(moment)), None)

    def at(self, prompt: int, window: Window | None = None) -> ModelPrice:
        """The flat rates for a prompt of `prompt` tokens (in `window`: that window's rates)."""
        if window is not None:
            hit = window.input_cache_hit
            return ModelPrice(input_cache_miss=window.input_cache_miss,
                              input_cache_hit=hit if hit is not None else window.input_cache_miss,
                              output=window.output, cache_write_5m=window.cache_write_5m,
                              cache_write_1h=window.cache_write_1h)  # fmt: skip

        def rate(name: str) -> Decimal | None:
            value: Decimal | None = getattr(self, name)
            for tier in self.tiers.get(name, ()):
                if prompt >= tier.from_tokens:
                    value = tier.rate
            return value

        miss = rate("input_cache_miss")
        assert miss is not None
        hit = rate("input_cache_hit")
        return ModelPrice(input_cache_miss=miss, input_cache_hit=hit if hit is not None else miss,
                          output=rate("output") or Decimal(0), cache_write_5m=rate("cache_write_5m"),
                          cache_write_1h=rate("cache_write_1h"))  # fmt: skip

    @property
    def dated(self) -> date:
        """The date a report gives for these rates: their start, or when they were checked."""
        return self.starts or self.as_of


@frozen(slots=True, kw_only=True)
class ModelPrices:
    """One model: its id, the ids it is logged under, and its rates through time."""

    __pydantic_config__ = {"extra": "forbid"}
    id: str
    name: str | None = None
    match: Annotated[
        dict[str, Any],
        Doc('How logged ids are matched: {"equals": s}, {"starts_with": s}, {"ends_with": s}, {"contains": s}, '
            '{"regex": s}, {"or": [...]} or {"and": [...]}; an id always matches itself.'),
    ]  # fmt: skip
    prices: list[Period]

    def matches(self, model: str) -> bool:
        return model == self.id or _clause(self.match, model)

    def period(self, when: date | None) -> Period:
        """The rates in force on `when` (None: the latest)."""
        ordered = sorted(self.prices, key=lambda p: p.starts or date.min)
        if when is None:
            return ordered[-1]
        live = [p for p in ordered if (p.starts or date.min) <= when]
        return live[-1] if live else ordered[0]


@frozen(slots=True, kw_only=True)
class ProviderPrices:
    """One provider's models and rates, one data file of the shipped snapshot."""

    __pydantic_config__ = {"extra": "forbid"}
    provider: str
    name: str
    currency: str = "USD"
    pricing_urls: list[str] = field(default_factory=list)
    snapshot: Annotated[str, Doc("Where the snapshot came from and when it was taken.")]
    models: list[ModelPrices]


@frozen(slots=True, kw_only=True)
class PriceTable:
    """Every provider's prices, and the model a session is priced at when nothing names another."""

    __pydantic_config__ = {"extra": "forbid", "title": "kcost prices"}
    name: str
    default_model: str
    providers: list[ProviderPrices]

    def _entries(self) -> list[tuple[ProviderPrices, ModelPrices]]:
        return [(p, m) for p in self.providers for m in p.models]

    def find(self, model: str) -> tuple[ProviderPrices, ModelPrices] | None:
        """The provider and model a logged id names: its own id first, then the first pattern that matches."""
        for provider, entry in self._entries():
            if entry.id == model:
                return provider, entry
        for provider, entry in self._entries():
            if _clause(entry.match, model):
                return provider, entry
        return None

    def entry(self, model: str | None) -> tuple[ProviderPrices, ModelPrices]:
        """The model `model` names (None: the default); an unknown id is an error naming the nearest ones."""
        name = self.default_model if model is None else model
        if not name.strip():
            raise InputError("a model id cannot be empty", field="model", hint="`kcost prices` lists the ids")
        found = self.find(name)
        if found is None:
            # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
            import difflib

            ids = list(dict.fromkeys(m.id for _, m in self._entries()))
            near = difflib.get_close_matches(name, ids, n=3, cutoff=0.4) or ids[:3]
            raise InputError(f"no price for model {name!r}", field="model",
                             hint=f"nearest priced ids: {', '.join(near)}; `kcost prices --all` has them")  # fmt: skip
        return found

    def lookup(self, model: str | None, when: date | None = None, prompt: int = 0) -> ModelPrice:
        """The flat rates `model` (None: the default) is billed at on `when` for a prompt of `prompt` tokens."""
        return self.entry(model)[1].period(when).at(prompt)

    def info(self, models: list[str] | None = None, when: date | None = None) -> PriceInfo:
        """The prices a report was billed at: the provider of the first model, the period in force, the rates of
        every model used (the default alone when none is named)."""
        names = list(dict.fromkeys(models or [self.default_model]))
        provider, entry = self.entry(names[0])
        period = entry.period(when)
        rates = {}
        for name in names:
            flat = self.entry(name)[1].period(when)
            rates[self.entry(name)[1].id] = Rates(input_cache_hit=flat.input_cache_hit or flat.input_cache_miss,
                                                   input_cache_miss=flat.input_cache_miss, output=flat.output,
                                                   cache_write_5m=flat.cache_write_5m,
                                                   cache_write_1h=flat.cache_write_1h)  # fmt: skip
        return PriceInfo(name=provider.name, currency=provider.currency, effective=period.dated,
                         source=period.source, rates=rates)  # fmt: skip


@frozen(slots=True, kw_only=True)
class PriceListing:
    """What `kcost prices` renders: the table (its JSON), and what its table and markdown show of it: the rates
    in force on `when` (None: the day each provider's snapshot was taken) of each provider's current models
    (`every`: of every model), or `model`'s every period."""

    table: PriceTable
    when: date | None = None
    model: str | None = None
    every: bool = False


MAX_ID = 256  # characters of a logged model id a regular expression is tried on
MAX_FREE_REPEATS = 2  # repeats of a variable count in one expression: two take 0.1 s on a 256-character id, three 6 s


def backtracks(pattern: str) -> str | None:
    """What a regular expression could take on some id, and why: exponential time (a repeat of a group, an
    alternation or another repeat: `^(a|aa)+$`), or time a high power of its length (more than
    `MAX_FREE_REPEATS` repeats of a variable count: `^\\w*\\w*\\w*\\w*!` runs for minutes on 80 characters); or
    None: its repeats are of single characters and classes only, and few, so matching is quick on any id up to
    `MAX_ID` long."""
    try:
        import re._parser as parser  # type: ignore[import-not-found]  # Python 3.11 and later
    except ImportError:  # pragma: no cover - Python 3.10
        # deferred: the regex parser's module, by Python version
        import sre_parse as parser

    def walk(items: Any, repeated: bool) -> str | None:
        for op, arg in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                if repeated:
                    return "a repeat inside a repeat"
                body = arg[2]
                if any(str(o) in ("SUBPATTERN", "BRANCH", "MAX_REPEAT", "MIN_REPEAT") for o, _ in body):
                    return "a repeated group or alternation"
                found = walk(body, True)
            elif name == "SUBPATTERN":
                found = walk(arg[-1], repeated)
            elif name == "BRANCH":
                found = next((w for part in arg[1] if (w := walk(part, repeated))), None)
            elif name in ("ASSERT", "ASSERT_NOT"):
                found = walk(arg[1], repeated)
            else:
                found = None
            if found:
                return found
        return None

    def free(items: Any) -> int:
        count = 0
        for op, arg in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                count += (arg[0] != arg[1]) + free(arg[2])
            elif name == "SUBPATTERN":
                count += free(arg[-1])
            elif name == "BRANCH":
                count += sum(free(part) for part in arg[1])
            elif name in ("ASSERT", "ASSERT_NOT"):
                count += free(arg[1])
        return count

    parsed = parser.parse(pattern)
    if found := walk(parsed, False):
        return f"exponential time: {found}"
    if (count := free(parsed)) > MAX_FREE_REPEATS:
        return f"time a high power of the id's length: {count} repeats of a variable count (at most {MAX_FREE_REPEATS})"
    return None


def _clause(clause: dict[str, Any], model: str) -> bool:
    """Whether `model` matches a match clause (genai-prices' clauses, as JSON)."""
    for key, value in clause.items():
        if key == "equals":
            return bool(model == value)
        if key == "starts_with":
            return model.startswith(value)
        if key == "ends_with":
            return model.endswith(value)
        if key == "contains":
            return value in model
        if key == "regex":  # checked safe at load (`backtracks`); an id past any real one's length is no match
            return len(model) <= MAX_ID and re.search(value, model) is not None
        if key == "or":
            return any(_clause(c, model) for c in value)
        if key == "and":
            return all(_clause(c, model) for c in value)
    return False


@frozen(slots=True, kw_only=True)
class Section:
    """Part of a provider's price file listed under one heading: the provider's own models, or the models of
    another provider it sells at its own rates (genai-prices' `google` holds Claude on Vertex AI beside Gemini, and
    the file's name, "Google Gemini API list prices", says nothing of them)."""

    provider: ProviderPrices
    title: str
    models: list[ModelPrices]


def line(model: str) -> str:
    """The leading word of a model id, which names its family line: `claude` of `claude-opus-4-6`, `gpt` of
    `gpt-5.6-sol`, `kimi` of `kimi-k3`."""
    found = re.match(r"[a-z]+", model.lower())
    return found.group() if found else model


def main_line(models: list[ModelPrices]) -> str | None:
    """The line most of `models` belong to (None: no models)."""
    counts: dict[str, int] = {}
    for m in models:
        counts[line(m.id)] = counts.get(line(m.id), 0) + 1
    return max(counts, key=lambda k: counts[k]) if counts else None


def sections(table: PriceTable) -> list[Section]:
    """Every provider's models under the heading they belong to, in the table's order: a model whose line is
    another provider's main line (a Claude model in Google's file) goes under "<that provider> models at <this
    provider>'s list prices", after this provider's own."""
    makers: dict[str, ProviderPrices] = {}
    for p in table.providers:
        own = main_line(p.models)
        if own is not None:
            makers.setdefault(own, p)
    out = []
    for p in table.providers:
        mine: list[ModelPrices] = []
        sold: dict[str, tuple[ProviderPrices, list[ModelPrices]]] = {}
        for m in p.models:
            maker = makers.get(line(m.id))
            if maker is None or maker.provider == p.provider:
                mine.append(m)
            else:
                sold.setdefault(maker.provider, (maker, []))[1].append(m)
        if mine:
            out.append(Section(provider=p, title=p.name, models=mine))
        out += [Section(provider=p, title=f"{_called(maker)} models at {_called(p)}'s list prices", models=models)
                for maker, models in sold.values()]  # fmt: skip
    return out


def section_of(table: PriceTable, model: ModelPrices) -> Section:
    """The section a model is listed in."""
    return next(s for s in sections(table) if any(m is model for m in s.models))


def _called(provider: ProviderPrices) -> str:
    """How people name a provider: its module's name (`Google`), else its file's."""
    known = by_id(provider.provider)
    return known.name if known is not None else provider.name
