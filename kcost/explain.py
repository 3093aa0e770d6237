"""Why a session's misses cost what they cost: every turn whose avoidable misses cost money, with the cause,
then the causes ranked by dollars, each with a fix a user can apply.

New input is not a cause: every cache misses it. For transcripts, a prefix change is named by what changed
(the system prompt, the tool list, message k, reasoning not passed back), from the reader's comparison of
each prompt with the one before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from kcost.cache import CacheModel, Kind, Reason
from kcost.cache.model import HOUR_WRITES
from kcost.causes import BY_REASON, FIXES, Cause
from kcost.results import SessionBill
from kcost.results.explain import Cause as CauseCost
from kcost.results.explain import Explanation, HourWrites, Ranked, TurnCauses
from kcost.session import Session


@dataclass
class _Total:
    turns: set[int] = field(default_factory=set)
    tokens: int = 0
    cost: Decimal = Decimal(0)


def hour_writes(
    bill: SessionBill, session: Session, cache: CacheModel, rebill: Callable[[CacheModel], SessionBill]
) -> HourWrites | None:
    """The session under the same cache with 1-hour writes (`rebill` bills it under another cache model), and
    the idle gaps that decide whether the hour pays: None where the cache already keeps entries an hour, caches
    nothing, or the bill is the log's reported usage (nothing to simulate again)."""
    if cache.kind is Kind.NONE or cache.ttl is None or cache.hour_writes or bill.usage == "reported":
        return None
    other = replace(cache, ttl=HOUR_WRITES)
    again = rebill(other)
    times = [r.time for r in session.requests]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if cache.ttl < b - a <= HOUR_WRITES]
    return HourWrites(
        cache=other.label,
        total=again.summary.total,
        difference=again.summary.total - bill.summary.total,
        idle_gaps=len(gaps),
        shortest_gap_minutes=round(min(gaps) / 60, 1) if gaps else None,
        longest_gap_minutes=round(max(gaps) / 60, 1) if gaps else None,
    )


def explain(bill: SessionBill, session: Session, cache: str, hour: HourWrites | None = None) -> Explanation:
    turns: list[TurnCauses] = []
    totals: dict[Cause, _Total] = {}
    new_input = Decimal(0)
    for t in bill.turns:
        causes = []
        for m in t.misses:
            reason = Reason(m.reason)
            if reason is Reason.NEW_INPUT:
                new_input += m.cost
                continue
            cause, detail = _cause(reason, m.at, m.tokens, session, t.turn)
            causes.append(CauseCost(cause=cause.value, detail=detail, tokens=m.tokens, cost=m.cost))
            total = totals.setdefault(cause, _Total())
            total.turns.add(t.turn)
            total.tokens += m.tokens
            total.cost += m.cost
        if causes:
            turns.append(TurnCauses(turn=t.turn, cost=sum((c.cost for c in causes), Decimal(0)), causes=causes))
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1].cost, kv[0].value))
    return Explanation(
        session=bill.name,
        source=bill.source,
        cache=cache,
        total=bill.summary.total,
        new_input_cost=new_input,
        avoidable=sum((t.cost for t in turns), Decimal(0)),
        turns=turns,
        ranked=[
            Ranked(cause=cause.value, turns=len(t.turns), tokens=t.tokens, cost=t.cost, fix=FIXES[cause])
            for cause, t in ranked
        ],
        hour_writes=hour,
    )


def rank_together(rankings: Iterable[Sequence[Ranked]]) -> list[Ranked]:
    """Several sessions' causes as one ranking, by cost (turns count per session)."""
    totals: dict[str, Ranked] = {}
    for ranking in rankings:
        for r in ranking:
            seen = totals.get(r.cause)
            totals[r.cause] = (
                r
                if seen is None
                else replace(seen, turns=seen.turns + r.turns, tokens=seen.tokens + r.tokens, cost=seen.cost + r.cost)
            )
    return sorted(totals.values(), key=lambda r: (-r.cost, r.cause))


def _cause(reason: Reason, at: int, tokens: int, session: Session, turn: int) -> tuple[Cause, str]:
    """The cause of a miss and what exactly: a prefix change by how the reader found the prompt changed."""
    if reason is not Reason.PREFIX_CHANGED:
        return BY_REASON[reason], f"tokens {at:,} to {at + tokens:,}"
    records = session.records
    change = records[turn - 1].change if turn - 1 < len(records) else None
    if change is None:
        return Cause.PROMPT_CHANGED, f"the prompt differs from what was cached from token {at:,}"
    return change.cause, f"{change.detail}, from token {at:,}"
