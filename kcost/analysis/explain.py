"""Why a session's misses cost what they cost, answered in dollars a user can save: the fixes (`kcost.analysis.fixes`),
each priced by billing the session again with it applied, ranked by what they save; "avoidable" is what all of
them together save, billed once more with every one applied (not the sum: fixes overlap). The causes no fix on
the client removes (the cold start, block granularity, outputs the API does not cache) are summed apart, and
every turn's misses by cause stay in the report as the detail behind the answer.

New input is not a cause: every cache misses it. For transcripts, a prefix change is named by what changed
(the system prompt, the tool list, message k, reasoning not passed back), from the reader's comparison of
each prompt with the one before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal, localcontext

from kcost.analysis import fixes
from kcost.cache.model import HOUR_WRITES, CacheModel, Kind
from kcost.model.bounds import PRECISION
from kcost.model.causes import BY_REASON, FIXES, Cause
from kcost.model.frozen import frozen
from kcost.model.requests import Reason
from kcost.model.session import Session
from kcost.results import SessionBill, TurnBill
from kcost.results.explain import Cause as CauseCost
from kcost.results.explain import Explanation, FixSaving, HourWrites, Ranked, TurnCauses, Way
from kcost.results.explain import rank_together as rank_together  # kcost.api.check ranks causes with it

Rebill = Callable[[Session, CacheModel], SessionBill]  # a session billed again, same prices and settings


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


@frozen
class _Misses:
    turns: list[TurnCauses]
    totals: dict[Cause, _Total]
    ranked: list[Ranked]
    new_input: Decimal


def _misses(bill: SessionBill, session: Session) -> _Misses:
    """Every turn's misses by cause, and the causes by cost."""
    turns: list[TurnCauses] = []
    totals: dict[Cause, _Total] = {}
    new_input = Decimal(0)
    head = _head(session)
    for t in bill.turns:
        causes = []
        for reason, at, tokens, cost in _parts(t, session, head):
            if reason is Reason.NEW_INPUT:
                new_input += cost
                continue
            if isinstance(reason, Reason):
                cause, detail = _cause(reason, at, tokens, session, t.turn)
            else:  # the head sent again after a compaction cut into it
                cause, detail = Cause.CUT_SHORT, f"the head sent again after a compaction, from token {at:,}"
            causes.append(CauseCost(cause=cause.value, detail=detail, tokens=tokens, cost=cost))
            total = totals.setdefault(cause, _Total())
            total.turns.add(t.turn)
            total.tokens += tokens
            total.cost += cost
        if causes:
            turns.append(TurnCauses(turn=t.turn, cost=sum((c.cost for c in causes), Decimal(0)), causes=causes))
    ranked = [
        Ranked(cause=cause.value, turns=len(t.turns), tokens=t.tokens, cost=t.cost, fix=FIXES[cause])
        for cause, t in sorted(totals.items(), key=lambda kv: (-kv[1].cost, kv[0].value))
    ]
    return _Misses(turns, totals, ranked, new_input)


_COMPACTED = "compacted"  # new input that sends the session's head again after a compaction cut into it


def _head(session: Session) -> int:
    """Where the first call's newest turn starts: what it carries before it (the system prompt and tools)."""
    first = next((r.request for r in session.records if r.request is not None), None)
    return first.turn_start if first is not None else 0


def _parts(turn: TurnBill, session: Session, head: int) -> Iterator[tuple[Reason | str, int, int, Decimal]]:
    """A turn's misses (reason, first token, tokens, cost with their write premium): where a compaction cut into
    the session's head, the new input that sends the head again is the compaction's (`_COMPACTED`), as the
    `compaction` fix keeps it."""
    record = session.records[turn.turn - 1] if turn.turn - 1 < len(session.records) else None
    cut = record is not None and record.change is not None and record.change.cause is Cause.CUT_SHORT
    for m in turn.misses:
        reason = Reason(m.reason)
        if cut and reason is Reason.NEW_INPUT and m.at < head:
            again, rest = min(m.at + m.tokens, head) - m.at, max(0, m.at + m.tokens - head)
            with localcontext() as exact:
                exact.prec = PRECISION
                rate = m.cost / m.tokens  # the miss rate: exact, as the cost is tokens x rate
                split = [(_COMPACTED, m.at, again, again * rate + _premium(turn, m.at, again)),
                         (reason, head, rest, rest * rate + _premium(turn, head, rest))]  # fmt: skip
            yield from (part for part in split if part[2])
            continue
        yield reason, m.at, m.tokens, m.cost + _premium(turn, m.at, m.tokens)


def _premium(turn: TurnBill, at: int, tokens: int) -> Decimal:
    """The write premium a turn paid for its missed tokens `at` to `at + tokens`: those of them it stored (the
    stored tokens run on from its hits), each at the premium the turn paid a stored token."""
    if not turn.write_premium or not turn.written_tokens:
        return Decimal(0)
    start = turn.hit_tokens
    stored = max(0, min(at + tokens, start + turn.written_tokens) - max(at, start))
    with localcontext() as exact:
        exact.prec = PRECISION
        return turn.write_premium * stored / turn.written_tokens


def ranked_causes(bill: SessionBill, session: Session) -> list[Ranked]:
    """The causes of a session's misses by cost (what `kcost check` ranks; no fix priced)."""
    return _misses(bill, session).ranked


def explain(bill: SessionBill, session: Session, cache: CacheModel, rebill: Rebill,
            hour: HourWrites | None = None) -> Explanation:  # fmt: skip
    """The session's misses by cause, and its fixes priced by re-simulation (`rebill`)."""
    misses = _misses(bill, session)
    turns, totals, ranked, new_input = misses.turns, misses.totals, misses.ranked, misses.new_input
    unpriced = _unpriced(bill, session)
    priced = [] if unpriced else _priced(bill, session, cache, rebill, totals)
    together = _together(bill, session, cache, rebill, priced)
    floor_cache = CacheModel(Kind.IDEAL, ttl=together.cache.ttl, output=together.cache.output)
    floor = rebill(together.session, floor_cache).summary  # its writes free: ideal stores all, hits all
    return Explanation(
        session=bill.name,
        source=bill.source,
        cache=cache.label,
        total=bill.summary.total,
        new_input_cost=new_input,
        avoidable=bill.summary.total - together.total,
        fixed_total=together.total,
        floor=floor.total - floor.write_premium,
        fixes=sorted(priced, key=lambda f: (-f.saving, f.fix)),
        unavoidable=[r for r in ranked if Cause(r.cause) not in fixes.FIXABLE],
        unpriced=unpriced,
        turns=turns,
        ranked=ranked,
        hour_writes=hour,
    )


@frozen
class _Together:
    session: Session
    cache: CacheModel
    total: Decimal


def _unpriced(bill: SessionBill, session: Session) -> str | None:
    if bill.usage == "reported" or not session.requests:
        return (
            "billed as the log reports: fixes are priced on simulated usage (--usage auto or simulated, on a "
            "log that holds its prompts)"
        )
    return None


def _priced(bill: SessionBill, session: Session, cache: CacheModel, rebill: Rebill,
            totals: dict[Cause, _Total]) -> list[FixSaving]:  # fmt: skip
    """Every fix that applies, billed alone (the idle gaps both ways, the cheaper one kept)."""
    out = []
    named = set(totals) | {r.change.cause for r in session.records if r.change is not None}
    for fix in fixes.applicable(session, cache, totals):
        misses = sum((totals[c].cost for c in fix.causes if c in totals), Decimal(0))
        if not misses:
            continue  # its causes cost nothing here: there is nothing for it to save
        ways = fixes.idle_ways(session, cache) if fix.name == "idle" else [""]
        plans = [(way, fixes.plan(session, cache, [fix.name], idle=way or "keep-alive")) for way in ways]
        if not plans[0][1].turns:
            continue  # it changes no call here (a compaction already behind the system prompt)
        billed = [(rebill(plan.session, plan.cache).summary.total, way, plan) for way, plan in plans]
        total, way, plan = min(billed, key=lambda b: b[0])
        out.append(FixSaving(
            fix=fix.name,
            change=_change(fix, way),
            causes=sorted(c.value for c in fix.causes if c in named),
            turns=list(plan.turns),
            misses=misses,
            total=total,
            saving=min(bill.summary.total - total, misses),
            way=way or None,
            ways=[Way(way=w, total=t, saving=min(bill.summary.total - t, misses)) for t, w, _ in billed]
            if way else None,
        ))  # fmt: skip
    return out


def _change(fix: fixes.Fix, way: str) -> str:
    if way == "keep-alive":
        return f"{fix.change}, or send a keep-alive call before the cache's TTL lapses"
    if way:
        return f"{fix.change}, or write to the cache for an hour"
    return fix.change


def _together(bill: SessionBill, session: Session, cache: CacheModel, rebill: Rebill,
              priced: list[FixSaving]) -> _Together:  # fmt: skip
    """The session with every fix that saves applied at once, billed (the bill itself where none saves); where the
    fixes together save less than one of them alone (one makes what another saves dearer: reasoning passed back
    lengthens every keep-alive call), that one alone."""
    saving = [f for f in priced if f.saving > 0]
    if not saving:
        return _Together(session, cache, bill.summary.total)
    way = next((f.way for f in saving if f.way), None) or "keep-alive"
    plan = fixes.plan(session, cache, [f.fix for f in saving], idle=way)
    together = _Together(plan.session, plan.cache, rebill(plan.session, plan.cache).summary.total)
    best = min(saving, key=lambda f: f.total)
    if len(saving) == 1 or best.total >= together.total:
        return together
    alone = fixes.plan(session, cache, [best.fix], idle=best.way or "keep-alive")
    return _Together(alone.session, alone.cache, best.total)


def _cause(reason: Reason, at: int, tokens: int, session: Session, turn: int) -> tuple[Cause, str]:
    """The cause of a miss and what exactly: a prefix change by how the reader found the prompt changed, a model
    switch by the models."""
    records = session.records
    if reason is Reason.MODEL_SWITCH and turn - 1 < len(records):
        now = records[turn - 1].model
        before = next((r.model for r in reversed(records[: turn - 1]) if r.model and r.model != now), None)
        if now and before:
            return BY_REASON[reason], f"on {now} after {before}, tokens {at:,} to {at + tokens:,}"
    if reason is not Reason.PREFIX_CHANGED:
        return BY_REASON[reason], f"tokens {at:,} to {at + tokens:,}"
    change = records[turn - 1].change if turn - 1 < len(records) else None
    if change is None:
        return Cause.PROMPT_CHANGED, f"the prompt differs from what was cached from token {at:,}"
    return change.cause, f"{change.detail}, from token {at:,}"
