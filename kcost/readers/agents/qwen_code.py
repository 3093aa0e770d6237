"""Qwen Code chats (`~/.qwen/projects/<project>/chats/<session id>.jsonl`): what the session would cost on K3.

Qwen Code's chat recording (QwenLM/qwen-code `packages/core/src/services/chatRecordingService.ts`, `ChatRecord`)
writes one record a line: `uuid`, `parentUuid`, `sessionId`, `timestamp`, `type` (`user`, `assistant`,
`tool_result`, `system`), `cwd`, `version`, and the API's `message` (a Gemini `Content`: `role`, `parts`). An
`assistant` record with `usageMetadata` is one call (a record written twice counts once); its prompt is the
conversation along its chain of `parentUuid`s, from the last `chat_compression` checkpoint (whose
`systemPayload.compressedHistory` replaces what came before it). `usageMetadata` is Gemini's shape filled from an
OpenAI-compatible API (`packages/core/src/core/openaiContentGenerator/converter.ts`): `promptTokenCount` is
`prompt_tokens` (the cached tokens included), `cachedContentTokenCount` the cached ones, `candidatesTokenCount`
`completion_tokens` (reasoning included) and `thoughtsTokenCount` the reasoning. So the prompt is
`promptTokenCount` and the output `candidatesTokenCount`: ccusage 20.0.24 adds the cached tokens to the prompt and
the thoughts to the output again. The system prompt and tools are not logged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Message, ToolCall, timestamp
from kcost.readers.agents.gemini_cli import part_text
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.usage import parse_usage

_TYPES = {"user", "assistant", "tool_result", "system"}


def looks_like(record: Any) -> bool:
    """A Qwen Code chat record: a `ChatRecord` whose message is a Gemini `Content` (`parts`), or one of the record
    kinds only Qwen Code writes (`tool_result`, a `systemPayload`)."""
    kind = record.get("type") if isinstance(record, Mapping) else None
    if not isinstance(kind, str) or kind not in _TYPES or "uuid" not in record:
        return False
    message = record.get("message")
    return (
        (isinstance(message, Mapping) and "parts" in message)
        or record.get("type") == "tool_result"
        or "systemPayload" in record
    )


class QwenCode(Reader):
    name = "qwen-code"
    one_call = "an `assistant` record with `usageMetadata`"
    usage_read = (
        "`promptTokenCount` (holds `cachedContentTokenCount`), `candidatesTokenCount` (holds "
        "`thoughtsTokenCount`)"
    )
    source_read = "QwenLM/qwen-code `chatRecordingService.ts`"
    comparable = False  # whichever provider's cache served it: its hits need not be Kimi's

    def detect(self, first: Any) -> bool:
        return looks_like(first)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        return read_calls(unit, prompts=prompts, leniency=leniency)

    def project(self, unit: Source | Path) -> str | None:
        """The working directory each record names (`cwd`)."""
        return unit.first_string("cwd") if isinstance(unit, Source) else None


def read_calls(src: Source, *, prompts: bool, leniency: Leniency) -> Iterator[Call]:
    """One call per `assistant` record with usage, in the file's order."""
    parent: dict[str, str | None] = {}  # uuid -> parent uuid
    own: dict[str, tuple[Message, ...]] = {}  # uuid -> what the record adds to the conversation
    restart: dict[str, tuple[Message, ...]] = {}  # compression checkpoints: uuid -> the history they leave
    done: set[str] = set()
    for line, record in src.records():
        if not isinstance(record, Mapping):
            raise InputError("expected an object", source=src.name, line=line)
        uuid = record.get("uuid")
        if not isinstance(uuid, str):
            continue  # not a chat record (none is known to lack one)
        up = record.get("parentUuid")
        parent.setdefault(uuid, up if isinstance(up, str) else None)
        if prompts:
            own.setdefault(uuid, _messages(record.get("message"), src.name, line))
            payload = record.get("systemPayload")
            if record.get("subtype") == "chat_compression" and isinstance(payload, Mapping):
                kept = payload.get("compressedHistory")
                contents = [c for c in kept if isinstance(c, Mapping)] if isinstance(kept, list) else []
                restart[uuid] = tuple(m for c in contents for m in _messages(c, src.name, line))
        if record.get("type") != "assistant" or record.get("usageMetadata") is None or uuid in done:
            continue
        done.add(uuid)
        try:
            usage = parse_usage(record["usageMetadata"], "qwen-code", where="usageMetadata", leniency=leniency)
            time = timestamp(record.get("timestamp"), field="timestamp", leniency=leniency)
        except InputError as exc:
            raise exc.located(source=src.name, line=line) from None
        if usage is None or usage.empty:  # skipped by a lenient read, or nothing billed
            continue
        reply = own.get(uuid, ())
        model = record.get("model")
        yield Call(
            messages=_chain(parent[uuid], parent, own, restart) if prompts else None,
            output=reply[0] if reply else None,
            time=time,
            model=model if isinstance(model, str) and model else None,
            reported=usage,
            line=line,
            id=uuid,
            unlogged="system prompt and tools",
        )


def _chain(
    at: str | None,
    parent: dict[str, str | None],
    own: dict[str, tuple[Message, ...]],
    restart: dict[str, tuple[Message, ...]],
) -> tuple[Message, ...]:
    """The conversation up to `at` along its parents, from the last compression checkpoint on the way."""
    lines: list[tuple[Message, ...]] = []
    seen: set[str] = set()
    while at is not None and at not in seen:
        seen.add(at)
        if at in restart:
            lines.append(restart[at])
            break
        lines.append(own.get(at, ()))
        at = parent.get(at)
    return tuple(m for ms in reversed(lines) for m in ms)


def _messages(content: Any, source: str, line: int) -> tuple[Message, ...]:
    """A Gemini `Content` as chat messages: the user's or model's turn, and function results as tool messages."""
    if not isinstance(content, Mapping):
        return ()
    parts = content.get("parts")
    if not isinstance(parts, list):
        return ()
    text, reasoning, calls, results = [], [], [], []
    for n, part in enumerate(parts):
        if not isinstance(part, Mapping):
            raise InputError("expected an object", source=source, line=line, field=f"message.parts[{n}]")
        call = part.get("functionCall")
        response = part.get("functionResponse")
        if isinstance(call, Mapping):
            args = call.get("args", {})
            calls.append(ToolCall(str(call.get("id", "")), str(call.get("name", "")),
                                  args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)))  # fmt: skip
        elif isinstance(response, Mapping):
            call_id = str(response.get("id", "")) or None
            results.append(Message(role="tool", content=part_text(part), tool_call_id=call_id))
        elif part.get("thought") and isinstance(part.get("text"), str):
            reasoning.append(part["text"])
        else:
            text.append(part_text(part))
    role = "assistant" if content.get("role") == "model" else "user"
    said = "".join(text)
    turn = [Message(role=role, content=said, reasoning="".join(reasoning) or None, tool_calls=tuple(calls))]
    if role == "user" and not said and results:
        turn = []  # a turn of function results only: the tool messages are the turn
    return (*turn, *results)
