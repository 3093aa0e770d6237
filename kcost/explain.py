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
from kcost.results import SessionBill
from kcost.results.explain import Cause, Explanation, HourWrites, Ranked, TurnCauses
from kcost.session import Session

FIXES = {
    "cold start": "nothing to fix: a session's first request pays in full (a shared, stable prefix warms it)",
    "idle past the TTL": "keep turns within the cache's lifetime (about 5 minutes), or send a cheap request "
    "before it lapses",
    "previous output not cached": "nothing to fix: the API does not cache outputs; each is paid once as input",
    "system prompt changed": "keep the system prompt stable; put what changes (dates, state) in the latest message",
    "tool list changed": "keep the tool list stable and in a fixed order for the whole session",
    "another agent": "nothing to fix: a sub-agent's calls start from its own system prompt and tools, cached apart",
    "unlogged prefix changed": "keep the system prompt and tool list stable (the log does not hold them: their "
    "logged size changed)",
    "reasoning effort changed": "keep reasoning_effort fixed within a session: K3 renders it into the prompt",
    "reasoning not passed back": "pass reasoning_content back on every assistant message (K3 requires it)",
    "message edited": "append corrections as new messages instead of editing or reordering earlier ones",
    "conversation cut short": "compact or truncate rarely, and only at turn boundaries",
    "prompt changed": "keep everything before the newest turn byte-identical: edits, reorders and stripped "
    "reasoning re-bill all that follows",
    "block granularity": "nothing to fix: K3 caches whole hash blocks (512 tokens)",
    "no checkpoint at the boundary": "resume at turn boundaries: K3 keeps KDA checkpoints only there "
    "(or retain more with k3:every=N)",
    "last token": "nothing to fix: one prompt token is always computed",
    "below the minimum": "nothing to fix: the provider caches no prompt shorter than its minimum (1,024 tokens on "
    "most)",
    "caching off": "nothing to fix under this model: it caches nothing (compare with --cache k3)",
    "reported miss": "the log gives no cause: bill with --usage simulated to see one",
}
_BY_REASON = {
    Reason.COLD.value: "cold start",
    Reason.EXPIRED.value: "idle past the TTL",
    Reason.OUTPUT_NOT_CACHED.value: "previous output not cached",
    Reason.BLOCK_GRANULARITY.value: "block granularity",
    Reason.NO_CHECKPOINT.value: "no checkpoint at the boundary",
    Reason.LAST_TOKEN.value: "last token",
    Reason.BELOW_MINIMUM.value: "below the minimum",
    Reason.REPORTED.value: "reported miss",
    Reason.CACHING_OFF.value: "caching off",
}


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
    totals: dict[str, _Total] = {}
    new_input = Decimal(0)
    for t in bill.turns:
        causes = []
        for m in t.misses:
            if m.reason == Reason.NEW_INPUT.value:
                new_input += m.cost
                continue
            name, detail = _cause(m.reason, m.at, m.tokens, session, t.turn)
            causes.append(Cause(cause=name, detail=detail, tokens=m.tokens, cost=m.cost))
            total = totals.setdefault(name, _Total())
            total.turns.add(t.turn)
            total.tokens += m.tokens
            total.cost += m.cost
        if causes:
            turns.append(TurnCauses(turn=t.turn, cost=sum((c.cost for c in causes), Decimal(0)), causes=causes))
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1].cost, kv[0]))
    return Explanation(
        session=bill.name,
        source=bill.source,
        cache=cache,
        total=bill.summary.total,
        new_input_cost=new_input,
        avoidable=sum((t.cost for t in turns), Decimal(0)),
        turns=turns,
        ranked=[
            Ranked(cause=name, turns=len(t.turns), tokens=t.tokens, cost=t.cost, fix=FIXES[name]) for name, t in ranked
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


def _cause(reason: str, at: int, tokens: int, session: Session, turn: int) -> tuple[str, str]:
    if reason != Reason.PREFIX_CHANGED.value:
        return _BY_REASON.get(reason, reason), f"tokens {at:,} to {at + tokens:,}"
    change = session.changes[turn - 1] if turn - 1 < len(session.changes) else None
    if change is None:
        return "prompt changed", f"the prompt differs from what was cached from token {at:,}"
    name, detail = change
    return name, f"{detail}, from token {at:,}"
