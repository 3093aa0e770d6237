"""What `kcost explain` reports: each session's avoidable misses by turn and by cause, in dollars, with fixes.
Plain frozen dataclasses, as the bill is; and several sessions' explanations summed into one answer (`summarize`,
the arithmetic of the report's own figures, which every human format of several sessions leads with)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from decimal import Decimal, localcontext
from typing import Annotated

from kcost.model.bounds import PRECISION
from kcost.model.frozen import frozen
from kcost.results.common import Doc, Money


@frozen(slots=True, kw_only=True)
class Cause:
    cause: str
    detail: Annotated[str, Doc("What exactly, where known (which message, at which token).")]
    tokens: int
    cost: Money


@frozen(slots=True, kw_only=True)
class TurnCauses:
    turn: int
    cost: Annotated[Money, Doc("What this turn's avoidable misses cost.")]
    causes: list[Cause]


@frozen(slots=True, kw_only=True)
class HourWrites:
    """The same session billed again with 1-hour cache writes: entries live an hour, writes cost the 1-hour
    rate. Positive `difference`: the hour costs more than it saves."""

    cache: Annotated[str, Doc("The cache model of the second simulation.")]
    total: Annotated[Money, Doc("What the session would cost with 1-hour writes.")]
    difference: Annotated[Money, Doc("total minus this session's total: negative is a saving.")]
    idle_gaps: Annotated[int, Doc("Gaps between requests longer than this cache's TTL and at most an hour.")]
    shortest_gap_minutes: float | None
    longest_gap_minutes: float | None


@frozen(slots=True, kw_only=True)
class Ranked:
    cause: str
    turns: int
    tokens: int
    cost: Money
    fix: str


@frozen(slots=True, kw_only=True)
class Way:
    """One way a fix can go (the idle gaps: keep-alive calls or 1-hour writes), billed."""

    way: str
    total: Annotated[Money, Doc("The session billed with the fix made this way.")]
    saving: Annotated[Money, Doc("This session's total minus that: negative, it costs more.")]


@frozen(slots=True, kw_only=True)
class FixSaving:
    """One fix, priced by billing the session again with it applied, under the same cache model and prices."""

    fix: Annotated[str, Doc("The fix's name: stable-prefix, pass-reasoning, append, compaction, idle, one-model.")]
    change: Annotated[str, Doc("What to change.")]
    causes: Annotated[list[str], Doc("The causes of misses it removes.")]
    turns: Annotated[list[int], Doc("The turns it changes.")]
    misses: Annotated[Money, Doc("What the misses of those causes cost in this bill.")]
    total: Annotated[Money, Doc("The session billed again with this fix alone (the cheaper way, where it has two).")]
    saving: Annotated[Money, Doc("This session's total minus that, up to what the misses of its causes cost (a miss "
                                 "two changes cause together is the later one's): what the fix alone saves.")]
    way: Annotated[str | None, Doc("The way it was priced, where it has several.")] = None
    ways: list[Way] | None = None


@frozen(slots=True, kw_only=True)
class Explanation:
    """`kcost explain --format json`, one per session."""

    __pydantic_config__ = {"title": "kcost explain"}
    session: str
    source: str
    cache: str
    total: Money
    new_input_cost: Annotated[Money, Doc("What the new input cost: a miss under any cache, not a cause.")]
    avoidable: Annotated[
        Money,
        Doc(
            "What every fix that saves, applied together, saves: total minus fixed_total "
            "(not the sum of the fixes' savings; no unavoidable cause is in it)."
        ),
    ]
    fixed_total: Annotated[Money, Doc("The session billed again with every fix that saves applied together.")]
    floor: Annotated[Money, Doc("That session under the ideal cache model, its writes free: what no cache could "
                                "beat.")]
    fixes: Annotated[list[FixSaving], Doc("The fixes, by dollars saved (a fix that saves nothing is listed last).")]
    unavoidable: Annotated[list[Ranked], Doc("The causes no fix on the client removes, by cost.")]
    unpriced: Annotated[str | None, Doc("Why no fix could be priced, where none could.")] = None
    turns: Annotated[list[TurnCauses], Doc("Every turn's misses by cause (the detail behind the fixes).")]
    ranked: Annotated[list[Ranked], Doc("Every cause of misses by cost.")]
    hour_writes: Annotated[
        HourWrites | None,
        Doc("With 1-hour cache writes, from a second simulation (where the cache has a shorter TTL)."),
    ] = None


Explanations = list[Explanation]  # `kcost explain --format json`: one per session


@frozen(slots=True, kw_only=True)
class SessionSaving:
    """What one fix saves in one session (its `FixSaving.saving`)."""

    session: str
    source: str
    saving: Money
    turns: Annotated[list[int], Doc("The turns it changes in that session.")]


@frozen(slots=True, kw_only=True)
class FixAcross:
    """One fix over several sessions: each session where it saves, and the sum of what it saves there."""

    fix: str
    change: Annotated[str, Doc("What to change (as the session where it saves most words it).")]
    saving: Annotated[Money, Doc("The sum of what it saves in each session, each billed again on its own.")]
    sessions: Annotated[list[SessionSaving], Doc("The sessions where it saves, by dollars saved.")]


@frozen(slots=True, kw_only=True)
class ExplainSummary:
    """Several sessions' explanations as one answer: the fixes ranked across them by dollars saved (what the
    human formats of `kcost explain` lead with; every figure a sum of the explanations' own)."""

    sessions: int
    caches: Annotated[list[str], Doc("The cache models the sessions were explained under, each once.")]
    total: Money
    avoidable: Annotated[Money, Doc("The sum of the sessions' `avoidable`: each with every fix that saves in it.")]
    fixed_total: Annotated[Money, Doc("The sum of the sessions' `fixed_total`.")]
    new_input_cost: Annotated[Money, Doc("The sum of the sessions' `new_input_cost`: a miss under any cache.")]
    fixes: Annotated[list[FixAcross], Doc("The fixes that save in some session, by dollars saved.")]
    unavoidable: Annotated[list[Ranked], Doc("The causes no fix on the client removes, summed, by cost.")]
    ranked: Annotated[list[Ranked], Doc("Every cause of misses, summed, by cost.")]
    to_fix: Annotated[int, Doc("The sessions where some fix saves.")]
    nothing_to_fix: Annotated[int, Doc("The sessions where no priced fix saves.")]
    nothing_total: Annotated[Money, Doc("What those sessions cost together.")]
    unpriced: Annotated[int, Doc("The sessions whose fixes could not be priced (billed as their logs report).")]
    unpriced_total: Annotated[Money, Doc("What those sessions cost together.")]


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


def summarize(items: Sequence[Explanation]) -> ExplainSummary:
    """Several sessions' explanations as one: each fix that saves somewhere, with the sessions where it saves and
    the sum of what it saves there, by dollars saved; the unavoidable causes summed (`rank_together`); the
    sessions with nothing to fix and those whose fixes could not be priced, counted."""
    with localcontext() as exact:
        exact.prec = PRECISION  # sums of exact amounts stay exact
        return _summed(items)


def _summed(items: Sequence[Explanation]) -> ExplainSummary:
    across: dict[str, list[tuple[FixSaving, Explanation]]] = {}
    for e in items:
        for f in e.fixes:
            if f.saving > 0:
                across.setdefault(f.fix, []).append((f, e))
    ranked_fixes = []
    for name, found in across.items():
        found.sort(key=lambda p: -p[0].saving)  # stable: sessions that save as much stay in their order
        ranked_fixes.append(FixAcross(
            fix=name,
            change=found[0][0].change,
            saving=sum((f.saving for f, _ in found), Decimal(0)),
            sessions=[SessionSaving(session=e.session, source=e.source, saving=f.saving, turns=list(f.turns))
                      for f, e in found],
        ))  # fmt: skip
    unpriced = [e for e in items if e.unpriced is not None]
    nothing = [e for e in items if e.unpriced is None and not any(f.saving > 0 for f in e.fixes)]
    return ExplainSummary(
        sessions=len(items),
        caches=list(dict.fromkeys(e.cache for e in items)),
        total=sum((e.total for e in items), Decimal(0)),
        avoidable=sum((e.avoidable for e in items), Decimal(0)),
        fixed_total=sum((e.fixed_total for e in items), Decimal(0)),
        new_input_cost=sum((e.new_input_cost for e in items), Decimal(0)),
        fixes=sorted(ranked_fixes, key=lambda f: (-f.saving, f.fix)),
        unavoidable=rank_together(e.unavoidable for e in items),
        ranked=rank_together(e.ranked for e in items),
        to_fix=len(items) - len(unpriced) - len(nothing),
        nothing_to_fix=len(nothing),
        nothing_total=sum((e.total for e in nothing), Decimal(0)),
        unpriced=len(unpriced),
        unpriced_total=sum((e.total for e in unpriced), Decimal(0)),
    )


def dearest_first(items: Sequence[Explanation]) -> list[Explanation]:
    """The sessions by what they cost, the dearest first (those that cost as much in their order)."""
    return sorted(items, key=lambda e: -e.total)
