"""Antigravity conversations (`~/.gemini/antigravity-cli/conversations/<conversation>.db`): what each would cost
on K3.

Antigravity (Google; closed source) keeps each conversation in a SQLite database of its own, named by the
conversation's id, under `conversations/` of its data folder: `~/.gemini/antigravity-cli` for the CLI (`agy`),
`~/.gemini/antigravity-ide` for the IDE, `~/.gemini/antigravity` for the desktop app and older IDEs (the folders
ccusage reads: ccusage/ccusage `rust/adapters/antigravity/src/paths.rs`, `README.md`). A sub-agent's conversation
is a database of its own. The tables hold protocol buffers with no published schema; the fields read here are
those ccusage recovered from the `agy` binary (`rust/adapters/antigravity/src/parser.rs`): `steps.metadata` (a
step's metadata: 8 its time, 9 the usage of its model call, 24 the model, 28 the attempts retried, each 2 a
usage), `gen_metadata.data` (1 a call's metadata: 3 the model, 4 its usage, 9.4 its time, 17 its attempts, 19 or
21 the model's label) and `trajectory_metadata_blob.data` (1.1 the workspace's URI, 2 the conversation's start).
A usage (`ModelUsageStats`) is one model call's, not a running total: 2 the input tokens that neither read nor
wrote the cache, 4 those written, 5 those read, 3 the output (9 the thinking + 10 the reply), 7, 11 and 12 the
call's message, response and provider ids. So the prompt is 2 + 4 + 5, of which 5 were read and 4 written, the
output 3 and the reasoning 9; ccusage 20.0.24 bills 10 as the output and counts 9 only in its total.

A call is logged more than once: by its step and its `gen_metadata` row, again in the retries' list, and in a
sub-agent's conversation as well as its parent's. As ccusage does, every record of a run that shares an id with
another is one call (the largest of each count, its best time), billed in the first conversation (in the order of
their paths) that holds it; an attempt that shares its message id with the call that succeeded is that call. The
conversations' contents are protocol buffers of no known schema: each call is billed as reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from kcost.errors import STRICT, InputError, Leniency
from kcost.model.calls import Call, Usage, timestamp
from kcost.readers.registry import Part, Reader
from kcost.readers.source import Source
from kcost.readers.sqlite import SQLITE, columns, query
from kcost.readers.usage import MAX_COUNT

_WHAT = "Antigravity conversation"

# A call as `claim` parses it: its ids, its counts (2 input, 4 written, 5 read, 9 thinking, 10 reply, 3 output),
# its model, its time and how much that time is to be trusted (3 its step's, 2 its generation's, 1 the
# conversation's start).
Event = tuple[tuple[str, ...], tuple[int, ...], str | None, float | None, int]


class Antigravity(Reader):
    name = "antigravity"
    one_call = "a `ModelUsageStats` (a step's, a `gen_metadata` row's, a retry's), once by its ids"
    usage_read = "2 + 4 (written) + 5 (read); 3 = 9 (thinking) + 10 (reply)"
    source_read = "ccusage `rust/adapters/antigravity/src/parser.rs` (closed agent; fields from the `agy` binary)"
    comparable = False  # Google's cache: its hits say nothing of K3's
    suffixes = (".db",)

    def recognise(self, source: Source) -> bool:
        """A SQLite database with Antigravity's `steps` and `gen_metadata` tables."""
        if source.name == "-" or source.head(16) != SQLITE:
            return False
        try:
            return {"idx", "metadata"} <= columns(source.path, _WHAT, "steps") and "data" in columns(
                source.path, _WHAT, "gen_metadata")  # fmt: skip
        except InputError:
            return False

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> Part:
        """The conversation's calls, parsed now: which of them another conversation logs too is known once the
        run's every conversation is."""
        if isinstance(unit, Path) or unit.name == "-":
            raise InputError("not an Antigravity conversation: give its <id>.db", source=str(unit))
        return Part(unit, _events(unit.path, unit.name))

    def join(self, parts: list[Part]) -> list[list[Part]]:
        """Each conversation a session of its own, a call logged in several billed in the first (by path)."""
        ordered = sorted(parts, key=lambda p: p.source.name)
        owner: dict[str, int] = {}  # an id -> the group of records sharing it (union-find roots)
        up: list[int] = []
        found: list[tuple[int, Event]] = []  # (the part, the record)

        def root(n: int) -> int:
            while up[n] != n:
                up[n] = up[up[n]]
                n = up[n]
            return n

        for index, part in enumerate(ordered):
            for event in part.parsed:
                n = len(up)
                up.append(n)
                found.append((index, event))
                for key in event[0]:
                    if key in owner:
                        up[root(n)] = root(owner[key])
                    owner.setdefault(key, n)
        groups: dict[int, list[tuple[int, Event]]] = {}
        for n, held in enumerate(found):
            groups.setdefault(root(n), []).append(held)
        calls: list[list[Event]] = [[] for _ in ordered]
        for members in groups.values():
            calls[min(i for i, _ in members)].append(_merged([e for _, e in members]))
        return [[Part(p.source, sorted(c, key=lambda e: e[3] or 0.0))] for p, c in zip(ordered, calls, strict=True)]

    def read_parts(
        self, parts: list[Part], notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        notes.append("Antigravity logs each call's counts, not a prompt kcost can rebuild: billed as reported")
        for part in parts:
            for ids, counts, model, time, _ in part.parsed:
                usage = _usage(counts)
                if not usage.empty:
                    yield Call(messages=None, time=time, model=model, reported=usage, id=ids[0] if ids else None)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        return self.read_parts(self.join([self.claim(unit)])[0], notes, prompts=prompts, leniency=leniency)

    def reads_again(self, parts: list[Part]) -> bool:
        return False  # read from what `claim` parsed

    def project(self, unit: Source | Path) -> str | None:
        """The conversation's workspace (`trajectory_metadata_blob`'s URI), as a path."""
        if not isinstance(unit, Source):
            return None
        try:
            rows = query(unit.path, _WHAT, "SELECT data FROM trajectory_metadata_blob ORDER BY rowid",
                         required=False)  # fmt: skip
        except InputError:
            return None
        for row in rows:
            try:
                uri = _text(_first(_fields(_first(_fields(row["data"]), 1)), 1))
            except InputError:
                continue
            if uri:
                return unquote(urlparse(uri).path) if uri.startswith("file:") else uri
        return None


def _events(path: str, name: str) -> list[Event]:
    """Every usage the conversation logs: its steps', their retries', its generations' and theirs."""
    created = None
    for row in query(path, _WHAT, "SELECT data FROM trajectory_metadata_blob ORDER BY rowid", required=False):
        created = created or _time(_first(_fields(row["data"], name, "trajectory_metadata_blob"), 2), name,
                                   "trajectory_metadata_blob")  # fmt: skip
    gens = query(path, _WHAT, "SELECT idx, data FROM gen_metadata ORDER BY idx")
    generations = []
    label = None  # the model of the latest generation: a step's where the step names none
    for row in gens:
        where = f"gen_metadata {row['idx']}"
        meta = _first(_fields(row["data"], name, where), 1)
        fields = _fields(meta, name, where)
        model = _label(fields)
        label = model or label
        time = _time(_first(_fields(_first(fields, 9)), 4), name, where)
        stats = [_first(fields, 4), *(_first(_fields(r), 2) for r in fields.get(17, []))]
        generations += [(s, model, time) for s in stats if s]
    events = []
    for row in query(path, _WHAT, "SELECT idx, metadata FROM steps WHERE metadata IS NOT NULL ORDER BY idx"):
        where = f"steps {row['idx']}"
        fields = _fields(row["metadata"], name, where)
        time = _time(_first(fields, 8) or _first(fields, 1), name, where)
        info = _fields(_first(fields, 24), name, where)
        model = _text(_first(info, 12) or _first(info, 8)) or label
        for stats in [_first(fields, 9), *(_first(_fields(r), 2) for r in fields.get(28, []))]:
            if stats:
                events.append(_event(stats, model, time, 3, created, name, where))
    for stats, model, time in generations:
        events.append(_event(stats, model, time, 2, created, name, "gen_metadata"))
    return events


def _event(stats: bytes, model: str | None, time: float | None, rank: int, created: float | None, name: str,
           where: str) -> Event:  # fmt: skip
    fields = _fields(stats, name, where)
    counts = tuple(_count(fields, n, name, where) for n in (2, 4, 5, 9, 10, 3))
    ids = tuple(
        f"{kind}:{_text(_first(fields, n))}"
        for kind, n in (("response", 11), ("provider", 12), ("message", 7))
        if _text(_first(fields, n))
    )
    if model is None and isinstance(_first(fields, 1), int):
        model = f"antigravity-model-{_first(fields, 1)}"
    return ids, counts, model, time if time is not None else created, rank if time is not None else 1


def _merged(events: list[Event]) -> Event:
    """One call of the records that share its ids: the largest of each count, the earliest of its best-trusted
    times, the first model named."""
    ids = tuple(dict.fromkeys(k for e in events for k in e[0]))
    counts = tuple(max(e[1][n] for e in events) for n in range(6))
    rank = max(e[4] for e in events)
    times = [e[3] for e in events if e[4] == rank and e[3] is not None]
    model = next((e[2] for e in events if e[2]), None)
    return ids, counts, model, min(times) if times else None, rank


def _usage(counts: tuple[int, ...]) -> Usage:
    fresh, written, read, thinking, reply, output = counts
    total = max(output, thinking + reply)
    return Usage(prompt=fresh + written + read, cached=read, output=total, written=written,
                 reasoning=min(thinking, total) if thinking else None)  # fmt: skip


def _label(fields: dict[int, list[Any]]) -> str | None:
    """A generation's model: its label (`Gemini 3.5 Flash (High)` as `gemini-3.5-flash-high`), else its number."""
    label = _text(_first(fields, 21) or _first(fields, 19))
    if label:
        return "-".join(re.sub(r"[()]", " ", label).lower().split())
    number = _first(fields, 3)
    return f"antigravity-model-{number}" if isinstance(number, int) else None


def _time(raw: Any, name: str, where: str) -> float | None:
    """A protobuf `Timestamp` (1 seconds, 2 nanoseconds) as Unix seconds; one past the calendar is an error."""
    if not isinstance(raw, bytes):
        return None
    fields = _fields(raw)
    seconds, nanos = _first(fields, 1), _first(fields, 2) or 0
    if not isinstance(seconds, int) or not isinstance(nanos, int) or seconds <= 0:
        return None
    try:
        return timestamp(seconds * 10**9 + nanos, field="timestamp", per_second=10**9, leniency=STRICT)
    except InputError as exc:
        raise InputError(exc.message, source=name, field=f"{where}: timestamp") from None


def _count(fields: dict[int, list[Any]], number: int, name: str, where: str) -> int:
    value = _first(fields, number) or 0
    if not isinstance(value, int) or value > MAX_COUNT:
        raise InputError(f"not a token count: {str(value)[:40]!r}", source=name, field=f"{where}: usage field {number}")
    return value


def _text(raw: Any) -> str | None:
    if not isinstance(raw, bytes):
        return None
    try:
        return raw.decode() or None
    except UnicodeDecodeError:
        return None


def _first(fields: dict[int, list[Any]], number: int) -> Any:
    values = fields.get(number)
    return values[0] if values else None


def _fields(raw: Any, name: str | None = None, where: str = "") -> dict[int, list[Any]]:
    """A protobuf message's fields by number, each value a whole number (varint) or bytes (length-delimited);
    fixed-width values are skipped. Bytes that are no message are an `InputError` where `name` says whose they
    are, else no fields."""
    if not isinstance(raw, bytes):
        return {}
    fields: dict[int, list[Any]] = {}
    at, end = 0, len(raw)
    try:
        while at < end:
            key, at = _varint(raw, at)
            number, kind = key >> 3, key & 7
            value: int | bytes
            if kind == 0:
                value, at = _varint(raw, at)
            elif kind == 2:
                size, at = _varint(raw, at)
                if at + size > end:
                    raise ValueError("a field runs past its message")
                value, at = raw[at : at + size], at + size
            elif kind in (1, 5):
                at += 8 if kind == 1 else 4
                continue
            else:
                raise ValueError(f"wire type {kind}")
            fields.setdefault(number, []).append(value)
    except ValueError as exc:
        if name is None:
            return {}
        raise InputError(f"not a protocol buffer Antigravity writes ({exc})", source=name, field=where) from None
    return fields


def _varint(raw: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(raw) or shift > 63:
            raise ValueError("a broken varint")
        byte = raw[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7
