"""Outcomes x prices -> bills, in `Decimal`.

`bill(session, cache=..., prices=...)` runs one session through one cache model and prices every turn;
`report(sessions, caches, prices)` does it for every pair and adds the totals. Nothing here reads files,
knows about argv or prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal

from kcost import __version__
from kcost.cache import CacheModel, Kind, Outcome, Reason, simulate
from kcost.errors import InputError
from kcost.models import (
    BillReport,
    CacheInfo,
    MissLine,
    PriceInfo,
    Rates,
    Run,
    Session,
    SessionBill,
    Summary,
    TurnBill,
    blended,
)
from kcost.prices import ModelPrice, PriceTable


def bill(session: Session, *, cache: CacheModel, prices: PriceTable) -> SessionBill:
    """The bill for one session under one cache model."""
    try:
        price = prices.lookup(session.model)
    except InputError as exc:
        raise exc.located(source=session.source, line=session.model_line) from None
    turns: list[TurnBill] = []
    cumulative = Decimal(0)
    outcomes = simulate(session.requests, cache)
    for number, (outcome, label) in enumerate(zip(outcomes, session.labels, strict=True), start=1):
        turn = _turn(number, label, outcome, price, cumulative)
        cumulative = turn.cumulative
        turns.append(turn)
    return SessionBill(
        source=session.source,
        name=session.name,
        model=session.model or prices.default_model,
        warm_prefix_tokens=session.warm_prefix,
        turns=turns,
        summary=summarize(turns, price),
    )


def report(sessions: Sequence[Session], caches: Sequence[CacheModel], prices: PriceTable) -> BillReport:
    """Every session under every cache model, with totals per model."""
    runs = []
    for cache in caches:
        bills = [bill(s, cache=cache, prices=prices) for s in sessions]
        runs.append(Run(cache=cache_info(cache), sessions=bills, total=combine(bills)))
    return BillReport(generator=f"kcost {__version__}", prices=price_info(prices), runs=runs)


def cache_info(cache: CacheModel) -> CacheInfo:
    """Every parameter of the cache model that produced a bill."""
    caching = cache.kind is not Kind.NONE
    return CacheInfo(
        name=cache.kind.value,
        label=cache.label,
        hash_block=cache.block if cache.kind in (Kind.K3, Kind.SHARED) else None,
        checkpoints=cache.checkpoints,
        ttl_seconds=cache.ttl if caching else None,
        output_cached=cache.output and caching,
    )


def price_info(prices: PriceTable) -> PriceInfo:
    return PriceInfo(
        name=prices.name,
        currency=prices.currency,
        effective=prices.effective,
        source=prices.source,
        rates={name: Rates(**p.model_dump()) for name, p in prices.models.items()},
    )


def _turn(number: int, label: str | None, o: Outcome, price: ModelPrice, before: Decimal) -> TurnBill:
    hit_cost = price.hit_cost(o.hit)
    miss_cost = price.miss_cost(o.miss)
    output_cost = price.output_cost(o.output)
    total = hit_cost + miss_cost + output_cost
    misses = [
        MissLine(reason=m.reason.value, tokens=m.tokens, at=m.at, cost=price.miss_cost(m.tokens)) for m in o.misses
    ]
    return TurnBill(
        turn=number,
        label=label,
        input_tokens=o.input,
        hit_tokens=o.hit,
        miss_tokens=o.miss,
        output_tokens=o.output,
        hit_rate=_rate(o.hit, o.input),
        hit_cost=hit_cost,
        miss_cost=miss_cost,
        output_cost=output_cost,
        total=total,
        cumulative=before + total,
        reason=main_reason(misses),
        misses=misses,
    )


def main_reason(misses: Iterable[MissLine]) -> str:
    """The cause that cost the most tokens, new input only when nothing else missed."""
    causes = [m for m in misses if m.reason != Reason.NEW_INPUT.value]
    if causes:
        return max(causes, key=lambda m: m.tokens).reason
    return Reason.NEW_INPUT.value if any(True for _ in misses) else ""


def summarize(turns: Sequence[TurnBill], price: ModelPrice) -> Summary:
    """Session totals: the sums of its turns."""
    lines = [m for t in turns for m in t.misses]
    return _summary(
        turns=len(turns),
        inputs=sum(t.input_tokens for t in turns),
        hits=sum(t.hit_tokens for t in turns),
        outputs=sum(t.output_tokens for t in turns),
        hit_cost=sum((t.hit_cost for t in turns), Decimal(0)),
        miss_cost=sum((t.miss_cost for t in turns), Decimal(0)),
        output_cost=sum((t.output_cost for t in turns), Decimal(0)),
        uncached=sum((price.miss_cost(t.input_tokens) + t.output_cost for t in turns), Decimal(0)),
        lines=lines,
    )


def combine(bills: Sequence[SessionBill]) -> Summary:
    """Totals over sessions: the sums of their summaries."""
    sums = [b.summary for b in bills]
    return _summary(
        turns=sum(s.turns for s in sums),
        inputs=sum(s.input_tokens for s in sums),
        hits=sum(s.hit_tokens for s in sums),
        outputs=sum(s.output_tokens for s in sums),
        hit_cost=sum((s.hit_cost for s in sums), Decimal(0)),
        miss_cost=sum((s.miss_cost for s in sums), Decimal(0)),
        output_cost=sum((s.output_cost for s in sums), Decimal(0)),
        uncached=sum((s.uncached_total for s in sums), Decimal(0)),
        lines=[m for s in sums for m in s.miss_by_reason.values()],
    )


def _summary(
    *,
    turns: int,
    inputs: int,
    hits: int,
    outputs: int,
    hit_cost: Decimal,
    miss_cost: Decimal,
    output_cost: Decimal,
    uncached: Decimal,
    lines: Iterable[MissLine],
) -> Summary:
    by_reason: dict[str, MissLine] = {}
    for m in lines:
        seen = by_reason.get(m.reason)
        by_reason[m.reason] = (
            MissLine(reason=m.reason, tokens=seen.tokens + m.tokens, at=min(seen.at, m.at), cost=seen.cost + m.cost)
            if seen
            else MissLine(reason=m.reason, tokens=m.tokens, at=m.at, cost=m.cost)
        )
    input_cost = hit_cost + miss_cost
    total = input_cost + output_cost
    return Summary(
        turns=turns,
        input_tokens=inputs,
        hit_tokens=hits,
        miss_tokens=inputs - hits,
        output_tokens=outputs,
        hit_rate=_rate(hits, inputs),
        hit_cost=hit_cost,
        miss_cost=miss_cost,
        input_cost=input_cost,
        output_cost=output_cost,
        total=total,
        blended_input_per_mtok=blended(input_cost, inputs),
        uncached_total=uncached,
        saved=uncached - total,
        miss_by_reason=dict(sorted(by_reason.items(), key=lambda kv: (-kv[1].cost, kv[0]))),
    )


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0
