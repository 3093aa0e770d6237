"""The figures a live view shows of a session: its bill so far, and the cache clock.

The clock is the simulator's rule: the cache keeps what a call stored for the cache model's TTL after that call
(`kcost.cache.simulator`: a request more than `ttl` seconds after the one before it finds nothing). So the
prefix stays warm for TTL minus the time since the last logged call. The next turn is priced as the last call's
prompt sent again with its reply (no new input yet): warm, the prompt hits and the reply misses; cold, all of it
misses. Both at the bill's model and rates. `KCOST_NOW` (Unix seconds or an ISO 8601 time) stands for the
clock's "now" in tests; nothing else reads it.
"""

from __future__ import annotations

import json
import os
import time
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from kcost.errors import InputError
from kcost.model.frozen import frozen

if TYPE_CHECKING:
    from collections.abc import Iterable

    from kcost.api.settings import Settings
    from kcost.model.session import Session
    from kcost.results import SessionBill


@frozen
class Figures:
    """A session at a glance: what it cost, its hit rate, and its cache clock."""

    model: str
    total: Decimal
    hit_rate: float
    turns: int
    last_call: float | None  # Unix seconds, where the log gives times
    ttl: float | None  # seconds (None: the cache model keeps everything, or caches nothing)
    caching: bool  # the cache model caches at all
    warm_next: Decimal  # the next turn, sent while the prefix is cached
    cold_next: Decimal  # the same turn, sent after
    last_turn_cost: Decimal
    last_miss: str | None = None  # why the latest call that missed (`missed`) missed: the simulator's reason
    last_miss_at: float | None = None  # when that call was made (Unix seconds), where logged
    recent: tuple[tuple[float, Decimal, int], ...] = ()  # where a window's limit is set: its calls of the last
    # `RECENT_DAYS` of it (time, cost, tokens: input and output), for the usage window it shares with the other
    # sessions (`kcost.live.limits`)

    def plain(self) -> dict[str, object]:
        """The figures but `recent` as JSON values (money as exact decimal strings), for `of` to make back."""
        return {k: str(v) if isinstance(v, Decimal) else v for k, v in self.__dict__.items() if k != "recent"}

    @classmethod
    def of(cls, f: dict[str, Any], recent: tuple[tuple[float, Decimal, int], ...] = ()) -> Figures:
        """The figures `plain` gave, with the calls kept apart (`calls_of`)."""
        return cls(model=f["model"], total=Decimal(f["total"]), hit_rate=f["hit_rate"], turns=f["turns"],
                   last_call=f["last_call"], ttl=f["ttl"], caching=f["caching"], warm_next=Decimal(f["warm_next"]),
                   cold_next=Decimal(f["cold_next"]), last_turn_cost=Decimal(f["last_turn_cost"]),
                   last_miss=f.get("last_miss"), last_miss_at=f.get("last_miss_at"), recent=recent)  # fmt: skip

    def left(self, now: float) -> float | None:
        """Seconds the prefix stays cached (0: expired); None where the clock cannot run (no times, no TTL)."""
        if self.last_call is None or self.ttl is None or not self.caching:
            return None
        return min(self.ttl, max(0.0, self.ttl - (now - self.last_call)))


RECENT_DAYS = 7  # the calls a session's figures keep: a week, the longest window a plan meters
MISS_TOKENS = 2_000  # a call missed where this many tokens or more missed for one reason besides what it added
ADDED = ("new-input", "cold")  # what any call misses: no miss of a cache that held it


def missed(parts: Iterable[tuple[str, int]]) -> str | None:
    """Why a call missed (its reason of most tokens, besides new input and a cold start, at least `MISS_TOKENS`),
    from its (reason, tokens) parts; None where it did not."""
    reasons: dict[str, int] = {}
    for reason, tokens in parts:
        if reason not in ADDED:
            reasons[reason] = reasons.get(reason, 0) + tokens
    if not reasons:
        return None
    reason, tokens = max(reasons.items(), key=lambda kv: kv[1])
    return reason if tokens >= MISS_TOKENS else None


def now() -> float:
    """The clock's now: `KCOST_NOW` where a test sets it, else the time."""
    given = os.environ.get("KCOST_NOW", "").strip()
    if not given:
        return time.time()
    from kcost.errors import STRICT
    from kcost.model.calls import timestamp

    when = timestamp(given, field="KCOST_NOW", leniency=STRICT)
    if when is None:
        raise InputError("not a time", field="KCOST_NOW")
    return when


def figures(session: Session, bill: SessionBill, settings: Settings) -> Figures:
    """The bill's figures and the clock of its last call."""
    from kcost import api

    last = bill.turns[-1]
    prices = api.price_table(settings.prices)
    from kcost.billing.bills import pricing_date

    info = settings.cache.info()
    resent = last.input_tokens + last.output_tokens
    model = last.priced_model or bill.model  # the next call's: under `--model logged`, the model the log names last
    price = prices.lookup(model, pricing_date(session, settings.at), prompt=resent)
    from kcost.analysis.overview import call_time
    from kcost.errors import STRICT
    from kcost.model.calls import timestamp

    last_miss, last_miss_at = None, None
    for turn in reversed(bill.turns):
        last_miss = missed((m.reason, m.tokens) for m in turn.misses)
        if last_miss is not None:
            last_miss_at = timestamp(turn.time, field="time", leniency=STRICT) if turn.time else None
            break
    return Figures(
        model=model,
        total=bill.summary.total,
        hit_rate=bill.summary.hit_rate,
        turns=bill.summary.turns,
        last_call=session.span[1],
        ttl=info.ttl_seconds,
        caching=info.name != "none",
        warm_next=price.hit_cost(last.input_tokens) + price.miss_cost(last.output_tokens),
        cold_next=price.miss_cost(resent),
        last_turn_cost=last.total,
        last_miss=last_miss,
        last_miss_at=last_miss_at,
        recent=recent((call_time(t), t.total, t.input_tokens + t.output_tokens) for t in bill.turns)
        if settings.window.limit is not None else (),
    )


def recent(calls: Iterable[tuple[float | None, Decimal, int]]) -> tuple[tuple[float, Decimal, int], ...]:
    """The calls of a logged time within `RECENT_DAYS` of the last, in time order."""
    timed = sorted(((at, cost, tokens) for at, cost, tokens in calls if at is not None), key=lambda c: c[0])
    if not timed:
        return ()
    since = timed[-1][0] - RECENT_DAYS * 86_400
    return tuple(c for c in timed if c[0] >= since)


def calls_text(calls: tuple[tuple[float, Decimal, int], ...]) -> bytes:
    """`Figures.recent` as kept: JSON, money as exact decimal strings."""
    return json.dumps([[at, str(cost), tokens] for at, cost, tokens in calls]).encode()


def calls_of(text: bytes) -> tuple[tuple[float, Decimal, int], ...]:
    """The calls `calls_text` kept (ValueError, TypeError or ArithmeticError where they are not such)."""
    return tuple((float(at), Decimal(cost), int(tokens)) for at, cost, tokens in json.loads(text))


def duration(seconds: float) -> str:
    """`4m05s`, `59s`, `1h02m`, `3d`: a countdown's width stays small."""
    s = int(seconds)
    if s >= 172_800:
        return f"{s // 86_400}d"
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"
