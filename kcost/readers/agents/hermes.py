"""Hermes Agent sessions (`~/.hermes/state.db`): what each session cost, as logged.

Hermes Agent (NousResearch/hermes-agent) keeps every session in one SQLite database, `state.db` in its home
(`hermes_constants.py`, `get_hermes_home`: `HERMES_HOME`, else `~/.hermes`; `hermes_state.py`, `DEFAULT_DB_PATH`),
in WAL mode, written by several processes at once; a named profile has its own home under `profiles/<name>/`
(`named_profile_home`). Its `sessions` table has a row a session (`hermes_state.py`, `SCHEMA_SQL`): `id`, `source`,
`model`, `parent_session_id` (a compaction's continuation, a delegated sub-agent, a branch: each a session with
counts of its own), `started_at` (epoch seconds), `api_call_count` and the session's token counters, running
totals that each model call adds to (`update_token_counts`; the gateway sets them whole). Newer databases split
the counters by model and provider in `session_model_usage` (`hermes_state_usage.py`), with each row's
`api_call_count` and `first_seen`.

Hermes normalises every provider's usage before adding it up (`agent/usage_pricing.py`, `normalize_usage`):
`input_tokens` is what neither read nor wrote the cache (OpenAI's cached tokens taken out of its prompt), so the
prompt is `input_tokens + cache_read_tokens + cache_write_tokens`, the cached tokens `cache_read_tokens`, the
writes `cache_write_tokens` (their lifetime not kept); `output_tokens` holds the reasoning, of which
`reasoning_tokens` is the count (OpenAI's `completion_tokens_details.reasoning_tokens`; Hermes prices the output
alone). ccusage 20.0.24 (`rust/crates/ccusage/src/adapter/hermes/`) bills `reasoning_tokens` on top of the output,
reads only `<home>/state.db` (not the profiles') and skips a session whose `model` is not set.

Nothing logs a call's usage: each session is billed as reported, as one call dated at its start (one per model
where `session_model_usage` splits it, dated when the model was first seen). The messages are kept too
(`messages`), but a prompt rebuilt from them could not be sized call by call. A database is opened read-only
(Hermes may be writing it: WAL lets it) and never changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Usage, timestamp
from kcost.model.frozen import frozen
from kcost.pricing.providers import wire as providers_wire
from kcost.readers import sqlite
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.usage import parse_usage

if TYPE_CHECKING:
    pass

DB = "state.db"
_WHAT = "Hermes database"
_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
_NEEDED = {"id", "model", "started_at", "input_tokens", "output_tokens"}  # a `sessions` table Hermes wrote


@frozen
class HermesSession:
    """One session of a Hermes database: the unit `claim` makes of a home."""

    database: Path
    session: str
    rows: tuple[Mapping[str, Any], ...]  # its counters: its `sessions` row, or its `session_model_usage` rows
    split: bool  # the rows are `session_model_usage`'s (a row a model)
    started: Any = None  # its `started_at`
    cwd: str | None = None

    @property
    def name(self) -> str:  # how the run names where the session came from
        return f"{self.database}#{self.session}"


def is_hermes(db: Path) -> bool:
    """Whether `db` is a SQLite database whose `sessions` table is Hermes's (a `state.db` of another program is
    none)."""
    if not sqlite.is_sqlite(db):
        return False
    try:
        return _columns(db, "sessions") >= _NEEDED
    except InputError:
        return False


class Hermes(Reader):
    name = "hermes"
    one_call = "a session: its `sessions` row's running totals (a model's, where `session_model_usage` splits it)"
    usage_read = (
        "`input_tokens + cache_read_tokens + cache_write_tokens` (the first holds neither), `output_tokens` "
        "(holds `reasoning_tokens`)"
    )
    source_read = "NousResearch/hermes-agent `hermes_state.py`, `agent/usage_pricing.py` (`normalize_usage`)"
    comparable = False  # whichever provider's cache served it: its hits need not be Kimi's

    def is_session_folder(self, folder: Path) -> bool:
        """A Hermes home: a folder holding Hermes's `state.db`."""
        return is_hermes(folder / DB)

    def folder_of(self, file: Path) -> Path | None:
        return file.parent if file.name == DB and is_hermes(file) else None

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> list[Any]:
        """Every session of the home's database that spent tokens."""
        if not isinstance(unit, Path):
            raise InputError("not a Hermes home: give the folder holding state.db", source=unit.name)
        return sessions(unit / DB)

    def read(
        self, unit: Source | Path | HermesSession, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        if not isinstance(unit, HermesSession):
            raise InputError("not a Hermes session", source=str(unit) if isinstance(unit, Path) else unit.name)
        return read_calls(unit, notes, leniency=leniency)

    def session_name(self, unit: Source | Path | HermesSession) -> str:
        if isinstance(unit, HermesSession):
            return unit.session
        return unit.name if isinstance(unit, Path) else unit.stem

    def project(self, unit: Source | Path | HermesSession) -> str | None:
        """The session's working directory, where its row keeps one (`sessions.cwd`, newer databases)."""
        return unit.cwd if isinstance(unit, HermesSession) else None


def sessions(db: Path) -> list[HermesSession]:
    """The database's sessions that spent tokens, in the order they started: each with its `sessions` row, or its
    `session_model_usage` rows where that table splits it by model."""
    have = _columns(db, "sessions")
    counts: list[str] = [c for c in _COUNTS if c in have]
    extra: list[str] = [c for c in ("api_call_count", "cwd", "parent_session_id") if c in have]
    rows = _query(db, f"SELECT id, model, started_at, {', '.join(counts + extra)} FROM sessions "
                      "ORDER BY started_at, id")  # fmt: skip
    split: dict[str, list[Mapping[str, Any]]] = {}
    usage = _columns(db, "session_model_usage")
    if {"session_id", "model", "input_tokens", "output_tokens"} <= usage:
        chosen = [c for c in (*_COUNTS, "api_call_count", "first_seen") if c in usage]
        order = "first_seen, model" if "first_seen" in usage else "model"
        for row in _query(db, f"SELECT session_id, model, {', '.join(chosen)} FROM session_model_usage "
                              f"ORDER BY session_id, {order}"):  # fmt: skip
            split.setdefault(str(row["session_id"]), []).append(dict(row))
    out = []
    for row in rows:
        session = str(row["id"])
        own = split.get(session)
        kept = tuple(own) if own else (dict(row),)
        if not any(isinstance(r.get(c), int) and r.get(c) for r in kept for c in _COUNTS):
            continue  # a session that spent nothing (never called a model)
        cwd = row["cwd"] if "cwd" in extra else None
        out.append(HermesSession(db, session, kept, bool(own), row["started_at"],
                                 cwd if isinstance(cwd, str) and cwd else None))  # fmt: skip
    return out


def read_calls(unit: HermesSession, notes: list[str], *, leniency: Leniency) -> Iterator[Call]:
    """One call per counters' row: the session's, or each model's."""
    calls = 0
    for n, row in enumerate(unit.rows):
        where = f"session_model_usage[{n}]" if unit.split else "sessions"
        try:
            usage = _usage(row, where, leniency)
            seen = row.get("first_seen") if unit.split else None
            when, named = (seen, f"{where}.first_seen") if seen is not None else (unit.started, "sessions.started_at")
            time = timestamp(when, field=named, leniency=leniency)
        except InputError as exc:
            raise exc.located(source=unit.name) from None
        if usage is None or usage.empty:
            continue
        api = row.get("api_call_count")
        calls += api if isinstance(api, int) and api > 0 else 0
        model = row.get("model")
        yield Call(messages=None, time=time, model=model if isinstance(model, str) and model.strip() else None,
                   reported=usage, id=unit.session if not unit.split else f"{unit.session}#{n}")  # fmt: skip
    said = f" ({calls} model calls)" if calls else ""
    notes.append(f"Hermes keeps running totals a session{said}: billed as reported, dated at its start"
                 if not unit.split else
                 f"Hermes keeps running totals a session and model{said}: billed as reported, each dated when its "
                 "model was first seen")  # fmt: skip


def _usage(row: Mapping[str, Any], where: str, leniency: Leniency) -> Usage | None:
    """A row's counters (NULL: 0) as a `Usage`: prompt = input + cache reads + cache writes, the reasoning of the
    output."""
    wire = {name: 0 if row.get(column) is None else row.get(column) for name, column in (
        ("input_tokens", "input_tokens"), ("cache_read_input_tokens", "cache_read_tokens"),
        ("cache_creation_input_tokens", "cache_write_tokens"), ("output_tokens", "output_tokens"))}  # fmt: skip
    try:
        usage = parse_usage(wire, providers_wire.ANTHROPIC.scheme, where=where)
    except InputError as exc:
        names = {"cache_read_input_tokens": "cache_read_tokens", "cache_creation_input_tokens": "cache_write_tokens"}
        field = (exc.field or "").removeprefix(f"{where}.")
        exc.field = f"{where}.{names.get(field, field)}"
        leniency.forgive(exc)
        return None
    reasoning = row.get("reasoning_tokens")
    if usage is not None and type(reasoning) is int and reasoning > 0:
        return Usage(prompt=usage.prompt, cached=usage.cached, output=usage.output, written=usage.written,
                     reasoning=min(reasoning, usage.output))  # fmt: skip
    return usage


def _query(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
    return sqlite.query(db, _WHAT, sql, args)


def _columns(db: Path, table: str) -> set[str]:
    return sqlite.columns(db, _WHAT, table)
