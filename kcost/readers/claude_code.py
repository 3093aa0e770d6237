"""Claude Code project logs (`~/.claude/projects/<project>/<session id>.jsonl`): what the session would cost on K3.

Claude Code writes one line per content block of a response, each repeating the response's usage: lines are
grouped by `(message.id, requestId)` and the largest usage kept (ccusage's rule). `/btw` side questions
(`isSidechain`) replay parent responses under the same message id: dropped. The prompt is rebuilt from the
lines in order: user text, tool results as tool messages, each response as one assistant message (`thinking`
as reasoning, `tool_use` as tool calls). The system prompt and tools are not logged; the usage counts come
from another vendor's tokenizer, so they are kept for reference, never used to size Kimi tokens.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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


def read_calls(src: Source) -> tuple[list[Call], list[str]]:
    source = src.name
    history: list[Message] = []
    responses: dict[tuple[str, str], tuple[int, int]] = {}  # (message id, request id) -> (call, history) index
    main_ids: set[str] = set()
    calls: list[Call] = []
    models: set[str] = set()
    skipped = sidechains = 0
    saw_content = False
    for line, record in records(src.name, src.text):
        if not isinstance(record, Mapping):
            raise InputError("expected a JSON object", source=source, line=line)
        raw = record.get("message")
        message: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        role = message.get("role")
        if role in ("user", "assistant") and message.get("content"):
            saw_content = True
        if role == "assistant":
            mid = str(field(message, "id", str, source=source, line=line, where="message"))
            if record.get("isSidechain") and mid in main_ids:
                sidechains += 1
                continue
            main_ids.add(mid)
            usage = _usage(message.get("usage"), source, line)
            if isinstance(message.get("model"), str):
                models.add(message["model"])
            key = (mid, str(record.get("requestId", "")))
            if key in responses:
                i, h = responses[key]
                old = calls[i]
                merged = _merge(old.output, message.get("content"))
                best = max((u for u in (old.reported, usage) if u), key=lambda u: (u.prompt, u.output), default=None)
                calls[i] = Call(messages=old.messages, output=merged, reported=best, time=old.time, line=old.line,
                                id=old.id)  # fmt: skip
                history[h] = merged
                continue
            output = _merge(Message(role="assistant"), message.get("content"))
            responses[key] = (len(calls), len(history))
            calls.append(Call(messages=tuple(history), output=output, reported=usage,
                              time=_time(record.get("timestamp")), line=line, id=mid))  # fmt: skip
            history.append(output)
        elif role == "user":
            history.extend(_user(message.get("content")))
        else:
            skipped += 1
    if not saw_content:  # usage-only lines: no prompt to rebuild
        calls = [Call(messages=None, reported=c.reported, time=c.time, line=c.line, id=c.id) for c in calls]
    notes = [f"{skipped} non-message line(s) skipped"] if skipped else []
    if sidechains:
        notes.append(f"{sidechains} sidechain replay line(s) dropped")
    if models:
        notes.append(f"logged on {', '.join(sorted(models))}: priced here at K3 rates, with Kimi token counts")
    notes.append("system prompt and tools are not in Claude Code logs: not counted")
    return calls, notes


def _merge(message: Message | None, content: Any) -> Message:
    m = message or Message(role="assistant")
    text, reasoning, calls = m.content, m.reasoning or "", list(m.tool_calls)
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] if content else []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            text += str(block.get("text", ""))
        elif kind == "thinking":
            reasoning += str(block.get("thinking", ""))
        elif kind == "tool_use":
            args = json.dumps(block.get("input", {}), ensure_ascii=False, separators=(",", ":"))
            calls.append(ToolCall(str(block.get("id", "")), str(block.get("name", "")), args))
    return Message(role="assistant", content=text, reasoning=reasoning or None, tool_calls=tuple(calls))


def _user(content: Any) -> list[Message]:
    if not isinstance(content, list):
        return [Message(role="user", content=content_text(content))]
    out: list[Message] = []
    text = []
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            result = block.get("content")
            out.append(Message(role="tool", content=content_text(result), tool_call_id=block.get("tool_use_id")))
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
    if not all(isinstance(v, int) and v >= 0 for v in (fresh, written, read, output)):
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
