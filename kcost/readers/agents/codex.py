"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) and `codex exec --json` output: what the
session would cost on K3.

Each `token_count` event closes one request: its usage is `info.last_token_usage` (per request; the
cumulative `total_token_usage` is used only when the per-request figure is missing, as the difference from
the previous total). `input_tokens` includes `cached_input_tokens`; reasoning is inside `output_tokens`. A
`token_count` with `info: null` is a rate-limit heartbeat, and one whose total equals the previous total adds
nothing; a sub-agent rollout (`thread_spawn`) starts by replaying its parent's `token_count`s within one
second, which are skipped as ccusage skips them, the last replayed total kept as the baseline of the sub-agent's
own (Codex seeds a forked thread's running total from the parent's last one: `record_initial_history`,
`InitialHistory::Forked`, codex-rs/core/src/codex.rs). A time is an ISO 8601 string or epoch seconds or
milliseconds (`kcost.model.calls.timestamp`). The prompt is rebuilt from the `response_item`s: the items
of one response (reasoning, message, tool calls) are one assistant message; `compacted` replaces the history.

`codex exec --json` prints thread events instead (codex-rs/exec/src/exec_events.rs, `ThreadEvent`): the first
`thread.started` (`thread_id`), then per turn `turn.started`, `item.*` and `turn.completed` (`usage`:
`input_tokens`, cached included, `cached_input_tokens`, `output_tokens`) or `turn.failed` (no usage). A turn's
`usage` is the thread's running total when it ended (`usage_from_last_total`, event_processor_with_jsonl_output.rs),
so each `turn.completed` is one call of what the total added since the thread's previous one in the file (a
`thread.started` naming a thread seen before, a resumed one, continues its total). The output holds no prompt and
no model or time: it is billed as reported. A resumed thread's first turn in a file carries the turns before it
(Codex seeds a resumed thread's total from its rollout), and the same run's rollout holds the same calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kcost.errors import STRICT, InputError, Leniency
from kcost.model.calls import Call, Message, ToolCall, Usage, timestamp
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.usage import difference, parse_usage
from kcost.results.common import Routine

_KINDS = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
# `codex exec --json`'s thread events (`ThreadEvent`'s tags), of which a file's first line is one
_EXEC_EVENTS = {"thread.started", "turn.started", "turn.completed", "turn.failed", "item.started", "item.updated",
                "item.completed", "item.plan.delta", "request_user_input", "error"}  # fmt: skip
_EXEC_FIRST = _EXEC_EVENTS - {"error"}  # an `error` line alone says nothing of whose it is


def looks_like(record: Any) -> bool:
    return (
        isinstance(record, Mapping)
        and isinstance(record.get("type"), str)
        and record["type"] in _KINDS
        and ("payload" in record)
    )


def looks_like_exec(record: Any) -> bool:
    """Whether a first line is `codex exec --json` output: a thread event, with no rollout `payload`."""
    return (
        isinstance(record, Mapping)
        and isinstance(record.get("type"), str)
        and record["type"] in _EXEC_FIRST
        and "payload" not in record
        and ("thread_id" in record or "usage" in record or "item" in record or record.get("type") == "turn.started")
    )


class Codex(Reader):
    name = "codex"
    one_call = "a `token_count` event"
    usage_read = (
        "`last_token_usage`: `input_tokens` (holds `cached_input_tokens` and, from 0.145, "
        "`cache_write_input_tokens`), `output_tokens` (holds `reasoning_output_tokens`); else the difference "
        "of `total_token_usage`"
    )
    source_read = "openai/codex `codex-rs/protocol/src/protocol.rs` (`TokenUsage`)"
    comparable = False  # OpenAI's cache: its hits say nothing of K3's

    def detect(self, first: Any) -> bool:
        return looks_like(first) or looks_like_exec(first)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        if looks_like_exec(unit.first_record):
            return read_exec_calls(unit, notes, leniency=leniency)
        return read_calls(unit, notes, prompts=prompts, leniency=leniency)

    def project(self, unit: Source | Path) -> str | None:
        """The working directory the rollout's `session_meta` (and each `turn_context`) records (`cwd`)."""
        return unit.first_string("cwd") if isinstance(unit, Source) else None


def read_calls(src: Source, notes: list[str], *, prompts: bool = True, leniency: Leniency = STRICT) -> Iterator[Call]:
    """The rollout's calls, one per `token_count`; `notes` gets what was skipped."""
    source = src.name
    rollout = _Rollout(src, prompts, leniency)
    for line, record in src.records():
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
        self.usage_only = not prompts or not src.contains(b'"response_item"')
        self.replaying = b'"thread_spawn"' in src.head(20_000)  # a sub-agent: its parent's events come first
        self.replay_second: int | None = None  # a sub-agent's replayed parent events share their first second
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
        if self._replayed(record, info, line):
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

    def _replayed(self, record: Mapping[str, Any], info: Mapping[str, Any], line: int) -> bool:
        """A sub-agent rollout starts by replaying its parent's `token_count`s within one second: skipped, each
        replayed running total kept as the baseline the sub-agent's own totals continue from."""
        if not self.replaying:
            return False
        try:
            time = timestamp(record.get("timestamp"), field="timestamp", leniency=self.leniency)
            second = None if time is None else int(time)
            if self.replay_second is None or second == self.replay_second:
                self.replay_second = second
                total = _counts(info.get("total_token_usage"), "payload.info.total_token_usage", self.leniency)
                self.previous_total = total or self.previous_total
                self.replayed += 1
                return True
        except InputError as exc:
            raise exc.located(source=self.source, line=line) from None
        self.replaying = False
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


def read_exec_calls(src: Source, notes: list[str], *, leniency: Leniency = STRICT) -> Iterator[Call]:
    """`codex exec --json` output's calls, one per `turn.completed`: what its thread's running total added."""
    source = src.name
    totals: dict[str | None, Usage] = {}  # each thread's running total so far
    thread: str | None = None
    reply: Message | None = None  # the turn's last agent message
    failed = 0
    unknown: dict[str, int] = {}
    for line, record in src.records():
        if not isinstance(record, Mapping) or not isinstance(record.get("type"), str):
            raise InputError("expected a thread event {type, ...}", source=source, line=line)
        kind = record["type"]
        if kind == "thread.started":
            thread = str(record.get("thread_id") or "") or None
        elif kind == "turn.started":
            reply = None
        elif kind == "item.completed":
            item = record.get("item")
            if isinstance(item, Mapping) and item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                reply = Message(role="assistant", content=item["text"])
        elif kind == "turn.failed":
            failed += 1
        elif kind == "turn.completed":
            try:
                total = parse_usage(record.get("usage"), "codex", where="usage", leniency=leniency)
                before = totals.get(thread, Usage(0, 0, 0))
                used = None if total is None else difference(total, before, where="usage", leniency=leniency)
            except InputError as exc:
                raise exc.located(source=source, line=line) from None
            if total is not None:
                totals[thread] = total
            if used is not None and (used.prompt or used.output):
                yield Call(messages=None, output=reply, reported=used, line=line)
            reply = None
        elif kind not in _EXEC_EVENTS:
            unknown[kind] = unknown.get(kind, 0) + 1
    notes += [Routine(f"{n} {kind} event(s) skipped") for kind, n in sorted(unknown.items())]
    if failed:
        notes.append(f"{failed} failed turn(s) left out (`turn.failed`: no usage)")
