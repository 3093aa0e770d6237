"""Request traces, streamed one line at a time: constant memory on a file of any size and on a line of any
length (a line past `MAX_LINE_BYTES` is refused as soon as that much of it is read, never held whole).

Two shapes per line:
- Mooncake (`kvcache-ai/Mooncake FAST25-release/traces`): `{"timestamp": ms, "input_length", "output_length",
  "hash_ids": [...]}`, one id per 512-token block, chained, the last (partial) block with its own id;
- kcost's own: `{"time": seconds, "input_tokens", "output_tokens", "blocks": [...], "session": "..."}`, the
  same blocks, and a session id for cache affinity.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from kcost.errors import InputError, file_error
from kcost.inputs.files import MiB
from kcost.model.bounds import MAX_TOKENS
from kcost.model.frozen import frozen
from kcost.model.k3 import HASH_BLOCK

# The longest trace line read, its line break not counted. A line is one request: the longest in the Mooncake
# traces is 2,698 bytes, and a prompt of K3's whole context window (1M tokens, 1,954 block ids of up to 20
# digits) is about 43 KB. The compiled core is given this same figure (`kcost.fleet.core`).
MAX_LINE_BYTES = MiB


@frozen(slots=True)
class TraceRequest:
    """One request of a trace: when it came, its sizes, and its prompt as 512-token block ids."""

    time: float  # seconds from the start of the trace
    input: int
    output: int
    blocks: tuple[int, ...]
    session: str | None = None


def read_trace(path: str, progress: Callable[[int], None] | None = None) -> Iterator[TraceRequest]:
    """Every request of the trace at `path`, in order; a bad line is an `InputError` naming it. `progress` is
    told the bytes read so far, every few thousand lines."""
    try:
        handle = open(path, encoding="utf-8") if path != "-" else None  # noqa: SIM115
    except OSError as exc:
        raise file_error(exc, path, "trace file") from None
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import sys

    stream = handle if handle is not None else sys.stdin
    seen = False
    last = 0.0
    try:
        for number, line in _lines(stream, path):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError) as exc:
                msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "cannot read this record"
                raise InputError(f"not valid JSON: {msg}", source=path, line=number) from None
            request = _request(record, path, number)
            if request.time < last:
                field = "timestamp" if "hash_ids" in record else "time"
                now, then = _apart(request.time, last)
                raise InputError(f"goes back in time ({now} s after {then} s): a trace is in time order",
                                 source=path, line=number, field=field)  # fmt: skip
            last = request.time
            if progress is not None and number % 4096 == 0:
                progress(stream.buffer.tell())
            yield request
            seen = True
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=path) from None
    finally:
        if handle is not None:
            handle.close()
    if not seen:
        raise InputError("is empty", source=path)


def _lines(stream: TextIO, path: str) -> Iterator[tuple[int, str]]:
    """Every line of `stream` with its number (universal newlines, as iterating the stream reads them); one
    longer than `MAX_LINE_BYTES` in UTF-8 is an `InputError` once that much of it is read, never held whole.
    `readline` bounds characters; a line within that bound is measured in bytes where it could be past it."""
    bound = MAX_LINE_BYTES + 1  # characters: one more than the longest line, to tell a longer one
    number = 0
    while line := stream.readline(bound):
        number += 1
        text = line[:-1] if line.endswith("\n") else line
        # 4 bytes at most to a character; standard input may hold undecodable bytes as escapes (1 byte each)
        if len(text) >= bound or (
            len(text) > MAX_LINE_BYTES // 4 and len(text.encode("utf-8", "surrogateescape")) > MAX_LINE_BYTES
        ):
            raise InputError(f"line is longer than {MAX_LINE_BYTES:,} bytes", source=path, line=number,
                             hint="a trace holds one request a line")  # fmt: skip
        yield number, line


def _request(record: Any, source: str, line: int) -> TraceRequest:
    if not isinstance(record, dict):
        raise InputError("expected a JSON object", source=source, line=line)
    if "hash_ids" in record:
        fields = ("timestamp", "input_length", "output_length", "hash_ids")
        scale = 0.001
    else:
        fields = ("time", "input_tokens", "output_tokens", "blocks")
        scale = 1.0
    stamp, size, out, blocks = (record.get(f) for f in fields)
    for name, value in zip(fields[:3], (stamp, size, out), strict=True):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise InputError(f"expected a number >= 0, got {value!r}", source=source, line=line, field=name)
    if not isinstance(size, int) or not isinstance(out, int):
        raise InputError("token counts must be whole numbers", source=source, line=line, field=fields[1])
    if size < 1:
        raise InputError("a request needs at least one input token", source=source, line=line, field=fields[1])
    for name, count in zip(fields[1:3], (size, out), strict=True):
        if count > MAX_TOKENS:
            raise InputError(f"must be at most {MAX_TOKENS:,} tokens, got {count:.3g}", source=source, line=line,
                             field=name)  # fmt: skip
    if not isinstance(blocks, list) or not set(map(type, blocks)) <= {int}:  # type(True) is bool: rejected
        raise InputError("expected a list of integer block ids", source=source, line=line, field=fields[3])
    if len(blocks) != -(-size // HASH_BLOCK):
        raise InputError(f"{len(blocks)} block ids for {size} tokens: expected one per {HASH_BLOCK} tokens",
                         source=source, line=line, field=fields[3])  # fmt: skip
    session = record.get("session")
    try:
        seconds = float(stamp) * scale  # type: ignore[arg-type]
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds):
        raise InputError(f"not a finite time: {stamp!r}", source=source, line=line, field=fields[0])
    if session is not None and not isinstance(session, str):
        raise InputError("expected a string", source=source, line=line, field="session")
    return TraceRequest(seconds, size, out, tuple(blocks), session)


def _apart(a: float, b: float) -> tuple[str, str]:
    """Two different times written so that they read differently: as short as they can be (`30` and `29.5`), with
    as many digits as it takes where they are close (`30.000000000000004` and `30`)."""
    for digits in (6, 9, 12, 15, 17):
        shown = (f"{a:.{digits}g}", f"{b:.{digits}g}")
        if shown[0] != shown[1]:
            return shown
    return repr(a), repr(b)
