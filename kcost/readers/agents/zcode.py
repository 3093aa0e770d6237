"""ZCode's usage ledger (`~/.zcode/cli/db/db.sqlite`): what each session's requests would cost on K3.

ZCode (Z.ai's desktop app and its bundled CLI; closed source) keeps one SQLite database under its home
(`ZCODE_HOME`, else `~/.zcode`) at `cli/db/db.sqlite`, written in WAL mode while it runs. Its table `model_usage`
holds one row per model request: `id`, `session_id`, `started_at` (epoch milliseconds), `model_id`,
`provider_id`, `status` (`completed`, `error`, `cancelled`, `running`), `input_tokens`, `output_tokens`,
`cache_read_input_tokens`, `cache_creation_input_tokens`, `computed_total_tokens` and, in the databases seen, the
request's `turn_id`, `attempt_index` (a retry), `query_source` (`main_turn`, a title's generation...) and
`reasoning_tokens`; the table `session` names each session's `directory`. The columns read and what they mean are
those of ccusage (ccusage/ccusage `rust/adapters/zcode/src/loader.rs`, `parser.rs` and `README.md`), which probes
the optional ones by name, as this reader does: `input_tokens` holds the cache reads and writes
(`computed_total_tokens` = input + output), and `reasoning_tokens` is part of `output_tokens`. So the prompt is
`input_tokens`, of which `cache_read_input_tokens` were read and `cache_creation_input_tokens` written, the output
`output_tokens`; where a row's `computed_total_tokens` is input + output + reasoning instead, the reasoning was
counted apart and is added to the output. Only `completed` rows are billed (an error or a cancel records no
tokens; a running row is billed once it completes), as ccusage bills them; title and other side calls are
requests too, and are billed. The ledger holds counts only (no prompt): each request is billed as reported.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Usage, timestamp
from kcost.model.frozen import frozen
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.sqlite import SQLITE, columns, query
from kcost.readers.usage import MAX_COUNT

if TYPE_CHECKING:
    pass

_WHAT = "ZCode database"
_REQUIRED = ("id", "session_id", "started_at", "model_id", "status", "input_tokens", "output_tokens")
_OPTIONAL = ("cache_read_input_tokens", "cache_creation_input_tokens", "computed_total_tokens", "reasoning_tokens")


@frozen
class ZcodeSession:
    """One session of a ZCode ledger: the unit `claim` makes of the database."""

    database: str
    session: str
    directory: str | None
    columns: tuple[str, ...]  # the optional columns the ledger has

    @property
    def name(self) -> str:
        return f"{self.database}#{self.session}"


class Zcode(Reader):
    name = "zcode"
    one_call = "a `completed` row of `model_usage`"
    usage_read = (
        "`input_tokens` (holds `cache_read_input_tokens` and `cache_creation_input_tokens`), `output_tokens` "
        "(holds `reasoning_tokens`)"
    )
    source_read = "ccusage `rust/adapters/zcode/src/loader.rs`, `parser.rs` (closed agent)"
    comparable = False  # Z.ai's cache (or a custom provider's): its hits say nothing of K3's
    suffixes = (".sqlite",)

    def recognise(self, source: Source) -> bool:
        """A SQLite database whose `model_usage` table has the columns ZCode's ledger has."""
        if source.name == "-" or source.head(16) != SQLITE:
            return False
        try:
            return set(_REQUIRED) <= columns(source.path, _WHAT, "model_usage")
        except InputError:
            return False

    def claim(self, unit: Source | Path | ZcodeSession, *, prompts: bool = True) -> Any:
        """The ledger's sessions with a completed request, in the order of their first."""
        if isinstance(unit, ZcodeSession):
            return unit
        if isinstance(unit, Path) or unit.name == "-":
            raise InputError("not a ZCode database: give its cli/db/db.sqlite", source=str(unit))
        path = unit.path
        have = columns(path, _WHAT, "model_usage")
        if not set(_REQUIRED) <= have:
            missing = ", ".join(c for c in _REQUIRED if c not in have)
            raise InputError(f"not a ZCode database: model_usage lacks {missing}", source=unit.name)
        sessions = query(
            path,
            _WHAT,
            "SELECT session_id, MIN(started_at) AS first FROM model_usage "
            "WHERE status = 'completed' GROUP BY session_id ORDER BY first, session_id",
        )
        directory: dict[str, str] = {}
        if {"id", "directory"} <= columns(path, _WHAT, "session"):
            for row in query(path, _WHAT, "SELECT id, directory FROM session"):
                if isinstance(row["directory"], str) and row["directory"].strip():
                    directory[str(row["id"])] = row["directory"]
        optional = tuple(c for c in _OPTIONAL if c in have)
        return [ZcodeSession(unit.name, str(r["session_id"]), directory.get(str(r["session_id"])), optional)
                for r in sessions if r["session_id"] is not None]  # fmt: skip

    def read(
        self, unit: Source | Path | ZcodeSession, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        if not isinstance(unit, ZcodeSession):
            raise InputError("not a ZCode session", source=str(unit))
        return _calls(unit, notes, leniency)

    def session_name(self, unit: Source | Path | ZcodeSession) -> str:
        if isinstance(unit, ZcodeSession):
            return unit.session
        return super().session_name(unit)

    def project(self, unit: Source | Path | ZcodeSession) -> str | None:
        """The session's `directory`."""
        return unit.directory if isinstance(unit, ZcodeSession) else None


def _calls(unit: ZcodeSession, notes: list[str], leniency: Leniency) -> Iterator[Call]:
    """One call per completed request, in the order they started."""
    wanted = ", ".join(("id", "started_at", "model_id", "input_tokens", "output_tokens", *unit.columns))
    rows = query(
        unit.database,
        _WHAT,
        f"SELECT {wanted} FROM model_usage WHERE session_id = ? AND status = 'completed' ORDER BY started_at, id",
        (unit.session,),
    )
    running = query(unit.database, _WHAT, "SELECT COUNT(*) AS n FROM model_usage WHERE session_id = ? "
                                          "AND status = 'running'", (unit.session,))[0]["n"]  # fmt: skip
    notes.append("ZCode's ledger holds each request's counts, not its prompt: billed as reported")
    if running:
        notes.append(f"{running} request(s) still running when the ledger was read: not billed")
    for row in rows:
        values = dict(row)
        at = f"{unit.name} (model_usage {values['id']})"
        try:
            usage = _usage(values)
            time = timestamp(values["started_at"], field="started_at", per_second=1000, leniency=leniency)
        except InputError as exc:
            leniency.forgive(exc.located(source=at))
            continue
        model = values["model_id"].strip() if isinstance(values["model_id"], str) else ""
        if not model or not time or usage.empty:  # as ccusage: no model, no time, or nothing billed
            continue
        yield Call(messages=None, time=time, model=model, reported=usage, id=str(values["id"]))


def _usage(row: Mapping[str, Any]) -> Usage:
    """A row's counts as a `Usage`: the caches are inside `input_tokens`, the reasoning inside `output_tokens`
    unless `computed_total_tokens` counts it apart."""
    prompt, output = _count(row, "input_tokens"), _count(row, "output_tokens")
    read, written = _count(row, "cache_read_input_tokens"), _count(row, "cache_creation_input_tokens")
    reasoning = _count(row, "reasoning_tokens") if row.get("reasoning_tokens") is not None else None
    total = row.get("computed_total_tokens")
    if reasoning and total == prompt + output + reasoning:
        output += reasoning
    cached = min(read, prompt)
    return Usage(prompt=prompt, cached=cached, output=output, written=min(written, prompt - cached),
                 reasoning=None if reasoning is None else min(reasoning, output))  # fmt: skip


def _count(row: Mapping[str, Any], column: str) -> int:
    value = row.get(column)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"expected a whole number >= 0, got {str(value)[:40]!r}", field=column)
    if not 0 <= value <= MAX_COUNT:
        raise InputError(f"not a token count: {value}", field=column)
    return value
