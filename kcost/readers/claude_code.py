"""Claude Code project logs (`~/.claude/projects/<project>/<session id>.jsonl`): what the session would cost on K3.

Every line has a `uuid` and a `parentUuid`; the prompt of a response is the conversation on its chain of
parents (so `/compact`, which starts a new chain, and `/btw` side questions, which branch off it, are followed
as Claude Code sends them). Claude Code writes one line per content block of a response, each repeating the
response's usage: lines are grouped by `(message.id, requestId)` and the largest usage kept (ccusage's rule);
sidechain lines that replay a response already seen are dropped; `<synthetic>` messages (errors Claude Code
writes itself) were never requests. The system prompt and tools are not logged; the usage counts come from
another vendor's tokenizer, so they are kept for reference, never used to size Kimi tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from kcost.calls import Call, Message, ToolCall, Usage, content_text
from kcost.errors import InputError
from kcost.readers.jsonl import field, records
from kcost.readers.source import Source

_TYPES = {"user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation"}


def looks_like(record: Any) -> bool:
    if not isinstance(record, Mapping):
        return False
    if record.get("type") in _TYPES and ("uuid" in record or "sessionId" in record or "messageId" in record):
        return True
    message = record.get("message")
    return isinstance(message, Mapping) and "role" in message and ("requestId" in record or "sessionId" in record)


class _Chain:
    """The conversation along the current chain of parents, flat, with where each line's messages start."""

    def __init__(self) -> None:
        self.uuids: list[str] = []
        self.at: dict[str, int] = {}  # uuid -> index in `uuids`
        self.starts: list[int] = []  # index in `flat` where each line's messages start
        self.flat: list[Message] = []
        self.parent: dict[str, str | None] = {}  # every line seen: uuid -> parent
        self.own: dict[str, tuple[Message, ...]] = {}  # every line seen: uuid -> its messages

    def move_to(self, parent: str | None) -> None:
        """Make `parent` the end of the chain (the line a new line follows)."""
        if parent is None:
            self._cut(0)
        elif self.uuids and parent == self.uuids[-1]:
            return
        elif parent in self.at:
            self._cut(self.at[parent] + 1)
        else:  # a jump to another branch: rebuild it from the parents (rare)
            line: str | None = parent
            path: list[str] = []
            while line is not None and line in self.parent and len(path) <= len(self.parent):
                path.append(line)
                line = self.parent[line]
            self._cut(0)
            for uuid in reversed(path):
                self.push(uuid, self.parent[uuid], self.own[uuid])

    def _cut(self, n: int) -> None:
        for uuid in self.uuids[n:]:
            del self.at[uuid]
        if n < len(self.uuids):
            del self.flat[self.starts[n] :]
        del self.uuids[n:], self.starts[n:]

    def push(self, uuid: str, parent: str | None, messages: tuple[Message, ...]) -> None:
        self.parent[uuid] = parent
        self.own[uuid] = messages
        self.at[uuid] = len(self.uuids)
        self.uuids.append(uuid)
        self.starts.append(len(self.flat))
        self.flat.extend(messages)


def read_calls(src: Source, notes: list[str]) -> Iterator[Call]:
    """The session's calls, one per response; `notes` gets what was skipped."""
    source = src.name
    chain = _Chain()
    main_ids: set[str] = set()
    done: set[tuple[str, str]] = set()
    open_key: tuple[str, str] | None = None
    pending: dict[str, Any] | None = None  # the response being assembled: its prompt, reply, usage, line, time
    models: set[str] = set()
    skipped = sidechains = synthetic = 0
    usage_only = not prompts_known(src)
    reply_at = -1  # where the open response's message sits in the chain's messages

    def close() -> Call | None:
        nonlocal pending, open_key
        call = Call(**pending) if pending is not None else None
        if open_key is not None:
            done.add(open_key)
        pending, open_key = None, None
        return call

    for line, record in records(source, src.text):
        if not isinstance(record, Mapping):
            raise InputError("expected a JSON object", source=source, line=line)
        raw = record.get("message")
        message: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        role = message.get("role")
        uuid = record.get("uuid")
        if not isinstance(uuid, str):
            uuid = f"line-{line}"
        parent = record.get("parentUuid") if isinstance(record.get("parentUuid"), str) else None
        if "parentUuid" not in record and chain.uuids:
            parent = chain.uuids[-1]  # logs without the chain fields: one line after another
        if role == "assistant":
            mid = str(field(message, "id", str, source=source, line=line, where="message"))
            key = (mid, str(record.get("requestId", "")))
            if record.get("isSidechain") and mid in main_ids:
                sidechains += 1
                continue
            if message.get("model") == "<synthetic>":
                synthetic += 1
                chain.move_to(parent)
                chain.push(uuid, parent, ())
                continue
            if not record.get("isSidechain"):
                main_ids.add(mid)
            if isinstance(message.get("model"), str):
                models.add(message["model"])
            usage = _usage(message.get("usage"), source, line)
            if key == open_key and pending is not None:  # another block of the response being assembled
                reply = _merge(pending["output"], message.get("content"))
                best = max((u for u in (pending["reported"], usage) if u), key=lambda u: (u.prompt, u.output),
                           default=None)  # fmt: skip
                chain.move_to(parent)
                if reply_at < len(chain.flat) and chain.flat[reply_at] is pending["output"]:
                    chain.flat[reply_at] = reply  # one assistant message for all the response's blocks
                pending.update(output=reply, reported=best)
                chain.push(uuid, parent, ())
                continue
            if key in done:
                continue  # a late block of a response already closed
            finished = close()
            if finished:
                yield finished
            chain.move_to(parent)
            reply = _merge(Message(role="assistant"), message.get("content"))
            open_key = key
            pending = {"messages": None if usage_only else tuple(chain.flat), "output": reply, "reported": usage,
                       "line": line, "time": _time(record.get("timestamp")), "id": mid}  # fmt: skip
            reply_at = len(chain.flat)
            chain.push(uuid, parent, (reply,))
        elif role == "user":
            chain.move_to(parent)
            chain.push(uuid, parent, tuple(_user(message.get("content"))))
        else:
            skipped += 1
            if "uuid" in record:  # progress and system lines sit on the chain too
                chain.move_to(parent)
                chain.push(uuid, parent, ())
    finished = close()
    if finished:
        yield finished
    if skipped:
        notes.append(f"{skipped} non-message line(s) skipped")
    if sidechains:
        notes.append(f"{sidechains} sidechain replay line(s) dropped")
    if synthetic:
        notes.append(f"{synthetic} <synthetic> message(s) (written by Claude Code, never sent) skipped")
    if models:
        notes.append(f"logged on {', '.join(sorted(models))}: priced here at K3 rates, with Kimi token counts")
    notes.append("system prompt and tools are not in Claude Code logs: not counted")


def prompts_known(src: Source) -> bool:
    """Whether the log holds message text at all (usage-only logs from some tools do not)."""
    return '"content"' in src.text


def _merge(message: Message | None, content: Any) -> Message:
    m = message or Message(role="assistant")
    text, reasoning, calls = m.content, m.reasoning or "", list(m.tool_calls)
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] if content else []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text += block["text"]
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            reasoning += block["thinking"]
        elif kind == "tool_use":
            args = json.dumps(block.get("input", {}), ensure_ascii=False, separators=(",", ":"))
            calls.append(ToolCall(str(block.get("id", "")), str(block.get("name", "")), args))
    return Message(role="assistant", content=text, reasoning=reasoning or None, tool_calls=tuple(calls))


def _user(content: Any) -> list[Message]:
    if not isinstance(content, list):
        return [Message(role="user", content=content if isinstance(content, str) else "")]
    out: list[Message] = []
    text = []
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            result = block.get("content")
            call_id = block.get("tool_use_id")
            out.append(Message(role="tool", content=content_text(result if isinstance(result, (str, list)) else None),
                               tool_call_id=call_id if isinstance(call_id, str) else None))  # fmt: skip
        else:
            text.append(block)
    if text:
        out.append(Message(role="user", content=content_text(text)))
    return out


def _usage(raw: Any, source: str, line: int) -> Usage | None:
    if raw is None:
        return None
    where = "message.usage"
    if not isinstance(raw, Mapping):
        raise InputError("expected an object", source=source, line=line, field=where)
    fresh = field(raw, "input_tokens", int, source=source, line=line, where=where)
    written = raw.get("cache_creation_input_tokens") or 0
    read = raw.get("cache_read_input_tokens") or 0
    output = field(raw, "output_tokens", int, source=source, line=line, where=where)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (fresh, written, read, output)):
        raise InputError("token counts must be whole numbers >= 0", source=source, line=line, field=where)
    return Usage(prompt=fresh + written + read, cached=read, output=output)


def _time(value: Any) -> float | None:
    from datetime import datetime

    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
