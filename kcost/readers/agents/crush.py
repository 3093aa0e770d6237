"""Crush sessions (`<project>/.crush/crush.db`, each project's found through `~/.local/share/crush/projects.json`):
what each would cost on K3, from its messages, for Crush logs no call's usage.

Crush (charmbracelet/crush at `37f36e9`) keeps a project's sessions in a SQLite database, `crush.db` in its data
folder (`internal/config/load.go`: `--data-dir`, else the nearest `.crush` up to the worktree's root, else
`<cwd>/.crush`), in WAL mode (`internal/db/connect.go`). Every project it was started in is listed in
`projects.json` (`{"projects": [{"path", "data_dir", "last_accessed"}]}`, `internal/projects/projects.go`, from
0.25.0) in its global data folder (`load.go`, `GlobalConfigData`: `$CRUSH_GLOBAL_DATA`, else
`$XDG_DATA_HOME/crush`, else `%LOCALAPPDATA%\\crush` on Windows, else `~/.local/share/crush`).

Tables (`internal/db/migrations/*.sql`): `sessions(id, parent_session_id, title, message_count, prompt_tokens,
completion_tokens, cost, summary_message_id, created_at, ...)` and `messages(id, session_id, role, parts, model,
provider, is_summary_message, created_at, finished_at, ...)`, times in Unix seconds (`strftime('%s', 'now')`,
`internal/db/sql/*.sql`, whatever the columns' comments say). An assistant row is one model step, that is one
call (`internal/agent/agent.go`, `PrepareStep`), with its model and provider; `parts` is the JSON list of
`{"type", "data"}` parts (`internal/message/message.go`, `marshalParts`): text, reasoning, tool calls and results,
a finish. **No part or row holds a call's usage**: `updateSessionUsage` (`agent.go`) adds each step's cost to the
session's `cost` and overwrites `prompt_tokens`/`completion_tokens` with the last step's (a context gauge for
auto-summarise: `InputTokens + CacheReadTokens` from 0.36.0, `InputTokens + CacheCreationTokens` before, fantasy's
`InputTokens` leaving the cache out; 0 after a `/summarize`). Each call's prompt is rebuilt from the rows before
it (from the last `/summarize` row on: `is_summary_message`, sent back as a user message, `agent.go`) and sized
by estimate; the last call of each session is sized at the counts its session keeps (no cached count), which
sizes the system prompt and tools (not stored) of every call. A sub-agent (the `agent` tool) runs in a child
session (`parent_session_id`; `internal/session/session.go`, `CreateAgentToolSessionID`) whose cost Crush adds to
its parent's (`internal/agent/coordinator.go`, `updateParentSessionCost`): a root session is read with its
descendants, their calls in the order made. Title calls (`GenerateTitle`) write no row: only their cost, in the
session's. The session's cost (at Crush's model table's prices) is named in its notes. ccusage 20.0.24 does not
read Crush.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from kcost.errors import InputError, Leniency
from kcost.inputs.files import MiB, check_regular
from kcost.model.calls import Call, Message, ToolCall, Usage, timestamp
from kcost.model.frozen import frozen
from kcost.readers import sqlite
from kcost.readers.jsonl import compact_json
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.usage import MAX_COUNT

if TYPE_CHECKING:
    import sqlite3

DB, REGISTRY = "crush.db", "projects.json"
_WHAT = "Crush database"
_REGISTRY_BYTES = 64 * MiB
_MESSAGE_COLUMNS = ("id", "role", "parts")  # read from every row (the query itself needs `session_id`, `created_at`)


@frozen
class CrushSession:
    """A root session of a Crush database with its descendants (sub-agents' sessions): the unit `claim` makes."""

    database: Path
    session: str
    family: tuple[str, ...]  # the root's id, then its descendants'
    project: str | None
    cost: float | None  # Crush's own, its descendants' included
    gauges: tuple[tuple[int, int], ...]  # each session's `prompt_tokens` and `completion_tokens`: its last call's

    @property
    def name(self) -> str:  # how the run names where the session came from
        return f"{self.database}#{self.session}"


def is_crush(db: Path) -> bool:
    """Whether `db` is a SQLite database with Crush's `sessions` and `messages` tables."""
    if not sqlite.is_sqlite(db):
        return False
    try:
        return {"id", "parent_session_id", "cost"} <= _columns(db, "sessions") and {
            "session_id", "role", "parts"} <= _columns(db, "messages")  # fmt: skip
    except InputError:
        return False


def _registry(folder: Path) -> list[tuple[Path, str]] | None:
    """The data folders and project paths a global data folder's `projects.json` lists (None: it holds none of
    Crush's); a relative `data_dir` is the project's. An entry whose path holds a NUL (which no path can) is
    skipped."""
    file = folder / REGISTRY
    if not file.is_file():
        return None
    try:
        check_regular(str(file), "Crush project list", _REGISTRY_BYTES)
        raw = orjson.loads(file.read_bytes())
    except (OSError, InputError, orjson.JSONDecodeError):
        return None
    projects = raw.get("projects") if isinstance(raw, Mapping) else None
    if not isinstance(projects, list):
        return None
    found = []
    for entry in projects:
        if isinstance(entry, Mapping) and isinstance(entry.get("path"), str) and isinstance(entry.get("data_dir"), str):
            if "\x00" in entry["path"] or "\x00" in entry["data_dir"]:
                continue
            data = Path(entry["data_dir"])
            found.append((data if data.is_absolute() else Path(entry["path"]) / data, entry["path"]))
    return found


class Crush(Reader):
    name = "crush"
    one_call = "an `assistant` row of `messages` (a model step; a `/summarize` row included)"
    usage_read = (
        "none a call: a session's `prompt_tokens` (input + cache reads, no cached count) and `completion_tokens` "
        "size its last call; the others are estimated from their rebuilt prompts"
    )
    source_read = "charmbracelet/crush `internal/agent/agent.go`, `internal/message/message.go`, `internal/db/`"
    comparable = False  # no call's usage is logged

    def is_session_folder(self, folder: Path) -> bool:
        """A data folder holding Crush's `crush.db`, or a global data folder listing Crush's projects."""
        return is_crush(folder / DB) or _registry(folder) is not None

    def folder_of(self, file: Path) -> Path | None:
        if file.name == DB:
            return file.parent if is_crush(file) else None
        return file.parent if file.name == REGISTRY and _registry(file.parent) is not None else None

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> list[Any]:
        """Every root session with a call, of the folder's database and of each project its `projects.json` lists
        (a database under the folder itself is left to the walk that finds it)."""
        if not isinstance(unit, Path):
            raise InputError("not a Crush store: give its data folder (.crush) or crush.db", source=unit.name)
        return _sessions(unit)

    def read(
        self, unit: Source | Path | CrushSession, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        if not isinstance(unit, CrushSession):
            raise InputError("not a Crush session", source=str(unit) if isinstance(unit, Path) else unit.name)
        return read_calls(unit, notes, prompts=prompts, leniency=leniency)

    def session_name(self, unit: Source | Path | CrushSession) -> str:
        """A session's id; a store given whole that holds one session is named as that session."""
        if isinstance(unit, CrushSession):
            return unit.session
        folder = unit if isinstance(unit, Path) else Path(unit.name).parent
        if isinstance(unit, Path) or Path(unit.name).name == DB:
            try:
                held = _sessions(folder)
            except InputError:
                held = []
            if len(held) == 1:
                return str(held[0].session)
        return super().session_name(unit)

    def project(self, unit: Source | Path | CrushSession) -> str | None:
        """The project the session's data folder is of: as `projects.json` lists it, else the folder `.crush` is
        in."""
        return unit.project if isinstance(unit, CrushSession) else None


def _sessions(folder: Path) -> list[CrushSession]:
    stores: list[tuple[Path, str | None]] = []
    if is_crush(folder / DB):
        stores.append((folder / DB, str(folder.resolve().parent) if folder.name == ".crush" else None))
    inside = folder.resolve()
    for data, listed in _registry(folder) or []:
        db = data / DB
        try:
            real = db.resolve()
        except (OSError, RuntimeError, ValueError):  # a symlink loop (RuntimeError to 3.12): no project there
            continue
        if real.is_relative_to(inside) or any(real == s.resolve() for s, _ in stores) or not is_crush(db):
            continue  # under the folder walked (found there), listed twice, or gone with its project
        stores.append((db, listed))
    found: list[CrushSession] = []
    for db, project in stores:
        found += _roots(db, project)
    return found


def _roots(db: Path, project: str | None) -> list[CrushSession]:
    """The database's root sessions with a call in them or their descendants, in the order they began."""
    rows = _query(db, "SELECT * FROM sessions ORDER BY created_at, rowid")
    calls = {str(r["session_id"]) for r in _query(db, "SELECT DISTINCT session_id FROM messages "
                                                       "WHERE role = 'assistant'")}  # fmt: skip
    ids = {str(r["id"]) for r in rows}
    gauges = {str(r["id"]): (_gauge(r, "prompt_tokens"), _gauge(r, "completion_tokens")) for r in rows}
    children: dict[str, list[str]] = {}
    for r in rows:
        parent = r["parent_session_id"]
        if parent is not None and str(parent) in ids:
            children.setdefault(str(parent), []).append(str(r["id"]))
    found = []
    for r in rows:
        parent = r["parent_session_id"]
        if parent is not None and str(parent) in ids:
            continue
        family, todo = [], [str(r["id"])]
        while todo:
            at = todo.pop(0)
            if at not in family:
                family.append(at)
                todo += children.get(at, [])
        if calls & set(family):
            cost = r["cost"] if isinstance(r["cost"], (int, float)) else None
            found.append(CrushSession(db, family[0], tuple(family), project, cost, tuple(gauges[f] for f in family)))
    return found


def read_calls(unit: CrushSession, notes: list[str], *, prompts: bool, leniency: Leniency) -> Iterator[Call]:
    """The calls of a root session and its descendants, in the order they were made."""
    marks = ", ".join("?" * len(unit.family))
    rows = _query(unit.database, f"SELECT rowid AS n, * FROM messages WHERE session_id IN ({marks}) "
                                 "ORDER BY created_at, rowid", unit.family)  # fmt: skip
    names = rows[0].keys() if rows else _MESSAGE_COLUMNS  # a row's `in` is of its values
    missing = [c for c in _MESSAGE_COLUMNS if c not in names]
    if missing:
        raise InputError("no such column", source=str(unit.database), field=f"messages.{missing[0]}")
    by_session: dict[str, list[sqlite3.Row]] = {}
    for row in rows:
        by_session.setdefault(str(row["session_id"]), []).append(row)
    made: list[tuple[float, int, Call]] = []
    empty = sized = 0
    flagged = "is_summary_message" in (rows[0].keys() if rows else ())
    summaries = {str(r["id"]) for r in rows if flagged and r["is_summary_message"]}
    for number, session in enumerate(unit.family):
        unlogged = "system prompt and tools" if number == 0 else f"sub-agent {session}'s system prompt and tools"
        calls = list(_session_calls(by_session.get(session, []), unit.name, unlogged, prompts, leniency,
                                    summaries))  # fmt: skip
        empty += sum(c is None for c in calls)
        kept = [c for c in calls if c is not None]
        prompt, output = unit.gauges[number]
        if kept and prompt and kept[-1].id not in summaries:
            kept[-1] = replace(kept[-1], reported=Usage(prompt=prompt, cached=0, output=output, cached_logged=False))
            sized += 1
        made += [(c.time if c.time is not None else float("inf"), len(made) + n, c) for n, c in enumerate(kept)]
    notes.append("Crush logs no call's usage: each prompt is rebuilt from the stored messages and sized by "
                 "estimate; the system prompt and tools are not stored")  # fmt: skip
    if sized:
        notes.append(f"the last call of {sized} session(s) sized at the prompt and output Crush keeps of it "
                     "(`prompt_tokens`: input and cache reads from 0.36.0, input and cache writes before; "
                     "`completion_tokens`; no cached count), which sizes the system prompt and tools of every "
                     "call")  # fmt: skip
    else:
        notes.append("no call's size kept (a session ending in a summary): each prompt is short of what was sent "
                     "by the system prompt and tools")  # fmt: skip
    if unit.cost is not None:
        notes.append(f"Crush's own cost of this session: ${unit.cost:.8g} at its model table's prices (its "
                     "sub-agents' and title calls included; title calls write no message: not billed "
                     "here)")  # fmt: skip
    if len(unit.family) > 1:
        notes.append(f"{len(unit.family) - 1} sub-agent session(s) read with it")
    if empty:
        notes.append(f"{empty} assistant row(s) with nothing in them (a step that failed or was cancelled before "
                     "it produced anything): not billed")  # fmt: skip
    for _, _, call in sorted(made, key=lambda c: (c[0], c[1])):
        yield call


def _session_calls(rows: list[sqlite3.Row], where: str, unlogged: str, prompts: bool, leniency: Leniency,
                   summaries: set[str]) -> Iterator[Call | None]:  # fmt: skip
    """One session's calls (None: an assistant row that produced nothing), each prompt the rows before it from
    the last summary on."""
    history: list[Message] = []
    compacted = False
    modelled = "model" in (rows[0].keys() if rows else ())  # an optional column: where it is absent, no model
    for row in rows:
        parts = _parts(row["parts"], f"{where} message {row['id']}")
        role = row["role"]
        if role != "assistant":
            if prompts:
                history.extend(_messages(role, parts))
            continue
        reply = _reply(parts)
        if not (reply.content or reply.reasoning or reply.tool_calls):
            yield None
            continue
        try:
            time = timestamp(row["created_at"], field="created_at", leniency=leniency)
        except InputError as exc:
            raise exc.located(source=f"{where} message {row['id']}") from None
        model = row["model"] if modelled and isinstance(row["model"], str) and row["model"] else None
        yield Call(messages=tuple(history) if prompts else None, output=reply, time=time, model=model,
                   id=str(row["id"]), unlogged=unlogged, compacted=compacted)  # fmt: skip
        compacted = False
        if str(row["id"]) in summaries:
            history = [Message(role="user", content=reply.content)]  # sent back as the user's, from here on
            compacted = True
        elif prompts:
            history.append(reply)


def _parts(raw: Any, where: str) -> list[Mapping[str, Any]]:
    try:
        parts = orjson.loads(raw) if isinstance(raw, (str, bytes)) else []
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", source=where, field="parts") from None
    return [p for p in parts if isinstance(p, Mapping) and isinstance(p.get("data"), Mapping)] \
        if isinstance(parts, list) else []  # fmt: skip


def _reply(parts: list[Mapping[str, Any]]) -> Message:
    text, reasoning, calls = [], [], []
    for part in parts:
        kind, data = part.get("type"), part["data"]
        if kind == "text" and isinstance(data.get("text"), str):
            text.append(data["text"])
        elif kind == "reasoning" and isinstance(data.get("thinking"), str):
            reasoning.append(data["thinking"])
        elif kind == "tool_call":
            args = data.get("input", "")
            calls.append(ToolCall(str(data.get("id", "")), str(data.get("name", "")),
                                  args if isinstance(args, str) else compact_json(args)))  # fmt: skip
    return Message(role="assistant", content="".join(text), reasoning="".join(reasoning) or None,
                   tool_calls=tuple(calls))  # fmt: skip


def _messages(role: str, parts: list[Mapping[str, Any]]) -> list[Message]:
    """A user row as the user's message; a tool row as its results, a tool message each."""
    out, text = [], []
    for part in parts:
        kind, data = part.get("type"), part["data"]
        if kind == "tool_result":
            call_id = data.get("tool_call_id")
            out.append(Message(role="tool", content=str(data.get("content", "")),
                               tool_call_id=call_id if isinstance(call_id, str) else None))  # fmt: skip
        elif kind == "text" and isinstance(data.get("text"), str):
            text.append(data["text"])
        elif kind in ("image_url", "binary"):
            text.append(f"<{kind}:{data.get('url') or data.get('path') or ''}>")
    if text or (role == "user" and not out):
        out.insert(0, Message(role="user", content="".join(text)))
    return out


def _gauge(row: sqlite3.Row, column: str) -> int:
    """A session's count of its last call, 0 where none is kept (or a bad one)."""
    names = row.keys()
    value = row[column] if column in names else None
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT else 0


def _query(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
    return sqlite.query(db, _WHAT, sql, args, checkpointed=True)


def _columns(db: Path, table: str) -> set[str]:
    return sqlite.columns(db, _WHAT, table)
