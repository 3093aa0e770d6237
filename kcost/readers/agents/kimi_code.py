"""Kimi Code CLI wire logs (`~/.kimi-code/sessions/<work dir key>/<session id>/agents/<agent>/wire.jsonl`).

One flat record per line (`{"type": ..., "time": <unix ms>}`). The context is replayed as the agent replays it
on resume (agent-core's `restoreAgentRecord`, `packages/agent-core/src/agent/records/index.ts`; agent-core-v2's
state folds for wire protocol 1.5, `packages/agent-core-v2/src/agent/contextMemory/contextOps.ts`; the
reference replayer `apps/vis/server/src/lib/context-projector.ts` mirrors both): `context.append_message`
appends; a step's `step.begin` opens an assistant message that its `content.part` and `tool.call` events
extend; `tool.result` adds a tool message; compaction (each of its record forms, `_compact`), clear, undo,
micro-compaction and `swarm_mode.exit` rewrite the history. Each `llm.request` is one request: the replayed
messages (without the assistant message its step just opened), the system prompt and the tool table it names
by hash, the model and thinking effort. Old wires without `llm.request` make a request at every `step.begin`.
Usage is the step's `usage.record` (`step.end.usage` repeats it), which protocol 1.5 writes before the step's
content and older wires after its `step.end`: a request is complete once it has both, or the next one begins.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Message, ToolCall, Usage, content_text, sha256_hex, split_think, timestamp
from kcost.model.frozen import frozen
from kcost.readers.jsonl import compact_json, field, records
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.usage import parse_usage
from kcost.results.common import Routine


@frozen
class _Origin:
    """What the agent knows of a context message beyond its text: where it came from (`origin.kind`, its
    `variant` and `trigger`), its text parts joined, and agent-core's estimate of its tokens (which compaction's
    choice of kept user messages runs on)."""

    kind: str | None = None
    variant: str | None = None
    trigger: str | None = None
    text: str = ""
    estimate: int = 0


class _Replay:
    def __init__(self, source: str) -> None:
        self.source = source
        self.system: str | None = None
        self.tools: dict[str, tuple[Any, ...]] = {}
        self.unread_tools: set[str] = set()  # the hashes of tools snapshots that hold no list of tools
        self.compacted = False  # the history was compacted or cleared since the last request
        self.messages: list[Message] = []
        self.origins: list[_Origin] = []  # one per message, in step
        self.open_step: int | None = None  # index of the assistant message the current step is writing
        self.notes: list[str] = []
        self.skipped: dict[str, int] = {}
        self.v2 = False  # wire protocol 1.5 (agent-core-v2) or later
        self.swarm: str | None = None  # the trigger of the swarm mode in force (agent-core v1 keeps it)

    def push(self, message: Message, origin: _Origin | None = None) -> None:
        self.messages.append(message)
        self.origins.append(origin or _Origin())

    def replace(self, entries: list[tuple[Message, _Origin]]) -> None:
        self.messages[:] = [m for m, _ in entries]
        self.origins[:] = [o for _, o in entries]

    def entries(self) -> list[tuple[Message, _Origin]]:
        return list(zip(self.messages, self.origins, strict=True))

    def message(self, raw: Any, line: int) -> tuple[Message, _Origin]:
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
        message = Message(role=raw["role"], content=text, reasoning=reasoning, tool_calls=calls,
                          tool_call_id=call_id if isinstance(call_id, str) else None)  # fmt: skip
        return message, _origin(raw)

    def extend_step(self, **change: Any) -> None:
        if self.open_step is None:
            self.push(Message(role="assistant"))
            self.open_step = len(self.messages) - 1
        m = self.messages[self.open_step]
        self.messages[self.open_step] = Message(
            role="assistant",
            content=m.content + change.get("content", ""),
            reasoning=((m.reasoning or "") + change.get("reasoning", "")) or None,
            tool_calls=m.tool_calls + change.get("tool_calls", ()),
        )


def _origin(raw: Mapping[str, Any]) -> _Origin:
    """A stored message's origin, text and agent-core's token estimate (`estimateTokensForMessage`,
    `packages/agent-core/src/utils/tokens.ts`: the role, each text or think part, 2,000 per media part, each
    tool call's name and JSON-quoted arguments)."""
    found = raw.get("origin")
    origin: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    parts = raw.get("content")
    parts = [{"type": "text", "text": parts}] if isinstance(parts, str) else parts if isinstance(parts, list) else []
    texts: list[str] = []
    estimate = _estimate(str(raw.get("role", "")))
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
            estimate += _estimate(part["text"])
        elif kind == "think" and isinstance(part.get("think"), str):
            estimate += _estimate(part["think"])
        elif kind in ("image_url", "audio_url", "video_url"):
            estimate += 2000  # MEDIA_TOKEN_ESTIMATE
    for call in raw.get("toolCalls") or ():
        if isinstance(call, Mapping):
            arguments = json.dumps(call.get("arguments"), ensure_ascii=False)  # JSON.stringify
            estimate += _estimate(str(call.get("name", ""))) + _estimate(arguments)
    return _Origin(
        kind=origin.get("kind") if isinstance(origin.get("kind"), str) else None,
        variant=origin.get("variant") if isinstance(origin.get("variant"), str) else None,
        trigger=origin.get("trigger") if isinstance(origin.get("trigger"), str) else None,
        text="".join(texts),
        estimate=estimate,
    )


def _estimate(text: str) -> int:
    """agent-core's `estimateTokens`: a token per four ASCII characters (rounded up), one per other character."""
    ascii_count = sum(1 for ch in text if ord(ch) <= 127)
    return -(-ascii_count // 4) + (len(text) - ascii_count)


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else compact_json(value)


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
    closed: bool = False  # its step ended: its reply is whole
    compacted: bool = False  # the history was compacted or cleared since the request before

    def call(self) -> Call:
        return Call(messages=self.messages, system=self.system, tools=self.tools, effort=self.effort,
                    model=self.model, time=self.time, output=self.output, reported=self.reported, line=self.line,
                    unlogged=self.unlogged, compacted=self.compacted)  # fmt: skip


class KimiCode(Reader):
    name = "kimi-code"
    one_call = "an `llm.request` (a retried step once)"
    usage_read = (
        "`usage.record`: `inputOther + inputCacheRead + inputCacheCreation` (cached `inputCacheRead`), "
        "`output`"
    )
    source_read = "MoonshotAI/kimi-code `packages/agent-core` (`records/index.ts`, `llmRequesterService.ts`)"

    def detect(self, first: Any) -> bool:
        return isinstance(first, Mapping) and first.get("type") == "metadata" and "created_at" in first

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        return _Wire(unit, notes, leniency).calls()

    def project(self, unit: Source | Path) -> str | None:
        """The working directory the wire's `config.update` records (`cwd`)."""
        return unit.first_string("cwd") if isinstance(unit, Source) else None

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
        self.uses_requests = src.contains(b'"llm.request"')

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
                                unlogged=None if self.uses_requests else "tools",
                                compacted=self.state.compacted)  # fmt: skip
        self.state.compacted = False
        return self.pending

    def calls(self) -> Iterator[Call]:
        after = 0
        for data, end in self.src.pieces():  # a piece at a time: the wire is never held whole
            yield from self.read_on(data, after, end)
            after += data.count(b"\n", 0, end)
        self.flush()
        yield from self.done
        self.notes += self.closing_notes()

    def read_on(self, data: bytes | bytearray, after: int = 0, end: int | None = None) -> Iterator[Call]:
        """The calls the records of `data` complete (the wire read on from where it stands, its `after` lines
        read); the request still awaiting its reply stays `pending`."""
        source = self.src.name
        for line, record in records(source, data, after=after, end=end):
            if not isinstance(record, Mapping):
                raise InputError("expected a JSON object", source=source, line=line)
            kind = field(record, "type", str, source=source, line=line)
            self.record(kind, record, line)
            if self.done:
                yield from self.done
                self.done.clear()

    def closing_notes(self) -> list[str]:
        """What the replay noted and passed over, as the session's notes say it once the wire is read."""
        state = self.state
        return state.notes + [Routine(f"{n} {k} record(s) skipped") for k, n in sorted(state.skipped.items())]

    def record(self, kind: str, record: Mapping[str, Any], line: int) -> None:
        source, state = self.src.name, self.state
        if kind == "metadata":
            state.v2 = _version(record.get("protocol_version")) >= (1, 5)
        elif kind in ("config.update", "profile.bind") and isinstance(record.get("systemPrompt"), str):
            state.system = record["systemPrompt"]  # a v2 wire binds its profile (and prompt) with `profile.bind`
        elif kind == "llm.tools_snapshot":
            self.tools_snapshot(record, line)
        elif kind == "context.append_message":
            state.push(*state.message(record.get("message"), line))
        elif kind == "context.append_loop_event":
            self.loop_event(field(record, "event", dict, source=source, line=line), record.get("time"), line)
        elif kind == "llm.request":
            self.llm_request(record, line)
        elif kind == "usage.record":
            self.usage_record(record, line)
        elif kind == "context.apply_compaction":
            _compact(state, record, line)
            state.open_step, state.compacted = None, True  # a rewritten history holds no step being written
        elif kind == "context.clear":
            state.replace([])
            state.open_step, state.compacted = None, True
        elif kind == "context.undo":
            count = record.get("count")
            if isinstance(count, int) and count > 0:
                _undo(state, count)
                state.open_step = None
        elif kind == "swarm_mode.enter":
            trigger = record.get("trigger")
            state.swarm = trigger if isinstance(trigger, str) else "manual"
        elif kind == "swarm_mode.exit":
            _swarm_exit(state)
        elif kind not in _KNOWN:
            state.skipped[kind] = state.skipped.get(kind, 0) + 1

    def tools_snapshot(self, record: Mapping[str, Any], line: int) -> None:
        """The tools a request sends, by their hash. Kimi Code writes them as a list; a snapshot whose `tools`
        is a list written as a JSON string is read as that list, and one that holds no list at all is a note:
        the requests naming it are billed with their tools left out of the log, sized from the logged usage
        (a bill needs no tool to bill what was reported, nor to size what the log leaves out)."""
        state, tools, named = self.state, record.get("tools"), str(record.get("hash"))
        if isinstance(tools, str):
            with contextlib.suppress(ValueError):
                tools = json.loads(tools)
        if isinstance(tools, list):
            state.tools[named] = tuple(tools)
            return
        state.unread_tools.add(named)
        state.notes.append(f"line {line}: a tools snapshot whose tools are {type(tools).__name__}, not a list: "
                           "the requests naming it are sized with their tools left out (from the logged "
                           "usage)")  # fmt: skip

    def usage_record(self, record: Mapping[str, Any], line: int) -> None:
        """The usage of the request awaiting it. Protocol 1.5 writes it as the reply finishes streaming, before
        the step's `content.part` and `step.end` (`llmRequesterService.ts`, `runRequest`); older wires after
        `step.end`. The request is complete once its step has ended (or it is a compaction round, which has no
        step), else at its `step.end`."""
        source = self.src.name
        usage = field(record, "usage", dict, source=source, line=line)
        pending = self.pending
        if pending is None:
            return
        pending.reported = _usage(usage, source, line, self.leniency)
        if pending.model is None and isinstance(record.get("model"), str) and record["model"]:
            pending.model = record["model"]
        if pending.closed or not isinstance(pending.step, tuple) or pending.step[0] == "compaction":
            self.flush()

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
            state.push(Message(role="tool", content=text, tool_call_id=call_id if isinstance(call_id, str) else None))
        elif etype == "step.end":
            pending = self.pending
            if pending is not None and state.open_step is not None:
                pending.output = state.messages[state.open_step]
            state.open_step = None
            if pending is not None:
                pending.closed = True
                if pending.reported is not None:  # its usage came first (protocol 1.5)
                    self.flush()

    def llm_request(self, record: Mapping[str, Any], line: int) -> None:
        state = self.state
        tools_hash = record.get("toolsHash")
        tools = state.tools.get(str(tools_hash)) if tools_hash else None
        if tools_hash and tools is None and str(tools_hash) not in state.unread_tools:
            state.notes.append(f"line {line}: no tools snapshot for toolsHash {str(tools_hash)[:12]}")
        system = record.get("systemPrompt") if isinstance(record.get("systemPrompt"), str) else state.system
        want = record.get("systemPromptHash")
        if system is not None and want and sha256_hex(system) != want:
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


# Records that leave the model's context as it was (agent-core's `restoreAgentRecord` and the v2 wire manifest,
# `packages/agent-core-v2/docs/wire-manifest.d.ts`, whose states column names `contextMemory` only for the
# context records, compaction, clear, undo and `swarm_mode.exit`). `micro_compaction.apply` blanks old tool
# results at projection time; kcost does not replay it.
_KNOWN = {
    "metadata", "forked", "turn.prompt", "turn.steer", "turn.cancel", "turn.ended", "prompt.accepted",
    "tools.set_active_tools", "tools.reset_active_tools", "tools.register_user_tool", "tools.unregister_user_tool",
    "tools.update_store", "permission.set_mode", "permission.record_approval_result", "micro_compaction.apply",
    "context.update_token_count", "full_compaction.begin", "full_compaction.cancel", "full_compaction.complete",
    "plan_mode.enter", "plan_mode.cancel", "plan_mode.exit", "plan.revision", "goal.create", "goal.update",
    "goal.clear", "mcp.tools_discovered", "tower_mode.enter", "tower_mode.exit", "cron.add", "cron.cursor",
    "cron.delete", "interaction.request", "interaction.resolved", "interruptionReminder.recorded",
    "plugin.session_start", "runtime.set_binding", "staleGuard.cleared", "staleGuard.recorded", "task.started",
    "task.terminated", "task.waitDelivered", "token_counting.measured", "token_counting.rebased",
    "token_counting.truncated", "token_counting.turn_recorded",
}  # fmt: skip


def _version(value: Any) -> tuple[int, ...]:
    try:
        return tuple(int(n) for n in str(value).split("."))
    except ValueError:
        return (0,)


# ---- history rewrites, as agent-core makes them ------------------------------------------------------------


def _real_user_input(o: _Origin, m: Message) -> bool:
    """`isRealUserInput` (`compaction/handoff.ts`): a user message the user wrote (no origin, `user`, or a
    skill or plugin command the user typed); compaction keeps these, undo counts them."""
    if m.role != "user":
        return False
    if o.kind is None or o.kind == "user":
        return True
    return o.kind in ("skill_activation", "plugin_command") and o.trigger == "user-slash"


def _undo(state: _Replay, prompts: int) -> None:
    """`ContextMemory.undo` (`agent/context/index.ts`): from the end, injected messages stay, a compaction summary
    stops the walk, everything else goes until `prompts` real user prompts are gone."""
    entries = state.entries()
    removed = 0
    for i in range(len(entries) - 1, -1, -1):
        m, o = entries[i]
        if o.kind == "injection":
            continue
        if o.kind == "compaction_summary":
            break
        del entries[i]
        if _real_user_input(o, m):
            removed += 1
            if removed >= prompts:
                break
    state.replace(entries)


def _swarm_exit(state: _Replay) -> None:
    """`swarm_mode.exit` takes back the swarm-mode reminder its `swarm_mode.enter` appended, when it is still the
    last message (agent-core-v2 `popSwarmModeReminder`, `contextMemory/contextOps.ts`; agent-core's
    `SwarmMode.exit`, `agent/swarm/index.ts`, which on resume pops it only while a swarm entered other than by
    the AgentSwarm tool is in force, and never appends the exit reminder: that is logged as its own message)."""
    trigger, state.swarm = state.swarm, None
    if not state.v2 and (trigger is None or trigger == "tool"):
        return
    if state.origins and state.origins[-1].kind == "injection" and state.origins[-1].variant == "swarm_mode":
        state.messages.pop()
        state.origins.pop()
        state.open_step = None


_MAX_KEPT, _HEAD_KEPT = 20_000, 2_000  # COMPACT_USER_MESSAGE_MAX_TOKENS, COMPACT_USER_MESSAGE_HEAD_TOKENS
_ELISION = (
    "Some of this conversation's user messages were omitted here during compaction: the messages above this note "
    "are the oldest user input, the messages below are the most recent, and roughly {} tokens in between were "
    "dropped. The omitted content is covered by the compaction summary at the end of the conversation."
)


def _compact(state: _Replay, record: Mapping[str, Any], line: int) -> None:
    """A `context.apply_compaction` in any of its forms (agent-core-v2 `readContextCompactionShapeInput` and
    `buildContextCompactionShape`, `contextMemory/contextOps.ts` and `compactionHandoff.ts`; agent-core
    `ContextMemory.applyCompaction`, `agent/context/index.ts`):

    - no `keptUserMessageCount` (or `legacyTail: true`): the legacy tail, `[summary, ...history[compactedCount:]]`
      (agent-core v1 only while `compactedCount` is inside the history); the summary is `contextSummary`, else
      `summary`, and a `summary` that is a message object (`{summary: <message>, count}`) is that message;
    - else the kept user messages then the summary: the most recent real user input within 20,000 estimated
      tokens, or (`keptHeadUserMessageCount`, and every v2 record) the oldest 2,000 tokens' worth, an elision
      note, and the most recent, when they do not all fit.
    """
    summary, context_summary = record.get("summary"), record.get("contextSummary")
    message_summary = summary if isinstance(summary, Mapping) and isinstance(summary.get("role"), str) else None
    if isinstance(context_summary, str):
        text = context_summary
    elif isinstance(summary, str):
        text = summary
    elif message_summary is not None:
        text = _text_of(message_summary)
    else:
        raise InputError("a compaction needs its `summary`", source=state.source, line=line, field="summary")
    count = record.get("compactedCount", record.get("count"))
    kept = record.get("keptUserMessageCount")
    legacy = record.get("legacyTail") if isinstance(record.get("legacyTail"), bool) else not isinstance(kept, int)
    entries = state.entries()
    cut = count if isinstance(count, int) and count >= 0 else len(entries)
    if legacy and (state.v2 or cut < len(entries)):
        head = (state.message(message_summary, line) if message_summary is not None and not isinstance(
            context_summary, str) else _summary(text))  # fmt: skip
        state.replace([head, *entries[cut:]])
        return
    users = [(m, o) for m, o in entries if _real_user_input(o, m) and o.kind != "compaction_summary"]
    if state.v2 or isinstance(record.get("keptHeadUserMessageCount"), int):
        chosen = _head_and_tail(users)
    else:
        chosen = _recent(users, _MAX_KEPT)
    state.replace([*chosen, _summary(text)])


def _text_of(message: Mapping[str, Any]) -> str:
    parts = message.get("content")
    if isinstance(parts, str):
        return parts
    return "".join(p["text"] for p in parts or () if isinstance(p, Mapping) and isinstance(p.get("text"), str))


def _summary(text: str) -> tuple[Message, _Origin]:
    return Message(role="user", content=text), _Origin(kind="compaction_summary", text=text, estimate=0)


def _with_text(entry: tuple[Message, _Origin], text: str) -> tuple[Message, _Origin]:
    """`replaceMessageText`: the message as its text alone (media and tool calls dropped)."""
    m, o = entry
    return Message(role=m.role, content=text), _Origin(o.kind, o.variant, o.trigger, text,
                                                       _estimate(m.role) + _estimate(text))  # fmt: skip


def _truncated(entry: tuple[Message, _Origin], tokens: int) -> tuple[Message, _Origin]:
    """`truncateUserMessage`: its text cut to the first `tokens` estimated tokens."""
    return _with_text(entry, _prefix(entry[1].text, tokens))


def _prefix(text: str, tokens: int) -> str:
    """`truncateTextToTokens`: the longest start of `text` within `tokens` estimated tokens."""
    if tokens <= 0:
        return ""
    ascii_count = other = end = 0
    for ch in text:
        if ord(ch) <= 127:
            ascii_count += 1
        else:
            other += 1
        if -(-ascii_count // 4) + other > tokens:
            break
        end += 1
    return text[:end]


def _suffix(text: str, tokens: int) -> str:
    """`truncateTextToTokensFromEnd`: the longest end of `text` within `tokens` estimated tokens."""
    if tokens <= 0:
        return ""
    ascii_count = other = 0
    start = len(text)
    for i in range(len(text) - 1, -1, -1):
        if ord(text[i]) <= 127:
            ascii_count += 1
        else:
            other += 1
        if -(-ascii_count // 4) + other > tokens:
            break
        start = i
    return text[start:]


def _recent(users: list[tuple[Message, _Origin]], budget: int) -> list[tuple[Message, _Origin]]:
    """`selectRecentUserMessages`: the most recent user messages within `budget`, the oldest of them cut to fit."""
    chosen: list[tuple[Message, _Origin]] = []
    remaining = budget
    for entry in reversed(users):
        if remaining <= 0:
            break
        if entry[1].estimate <= remaining:
            chosen.append(entry)
            remaining -= entry[1].estimate
        else:
            chosen.append(_truncated(entry, remaining))
            break
    return chosen[::-1]


def _head_and_tail(users: list[tuple[Message, _Origin]]) -> list[tuple[Message, _Origin]]:
    """`selectCompactionUserMessages` and the elision note `applyCompaction` puts between head and tail."""
    total = sum(o.estimate for _, o in users)
    if total <= _MAX_KEPT:
        return list(users)
    tail: list[tuple[Message, _Origin]] = []
    remaining, head_end, dropped = _MAX_KEPT - _HEAD_KEPT, len(users), None
    for i in range(len(users) - 1, -1, -1):
        if remaining <= 0:
            break
        entry = users[i]
        if entry[1].estimate <= remaining:
            tail.append(entry)
            remaining -= entry[1].estimate
            head_end = i
            continue
        whole = entry[1].text
        kept = _suffix(whole, remaining)
        tail.append(_with_text(entry, kept))
        head_end = i
        if len(whole) > len(kept):
            dropped = _with_text(entry, whole[: len(whole) - len(kept)])
        break
    tail.reverse()
    candidates = users[:head_end] + ([dropped] if dropped is not None else [])
    head: list[tuple[Message, _Origin]] = []
    remaining = _HEAD_KEPT
    for entry in candidates:
        if remaining <= 0:
            break
        if entry[1].estimate <= remaining:
            head.append(entry)
            remaining -= entry[1].estimate
            continue
        head.append(_truncated(entry, remaining))
        break
    omitted = max(0, total - sum(o.estimate for _, o in head + tail))
    note = f"<system-reminder>\n{_ELISION.format(omitted)}\n</system-reminder>"
    elision = (Message(role="user", content=note), _Origin(kind="injection", variant="compaction_elision", text=note))
    return [*head, elision, *tail]


def _usage(raw: Mapping[str, Any], source: str, line: int, leniency: Leniency) -> Usage | None:
    try:
        return parse_usage(raw, "kimi-code", leniency=leniency)
    except InputError as exc:
        raise exc.located(source=source, line=line) from None
