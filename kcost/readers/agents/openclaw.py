"""OpenClaw's sessions (`~/.openclaw/agents/<agent>/`): what each would cost on K3.

OpenClaw (openclaw/openclaw, once Clawdbot and Moltbot) keeps its state in `OPENCLAW_STATE_DIR`, else
`~/.openclaw` (`resolveStateDir` in `src/config/paths.ts`; an older `~/.clawdbot`, `~/.moltbot` or `~/.moldbot`
where that is missing), a folder per agent under `agents/` (`main` by default). It embeds pi's session manager, so
a transcript is pi's (`kcost.readers.agents.pi_agent`): a `session` header (version 4 from 2026.9), then
`message`, `model_change`, `custom` (`model-snapshot`)... entries, an `assistant` message with `usage` one call:
`input` (without the cache), `cacheRead`, `cacheWrite`, `output` (the reasoning in it; `reasoningTokens` its share,
as OpenClaw 2026.9.6 logged a completion of 300 tokens, 40 of them reasoning: `output: 300, reasoningTokens: 40`).
OpenClaw's own reader sums them so (`derivePromptTokens` in `src/agents/usage.ts`): the prompt is `input +
cacheRead + cacheWrite`, the output `output`, as ccusage 20.0.24 reads them too.

Two stores. Up to 2026.5 a transcript a file in `agents/<agent>/sessions/` (`<session>.jsonl`, a thread's
`<session>-topic-<topic>.jsonl`; `src/config/sessions/paths.ts`), with the archives of a reset or deleted session
beside it (`<session>.jsonl.reset.<time>`, `.deleted.<time>`, compressed ones ending `.zst`) and, before each
compaction, a copy of the transcript so far (`<session>.checkpoint.<uuid>.jsonl`, `src/config/sessions/artifacts.ts`):
that copy's calls are the transcript's, billed once there (ccusage 20.0.24 bills them again, as a session of
their own). From 2026.9 one database per agent, `agents/<agent>/agent/openclaw-agent.sqlite`, its `transcript_events`
each entry of each session (`session_id`, `seq`, `event_json`); an event of 1 KiB or more is stored compressed
with zstd instead (`event_zstd`, `navigation_json` its outline without the usage; 2026.9.6
`dist/transcript-payload-*.mjs`), which ccusage 20.0.24 skips without a word: kcost reads them (and compressed
archives), by Python's own zstd decoder from 3.14 on, else by the `zstandard` library, each bounded in size.
The prompts are rebuilt as pi's are; the system prompt and tools are not logged.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from kcost.errors import InputError, Leniency
from kcost.inputs.files import MiB, read_bytes
from kcost.model.calls import Call
from kcost.model.frozen import frozen
from kcost.readers.agents.pi_agent import calls, is_header, whole_records
from kcost.readers.registry import Reader
from kcost.readers.source import Source, open_source
from kcost.readers.sqlite import is_sqlite, query

_DB = "openclaw-agent.sqlite"
_WHAT = "OpenClaw agent database"
_TRANSCRIPT_BYTES = 2 * 2**30  # the most an archive may inflate to (a transcript of a whole session)
_EVENT_BYTES = 64 * 2**20  # the most one compressed event may inflate to
_TRANSCRIPT = re.compile(r"(?P<session>.+?)\.jsonl(\.(reset|deleted)\.[^/]+?)?(?P<zst>\.zst)?")
_CHECKPOINT = re.compile(r"(?P<session>.+)\.checkpoint\.[0-9a-fA-F-]+\.jsonl")
_NOT_TRANSCRIPTS = (".trajectory.jsonl", ".trajectory-path.json")
_KINDS = {"session", "message", "model_change", "thinking_level_change", "compaction", "branch_summary", "custom",
          "custom_message", "label", "session_info"}  # fmt: skip


@frozen
class ClawFile:
    """One transcript file of a sessions folder: a unit `claim` makes of the folder."""

    path: str

    @property
    def name(self) -> str:
        return self.path


@frozen
class ClawDb:
    """One session of an agent database."""

    database: str
    session: str
    passed: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.database}#{self.session}"


def _unzstd(data: bytes, limit: int) -> bytes:
    """A zstd frame's bytes, at most `limit` of them (more is an error: a frame that would inflate past any real
    event or transcript); by Python's own decoder where it has one (3.14 on), else by `zstandard`."""
    try:
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]

        reader: Any = zstd.ZstdFile(io.BytesIO(data))
    except ImportError:
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
    out = bytearray()
    with reader:  # a mebibyte at a time: what is held grows with what the frame holds, never with `limit`
        while len(out) <= limit and (block := reader.read(min(MiB, limit + 1 - len(out)))):
            out += block
    if len(out) > limit:
        raise ValueError(f"it inflates past {limit:,} bytes")
    return bytes(out)


def _in_sessions_folder(path: Path) -> bool:
    return path.parent.name == "sessions" and path.parent.parent.parent.name == "agents"


class OpenClaw(Reader):
    name = "openclaw"
    one_call = "an `assistant` message entry with `usage` (a transcript line, or a `transcript_events` row)"
    usage_read = "`usage.input + cacheRead + cacheWrite` (`input` without the cache), `usage.output` (reasoning in it)"
    source_read = "openclaw/openclaw `src/agents/usage.ts`, `src/config/sessions/`; 2026.9.6 `dist/` (its store)"
    comparable = False  # whichever provider's cache served it: its hits need not be Kimi's

    def recognise(self, source: Source) -> bool:
        """A pi transcript that OpenClaw wrote: a version-4 header, OpenClaw's own fields, or in an agent's sessions
        folder (`agents/<agent>/sessions/`)."""
        first = source.first_record
        if not isinstance(first, Mapping):
            return False
        if is_header(first) and isinstance(first.get("version"), int) and first["version"] >= 4:
            return True
        if source.name != "-" and _in_sessions_folder(Path(source.name)) and first.get("type") in _KINDS:
            return True
        return is_header(first) and source.contains(b'"__openclaw"')

    def is_session_folder(self, folder: Path) -> bool:
        """An agent's database folder (`agents/<agent>/agent/`), or its sessions folder of transcripts."""
        if is_sqlite(str(folder / _DB)):
            return True
        return folder.name == "sessions" and folder.parent.parent.name == "agents" and folder.is_dir()

    def folder_of(self, file: Path) -> Path | None:
        """An agent database's folder."""
        return file.parent if file.name == _DB and is_sqlite(str(file)) else None

    def claim(self, unit: Source | Path | ClawFile | ClawDb, *, prompts: bool = True) -> Any:
        """A database folder: each session of its database; a sessions folder: each transcript (a compaction's
        copy of one that is there left out, and a compressed one this Python cannot open said in the others'
        notes); a file: itself."""
        if not isinstance(unit, Path):
            return unit
        if is_sqlite(str(unit / _DB)):
            return _db_sessions(str(unit / _DB))
        return _file_sessions(unit)

    def read(
        self, unit: Source | Path | ClawFile | ClawDb, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        if isinstance(unit, ClawDb):
            notes += unit.passed
            return _db_calls(unit, notes, prompts=prompts, leniency=leniency)
        if isinstance(unit, ClawFile):
            return _file_calls(unit.path, notes, prompts=prompts, leniency=leniency)
        if isinstance(unit, Source):
            return calls(whole_records(unit, notes), unit.name, prompts=prompts, leniency=leniency)
        raise InputError("not an OpenClaw session", source=str(unit))

    def session_name(self, unit: Source | Path | ClawFile | ClawDb) -> str:
        if isinstance(unit, ClawDb):
            return unit.session
        name = Path(unit.path).name if isinstance(unit, ClawFile) else Path(str(unit if isinstance(unit, Path)
                                                                                 else unit.name)).name  # fmt: skip
        found = _TRANSCRIPT.fullmatch(name)
        return found.group("session") if found else name

    def project(self, unit: Source | Path | ClawFile | ClawDb) -> str | None:
        """The working directory the transcript's header names (`cwd`)."""
        if isinstance(unit, ClawFile) and not unit.path.endswith(".zst"):
            unit = open_source(unit.path)
        if isinstance(unit, Source):
            return unit.first_string("cwd")
        if isinstance(unit, ClawDb):
            rows = query(unit.database, _WHAT, "SELECT event_json FROM transcript_events WHERE session_id = ? "
                                               "ORDER BY seq LIMIT 1", (unit.session,))  # fmt: skip
            text = rows[0]["event_json"] if rows else None
            try:
                header = orjson.loads(text) if isinstance(text, (str, bytes)) and text else None
            except orjson.JSONDecodeError:  # said where the session is read
                return None
            cwd = header.get("cwd") if isinstance(header, Mapping) else None
            return cwd if isinstance(cwd, str) and cwd else None
        return None


def _file_sessions(folder: Path) -> list[ClawFile]:
    """The transcripts of a sessions folder, in name order (compressed ones too): a compaction's copy left out where
    its session's transcript is there."""
    files = sorted(f for f in folder.iterdir() if f.is_file() and not f.name.endswith(_NOT_TRANSCRIPTS))
    names = [f.name for f in files if _TRANSCRIPT.fullmatch(f.name)]
    held = {m.group("session") for n in names if (m := _TRANSCRIPT.fullmatch(n)) and not _CHECKPOINT.fullmatch(n)}
    kept = []
    for name in names:
        copy = _CHECKPOINT.fullmatch(name)
        if copy and copy.group("session") in held:
            continue
        kept.append(str(folder / name))
    return [ClawFile(path) for path in kept]


def _file_calls(path: str, notes: list[str], *, prompts: bool, leniency: Leniency) -> Iterator[Call]:
    if path.endswith(".zst"):
        packed = read_bytes(path, "OpenClaw archive")  # through the one opener, bounded (`LIMITS`)
        try:
            data = _unzstd(packed, _TRANSCRIPT_BYTES)
        except Exception as exc:  # noqa: BLE001  (the decoder's own error type)
            raise InputError(f"not a zstd archive: {exc}", source=path) from None
        source = Source(path, data)
    else:
        source = open_source(path)
    return calls(whole_records(source, notes), path, prompts=prompts, leniency=leniency)


def _db_sessions(db: str) -> list[ClawDb]:
    """The sessions of an agent database with events, in the order of their first."""
    rows = query(db, _WHAT, "SELECT session_id, MIN(created_at) AS first FROM transcript_events "
                            "GROUP BY session_id ORDER BY first, session_id")  # fmt: skip
    return [ClawDb(db, str(r["session_id"])) for r in rows]


def _db_calls(unit: ClawDb, notes: list[str], *, prompts: bool, leniency: Leniency) -> Iterator[Call]:
    rows = query(unit.database, _WHAT, "SELECT seq, event_json, event_zstd, navigation_json FROM transcript_events "
                                       "WHERE session_id = ? ORDER BY seq", (unit.session,))  # fmt: skip
    return calls(_events(unit, rows), unit.name, prompts=prompts, leniency=leniency)


def _events(unit: ClawDb, rows: list[Any]) -> Iterator[tuple[int, Any]]:
    """Each event of the session (its `seq` as its line), a compressed one decompressed."""
    for row in rows:
        text = row["event_json"]
        if text is None and row["event_zstd"] is not None:
            try:
                text = _unzstd(bytes(row["event_zstd"]), _EVENT_BYTES).decode("utf-8")
            except Exception as exc:  # noqa: BLE001  (the decoder's own error type)
                raise InputError(f"a compressed event that is not zstd: {exc}", source=unit.name,
                                 line=row["seq"]) from None  # fmt: skip
        if text is None:
            continue
        if not isinstance(text, (str, bytes)):
            raise InputError(f"expected JSON text, got {type(text).__name__}", source=unit.name, line=row["seq"],
                             field="event_json")  # fmt: skip
        try:  # orjson: a document nested past its 1,024 levels is bad JSON, not a RecursionError
            event = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", source=unit.name, line=row["seq"],
                             field="event_json") from None  # fmt: skip
        yield row["seq"], event
