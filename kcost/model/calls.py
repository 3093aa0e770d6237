"""Model calls as logs record them: the common currency of every transcript reader.

A reader turns its file into `Call`s: the prompt the API saw (system prompt, tools, messages, the parameters
that change the rendered prompt), the output, and the usage the provider reported, if any. Messages are
frozen and hashable, so a message that recurs in every later request is rendered and counted once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

from kcost.errors import InputError, Leniency
from kcost.model.frozen import frozen


@frozen(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as sent


@frozen(slots=True)
class Message:
    """One chat message in the OpenAI/Kimi shape, flattened to text."""

    role: str
    content: str = ""
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    partial: bool = False


@frozen(slots=True)
class Usage:
    """What the provider billed: prompt tokens (cached and written included), cached tokens, output tokens
    (reasoning included); cache writes and reasoning tokens where the log breaks them out, and of the writes
    those kept an hour (`written_1h`, the rest kept 5 minutes) where the log says (Anthropic's `cache_creation`;
    None: it does not say). `cached_logged`: False where the log gives no cached count and `cached` is a 0 it
    stands in for (a Kimi CLI call sized from its context's `_usage` counts): no evidence of the cache's rule."""

    prompt: int
    cached: int
    output: int
    written: int = 0
    reasoning: int | None = None
    written_1h: int | None = None
    cached_logged: bool = True

    @property
    def empty(self) -> bool:
        """Nothing billed (an aborted or failed call logs zeros, its reasoning's count 0 or not given): no call."""
        return not (self.prompt or self.cached or self.output or self.written)


@frozen(slots=True)
class Call:
    """One request: its prompt, what it produced, what the log says it cost, and where the log said it."""

    messages: tuple[Message, ...] | None  # None: the log has no prompt (a response, a usage-only record)
    unlogged: str | None = None  # what the log leaves out of the front of the prompt ("tools"), if anything;
    # calls of one session naming the same thing share it (a sub-agent names its own)
    system: str | None = None  # a system prompt kept apart from the messages (Kimi CLI, Kimi Code)
    tools: tuple[Any, ...] | None = None  # tool schemas as sent; None: not in the log
    effort: str | None = None  # reasoning effort, which K3 renders into the prompt
    model: str | None = None
    time: float | None = None  # seconds
    output: Message | None = None  # the reply, where the log has it
    reported: Usage | None = None
    line: int | None = None
    id: str | None = None
    compacted: bool = False  # its conversation was compacted or cleared since its previous call: a message that
    # differs is the compaction's, not an edit


def message_from_openai(raw: Mapping[str, Any], *, where: str = "message") -> Message:
    """An OpenAI/Kimi-style message dict as a `Message`; `where` names it in an error."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("role"), str):
        raise InputError("expected a message with a `role`", field=where)
    for name in ("reasoning_content", "tool_call_id", "name"):
        if raw.get(name) is not None and not isinstance(raw[name], str):
            raise InputError(f"expected a string, got {type(raw[name]).__name__}", field=f"{where}.{name}")
    if raw.get("tool_calls") is not None and not isinstance(raw["tool_calls"], list):
        raise InputError("expected a list", field=f"{where}.tool_calls")
    content = content_text(raw.get("content"), where=f"{where}.content")
    tools = raw.get("tools") if raw["role"] == "system" else None
    if tools is not None:  # a system message declaring more tools mid-conversation (K3: "## New Tools Available")
        if not isinstance(tools, list):
            raise InputError("expected a list", field=f"{where}.tools")
        content += "\n## New Tools Available\n" + json.dumps(tools, sort_keys=True, ensure_ascii=False)
    calls = []
    for i, call in enumerate(raw.get("tool_calls") or ()):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping):
            raise InputError("a tool call needs `function`", field=f"{where}.tool_calls[{i}]")
        args = fn.get("arguments", "")
        calls.append(
            ToolCall(
                str(call.get("id", "")),
                str(fn.get("name", "")),
                args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
            )
        )
    return Message(
        role=raw["role"],
        content=content,
        reasoning=raw.get("reasoning_content") or None,
        tool_calls=tuple(calls),
        tool_call_id=raw.get("tool_call_id"),
        name=raw.get("name"),
        partial=bool(raw.get("partial")),
    )


def split_think(content: Any) -> tuple[str | None, Any]:
    """`think` parts (Kimi CLI, Kimi Code) as reasoning text, and the other parts."""
    if not isinstance(content, list):
        return None, content
    thoughts, rest = [], []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "think":
            think = part.get("think")
            thoughts.append(think if isinstance(think, str) else "")
        else:
            rest.append(part)
    return "".join(thoughts) or None, rest


def content_text(content: Any, *, where: str = "content") -> str:
    """A string, or a list of parts: text joined; media as a short placeholder that names its source (so a
    changed image changes the prompt; its real token cost is not known); `think` parts are left to the caller."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InputError(f"expected a string or a list of parts, got {type(content).__name__}", field=where)
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, Mapping):
            kind = part.get("type")
            if kind == "text":
                text = part.get("text")
                out.append(text if isinstance(text, str) else "")
            elif kind in ("image_url", "video_url", "audio_url"):
                source = part.get(kind)
                url = source.get("url", "") if isinstance(source, Mapping) else source
                out.append(f"<{kind}:{_media_id(str(url))}>")
            elif kind in ("image", "document"):  # Anthropic's blocks: {"source": {"data" | "url" | "file_id"}}
                source = part.get("source")
                held = next((source.get(k) for k in ("data", "url", "file_id") if isinstance(source, Mapping)
                             and isinstance(source.get(k), str)), "")  # fmt: skip
                out.append(f"<{kind}:{media_digest(str(held))}>")
    return "".join(out)


def _media_id(url: str) -> str:
    """Inline data (`data:image/png;base64,...`) by its digest, not as text to be counted; a link as itself."""
    if url.startswith("data:") or len(url) > 512:
        return media_digest(url)
    return url


def media_digest(held: str) -> str:
    """Media (an image's data, a file's link) as it stands in a prompt's text: `sha256:` and its digest's first 16
    hex digits."""
    return "sha256:" + sha256_hex(held)[:16]


def sha256_hex(text: str) -> str:
    """The SHA-256 digest of `text` (UTF-8), in hex; OpenSSL is loaded only where one is asked for (its import is
    4-5 ms of any run: a prompt with media in it, a logged system prompt's hash)."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


_EARLIEST = -62_135_596_800  # 0001-01-01T00:00:00Z: the calendar's first moment (`datetime.min`)
_LATEST = 253_402_300_799  # 9999-12-31T23:59:59Z: past it a time is a broken log
_MILLIS = 100_000_000_000  # a count of seconds this large is the year 5138: a count of milliseconds (1973 on)
_NUMBER = re.compile(r"\d+(\.\d*)?")


def timestamp(value: Any, *, field: str, per_second: int = 1, leniency: Leniency) -> float | None:
    """A logged time as Unix seconds: a number (in units of 1/`per_second` s; with the default, seconds or, past
    `_MILLIS`, milliseconds, as logs write either), the same number written as a string, or an ISO 8601 string;
    None when the log has none. A time that is no finite date is an error naming `field` (None: a lenient read
    skipped it)."""
    try:
        return _timestamp(value, field, per_second)
    except InputError as exc:
        leniency.forgive(exc)
        return None


def _timestamp(value: Any, field: str, per_second: int) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if "-" not in text and _NUMBER.fullmatch(text):  # an ISO date has its dashes, a number none
            return _seconds(float(text), value, field, per_second)

        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InputError(f"not an ISO 8601 time: {value[:40]!r}", field=field) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        seconds = moment.timestamp()
        if not _EARLIEST <= seconds < _LATEST + 1:  # its offset carries it past the calendar (as a float, to a
            # microsecond of 10000-01-01): no day, week or bill could be placed at it
            edge = "before 0001-01-01" if seconds < 0 else "after 9999-12-31"
            raise InputError(f"not a time: {value[:40]!r} is {edge} in UTC", field=field,
                             hint="times run from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z")  # fmt: skip
        return seconds
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a time, got {type(value).__name__}", field=field)
    return _seconds(value, value, field, per_second)


def _seconds(number: float, value: Any, field: str, per_second: int) -> float:
    if per_second == 1 and number >= _MILLIS:
        per_second = 1000  # epoch milliseconds (JavaScript's `Date.now()`)
    seconds = number / per_second
    if not 0 <= seconds <= _LATEST:  # NaN fails both
        raise InputError(f"not a time: {str(value)[:40]!r}" if isinstance(value, str) else f"not a time: {value!r}",
                         field=field)  # fmt: skip
    return float(seconds)


def on_clock(seconds: float, zone: tzinfo | None) -> datetime:
    """The Unix time `seconds` (a time `timestamp` read) on the clock of `zone` (None: the machine's). Where that
    clock reads a day before 0001-01-01 or after 9999-12-31 (a time on the calendar's first day west of UTC, or on
    its last east of it), the calendar's first or last moment in `zone` stands in: its day, week and month are the
    calendar's first or last, where `datetime` would raise."""
    utc = datetime.fromtimestamp(seconds, timezone.utc)
    try:
        return utc.astimezone(zone)
    except (OverflowError, ValueError):
        early = seconds < 0
        edge = datetime.min if early else datetime.max
        # the zone's offset two days inside the calendar: at the edge itself the conversion is what overflows
        inside = utc + timedelta(days=2) if early else utc - timedelta(days=2)
        return edge.replace(tzinfo=inside.astimezone(zone).tzinfo)
