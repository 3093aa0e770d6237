"""Legacy Kimi CLI sessions (`~/.kimi/sessions/<work dir hash>/<session id>/`): `context*.jsonl` + `wire.jsonl`.

The context files hold the model's context (rotated by compaction, `/clear` and checkpoint reverts:
`context_1.jsonl ... context_N.jsonl` are older copies, `context.jsonl` the newest); the wire holds events,
among them one `StatusUpdate` with `token_usage` after each successful model call. Each assistant message is
the output of one call whose prompt was the system prompt and every message before it since the rotation,
with adjacent user messages merged as the CLI's `normalize_history` does. The k-th assistant message is the
k-th step (`StepBegin`) of the wire, and that step's usage is the first `StatusUpdate` with `token_usage`
before the next step. The tools list and the model are not stored: each call says the tools are unlogged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from kcost.calls import Call, Message, Usage, content_text, message_from_openai, split_think, timestamp
from kcost.errors import STRICT, InputError, Leniency
from kcost.readers.jsonl import field, records
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.transcripts.usage import parse_usage

_CONTEXT = re.compile(r"^context(?:_(\d+))?\.jsonl$")


class KimiCli(Reader):
    name = "kimi-cli"

    def detect(self, first: Any) -> bool:
        """A context or wire file given alone cannot be read: it says so."""
        if isinstance(first, dict) and first.get("role") == "_system_prompt":
            raise InputError("a Kimi CLI context file needs its wire.jsonl beside it", hint="give the session folder")
        wire = isinstance(first, dict) and first.get("type") == "metadata" and "protocol_version" in first
        if wire and "created_at" not in first:  # Kimi Code's wires carry it
            raise InputError("a Kimi CLI wire needs its context files beside it", hint="give the session folder")
        return False

    def is_session_folder(self, folder: Path) -> bool:
        return is_session_dir(folder)

    def folder_of(self, file: Path) -> Path | None:
        named = file.name == "wire.jsonl" or (file.name.startswith("context") and file.suffix == ".jsonl")
        return file.parent if named and is_session_dir(file.parent) else None

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        if not isinstance(unit, Path):
            raise InputError("give the Kimi CLI session folder", source=unit.name, field="input_format")
        return read_calls(unit, leniency=leniency)

    def project(self, unit: Source | Path) -> str | None:
        """The work dir whose sessions these are: the CLI keeps them in `sessions/<md5 of the work dir's path>/`
        (with `<kaos>_` before it off the local machine) and the paths in `kimi.json` beside `sessions`."""
        return work_dir(unit) if isinstance(unit, Path) else None


def is_session_dir(path: Path) -> bool:
    return (path / "context.jsonl").is_file() or (path / "wire.jsonl").is_file() and any(path.glob("context*.jsonl"))


def work_dir(folder: Path) -> str | None:
    """The work dir `kimi.json` names for a session folder's bucket, where it names one."""
    bucket = folder.resolve().parent
    meta = bucket.parent.parent / "kimi.json"
    try:
        stamp = meta.stat().st_mtime_ns
    except OSError:
        return None
    return _work_dirs(meta, stamp).get(bucket.name)


@lru_cache(maxsize=4)
def _work_dirs(meta: Path, stamp: int) -> dict[str, str]:
    """Bucket name -> work dir, from a `kimi.json` as it was at `stamp` (read once for all its sessions)."""
    import hashlib
    import json

    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    dirs = data.get("work_dirs") if isinstance(data, dict) else None
    out: dict[str, str] = {}
    for entry in dirs if isinstance(dirs, list) else []:
        path, kaos = (entry.get("path"), entry.get("kaos", "local")) if isinstance(entry, dict) else (None, None)
        if isinstance(path, str) and isinstance(kaos, str):
            digest = hashlib.md5(path.encode("utf-8"), usedforsecurity=False).hexdigest()
            out.setdefault(digest if kaos == "local" else f"{kaos}_{digest}", path)
    return out


def context_files(folder: Path) -> list[Path]:
    """Rotated copies in order, then the live file."""
    found = [(m, p) for p in folder.iterdir() if (m := _CONTEXT.match(p.name))]
    return [p for m, p in sorted(found, key=lambda mp: (mp[0].group(1) is None, int(mp[0].group(1) or 0)))]


def read_calls(folder: Path, *, leniency: Leniency = STRICT) -> Iterator[Call]:
    wire = folder / "wire.jsonl"
    steps = list(_steps(wire, leniency)) if wire.is_file() else []
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
                line=call.line, unlogged="tools",
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


def _steps(path: Path, leniency: Leniency) -> Iterator[tuple[float | None, Usage | None]]:
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
            try:
                stamp = timestamp(record.get("timestamp"), field="timestamp", leniency=leniency)
            except InputError as exc:
                raise exc.located(source=name, line=line) from None
            current = [stamp, None, False]
        elif kind == "StepInterrupted" and current is not None:
            current[2] = True
        elif kind == "StatusUpdate" and current is not None and current[1] is None:
            usage = payload.get("token_usage") if isinstance(payload, dict) else None
            if usage is not None:
                current[1] = _usage(usage, name, line, leniency)
    if current is not None and not (current[2] and current[1] is None):
        yield current[0], current[1]


def _usage(raw: Any, source: str, line: int, leniency: Leniency) -> Usage | None:
    try:
        return parse_usage(raw, "kimi-cli", where="message.payload.token_usage", leniency=leniency)
    except InputError as exc:
        raise exc.located(source=source, line=line) from None
