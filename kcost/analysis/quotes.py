"""The seed lesson's arithmetic as a command: one turn of a prefix plus new tokens, missed or hit, and a
session of such turns, each figure produced by a named cache model through the same simulator as `bill`.

- all miss: the `none` model; hit: the `ideal` model (the whole prefix hits, as the lesson counts it);
- on K3: the `k3` model (hits end on a hash-block boundary with a turn-boundary checkpoint);
- warm: the prefix is cached before turn 1 (the lesson's $6.60); cold: turn 1 pays in full.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from kcost.billing.bills import bill
from kcost.cache.model import CacheModel, Kind
from kcost.errors import InputError
from kcost.model.session import Session
from kcost.readers.specs.turnspec import build, validate
from kcost.results import SessionBill
from kcost.results.prices import PriceTable
from kcost.results.quote import Quote, QuoteSession, QuoteTurn

MAX_PROMPT = 10_485_760  # tokens in one quoted turn: ten times K3's 1,048,576-token context window


def parse_rate(text: str) -> Decimal:
    """`0.9` or `90%` -> Decimal('0.9'), between 0 and 1, to at most 12 decimal places."""
    raw = str(text).strip()
    try:
        rate = Decimal(raw[:-1]) / 100 if raw.endswith("%") else Decimal(raw)
    except InvalidOperation:
        raise InputError(f"not a number: {text!r}") from None
    if not rate.is_finite() or not 0 <= rate <= 1:
        raise InputError(f"must be between 0 and 1 (got {text})")
    if rate != rate.quantize(Decimal("1E-12")):
        raise InputError(f"more than 12 decimal places: {text}")
    return rate


def make_quote(
    *,
    prefix: int,
    new: int,
    turns: int,
    output: int,
    hit_rate: Decimal,
    prices: PriceTable,
    model: str | None,
) -> Quote:
    if prefix + new + output > MAX_PROMPT:
        raise InputError(f"a turn of {prefix + new + output:,} tokens: a quote is of prompts up to {MAX_PROMPT:,}",
                         field="prefix", hint="ten times K3's context window")  # fmt: skip
    price = prices.lookup(model)
    none, ideal, k3 = CacheModel(Kind.NONE), CacheModel(Kind.IDEAL), CacheModel(Kind.K3)

    def built(warm: bool) -> Session:
        turn = {"keep": prefix, "new": new, "output": output, "repeat": turns}
        spec = validate({"model": model, "prefix": {"tokens": prefix, "warm": warm}, "turns": [turn]}, "quote")
        return build(spec, source="quote", name="quote")

    warm, cold = built(True), built(False)  # each session built once, billed under each cache model
    miss, hit, on_k3 = (bill(warm, cache=cache, prices=prices) for cache in (none, ideal, k3))
    cold_ideal, cold_k3 = (bill(cold, cache=cache, prices=prices) for cache in (ideal, k3))

    def one(b: SessionBill, cache: CacheModel, assumption: str) -> QuoteTurn:
        t = b.turns[0]
        return QuoteTurn(
            cache=cache.label,
            assumption=assumption,
            hit_tokens=t.hit_tokens,
            miss_tokens=t.miss_tokens,
            input_cost=t.hit_cost + t.miss_cost,
            total=t.total,
        )

    first = [
        one(miss, none, "cache miss: every input token at the miss price"),
        one(hit, ideal, "cache hit: the whole prefix hits (the lesson's arithmetic)"),
        one(on_k3, k3, f"on K3: the hit ends on a {k3.block}-token block with a turn-boundary checkpoint"),
    ]
    ratio = (first[0].total / first[1].total).quantize(Decimal("0.1")) if first[1].total else Decimal(0)
    session = [
        QuoteSession(cache=none.label, assumption="all misses", total=miss.summary.total),
        QuoteSession(
            cache=ideal.label,
            assumption="with prefix caching, prefix cached before turn 1",
            total=hit.summary.total,
        ),  # fmt: skip
        QuoteSession(cache=k3.label, assumption="on K3, prefix cached before turn 1", total=on_k3.summary.total),
        QuoteSession(
            cache=ideal.label,
            assumption="with prefix caching, cold start (turn 1 pays in full)",
            total=cold_ideal.summary.total,
        ),  # fmt: skip
        QuoteSession(cache=k3.label, assumption="on K3, cold start", total=cold_k3.summary.total),
    ]
    return Quote(
        prefix_tokens=prefix,
        new_tokens=new,
        output_tokens=output,
        turns=turns,
        model=prices.entry(model)[1].id,
        prices=prices.info([model or prices.default_model]),
        turn=first,
        ratio=ratio,
        session=session,
        saved=miss.summary.total - hit.summary.total,
        hit_rate=hit_rate,
        blended_input_per_mtok=hit_rate * price.input_cache_hit + (1 - hit_rate) * price.input_cache_miss,
    )
