"""Kimi Code CLI wire logs (`~/.kimi-code/sessions/<work dir key>/<session id>/agents/<agent>/wire.jsonl`).

One flat record per line (`{"type": ..., "time": <unix ms>}`). The context is replayed as the reference
replayer does (`apps/vis/server/src/lib/context-projector.ts`): `context.append_message` appends; a step's
`step.begin` opens an assistant message that its `content.part` and `tool.call` events extend; `tool.result`
adds a tool message; compaction, clear, undo and micro-compaction rewrite the history. Each `llm.request` is
one request: the replayed messages (without the assistant message its step just opened), the system prompt
and the tool table it names by hash, the model and thinking effort. Old wires without `llm.request` make a
request at every `step.begin`. Usage is the `usage.record` after the request (`step.end.usage` repeats it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcost.calls import Call, Message, ToolCall, Usage, content_text, split_think, timestamp
from kcost.errors import InputError, Leniency
from kcost.readers.jsonl import field, first_string, records
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.results.common import Routine
from kcost.transcripts.usage import parse_usage


class _Replay:
    def __init__(self, source: str) -> None:
        self.source = source
        self.system: str | None = None
        self.tools: dict[str, tuple[Any, ...]] = {}
        self.messages: list[Message] = []
        self.open_step: int | None = None  # index of the assistant message the current step is writing
        self.notes: list[str] = []
        self.skipped: dict[str, int] = {}

    def message(self, raw: Any, line: int) -> Message:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("role"), str):
            raise InputError("expected a message with a `role`", source=self.source, line=line, field="message")
        reasoning, content = split_think(raw.get("content"))
        if raw.get("toolCalls") is not None and not isinstance(raw["toolCalls"], list):
            raise InputError("expected a list", source=self.source, line=line, field="message.toolCalls")
        calls = tuple(
            ToolCall(str(c.get("id", "")), str(c.get("name", "")), _arguments(c.get("arguments")))
            for c in raw.get("toolCalls") or ()
            if isinstance(c, Mapping)
        )
        try:
            text = content_text(content, where="message.content")
        except InputError as exc:
            raise exc.located(source=self.source, line=line) from None
        call_id = raw.get("toolCallId")
        return Message(role=raw["role"], content=text, reasoning=reasoning, tool_calls=calls,
                       tool_call_id=call_id if isinstance(call_id, str) else None)  # fmt: skip

    def extend_step(self, **change: Any) -> None:
        if self.open_step is None:
            self.messages.append(Message(role="assistant"))
            self.open_step = len(self.messages) - 1
        m = self.messages[self.open_step]
        self.messages[self.open_step] = Message(
            role="assistant",
            content=m.content + change.get("content", ""),
            reasoning=((m.reasoning or "") + change.get("reasoning", "")) or None,
            tool_calls=m.tool_calls + change.get("tool_calls", ()),
        )


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass
class _Request:
    """An `llm.request` (or, in old wires, a `step.begin`) awaiting its reply and usage."""

    messages: tuple[Message, ...]
    system: str | None
    time: float | None
    line: int
    step: Any = None
    tools: tuple[Any, ...] | None = None
    model: str | None = None
    effort: str | None = None
    unlogged: str | None = None
    output: Message | None = None
    reported: Usage | None = None

    def call(self) -> Call:
        return Call(messages=self.messages, system=self.system, tools=self.tools, effort=self.effort,
                    model=self.model, time=self.time, output=self.output, reported=self.reported, line=self.line,
                    unlogged=self.unlogged)  # fmt: skip


class KimiCode(Reader):
    name = "kimi-code"

    def detect(self, first: Any) -> bool:
        return isinstance(first, Mapping) and first.get("type") == "metadata" and "created_at" in first

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        return _Wire(unit, notes, leniency).calls()

    def project(self, unit: Source | Path) -> str | None:
        """The working directory the wire's `config.update` records (`cwd`)."""
        return first_string(unit.data, "cwd") if isinstance(unit, Source) else None

    def session_name(self, unit: Source | Path) -> str:
        """`<session id>/<agent>` for `.../<session id>/agents/<agent>/wire.jsonl`, else the file's name."""
        p = Path(unit.name if isinstance(unit, Source) else unit)
        if p.name == "wire.jsonl" and p.parent.parent.name == "agents":
            return f"{p.parent.parent.parent.name}/{p.parent.name}"
        return p.name.removesuffix(".wire.jsonl").removesuffix(".jsonl")


class _Wire:
    """One wire replayed record by record; `calls()` yields each request once its usage (or the next) arrives."""

    def __init__(self, src: Source, notes: list[str], leniency: Leniency) -> None:
        self.src, self.notes, self.leniency = src, notes, leniency
        self.state = _Replay(src.name)
        self.pending: _Request | None = None
        self.done: list[Call] = []
        self.uses_requests = b'"llm.request"' in src.data

    def flush(self) -> None:
        if self.pending is not None:
            self.done.append(self.pending.call())
            self.pending = None

    def request(self, line: int, time: Any, step: Any = None) -> _Request:
        p = self.pending
        if p is not None and p.reported is None and step is not None and step == p.step:
            self.pending = None  # a retry of the same step: only the last attempt was answered
        self.flush()
        history, open_at = self.state.messages, self.state.open_step
        # without the assistant message this step just opened
        messages = tuple(history) if open_at is None else (*history[:open_at], *history[open_at + 1 :])
        try:
            seconds = timestamp(time, field="time", per_second=1000, leniency=self.leniency)
        except InputError as exc:
            raise exc.located(source=self.src.name, line=line) from None
        self.pending = _Request(messages=messages, system=self.state.system, time=seconds, line=line, step=step,
                                unlogged=None if self.uses_requests else "tools")  # fmt: skip
        return self.pending

    def calls(self) -> Iterator[Call]:
        source, state = self.src.name, self.state
        for line, record in records(source, self.src.data):
            if not isinstance(record, Mapping):
                raise InputError("expected a JSON object", source=source, line=line)
            kind = field(record, "type", str, source=source, line=line)
            self.record(kind, record, line)
            if self.done:
                yield from self.done
                self.done.clear()
        self.flush()
        yield from self.done
        self.notes += state.notes + [Routine(f"{n} {k} record(s) skipped") for k, n in sorted(state.skipped.items())]

    def record(self, kind: str, record: Mapping[str, Any], line: int) -> None:
        source, state = self.src.name, self.state
        if kind == "config.update" and isinstance(record.get("systemPrompt"), str):
            state.system = record["systemPrompt"]
        elif kind == "llm.tools_snapshot":
            tools = field(record, "tools", list, source=source, line=line)
            state.tools[str(record.get("hash"))] = tuple(tools)
        elif kind == "context.append_message":
            state.messages.append(state.message(record.get("message"), line))
        elif kind == "context.append_loop_event":
            self.loop_event(field(record, "event", dict, source=source, line=line), record.get("time"), line)
        elif kind == "llm.request":
            self.llm_request(record, line)
        elif kind == "usage.record":
            usage = field(record, "usage", dict, source=source, line=line)
            if self.pending is not None:
                self.pending.reported = _usage(usage, source, line, self.leniency)
                if self.pending.model is None and isinstance(record.get("model"), str) and record["model"]:
                    self.pending.model = record["model"]
                self.flush()
        elif kind == "context.apply_compaction":
            _compact(state, record)
            state.open_step = None  # a rewritten history holds no step being written
        elif kind == "context.clear":
            state.messages.clear()
            state.open_step = None
        elif kind == "context.undo":
            count = record.get("count")
            if isinstance(count, int) and count > 0:
                _undo(state.messages, count)
                state.open_step = None
        elif kind not in _KNOWN:
            state.skipped[kind] = state.skipped.get(kind, 0) + 1

    def loop_event(self, event: Mapping[str, Any], time: Any, line: int) -> None:
        source, state = self.src.name, self.state
        etype = event.get("type")
        if etype == "step.begin":
            state.open_step = None
            state.extend_step()
            if not self.uses_requests:
                self.request(line, time)
        elif etype == "content.part":
            part = event.get("part")
            if not isinstance(part, Mapping):
                raise InputError("expected an object", source=source, line=line, field="event.part")
            thought, rest = split_think([part])
            state.extend_step(reasoning=thought or "", content=content_text(rest))
        elif etype == "tool.call":
            call = ToolCall(str(event.get("toolCallId", "")), str(event.get("name", "")), _arguments(event.get("args")))
            state.extend_step(tool_calls=(call,))
        elif etype == "tool.result":
            result = event.get("result")
            output = result.get("output") if isinstance(result, Mapping) else result
            text = (
                content_text(output)
                if isinstance(output, list)
                else output
                if isinstance(output, str)
                else _arguments(output)
            )
            call_id = event.get("toolCallId")
            state.messages.append(
                Message(role="tool", content=text, tool_call_id=call_id if isinstance(call_id, str) else None)
            )
        elif etype == "step.end":
            if self.pending is not None and state.open_step is not None:
                self.pending.output = state.messages[state.open_step]
            state.open_step = None

    def llm_request(self, record: Mapping[str, Any], line: int) -> None:
        state = self.state
        tools_hash = record.get("toolsHash")
        tools = state.tools.get(str(tools_hash)) if tools_hash else None
        if tools_hash and tools is None:
            state.notes.append(f"line {line}: no tools snapshot for toolsHash {str(tools_hash)[:12]}")
        system = record.get("systemPrompt") if isinstance(record.get("systemPrompt"), str) else state.system
        want = record.get("systemPromptHash")
        if system is not None and want and hashlib.sha256(system.encode()).hexdigest() != want:
            state.notes.append(f"line {line}: systemPromptHash does not match the logged system prompt")
        request = self.request(line, record.get("time"), step=(record.get("kind"), record.get("turnStep")))
        effort, model = record.get("thinkingEffort"), record.get("model")
        request.tools = tools
        request.system = system
        request.effort = effort if isinstance(effort, str) else None
        request.model = model if isinstance(model, str) and model else None
        request.unlogged = "tools" if tools_hash and tools is None else None
        count = record.get("messageCount")
        if isinstance(count, int) and count != len(request.messages):
            state.notes.append(
                f"line {line}: messageCount {count}, but the replay holds {len(request.messages)} messages"
            )


_KNOWN = {
    "metadata", "turn.prompt", "turn.steer", "tools.set_active_tools", "permission.set_mode",
    "permission.record_approval_result", "micro_compaction.apply", "context.update_token_count", "forked",
}  # fmt: skip


def _undo(messages: list[Message], prompts: int) -> None:
    """Take back the last `prompts` user prompts and everything after each."""
    while prompts and messages:
        if messages.pop().role == "user":
            prompts -= 1


def _compact(state: _Replay, record: Mapping[str, Any]) -> None:
    """History -> the last real user message of the compacted part, the summary as a user message, the rest."""
    count = record.get("compactedCount")
    cut = count if isinstance(count, int) and 0 <= count <= len(state.messages) else len(state.messages)
    compacted, rest = state.messages[:cut], state.messages[cut:]
    kept = [m for m in compacted if m.role == "user"][-1:]
    state.messages[:] = [*kept, Message(role="user", content=str(record.get("summary", ""))), *rest]


def _usage(raw: Mapping[str, Any], source: str, line: int, leniency: Leniency) -> Usage | None:
    try:
        return parse_usage(raw, "kimi-code", leniency=leniency)
    except InputError as exc:
        raise exc.located(source=source, line=line) from None
