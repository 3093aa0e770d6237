"""What a bill says: plain frozen dataclasses, written to JSON without pydantic.

The machine-readable path (`kcost bill --format json`, JSONL, CSV) imports neither pydantic nor rich: a bill is
built from these dataclasses and written by `to_data` and orjson. The types still describe themselves to
pydantic, lazily, for what needs a validator or a schema: reading a bill back (`check --baseline`, `diff`),
`kcost schema bill`, and the reports that embed a bill's parts.

Money is `Decimal`, written as an exact decimal string (`"0.1323456"`): never rounded, no exponent, no trailing
zeros. The only rounded figures are ratios: hit rates (6 decimals) and the blended input price per million tokens
(10 decimals, half-even).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from enum import Enum
from typing import Annotated, Any, Literal

import orjson

# ---- money and times ------------------------------------------------------------------------------------------


def money_text(value: Decimal) -> str:
    """Exact decimal string: `1.212`, `60.6`, `0`, never `6E+1`."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


BLENDED_PLACES = Decimal("1E-10")


def blended(cost: Decimal, tokens: int) -> Decimal:
    """USD per million input tokens, to 10 decimals."""
    if tokens == 0:
        return Decimal(0)
    return (cost * 1_000_000 / tokens).quantize(BLENDED_PLACES, rounding=ROUND_HALF_EVEN)


def iso_time(seconds: float | None) -> str | None:
    """Unix seconds as ISO 8601 in UTC, to the millisecond: `2026-02-10T21:11:59.186Z`."""
    if seconds is None:
        return None
    from datetime import datetime, timezone

    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _MoneySchema:
    """How pydantic validates, writes and describes a `Money` field (asked only where pydantic is in use)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.decimal_schema(
            serialization=core_schema.plain_serializer_function_ser_schema(
                money_text, return_schema=core_schema.str_schema(), when_used="json"
            )
        )

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        return {"type": "string", "pattern": r"^-?\d+(\.\d+)?$", "description": "USD, exact decimal"}


class Doc:
    """A field's description, for the JSON Schema."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        found: dict[str, Any] = handler(schema)
        found["description"] = self.text
        return found


Money = Annotated[Decimal, _MoneySchema()]

# ---- the bill -----------------------------------------------------------------------------------------------

_CLOSED = {"extra": "forbid"}  # pydantic's config for these types: an unknown field in a bill read back is an error


@dataclass(frozen=True, slots=True, kw_only=True)
class MissLine:
    __pydantic_config__ = _CLOSED
    reason: Annotated[str, Doc("Why these tokens missed (see README, 'Miss reasons').")]
    tokens: int
    at: Annotated[int, Doc("Position of the first of these tokens in the prompt.")]
    cost: Annotated[Money, Doc("What these tokens cost at the miss price.")]


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """A turn whose log reports usage, beside what the simulator found."""

    __pydantic_config__ = _CLOSED
    reported_input_tokens: int
    reported_cached_tokens: int
    simulated_cached_tokens: int
    agree: Annotated[bool, Doc("The simulator's cached tokens equal the reported ones.")]


@dataclass(frozen=True, slots=True, kw_only=True)
class Agreement:
    __pydantic_config__ = _CLOSED
    turns: Annotated[int, Doc("Turns with both reported and simulated cached tokens.")]
    agree: int
    rate: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnBill:
    __pydantic_config__ = _CLOSED
    turn: Annotated[int, Doc("1-based turn number.")]
    label: str | None
    input_tokens: int
    hit_tokens: int
    miss_tokens: int
    output_tokens: int
    hit_rate: float
    hit_cost: Money
    miss_cost: Money
    output_cost: Money
    total: Money
    cumulative: Money
    reason: Annotated[str, Doc("The costliest cause of this turn's misses, or new-input.")]
    misses: list[MissLine]
    check: Annotated[Check | None, Doc("Reported vs simulated cached tokens, where the log has both.")] = None
    time: Annotated[str | None, Doc("When the call was made (ISO 8601, UTC), where the log says.")] = None
    logged_model: Annotated[str | None, Doc("The model the log names for this call.")] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasonTotal:
    __pydantic_config__ = _CLOSED
    tokens: int
    cost: Money


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    __pydantic_config__ = _CLOSED
    turns: int
    input_tokens: int
    hit_tokens: int
    miss_tokens: int
    output_tokens: int
    hit_rate: float
    hit_cost: Money
    miss_cost: Money
    input_cost: Money
    output_cost: Money
    total: Money
    blended_input_per_mtok: Annotated[Money, Doc("Input cost per million input tokens, 10 decimals.")]
    uncached_total: Annotated[Money, Doc("The same tokens with every input token a miss.")]
    saved: Annotated[Money, Doc("uncached_total - total.")]
    saved_share: Annotated[float, Doc("saved / uncached_total, 6 decimals (0 when nothing was billed).")]
    miss_by_reason: Annotated[dict[str, ReasonTotal], Doc("Missed tokens and their cost, by reason.")]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionBill:
    __pydantic_config__ = _CLOSED
    source: str
    name: str
    model: str
    usage: Annotated[
        Literal["simulated", "reported"],
        Doc("simulated: cache hits from the simulator; reported: the tokens the log says were billed."),
    ]
    token_counts: Annotated[str, Doc("Where the token counts come from (turn spec, logged usage, estimate).")]
    warm_prefix_tokens: Annotated[int, Doc("Tokens already cached when the session started.")]
    notes: Annotated[list[str], Doc("What the reader skipped, guessed or could not check.")]
    logged_models: Annotated[list[str], Doc("The models the log names, in order of first use.")] = field(
        default_factory=list
    )
    started: Annotated[str | None, Doc("The first call's time (ISO 8601, UTC), where logged.")] = None
    ended: Annotated[str | None, Doc("The last call's time (ISO 8601, UTC), where logged.")] = None
    calls_sized_from_usage: Annotated[int, Doc("Calls whose prompt size is the logged one.")] = 0
    calls_estimated: Annotated[int, Doc("Calls sized by the tokenizer or the estimate (scaled).")] = 0
    unbilled_calls: Annotated[int, Doc("Calls left out in reported mode: the log has no usage for them.")] = 0
    agreement: Annotated[Agreement | None, Doc("How often reported and simulated cached tokens agree.")]
    turns: list[TurnBill]
    summary: Summary


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheInfo:
    __pydantic_config__ = _CLOSED
    name: str
    label: Annotated[str, Doc("The --cache text that reproduces this model.")]
    hash_block: int | None
    checkpoints: str
    ttl_seconds: float | None
    output_cached: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    __pydantic_config__ = _CLOSED
    cache: CacheInfo
    sessions: list[SessionBill]
    total: Summary


@dataclass(frozen=True, slots=True, kw_only=True)
class Rates:
    __pydantic_config__ = _CLOSED
    input_cache_hit: Money
    input_cache_miss: Money
    output: Money


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceInfo:
    __pydantic_config__ = _CLOSED
    name: str
    currency: str
    effective: date
    source: str
    per: Literal["1M tokens"] = "1M tokens"
    rates: dict[str, Rates]


@dataclass(frozen=True, slots=True, kw_only=True)
class BillReport:
    """`kcost bill --format json`: one run per cache model, each with every session's bill."""

    __pydantic_config__ = {**_CLOSED, "title": "kcost bill"}
    schema_version: Literal[1] = 1
    generator: str
    prices: PriceInfo
    runs: list[Run]


# ---- JSON Lines records (`kcost bill --format jsonl`): written by `kcost.render.data`, described here ------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRecord(TurnBill):
    """A turn: where it belongs, then its bill."""

    __pydantic_config__ = _CLOSED
    record: Literal["turn"]
    cache: Annotated[str, Doc("The cache model's label.")]
    session: str
    source: str
    model: Annotated[str, Doc("The model priced at.")]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord(Summary):
    """A session's summary, with how it was read."""

    __pydantic_config__ = _CLOSED
    record: Literal["session"]
    cache: str
    session: str
    source: str
    model: str
    usage: Literal["simulated", "reported"]
    token_counts: str
    calls_sized_from_usage: int
    calls_estimated: int
    started: str | None
    ended: str | None
    logged_models: list[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class TotalRecord(Summary):
    """All sessions of one cache model together."""

    __pydantic_config__ = _CLOSED
    record: Literal["total"]
    cache: str


Record = Annotated[TurnRecord | SessionRecord | TotalRecord, Doc("One line of `kcost bill --format jsonl`.")]


# ---- writing -----------------------------------------------------------------------------------------------

_NAMES: dict[type, tuple[str, ...]] = {}


def to_data(value: Any, numbers: bool = False) -> Any:
    """A result as JSON-ready data: dataclasses as objects in field order, money as exact strings (`numbers`: as
    JSON numbers, exact to 15 significant digits), dates as ISO text."""
    cls = value.__class__
    if cls is str or cls is int or cls is float or cls is bool or value is None:
        return value
    if cls is Decimal:
        return float(value) if numbers else money_text(value)
    if cls is list or cls is tuple:
        return [to_data(v, numbers) for v in value]
    if cls is dict:
        return {str(k): to_data(v, numbers) for k, v in value.items()}
    names = _NAMES.get(cls)
    if names is None and dataclasses.is_dataclass(value):
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(value))
    if names is not None:
        return {name: to_data(getattr(value, name), numbers) for name in names}
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"cannot write a {cls.__name__} as JSON")


def dump_json(value: Any, numbers: bool = False) -> str:
    """A result as indented JSON text (two spaces; non-ASCII as itself), with no trailing newline."""
    return orjson.dumps(to_data(value, numbers), option=orjson.OPT_INDENT_2).decode()


def model_json(value: Any, *, numbers: bool = False, by_alias: bool = False) -> str:
    """A pydantic report (or a list of them) as indented JSON text: money as exact strings, or as numbers."""
    items = value if isinstance(value, list) else None
    if not numbers:
        if items is not None:
            import json

            return json.dumps([v.model_dump(mode="json", by_alias=by_alias) for v in items], indent=2,
                              ensure_ascii=False)  # fmt: skip
        text: str = value.model_dump_json(indent=2, by_alias=by_alias)
        return text
    data = (
        [v.model_dump(by_alias=by_alias) for v in items] if items is not None else value.model_dump(by_alias=by_alias)
    )
    return dump_json(data, numbers=True)


def adapter(cls: type) -> Any:
    """pydantic's validator and schema for a result type (imports pydantic: for reading bills and schemas only)."""
    from pydantic import TypeAdapter

    return TypeAdapter(cls)
