"""What every report shares: money as exact text, field descriptions, the cache model and price table as a report
states them, and the writer that turns any report's dataclasses into JSON without pydantic.

Money is `Decimal`, written as an exact decimal string (`"0.1323456"`): never rounded, no exponent, no trailing
zeros.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal

import orjson


def money_text(value: Decimal) -> str:
    """Exact decimal string: `1.212`, `60.6`, `0`, never `6E+1`."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


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

# ---- the parts every report shares ----------------------------------------------------------------------------

CLOSED = {"extra": "forbid"}  # pydantic's config for these types: an unknown field in a bill read back is an error


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheInfo:
    __pydantic_config__ = CLOSED
    name: str
    label: Annotated[str, Doc("The --cache text that reproduces this model.")]
    hash_block: int | None
    checkpoints: str
    ttl_seconds: float | None
    output_cached: bool
    source: Annotated[str | None, Doc("Where a provider's cache rule is documented.")] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Rates:
    __pydantic_config__ = CLOSED
    input_cache_hit: Money
    input_cache_miss: Money
    output: Money
    cache_write_5m: Annotated[Money | None, Doc("Cache writes kept 5 minutes; null: a write costs a miss.")] = None
    cache_write_1h: Annotated[Money | None, Doc("Cache writes kept an hour; null: a write costs a miss.")] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceInfo:
    __pydantic_config__ = CLOSED
    name: str
    currency: str
    effective: date
    source: str
    per: Literal["1M tokens"] = "1M tokens"
    rates: dict[str, Rates]


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
