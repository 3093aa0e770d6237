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


Explanations = list[Explanation]  # `kcost explain --format json`: one per session
