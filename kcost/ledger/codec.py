"""A session as the ledger keeps it: plain JSON values, laid out by the fields of the classes that hold it.

Each record, request, span, usage and change is a JSON array of its class's field values in field order; the
ledger keeps that order (`LAYOUT`) beside the rows it wrote. A row written under the layout of this kcost is
made back positionally (the fast path every run takes); one written by another kcost is made back by the
fields' names: a field this kcost added takes its default, one it dropped is dropped, and a row that lacks a
field with no default cannot be made (`Unreadable`), so a ledger is migrated where it can be and never misread.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import MISSING, fields
from typing import Any

import orjson

from kcost.model.calls import Usage
from kcost.model.causes import Cause, Change
from kcost.model.requests import Request, Span
from kcost.model.session import CallRecord, Session, plain_request, plain_rows
from kcost.results.common import Routine

_CLASSES: dict[str, Any] = {"session": Session, "record": CallRecord, "request": Request, "span": Span,
                            "usage": Usage}  # fmt: skip
LAYOUT: dict[str, list[str]] = {name: [f.name for f in fields(cls)] for name, cls in _CLASSES.items()}
LAYOUT["change"] = list(Change._fields)


class Unreadable(ValueError):
    """A row no layout of this kcost can make back."""


def _notes(notes: tuple[str, ...]) -> list[Any]:
    return [[n, 1] if isinstance(n, Routine) else n for n in notes]


def encode(session: Session) -> str:
    """The session as one JSON text (an object of its fields; records as arrays in `LAYOUT`'s order, as a session
    pickles them: `plain_rows`), by orjson (by `json` where orjson refuses a value: an integer past 64 bits)."""
    out: dict[str, Any] = {}
    for name in LAYOUT["session"]:
        value = getattr(session, name)
        if name == "records":
            value = plain_rows(session.records)
        elif name == "warmup":
            value = [plain_request(r) for r in value]
        elif name in ("read_notes", "build_notes"):
            value = _notes(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    try:
        return orjson.dumps(out, default=_change).decode()
    except orjson.JSONEncodeError:
        return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _change(value: Any) -> Any:
    """A record's change as JSON: its cause's value and its detail."""
    if isinstance(value, Change):
        return [value.cause.value, value.detail]
    raise TypeError(f"{type(value).__name__} is not written to the ledger")


# -- making back


def _made(cls: Any, values: list[Any]) -> Any:
    """An instance of a slotted `@frozen` class from its fields' values, as unpickling sets them."""
    made = object.__new__(cls)
    cls.__setstate__(made, values)
    return made


def _loads(text: str) -> Any:
    """A row's JSON: by orjson (twice as fast), else by `json` where orjson refuses it (a NaN, an integer past
    64 bits): both make the same values of what both read."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


class Decoder:
    """Makes sessions back from rows written under `layout` (the ledger's); positional where it is this kcost's."""

    def __init__(self, layout: dict[str, list[str]]) -> None:
        self.same = layout == LAYOUT
        self.moves = {} if self.same else {name: _moves(name, layout.get(name, [])) for name in LAYOUT}

    def session(self, text: str, span: tuple[float | None, float | None] | None = None,
                fail: Callable[[Unreadable], Exception] | None = None) -> Session:  # fmt: skip
        """The session of a row. Given the `span` its row holds, its records are made as they are read
        (`KeptRecords`), and a record that cannot be made then raises what `fail` makes of why."""
        try:
            data = _loads(text)
            if span is None:
                return self._session(data)
            rows = data["records"]
            if not isinstance(rows, list):
                raise Unreadable("records that are not a list")
            session = self._session({**data, "records": []})
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raise Unreadable(str(exc)) from None
        object.__setattr__(session, "records", KeptRecords(self, rows, span, fail))
        return session

    def field(self, name: str, row: list[Any], field: str) -> Any:
        """One field of a row of class `name`, made of nothing else."""
        at = LAYOUT[name].index(field)
        if self.same:
            return row[at]
        where, default = self.moves[name][at]
        return row[where] if where is not None else default

    def _values(self, name: str, row: list[Any]) -> list[Any]:
        if self.same:
            if len(row) != len(LAYOUT[name]):
                raise Unreadable(f"a {name} of {len(row)} fields")
            return row
        return [row[at] if at is not None else default for at, default in self.moves[name]]

    def _spans(self, rows: list[Any]) -> tuple[Span, ...]:
        return tuple(_made(Span, self._values("span", row)) for row in rows)

    def _request(self, row: list[Any]) -> Request:
        v = list(self._values("request", row))
        names = LAYOUT["request"]
        v[names.index("append")] = self._spans(v[names.index("append")])
        v[names.index("output")] = self._spans(v[names.index("output")])
        resent = names.index("resent_output")
        v[resent] = None if v[resent] is None else tuple(v[resent])
        request: Request = _made(Request, v)
        return request

    def _record(self, row: list[Any]) -> CallRecord:
        v = list(self._values("record", row))
        names = LAYOUT["record"]
        request, reported, change = names.index("request"), names.index("reported"), names.index("change")
        v[request] = None if v[request] is None else self._request(v[request])
        v[reported] = None if v[reported] is None else _made(Usage, list(self._values("usage", v[reported])))
        if v[change] is not None:
            cause, detail = self._values("change", v[change])
            v[change] = Change(Cause(cause), detail)
        record: CallRecord = _made(CallRecord, v)
        return record

    def _session(self, data: dict[str, Any]) -> Session:
        given: dict[str, Any] = {}
        for f in fields(Session):
            if f.name not in data:
                if f.default is MISSING:
                    raise Unreadable(f"a session without {f.name}")
                continue
            value = data[f.name]
            if f.name == "records":
                value = tuple(self._record(r) for r in value)
            elif f.name == "warmup":
                value = tuple(self._request(r) for r in value)
            elif f.name in ("read_notes", "build_notes"):
                value = tuple(Routine(n[0]) if isinstance(n, list) else str(n) for n in value)
            elif isinstance(value, list):
                value = tuple(value)
            given[f.name] = value
        return Session(**given)


class KeptRecords(Sequence[CallRecord]):
    """A session's records as the ledger holds them, each made the first time it is read: a run whose bills of the
    session are kept (`kcost.ledger.bills`) makes none. Its span and the texts it shows (models, labels) are read
    without making any (`Session.span`, `Session.printable`). Equal to the tuple of its records, and pickled as one."""

    __slots__ = ("_decoder", "_rows", "_made", "span", "_fail")

    def __init__(self, decoder: Decoder, rows: list[Any], span: tuple[float | None, float | None],
                 fail: Callable[[Unreadable], Exception] | None) -> None:  # fmt: skip
        self._decoder, self._rows, self.span, self._fail = decoder, rows, span, fail
        self._made: list[CallRecord | None] = [None] * len(rows)

    def _one(self, at: int) -> CallRecord:
        made = self._made[at]
        if made is None:
            try:
                made = self._made[at] = self._decoder._record(self._rows[at])
            except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
                why = exc if isinstance(exc, Unreadable) else Unreadable(str(exc))
                raise (self._fail(why) if self._fail is not None else why) from None
        return made

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self._one(at) for at in range(*index.indices(len(self._rows))))
        at = index + len(self._rows) if index < 0 else index
        if not 0 <= at < len(self._rows):
            raise IndexError("record index out of range")
        return self._one(at)

    def __iter__(self) -> Iterator[CallRecord]:
        for at in range(len(self._rows)):
            yield self._one(at)

    def texts(self) -> set[str]:
        """Every model and label its records name (`Session.printable`), none of them made."""
        try:
            if self._decoder.same:  # positional: each field at its place in every row
                model, label = LAYOUT["record"].index("model"), LAYOUT["record"].index("label")
                named = {row[model] for row in self._rows} | {row[label] for row in self._rows}
            else:
                named = {self._decoder.field("record", row, name) for row in self._rows for name in ("model", "label")}
            return {str(n or "") for n in named}
        except (ValueError, TypeError, LookupError, AttributeError) as exc:
            why = Unreadable(str(exc))
            raise (self._fail(why) if self._fail is not None else why) from None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (KeptRecords, tuple)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __reduce__(self) -> Any:
        return (tuple, (tuple(self),))

    def __repr__(self) -> str:
        return repr(tuple(self))


def _moves(name: str, stored: list[str]) -> list[tuple[int | None, Any]]:
    """For each field of this kcost's class `name`: where the stored row holds it, or its default."""
    if name == "change":
        return [(stored.index(n), None) for n in LAYOUT[name]] if stored == LAYOUT[name] else _missing(name)
    out: list[tuple[int | None, Any]] = []
    for f in fields(_CLASSES[name]):
        if f.name in stored:
            out.append((stored.index(f.name), None))
        elif f.default is not MISSING:
            out.append((None, f.default))
        elif f.default_factory is not MISSING:
            out.append((None, f.default_factory()))
        else:
            return _missing(name)
    return out


def _missing(name: str) -> list[tuple[int | None, Any]]:
    raise Unreadable(f"the ledger's {name} rows lack a field this kcost needs")
