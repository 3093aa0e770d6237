"""What `kcost explain` reports: each session's avoidable misses by turn and by cause, in dollars, with fixes.
Plain frozen dataclasses, as the bill is."""

from __future__ import annotations

from typing import Annotated

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
