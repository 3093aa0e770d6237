"""What `kcost explain` reports: each session's avoidable misses by turn and by cause, in dollars, with fixes.
Plain frozen dataclasses, as the bill is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from kcost.results.common import Doc, Money


@dataclass(frozen=True, slots=True, kw_only=True)
class Cause:
    cause: str
    detail: Annotated[str, Doc("What exactly, where known (which message, at which token).")]
    tokens: int
    cost: Money


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCauses:
    turn: int
    cost: Annotated[Money, Doc("What this turn's avoidable misses cost.")]
    causes: list[Cause]


@dataclass(frozen=True, slots=True, kw_only=True)
class HourWrites:
    """The same session billed again with 1-hour cache writes: entries live an hour, writes cost the 1-hour
    rate. Positive `difference`: the hour costs more than it saves."""

    cache: Annotated[str, Doc("The cache model of the second simulation.")]
    total: Annotated[Money, Doc("What the session would cost with 1-hour writes.")]
    difference: Annotated[Money, Doc("total minus this session's total: negative is a saving.")]
    idle_gaps: Annotated[int, Doc("Gaps between requests longer than this cache's TTL and at most an hour.")]
    shortest_gap_minutes: float | None
    longest_gap_minutes: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ranked:
    cause: str
    turns: int
    tokens: int
    cost: Money
    fix: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Explanation:
    """`kcost explain --format json`, one per session."""

    __pydantic_config__ = {"title": "kcost explain"}
    session: str
    source: str
    cache: str
    total: Money
    new_input_cost: Annotated[Money, Doc("What the new input cost: a miss under any cache, not a cause.")]
    avoidable: Annotated[Money, Doc("What all the causes below cost.")]
    turns: list[TurnCauses]
    ranked: list[Ranked]
    hour_writes: Annotated[
        HourWrites | None,
        Doc("With 1-hour cache writes, from a second simulation (where the cache has a shorter TTL)."),
    ] = None


Explanations = list[Explanation]  # `kcost explain --format json`: one per session
