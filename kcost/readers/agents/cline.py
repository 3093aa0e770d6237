"""Cline tasks and sessions: what each would cost on K3. Cline keeps them in two unrelated forms.

The VS Code extension up to 3.89.2 (and 4.0.1 to 4.0.12, and the legacy bundle of 4.1), the classic CLI and the
JetBrains host keep a **task folder** a task (cline/cline v3.89.2 `apps/vscode/src/core/storage/disk.ts`,
`GlobalFileNames`): `<VS Code user data>/User/globalStorage/saoudrizwan.claude-dev/tasks/<task id>/` for every
VS Code-family editor (`saoudrizwan.cline-nightly` for the nightly build), `$CLINE_DIR/data/tasks/<task id>/` for
the CLI (default `~/.cline`). The task id is `Date.now()` (`core/controller/index.ts`). Its `ui_messages.json`
(`claude_messages.json` in the oldest) is the list of `ClineMessage`s (`shared/ExtensionMessage.ts`): a
`say: "api_req_started"` row a model request, its `text` the JSON of `ClineApiReqInfo` (`tokensIn`, `tokensOut`,
`cacheWrites`, `cacheReads`, `cost`, `cancelReason`), rewritten by `updateApiReqMsg` (`core/task/utils.ts`) as
usage arrives: one request's counts, not running totals; a retry streams into the same row, so a row is one call.
The oldest tasks (to 2024-08) logged the counts in a following `api_req_finished` row, merged into the one before
it as `shared/combineApiRequests.ts` does. What `tokensIn` holds depends on the provider that filled it
(`core/api/providers/*.ts`): the Anthropic-style handlers (`anthropic`, `bedrock`, `vertex`, `openrouter`,
`cline`, `gemini`, `moonshot`, `deepseek`, ...) give the tokens that neither read nor wrote the cache, so the
prompt is `tokensIn + cacheWrites + cacheReads`; the OpenAI-compatible ones (`openai`, `xai`, `litellm`, ...)
give `prompt_tokens`, the cached tokens included, so the prompt is `tokensIn` (read so where the row's
provider is not of the first kind and `tokensIn` holds both cache counts); and `openai`, `xai`, `fireworks`,
`litellm`, `qwen`, `doubao`, `hicap` and `deepseek` put DeepSeek's cache misses in `cacheWrites`, which are then
no writes. The cached tokens are `cacheReads`, the output `tokensOut` (reasoning in it; Gemini's thoughts are
not). The model and provider of a row are its `modelInfo` (3.37.0 on), else the last entry of
`task_metadata.json` `model_usage` (`ModelContextTracker.ts`) before it. A `subagent_usage` row (a
`use_subagents` batch, whose sub-agents' calls are logged nowhere else) and a `deleted_api_reqs` row (the
requests a checkpoint restore removed) are totals of several calls: billed as reported, they are left out of a
simulated bill (no prompt). The prompt is rebuilt from `api_conversation_history.json` (the Anthropic-format
messages sent; the request's own user message is the first added after its row), less the range a row's
`conversationHistoryDeletedRange` cut; the system prompt and tools are not logged.

From 4.0 (the VS Code `next` bundle, the CLI from 3.0.0, the desktop app) Cline's SDK keeps a **session folder**
(`sdk/packages/core/src/services/session-artifacts.ts`): `$CLINE_DIR/data/sessions/<session id>/` with the
manifest `<id>.json`, the transcript `<id>.messages.json` and each sub-agent's `<agent id>.messages.json`
(its messages contract, v1). Each assistant message's `metrics` are the usage of the one model call that
made it (`agents/src/agent-runtime.ts`, `usageDelta`): `inputTokens` the whole prompt, cache reads and writes
included (`llms/src/providers/ai-sdk.ts`, `normalizeUsage`), `cacheReadTokens`, `cacheWriteTokens`,
`outputTokens` (reasoning included, `reasoningTokenCount` where above 0). The lead's `system_prompt` is logged;
tools are not. A fork copies its source's transcript, ids and metrics included (`apps/cli/src/runtime/
interactive/session-runtime.ts`, manifest `metadata.fork`): the calls before `forkedAt` are its source's, billed
there where that session is beside it. ccusage 20.0.24 does not read Cline.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Message, ToolCall, Usage, content_text, timestamp
from kcost.readers.jsonl import compact_json
from kcost.readers.registry import Reader
from kcost.readers.source import Source, open_source
from kcost.readers.usage import MAX_COUNT

UI_FILES = ("ui_messages.json", "claude_messages.json")  # the newer name first
API_FILE = "api_conversation_history.json"
TASK_FILES = (*UI_FILES, API_FILE, "task_metadata.json")
_SDK_SUFFIX = ".messages.json"
_HEAD = 1 << 16  # what is read of a file to tell whose task it is, or its project
# the providers whose `tokensIn` leaves the cache out (v3.89.2 `core/api/providers/*.ts`)
_EXCLUSIVE = frozenset({"anthropic", "bedrock", "vertex", "minimax", "cline", "openrouter", "vercel-ai-gateway",
                        "deepseek", "openai-native", "groq", "gemini", "moonshot", "claude-code"})  # fmt: skip
# the providers whose `cacheWrites` are DeepSeek's cache misses, not writes
_MISSES = frozenset({"openai", "xai", "hicap", "fireworks", "doubao", "qwen", "litellm", "deepseek"})
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_CLINE_CWD = re.compile(rb"# Current Working Directory \(([^)\n]+)\)")


# ---- the classic task folder, shared with Roo Code (a fork of Cline that keeps its tasks the same way)


def task_owner(folder: Path) -> str | None:
    """Whose task folder this is, Cline's or Roo Code's, where it can be told: by the extension's storage folder
    it lies in (`saoudrizwan.*`, `rooveterinaryinc.*`, Cline's `~/.cline`, the Roo CLI's `~/.vscode-mock`), else
    by the task id (Cline's `Date.now()`, Roo's a UUID), else by what only one of them writes in its rows (Roo's
    `apiProtocol`, Cline's `modelInfo`). None: neither."""
    for part in reversed(folder.parts[:-1]):
        low = part.lower()
        if low.startswith("saoudrizwan.") or low == ".cline":
            return "cline"
        if low.startswith("rooveterinaryinc.") or low == ".vscode-mock":
            return "roo-code"
    if folder.name.isdigit():
        return "cline"
    if _UUID.fullmatch(folder.name):
        return "roo-code"
    head = _head(ui_file(folder))
    if b"apiProtocol" in head:
        return "roo-code"
    if b"modelInfo" in head:
        return "cline"
    return None


def ui_file(folder: Path) -> Path:
    """The task's list of UI messages: `ui_messages.json`, else the oldest name."""
    for name in UI_FILES:
        if (folder / name).is_file():
            return folder / name
    return folder / UI_FILES[0]


def is_task_folder(folder: Path) -> bool:
    return any((folder / name).is_file() for name in UI_FILES)


def _head(path: Path) -> bytes:
    """A file's first bytes; none of a FIFO or a device (never opened: it would block or never end)."""
    try:
        if not path.is_file():
            return b""
        with path.open("rb") as handle:
            return handle.read(_HEAD)
    except OSError:
        return b""


def load_json(path: Path) -> Any:
    """A whole JSON document; a file cut short (one the agent is writing, or wrote before its writes were atomic)
    is an `InputError` naming it."""
    source = open_source(str(path))
    try:
        return orjson.loads(source.data)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg}): a file cut short as it was written?", source=str(path),
                         line=exc.lineno, hint="bill it again once the agent is done with it") from None  # fmt: skip


class Row(NamedTuple):
    """One usage row of `ui_messages.json`: its kind (`say`), time (ms), its request info, its whole message."""

    kind: str
    ts: Any
    info: Mapping[str, Any]
    message: Mapping[str, Any]
    place: int  # its index in the file


def ui_messages(folder: Path) -> list[Any]:
    """The task's UI messages, as stored."""
    path = ui_file(folder)
    messages = load_json(path)
    if not isinstance(messages, list):
        raise InputError("expected a list of messages", source=str(path))
    return messages


def usage_rows(messages: list[Any], kinds: frozenset[str]) -> list[Row]:
    """The `api_req_started` rows (each legacy `api_req_finished` merged into the one before it, as
    `combineApiRequests` does) and the rows of `kinds` (totals of several calls), in order."""
    rows: list[Row] = []
    for n, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("type") != "say":
            continue
        kind = message.get("say")
        if kind not in ("api_req_started", "api_req_finished", *kinds):
            continue
        text = message.get("text")
        try:
            info = orjson.loads(text) if isinstance(text, str) and text else {}
        except orjson.JSONDecodeError:
            info = {}  # a placeholder still streaming, or none: no usage in it
        if not isinstance(info, Mapping):
            info = {}
        if kind == "api_req_finished":
            if rows and rows[-1].kind == "api_req_started":
                rows[-1] = rows[-1]._replace(info={**rows[-1].info, **info})
            continue
        rows.append(Row(str(kind), message.get("ts"), info, message, n))
    return rows


def count(info: Mapping[str, Any], key: str, where: str) -> int:
    """A logged count: absent is 0; else a whole number from 0 to `MAX_COUNT`."""
    value = info.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise InputError(f"expected a token count, got {str(value)[:40]!r}", field=f"{where}.{key}")
    return value


def counts(info: Mapping[str, Any], where: str) -> tuple[int, int, int, int]:
    """(`tokensIn`, `tokensOut`, `cacheWrites`, `cacheReads`) as logged."""
    return (count(info, "tokensIn", where), count(info, "tokensOut", where), count(info, "cacheWrites", where),
            count(info, "cacheReads", where))  # fmt: skip


UsageOf = Callable[[Row, str | None], Usage | None]  # a row (and its provider) as the agent meant its counts
ModelOf = Callable[[Row, Mapping[str, Any] | None], tuple[str | None, str | None]]  # (model, provider) of a row,
# given the API history's user message its request sent last


def task_calls(folder: Path, notes: list[str], *, prompts: bool, leniency: Leniency, usage_of: UsageOf,
               model_of: ModelOf, totals: frozenset[str], said: Callable[[list[Any]], None] | None = None,
               ) -> Iterator[Call]:  # fmt: skip
    """Every call of a classic task folder, in order: one per `api_req_started` row with usage, its prompt the
    API history up to the user message its request added (what a condense or truncation took out left out), its
    reply the assistant message after it; and each row of `totals` as a call with no prompt. `said`: told the
    UI messages, to note what else they hold."""
    stored = ui_messages(folder)
    rows = usage_rows(stored, totals)
    if said is not None:
        said(stored)
    history = _History(load_json(folder / API_FILE) if (folder / API_FILE).is_file() else [], str(folder / API_FILE))
    where = str(ui_file(folder))
    unmatched = 0
    grouped: dict[str, list[Usage]] = {}
    for row in rows:
        try:
            ts = timestamp(row.ts, field="ts", leniency=leniency)
        except InputError as exc:
            raise exc.located(source=where) from None
        user = history.next_user(row.ts) if row.kind == "api_req_started" else None
        model, provider = model_of(row, history.raw[user] if user is not None else None)
        try:
            usage = usage_of(row, provider)
        except InputError as exc:
            exc.field = f"[{row.place}].{exc.field}" if exc.field else f"[{row.place}].text"
            leniency.forgive(exc.located(source=where))
            continue
        if usage is None:
            continue  # a placeholder, or a request that failed before any usage came
        if row.kind != "api_req_started":
            grouped.setdefault(row.kind, []).append(usage)
            yield Call(messages=None, time=ts, model=model, reported=usage, id=f"{row.kind}@{row.ts}")
            continue
        messages: tuple[Message, ...] | None = None
        output: Message | None = None
        compacted = False
        if prompts:
            if user is None:
                unmatched += 1
            messages, output, compacted = history.prompt(user, row.message.get("conversationHistoryDeletedRange"))
        yield Call(messages=messages, output=output, time=ts, model=model, reported=usage, compacted=compacted,
                   id=history.reply_id(user), unlogged="system prompt and tools")  # fmt: skip
    for kind, usages in grouped.items():
        what = {"subagent_usage": "a `use_subagents` batch's total (its sub-agents' calls are logged nowhere "
                                  "one by one)",
                "deleted_api_reqs": "the total of the requests a checkpoint restore removed from the task",
                "api_req_deleted": "the total of the requests a checkpoint restore removed from the task"}  # fmt: skip
        prompt = sum(u.prompt for u in usages)
        notes.append(f"{len(usages)} `{kind}` row(s), each {what.get(kind, 'a total of several calls')}: "
                     f"{prompt:,} prompt tokens, {sum(u.output for u in usages):,} output, with no prompt to "
                     "rebuild: billed as reported (`--usage reported`), left out of a simulated bill")  # fmt: skip
    if unmatched:
        notes.append(f"{unmatched} request(s) with no user message of their own in {API_FILE} (edited or "
                     "restored since): each prompt taken as the history before it")  # fmt: skip


class _History:
    """A task's API history (`api_conversation_history.json`), as the requests sent it."""

    def __init__(self, raw: Any, where: str) -> None:
        if not isinstance(raw, list):
            raise InputError("expected a list of messages", source=where)
        self.raw: list[Mapping[str, Any]] = [m if isinstance(m, Mapping) else {} for m in raw]
        self.where = where
        self.users = [i for i, m in enumerate(self.raw) if m.get("role") == "user" and not m.get("isSummary")
                      and not m.get("isTruncationMarker")]  # fmt: skip
        self.timed = all(isinstance(self.raw[i].get("ts"), (int, float)) for i in self.users)
        self.taken = -1  # the last user message a request was matched to
        self.converted: dict[int, list[Message]] = {}
        self.dropped = 0

    def next_user(self, ts: Any) -> int | None:
        """The user message the next request added: the first after the last one taken that was added at or after
        the request's row (rows come before their message), or, where the history keeps no times, the next one."""
        for n in range(bisect_right(self.users, self.taken), len(self.users)):  # after the last taken (ascending)
            i = self.users[n]
            if self.timed and isinstance(ts, (int, float)) and self.raw[i]["ts"] < ts:
                continue
            self.taken = i
            return i
        return None

    def reply_id(self, user: int | None) -> str | None:
        reply = self.raw[user + 1] if user is not None and user + 1 < len(self.raw) else {}
        found = reply.get("id") if reply.get("role") == "assistant" else None
        return found if isinstance(found, str) else None

    def prompt(self, user: int | None, deleted: Any) -> tuple[tuple[Message, ...], Message | None, bool]:
        """The messages sent up to `user` (None: the whole history so far), the reply after it, and whether a
        condense or truncation took messages out since the last prompt."""
        end = user + 1 if user is not None else max(self.taken + 1, 0)
        kept = self._kept(end, deleted)
        dropped = end - len(kept)
        compacted = dropped > self.dropped
        self.dropped = dropped
        messages = tuple(m for i in kept for m in self._messages(i))
        reply = self.raw[end] if user is not None and end < len(self.raw) else {}
        output = reply_message(reply.get("content")) if reply.get("role") == "assistant" else None
        return messages, output, compacted

    def _kept(self, end: int, deleted: Any) -> list[int]:
        """The indices of the first `end` messages the request sent: a message a condense summary or truncation
        marker among them stands for is left out (Roo: `condenseParent`, `truncationParent`), and so is Cline's
        `conversationHistoryDeletedRange` (`[first, last]`, inclusive)."""
        marks = set()
        for m in self.raw[:end]:
            for flag, key in (("isSummary", "condenseId"), ("isTruncationMarker", "truncationId")):
                if m.get(flag) and isinstance(m.get(key), str):
                    marks.add(m[key])
        cut = range(0)
        if (isinstance(deleted, list) and len(deleted) == 2 and all(isinstance(x, int) for x in deleted)
                and 0 <= deleted[0] <= deleted[1]):  # fmt: skip
            cut = range(deleted[0], deleted[1] + 1)
        return [i for i, m in enumerate(self.raw[:end]) if i not in cut and
                not {_mark(m.get("condenseParent")), _mark(m.get("truncationParent"))} & marks]  # fmt: skip

    def _messages(self, i: int) -> list[Message]:
        held = self.converted.get(i)
        if held is None:
            raw = self.raw[i]
            content = raw.get("content")
            held = [reply_message(content)] if raw.get("role") == "assistant" else user_messages(content)
            self.converted[i] = held
        return held


def reply_message(content: Any) -> Message:
    """An assistant message of Anthropic-style blocks (text, thinking, tool use) as one message."""
    if isinstance(content, str):
        return Message(role="assistant", content=content)
    text, reasoning, calls = [], [], []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            reasoning.append(block["thinking"])
        elif kind == "tool_use":
            args = block.get("input", {})
            calls.append(ToolCall(str(block.get("id", "")), str(block.get("name", "")),
                                  args if isinstance(args, str) else compact_json(args)))  # fmt: skip
    return Message(role="assistant", content="".join(text), reasoning="".join(reasoning) or None,
                   tool_calls=tuple(calls))  # fmt: skip


def user_messages(content: Any) -> list[Message]:
    """A user message of Anthropic-style blocks: each tool result a tool message, the rest the user's text (a
    file the SDK attached as its path and content)."""
    if not isinstance(content, list):
        return [Message(role="user", content=content if isinstance(content, str) else "")]
    out: list[Message] = []
    text: list[Any] = []
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            call_id = block.get("tool_use_id")
            out.append(Message(role="tool", content=_result_text(block.get("content")),
                               tool_call_id=call_id if isinstance(call_id, str) else None))  # fmt: skip
        elif isinstance(block, Mapping) and block.get("type") == "file":
            text.append({"type": "text", "text": f"<file path=\"{block.get('path', '')}\">\n"
                                                 f"{block.get('content', '')}\n</file>"})  # fmt: skip
        else:
            text.append(block)
    if text:
        out.append(Message(role="user", content=content_text(text)))
    return out


def _result_text(result: Any) -> str:
    """A tool result as sent: its text (and media) parts, else its JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and any(isinstance(p, Mapping) and p.get("type") in ("text", "image")
                                        for p in result):  # fmt: skip
        return content_text(result)
    return compact_json(result) if result is not None else ""


# ---- Cline's own reading of the classic rows


def cline_usage(row: Row, provider: str | None) -> Usage | None:
    """A row's counts as its provider filled them (see the module's docstring); None: no usage in it."""
    tokens_in, tokens_out, writes, reads = counts(row.info, "text")
    if not (tokens_in or tokens_out or writes or reads):
        return None
    inclusive = provider not in _EXCLUSIVE and tokens_in >= reads + writes
    prompt = tokens_in if inclusive else tokens_in + writes + reads
    if prompt > MAX_COUNT:
        raise InputError(f"{prompt:,} prompt tokens is past any context window", field="text.tokensIn")
    return Usage(prompt=prompt, cached=reads, output=tokens_out, written=0 if provider in _MISSES else writes)


def _cline_model(folder: Path) -> ModelOf:
    """A row's model and provider: its `modelInfo`, else the `model_usage` entry of `task_metadata.json` in force
    at its time."""
    changes: list[tuple[float, str | None, str | None]] = []
    meta = folder / "task_metadata.json"
    if meta.is_file():
        try:
            raw = load_json(meta)
        except InputError:
            raw = {}
        for entry in raw.get("model_usage", []) if isinstance(raw, Mapping) else []:
            if isinstance(entry, Mapping) and isinstance(entry.get("ts"), (int, float)):
                changes.append((entry["ts"], _text(entry.get("model_id")), _text(entry.get("model_provider_id"))))
    changes.sort(key=lambda c: c[0])
    times = [c[0] for c in changes]

    def model_of(row: Row, user: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
        info = row.message.get("modelInfo")
        if isinstance(info, Mapping) and _text(info.get("modelId")):
            return _text(info.get("modelId")), _text(info.get("providerId"))
        ts = row.ts if isinstance(row.ts, (int, float)) else None
        n = len(changes) if ts is None else bisect_right(times, ts)  # the changes made at or before the row
        return (changes[n - 1][1], changes[n - 1][2]) if n else (None, None)

    return model_of


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# ---- the SDK's session folder


def is_sdk_session(folder: Path) -> bool:
    return (folder / f"{folder.name}{_SDK_SUFFIX}").is_file()


def sdk_calls(folder: Path, notes: list[str], *, prompts: bool, leniency: Leniency) -> Iterator[Call]:
    """Every call of an SDK session folder: the lead's and each sub-agent's assistant messages with metrics, in
    the order they were made; a fork's copied calls left to its source where that session lies beside it."""
    manifest: Any = {}
    if (folder / f"{folder.name}.json").is_file():
        try:
            manifest = load_json(folder / f"{folder.name}.json")
        except InputError:
            manifest = {}
    meta = manifest.get("metadata") if isinstance(manifest, Mapping) else None
    fork = meta.get("fork") if isinstance(meta, Mapping) else None
    forked_at: float | None = None
    source = ""
    if isinstance(fork, Mapping) and isinstance(fork.get("forkedFromSessionId"), str):
        source = str(fork["forkedFromSessionId"])
        forked_at = timestamp(fork.get("forkedAt"), field="metadata.fork.forkedAt", leniency=leniency)
        if not (folder.parent / source / f"{source}{_SDK_SUFFIX}").is_file():
            notes.append(f"a fork of session {source}, which is not beside it: the calls it copied are billed here")
            forked_at = None
    transcripts = sorted(folder.glob(f"*{_SDK_SUFFIX}"), key=lambda p: p.name != f"{folder.name}{_SDK_SUFFIX}")
    calls: list[tuple[float, int, Call]] = []
    copied = 0
    for path in transcripts:
        for call in _transcript_calls(path, prompts=prompts, leniency=leniency):
            if forked_at is not None and call.time is not None and call.time < forked_at:
                copied += 1
                continue
            calls.append((call.time if call.time is not None else float("inf"), len(calls), call))
    if copied:
        notes.append(f"a fork: {copied} call(s) it copied from session {source} (made before "
                     "the fork) are that session's, not billed again here")  # fmt: skip
    for _, _, call in sorted(calls, key=lambda c: (c[0], c[1])):
        yield call


def _transcript_calls(path: Path, *, prompts: bool, leniency: Leniency) -> Iterator[Call]:
    """A transcript's calls: each assistant message with `metrics`, its prompt the messages before it."""
    where = str(path)
    raw = load_json(path)
    if not isinstance(raw, Mapping) or not isinstance(raw.get("messages"), list):
        raise InputError("expected a transcript with `messages`", source=where)
    lead = raw.get("agent") in (None, "lead")
    system = raw.get("system_prompt") if isinstance(raw.get("system_prompt"), str) else None
    unlogged = "tools" if system else "system prompt and tools"
    if not lead:
        unlogged = f"sub-agent {path.name.removesuffix(_SDK_SUFFIX)}'s {unlogged}"
    history: list[Message] = []
    for n, message in enumerate(raw["messages"]):
        if not isinstance(message, Mapping):
            raise InputError("expected an object", source=where, field=f"messages[{n}]")
        content = message.get("content")
        if message.get("role") != "assistant":
            if prompts:
                history.extend(user_messages(content))
            continue
        reply = reply_message(content)
        metrics = message.get("metrics")
        usage = None
        if isinstance(metrics, Mapping):
            try:
                usage = _sdk_usage(metrics, f"messages[{n}].metrics")
            except InputError as exc:
                leniency.forgive(exc.located(source=where))
        if usage is not None:
            info = message.get("modelInfo")
            model = _text(info.get("id")) if isinstance(info, Mapping) else None
            try:
                time = timestamp(message.get("ts"), field=f"messages[{n}].ts", leniency=leniency)
            except InputError as exc:
                raise exc.located(source=where) from None
            yield Call(messages=tuple(history) if prompts else None, system=system, output=reply, time=time,
                       model=model, reported=usage, id=_text(message.get("id")), unlogged=unlogged)  # fmt: skip
        if prompts:
            history.append(reply)


def _sdk_usage(metrics: Mapping[str, Any], where: str) -> Usage | None:
    prompt, output = count(metrics, "inputTokens", where), count(metrics, "outputTokens", where)
    reads, writes = count(metrics, "cacheReadTokens", where), count(metrics, "cacheWriteTokens", where)
    if not (prompt or output):
        return None
    if reads + writes > prompt:
        raise InputError(f"cache reads ({reads}) and writes ({writes}) exceed the prompt ({prompt})",
                         field=f"{where}.inputTokens")  # fmt: skip
    reasoning = count(metrics, "reasoningTokenCount", where) if "reasoningTokenCount" in metrics else None
    return Usage(prompt=prompt, cached=reads, output=output, written=writes,
                 reasoning=min(reasoning, output) if reasoning is not None else None)  # fmt: skip


# ---- the reader


class Cline(Reader):
    name = "cline"
    one_call = "an `api_req_started` row of a task's `ui_messages.json`; an SDK transcript's assistant message"
    usage_read = (
        "task rows: `tokensIn` (+ `cacheWrites + cacheReads` where the provider leaves them out; cached "
        "`cacheReads`), `tokensOut` (holds the reasoning); SDK `metrics`: `inputTokens` (holds `cacheReadTokens` "
        "and `cacheWriteTokens`), `outputTokens` (holds the reasoning)"
    )
    source_read = (
        "cline/cline v3.89.2 `apps/vscode/src/core/task/index.ts`, `core/task/utils.ts`, "
        "`core/api/providers/*.ts`; `sdk/packages/agents/src/agent-runtime.ts`, `sdk/packages/core/src/services/"
        "session-data.ts`"
    )
    comparable = False  # whichever provider's cache served it: its hits need not be Kimi's

    def is_session_folder(self, folder: Path) -> bool:
        """A task folder that is not Roo Code's, or an SDK session folder."""
        if is_task_folder(folder):
            return task_owner(folder) in ("cline", None)
        return is_sdk_session(folder)

    def folder_of(self, file: Path) -> Path | None:
        named = file.name in TASK_FILES or file.name.endswith(_SDK_SUFFIX)
        return file.parent if named and self.is_session_folder(file.parent) else None

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        if not isinstance(unit, Path):
            raise InputError("give the Cline task or session folder", source=unit.name, field="input_format")
        if is_sdk_session(unit) and not is_task_folder(unit):
            return sdk_calls(unit, notes, prompts=prompts, leniency=leniency)
        totals = frozenset({"subagent_usage", "deleted_api_reqs"})
        return task_calls(unit, notes, prompts=prompts, leniency=leniency, usage_of=cline_usage,
                          model_of=_cline_model(unit), totals=totals)  # fmt: skip

    def project(self, unit: Source | Path) -> str | None:
        """The working directory: an SDK session's manifest `cwd`; a task's "Current Working Directory" in the
        environment details of its first request."""
        if not isinstance(unit, Path):
            return None
        if is_sdk_session(unit) and not is_task_folder(unit):
            try:
                manifest = load_json(unit / f"{unit.name}.json") if (unit / f"{unit.name}.json").is_file() else {}
            except InputError:
                return None
            return _text(manifest.get("cwd")) if isinstance(manifest, Mapping) else None
        return first_match(_CLINE_CWD, unit / API_FILE)


def first_match(pattern: re.Pattern[bytes], path: Path) -> str | None:
    """The first group of `pattern` in the head of the file at `path`, as text (JSON escapes undone)."""
    found = pattern.search(_head(path))
    if found is None:
        return None
    try:
        text = orjson.loads(b'"' + found.group(1) + b'"')
    except orjson.JSONDecodeError:
        return None
    return text if isinstance(text, str) and text else None


def _mark(value: Any) -> str | None:
    """A message's `condenseParent` or `truncationParent`, where it is the id it should be (a string)."""
    return value if isinstance(value, str) else None

