"""The pi coding agent's sessions (`~/.pi/agent/sessions/--<cwd>--/<time>_<session id>.jsonl`): what each would cost
on K3.

pi (badlogic/pi-mono, `packages/coding-agent`) keeps its sessions under its agent folder (`PI_CODING_AGENT_DIR`,
else `~/.pi/agent`: `getAgentDir` in `src/config.ts`), in `sessions/` (`getSessionsDir`), a folder per working
directory and a file per session (`SessionManager.newSession` in `src/core/session-manager.ts`), one entry a line:
a header `{"type": "session", "version", "id", "timestamp", "cwd"}` (`parentSession`, or `branchedFrom` in
version 1, where it was forked from another session), then `message`, `model_change`, `compaction`,
`branch_summary`, `custom_message`... entries, each with its `id` and `parentId` (from version 2; a version-1 file
is one line of entries). An `assistant` message entry is one call (`agent-session.ts`, at `message_end`): its
`message.usage` (`packages/ai/src/types.ts`) holds `input` (what neither read nor wrote the cache: every provider
adapter leaves the cache out of it, `providers/anthropic.ts`, `openai-completions.ts`), `cacheRead`, `cacheWrite`
and `output` (the reasoning in it: pi 0.73.1 stored a completion of 300 tokens, 40 of them reasoning, as
`output: 300`). So the prompt is `input + cacheRead + cacheWrite`, of which `cacheRead` were read and `cacheWrite`
written, and the output `output`, as ccusage 20.0.24 reads them; a record that logs only `totalTokens` (none pi
writes, one ccusage's tests hold) is its output, as ccusage counts it. A failed call (`stopReason: "error"`) logs
no tokens and is no call.

Each call's prompt is rebuilt as pi's `buildSessionContext` builds it: the entries along the `parentId`s from
the call back to the header, from the last compaction on the way (its summary, then the entries from its
`firstKeptEntryId` on). The system prompt and tools are not logged. A session forked from another (`--fork`,
`/fork`: `createBranchedSession`) starts with a copy of the other's entries, each with its `id`, time and usage:
where the session it was forked from lies beside it, those copied calls (stamped before the fork's header) are
billed there, not again (ccusage 20.0.24 bills them in both); where it does not, they are billed here.
Compaction and title calls are not logged, so they are not billed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Message, ToolCall, Usage, timestamp
from kcost.readers.jsonl import as_text, dumps
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.usage import MAX_COUNT


def is_header(record: Any) -> bool:
    """A pi session header: `{"type": "session", "id", "timestamp", "cwd"}`."""
    return (
        isinstance(record, Mapping)
        and record.get("type") == "session"
        and isinstance(record.get("id"), str)
        and isinstance(record.get("cwd"), str)
        and "timestamp" in record
    )


class PiAgent(Reader):
    name = "pi-agent"
    one_call = "an `assistant` message entry with `usage`"
    usage_read = "`usage.input + cacheRead + cacheWrite` (`input` without the cache), `usage.output` (reasoning in it)"
    source_read = "badlogic/pi-mono `packages/ai/src/types.ts`, `packages/coding-agent/src/core/session-manager.ts`"
    comparable = False  # whichever provider's cache served it: its hits need not be Kimi's

    def detect(self, first: Any) -> bool:
        return is_header(first)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        return _read(unit, notes, prompts=prompts, leniency=leniency)

    def project(self, unit: Source | Path) -> str | None:
        """The header's working directory (`cwd`)."""
        return unit.first_string("cwd") if isinstance(unit, Source) else None


def _read(src: Source, notes: list[str], *, prompts: bool, leniency: Leniency) -> Iterator[Call]:
    header: Mapping[str, Any] = {}
    records = whole_records(src, notes)
    first = next(records, None)
    if first is not None and is_header(first[1]):
        header = first[1]
    elif first is not None:
        records = iter([first, *records])
    forked_at = _forked_at(src, header)
    copied = 0
    for call in calls(records, src.name, prompts=prompts, leniency=leniency):
        if forked_at is not None and call.time is not None and call.time < forked_at:
            copied += 1
            continue
        yield call
    if copied:
        notes.append(f"{copied} call(s) copied from the session this one was forked from: billed there")


def whole_records(src: Source, notes: list[str]) -> Iterator[tuple[int, Any]]:
    """The file's entries (JSON Lines); a last line cut short (no line end after it: the agent was writing it, as
    `appendFileSync` may leave one) is left out, with a note."""
    try:
        yield from src.records()
    except InputError as exc:
        data = src.data if src.name != "-" else b""
        if not data or data.endswith(b"\n") or exc.line != data.count(b"\n") + 1:
            raise
        notes.append(f"its last line (line {exc.line}) was cut short, still being written: left out")


def _forked_at(src: Source, header: Mapping[str, Any]) -> float | None:
    """When the session was forked from another that lies beside it (None: not forked, or its parent is gone):
    its calls before then are the parent's, copied."""
    parent = header.get("parentSession", header.get("branchedFrom"))
    if not isinstance(parent, str) or not parent or src.name == "-":
        return None
    name = (PureWindowsPath if "\\" in parent else PurePosixPath)(parent).name
    if not name or not (Path(src.name).parent / name).is_file():
        return None
    try:
        return timestamp(header.get("timestamp"), field="timestamp", leniency=Leniency(False))
    except InputError:
        return None


def calls(records: Iterable[tuple[int, Any]], source: str, *, prompts: bool, leniency: Leniency) -> Iterator[Call]:
    """Each call of a pi session's entries (in order, each entry once): one per `assistant` message entry that
    logged tokens, its prompt rebuilt as `buildSessionContext` builds it."""
    entries: dict[str, Mapping[str, Any]] = {}
    parent: dict[str, str | None] = {}
    seen: set[str] = set()
    converted: dict[str, list[Message]] = {}  # each entry's messages, made once
    model: str | None = None
    last: str | None = None
    for line, record in records:
        if not isinstance(record, Mapping):
            raise InputError("expected an object", source=source, line=line)
        key = _key(record, line)
        if key in seen:
            continue  # an entry written again
        seen.add(key)
        kind = record.get("type")
        up = record.get("parentId", last) if "id" in record else last
        entries[key] = record
        parent[key] = up if isinstance(up, str) else None
        last = key
        if kind == "model_change" and isinstance(record.get("modelId"), str):
            model = record["modelId"]
        elif kind == "custom" and record.get("customType") == "model-snapshot":
            data = record.get("data")
            if isinstance(data, Mapping) and isinstance(data.get("modelId"), str):
                model = data["modelId"]
        message = record.get("message")
        if kind != "message" or not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        try:
            usage = pi_usage(message.get("usage"))
        except InputError as exc:
            leniency.forgive(exc.located(source=source, line=line))
            continue
        if usage is None or usage.empty:  # no usage, or a failed call
            continue
        stamp = record.get("timestamp")
        try:
            when = timestamp(stamp if stamp is not None else message.get("timestamp"), field="timestamp",
                             leniency=leniency)  # fmt: skip
        except InputError as exc:
            raise exc.located(source=source, line=line) from None
        named = message.get("modelId", message.get("model"))
        reply = to_messages(message)
        yield Call(
            messages=_context(parent[key], entries, parent, converted) if prompts else None,
            output=reply[0] if reply else None,
            time=when,
            model=named if isinstance(named, str) and named else model,
            reported=usage,
            line=line,
            id=str(record.get("id") or message.get("responseId") or line),
            unlogged="system prompt and tools",
        )


def _key(record: Mapping[str, Any], line: int) -> str:
    """An entry's identity: its `id` and time (a fork's copy keeps both), else (a version-1 entry, which has no
    `id`) its whole text, so an entry written twice counts once."""
    entry_id = record.get("id")
    if isinstance(entry_id, str) and entry_id:
        return f"{entry_id}@{record.get('timestamp')}"
    return dumps(record, sort_keys=True)  # `json.dumps`'s text, however deep the entry nests


def pi_usage(raw: Any) -> Usage | None:
    """pi's `usage` as a `Usage`: prompt = `input + cacheRead + cacheWrite`, output = `output` (reasoning in it);
    a record of `totalTokens` alone, its output. None: no usage logged."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InputError(f"expected an object, got {type(raw).__name__}", field="usage")
    fresh, read, written, output = (_count(raw, k) for k in ("input", "cacheRead", "cacheWrite", "output"))
    total = _count(raw, "totalTokens")
    if output == 0 and total > fresh + read + written:
        output = total - fresh - read - written  # as ccusage reads a record of its total alone
    reasoning = raw.get("reasoningTokens")
    logged = min(reasoning, output) if isinstance(reasoning, int) and _whole(reasoning) else None
    prompt = fresh + read + written
    if prompt > MAX_COUNT:
        raise InputError(f"not a token count: {prompt}", field="usage.input")
    return Usage(prompt=prompt, cached=read, output=output, written=written, reasoning=logged)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _count(raw: Mapping[str, Any], name: str) -> int:
    value = raw.get(name)
    if value is None:
        return 0
    if not _whole(value):
        raise InputError(f"expected a token count, got {as_text(value, 40)!r}", field=f"usage.{name}")
    assert isinstance(value, int)
    return value


def _context(at: str | None, entries: Mapping[str, Mapping[str, Any]], parent: Mapping[str, str | None],
             converted: dict[str, list[Message]]) -> tuple[Message, ...]:  # fmt: skip
    """The conversation up to entry `at`: its path from the header, from the last compaction on it (its summary,
    then the entries from its `firstKeptEntryId` up to it), as `buildSessionContext` gives it. `converted`: each
    entry's messages, made once for the session (every call's context holds the entries before it)."""

    def messages(key: str) -> list[Message]:
        if key not in converted:
            converted[key] = _entry_messages(entries[key])
        return converted[key]

    path: list[str] = []
    seen: set[str] = set()
    while at is not None and at not in seen and at in entries:
        seen.add(at)
        path.append(at)
        at = parent.get(at)
    path.reverse()
    cut = max((n for n, k in enumerate(path) if entries[k].get("type") == "compaction"), default=None)
    if cut is None:
        return tuple(m for k in path for m in messages(k))
    compaction = entries[path[cut]]
    out = [Message(role="user", content=f"The conversation history before this point was compacted into the "
                                        f"following summary:\n\n{compaction.get('summary', '')}")]  # fmt: skip
    kept = compaction.get("firstKeptEntryId")
    keeping = False
    for key in path[:cut]:
        keeping = keeping or (isinstance(kept, str) and entries[key].get("id") == kept)
        if keeping:
            out += messages(key)
    for key in path[cut + 1 :]:
        out += messages(key)
    return tuple(out)


def _entry_messages(entry: Mapping[str, Any]) -> list[Message]:
    """What an entry adds to the conversation: its message, a custom message, a branch's summary."""
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), Mapping):
        return to_messages(entry["message"])
    if kind == "custom_message":
        return [Message(role="user", content=_text(entry.get("content")))]
    if kind == "branch_summary" and isinstance(entry.get("summary"), str) and entry["summary"]:
        return [Message(role="user", content=f"The following is a summary of a branch that this conversation "
                                             f"came back from:\n\n{entry['summary']}")]  # fmt: skip
    return []


def to_messages(message: Mapping[str, Any]) -> list[Message]:
    """A pi `AgentMessage` as chat messages (`packages/ai/src/types.ts`): a user's, an assistant's (text, thinking,
    tool calls), a tool's result; a shell command the user ran (`bashExecution`) as the user's."""
    role = message.get("role")
    content = message.get("content")
    if role == "assistant":
        text, reasoning, tools = [], [], []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                text.append(str(block.get("text", "")))
            elif kind == "thinking":
                reasoning.append(str(block.get("thinking", "")))
            elif kind == "toolCall":
                args = block.get("arguments", {})
                sent = args if isinstance(args, str) else dumps(args)
                tools.append(ToolCall(str(block.get("id", "")), str(block.get("name", "")), sent))
        return [Message(role="assistant", content="".join(text), reasoning="".join(reasoning) or None,
                        tool_calls=tuple(tools))]  # fmt: skip
    if role == "toolResult":
        call_id = message.get("toolCallId")
        call_id = call_id if isinstance(call_id, str) else None
        return [Message(role="tool", content=_text(content), tool_call_id=call_id)]
    if role == "bashExecution":
        ran = f"Ran `{message.get('command', '')}`\n{message.get('output', '')}"
        return [Message(role="user", content=ran)]
    if role in ("user", "custom"):
        return [Message(role="user", content=_text(content))]
    return []


def _text(content: Any) -> str:
    """A message's content as text: a string, or its text blocks (an image as a placeholder)."""
    if isinstance(content, str):
        return content
    out = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping) and block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif isinstance(block, Mapping) and block.get("type") == "image":
            out.append(f"<image:{block.get('mimeType', '')}>")
    return "\n".join(out)
