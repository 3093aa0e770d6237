"""No control character from an input in what people read: the one rule of every human format, applied where
`kcost.render.registry.render` renders a report, so no renderer can let one through by forgetting a field.

A file's name, a session's, a model id, a note: any text of a report may come from an input and hold control
characters (an escape sequence, a bell, a carriage return, a C1 control, a bidirectional override), which a
terminal would act on. Each is written as its escape (`kcost.errors.printable`: `\\x1b`), in one of two ways:

- The terminal table is given the report with every text in it escaped (`printable_texts`), before a renderer
  lays anything out: its columns fit what they show, and its colours (escape sequences of its own) stay.
- Markdown and HTML, which hold no control character of their own, are escaped whole once written (`written`),
  after a page has read what it needs from a text as it is (a path's name, `kcost.render.html.shown_path`).

The machine formats (JSON, JSON Lines, CSV, JUnit) keep every text exact. The live views, drawn outside the
registry, give their frames to `printable_texts` too (`kcost.cli.live`).
"""

from __future__ import annotations

import copy
from dataclasses import fields
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any, TypeVar

from kcost.errors import printable

T = TypeVar("T")

LAID_OUT = frozenset({"table"})  # escaped text by text, before the layout
WRITTEN = frozenset({"markdown", "html"})  # escaped whole, once written (with LAID_OUT: the registry's HUMAN)

# values that hold no text: handed back as they are, without a look inside (most of a turn's fields)
_ATOMS: frozenset[type] = frozenset({int, float, bool, Decimal, type(None), date, datetime, time, timedelta})
_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass's field names, looked up once a class


def shown(report: T, fmt: str) -> T:
    """What a renderer of `fmt` is given of `report`: its texts escaped for the terminal table, else itself."""
    return printable_texts(report) if fmt in LAID_OUT else report


def written(text: str, fmt: str) -> str:
    """What a renderer wrote as `fmt`, as it goes out: escaped whole for markdown and HTML, else as it is."""
    return printable(text) if fmt in WRITTEN else text


def printable_texts(value: T) -> T:
    """`value` (a report, a live view's frame, or any part of one) with each text in it `printable`, wherever it
    is (a dataclass's fields, lists, tuples, sets, a dict's keys and values): itself where no text needs it, and
    a copy made only of what changes."""
    out: T = _shown(value)
    return out


def _shown(value: Any) -> Any:
    kind = value.__class__
    if kind is str:
        return _text(value)
    names = _FIELDS.get(kind)  # a dataclass met before: the commonest object of a report
    if names is None:
        if kind in _ATOMS or isinstance(value, Enum):  # an enum's text is a kcost name, never an input's
            return value
        if isinstance(value, str):
            return _text(value)
        if isinstance(value, tuple | list | set | frozenset):
            items = [_shown(v) for v in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return kind._make(items) if hasattr(kind, "_make") else kind(items)
        if isinstance(value, dict):
            pairs = [(_shown(k), _shown(v)) for k, v in value.items()]
            if all(k is a and v is b for (k, v), (a, b) in zip(pairs, value.items(), strict=True)):
                return value
            return kind(pairs)
        if not hasattr(kind, "__dataclass_fields__") or isinstance(value, type):
            return value  # no report holds its texts in any other type
        names = _FIELDS[kind] = tuple(f.name for f in fields(kind))
    changed = {}
    for name in names:  # a number or a text looked at here, not in a call of its own: a long bill's turns are many
        old = getattr(value, name)
        if old.__class__ in _ATOMS:
            continue
        if old.__class__ is str:
            if not old.isprintable() and (new := printable(old)) != old:
                changed[name] = new
        elif (new := _shown(old)) is not old:
            changed[name] = new
    out = value
    if changed:  # a copy, its other fields as they were (no __init__ run again: nothing is worked out twice)
        out = copy.copy(value)
        for name, new in changed.items():
            object.__setattr__(out, name, new)
    return out


def _text(text: str) -> str:
    """`text` escaped; itself where it has nothing to escape (`str.isprintable`, quick, is true of no text that
    holds a control character, and false of a few that hold none: a tab, a no-break space)."""
    if text.isprintable():
        return text
    escaped = printable(text)
    return text if escaped == text else escaped
