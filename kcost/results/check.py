"""What `kcost check` and `kcost diff` report: each budget held against a session, and two bills side by side."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kcost import __version__
from kcost.budgets import Budgets
from kcost.results.bill import Summary
from kcost.results.common import CacheInfo, Money, PriceInfo

TOTAL = "(all sessions)"


class Result(BaseModel):
    """One budget, held against one session (or the total)."""

    model_config = ConfigDict(frozen=True)

    session: str = Field(description=f"The session's name, or {TOTAL!r}.")
    source: str | None = Field(description="The session's file, for annotations.")
    budget: str = Field(description="The budget's name, as in the config file.")
    limit: Decimal
    value: Decimal = Field(description="What was measured (rounded to 10 decimals where it is a ratio).")
    passed: bool
    message: str


class CheckReport(BaseModel):
    """`kcost check --format json`."""

    model_config = ConfigDict(frozen=True, title="kcost check")

    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    prices: PriceInfo
    cache: CacheInfo
    budgets: Budgets
    baseline: str | None = Field(description="The bill compared with, if any.")
    passed: bool
    failures: int
    results: list[Result] = Field(description="Failures first, then passes, each in session order.")
    total: Summary


class Side(BaseModel):
    model_config = ConfigDict(frozen=True)

    total: Money
    hit_rate: float
    blended_input_per_mtok: Money
    turns: int


class SessionDiff(BaseModel):
    model_config = ConfigDict(frozen=True)

    session: str
    source: str
    status: Literal["changed", "unchanged", "new", "removed"]
    before: Side | None
    after: Side | None
    change: Money | None = Field(description="after.total - before.total.")
    change_pct: Decimal | None = Field(description="The change in percent of before.total, 2 decimals.")


class DiffReport(BaseModel):
    """`kcost diff --format json`."""

    model_config = ConfigDict(frozen=True, title="kcost diff")

    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    before: str
    after: str
    cache_before: str
    cache_after: str
    sessions: list[SessionDiff] = Field(description="Changed, new and removed first, by the size of the change.")
    total: SessionDiff
