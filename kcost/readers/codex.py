"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): what the session would cost on K3.

Each `token_count` event closes one request: its usage is `info.last_token_usage` (per request; the
cumulative `total_token_usage` is used only when the per-request figure is missing, as the difference from
the previous total). `input_tokens` includes `cached_input_tokens`; reasoning is inside `output_tokens`. A
`token_count` with `info: null` is a rate-limit heartbeat, and one whose total equals the previous total adds
nothing. The prompt is rebuilt from the `response_item`s before the request's first output item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcost.calls import Call, Message, ToolCall, Usage, content_text
from kcost.errors import InputError
from kcost.readers.claude_code import _time
from kcost.readers.jsonl import records
from kcost.readers.source import Source

_KINDS = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}


def looks_like(record: Any) -> bool:
    return isinstance(record, Mapping) and record.get("type") in _KINDS and "payload" in record


def read_calls(src: Source) -> tuple[list[Call], list[str]]:
    source = src.name
    items: list[Message] = []
    request_start: int | None = None  # index of the first output item of the request in progress
    calls: list[Call] = []
    previous_total: tuple[int, int, int] | None = None
    models: set[str] = set()
    saw_items = False
    unknown: dict[str, int] = {}
    for line, record in records(src.name, src.text):
        if not isinstance(record, Mapping) or not isinstance(record.get("type"), str) or "payload" not in record:
            raise InputError("expected a rollout line {timestamp, type, payload}", source=source, line=line)
        if record["type"] not in _KINDS:
            unknown[record["type"]] = unknown.get(record["type"], 0) + 1
            continue
        payload = record["payload"]
        if not isinstance(payload, Mapping):
            raise InputError("expected an object", source=source, line=line, field="payload")
        kind = record["type"]
        if kind == "response_item":
            saw_items = True
            message = _item(payload)
            if message is None:
                continue
            if message.role == "assistant" and request_start is None:
                request_start = len(items)
            items.append(message)
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            if not isinstance(info, Mapping):
                continue  # a rate-limit heartbeat
            total = _counts(info.get("total_token_usage"), source, line, "payload.info.total_token_usage")
            if total is not None and total == previous_total:
                continue
            last = _counts(info.get("last_token_usage"), source, line, "payload.info.last_token_usage")
            if last is None and total is not None:
                base = previous_total or (0, 0, 0)
                last = (total[0] - base[0], total[1] - base[1], total[2] - base[2])
            previous_total = total or previous_total
            if last is None:
                continue
            if isinstance(info.get("model"), str):
                models.add(info["model"])
            cut = request_start if request_start is not None else len(items)
            output = next((m for m in items[cut:] if m.role == "assistant"), None)
            calls.append(Call(messages=tuple(items[:cut]), output=output, time=_time(record.get("timestamp")),
                              reported=Usage(prompt=last[0], cached=last[1], output=last[2]), line=line))  # fmt: skip
            request_start = None
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            models.add(payload["model"])
    if not saw_items:
        calls = [Call(messages=None, reported=c.reported, time=c.time, line=c.line) for c in calls]
    notes = [f"{n} {kind} record(s) skipped" for kind, n in sorted(unknown.items())]
    if models:
        notes.append(f"logged on {', '.join(sorted(models))}: priced here at K3 rates, with Kimi token counts")
    notes.append("base instructions and tools are not in Codex rollouts: not counted")
    return calls, notes


def _counts(raw: Any, source: str, line: int, where: str) -> tuple[int, int, int] | None:
    if raw is None:
        return None
    got = raw if isinstance(raw, Mapping) else {}
    values: list[int] = []
    for key in ("input_tokens", "cached_input_tokens", "output_tokens"):
        value = got.get(key, 0 if key == "cached_input_tokens" else None)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InputError(f"expected a whole number >= 0, got {value!r}", source=source, line=line,
                             field=f"{where}.{key}")  # fmt: skip
        values.append(value)
    if values[1] > values[0]:
        raise InputError("cached_input_tokens exceed input_tokens", source=source, line=line, field=where)
    return values[0], values[1], values[2]


def _item(payload: Mapping[str, Any]) -> Message | None:
    kind = payload.get("type")
    if kind == "message":
        role = payload.get("role")
        role = "system" if role == "developer" else role
        parts = [p for p in payload.get("content") or [] if isinstance(p, Mapping)]
        return Message(role=str(role), content="".join(str(p.get("text", "")) for p in parts))
    if kind == "reasoning":
        summary = "".join(p.get("text", "") for p in payload.get("summary") or [] if isinstance(p, Mapping))
        return Message(role="assistant", reasoning=summary or None)
    if kind in ("function_call", "custom_tool_call"):
        args = payload.get("arguments", payload.get("input", ""))
        call = ToolCall(str(payload.get("call_id", "")), str(payload.get("name", "")), str(args))
        return Message(role="assistant", tool_calls=(call,))
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = payload.get("output")
        return Message(role="tool", content=content_text(output), tool_call_id=payload.get("call_id"))
    return None
