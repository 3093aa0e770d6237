"""Claude Code project logs (`~/.claude/projects/<project>/<session id>.jsonl`): what the session would cost on K3.

Every line has a `uuid` and a `parentUuid`; the prompt of a response is the conversation on its chain of
parents (so `/compact`, which starts a new chain, and `/btw` side questions, which branch off it, are followed
as Claude Code sends them). Claude Code writes one line per content block of a response, each repeating the
response's usage: lines are grouped by `(message.id, requestId)` and the largest usage kept (ccusage's rule);
sidechain lines that replay a response already seen are dropped; `<synthetic>` messages (errors Claude Code
writes itself) were never requests. The system prompt and tools are not logged: each call says so
(`unlogged`), and calibration sizes them from the logged usage; a sub-agent's calls name their own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcost.calls import Call, Message, ToolCall, Usage, content_text, timestamp
from kcost.errors import STRICT, InputError, Leniency
from kcost.providers import wire
from kcost.readers.jsonl import field, first_string, records
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.results.common import Routine
from kcost.transcripts.usage import parse_usage

_TYPES = {"user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation"}


def looks_like(record: Any) -> bool:
    if not isinstance(record, Mapping):
        return False
    from kcost.readers.qwen_code import looks_like as qwen_code  # its records share these keys: Qwen Code's own

    if qwen_code(record):
        return False
    kind = record.get("type")
    if isinstance(kind, str) and kind in _TYPES and (record.keys() & {"uuid", "sessionId", "messageId", "leafUuid"}):
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
        else:  # a jump to another branch: back to where it leaves the chain, then along it
            line: str | None = parent
            path: list[str] = []
            while line is not None and line not in self.at and line in self.parent and len(path) <= len(self.parent):
                path.append(line)
                line = self.parent[line]
            self._cut(self.at[line] + 1 if line is not None and line in self.at else 0)
            for uuid in reversed(path):
                self.push(uuid, self.parent[uuid], self.own[uuid])

    def _cut(self, n: int) -> None:
        for uuid in self.uuids[n:]:
            del self.at[uuid]
        if n < len(self.uuids):
            del self.flat[self.starts[n] :]
        del self.uuids[n:], self.starts[n:]

    def push(self, uuid: str, parent: str | None, messages: tuple[Message, ...]) -> None:
        if uuid in self.at:  # a line logged twice: it stands where it stands now, once
            self._cut(self.at[uuid])
        self.parent[uuid] = parent
        self.own[uuid] = messages
        self.at[uuid] = len(self.uuids)
        self.uuids.append(uuid)
        self.starts.append(len(self.flat))
        self.flat.extend(messages)


@dataclass
class _Response:
    """The response being assembled from its lines (one per content block)."""

    key: tuple[str, str]
    messages: tuple[Message, ...] | None
    output: Message
    reported: Usage | None
    line: int
    time: float | None
    model: str | None
    unlogged: str
    at: int  # where its message sits in the chain's messages
    raw: Any = None  # the usage as logged on its first line

    def call(self) -> Call:
        return Call(messages=self.messages, output=self.output, reported=self.reported, line=self.line,
                    time=self.time, model=self.model, id=self.key[0], unlogged=self.unlogged)  # fmt: skip


class ClaudeCode(Reader):
    name = "claude-code"
    comparable = False  # Anthropic's cache, with its own breakpoints: its hits say nothing of K3's

    def detect(self, first: Any) -> bool:
        return looks_like(first)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        return read_calls(unit, notes, prompts=prompts, leniency=leniency)

    def project(self, unit: Source | Path) -> str | None:
        """The working directory every message line records (`cwd`)."""
        return first_string(unit.data, "cwd") if isinstance(unit, Source) else None


_MAIN = "system prompt and tools"


class _Agents:
    """Which agent a line belongs to: the main one, or a sub-agent (a sidechain: by its `agentId`, else by the
    chain it hangs from), each with a system prompt and tools of its own."""

    def __init__(self) -> None:
        self.of: dict[str, str] = {}
        self.count = 0

    def name(self, record: Mapping[str, Any], uuid: str, parent: str | None) -> str:
        if record.get("isSidechain") is not True:
            return _MAIN
        found = record.get("agentId")
        if isinstance(found, str) and found:
            name = f"sub-agent {found}'s system prompt and tools"
        elif parent is not None and parent in self.of:
            name = self.of[parent]
        else:
            self.count += 1
            name = f"sub-agent {self.count}'s system prompt and tools"
        self.of[uuid] = name
        return name


def read_calls(src: Source, notes: list[str], *, prompts: bool = True, leniency: Leniency = STRICT) -> Iterator[Call]:
    """The session's calls, one per response; `notes` gets what was skipped."""
    source = src.name
    log = _Log(source, prompts and prompts_known(src), leniency)
    chain = log.chain
    for line, record in records(source, src.data):
        if type(record) is not dict:  # parsed JSON: a dict is the only mapping it makes
            raise InputError("expected a JSON object", source=source, line=line)
        raw = record.get("message")
        message: Mapping[str, Any] = raw if type(raw) is dict else {}
        role = message.get("role")
        uuid = record.get("uuid")
        if not isinstance(uuid, str):
            uuid = f"line-{line}"
        parent = record.get("parentUuid") if isinstance(record.get("parentUuid"), str) else None
        if "parentUuid" not in record and chain.uuids:
            parent = chain.uuids[-1]  # logs without the chain fields: one line after another
        if role == "assistant":
            yield from log.assistant(record, message, uuid, parent, line)
        elif role == "user":
            log.agents.name(record, uuid, parent)
            if log.prompts:
                chain.move_to(parent)
                chain.push(uuid, parent, tuple(_user(message.get("content"))))
        else:
            log.skipped += 1
            if log.prompts and "uuid" in record:  # progress and system lines sit on the chain too
                chain.move_to(parent)
                chain.push(uuid, parent, ())
    if log.pending is not None:
        yield log.pending.call()
    if log.skipped:
        notes.append(Routine(f"{log.skipped} non-message line(s) skipped"))
    if log.sidechains:
        notes.append(f"{log.sidechains} sidechain replay line(s) dropped")
    if log.synthetic:
        notes.append(Routine(f"{log.synthetic} <synthetic> message(s) (written by Claude Code, never sent) skipped"))


class _Log:
    """A log read line by line: the chain, the response being assembled, and what was skipped."""

    def __init__(self, source: str, prompts: bool, leniency: Leniency) -> None:
        self.source, self.prompts, self.leniency = source, prompts, leniency
        self.chain = _Chain()
        self.agents = _Agents()
        self.main_ids: set[str] = set()
        self.done: set[tuple[str, str]] = set()
        self.pending: _Response | None = None
        self.skipped = self.sidechains = self.synthetic = 0

    def assistant(
        self, record: Mapping[str, Any], message: Mapping[str, Any], uuid: str, parent: str | None, line: int
    ) -> Iterator[Call]:
        """One line of a response: a block of the response being assembled, or the start of the next one
        (which closes the pending one: yielded); replays, `<synthetic>` messages and late blocks are passed."""
        mid = str(field(message, "id", str, source=self.source, line=line, where="message"))
        request = record.get("requestId")
        key = (mid, request if isinstance(request, str) else "")
        sidechain = record.get("isSidechain") is True
        if sidechain and mid in self.main_ids:
            self.sidechains += 1
            return
        if message.get("model") == "<synthetic>":
            self.synthetic += 1
            self._sit(uuid, parent, ())
            return
        if not sidechain:
            self.main_ids.add(mid)
        pending = self.pending
        raw_usage = message.get("usage")
        usage = None
        if raw_usage is not None and not (pending is not None and key == pending.key and raw_usage == pending.raw):
            usage = self._usage(raw_usage, line)  # a block that repeats its response's usage is not parsed again
        if pending is not None and key == pending.key:
            self._block(pending, usage, message, uuid, parent)
            return
        if key in self.done:
            return  # a late block of a response already closed
        if pending is not None:
            self.done.add(pending.key)
            yield pending.call()
        self._open(record, message, key, usage, raw_usage, uuid, parent, line)

    def _usage(self, raw: Any, line: int) -> Usage | None:
        try:
            return parse_usage(raw, wire.ANTHROPIC.scheme, where="message.usage", leniency=self.leniency)
        except InputError as exc:
            raise exc.located(source=self.source, line=line) from None

    def _sit(self, uuid: str, parent: str | None, messages: tuple[Message, ...]) -> None:
        """Put a line on the chain after its parent (where prompts are rebuilt)."""
        if self.prompts:
            self.chain.move_to(parent)
            self.chain.push(uuid, parent, messages)

    def _block(
        self, pending: _Response, usage: Usage | None, message: Mapping[str, Any], uuid: str, parent: str | None
    ) -> None:
        """Another block of the response being assembled: the largest usage is kept, the content joined."""
        if usage is not None and (pending.reported is None or (usage.prompt, usage.output) >
                                  (pending.reported.prompt, pending.reported.output)):  # fmt: skip
            pending.reported = usage
        if self.prompts:
            chain = self.chain
            reply = _merge(pending.output, message.get("content"))
            chain.move_to(parent)
            if pending.at < len(chain.flat) and chain.flat[pending.at] is pending.output:
                chain.flat[pending.at] = reply  # one assistant message for all the response's blocks
            pending.output = reply
            chain.push(uuid, parent, ())

    def _open(
        self,
        record: Mapping[str, Any],
        message: Mapping[str, Any],
        key: tuple[str, str],
        usage: Usage | None,
        raw_usage: Any,
        uuid: str,
        parent: str | None,
        line: int,
    ) -> None:
        """The first line of a response: it becomes the pending one, its prompt the chain up to its parent."""
        prompts, chain = self.prompts, self.chain
        model = message.get("model")
        reply = _merge(Message(role="assistant"), message.get("content")) if prompts else Message(role="assistant")
        if prompts:
            chain.move_to(parent)
        try:
            time = timestamp(record.get("timestamp"), field="timestamp", leniency=self.leniency)
        except InputError as exc:
            raise exc.located(source=self.source, line=line) from None
        self.pending = _Response(key=key, messages=tuple(chain.flat) if prompts else None, output=reply,
                                 reported=usage, line=line, time=time,
                                 model=model if isinstance(model, str) and model else None,
                                 unlogged=self.agents.name(record, uuid, parent), at=len(chain.flat),
                                 raw=raw_usage)  # fmt: skip
        if prompts:
            chain.push(uuid, parent, (reply,))


def prompts_known(src: Source) -> bool:
    """Whether the log holds message text at all (usage-only logs from some tools do not)."""
    return b'"content"' in src.data


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
