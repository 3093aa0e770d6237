"""Gemini CLI chats (`~/.gemini/tmp/<project hash>/chats/session-*.jsonl`, and the older `session-*.json`): what
the session would cost on K3.

Gemini CLI's chat recording (google-gemini/gemini-cli `packages/core/src/services/chatRecordingService.ts`)
writes a JSONL file: a first line of session metadata (`sessionId`, `projectHash`, `startTime`), then every
message each time it changes (a reply's line is written again once its tokens or tool calls arrive: the last
line of an id is the message), `{"$set": ...}` updates (a `messages` checkpoint among them) and
`{"$rewindTo": id}` (the history from that message on is dropped). Before JSONL it wrote one JSON document
`{sessionId, projectHash, startTime, lastUpdated, messages}`, which it still reads. Each `gemini` message with
`tokens` is one call, counted once however often its line was written, and once even if a rewind later dropped
it from the history (it was billed); its prompt is the history before it. `tokens` (`chatRecordingTypes.ts`,
`TokensSummary`) are the API's `usageMetadata`: `input` = `promptTokenCount` (cached included), `cached` =
`cachedContentTokenCount`, `output` = `candidatesTokenCount` (thoughts not included), `thoughts` =
`thoughtsTokenCount`, `tool` = `toolUsePromptTokenCount` (a prompt of its own, beside `input`), `total`. So the
prompt is `input + tool` and the output `output + thoughts`, as ccusage reads them. The system prompt and tools
are not logged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

import orjson

from kcost.errors import InputError, Leniency
from kcost.inputs.files import read_bytes, read_text
from kcost.model.calls import Call, Message, ToolCall, Usage, media_digest, timestamp
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.usage import parse_usage
from kcost.results.common import Routine

_SENT = {"user", "gemini"}  # the message types the model sees; info, error and warning are the CLI's own


def looks_like(first: Any) -> bool:
    """A chat's first record: its session metadata (JSONL), or the whole legacy document."""
    return isinstance(first, Mapping) and isinstance(first.get("sessionId"), str) and "projectHash" in first


class GeminiCli(Reader):
    name = "gemini-cli"
    one_call = "a `gemini` message with `tokens`"
    usage_read = "`tokens.input + tool` (holds `cached`), `output + thoughts`"
    source_read = "google-gemini/gemini-cli `chatRecordingService.ts`"
    comparable = False  # Google's cache (or whichever provider's): its hits say nothing of K3's

    def detect(self, first: Any) -> bool:
        return looks_like(first)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        return read_calls(unit, notes, prompts=prompts, leniency=leniency)

    def project(self, unit: Source | Path) -> str | None:
        """The project root the chat was recorded in. The CLI keeps a project's chats in `tmp/<id>/chats/`, the id
        a short name it gives the root (with the root's path in `tmp/<id>/.project_root` and in `projects.json`
        beside `tmp`, `{"projects": {path: id}}`: `packages/core/src/config/projectRegistry.ts`), or in older
        versions the SHA-256 of the root's path, which each chat records as `projectHash` (`getProjectHash`,
        `packages/core/src/utils/paths.ts`). None where neither file names it: the id is no project's name."""
        if not isinstance(unit, Source) or unit.name == "-":
            return None
        chats = Path(unit.name).parent
        if chats.name != "chats":
            return None
        folder = chats.parent
        with suppress(OSError, InputError):  # through the one opener: a FIFO named so is never opened
            root = read_text(folder / ".project_root", "Gemini CLI project root").strip()
            if root:
                return root
        first = None
        with suppress(InputError):
            first = unit.first_record
        recorded = first.get("projectHash") if isinstance(first, Mapping) else None
        return registered(folder.parent.parent / "projects.json", folder.name, recorded)


def registered(registry: Path, folder: str, recorded: Any) -> str | None:
    """The project path `projects.json` lists under the id `folder`, or whose SHA-256 is `folder` or the chat's
    `projectHash` (`recorded`)."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import hashlib

    try:
        projects = orjson.loads(read_bytes(registry, "Gemini CLI project list")).get("projects")
    except (OSError, InputError, orjson.JSONDecodeError, AttributeError):
        return None
    if not isinstance(projects, Mapping):
        return None
    hashes = {folder, recorded} if isinstance(recorded, str) else {folder}
    for path, short in projects.items():
        if isinstance(path, str) and path and (short == folder or hashlib.sha256(path.encode()).hexdigest() in hashes):
            return path
    return None


def read_calls(src: Source, notes: list[str], *, prompts: bool, leniency: Leniency) -> Iterator[Call]:
    """One call per `gemini` message with tokens, in the order the messages first appeared."""
    events = _events(src)
    final: dict[str, tuple[int, Mapping[str, Any]]] = {}  # id -> (line, the message's last version)
    for line, kind, value in events:
        if kind == "message":
            final[value["id"]] = (line, value)
    history: list[tuple[str, list[Message]]] = []  # (message id, what it adds to the prompt)
    seen: set[str] = set()
    skipped = 0
    for _, kind, value in events:
        if kind == "rewind":
            at = next((n for n, (mid, _) in enumerate(history) if mid == value), None)
            del history[at if at is not None else 0 :]  # an id not found: the CLI clears the whole history
            continue
        mid = value["id"]
        if mid in seen:
            continue
        seen.add(mid)
        line, message = final[mid]
        if message["type"] not in _SENT:
            skipped += 1
            continue
        own = _messages(message, source=src.name, line=line) if prompts else []
        if message["type"] == "gemini" and message.get("tokens") is not None:
            call = _call(message, history, own, src.name, line, prompts, leniency)
            if call is not None:
                yield call
        history.append((mid, own))
    if skipped:
        notes.append(Routine(f"{skipped} info, error or warning message(s) skipped"))


def _events(src: Source) -> list[tuple[int, str, Any]]:
    """(line, "message" | "rewind", the message or the id rewound to) in the file's order, from either form."""
    whole = None
    if src.suffix != ".jsonl":  # the legacy document is one JSON value (`session-*.json`): read whole
        with suppress(orjson.JSONDecodeError):
            whole = orjson.loads(src.data)
    if isinstance(whole, Mapping) and isinstance(whole.get("messages"), list):  # the legacy document
        return [(1, "message", m) for m in _checked(whole["messages"], src.name, 1)]
    events: list[tuple[int, str, Any]] = []
    for line, record in src.records():
        if not isinstance(record, Mapping):
            raise InputError("expected an object", source=src.name, line=line)
        if "$rewindTo" in record:
            if not isinstance(record["$rewindTo"], str):
                raise InputError("expected a message id", source=src.name, line=line, field="$rewindTo")
            events.append((line, "rewind", record["$rewindTo"]))
        elif "$set" in record:
            update = record["$set"]
            if isinstance(update, Mapping) and isinstance(update.get("messages"), list):  # a checkpoint
                events += [(line, "message", m) for m in _checked(update["messages"], src.name, line)]
        elif "id" in record and "type" in record:
            events += [(line, "message", m) for m in _checked([record], src.name, line)]
        elif isinstance(record.get("messages"), list):  # a legacy record written on one line
            events += [(line, "message", m) for m in _checked(record["messages"], src.name, line)]
    return events


def _checked(messages: list[Any], source: str, line: int) -> list[Mapping[str, Any]]:
    for n, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("id"), str):
            raise InputError("expected a message with an `id`", source=source, line=line, field=f"messages[{n}]")
        if not isinstance(message.get("type"), str):
            raise InputError("expected a string", source=source, line=line, field=f"messages[{n}].type")
    return messages


def _call(
    message: Mapping[str, Any],
    history: list[tuple[str, list[Message]]],
    own: list[Message],
    source: str,
    line: int,
    prompts: bool,
    leniency: Leniency,
) -> Call | None:
    try:
        usage = gemini_usage(message.get("tokens"), leniency=leniency)
        time = timestamp(message.get("timestamp"), field="timestamp", leniency=leniency)
    except InputError as exc:
        raise exc.located(source=source, line=line) from None
    if usage is None or usage.empty:  # a bad record a lenient read skips, or nothing billed
        return None
    model = message.get("model")
    return Call(
        messages=tuple(m for _, ms in history for m in ms) if prompts else None,
        output=own[0] if own else None,
        time=time,
        model=model if isinstance(model, str) and model else None,
        reported=usage,
        line=line,
        id=str(message["id"]),
        unlogged="system prompt and tools",
    )


def gemini_usage(raw: Any, *, leniency: Leniency, where: str = "tokens") -> Usage | None:
    """A `TokensSummary` as a `Usage`: the prompt `input + tool`, the output `output + thoughts`."""
    flat = dict(raw) if isinstance(raw, Mapping) else raw
    if isinstance(flat, dict) and _count(flat.get("output")) and _count(flat.get("thoughts")):
        flat["output"] = flat["output"] + flat["thoughts"]
    return parse_usage(flat, "gemini-cli", where=where, leniency=leniency)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _messages(message: Mapping[str, Any], *, source: str, line: int) -> list[Message]:
    """What a message adds to the prompt: the user's turn, or the reply with its tool calls and their results."""
    if message["type"] == "user":
        return [Message(role="user", content=parts_text(message.get("content")))]
    thoughts = message.get("thoughts")
    reasoning = "\n".join(
        f"{t.get('subject', '')}: {t.get('description', '')}" if t.get("subject") else str(t.get("description", ""))
        for t in thoughts
        if isinstance(t, Mapping)
    ) if isinstance(thoughts, list) else ""  # fmt: skip
    calls, results = [], []
    tool_calls = message.get("toolCalls")
    for n, tc in enumerate(tool_calls if isinstance(tool_calls, list) else []):
        if not isinstance(tc, Mapping):
            raise InputError("expected an object", source=source, line=line, field=f"toolCalls[{n}]")
        call_id = str(tc.get("id", ""))
        calls.append(ToolCall(call_id, str(tc.get("name", "")), json.dumps(tc.get("args", {}), ensure_ascii=False)))
        if tc.get("result") is not None:
            results.append(Message(role="tool", content=parts_text(tc["result"]), tool_call_id=call_id or None))
    reply = Message(role="assistant", content=parts_text(message.get("content")), reasoning=reasoning or None,
                    tool_calls=tuple(calls))  # fmt: skip
    return [reply, *results]


def parts_text(content: Any) -> str:
    """A Gemini `PartListUnion` as text: text parts (thoughts apart), function results as their JSON, media as a
    placeholder that names its content's digest."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, Mapping) and not part.get("thought"):
            out.append(part_text(part))
    return "".join(out)


def part_text(part: Mapping[str, Any]) -> str:
    """One Gemini part (not a thought) as text."""
    if isinstance(part.get("text"), str):
        return str(part["text"])
    response = part.get("functionResponse")
    if isinstance(response, Mapping):
        body = response.get("response")
        output = body.get("output") if isinstance(body, Mapping) else None
        return output if isinstance(output, str) else json.dumps(body, ensure_ascii=False, sort_keys=True)
    for kind in ("inlineData", "fileData"):
        media = part.get(kind)
        if isinstance(media, Mapping):
            held = str(media.get("data", media.get("fileUri", "")))
            return f"<{media.get('mimeType', kind)}:{media_digest(held)}>"
    return ""
