"""Goose's sessions (`~/.local/share/goose/sessions/sessions.db`): what each session's calls would cost on K3.

Goose (block/goose, now aaif-goose/goose) keeps every session in one SQLite database, `sessions/sessions.db` under
its data folder (`Paths::data_dir` in `crates/goose/src/config/paths.rs`: `$GOOSE_PATH_ROOT/data`, else the XDG
data folder, `~/.local/share/goose`), written in WAL mode (`SessionStorage` in
`crates/goose/src/session/session_manager.rs`). Since its schema's version 15 each provider response is a row of
`usage_ledger` (`record_usage_metrics`, `insert_usage_ledger_row`): `created_timestamp` (epoch seconds), `model`,
`input_tokens`, `output_tokens`, `total_tokens`, `cache_read_tokens`, `cache_write_tokens`, `cost`,
`cost_source`, `is_compaction` (a compaction's summary call). Goose's `input_tokens` holds the cache reads and
writes (`crates/goose-providers/src/formats/anthropic.rs`: `input_tokens + cache_creation + cache_read`, the two
kept apart in `cache_read_tokens` and `cache_write_tokens`), so the prompt is `input_tokens`, of which
`cache_read_tokens` were read and `cache_write_tokens` written; the output is `output_tokens` and whatever
`total_tokens` counts past input and output (a provider's reasoning counted apart, as Gemini's thoughts), as
ccusage counts it. A `carried_forward` row (the totals of the calls made before the ledger existed, written when a
database is upgraded, `record_usage_metrics`) is dated when its session began, not when it was written.

A session without ledger rows (a database older than version 15) has only `accumulated_*_tokens`, its running
totals (`accumulated_x = accumulated_x + ?` each call), billed as one call of those totals; a session without
them either has only the last call's counts (`input_tokens`...), billed so, with a note. ccusage 20.0.24 reads
only these session rows: it bills the cached tokens as uncached input (no cache columns read), and drops a
session without `model_config_json`. Sub-agents' sessions are sessions of their own (`parent_session_id`).
Goose keeps the messages (`messages.content_json`), but not which call each ledger row answered: each call is
billed as reported.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Usage, timestamp
from kcost.model.frozen import frozen
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.sqlite import SQLITE, columns, query
from kcost.readers.usage import MAX_COUNT

_WHAT = "Goose session database"
_SESSION = ("id", "working_dir", "created_at", "input_tokens", "output_tokens")
_LEDGER = ("id", "session_id", "created_timestamp", "model", "input_tokens", "output_tokens")


@frozen
class GooseSession:
    """One session of a Goose database: the unit `claim` makes of it."""

    database: str
    session: str
    row: Mapping[str, Any]  # its `sessions` row
    ledger: bool  # the database has a usage ledger

    @property
    def name(self) -> str:
        return f"{self.database}#{self.session}"


class Goose(Reader):
    name = "goose"
    one_call = "a `usage_ledger` row (older databases: a session's running totals)"
    usage_read = (
        "`input_tokens` (holds `cache_read_tokens` and `cache_write_tokens`), `output_tokens` + what "
        "`total_tokens` counts past both"
    )
    source_read = "block/goose `crates/goose/src/session/session_manager.rs`, `goose-providers/src/formats`"
    comparable = False  # whichever provider's cache served it: its hits need not be Kimi's
    suffixes = (".db",)

    def recognise(self, source: Source) -> bool:
        """A SQLite database whose `sessions` table has Goose's columns and beside it a `messages` table of
        `content_json`."""
        if source.name == "-" or source.head(16) != SQLITE:
            return False
        try:
            return set(_SESSION) <= columns(source.path, _WHAT, "sessions") and "content_json" in columns(
                source.path, _WHAT, "messages")  # fmt: skip
        except InputError:
            return False

    def claim(self, unit: Source | Path | GooseSession, *, prompts: bool = True) -> Any:
        """Every session of the database, in the order they were created."""
        if isinstance(unit, GooseSession):
            return unit
        if isinstance(unit, Path) or unit.name == "-":
            raise InputError("not a Goose database: give its sessions/sessions.db", source=str(unit))
        ledger = set(_LEDGER) <= columns(unit.path, _WHAT, "usage_ledger")
        rows = query(unit.path, _WHAT, "SELECT * FROM sessions ORDER BY created_at, id")
        return [GooseSession(unit.name, str(r["id"]), dict(r), ledger) for r in rows if r["id"] is not None]

    def read(
        self, unit: Source | Path | GooseSession, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        if not isinstance(unit, GooseSession):
            raise InputError("not a Goose session", source=str(unit))
        return _calls(unit, notes, leniency)

    def session_name(self, unit: Source | Path | GooseSession) -> str:
        return unit.session if isinstance(unit, GooseSession) else super().session_name(unit)

    def project(self, unit: Source | Path | GooseSession) -> str | None:
        """The session's `working_dir`."""
        directory = unit.row.get("working_dir") if isinstance(unit, GooseSession) else None
        return directory if isinstance(directory, str) and directory else None


def _calls(unit: GooseSession, notes: list[str], leniency: Leniency) -> Iterator[Call]:
    """The session's ledger rows, in order; where it has none, its running totals, else its last call."""
    row = unit.row
    try:
        began = timestamp(row.get("created_at"), field="created_at", leniency=leniency)
    except InputError as exc:
        raise exc.located(source=unit.name) from None
    fallback = _session_model(row)
    rows = []
    if unit.ledger:
        rows = query(unit.database, _WHAT, "SELECT * FROM usage_ledger WHERE session_id = ? "
                                           "ORDER BY created_timestamp, id", (unit.session,))  # fmt: skip
    if rows:
        notes.append("Goose logs each call's counts, not which messages it was sent: billed as reported")
        for ledger in rows:
            values = dict(ledger)
            at = f"{unit.name} (usage_ledger {values['id']})"
            carried = values.get("cost_source") == "carried_forward"
            try:
                usage = _usage(values, "")
                when = began if carried else timestamp(values["created_timestamp"], field="created_timestamp",
                                                       leniency=leniency)  # fmt: skip
            except InputError as exc:
                leniency.forgive(exc.located(source=at))
                continue
            if usage.empty:
                continue
            if carried:
                notes.append("the calls made before Goose kept its usage ledger: one call of their totals")
            model = values.get("model")
            yield Call(messages=None, time=when, model=model if isinstance(model, str) and model else fallback,
                       reported=usage, id=str(values["id"]))  # fmt: skip
        return
    kind = "accumulated_" if row.get("accumulated_input_tokens") is not None else ""
    try:
        usage = _usage(row, kind)
    except InputError as exc:
        leniency.forgive(exc.located(source=unit.name))
        return
    if usage.empty:
        return
    notes.append(
        "Goose kept this session's running totals, not its calls: one call of its totals"
        if kind
        else "Goose kept only this session's last call: the calls before it are not billed"
    )
    yield Call(messages=None, time=began, model=fallback, reported=usage, id=unit.session)


def _session_model(row: Mapping[str, Any]) -> str | None:
    """The session's model as last set (`model_config_json.model_name`)."""
    raw = row.get("model_config_json")
    try:  # orjson: a document nested past its 1,024 levels is bad JSON, not a RecursionError
        config = orjson.loads(raw) if isinstance(raw, (str, bytes)) else None
    except orjson.JSONDecodeError:
        return None
    name = config.get("model_name") if isinstance(config, Mapping) else None
    return name if isinstance(name, str) and name else None


def _usage(row: Mapping[str, Any], kind: str) -> Usage:
    """The counts of a ledger row (`kind` ""), or of a session row's last call ("") or totals ("accumulated_"):
    the caches inside `input_tokens`, what `total_tokens` counts past input and output added to the output."""
    prompt, output = _count(row, f"{kind}input_tokens"), _count(row, f"{kind}output_tokens")
    read, written = _count(row, f"{kind}cache_read_tokens"), _count(row, f"{kind}cache_write_tokens")
    total = _count(row, f"{kind}total_tokens")
    extra = max(0, total - prompt - output)
    cached = min(read, prompt)
    return Usage(prompt=prompt, cached=cached, output=output + extra, written=min(written, prompt - cached),
                 reasoning=extra or None)  # fmt: skip


def _count(row: Mapping[str, Any], column: str) -> int:
    value = row.get(column)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"expected a whole number >= 0, got {str(value)[:40]!r}", field=column)
    if not 0 <= value <= MAX_COUNT:
        raise InputError(f"not a token count: {value}", field=column)
    return value
