"""A session as the ledger keeps it: plain JSON values, laid out by the fields of the classes that hold it.

Each record, request, span, usage and change is a JSON array of its class's field values in field order; the
ledger keeps that order (`LAYOUT`) beside the rows it wrote. A row written under the layout of this kcost is
made back positionally (the fast path every run takes); one written by another kcost is made back by the
fields' names: a field this kcost added takes its default, one it dropped is dropped, and a row that lacks a
field with no default cannot be made (`Unreadable`), so a ledger is migrated where it can be and never misread.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from typing import Any

from kcost.model.calls import Usage
from kcost.model.causes import Cause, Change
from kcost.model.requests import Request, Span
from kcost.model.session import CallRecord, Session
from kcost.results.common import Routine

_CLASSES: dict[str, Any] = {"session": Session, "record": CallRecord, "request": Request, "span": Span,
                            "usage": Usage}  # fmt: skip
LAYOUT: dict[str, list[str]] = {name: [f.name for f in fields(cls)] for name, cls in _CLASSES.items()}
LAYOUT["change"] = list(Change._fields)


class Unreadable(ValueError):
    """A row no layout of this kcost can make back."""


def _spans(spans: tuple[Span, ...]) -> list[list[int]]:
    return [[getattr(s, n) for n in LAYOUT["span"]] for s in spans]


def _request(r: Request) -> list[Any]:
    return [_AS_REQUEST.get(n, _plain)(getattr(r, n)) for n in LAYOUT["request"]]


def _usage(u: Usage) -> list[Any]:
    return [getattr(u, n) for n in LAYOUT["usage"]]


def _record(r: CallRecord) -> list[Any]:
    return [_AS_RECORD.get(n, _plain)(getattr(r, n)) for n in LAYOUT["record"]]


def _plain(value: Any) -> Any:
    return value


# how each field that holds more than a plain value is written (each by its class's layout; none: null)
_AS_REQUEST: dict[str, Any] = {"append": _spans, "output": _spans,
                               "resent_output": lambda v: None if v is None else list(v)}  # fmt: skip
_AS_RECORD: dict[str, Any] = {
    "request": lambda v: None if v is None else _request(v),
    "reported": lambda v: None if v is None else _usage(v),
    "change": lambda v: None if v is None else [v.cause.value, v.detail],
}


def _notes(notes: tuple[str, ...]) -> list[Any]:
    return [[n, 1] if isinstance(n, Routine) else n for n in notes]


def encode(session: Session) -> str:
    """The session as one JSON text (an object of its fields; records as arrays in `LAYOUT`'s order)."""
    out: dict[str, Any] = {}
    for name in LAYOUT["session"]:
        value = getattr(session, name)
        if name == "records":
            value = [_record(r) for r in session.records]
        elif name == "warmup":
            value = [_request(r) for r in value]
        elif name in ("read_notes", "build_notes"):
            value = _notes(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


# -- making back


def _made(cls: Any, values: list[Any]) -> Any:
    """An instance of a slotted `@frozen` class from its fields' values, as unpickling sets them."""
    made = object.__new__(cls)
    cls.__setstate__(made, values)
    return made


class Decoder:
    """Makes sessions back from rows written under `layout` (the ledger's); positional where it is this kcost's."""

    def __init__(self, layout: dict[str, list[str]]) -> None:
        self.same = layout == LAYOUT
        self.moves = {} if self.same else {name: _moves(name, layout.get(name, [])) for name in LAYOUT}

    def session(self, text: str) -> Session:
        try:
            data = json.loads(text)
            return self._session(data)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raise Unreadable(str(exc)) from None

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
