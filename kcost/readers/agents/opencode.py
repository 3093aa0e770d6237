"""OpenCode sessions, in both of its stores: what each session would cost on K3.

OpenCode keeps its data in `${XDG_DATA_HOME:-~/.local/share}/opencode` (sst/opencode `src/global/index.ts`).
Up to 1.1 it wrote a JSON store: `storage/message/<session>/msg_*.json` (one file a message: `MessageV2.Info`),
`storage/part/<message>/prt_*.json` (its parts: text, reasoning, tool calls, step starts and finishes) and
`storage/session/<project>/<session>.json` (the session: `version`, `directory`). Since 1.2 it writes a SQLite
database, `opencode.db` (`opencode-<channel>.db` for other channels; `src/storage/db.ts`), with tables `session`,
`message (id, session_id, time_created, time_updated, data)` and `part (id, message_id, session_id, ..., data)`
(`src/session/session.sql.ts`), `data` the JSON of the message or part without its ids, and migrates the JSON
store into it on first start (leaving the files). The data folder is read as a store of sessions, one session
each; a session in both stores is read from the database with any message only the JSON store holds, once.

One call per step: OpenCode's processor (`src/session/processor.ts`, `finish-step`) writes each model step's
usage as a `step-finish` part and overwrites the message's `tokens` with it, so a message of several steps is
several calls (ccusage 20.0.24 reads the message's `tokens` only: its last step's). A message without
`step-finish` parts is one call of its `tokens`. `tokens` (`Session.getUsage`): `input` is what neither read nor
wrote the cache, `cache.read`, `cache.write`, `output`, `reasoning`. Up to 1.3.15 `output` held the reasoning;
from 1.3.16 (PR #21047) `output` is the text alone and `reasoning` comes on top. Which a record is: its
`total` says (`input + output + cache` with or without `reasoning`), else the session's `version`, else the
store (the JSON store is older than the change; the database newer). ccusage 20.0.24 adds `reasoning` to every
record's output, so it counts an older record's reasoning twice. The prompt is rebuilt from the parts where
the store has them; the system prompt and tools are not logged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Message, ToolCall, Usage, timestamp
from kcost.model.frozen import frozen
from kcost.readers import sqlite
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.usage import parse_usage

if TYPE_CHECKING:
    pass

_DB_NAME = re.compile(r"opencode(-[A-Za-z0-9._-]+)?\.db")
_REASONING_APART = (1, 3, 16)  # the first version whose `output` leaves the reasoning out
_WHAT = "OpenCode database"  # what a database is called where it cannot be read


@frozen
class DbSession:
    """One session of an OpenCode database (and the JSON store beside it): the unit `claim` makes of a store."""

    databases: tuple[Path, ...]  # the databases that hold it, the one that names it first
    session: str
    info: Mapping[str, Any]  # its `session` row, where the database has one
    passed: tuple[str, ...] = ()  # the databases beside it that could not be read, each with why: its notes

    @property
    def name(self) -> str:  # how the run names where the session came from
        return f"{self.databases[0]}#{self.session}"


def databases(folder: Path) -> list[Path]:
    """The OpenCode databases in a data folder: `opencode.db` first, then the channels' (`opencode-beta.db`). A
    file so named that is no regular file (a FIFO, a device, a broken link) counts, never opened: reading it says
    what it is (a FIFO would block the read for ever); a regular file that is no SQLite database does not."""
    try:
        found = [f for f in folder.iterdir() if _DB_NAME.fullmatch(f.name) and sqlite.kind(f) is not False]
    except OSError:
        return []
    return sorted(found, key=lambda f: (f.name != "opencode.db", f.name))


def _storage_of(folder: Path) -> Path | None:
    """The JSON store (`storage`) `folder` lies in, if it does."""
    for up in (folder, *folder.parents):
        if up.name == "storage" and (up / "message").is_dir():
            return up
    return None


def _is_message_folder(folder: Path) -> bool:
    """A session's folder of message files: `storage/message/<session>/`."""
    return folder.parent.name == "message" and folder.parent.parent.name == "storage" and folder.is_dir()


class OpenCode(Reader):
    name = "opencode"
    one_call = "a step (`step-finish` part)"
    usage_read = "`tokens.input + cache.read + cache.write`, `output` (+ `reasoning` where kept apart)"
    source_read = "sst/opencode `src/session/processor.ts`, `session.sql.ts`"
    comparable = False  # whichever provider's cache served it: its hits need not be Kimi's

    def is_session_folder(self, folder: Path) -> bool:
        """A data folder with a database (a store of sessions), a session's folder of message files, or any other
        folder of the JSON store (parts, session records: read with their messages, so never passed over)."""
        if databases(folder):
            return True
        return _storage_of(folder) is not None and folder.name != "storage"

    def folder_of(self, file: Path) -> Path | None:
        """A database's data folder; a message file's session folder."""
        if _DB_NAME.fullmatch(file.name) and sqlite.is_sqlite(file):
            return file.parent
        if file.suffix == ".json" and _is_message_folder(file.parent):
            return file.parent
        return None

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> Source | Path | list[Any]:
        """A data folder: each session of its databases (one that cannot be read is passed over, said in the
        notes of the others' sessions; where none can be, the first one's error). A session's folder of
        messages: itself, or nothing where a database beside it holds the session (migrated: read from there).
        Any other folder of the store: nothing (its files are read with the messages they belong to)."""
        if not isinstance(unit, Path):
            raise InputError("not an OpenCode store: give its data folder or a session's message folder",
                             source=unit.name)  # fmt: skip
        stores = databases(unit)
        if stores:
            return _sessions(stores)
        if not _is_message_folder(unit):
            return []
        storage = unit.parent.parent
        if any(_holds(db, unit.name) for db in databases(storage.parent)):
            return []
        return unit

    def read(
        self, unit: Source | Path | DbSession, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        if isinstance(unit, DbSession):
            notes += unit.passed
            messages, version, apart = _from_databases(unit, unit.name)
            storage = unit.databases[0].parent / "storage"
            if (storage / "message" / unit.session).is_dir():  # migrated: what only the JSON store holds
                known = {m["id"] for m, _ in messages}
                extra, _, _ = _from_files(storage / "message" / unit.session)
                messages += [(m, p) for m, p in extra if m["id"] not in known]
            where = unit.name
        elif isinstance(unit, Path):
            messages, version, apart = _from_files(unit)
            where = str(unit)
        else:
            raise InputError("not an OpenCode session", source=unit.name)
        messages.sort(key=lambda mp: (_created(mp[0]), str(mp[0]["id"])))
        return _calls(messages, where, version=version, apart=apart, prompts=prompts, leniency=leniency)

    def session_name(self, unit: Source | Path | DbSession) -> str:
        if isinstance(unit, DbSession):
            return unit.session
        return unit.name if isinstance(unit, Path) else unit.stem

    def project(self, unit: Source | Path | DbSession) -> str | None:
        """The session's working directory: its record's `directory`."""
        if isinstance(unit, DbSession):
            directory = unit.info.get("directory")
        elif isinstance(unit, Path):
            directory = _session_record(unit).get("directory")
        else:
            return None
        return directory if isinstance(directory, str) and directory else None


def _query(db: Path, sql: str, args: tuple[Any, ...] = (), *, required: bool = True) -> list[Any]:
    return sqlite.query(db, _WHAT, sql, args, required=required)


def _sessions(stores: list[Path]) -> list[DbSession]:
    """Every session with messages in the databases, in the order each first appears, each once. A database that
    cannot be read is passed over, said in every session's notes; where none can be, its error is the claim's."""
    held: dict[str, list[Path]] = {}
    info: dict[str, Mapping[str, Any]] = {}
    passed: list[InputError] = []
    for db in stores:
        try:
            rows = _query(db, "SELECT session_id, MIN(time_created) AS first FROM message GROUP BY session_id "
                              "ORDER BY first, session_id")  # fmt: skip
            table = _query(db, "SELECT * FROM session", required=False)
        except InputError as exc:
            passed.append(exc)
            continue
        for row in table:
            info.setdefault(str(row["id"]), dict(row))
        for row in rows:
            held.setdefault(str(row["session_id"]), []).append(db)
    if passed and len(passed) == len(stores):
        raise passed[0]
    notes = tuple(f"passed over {exc}" for exc in passed)
    return [DbSession(tuple(dbs), session, info.get(session, {}), notes) for session, dbs in held.items()]


def _holds(db: Path, session: str) -> bool:
    """Whether `db` holds messages of `session` (one that cannot be read holds none it can give)."""
    try:
        return bool(_query(db, "SELECT 1 FROM message WHERE session_id = ? LIMIT 1", (session,), required=False))
    except InputError:
        return False


Parts = list[dict[str, Any]]


def _from_databases(unit: DbSession, where: str) -> tuple[list[tuple[dict[str, Any], Parts]], str | None, bool]:
    """The session's messages with their parts (each message once: the first database's), its version, and
    whether a record that does not say is of the newer convention (reasoning apart): so in a database."""
    messages: dict[str, dict[str, Any]] = {}
    parts: dict[str, Parts] = {}
    seen: set[tuple[str, str]] = set()  # (message, part): each part once, whichever database holds it first
    for db in unit.databases:
        for row in _query(db, "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
                          (unit.session,)):  # fmt: skip
            mid = str(row["id"])
            if mid not in messages:
                messages[mid] = {**_json(row["data"], where, f"message {mid}"), "id": mid}
        for row in _query(db, "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
                          (unit.session,), required=False):  # fmt: skip
            mid, pid = str(row["message_id"]), str(row["id"])
            if mid in messages and (mid, pid) not in seen:
                seen.add((mid, pid))
                parts.setdefault(mid, []).append({**_json(row["data"], where, f"part {pid}"), "id": pid})
    version = unit.info.get("version")
    return [(m, parts.get(mid, [])) for mid, m in messages.items()], version if isinstance(version, str) else None, True


def _from_files(folder: Path) -> tuple[list[tuple[dict[str, Any], Parts]], str | None, bool]:
    """A JSON-store session: its message files with their parts (`storage/part/<message>/`), the session's
    version (its record under `storage/session/`), and the older convention for a record that does not say."""
    storage = folder.parent.parent
    messages = []
    for file in sorted(folder.glob("*.json")):
        message = _json(_read(file), str(file), "")
        if not isinstance(message.get("id"), str):
            message["id"] = file.stem
        parts = [_json(_read(p), str(p), "") for p in sorted((storage / "part" / str(message["id"])).glob("*.json"))]
        messages.append((message, [p for p in parts if p]))
    version = _session_record(folder).get("version")
    return messages, version if isinstance(version, str) else None, False


def _session_record(folder: Path) -> Mapping[str, Any]:
    """A JSON-store session's own record (`storage/session/<project>/<session>.json`), where there is one."""
    for file in (folder.parent.parent / "session").glob(f"*/{folder.name}.json"):
        try:
            record = orjson.loads(file.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(record, Mapping):
            return record
    return {}


def _read(file: Path) -> bytes:
    try:
        return file.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(file)) from None


def _json(raw: Any, source: str, what: str) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except (orjson.JSONDecodeError, TypeError) as exc:
        raise InputError(f"not valid JSON{f' in {what}' if what else ''}: {exc}", source=source) from None
    if not isinstance(value, dict):
        raise InputError(f"expected an object{f' in {what}' if what else ''}", source=source)
    return value


def _created(message: Mapping[str, Any]) -> float:
    time = message.get("time")
    created = time.get("created") if isinstance(time, Mapping) else None
    return float(created) if isinstance(created, (int, float)) and not isinstance(created, bool) else 0.0


def _calls(
    messages: list[tuple[dict[str, Any], Parts]],
    where: str,
    *,
    version: str | None,
    apart: bool,
    prompts: bool,
    leniency: Leniency,
) -> Iterator[Call]:
    """One call per step of each assistant message (its `tokens` where it logged no step), its prompt the
    conversation before it."""
    history: list[Message] = []
    rule = _Reasoning(version, apart)
    asked: list[Message] = []  # the last user message
    for message, parts in messages:
        if message.get("role") == "user":
            asked = [Message(role="user", content=_user_text(parts))]
            history += asked
            continue
        if message.get("role") != "assistant":
            continue
        at = f"{where} (message {message['id']})"
        steps = _steps(parts)
        finishes = [p for p in parts if p.get("type") == "step-finish" and isinstance(p.get("tokens"), Mapping)]
        logged = [(p["tokens"], steps[n] if n < len(steps) else []) for n, p in enumerate(finishes)]
        if not logged:
            logged = [(message.get("tokens"), [p for p in parts if p.get("type") != "step-start"])]
        model = message.get("modelID")
        replied: list[Message] = []
        for n, (tokens, step) in enumerate(logged):
            said = _step_messages(step) if prompts else []
            usage = _usage(tokens, rule, at, leniency)
            if usage is not None and not usage.empty:  # nothing billed (an aborted step) is no call
                try:  # a time that is none is named at its message, as a bad `tokens` is
                    when = timestamp(_created(message) or None, field="time.created", per_second=1000,
                                     leniency=leniency)  # fmt: skip
                except InputError as exc:
                    raise exc.located(source=at) from None
                yield Call(
                    messages=tuple(history) if prompts else None,
                    output=said[0] if said else None,
                    time=when,
                    model=model if isinstance(model, str) and model else None,
                    reported=usage,
                    id=f"{message['id']}#{n}" if len(logged) > 1 else str(message["id"]),
                    unlogged="system prompt and tools",
                )
            history += said
            replied += said
        if message.get("summary") is True and message.get("finish"):
            # a compaction's summary: later prompts start from its request and it (`MessageV2.filterCompacted`)
            history = [*asked, *replied]


class _Reasoning:
    """Whether a record's `output` leaves the reasoning out (from 1.3.16), where its `total` does not say."""

    def __init__(self, version: str | None, apart: bool) -> None:
        numbers = re.findall(r"\d+", version or "")[:3]
        if len(numbers) == 3:
            apart = tuple(int(n) for n in numbers) >= _REASONING_APART
        self.apart = apart

    def output(self, tokens: Mapping[str, Any]) -> Any:
        """The output the record means, reasoning included."""
        output, reasoning = tokens.get("output"), tokens.get("reasoning")
        if not (_count(output) or _is_int(output)) or not _count(reasoning) or not reasoning:
            return output
        cache = tokens.get("cache")
        parts = [tokens.get("input"), output, *(cache.get(k) for k in ("read", "write"))] if isinstance(
            cache, Mapping) else [tokens.get("input"), output]  # fmt: skip
        total = tokens.get("total")
        if _is_int(total) and all(_is_int(p) or p is None for p in parts):
            known = sum(p for p in parts if p is not None)
            if total == known + reasoning:
                return output + reasoning
            if total == known:
                return output
        return output + reasoning if self.apart or output < reasoning else output


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(value: Any) -> bool:
    return _is_int(value) and value >= 0


def _usage(tokens: Any, rule: _Reasoning, at: str, leniency: Leniency) -> Usage | None:
    """A `tokens` record as a `Usage` (the `cache` object's counts read as `cache.read`, `cache.write`)."""
    if not isinstance(tokens, Mapping):
        if tokens is None:
            return None  # a message still streaming, or one that failed before any usage
        leniency.forgive(InputError(f"expected an object, got {type(tokens).__name__}", source=at, field="tokens"))
        return None
    flat = {k: v for k, v in tokens.items() if k != "cache"}
    cache = tokens.get("cache")
    if isinstance(cache, Mapping):
        flat |= {f"cache.{k}": v for k, v in cache.items()}
    elif cache is not None:
        flat["cache.read"] = cache  # named as the count it should hold, so a bad one says where
    flat["output"] = rule.output(tokens)
    try:
        return parse_usage(flat, "opencode", where="tokens", leniency=leniency)
    except InputError as exc:
        raise exc.located(source=at) from None


def _steps(parts: Parts) -> list[Parts]:
    """The parts of each step, closed by its `step-finish` (what follows the last one: none)."""
    steps: list[Parts] = [[]]
    for part in parts:
        if part.get("type") == "step-finish":
            steps.append([])
        elif part.get("type") != "step-start":
            steps[-1].append(part)
    return steps[:-1]


def _user_text(parts: Parts) -> str:
    """A user message as sent: its text parts (those the TUI ignores left out) and files by name."""
    out = []
    for part in parts:
        if part.get("type") == "text" and not part.get("ignored"):
            out.append(str(part.get("text", "")))
        elif part.get("type") == "compaction":  # as `MessageV2.toModelMessages` sends it
            out.append("What did we do so far?")
        elif part.get("type") == "file":
            out.append(f"<file:{part.get('filename') or part.get('url', '')}>")
    return "\n".join(out)


def _step_messages(step: Parts) -> list[Message]:
    """One step's reply (text, reasoning, tool calls) and its tool results."""
    text, reasoning, calls, results = [], [], [], []
    for part in step:
        kind = part.get("type")
        if kind == "text":
            text.append(str(part.get("text", "")))
        elif kind == "reasoning":
            reasoning.append(str(part.get("text", "")))
        elif kind == "tool":
            raw = part.get("state")
            state: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
            call_id = str(part.get("callID", ""))
            args = state.get("input", {})
            calls.append(ToolCall(call_id, str(part.get("tool", "")),
                                  args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)))  # fmt: skip
            result = state.get("output", state.get("error"))
            if result is not None:
                content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
                results.append(Message(role="tool", content=content, tool_call_id=call_id or None))
    if not (text or reasoning or calls):
        return []
    reply = Message(role="assistant", content="".join(text), reasoning="".join(reasoning) or None,
                    tool_calls=tuple(calls))  # fmt: skip
    return [reply, *results]
