"""Input sources: a file path or `-` for stdin, read once as bytes, with a format guess from name or content.

Logs are parsed from bytes (orjson takes them as they are and checks the UTF-8 itself); the text is decoded
only for the formats that need it (YAML and JSON turn specs).
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from kcost.errors import InputError, file_error
from kcost.inputs.files import noted
from kcost.readers.jsonl import first_string, records

TURN_FIELDS = {"new", "output", "reasoning", "keep", "edit_at", "repeat", "idle", "previous_output", "session"}
_BY_SUFFIX = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_BOM = b"\xef\xbb\xbf"
_NOT_SPACE = re.compile(rb"\S")


class Source:
    """An input as bytes: a file (or stdin, `-`), its name as the user wrote it (for messages) and the suffix of its
    file name. A file holds only its head (what its format is told by) until more is asked for: its records are
    read a piece at a time (`records`), so that memory holds the longest line, not the log; a format read whole
    (a JSON document, YAML) asks for `data`. Bytes held may be let go (`release`) once what is needed of them now
    is taken (its format, its claim made in a worker process): asked for again, they are read again from the file,
    and `size` stays known."""

    def __init__(self, name: str, data: bytes, suffix: str = "", *, whole: bool = False, after: int = 0,
                 path: str | None = None) -> None:  # fmt: skip
        self.name, self.suffix = name, suffix
        self.path = path or name  # where the file is read (a worker reads a relative path at the client's folder)
        self._data: bytes | None = data
        self._size = len(data)
        self._whole = whole  # `data` is the whole file at `name` as `open_source` read it: it can be read again
        self.after = after  # the file's lines before `data` (a log read on from where a look left it)
        self._head: bytes | None = None  # a peeked file's first bytes, while its whole is not read

    @classmethod
    def peeked(cls, name: str, head: bytes, size: int, suffix: str, path: str | None = None) -> Source:
        """The file at `path` (named `name`), of `size` bytes, of which only `head` is read yet."""
        source = cls(name, b"", suffix, whole=True, path=path)
        source._data, source._head, source._size = None, head, size
        return source

    def __repr__(self) -> str:
        return f"Source({self.name!r}, {self.size:,} bytes)"

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = _read_file(self.path, self.name)
            self._size = len(self._data)
            self._head = None
        return self._data

    @property
    def size(self) -> int:
        """Its bytes, counted whether they are held or let go."""
        return self._size

    def release(self) -> None:
        """Let go of the bytes and of what was parsed of them, where they are a file's as `open_source` read it
        (stdin cannot be read again, nor bytes given otherwise: a part of a file, a file's as a reader made them)."""
        if self._whole:
            self._data = self._head = None
            self.__dict__.pop("text", None)
            self.__dict__.pop("first_record", None)

    def pieces(self) -> Iterator[tuple[bytes | bytearray, int]]:
        """(buffer, end): the input's bytes, `buffer[:end]` at a time, each piece ending where a line does (the last,
        maybe, where the input does). The bytes held are one piece; a file not held whole is read into one buffer,
        `BLOCK` bytes at a time, which grows only to hold a line longer than it: memory holds the longest line, not
        the file. The buffer is reused for the next piece: what a caller keeps of it, it copies."""
        if self._data is not None or not self._whole:
            yield self.data, len(self.data)
            return
        try:
            with open(self.path, "rb", buffering=0) as file:
                lead = b""
                while len(lead) < len(_BOM) and (more := file.read(len(_BOM) - len(lead))):
                    lead += more  # a raw read may give fewer bytes than asked
                held = 0 if lead == _BOM else len(lead)
                # a file smaller than a block gets a buffer of its size (zeroing 8 MB for a 1 MB log costs 4 ms)
                room = min(BLOCK, max(os.fstat(file.fileno()).st_size + 1, 1 << 16))
                buf = bytearray(lead[:held]) + bytearray(max(room - held, 1))
                while True:
                    if held == len(buf):  # a line longer than the buffer: it grows to hold it
                        buf.extend(bytes(len(buf)))
                    with memoryview(buf) as view:
                        got = file.readinto(view[held:]) or 0
                    held += got
                    if got == 0:
                        if held:
                            yield buf, held
                        return
                    cut = buf.rfind(b"\n", 0, held) + 1
                    if cut == 0:  # no line ends in it yet
                        continue
                    yield buf, cut
                    buf[: held - cut] = buf[cut:held]  # the line it cut, moved to the front
                    held -= cut
        except OSError as exc:
            raise file_error(exc, self.name, "session file") from None
        except MemoryError:  # one line longer than this process may hold
            raise InputError("a line longer than this process may hold in memory", source=self.name) from None

    def records(self) -> Iterator[tuple[int, Any]]:
        """(line number, parsed value) of every non-blank line (JSON Lines), a piece at a time (`pieces`)."""
        number = self.after
        for data, end in self.pieces():
            yield from records(self.name, data, after=number, end=end)
            number += data.count(b"\n", 0, end)

    def contains(self, needle: bytes) -> bool:
        """Whether `needle` (which holds no line end) is among the input's bytes."""
        return any(data.find(needle, 0, end) >= 0 for data, end in self.pieces())

    def first_string(self, key: str) -> str | None:
        """`jsonl.first_string` of the input, a piece at a time."""
        for data, end in self.pieces():
            found = first_string(data, key, end)
            if found is not None:
                return found
        return None

    def head(self, size: int) -> bytes:
        """The input's first `size` bytes (at most)."""
        known, whole = self._known()
        if whole or len(known) >= size:
            return known[:size]
        for data, end in self.pieces():
            return bytes(data[: min(size, end)])
        return b""

    @property
    def stem(self) -> str:
        return "stdin" if self.name == "-" else Path(self.name).stem

    @cached_property
    def text(self) -> str:
        """The whole input as text, decoded once."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", source=self.name) from None

    def _known(self) -> tuple[bytes, bool]:
        """The bytes at hand (a peeked file's head, else the whole) and whether they are the whole input."""
        head = self._head
        if self._data is None and head is not None:
            return head, len(head) >= self._size
        return self.data, True

    def lead(self) -> bytes:
        """The first byte that is not white space (b"" for none), found without copying the input."""
        known, whole = self._known()
        found = _NOT_SPACE.search(known)
        if found is None and not whole:
            found = _NOT_SPACE.search(self.data)
        return found.group() if found else b""

    def first_line(self) -> tuple[int, bytes]:
        """(line number, bytes) of the first non-blank line."""
        known, whole = self._known()
        start, number = 0, 1
        while True:
            end = known.find(b"\n", start)
            if end < 0 and not whole:  # the line goes on past the head: the whole file is read
                known, whole = self.data, True
                continue
            line = known[start:] if end < 0 else known[start:end]
            if line.strip() or end < 0:
                return number, line
            start, number = end + 1, number + 1

    @cached_property
    def first_record(self) -> Any:
        """The first line's JSON value (JSON Lines), else the whole document's; `[]` for what is not JSON (YAML).
        Parsed once, for every format's detection to look at."""
        if self.lead() not in (b"{", b"["):
            return []
        number, first = self.first_line()
        try:
            return orjson.loads(first)
        except orjson.JSONDecodeError as at_first:
            try:
                return orjson.loads(self.data)
            except orjson.JSONDecodeError as whole:
                # JSON Lines (a first line that looks whole): name that line; else the document's own error
                after = self.data.index(first) + len(first)
                rest = self.data[after : after + 4096]
                one_per_line = first.rstrip().endswith(b"}") or rest.lstrip().startswith(b"{")
                if one_per_line:
                    raise InputError(f"not valid JSON: {at_first.msg}", source=self.name, line=number) from None
                raise InputError(f"not valid JSON: {whole.msg}", source=self.name, line=whole.lineno) from None

    def sniff(self) -> str:
        """The format by file suffix; for stdin or an unknown suffix, by content (JSONL is never one JSON)."""
        if self.suffix in _BY_SUFFIX:
            return _BY_SUFFIX[self.suffix]
        if self.lead() not in (b"{", b"["):
            return "yaml"
        number, first = self.first_line()
        value = _loads(first)
        if value is not None and _NOT_SPACE.search(self.data, self.data.index(first) + len(first)):
            return "jsonl"  # a whole JSON value on the first line, and more after it
        try:
            value = json.loads(self.text)
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            if isinstance(exc, json.JSONDecodeError) and exc.msg == "Extra data":
                return "jsonl"
            return "yaml"  # YAML flow style, or broken JSON, which the YAML parser locates as well
        if isinstance(value, dict) and "turns" not in value and value.keys() & TURN_FIELDS:
            return "jsonl"  # a one-line stream of turns
        return "json"


def _loads(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def open_source(path: str, name: str | None = None) -> Source:
    """Read `path` (or stdin for `-`), named `name` where it is read at another path than the run named (a Dask
    worker reads a relative path at the client's folder); an unreadable or empty input raises `InputError`."""
    if path == "-":
        try:
            data = sys.stdin.buffer.read()
        except (OSError, ValueError, AttributeError):
            raise InputError("cannot read standard input", source="-") from None
        source = Source("-", data.removeprefix(_BOM))
        if not source.lead():
            raise InputError("is empty", source="-")
        return source
    return peek_source(path, name)


HEAD_BYTES = 1 << 16  # what a folder walk reads of a log to know its format (its first line, where it fits)
BLOCK = 8 << 20  # what a log read a piece at a time is read in (`Source.pieces`)


def peek_source(path: str, name: str | None = None) -> Source:
    """A file (named `name` where it is read at another path than the run named) looked at for its format: its
    first `HEAD_BYTES` read (the whole file where detection needs more, or a piece at a time where the reader reads
    its records); `InputError` where it cannot be read, is no regular file, or holds nothing but white space."""
    named = name or path
    try:
        info = os.stat(path)
        noted(path, info)
        if not stat.S_ISREG(info.st_mode):  # a device, a FIFO: no end to wait for (not even to open)
            raise InputError("not a regular file", source=named, hint="give a file, a folder or -")
        with open(path, "rb") as file:
            head = file.read(max(HEAD_BYTES, len(_BOM)))
    except OSError as exc:
        raise file_error(exc, named, "session file") from None
    size = info.st_size
    if head.startswith(_BOM):
        head, size = head[len(_BOM) :], size - len(_BOM)
    if not _NOT_SPACE.search(head) and len(head) >= size:
        raise InputError("is empty", source=named)
    source = Source.peeked(named, head, max(size, len(head)), Path(named).suffix.lower(), path)
    if not _NOT_SPACE.search(head) and not any(_NOT_SPACE.search(data, 0, end) for data, end in source.pieces()):
        raise InputError("is empty", source=named)  # white space all through the head: the rest said so too
    return source


def _read_file(path: str, name: str) -> bytes:
    """The bytes of the file at `path` (named `name`; a byte-order mark dropped); `InputError` where it cannot be
    read, is no regular file, or holds nothing but white space."""
    try:
        info = os.stat(path)
        noted(path, info)
        if not stat.S_ISREG(info.st_mode):  # a device, a FIFO: no end to wait for (not even to open)
            raise InputError("not a regular file", source=name, hint="give a file, a folder or -")
        data = Path(path).read_bytes().removeprefix(_BOM)
    except OSError as exc:
        raise file_error(exc, name, "session file") from None
    except MemoryError:  # a log asked for whole (a JSON document): one larger than this process may hold is refused
        raise InputError(f"{info.st_size:,} bytes: more than this process may hold in memory",
                         source=name, hint="bill it on a machine with more memory, or split it") from None
    if not _NOT_SPACE.search(data):
        raise InputError("is empty", source=name)
    return data
