"""What every report shares: money as exact text, field descriptions, the cache model and price table as a report
states them, and the one writer that turns any report's dataclasses into JSON without pydantic (`dump_json`).

Money is `Decimal`, written as an exact decimal string (`"0.1323456"`): never rounded, no exponent, no trailing
zeros.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Iterator
from datetime import date, datetime, timezone
from decimal import Decimal
from enum import Enum
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import orjson

from kcost.errors import InputError
from kcost.inputs.documents import MAX_DEPTH
from kcost.model.frozen import field_values, frozen


def iso_time(seconds: float | None) -> str | None:
    """Unix seconds as ISO 8601 in UTC, to the millisecond: `2026-02-10T21:11:59.186Z`."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def money_text(value: Decimal) -> str:
    """Exact decimal string: `1.212`, `60.6`, `0`, never `6E+1`."""
    text = str(value)  # the digits as they are, unless written with an exponent (then as `format` writes them)
    if "E" in text:
        text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


class Routine(str):
    """A note of what every log of its kind holds and kcost passes over as a matter of course (lines that carry no
    usage: a Claude Code log's snapshots and summaries, an event type of no bearing on cost). It is written as
    the text it is, in JSON as every note; the human formats show it only with `--verbose`."""

    __slots__ = ()


class _MoneySchema:
    """How pydantic validates, writes and describes a `Money` field (asked only where pydantic is in use)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        # deferred: pydantic_core: loaded only where used (start-up; tests/test_cli.py)
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


@frozen(slots=True, kw_only=True)
class CacheInfo:
    __pydantic_config__ = CLOSED
    name: str
    label: Annotated[str, Doc("The --cache text that reproduces this model.")]
    hash_block: int | None
    checkpoints: str
    ttl_seconds: float | None
    output_cached: bool
    source: Annotated[str | None, Doc("Where a provider's cache rule is documented.")] = None


@frozen(slots=True, kw_only=True)
class Rates:
    __pydantic_config__ = CLOSED
    input_cache_hit: Money
    input_cache_miss: Money
    output: Money
    cache_write_5m: Annotated[Money | None, Doc("Cache writes kept 5 minutes; null: a write costs a miss.")] = None
    cache_write_1h: Annotated[Money | None, Doc("Cache writes kept an hour; null: a write costs a miss.")] = None


@frozen(slots=True, kw_only=True)
class PriceInfo:
    __pydantic_config__ = CLOSED
    name: str
    currency: str
    effective: date
    source: str
    per: Literal["1M tokens"] = "1M tokens"
    rates: dict[str, Rates]


# ---- writing -----------------------------------------------------------------------------------------------

# Per report type: its fields in order, each with whether a decimal in it is plain (`Decimal`, written as
# `str()` writes it: `"0.30"`, `"1E+1"`) or money (`Money`, written exact without trailing zeros).
_PLANS: dict[type, tuple[tuple[str, bool], ...]] = {}
# Per report type: its fields left out of the JSON while they are None (`OMIT_NONE`), where it has any.
_SPARSE: dict[type, frozenset[str]] = {}
# Per report type: its fields' types, evaluated once (`_hints`).
_HINTS: dict[type, dict[str, Any]] = {}
# A field's metadata for one left out while it is None: a field added to a report that only some reports fill,
# so every report without it is written as it always was.
OMIT_NONE = {"omit_none": True}


def _plain(hint: Any) -> bool:
    """Whether a field's type holds a plain `Decimal` (not `Money`) outside any report type it names."""
    if hint is Decimal:
        return True
    if get_origin(hint) is Annotated:
        return not any(isinstance(m, _MoneySchema) for m in hint.__metadata__) and _plain(get_args(hint)[0])
    return any(_plain(arg) for arg in get_args(hint))


def _hints(cls: type) -> dict[str, Any]:
    """A report type's field types, evaluated once (its plan and whether orjson writes it whole both read them:
    evaluating a class's annotations is most of writing its first value)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls, include_extras=True)
    return hints


def _plan(cls: type) -> tuple[tuple[str, bool], ...]:
    hints = _hints(cls)
    fields = dataclasses.fields(cls)
    sparse = frozenset(f.name for f in fields if f.metadata.get("omit_none"))
    if sparse:
        _SPARSE[cls] = sparse
    plan = _PLANS[cls] = tuple((f.name, _plain(hints[f.name])) for f in fields)
    return plan


def _plan_of(value: Any) -> tuple[tuple[str, bool], ...] | None:
    """The plan of a report type's value (None: `value` is no dataclass instance)."""
    plan = _PLANS.get(value.__class__)
    if plan is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        plan = _plan(value.__class__)
    return plan


# Per report type: whether orjson writes it whole as `to_data` would have it written (`_native`).
_NATIVE: dict[type, bool] = {}


def _native(cls: type) -> bool:
    """Whether orjson, given a value of report type `cls` itself (a dataclass it writes field by field, each
    decimal passed to `_money` or `float`), writes what it writes of `to_data`'s: no field left out while None,
    no plain decimal, no time of day (a `datetime`), and every report type it names the same (a report's floats
    are finite: rates of whole numbers)."""
    known = _NATIVE.get(cls)
    if known is None:
        _NATIVE[cls] = False  # a type that names itself is written through to_data
        plan = _PLANS.get(cls) or _plan(cls)
        hints = _hints(cls)
        known = _NATIVE[cls] = cls not in _SPARSE and all(_native_hint(hints[name]) for name, _ in plan)
    return known


def _native_hint(hint: Any) -> bool:
    if hint in (str, int, float, bool, type(None)):
        return True
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        money = any(isinstance(m, _MoneySchema) for m in hint.__metadata__)
        return args[0] is Decimal if money else _native_hint(args[0])
    if origin is Literal:
        return all(isinstance(a, (str, int, bool)) for a in args)
    if origin is dict:
        return args[0] is str and _native_hint(args[1])
    if origin in (list, tuple, Union, UnionType):
        return all(a is Ellipsis or _native_hint(a) for a in args)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _native(hint)
    return isinstance(hint, type) and (issubclass(hint, Enum) or hint is date)


def _money(value: Any) -> str:
    if value.__class__ is Decimal:
        return money_text(value)
    raise TypeError(f"cannot write a {value.__class__.__name__} as JSON")


def _number(value: Any) -> float:
    if value.__class__ is Decimal:
        return float(value)
    raise TypeError(f"cannot write a {value.__class__.__name__} as JSON")


def _whole(value: Any) -> bool:
    """Whether `value` is of a report type orjson writes alike given whole (`_native`)."""
    native = _NATIVE.get(value.__class__)
    return _native(value.__class__) if native is None and _plan_of(value) is not None else bool(native)


def _orjson(value: Any, numbers: bool, option: int = 0) -> bytes:
    """A value orjson writes whole (`_whole`) as orjson writes it, each decimal as money or a number: its own
    fields given as a mapping in their order (what orjson makes of a dataclass, at a third of the time a slotted
    one takes it), those below it as they are."""
    fields = _FIELDS.get(value.__class__)
    if fields is None:
        fields = _FIELDS[value.__class__] = _fields_of(value.__class__)
    return orjson.dumps(fields(value), default=_number if numbers else _money, option=option)


# Per report type: its field values as a mapping, in field order.
_FIELDS: dict[type, Callable[[Any], dict[str, Any]]] = {}


def _fields_of(cls: type) -> Callable[[Any], dict[str, Any]]:
    names = [name for name, _ in _PLANS.get(cls) or _plan(cls)]
    values = field_values(names)
    return lambda value: dict(zip(names, values(value), strict=True))


def _dumps(value: Any, numbers: bool, plain: bool) -> bytes:
    """`value` as orjson's `OPT_INDENT_2` writes `to_data`'s of it: a report type orjson writes alike given
    whole (`_native`), anything else through `to_data`."""
    if not plain and _whole(value):
        return _orjson(value, numbers, orjson.OPT_INDENT_2)
    return orjson.dumps(to_data(value, numbers, plain), option=orjson.OPT_INDENT_2)


def to_data(value: Any, numbers: bool = False, plain: bool = False) -> Any:
    """A result as JSON-ready data: dataclasses as objects in field order, money as exact strings (`numbers`: as
    JSON numbers, exact to 15 significant digits), plain decimals as `str()` writes them (`plain`: for the
    values of a field typed `Decimal`), dates as ISO text, an input model (a report's budgets) by its aliases."""
    cls = value.__class__
    if cls is str or cls is int or cls is float or cls is bool or value is None:
        return value
    if cls is Routine:
        return str(value)
    if cls is Decimal:
        return float(value) if numbers else str(value) if plain else money_text(value)
    if cls is list or cls is tuple:
        return [to_data(v, numbers, plain) for v in value]
    if isinstance(value, Written):  # written already: read back (a report past orjson's depth, written by `_deep`)
        return [orjson.loads(item) for item in value]
    if cls is dict:
        return {str(k): to_data(v, numbers, plain) for k, v in value.items()}
    plan = _plan_of(value)
    if plan is not None:
        if not plain and _whole(value):
            try:  # orjson writes it as this would make it: its data read back, three times as fast
                return orjson.loads(_orjson(value, numbers))
            except orjson.JSONEncodeError:  # a whole number past 64 bits: made here
                pass
        sparse = _SPARSE.get(cls)
        if sparse is not None:
            return {name: to_data(getattr(value, name), numbers, decimal) for name, decimal in plan
                    if name not in sparse or getattr(value, name) is not None}  # fmt: skip
        return {name: to_data(getattr(value, name), numbers, decimal) for name, decimal in plan}
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if hasattr(value, "model_dump"):  # a pydantic input model (a check's budgets), as its config file spells it
        return to_data(value.model_dump(by_alias=True), numbers, plain=True)
    raise TypeError(f"cannot write a {cls.__name__} as JSON")


def dump_json(value: Any, numbers: bool = False) -> str:
    """A report as indented JSON text (two spaces; non-ASCII as itself), with no trailing newline: the one
    writer of every report. A report nested deeper than `MAX_DEPTH` (what the readers accept) is an
    `InputError`: it can only have come from an input nested that deep.

    Laid out as orjson's `OPT_INDENT_2` lays out the whole, but made a part at a time: the report types of its
    first levels here, and each value below them (a bill's turn) by orjson on its own, so the data of the whole
    report is never held at once beside its text (on a bill of 15,000 turns, 40 MB)."""
    try:
        return "".join(json_pieces(value, numbers))
    except RecursionError:
        pass
    except orjson.JSONEncodeError as exc:
        if "Recursion limit" not in str(exc):
            raise
    return _deep(value, numbers)


_WHOLE_AT = 3  # the depth (in report types) from which each value is written by orjson whole


_WRITTEN_RUN = 256  # the items of a `Written` laid out at once: a few hundred kilobytes of text


class Written(list[str]):
    """An array's items already written, each as `dump_json` writes it alone (`written`): the writer lays them
    out as that array's (a bill's turns written as each was billed, none of them kept)."""


def write_data(data: dict[str, Any], numbers: bool = False) -> str:
    """A report type's fields, given as a mapping in its field order (`Decimal` where the type has money), as
    `written` writes that type's value: what a writer that makes no value of the type writes of it."""
    return orjson.dumps(data, default=_number if numbers else _money, option=orjson.OPT_INDENT_2).decode()


def written(value: Any, numbers: bool = False) -> str:
    """One value of a report as `dump_json` writes it alone, to go in a `Written`."""
    return _dumps(value, numbers, False).decode()


def json_pieces(value: Any, numbers: bool = False) -> Iterator[str]:
    """`dump_json`'s text a piece at a time, for a report of a fixed depth (a bill): a writer that writes each
    piece as it comes holds no more of the text than a piece."""
    return _pieces(value, numbers, False, "\n", 0)


def _pieces(value: Any, numbers: bool, plain: bool, newline: str, depth: int) -> Iterator[str]:
    """`value` as `to_data` makes it and orjson's `OPT_INDENT_2` writes it at a line's indentation (`newline`):
    report types above `_WHOLE_AT` and the lists that hold them here, field by field and item by item, anything
    else by orjson."""
    cls = value.__class__
    plan = _plan_of(value) if depth < _WHOLE_AT else None
    if plan is not None:
        sparse = _SPARSE.get(cls, frozenset())
        shown = [(name, getattr(value, name), decimal) for name, decimal in plan
                 if name not in sparse or getattr(value, name) is not None]  # fmt: skip
        if not shown:
            yield "{}"
            return
        inner = newline + "  "
        for i, (name, item, decimal) in enumerate(shown):
            yield ("{" if i == 0 else ",") + inner + orjson.dumps(name).decode() + ": "
            yield from _pieces(item, numbers, decimal, inner, depth + 1)
        yield newline + "}"
    elif isinstance(value, Written):
        if not value:
            yield "[]"
            return
        inner = newline + "  "
        for at in range(0, len(value), _WRITTEN_RUN):  # a run of items at once: each line put at its indentation
            run = ",\n".join(value[at : at + _WRITTEN_RUN])  # JSON text holds no line break but between its lines
            yield ("[" if at == 0 else ",") + inner + run.replace("\n", inner)
        yield newline + "]"
    elif (cls is list or cls is tuple) and value and depth <= _WHOLE_AT:
        inner = newline + "  "
        for i, item in enumerate(value):
            yield ("[" if i == 0 else ",") + inner
            yield from _pieces(item, numbers, plain, inner, depth)
        yield newline + "]"
    else:
        text = _dumps(value, numbers, plain).decode()
        yield text.replace("\n", newline) if newline != "\n" else text


def _deep(value: Any, numbers: bool) -> str:
    """A report nested deeper than orjson writes (254 levels) or than the interpreter's stack allows: measured
    without recursion, refused past `MAX_DEPTH`, else laid out here as orjson lays it out (each scalar and key
    written by orjson), with room to recurse."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import sys

    depth = nesting(value)
    if depth > MAX_DEPTH:
        raise InputError(f"cannot write this report as JSON: nested {depth} levels deep (at most {MAX_DEPTH})")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * MAX_DEPTH + 1000))  # two frames a level, with the caller's below
    try:
        out: list[str] = []
        _indented(to_data(value, numbers), out, "\n")
        return "".join(out)
    finally:
        sys.setrecursionlimit(limit)


def _indented(data: Any, out: list[str], newline: str) -> None:
    """`data` as orjson's `OPT_INDENT_2` writes it: two spaces a level, `{}` and `[]` when empty."""
    if isinstance(data, dict) and data:
        inner = newline + "  "
        for i, (key, item) in enumerate(data.items()):
            out.append(("{" if i == 0 else ",") + inner + orjson.dumps(key).decode() + ": ")
            _indented(item, out, inner)
        out.append(newline + "}")
    elif isinstance(data, list) and data:
        inner = newline + "  "
        for i, item in enumerate(data):
            out.append(("[" if i == 0 else ",") + inner)
            _indented(item, out, inner)
        out.append(newline + "]")
    else:
        out.append(orjson.dumps(data).decode())


def nesting(value: Any) -> int:
    """How deep `value` nests, as JSON counts it (an object or array is a level), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if hasattr(item, "model_dump") and not isinstance(item, type):
            item = item.model_dump()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            children = [getattr(item, f.name) for f in dataclasses.fields(item)]
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


@functools.cache
def adapter(cls: type) -> Any:
    """pydantic's validator and schema for a result type (imports pydantic: for reading bills and schemas only);
    built once a type (building a bill's takes 90 ms, and `diff` reads two)."""
    # deferred: pydantic: loaded only where used (start-up; tests/test_cli.py)
    from pydantic import TypeAdapter

    return TypeAdapter(cls)
