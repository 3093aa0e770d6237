"""What `kcost selfhost` reports: the memory floor and the accelerators that hold it, the fleet's throughput, its
monthly cost beside the API bill, the break-even volume, and every figure used with its source and date. Plain
dataclasses, written without pydantic (as the bill is); `kcost schema selfhost` describes them."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from kcost.model.frozen import frozen
from kcost.results.common import CLOSED, Doc, Money
from kcost.version import __version__


@frozen(slots=True, kw_only=True)
class FigureUsed:
    __pydantic_config__ = CLOSED
    key: Annotated[str, Doc("The figure's name, as --set KEY=VALUE and the config's [selfhost] table take it.")]
    value: Annotated[Decimal, Doc("Its value, as written in the data file or given.")]
    unit: str
    source: Annotated[str, Doc("Where it comes from: a page, a paper, the seed lesson, or 'given for this run'.")]
    date: Annotated[str | None, Doc("The date of its source (ISO 8601); null for a value given for this run.")]
    estimate: Annotated[bool, Doc("true: not confirmed from a primary source (a survey, a derivation, a guess).")]
    overridden: Annotated[bool, Doc("true: given for this run, in place of the shipped figure.")]


@frozen(slots=True, kw_only=True)
class Workload:
    __pydantic_config__ = CLOSED
    kind: Literal["sessions", "trace"]
    source: str
    units: Annotated[int, Doc("Sessions, or requests of a trace.")]
    cache: Annotated[str, Doc("The cache model both sides are simulated under (the API's and the fleet's).")]
    input_tokens: int
    hit_tokens: Annotated[int, Doc("Input tokens the prefix cache serves: billed at the hit rate, no prefill.")]
    miss_tokens: Annotated[int, Doc("Input tokens prefilled.")]
    output_tokens: int
    api_cost: Annotated[Money, Doc("The API bill: `kcost bill` (sessions) or `kcost trace` (a trace) of it.")]
    span_seconds: Annotated[float | None, Doc("First to last logged call; null where the calls are not timed.")]
    monthly_tokens: Annotated[Decimal | None, Doc("Its tokens a month at its logged pace; null without a span.")]
    concurrent_contexts: int
    context_tokens: Annotated[int, Doc("The tokens of one concurrent context (its KV).")]
    concurrency_from: Annotated[str, Doc("How the concurrent contexts were found (or 'given').")]


@frozen(slots=True, kw_only=True)
class Holding:
    __pydantic_config__ = CLOSED
    accelerator: str
    name: str
    memory_gb: Decimal
    domain: Annotated[int, Doc("Accelerators in one interconnect (NVLink) domain.")]
    least: Annotated[int, Doc("The fewest whose memory holds the floor.")]
    recommended: Annotated[int, Doc("The supernode: at least the model's recommended size, in whole domains.")]


@frozen(slots=True, kw_only=True)
class MemoryFloor:
    __pydantic_config__ = CLOSED
    bits_per_weight: Annotated[Decimal, Doc("Element bits + scale bits / scale block (MXFP4: 4.25).")]
    weights_bytes: Decimal
    state_bytes: Annotated[Decimal, Doc("KV and KDA state of the concurrent contexts.")]
    floor_bytes: Decimal
    by_accelerator: Annotated[list[Holding], Doc("The same floor on every catalogued accelerator.")]


@frozen(slots=True, kw_only=True)
class Fleet:
    __pydantic_config__ = CLOSED
    accelerator: str
    accelerators: Annotated[int, Doc("In the fleet's floor: the recommended supernode, unless given.")]
    deployment: Annotated[str, Doc("The published deployment the throughput is scaled from.")]
    prefill_tokens_per_second: Annotated[Decimal, Doc("Computed (missed) input tokens a second, an accelerator.")]
    decode_tokens_per_second: Annotated[Decimal, Doc("Output tokens a second, an accelerator.")]
    pricing: Literal["reserved", "on-demand"]
    hourly: Annotated[Money, Doc("USD an accelerator-hour the fleet is costed at.")]
    hourly_low: Money
    hourly_high: Money
    utilization: Decimal
    monthly_floor: Annotated[Money, Doc("The fleet's floor all month: accelerators x hourly x hours a month.")]
    floor_capacity_tokens: Annotated[Decimal, Doc("Tokens a month the floor serves at the utilisation.")]


@frozen(slots=True, kw_only=True)
class CostPoint:
    __pydantic_config__ = CLOSED
    monthly_tokens: Decimal
    api: Money
    fleet: Money


@frozen(slots=True, kw_only=True)
class SelfhostReport:
    """`kcost selfhost --format json`."""

    __pydantic_config__ = {**CLOSED, "title": "kcost selfhost"}
    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    model: str
    model_name: str
    weights_open: str
    workload: Workload
    memory: MemoryFloor
    fleet: Fleet
    api_per_mtok: Annotated[Money, Doc("The workload's API bill per million tokens (input + output).")]
    fleet_per_mtok: Annotated[Money, Doc("The fleet's cost per million tokens past its floor (10 decimals).")]
    break_even_tokens: Annotated[
        Decimal | None, Doc("Tokens a month past which the fleet costs less than the API; null: never.")
    ]
    break_even_cost: Annotated[Money | None, Doc("Both lines' monthly cost at the break-even volume.")]
    workload_monthly_api: Annotated[Money | None, Doc("The API bill of a month at the workload's logged pace.")]
    workload_monthly_fleet: Annotated[Money | None, Doc("The fleet's cost of the same month.")]
    curve: list[CostPoint]
    figures: Annotated[list[FigureUsed], Doc("Every figure used, with its source and date.")]
    estimates: Annotated[list[str], Doc("The keys of the figures that are estimates.")]
    notes: list[str]
