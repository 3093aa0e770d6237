"""What `kcost trace` reports: capacity curves, a failure's cost and spread, and time to first token."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from kcost import __version__
from kcost.cache.model import PAGE_BYTES
from kcost.results.bill import CacheInfo, Money, PriceInfo


class CurvePoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    cache: str
    capacity: str
    capacity_pages: int | None = Field(description=f"Pages of {PAGE_BYTES:,} bytes (one 512-token block of KV).")
    requests: int
    input_tokens: int
    hit_tokens: int
    hit_rate: float
    output_tokens: int
    evictions: int
    cost: Money
    uncached_cost: Money


class FailureReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    failures: list[str]
    cost_without_failure: Money
    cost_with_failure: Money
    extra_cost: Money
    recovery: dict[str, dict[str, float | int]] = Field(
        description="Per secondary placement (consistent, successor): clusters that took recovery load, and the "
        "most and the mean recovery misses over every cluster that stayed up, and their ratio."
    )


class ClassTimes(BaseModel):
    model_config = ConfigDict(frozen=True)

    requests: int
    p50_seconds: float
    p99_seconds: float


class TrafficReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    prefill_tokens_per_second: float
    long_from_tokens: int
    long_share: float | None
    without_budget: dict[str, ClassTimes]
    with_budget: dict[str, ClassTimes] | None


class TraceReport(BaseModel):
    """`kcost trace --format json`."""

    model_config = ConfigDict(frozen=True, title="kcost trace")

    schema_version: int = 1
    generator: str = f"kcost {__version__}"
    trace: str
    engine: str = Field(description="The replay engine that ran: compiled (the C core) or python.")
    prices: PriceInfo
    caches: list[CacheInfo]
    clusters: int
    curve: list[CurvePoint]
    failure: FailureReport | None
    traffic: TrafficReport
