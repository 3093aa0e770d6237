"""Legacy Kimi CLI sessions (`~/.kimi/sessions/<work dir hash>/<session id>/`): `context*.jsonl` + `wire.jsonl`.

The context files hold the model's context (rotated by compaction, `/clear` and checkpoint reverts:
`context_1.jsonl ... context_N.jsonl` are older copies, `context.jsonl` the newest); the wire holds events,
among them one `StatusUpdate` with `token_usage` after each successful model call. Each assistant message is
the output of one call whose prompt was the system prompt and every message before it since the rotation,
with adjacent user messages merged as the CLI's `normalize_history` does. The k-th assistant message is the
k-th step (`StepBegin`) of the wire, and that step's usage is the first `StatusUpdate` with `token_usage`
before the next step. The tools list and the model are not stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kcost.calls import Call, Message, Usage, content_text, message_from_openai, split_think
from kcost.errors import InputError
from kcost.readers.jsonl import field, records

_CONTEXT = re.compile(r"^context(?:_(\d+))?\.jsonl$")


def is_session_dir(path: Path) -> bool:
    return (path / "context.jsonl").is_file() or (path / "wire.jsonl").is_file() and any(path.glob("context*.jsonl"))


def context_files(folder: Path) -> list[Path]:
    """Rotated copies in order, then the live file."""
    found = [(m, p) for p in folder.iterdir() if (m := _CONTEXT.match(p.name))]
    return [p for m, p in sorted(found, key=lambda mp: (mp[0].group(1) is None, int(mp[0].group(1) or 0)))]


def read_calls(folder: Path) -> Iterator[Call]:
    steps = list(_steps(folder / "wire.jsonl")) if (folder / "wire.jsonl").is_file() else []
    k = 0
    earlier: set[Message | None] = set()  # replies of the older files: a newer file repeats some (a revert
    for path in context_files(folder):  # copies what came before the checkpoint, compaction keeps the last few)
        seen_here: set[Message | None] = set()
        for call in _calls_in_context(path):
            seen_here.add(call.output)
            if call.output in earlier:
                continue
            time, usage = steps[k] if k < len(steps) else (None, None)
            k += 1
            yield Call(
                messages=call.messages, system=call.system, time=time, output=call.output, reported=usage,
                line=call.line,
            )  # fmt: skip
        earlier |= seen_here


def _calls_in_context(path: Path) -> Iterator[Call]:
    name = str(path)
    system: str | None = None
    history: list[Message] = []  # as the CLI sends it: adjacent user messages merged
    for line, record in records(path):
        role = field(record, "role", str, source=name, line=line)
        if role == "_system_prompt":
            system = content_text(record.get("content"))
            continue
        if role.startswith("_"):  # _checkpoint, _usage: markers, never sent
            continue
        try:
            message = _message(record)
        except InputError as exc:
            raise exc.located(source=name, line=line) from None
        if message.role == "assistant":
            yield Call(messages=tuple(history), system=system, output=message, line=line)
        if history and _mergeable(message) and _mergeable(history[-1]):
            history[-1] = Message(role="user", content=history[-1].content + message.content)
        else:
            history.append(message)


def _message(record: dict[str, Any]) -> Message:
    """A stored message in the API's shape: `think` parts become `reasoning_content`."""
    reasoning, content = split_think(record.get("content"))
    raw = {**record, "content": content, "reasoning_content": reasoning}
    return message_from_openai(raw, where="message")


def _mergeable(m: Message) -> bool:
    """`normalize_history` merges adjacent user messages, except a `<notification ` one."""
    return m.role == "user" and not m.content.startswith("<notification ")


def _steps(path: Path) -> Iterator[tuple[float | None, Usage | None]]:
    """(time, usage) of every model call the wire records, in order; a step that was interrupted before it
    reported usage made no reply, so it is no call."""
    name = str(path)
    current: list[Any] | None = None  # time, usage, interrupted
    for line, record in records(path):
        if not isinstance(record, dict):
            raise InputError("expected a JSON object", source=name, line=line)
        if record.get("type") == "metadata":
            continue
        message = field(record, "message", dict, source=name, line=line)
        kind = message.get("type")
        payload = message.get("payload") or {}
        if kind == "StepBegin":
            if current is not None and not (current[2] and current[1] is None):
                yield current[0], current[1]
            stamp = record.get("timestamp")
            current = [stamp if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else None, None, False]
        elif kind == "StepInterrupted" and current is not None:
            current[2] = True
        elif kind == "StatusUpdate" and current is not None and current[1] is None:
            usage = payload.get("token_usage") if isinstance(payload, dict) else None
            if usage is not None:
                current[1] = _usage(usage, name, line)
    if current is not None and not (current[2] and current[1] is None):
        yield current[0], current[1]


def _usage(raw: Any, source: str, line: int) -> Usage:
    where = "message.payload.token_usage"
    if not isinstance(raw, dict):
        raise InputError("expected an object", source=source, line=line, field=where)
    counts = {k: field(raw, k, int, source=source, line=line, where=where) for k in
              ("input_other", "output", "input_cache_read", "input_cache_creation")}  # fmt: skip
    if any(v < 0 for v in counts.values()):
        raise InputError("token counts cannot be negative", source=source, line=line, field=where)
    prompt = counts["input_other"] + counts["input_cache_read"] + counts["input_cache_creation"]
    return Usage(prompt=prompt, cached=counts["input_cache_read"], output=counts["output"])
