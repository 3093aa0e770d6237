"""`kcost compare`: the same sessions on other models, each under its own provider's cache rule (the rules, the
per-model least prompts and the default models are the provider modules' in `kcost.pricing.providers`; K3's for a
provider kcost has no module of), priced at that model's rates. Builds the report; renders nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from decimal import Decimal, localcontext
from typing import Literal

from kcost.billing.bills import bill, pricing_date
from kcost.cache.model import CacheModel, Kind, parse_cache_model
from kcost.model.bounds import PRECISION
from kcost.model.session import Session
from kcost.pricing import providers
from kcost.pricing.charges import rate
from kcost.results import Summary
from kcost.results.compare import CompareReport, CompareTotal, ModelTotal, Priced, SessionOnModels
from kcost.results.prices import PriceTable

NOTE = ("Token counts are Kimi tokens (K3's tokenizer or estimate) unless a row says `logged`: the log holds that "
        "provider's own usage (`mixed`: some of the sessions' logs do). Each model is simulated under its "
        "provider's own cache rule.")  # fmt: skip
PLACES = Decimal("1E-10")


def __getattr__(name: str) -> tuple[str, ...]:
    """`DEFAULT_MODELS`: each provider's models for `kcost compare`, in the registry's order (asked of the registry
    each time, so a provider's module is its one home)."""
    if name == "DEFAULT_MODELS":
        return providers.compare_defaults()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def rule_for(provider: str, model: str = "") -> CacheModel:
    """The cache rule `model` runs under at its provider (K3's for a provider kcost has no rule of), with the
    model's own least cacheable prompt."""
    found = providers.by_id(provider)
    if found is None:
        return parse_cache_model(Kind.K3.value)
    cache, rule = found.cache_for(model)
    least = rule.least_for(model)
    return parse_cache_model(f"{cache}:min={least}" if least else cache)


def compare(
    sessions: Sequence[Session], models: Sequence[str], prices: PriceTable, usage: str = "auto", at: date | None = None
) -> CompareReport:
    with localcontext() as exact:
        exact.prec = PRECISION
        entries = [prices.entry(m) for m in models]  # unknown ids fail before any work
        out = []
        caches = [rule_for(provider.provider, entry.id) for provider, entry in entries]
        rules = {c.label: c for c in caches}  # each once
        sums = [_Sum() for _ in models]
        for session in sessions:
            rows = []
            turns = 0
            for (provider, entry), name, cache, summed in zip(entries, models, caches, sums, strict=True):
                billed = bill(session, cache=cache, prices=prices, usage=usage, model=entry.id, at=at)
                s = billed.summary
                turns = s.turns
                parts = {"cache hits": s.hit_cost, "cache misses": s.miss_cost, "cache writes": s.write_premium,
                         "output": s.output_cost}  # fmt: skip
                own = billed.calls_sized_from_usage > 0 and any(
                    (found := prices.find(m)) is not None and found[0].provider == provider.provider
                    for m in billed.logged_models
                )
                summed.add(s, parts, own)
                rows.append(Priced(model=name, provider=provider.name, cache=cache.label, hit_rate=s.hit_rate,
                                   input_tokens=s.input_tokens, output_tokens=s.output_tokens, cost=s.total,
                                   cost_per_turn=_per_turn(s.total, s.turns),
                                   dominant=max(parts, key=lambda k: parts[k]),  # type: ignore[arg-type]
                                   counts="logged" if own else "kimi", cheapest=False))  # fmt: skip
            least = _least(rows)
            sums[least].cheapest_in += 1
            rows = [replace(r, cheapest=True) if i == least else r for i, r in enumerate(rows)]
            out.append(SessionOnModels(session=session.name, source=session.source, turns=turns, rows=rows,
                                       cheapest=rows[least].model))  # fmt: skip
        when = pricing_date(sessions[0], at) if sessions else at
        named = zip(entries, models, caches, sums, strict=True)
        totals = [summed.row(name, provider.name, cache.label) for (provider, _), name, cache, summed in named]
        least = _least(totals)
        totals = [replace(r, cheapest=True) if i == least else r for i, r in enumerate(totals)]
        total = CompareTotal(sessions=len(out), turns=sum(s.turns for s in out), rows=totals,
                             cheapest=totals[least].model)  # fmt: skip
        return CompareReport(note=NOTE, prices=prices.info([e.id for _, e in entries], when),
                             caches=[c.info() for c in rules.values()], sessions=out, total=total)  # fmt: skip


def _per_turn(cost: Decimal, turns: int) -> Decimal:
    return (cost / turns).quantize(PLACES) if turns else Decimal(0)


def _least(rows: Sequence[Priced | ModelTotal]) -> int:
    """The cheapest row's index (the first of those that cost as little)."""
    return min(range(len(rows)), key=lambda i: (rows[i].cost, i))


class _Sum:
    """One model's figures over the sessions, added up as each is billed."""

    def __init__(self) -> None:
        self.turns = self.hit_tokens = self.input_tokens = self.output_tokens = self.cheapest_in = 0
        self.cost = Decimal(0)
        self.parts: dict[str, Decimal] = {}
        self.owns: set[bool] = set()

    def add(self, s: Summary, parts: dict[str, Decimal], own: bool) -> None:
        self.turns += s.turns
        self.hit_tokens += s.hit_tokens
        self.input_tokens += s.input_tokens
        self.output_tokens += s.output_tokens
        self.cost += s.total
        for part, cost in parts.items():
            self.parts[part] = self.parts.get(part, Decimal(0)) + cost
        self.owns.add(own)

    def row(self, model: str, provider: str, cache: str) -> ModelTotal:
        counts: Literal["logged", "kimi", "mixed"] = (
            "mixed" if len(self.owns) > 1 else "logged" if True in self.owns else "kimi"
        )
        dominant = max(self.parts, key=lambda k: self.parts[k]) if self.parts else "cache hits"
        return ModelTotal(model=model, provider=provider, cache=cache,
                          hit_rate=rate(self.hit_tokens, self.input_tokens), input_tokens=self.input_tokens,
                          output_tokens=self.output_tokens, cost=self.cost,
                          cost_per_turn=_per_turn(self.cost, self.turns), dominant=dominant,  # type: ignore[arg-type]
                          counts=counts, cheapest=False, cheapest_in=self.cheapest_in)  # fmt: skip
