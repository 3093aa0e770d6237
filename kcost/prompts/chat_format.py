"""The K3 chat format: a message as the model sees it, in pieces of text (BPE-encoded) and control-token ids.

Layout from K3's renderer (`encoding_k3.py`, ported in llama.cpp's `Kimi-K3.jinja`): the tool declaration, the
thinking-effort message, then every message as `<|open|>message role="..."<|sep|>...<|close|>message<|sep|>
<|end_of_msg|>`, an assistant message with its reasoning in a `think` block; the prompt ends with the opening
of the assistant's reply. Control tokens are ids; everything else, attribute values included, is plain text.
"""

from __future__ import annotations

import json
from typing import Any

from kcost.model.calls import Message

END_OF_MSG, OPEN, CLOSE, SEP = 163586, 163587, 163588, 163589
Pieces = tuple[str | int, ...]

# The opening of an assistant message: the generation prompt at the end of every request, and the first
# tokens of the reply when it comes back in the next one.
ASSISTANT_HEADER: Pieces = (OPEN, 'message role="assistant"', SEP, OPEN, "think", SEP)
DEFAULT_EFFORT = "max"  # K3's default reasoning effort


def _message(attrs: str, body: str) -> Pieces:
    return (OPEN, f"message {attrs}", SEP, body, CLOSE, "message", SEP, END_OF_MSG)


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;")


def tool_declaration(tools: tuple[Any, ...]) -> Pieces:
    schema = json.dumps(list(tools), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    body = f"# Tools\nHere are the available tools, described in JSONSchema.\n\n```json\n{schema}\n```"
    return _message('role="system" type="tool-declare"', body)


def thinking_effort(effort: str | None) -> Pieces:
    body = (
        "`thinking_effort` guides on how much to think before responding. "
        f"Now the system is invoked with `thinking_effort={effort or DEFAULT_EFFORT}`."
    )
    return _message('role="system" type="thinking-effort"', body)


def system(text: str) -> Pieces:
    return _message('role="system"', text)


def assistant_body(m: Message) -> Pieces:
    """An assistant message after `ASSISTANT_HEADER`: reasoning, response, tool calls."""
    out: list[str | int] = [m.reasoning or "", CLOSE, "think", SEP, OPEN, "response", SEP, m.content, CLOSE]
    out += ["response", SEP]
    if m.tool_calls:
        out += [OPEN, "tools", SEP]
        for index, call in enumerate(m.tool_calls, start=1):
            out += [OPEN, f'call tool="{_attr(call.name)}" index="{index}"', SEP]
            out += [OPEN, 'json type="object"', SEP, call.arguments, CLOSE, "json", SEP, CLOSE, "call", SEP]
        out += [CLOSE, "tools", SEP]
    if not m.partial:  # partial mode: the reply continues this message, which stays open
        out += [CLOSE, "message", SEP, END_OF_MSG]
    return tuple(out)


def message(m: Message, tool: tuple[str, int] | None = None) -> Pieces:
    """A non-assistant message; a tool result names its tool and call index when known."""
    if m.role == "tool":
        name, index = tool or (m.name or "", 1)
        return _message(f'role="tool" tool="{_attr(name)}" index="{index}"', m.content)
    return _message(f'role="{_attr(m.role)}"', m.content)
