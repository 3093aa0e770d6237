"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): what the session would cost on K3.

Each `token_count` event closes one request: its usage is `info.last_token_usage` (per request; the
cumulative `total_token_usage` is used only when the per-request figure is missing, as the difference from
the previous total). `input_tokens` includes `cached_input_tokens`; reasoning is inside `output_tokens`. A
`token_count` with `info: null` is a rate-limit heartbeat, and one whose total equals the previous total adds
nothing; a sub-agent rollout (`thread_spawn`) starts by replaying its parent's `token_count`s within one
second, which are skipped as ccusage skips them. The prompt is rebuilt from the `response_item`s: the items
of one response (reasoning, message, tool calls) are one assistant message; `compacted` replaces the history.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kcost.errors import InputError
from kcost.readers.jsonl import records
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.transcripts.calls import Call, Message, ToolCall, Usage, timestamp
from kcost.transcripts.usage import difference, parse_usage

_KINDS = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}


def looks_like(record: Any) -> bool:
    return (
        isinstance(record, Mapping)
        and isinstance(record.get("type"), str)
        and record["type"] in _KINDS
        and ("payload" in record)
    )


class Codex(Reader):
    name = "codex"
    comparable = False  # OpenAI's cache: its hits say nothing of K3's

    def detect(self, first: Any) -> bool:
        return looks_like(first)

    def read(self, unit: Source | Path, notes: list[str], *, prompts: bool = True) -> Iterator[Call]:
        assert isinstance(unit, Source)
        return read_calls(unit, notes, prompts=prompts)


def read_calls(src: Source, notes: list[str], *, prompts: bool = True) -> Iterator[Call]:
    """The rollout's calls, one per `token_count`; `notes` gets what was skipped."""
    source = src.name
    items: list[Message] = []
    request_start: int | None = None  # index of the request's reply in `items`
    previous_total: Usage | None = None
    model: str | None = None
    unknown: dict[str, int] = {}
    usage_only = not prompts or b'"response_item"' not in src.data
    spawned = b'"thread_spawn"' in src.data[:20_000]
    replay_second: str | None = None  # a sub-agent's replayed parent events share their first second
    replayed = 0
    for line, record in records(source, src.data):
        if not isinstance(record, Mapping) or not isinstance(record.get("type"), str) or "payload" not in record:
            raise InputError("expected a rollout line {timestamp, type, payload}", source=source, line=line)
        kind, payload = record["type"], record["payload"]
        if not isinstance(payload, Mapping):
            raise InputError("expected an object", source=source, line=line, field="payload")
        if kind not in _KINDS:
            unknown[kind] = unknown.get(kind, 0) + 1
            continue
        if kind == "response_item":
            if usage_only:
                continue
            message = _item(payload)
            if message is None:
                continue
            same_reply = request_start is not None and items[-1].role == "assistant" and len(items) > request_start
            if message.role == "assistant" and same_reply:
                items[-1] = _join(items[-1], message)
            else:
                if message.role == "assistant" and request_start is None:
                    request_start = len(items)
                items.append(message)
        elif kind == "compacted":
            history = payload.get("replacement_history")
            if isinstance(history, list):
                items[:] = [m for m in (_item(i) for i in history if isinstance(i, Mapping)) if m is not None]
            else:
                items[:] = [Message(role="user", content=str(payload.get("message", "")))]
            request_start = None
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            if not isinstance(info, Mapping):
                continue  # a rate-limit heartbeat
            stamp = str(record.get("timestamp", ""))[:19]
            if spawned and (replay_second is None or stamp == replay_second) and previous_total is None:
                replay_second = stamp
                replayed += 1
                continue
            spawned = False
            try:
                total = _counts(info.get("total_token_usage"), "payload.info.total_token_usage")
                if total is not None and total == previous_total:
                    continue
                last = _counts(info.get("last_token_usage"), "payload.info.last_token_usage")
                if last is None and total is not None:
                    base = previous_total or Usage(0, 0, 0)
                    last = difference(total, base, where="payload.info.total_token_usage")
                time = timestamp(record.get("timestamp"), field="timestamp")
            except InputError as exc:
                raise exc.located(source=source, line=line) from None
            previous_total = total or previous_total
            if last is None:
                continue
            if isinstance(info.get("model"), str) and info["model"]:
                model = info["model"]
            cut = request_start if request_start is not None else len(items)
            yield Call(
                messages=None if usage_only else tuple(items[:cut]),
                output=items[cut] if cut < len(items) and items[cut].role == "assistant" else None,
                time=time,
                model=model,
                reported=last,
                line=line,
                unlogged="base instructions and tools",
            )
            request_start = None
        elif kind == "turn_context" and isinstance(payload.get("model"), str) and payload["model"]:
            model = payload["model"]
    notes += [f"{n} {kind} record(s) skipped" for kind, n in sorted(unknown.items())]
    if replayed:
        notes.append(f"{replayed} token_count(s) replayed from the parent session skipped")


def _join(a: Message, b: Message) -> Message:
    """Two items of one response as one assistant message."""
    reasoning = (a.reasoning or "") + (b.reasoning or "")
    return Message(role="assistant", content=a.content + b.content, reasoning=reasoning or None,
                   tool_calls=a.tool_calls + b.tool_calls)  # fmt: skip


def _counts(raw: Any, where: str) -> Usage | None:
    return None if raw is None else parse_usage(raw, "codex", where=where)


def _item(payload: Mapping[str, Any]) -> Message | None:
    kind = payload.get("type")
    if kind == "message":
        role = payload.get("role")
        role = "system" if role == "developer" else role
        content = payload.get("content")
        parts = [p for p in content if isinstance(p, Mapping)] if isinstance(content, list) else []
        return Message(role=str(role), content="".join(str(p.get("text", "")) for p in parts))
    if kind == "reasoning":
        raw = payload.get("summary")
        summary = (
            "".join(str(p.get("text", "")) for p in raw if isinstance(p, Mapping)) if isinstance(raw, list) else ""
        )
        return Message(role="assistant", reasoning=summary or None)
    if kind in ("function_call", "custom_tool_call"):
        args = payload.get("arguments", payload.get("input", ""))
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        call = ToolCall(str(payload.get("call_id", "")), str(payload.get("name", "")), text)
        return Message(role="assistant", tool_calls=(call,))
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = payload.get("output")
        return Message(role="tool", content=output if isinstance(output, str) else json.dumps(output),
                       tool_call_id=str(payload.get("call_id", "")) or None)  # fmt: skip
    return None
