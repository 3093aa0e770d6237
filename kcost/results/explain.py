"""What `kcost explain` reports: each session's avoidable misses by turn and by cause, in dollars, with fixes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from kcost.results.common import Money


class Cause(BaseModel):
    model_config = ConfigDict(frozen=True)

    cause: str
    detail: str = Field(description="What exactly, where known (which message, at which token).")
    tokens: int
    cost: Money


class TurnCauses(BaseModel):
    model_config = ConfigDict(frozen=True)

    turn: int
    cost: Money = Field(description="What this turn's avoidable misses cost.")
    causes: list[Cause]


class HourWrites(BaseModel):
    """The same session billed again with 1-hour cache writes: entries live an hour, writes cost the 1-hour
    rate. Positive `difference`: the hour costs more than it saves."""

    model_config = ConfigDict(frozen=True)

    cache: str = Field(description="The cache model of the second simulation.")
    total: Money = Field(description="What the session would cost with 1-hour writes.")
    difference: Money = Field(description="total minus this session's total: negative is a saving.")
    idle_gaps: int = Field(description="Gaps between requests longer than this cache's TTL and at most an hour.")
    shortest_gap_minutes: float | None
    longest_gap_minutes: float | None


class Ranked(BaseModel):
    model_config = ConfigDict(frozen=True)

    cause: str
    turns: int
    tokens: int
    cost: Money
    fix: str


class Explanation(BaseModel):
    """`kcost explain --format json`, one per session."""

    model_config = ConfigDict(frozen=True, title="kcost explain")

    session: str
    source: str
    cache: str
    total: Money
    new_input_cost: Money = Field(description="What the new input cost: a miss under any cache, not a cause.")
    avoidable: Money = Field(description="What all the causes below cost.")
    turns: list[TurnCauses]
    ranked: list[Ranked]
    hour_writes: HourWrites | None = Field(
        None, description="With 1-hour cache writes, from a second simulation (where the cache has a shorter TTL)."
    )


Explanations = list[Explanation]  # `kcost explain --format json`: one per session
