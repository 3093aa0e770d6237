"""Plain YAML read without the YAML parser: the shape turn specs are written in, parsed as PyYAML's safe loader
parses it, or not at all.

A stand-in for PyYAML kept for the cold start it buys: with every document read by PyYAML's C loader, a cold
`kcost bill` of the lesson's YAML spec takes 0.074 s where it takes 0.066 s with this reader in front (+12%,
`bench/bench_startup.py`: importing PyYAML is 17 modules and a regular expression compiled), against the
start-up target of docs/performance.md (a cold bill at most 2x `kcost --version`, and unchanged).

A turn spec is almost always block mappings and sequences, one-line flow mappings and sequences, plain words,
decimal integers (`400_000`), `true`/`false` and comments, all in ASCII: `plain(text)` reads exactly that and gives
what `kcost.inputs.documents.load_yaml` would give, the data and the line of every value; on anything else (any other
character, a tab, a float, a quoted text with an escape, an anchor, a tag, a block or multi-line scalar, an empty
value, a duplicate key, a document marker, a line it cannot place) it gives None and the YAML parser reads the
document, its errors included. So a document is never read differently, only sooner: a test holds every answer to
PyYAML's, on the shipped samples and on generated and broken documents.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

LineMap = dict[tuple[object, ...], int]

_OUTSIDE = re.compile(r"[^\n -~]")  # anything but printable ASCII and newlines
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)\Z")
_WORD_FROM_DIGIT = re.compile(r"[0-9][0-9A-Za-z]*[A-Za-z][0-9A-Za-z]*\Z")
_BOOLS = {w: v for v, words in ((True, "yes true on"), (False, "no false off"))
          for word in words.split() for w in (word, word.title(), word.upper())}  # fmt: skip
_NULLS = frozenset(("~", "null", "Null", "NULL"))
_NOT_STR = "-+.0123456789=<"  # what could resolve as a number, a date, a value or a merge key
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")


class _Unplain(Exception):
    """The document is not of the plain shape: the YAML parser reads it."""


def plain(text: str) -> tuple[Any, LineMap] | None:
    """`text`'s data and the line of each value by its path (as `kcost.inputs.documents.load_yaml`), or None where the
    document is not plain YAML of the shape turn specs take."""
    if not text.isascii() or _OUTSIDE.search(text):
        return None
    rows: list[tuple[int, int, str]] = []  # (line, indent, content) of each line with content
    for number, raw in enumerate(text.split("\n"), start=1):
        if raw.startswith(("---", "...", "%")):
            return None
        try:
            content = _uncommented(raw).rstrip()
        except _Unplain:
            return None
        if content:
            stripped = content.lstrip(" ")
            rows.append((number, len(content) - len(stripped), stripped))
    if not rows:
        return None
    try:
        reader = _Reader(rows)
        lines: LineMap = {}
        data = reader.block(0, rows[0][1], (), lines)
        if reader.at != len(rows):
            return None  # a line it cannot place
    except (_Unplain, RecursionError, ValueError):  # nested too deep, a number too long: the parser says so
        return None
    return data, lines


def _uncommented(line: str) -> str:
    """`line` up to its comment (a `#` at its start or after a space, outside quotes)."""
    if "#" not in line:
        return line
    for i, c in _unquoted(line):
        if c == "#" and (i == 0 or line[i - 1] == " "):
            return line[:i]
    return line


def _unquoted(text: str) -> Iterator[tuple[int, str]]:
    """Each character of `text` outside quotes, with its place; `_Unplain` where a quote is left open."""
    quote = ""
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        else:
            yield i, c
    if quote:
        raise _Unplain


class _Reader:
    """Block nodes over the lines with content, from `at` on."""

    def __init__(self, rows: list[tuple[int, int, str]]) -> None:
        self.rows, self.at = rows, 0

    def block(self, at: int, indent: int, path: tuple[object, ...], lines: LineMap) -> Any:
        """The block node whose first line is row `at`, at `indent`: a sequence or a mapping."""
        self.at = at
        number, _, content = self.rows[at]
        lines[path] = number
        if _item(content):
            return self._sequence(indent, path, lines)
        return self._mapping(indent, content, path, lines)  # a lone scalar, or no entry, is not plain: it says so

    def _sequence(self, indent: int, path: tuple[object, ...], lines: LineMap) -> list[Any]:
        out: list[Any] = []
        rows = self.rows
        while self.at < len(rows):
            number, own, content = rows[self.at]
            if own != indent or not _item(content):
                if own > indent:
                    raise _Unplain
                break
            item = content[1:].lstrip(" ")
            where = (*path, len(out))
            if not item:  # the item on the lines under it
                self.at += 1
                if self.at == len(rows) or rows[self.at][1] <= indent:
                    raise _Unplain  # an empty item
                out.append(self.block(self.at, rows[self.at][1], where, lines))
            elif _item(item):
                raise _Unplain  # a sequence in a sequence on one line
            elif _entry(item) is not None:  # `- key: value`: a mapping at the item's column
                column = own + len(content) - len(item)
                lines[where] = number
                out.append(self._mapping(column, item, where, lines))
            else:
                lines[where] = number
                out.append(_flow(item, number, where, lines))
                self.at += 1
        return out

    def _mapping(self, indent: int, first: str, path: tuple[object, ...], lines: LineMap) -> dict[str, Any]:
        """A block mapping at `indent`, its first entry `first` (on row `at`), its others on the rows after."""
        out: dict[str, Any] = {}
        rows = self.rows
        content = first
        while True:
            number = rows[self.at][0]
            entry = _entry(content)
            if entry is None:
                raise _Unplain
            key, value = entry
            if key in out:
                raise _Unplain  # a duplicate: the YAML parser says where
            where = (*path, key)
            self.at += 1
            if value:
                lines[where] = number
                out[key] = _flow(value, number, where, lines)
            elif self.at < len(rows) and (rows[self.at][1] > indent or (
                    rows[self.at][1] == indent and _item(rows[self.at][2]))):  # fmt: skip
                out[key] = self.block(self.at, rows[self.at][1], where, lines)
            else:
                raise _Unplain  # an empty value
            if self.at == len(rows):
                break
            _, own, content = rows[self.at]
            if own < indent:
                break
            if own > indent:
                raise _Unplain  # a scalar going on under its key, or a line out of place
        return out


def _item(content: str) -> bool:
    """Whether a line's content is a block sequence's item (`- ...`, or a lone `-`)."""
    return content == "-" or content.startswith("- ")


def _entry(content: str) -> tuple[str, str] | None:
    """`key: value` (or `key:`) as its key and value, where `key` is a plain word that reads as a string."""
    key, colon, value = content.partition(":")
    if not colon or (value and value[0] != " ") or not _KEY.match(key) or key in _BOOLS or key in _NULLS:
        return None
    return key, value.strip(" ")


def _flow(text: str, number: int, path: tuple[object, ...], lines: LineMap) -> Any:
    """A node written on one line: a flow mapping or sequence of scalars, or a scalar."""
    if text[0] == "{":
        if text[-1] != "}":
            raise _Unplain
        out: dict[str, Any] = {}
        for part in _items(text[1:-1]):
            entry = _entry(part)
            if entry is None or not entry[1] or entry[0] in out:
                raise _Unplain
            key, value = entry
            lines[(*path, key)] = number
            out[key] = _scalar(value, flow=True)
        return out
    if text[0] == "[":
        if text[-1] != "]":
            raise _Unplain
        items: list[Any] = []
        for part in _items(text[1:-1]):
            lines[(*path, len(items))] = number
            items.append(_scalar(part, flow=True))
        return items
    return _scalar(text, flow=False)


def _items(inner: str) -> list[str]:
    """The comma-separated items of a flow collection's inside (no item empty, none nested)."""
    if not inner.strip(" "):
        return []
    parts: list[str] = []
    start = 0
    for i, c in _unquoted(inner):
        if c == ",":
            parts.append(inner[start:i])
            start = i + 1
        elif c in "[]{}":
            raise _Unplain
    parts.append(inner[start:])
    items = [p.strip(" ") for p in parts]
    if not all(items):
        raise _Unplain  # an empty item or a trailing comma
    return items


def _scalar(text: str, *, flow: bool) -> Any:
    """One scalar as the safe loader resolves it: a quoted text without escapes, or a plain word, integer,
    boolean or null."""
    first = text[0]
    if first in "'\"":
        if len(text) < 2 or text[-1] != first or first in text[1:-1] or "\\" in text:
            raise _Unplain
        return text[1:-1]
    if text in _BOOLS:
        return _BOOLS[text]
    if text in _NULLS:
        return None
    if _INT.match(text):
        return int(text.replace("_", ""))
    if _WORD_FROM_DIGIT.match(text) and not text.startswith(("0b", "0B", "0o", "0O", "0x", "0X")):
        return text  # a duration (`45m`, `1h30m`): letters and digits from a digit are no number nor date
    if first in _NOT_STR or first in _INDICATORS or text.endswith(":") or ": " in text or " #" in text:
        raise _Unplain
    if flow and any(c in text for c in ",[]{}:"):
        raise _Unplain
    return text
