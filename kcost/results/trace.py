"""What `kcost trace` reports: capacity curves, a failure's cost and spread, and time to first token. Plain
dataclasses, written without pydantic (as the bill is); `kcost schema trace` describes them."""

from __future__ import annotations

from typing import Annotated, Literal

from kcost.model.frozen import frozen
from kcost.model.k3 import HASH_BLOCK, PAGE_BYTES
from kcost.results.common import CLOSED, CacheInfo, Doc, Money, PriceInfo
from kcost.version import __version__

TOKENS_PER_PAGE = HASH_BLOCK  # one page holds one hash block of KV


@frozen(slots=True, kw_only=True)
class CurvePoint:
    __pydantic_config__ = CLOSED
    cache: Annotated[str, Doc("The cache model's label.")]
    capacity: Annotated[str, Doc("The --capacity text: KV tokens, bytes, or inf.")]
    capacity_pages: Annotated[int | None, Doc(f"Pages of {PAGE_BYTES:,} bytes (one 512-token block of KV).")]
    requests: int
    input_tokens: int
    hit_tokens: int
    hit_rate: Annotated[float, Doc("hit_tokens / input_tokens, 6 decimals.")]
    output_tokens: int
    evictions: Annotated[int, Doc("Entries evicted for room while still within their TTL.")]
    cost: Money
    uncached_cost: Annotated[Money, Doc("The same requests with every input token a miss.")]


@frozen(slots=True, kw_only=True)
class FailureReport:
    __pydantic_config__ = CLOSED
    failures: list[str]
    cost_without_failure: Money
    cost_with_failure: Money
    extra_cost: Money
    recovery: Annotated[
        dict[str, dict[str, float | int]],
        Doc("Per secondary placement (consistent, successor): clusters that took recovery load, and the most and "
            "the mean recovery misses over every cluster that stayed up, and their ratio."),
    ]  # fmt: skip


@frozen(slots=True, kw_only=True)
class ClassTimes:
    __pydantic_config__ = CLOSED
    requests: int
    p50_seconds: Annotated[float, Doc("Nearest-rank median, to the millisecond.")]
    p99_seconds: Annotated[float, Doc("Nearest-rank 99th percentile, to the millisecond.")]


@frozen(slots=True, kw_only=True)
class TrafficReport:
    __pydantic_config__ = CLOSED
    prefill_tokens_per_second: float
    long_from_tokens: int
    long_share: float | None
    without_budget: dict[str, ClassTimes]
    with_budget: dict[str, ClassTimes] | None


@frozen(slots=True, kw_only=True)
class TraceReport:
    """`kcost trace --format json`."""

    __pydantic_config__ = {**CLOSED, "title": "kcost trace"}
    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    trace: str
    engine: Annotated[str, Doc("The replay engine that ran: compiled (the C core) or python.")]
    prices: PriceInfo
    caches: list[CacheInfo]
    clusters: int
    curve: list[CurvePoint]
    failure: FailureReport | None
    traffic: TrafficReport
