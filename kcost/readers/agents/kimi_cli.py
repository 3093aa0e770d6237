"""Legacy Kimi CLI sessions (`~/.kimi/sessions/<work dir hash>/<session id>/`): `context*.jsonl` + `wire.jsonl`;
and the flat layout before them (0.10 to 0.58): `<work dir hash>/<session id>.jsonl`, a context file alone.

The context files hold the model's context (rotated by compaction, `/clear` and checkpoint reverts:
`context_1.jsonl ... context_N.jsonl` are older copies, `context.jsonl` the newest); the wire holds events,
among them one `StatusUpdate` with `token_usage` after each successful model call. Each assistant message is
the output of one call whose prompt was the system prompt and every message before it since the rotation,
with adjacent user messages merged as the CLI's `normalize_history` does. Every size the logs record is used:
a step's `StatusUpdate` where the wire has one, else the context's `_usage` counts around the reply; steps are
matched to replies by what they record, and a step whose reply never reached the context is a call of its own
(`read_calls`). The tools list and the model are not stored: each call says the tools are unlogged.

The flat layout (`kimi_cli/session.py` and `tools/multiagent/task.py` at 0.58) keeps a session's context in
`<id>.jsonl`, its rotated older copies in `<id>_N.jsonl` and each Task sub-agent's own context in
`<id>_sub_N.jsonl` (`<id>-sub-N.jsonl` in 0.15; rotated as `<id>_sub_N_M.jsonl`). There is no wire, no time, no
model and no system prompt: sizes come from the `_usage` counts alone (`read_flat`), each sub-agent's calls are
its own conversation, placed after the main call whose Task call started it, and a compaction's summary (an
assistant message opening a rotated file, 0.36 to 0.58) is context, not a reply: the compaction call itself
logged nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from functools import lru_cache
from pathlib import Path
from typing import Any

from kcost.errors import STRICT, InputError, Leniency
from kcost.model.calls import Call, Message, ToolCall, Usage, content_text, message_from_openai, split_think, timestamp
from kcost.model.frozen import frozen
from kcost.readers.jsonl import field, records
from kcost.readers.registry import Part, Reader
from kcost.readers.source import Source
from kcost.readers.usage import parse_usage

_CONTEXT = re.compile(r"^context(?:_(\d+))?\.jsonl$")
# a flat-layout file: the session id, a sub-agent's number, a rotation's number
_FLAT = re.compile(r"^(?P<id>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
                   r"(?:[_-]sub[_-](?P<sub>\d+))?(?:_(?P<rotation>\d+))?\.jsonl$")  # fmt: skip
_FLAT_ROLES = frozenset({"_checkpoint", "_usage", "user", "assistant", "system", "tool"})
_COMPACTED = "<system>Previous context has been compacted."
_MAIN, _SUB = "system prompt and tools", "sub-agent {}'s system prompt and tools"


class KimiCli(Reader):
    name = "kimi-cli"
    one_call = "an assistant message of the context (rotations read once)"
    usage_read = (
        "wire `StatusUpdate.token_usage`: `input_other + input_cache_read + input_cache_creation` (cached "
        "`input_cache_read`), `output`; else the context's `_usage` counts: before the reply the prompt, "
        "after it prompt + output (no cached count)"
    )
    source_read = "MoonshotAI/kimi-cli `soul/kimisoul.py`, `soul/context.py`, `wire/types.py`; 0.58 for the flat layout"

    def detect(self, first: Any) -> bool:
        """A context or wire file given alone cannot be read: it says so."""
        if isinstance(first, dict) and first.get("role") == "_system_prompt":
            raise InputError("a Kimi CLI context file needs its wire.jsonl beside it", hint="give the session folder")
        wire = isinstance(first, dict) and first.get("type") == "metadata" and "protocol_version" in first
        if wire and "created_at" not in first:  # Kimi Code's wires carry it
            raise InputError("a Kimi CLI wire needs its context files beside it", hint="give the session folder")
        return False

    def recognise(self, source: Source) -> bool:
        """A flat-layout context file: named as the CLI names them, its first record a context line."""
        first = source.first_record
        if _FLAT.match(Path(source.name).name) and isinstance(first, dict) and first.get("role") in _FLAT_ROLES:
            return "type" not in first
        return super().recognise(source)

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> Source | Path | Part:
        """A flat-layout file is a part of its session, which all its files make (`join`)."""
        named = _FLAT.match(Path(unit.name).name) if isinstance(unit, Source) else None
        return Part(unit, named["id"]) if isinstance(unit, Source) and named else unit

    def join(self, parts: list[Part]) -> list[list[Part]]:
        """One session per session id and folder, the main file first where it was found."""
        sessions: dict[tuple[Path, str], list[Part]] = {}
        for part in parts:
            sessions.setdefault((Path(part.source.name).parent, part.parsed), []).append(part)
        return [sorted(group, key=lambda p: p.source.name != _main_file(p.source)) for group in sessions.values()]

    def read_parts(
        self, parts: list[Part], notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        """A flat-layout session from every file of it the folder holds, whichever of them the run found."""
        return read_flat(Path(_main_file(parts[0].source)), notes, leniency=leniency)

    def session_name(self, unit: Source | Path) -> str:
        named = _FLAT.match(Path(unit.name).name) if isinstance(unit, Source) else None
        return named["id"] if named else super().session_name(unit)

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
        return read_calls(unit, notes, leniency=leniency)

    def project(self, unit: Source | Path) -> str | None:
        """The work dir whose sessions these are: the CLI keeps them in `sessions/<md5 of the work dir's path>/`
        (with `<kaos>_` before it off the local machine) and the paths in `kimi.json` beside `sessions`."""
        return work_dir(unit if isinstance(unit, Path) else Path(unit.name))


def is_session_dir(path: Path) -> bool:
    return (path / "context.jsonl").is_file() or (path / "wire.jsonl").is_file() and any(path.glob("context*.jsonl"))


def work_dir(folder: Path) -> str | None:
    """The work dir `kimi.json` names for a session folder's bucket (a flat-layout file's), where it names one."""
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
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import hashlib

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


@dataclass
class _Step:
    """One model call the wire records (`StepBegin` to the next): when, its usage, and what it replied."""

    time: float | None
    line: int
    usage: Usage | None = None
    interrupted: bool = False
    compacted: bool = False  # compaction ran in it: a `_usage` that no reply follows is compaction's estimate
    text: list[str] = dc_field(default_factory=list)
    think: list[str] = dc_field(default_factory=list)
    tool_ids: list[str] = dc_field(default_factory=list)
    tool_calls: list[ToolCall] = dc_field(default_factory=list)

    def says(self) -> tuple[str, str, tuple[str, ...]]:
        return "".join(self.text), "".join(self.think), tuple(self.tool_ids)

    def reply(self) -> Message:
        return Message(role="assistant", content="".join(self.text), reasoning="".join(self.think) or None,
                       tool_calls=tuple(self.tool_calls))  # fmt: skip


@frozen
class _Reply:
    """An assistant message of a context file: the call that made it, and the `_usage` counts around it."""

    call: Call
    before: int | None  # the `_usage` just before it: the call's prompt (`usage.input`)
    after: int | None  # the `_usage` just after it: prompt plus reply (`usage.total`)


@frozen
class _Lone:
    """A `_usage` with no reply after it: a call that logged its usage and was then interrupted (its reply never
    reached the context), or the estimate compaction writes. `history` is the context at that point."""

    count: int
    messages: tuple[Message, ...]
    system: str | None
    line: int


def read_calls(folder: Path, notes: list[str] | None = None, *, leniency: Leniency = STRICT) -> Iterator[Call]:
    """Every call of a session folder, each with the usage the logs record for it (`_calls`)."""
    wire = folder / "wire.jsonl"
    notes = notes if notes is not None else []
    return _calls(context_files(folder), wire if wire.is_file() else None, notes, leniency, "tools")


def read_flat(main: Path, notes: list[str] | None = None, *, leniency: Leniency = STRICT) -> Iterator[Call]:
    """Every call of a flat-layout session (`main` is `<id>.jsonl`, which need not exist): the main context's
    calls, each followed by those of the sub-agents its Task calls started (numbered in the order started, as
    `next_available_rotation` names their files), and any sub-agent no Task call names at the end."""
    notes = notes if notes is not None else []
    files = _flat_files(main)
    subs = {n: list(_calls(paths, None, notes, leniency, _SUB.format(n))) for n, paths in files.items() if n}
    order = sorted(subs)
    started = 0
    for call in _calls(files.get(0, []), None, notes, leniency, _MAIN):
        yield call
        tasks = sum(c.name == "Task" for c in call.output.tool_calls) if call.output is not None else 0
        for n in order[started : started + tasks]:
            yield from subs[n]
        started += tasks
    for n in order[started:]:
        yield from subs[n]


def _flat_files(main: Path) -> dict[int, list[Path]]:
    """A flat-layout session's files: for the main context (0) and each sub-agent (its number), the rotated
    copies in order, then the live file."""
    named = _FLAT.match(main.name)
    assert named is not None
    found: dict[int, list[tuple[tuple[bool, int], Path]]] = {}
    for path in main.parent.iterdir():
        m = _FLAT.match(path.name)
        if m and m["id"] == named["id"] and path.is_file():
            rotation = m["rotation"]
            found.setdefault(int(m["sub"] or 0), []).append(((rotation is None, int(rotation or 0)), path))
    return {n: [p for _, p in sorted(found[n])] for n in sorted(found)}


def _main_file(source: Source) -> str:
    """The main context file of the flat-layout session a file is part of."""
    named = _FLAT.match(Path(source.name).name)
    assert named is not None
    return str(Path(source.name).parent / f"{named['id']}.jsonl")


def _calls(files: list[Path], wire: Path | None, notes: list[str], leniency: Leniency, unlogged: str) -> Iterator[Call]:
    """Every call of one context (its rotated copies, then the live file), each with the usage the logs record.

    The wire's steps are matched to the context's replies by what they record (the reply's text, reasoning and
    tool call ids), in order, not by position: a step that logged its usage and was then interrupted never
    reached the context (`_step` writes `_usage` and `StatusUpdate` before `_grow_context` appends the reply),
    so it is kept as a call of its own, its prompt the context where its `_usage` stands. A reply whose step
    logged no usage (or that no wire records) is sized from the `_usage` counts around it (see
    `_calls_in_context`). `unlogged` names what the log leaves out of each prompt."""
    steps = list(_steps(wire, leniency)) if wire is not None else []
    events = list(_events(files, notes))
    at = 0  # the first step not yet matched
    from_counts = 0
    lones: list[_Lone] = []
    last: tuple[tuple[Message, ...], str | None] = ((), None)
    for event in events:
        if isinstance(event, _Lone):
            lones.append(event)
            continue
        call, found = event.call, _match(steps, at, event)
        if found is not None:
            assert wire is not None
            for step in steps[at:found]:  # steps with no reply in the context
                orphan = _orphan(step, lones, last, notes, wire)
                if orphan is not None:
                    yield orphan
            at = found + 1
        matched = steps[found] if found is not None else None
        usage = matched.usage if matched is not None else None
        if usage is None and event.before is not None and event.after is not None and event.after >= event.before:
            usage = Usage(prompt=event.before, cached=0, output=event.after - event.before, cached_logged=False)
            from_counts += 1
        lones.clear()
        last = (call.messages or (), call.system)
        yield Call(messages=call.messages, system=call.system, time=matched.time if matched else None,
                   output=call.output, reported=usage, line=call.line, unlogged=unlogged,
                   compacted=call.compacted)  # fmt: skip
    for step in steps[at:]:
        assert wire is not None
        orphan = _orphan(step, lones, last, notes, wire)
        if orphan is not None:
            yield orphan
    if from_counts:
        where = "with no usage in the wire" if wire is not None else f"of {files[-1].name} (the layout keeps no wire)"
        notes.append(f"{from_counts} call(s) {where} sized from the context's `_usage` counts (prompt: the count "
                     "before the reply; output: the count after it less the one before); those counts do not say "
                     "what was cached")  # fmt: skip


def _events(files: list[Path], notes: list[str]) -> Iterator[_Reply | _Lone]:
    """The replies and lone `_usage` counts of every context file, oldest first; a reply an older file already
    held (a revert copies what came before the checkpoint, compaction keeps the last few) is not repeated, and
    the first new reply of a rotated file says its context was compacted (or cleared, or reverted) before it."""
    earlier: set[Message | None] = set()
    for index, path in enumerate(files):
        seen_here: set[Message | None] = set()
        rotated = index > 0  # the file a rotation started: its first new reply follows a rewritten context
        for event in _calls_in_context(path, notes):
            if isinstance(event, _Reply):
                seen_here.add(event.call.output)
                if event.call.output in earlier:
                    continue
                if rotated:
                    event, rotated = _Reply(replace(event.call, compacted=True), event.before, event.after), False
            yield event
        earlier |= seen_here


def _match(steps: list[_Step], at: int, reply: _Reply) -> int | None:
    """The first step from `at` on that recorded this reply: the same text, reasoning and tool call ids, else
    (a reply the wire recorded otherwise) the same logged prompt as the `_usage` before it, else the next step
    if it recorded no content to tell it by."""
    out = reply.call.output
    assert out is not None
    says = (out.content, out.reasoning or "", tuple(c.id for c in out.tool_calls))
    for i in range(at, len(steps)):
        if steps[i].says() == says:
            return i
    if reply.before is not None:
        for i in range(at, len(steps)):
            usage = steps[i].usage
            if usage is not None and usage.prompt == reply.before:
                return i
    if at < len(steps) and steps[at].says() == ("", "", ()):  # a step that recorded nothing to tell it by
        return at
    return None


def _orphan(
    step: _Step, lones: list[_Lone], last: tuple[tuple[Message, ...], str | None], notes: list[str], wire: Path
) -> Call | None:
    """A step whose reply is not in the context, if it logged a size: billed, its prompt the context at its
    `_usage` (the count the CLI writes once the call returns, before the reply is stored), else the prompt of
    the call before it. A step the wire logs no usage for is a call only where such a `_usage` stands for it
    (the wire ends, or was cut, before its `StatusUpdate`): its prompt is billed, its output is not logged."""
    if step.usage is not None:
        lone = next((x for x in lones if x.count == step.usage.prompt), None)
    else:
        lone = lones[-1] if lones and not step.compacted else None
        if lone is None:
            return None  # no size logged: a call interrupted before it returned
    if lone is not None:
        lones.remove(lone)
        messages, system = lone.messages, lone.system
    else:
        messages, system = last
    u = step.usage
    if u is None:
        assert lone is not None
        u = Usage(prompt=lone.count, cached=0, output=0, cached_logged=False)
        notes.append(f"context line {lone.line}: a call's `_usage` ({u.prompt:,} tokens in) with no reply after it "
                     "and no usage in the wire: its prompt billed at that size, its output (not logged) at "
                     "0")  # fmt: skip
    else:
        notes.append(f"{wire.name} line {step.line}: a call logged usage ({u.prompt:,} in, {u.output:,} out) but "
                     "its reply never reached the context (interrupted): billed, its reply as the wire streamed "
                     "it")  # fmt: skip
    reply = step.reply()
    output = reply if reply.content or reply.reasoning or reply.tool_calls else None
    return Call(messages=messages, system=system, time=step.time, output=output, reported=u,
                line=lone.line if lone is not None else None, unlogged="tools")  # fmt: skip


def _calls_in_context(path: Path, notes: list[str]) -> Iterator[_Reply | _Lone]:
    """Each reply with the `_usage` counts around it, and each `_usage` that no reply follows.

    The CLI writes `_usage` twice around every reply that has usage (`kimi_cli/soul/kimisoul.py`, `_step`:
    `update_token_count(usage.input)` right after the call, before the reply is appended; `_grow_context`:
    `update_token_count(usage.total)` right after appending it): the count just before a reply is its prompt,
    the one just after is prompt plus output. Compaction writes an estimate after the new context's messages
    (`compact_context`), which no reply follows. A compaction's summary opening a file (an assistant message in
    0.36 to 0.58, `SimpleCompaction.compact`) is context: the call that wrote it logged nothing here."""
    name = str(path)
    system: str | None = None
    history: list[Message] = []  # as the CLI sends it: adjacent user messages merged
    count: tuple[int, int] | None = None  # a `_usage` (count, line) no message has followed yet
    reply: _Reply | None = None  # the last reply, while its `_usage` after may still come
    for line, record in records(path):
        role = field(record, "role", str, source=name, line=line)
        if role == "_system_prompt":
            system = content_text(record.get("content"))
            continue
        if role == "_usage":
            tokens = record.get("token_count")
            if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
                continue  # the CLI skips it too (`Context._apply_context_record`)
            if reply is not None:
                yield _Reply(reply.call, reply.before, tokens)
                reply = None
                continue
            if count is not None:
                yield _Lone(count[0], tuple(history), system, count[1])
            count = (tokens, line)
            continue
        if role.startswith("_"):  # _checkpoint: a marker, never sent
            continue
        if reply is not None:
            yield reply
            reply = None
        try:
            message = _message(record)
        except InputError as exc:
            raise exc.located(source=name, line=line) from None
        if message.role == "assistant" and not history and message.content.startswith(_COMPACTED):
            notes.append(f"{path.name} line {line}: a compaction's summary: the call that wrote it is not in the "
                         "log (its usage went to the CLI's debug log), so it is not billed")  # fmt: skip
        elif message.role == "assistant":
            call = Call(messages=tuple(history), system=system, output=message, line=line)
            reply = _Reply(call, count[0] if count else None, None)
        elif count is not None:
            yield _Lone(count[0], tuple(history), system, count[1])
        count = None
        if history and _mergeable(message) and _mergeable(history[-1]):
            history[-1] = Message(role="user", content=history[-1].content + message.content)
        else:
            history.append(message)
    if reply is not None:
        yield reply
    if count is not None:
        yield _Lone(count[0], tuple(history), system, count[1])


def _message(record: dict[str, Any]) -> Message:
    """A stored message in the API's shape: `think` parts become `reasoning_content`."""
    reasoning, content = split_think(record.get("content"))
    raw = {**record, "content": content, "reasoning_content": reasoning}
    return message_from_openai(raw, where="message")


def _mergeable(m: Message) -> bool:
    """`normalize_history` merges adjacent user messages, except a `<notification ` one."""
    return m.role == "user" and not m.content.startswith("<notification ")


def _steps(path: Path, leniency: Leniency) -> Iterator[_Step]:
    """Every model call the wire records, in order, with what it streamed; a step that was interrupted before
    it reported usage and streamed nothing made no reply, so it is no call."""
    name = str(path)
    current: _Step | None = None
    for line, record in records(path):
        if not isinstance(record, dict):
            raise InputError("expected a JSON object", source=name, line=line)
        if record.get("type") == "metadata":
            continue
        message = field(record, "message", dict, source=name, line=line)
        kind = message.get("type")
        payload = message.get("payload") or {}
        if not isinstance(payload, dict):
            payload = {}
        if kind == "StepBegin":
            if current is not None and _made_call(current):
                yield current
            try:
                stamp = timestamp(record.get("timestamp"), field="timestamp", leniency=leniency)
            except InputError as exc:
                raise exc.located(source=name, line=line) from None
            current = _Step(stamp, line)
        elif current is None:
            continue
        elif kind == "StepInterrupted":
            current.interrupted = True
        elif kind == "CompactionBegin":
            current.compacted = True
        elif kind == "StatusUpdate" and current.usage is None:
            usage = payload.get("token_usage")
            if usage is not None:
                current.usage = _usage(usage, name, line, leniency)
        elif kind == "ContentPart":
            if payload.get("type") == "text" and isinstance(payload.get("text"), str):
                current.text.append(payload["text"])
            elif payload.get("type") == "think" and isinstance(payload.get("think"), str):
                current.think.append(payload["think"])
        elif kind == "ToolCall":
            fn: dict[str, Any] = payload["function"] if isinstance(payload.get("function"), dict) else {}
            args = fn.get("arguments")
            current.tool_ids.append(str(payload.get("id", "")))
            current.tool_calls.append(ToolCall(str(payload.get("id", "")), str(fn.get("name", "")),
                                               args if isinstance(args, str) else ""))  # fmt: skip
        elif kind == "ToolCallPart" and current.tool_calls and isinstance(payload.get("arguments_part"), str):
            last = current.tool_calls[-1]
            current.tool_calls[-1] = ToolCall(last.id, last.name, last.arguments + payload["arguments_part"])
    if current is not None and _made_call(current):
        yield current


def _made_call(step: _Step) -> bool:
    return not (step.interrupted and step.usage is None)


def _usage(raw: Any, source: str, line: int, leniency: Leniency) -> Usage | None:
    try:
        return parse_usage(raw, "kimi-cli", where="message.payload.token_usage", leniency=leniency)
    except InputError as exc:
        raise exc.located(source=source, line=line) from None
