"""`kcost compare`: the same sessions on other models, each under its own provider's cache rule (the rules, the
per-model least prompts and the default models are the provider modules' in `kcost.pricing.providers`; K3's for a
provider kcost has no module of), priced at that model's rates. Builds the report; renders nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from decimal import Decimal, localcontext

from kcost.billing.bills import bill, pricing_date
from kcost.cache.model import CacheModel, Kind, parse_cache_model
from kcost.model.bounds import PRECISION
from kcost.model.session import Session
from kcost.pricing import providers
from kcost.results.compare import CompareReport, Priced, SessionOnModels
from kcost.results.prices import PriceTable

NOTE = ("Token counts are Kimi tokens (K3's tokenizer or estimate) unless a row says `logged`: the log holds that "
        "provider's own usage. Each model is simulated under its provider's own cache rule.")  # fmt: skip
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
        rules: dict[str, CacheModel] = {}  # by label
        for session in sessions:
            rows = []
            turns = 0
            for (provider, entry), name in zip(entries, models, strict=True):
                cache = rule_for(provider.provider, entry.id)
                rules.setdefault(cache.label, cache)
                billed = bill(session, cache=cache, prices=prices, usage=usage, model=entry.id, at=at)
                s = billed.summary
                turns = s.turns
                parts = {"cache hits": s.hit_cost, "cache misses": s.miss_cost, "cache writes": s.write_premium,
                         "output": s.output_cost}  # fmt: skip
                own = billed.calls_sized_from_usage > 0 and any(
                    (found := prices.find(m)) is not None and found[0].provider == provider.provider
                    for m in billed.logged_models
                )
                rows.append(Priced(model=name, provider=provider.name, cache=cache.label, hit_rate=s.hit_rate,
                                   input_tokens=s.input_tokens, output_tokens=s.output_tokens, cost=s.total,
                                   cost_per_turn=(s.total / s.turns).quantize(PLACES) if s.turns else Decimal(0),
                                   dominant=max(parts, key=lambda k: parts[k]),  # type: ignore[arg-type]
                                   counts="logged" if own else "kimi", cheapest=False))  # fmt: skip
            least = min(range(len(rows)), key=lambda i: (rows[i].cost, i))
            rows = [replace(r, cheapest=True) if i == least else r for i, r in enumerate(rows)]
            out.append(SessionOnModels(session=session.name, source=session.source, turns=turns, rows=rows,
                                       cheapest=rows[least].model))  # fmt: skip
        when = pricing_date(sessions[0], at) if sessions else at
        return CompareReport(note=NOTE, prices=prices.info([e.id for _, e in entries], when),
                             caches=[c.info() for c in rules.values()], sessions=out)  # fmt: skip
