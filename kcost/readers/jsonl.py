"""JSON Lines, read one record at a time with its line number; a broken line is `file:line: ...`.

Parsed with orjson, which takes bytes as they are, checks their UTF-8, and rejects what JSON does not allow
(NaN, infinities, lone surrogates) on the line that holds it.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from kcost.errors import InputError, file_error


def records(path: Path | str, data: bytes | bytearray | None = None, *, after: int = 0,
            end: int | None = None) -> Iterator[tuple[int, Any]]:  # fmt: skip
    """(line number, parsed value) for every non-blank line of `data[:end]`; `after`: the lines of the file before
    `data` (a log read on from where a look left it), counted on from."""
    name = str(path)
    if data is None:
        data = read_bytes(path)
    loads, find, size = orjson.loads, data.find, len(data) if end is None else end
    view = memoryview(data)  # a line parsed where it lies: no copy of it made
    start, number = 0, after
    while start <= size:  # a line at a time: a list of every line would be a second copy of the log
        stop = find(b"\n", start, size)
        if stop < 0:
            stop = size
        number += 1
        if stop > start:  # blank: skipped below too, but an exception each costs
            try:
                yield number, loads(view[start:stop])
            except orjson.JSONDecodeError as exc:
                if "memory" in exc.msg:  # orjson's own out-of-memory: the line is not at fault
                    raise InputError("out of memory: the log is larger than this process may hold", source=name,
                                     line=number) from None  # fmt: skip
                if data[start:stop].strip():
                    raise InputError(f"not valid JSON: {exc.msg}", source=name, line=number) from None
        start = stop + 1


def compact_json(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"))`: a parsed value written back as the compact
    JSON a tool call's arguments are sent as. By orjson, five times as fast, where the value holds only what both
    write alike (strings, whole numbers of 64 bits, booleans, null, lists and objects of them); where it holds a
    float (whose exponent orjson writes otherwise: `1e-5` for `1e-05`) or a larger number, or nests deeper than
    orjson writes, as `json` writes it (`dumps`: however deep)."""
    if _plain(value):
        try:
            return orjson.dumps(value).decode()
        except orjson.JSONEncodeError:  # a text orjson will not write (a lone surrogate), or past its 254 levels
            pass
    return dumps(value, separators=(",", ":"))


def dumps(value: Any, *, ensure_ascii: bool = False, sort_keys: bool = False,
          separators: tuple[str, str] = (", ", ": ")) -> str:  # fmt: skip
    """`json.dumps(value, ensure_ascii=..., sort_keys=..., separators=...)` of a value however deeply it nests (a
    parser's may nest 1,024 levels, past the recursion `json` has): where `json` runs out of it, the same text
    written without recursion. Only what `json` writes: objects, lists and tuples of strings, numbers, booleans
    and null; no cycles (a parsed value has none)."""
    try:
        return json.dumps(value, ensure_ascii=ensure_ascii, sort_keys=sort_keys, separators=separators)
    except RecursionError:
        pass
    item_separator, key_separator = separators
    out: list[str] = []
    todo: list[tuple[bool, Any]] = [(False, value)]  # (True, text to write) or (False, a value to write)
    while todo:
        written, item = todo.pop()
        if written:
            out.append(item)
        elif isinstance(item, dict):
            pairs = sorted(item.items()) if sort_keys else list(item.items())
            out.append("{")
            todo.append((True, "}"))
            for n in range(len(pairs) - 1, -1, -1):
                key, held = pairs[n]
                todo += [(False, held), (True, f"{item_separator if n else ''}{_key(key, ensure_ascii)}"
                                               f"{key_separator}")]  # fmt: skip
        elif isinstance(item, (list, tuple)):
            out.append("[")
            todo.append((True, "]"))
            for n in range(len(item) - 1, -1, -1):
                todo.append((False, item[n]))
                if n:
                    todo.append((True, item_separator))
        else:  # a string, number, boolean or null: no recursion in it
            out.append(json.dumps(item, ensure_ascii=ensure_ascii))
    return "".join(out)


def _key(key: Any, ensure_ascii: bool) -> str:
    """An object's key as `json` writes it: a string as itself; a number, boolean or null as its JSON text."""
    if not isinstance(key, str):
        if key is None or isinstance(key, (bool, int, float)):
            key = json.dumps(key)
        else:
            raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
    return json.dumps(key, ensure_ascii=ensure_ascii)


def as_text(value: Any, size: int | None = None) -> str:
    """`str(value)` (its first `size` characters: the start of a value an error shows) of a value however deeply it
    nests: a list or object nested past the recursion `repr` has, as its JSON (`dumps`)."""
    try:
        text = str(value)
    except RecursionError:
        text = dumps(value)
    return text if size is None else text[:size]


def _plain(value: Any) -> bool:
    """Whether `value` holds nothing orjson writes otherwise than `json` (walked without recursion: a parsed
    document may nest as deep as its parser allows)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = item.__class__
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not -(2**63) <= item < 2**64:
                return False
        elif kind is dict:
            if not all(k.__class__ is str for k in item):
                return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        else:
            return False
    return True


def first_string(data: bytes | bytearray, key: str, end: int | None = None) -> str | None:
    """The first string value of a field named `key` anywhere in the log (`data[:end]`: `"cwd": "..."`), found
    without parsing the lines: None where there is none."""
    pattern = re.compile(rb'"' + re.escape(key.encode()) + rb'"\s*:\s*("(?:[^"\\]|\\.)*")')
    found = pattern.search(data, 0, len(data) if end is None else end)
    if found is None:
        return None
    try:
        value = orjson.loads(found.group(1))
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) and value else None


def read_bytes(path: Path | str) -> bytes:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise InputError("not a regular file", source=str(path))
        return Path(path).read_bytes().removeprefix(b"\xef\xbb\xbf")
    except OSError as exc:
        raise file_error(exc, str(path)) from None


def field(record: Any, name: str, kind: type | tuple[type, ...], *, source: str, line: int, where: str = "") -> Any:
    """`record[name]`, checked to be of `kind`; otherwise an error naming the field."""
    value = record.get(name) if isinstance(record, dict) else None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):  # True is not a count
        label = f"{where}.{name}" if where else name
        expected = " or ".join(k.__name__ for k in kinds)
        raise InputError(f"expected {expected}, got {type(value).__name__}", source=source, line=line, field=label)
    return value


def read_text(path: Path | str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise file_error(exc, str(path)) from None
