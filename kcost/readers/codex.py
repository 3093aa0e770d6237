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

from kcost.calls import Call, Message, ToolCall, Usage, timestamp
from kcost.errors import STRICT, InputError, Leniency
from kcost.readers.jsonl import first_string, records
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.results.common import Routine
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

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        return read_calls(unit, notes, prompts=prompts, leniency=leniency)

    def project(self, unit: Source | Path) -> str | None:
        """The working directory the rollout's `session_meta` (and each `turn_context`) records (`cwd`)."""
        return first_string(unit.data, "cwd") if isinstance(unit, Source) else None


def read_calls(src: Source, notes: list[str], *, prompts: bool = True, leniency: Leniency = STRICT) -> Iterator[Call]:
    """The rollout's calls, one per `token_count`; `notes` gets what was skipped."""
    source = src.name
    rollout = _Rollout(src, prompts, leniency)
    for line, record in records(source, src.data):
        if not isinstance(record, Mapping) or not isinstance(record.get("type"), str) or "payload" not in record:
            raise InputError("expected a rollout line {timestamp, type, payload}", source=source, line=line)
        kind, payload = record["type"], record["payload"]
        if not isinstance(payload, Mapping):
            raise InputError("expected an object", source=source, line=line, field="payload")
        if kind not in _KINDS:
            rollout.unknown[kind] = rollout.unknown.get(kind, 0) + 1
        elif kind == "response_item":
            rollout.response_item(payload)
        elif kind == "compacted":
            rollout.compacted(payload)
        elif kind == "event_msg" and payload.get("type") == "token_count":
            call = rollout.token_count(record, payload, line)
            if call is not None:
                yield call
        elif kind == "turn_context" and isinstance(payload.get("model"), str) and payload["model"]:
            rollout.model = payload["model"]
    notes += [Routine(f"{n} {kind} record(s) skipped") for kind, n in sorted(rollout.unknown.items())]
    if rollout.replayed:
        notes.append(f"{rollout.replayed} token_count(s) replayed from the parent session skipped")


class _Rollout:
    """A rollout read line by line: the conversation so far, the running total, the model in use."""

    def __init__(self, src: Source, prompts: bool, leniency: Leniency) -> None:
        self.source = src.name
        self.leniency = leniency
        self.items: list[Message] = []
        self.request_start: int | None = None  # index of the request's reply in `items`
        self.previous_total: Usage | None = None
        self.model: str | None = None
        self.unknown: dict[str, int] = {}
        self.usage_only = not prompts or b'"response_item"' not in src.data
        self.spawned = b'"thread_spawn"' in src.data[:20_000]
        self.replay_second: str | None = None  # a sub-agent's replayed parent events share their first second
        self.replayed = 0

    def response_item(self, payload: Mapping[str, Any]) -> None:
        """One item of a response or of the conversation: the items of one response are one assistant message."""
        if self.usage_only:
            return
        message = _item(payload)
        if message is None:
            return
        items, start = self.items, self.request_start
        same_reply = start is not None and items[-1].role == "assistant" and len(items) > start
        if message.role == "assistant" and same_reply:
            items[-1] = _join(items[-1], message)
        else:
            if message.role == "assistant" and start is None:
                self.request_start = len(items)
            items.append(message)

    def compacted(self, payload: Mapping[str, Any]) -> None:
        """Compaction replaces the history (with its replacement, else its summary message)."""
        history = payload.get("replacement_history")
        if isinstance(history, list):
            self.items[:] = [m for m in (_item(i) for i in history if isinstance(i, Mapping)) if m is not None]
        else:
            self.items[:] = [Message(role="user", content=str(payload.get("message", "")))]
        self.request_start = None

    def token_count(self, record: Mapping[str, Any], payload: Mapping[str, Any], line: int) -> Call | None:
        """The call a `token_count` closes; None for a heartbeat, a replayed parent event, or no new usage."""
        info = payload.get("info")
        if not isinstance(info, Mapping):
            return None  # a rate-limit heartbeat
        if self._replayed(record):
            return None
        last, time = self._usage(record, info, line)
        if last is None:
            return None
        if isinstance(info.get("model"), str) and info["model"]:
            self.model = info["model"]
        items = self.items
        cut = self.request_start if self.request_start is not None else len(items)
        self.request_start = None
        return Call(
            messages=None if self.usage_only else tuple(items[:cut]),
            output=items[cut] if cut < len(items) and items[cut].role == "assistant" else None,
            time=time,
            model=self.model,
            reported=last,
            line=line,
            unlogged="base instructions and tools",
        )

    def _replayed(self, record: Mapping[str, Any]) -> bool:
        """A sub-agent rollout starts by replaying its parent's `token_count`s within one second: skipped."""
        stamp = str(record.get("timestamp", ""))[:19]
        if self.spawned and (self.replay_second is None or stamp == self.replay_second) and self.previous_total is None:
            self.replay_second = stamp
            self.replayed += 1
            return True
        self.spawned = False
        return False

    def _usage(
        self, record: Mapping[str, Any], info: Mapping[str, Any], line: int
    ) -> tuple[Usage | None, float | None]:
        """This request's usage (`last_token_usage`, else the difference of the running totals) and time; no
        usage where the total equals the previous one (it adds nothing) or a lenient read skipped it."""
        leniency = self.leniency
        try:
            total = _counts(info.get("total_token_usage"), "payload.info.total_token_usage", leniency)
            if total is not None and total == self.previous_total:
                return None, None
            last = _counts(info.get("last_token_usage"), "payload.info.last_token_usage", leniency)
            if last is None and total is not None:
                base = self.previous_total or Usage(0, 0, 0)
                last = difference(total, base, where="payload.info.total_token_usage", leniency=leniency)
            time = timestamp(record.get("timestamp"), field="timestamp", leniency=leniency)
        except InputError as exc:
            raise exc.located(source=self.source, line=line) from None
        self.previous_total = total or self.previous_total
        return last, time


def _join(a: Message, b: Message) -> Message:
    """Two items of one response as one assistant message."""
    reasoning = (a.reasoning or "") + (b.reasoning or "")
    return Message(role="assistant", content=a.content + b.content, reasoning=reasoning or None,
                   tool_calls=a.tool_calls + b.tool_calls)  # fmt: skip


def _counts(raw: Any, where: str, leniency: Leniency) -> Usage | None:
    return None if raw is None else parse_usage(raw, "codex", where=where, leniency=leniency)


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
