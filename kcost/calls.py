"""Model calls as logs record them: the common currency of every transcript reader.

A reader turns its file into `Call`s: the prompt the API saw (system prompt, tools, messages, the parameters
that change the rendered prompt), the output, and the usage the provider reported, if any. Messages are
frozen and hashable, so a message that recurs in every later request is rendered and counted once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcost.errors import InputError


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as sent


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message in the OpenAI/Kimi shape, flattened to text."""

    role: str
    content: str = ""
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    partial: bool = False


@dataclass(frozen=True, slots=True)
class Usage:
    """What the provider billed: prompt tokens (cached included), cached tokens, output tokens."""

    prompt: int
    cached: int
    output: int


@dataclass(frozen=True)
class Call:
    """One request: its prompt, what it produced, what the log says it cost, and where the log said it."""

    messages: tuple[Message, ...] | None  # None: the log has no prompt (a response, a usage-only record)
    system: str | None = None  # a system prompt kept apart from the messages (Kimi CLI, Kimi Code)
    tools: tuple[Any, ...] | None = None  # tool schemas as sent; None: not in the log
    effort: str | None = None  # reasoning effort, which K3 renders into the prompt
    model: str | None = None
    time: float | None = None  # seconds
    output: Message | None = None  # the reply, where the log has it
    reported: Usage | None = None
    line: int | None = None
    id: str | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)


def message_from_openai(raw: Mapping[str, Any], *, where: str = "message") -> Message:
    """An OpenAI/Kimi-style message dict as a `Message`; `where` names it in an error."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("role"), str):
        raise InputError("expected a message with a `role`", field=where)
    calls = []
    for i, call in enumerate(raw.get("tool_calls") or ()):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping):
            raise InputError("a tool call needs `function`", field=f"{where}.tool_calls[{i}]")
        args = fn.get("arguments", "")
        calls.append(
            ToolCall(
                str(call.get("id", "")),
                str(fn.get("name", "")),
                args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
            )
        )
    return Message(
        role=raw["role"],
        content=content_text(raw.get("content")),
        reasoning=raw.get("reasoning_content") or None,
        tool_calls=tuple(calls),
        tool_call_id=raw.get("tool_call_id"),
        name=raw.get("name"),
        partial=bool(raw.get("partial")),
    )


def content_text(content: Any) -> str:
    """A string, or a list of parts: text joined; media as a placeholder naming its source (so a changed image
    changes the prompt); `think` parts are left to the caller."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, Mapping):
                kind = part.get("type")
                if kind == "text":
                    out.append(str(part.get("text", "")))
                elif kind in ("image_url", "video_url", "audio_url"):
                    source = part.get(kind)
                    url = source.get("url", "") if isinstance(source, Mapping) else source
                    out.append(f"<{kind}:{url}>")
        return "".join(out)
    return str(content)
