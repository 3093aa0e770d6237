"""Finding sessions: each path's format, from its name and first record, and the session every unit makes.

Turn specs are chosen by suffix or content; a log by the first reader of `registry.READERS` whose `detect`
takes its first record. A folder is walked: folders a reader claims as sessions first, then every file. Each
unit is offered to its reader (`Reader.claim`) before it is read: files a format joins into one session are
read together once every unit is found, after the sessions read alone. Nothing here names a reader.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kcost.errors import InputError, Leniency
from kcost.readers.registry import READERS, TURN_FORMATS, Part, Reader, entry
from kcost.readers.source import Source, open_source
from kcost.session import Session
from kcost.transcripts.tokenizer import Estimate, TokenCounter

_SUFFIXES = (".jsonl", ".json", ".yaml", ".yml", ".ndjson")


@dataclass
class Found:
    """What a read produced: the sessions, and the files passed over (with why)."""

    sessions: list[Session] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def read_all(
    paths: list[str],
    fmt: str = "auto",
    *,
    counter: TokenCounter | None = None,
    prompts: bool = True,
    workers: int | None = None,
    lenient: bool = False,
) -> Found:
    """Every session in `paths`. `workers`: processes that read logs at once when no prompt is rebuilt (None:
    as many as there are cores, once the logs are large enough to repay starting them)."""
    run = _Run(counter or Estimate(), prompts, lenient)
    found = Found()
    for path in paths:
        for kind, unit in _units(path, fmt, found, run.readers):
            run.take(kind, unit)
    found.sessions = run.sessions(workers)
    empty = [s for s in found.sessions if not s.records]  # no model call in it
    found.skipped += [f"{s.source}: no model calls in it" for s in empty]
    found.sessions = [s for s in found.sessions if s not in empty]
    if not found.sessions:
        raise InputError("no sessions found", source=", ".join(paths), hint="give a session file or folder")
    return found


class _Run:
    """The units of one read, in the order found: each read here as it comes, or kept as a job to read apart
    (maybe in parallel), or as a part of a session its reader joins from several files."""

    def __init__(self, counter: TokenCounter, prompts: bool, lenient: bool) -> None:
        self.counter, self.prompts, self.lenient = counter, prompts, lenient
        self.readers = _Readers()
        self.slots: list[Session | _Job] = []  # in the order of the units
        self.parts: dict[str, list[Part]] = {}  # by reader: files it joins into one session

    def take(self, kind: str, unit: Source | Path) -> None:
        if kind in TURN_FORMATS:
            from kcost.readers.turnspec import read_turnspec

            assert isinstance(unit, Source)
            self.slots.append(read_turnspec(unit, kind))
            return
        reader = self.readers.get(kind)
        claimed = reader.claim(unit)
        if isinstance(claimed, Part):
            self.parts.setdefault(kind, []).append(claimed)
        elif claimed is unit and not self.prompts and (isinstance(unit, Path) or unit.name != "-"):
            self.slots.append(_job(kind, unit))
        else:  # wanted with prompts, from stdin, or already parsed by its reader: read here
            self.slots.append(_transcript(reader, claimed, self.counter, self.prompts, self.lenient))

    def sessions(self, workers: int | None) -> list[Session]:
        """Every session: the units' in their order (the jobs read now), then those joined from parts."""
        done = iter(_run_jobs([s for s in self.slots if isinstance(s, _Job)], workers))
        sessions = [s if isinstance(s, Session) else next(done) for s in self.slots]
        for kind, parts in self.parts.items():
            reader = self.readers.get(kind)
            sessions.append(_transcript(reader, parts[0].source, self.counter, self.prompts, self.lenient, parts))
        return sessions


@dataclass(frozen=True)
class _Job:
    """A log to read for what it says was billed (no prompt rebuilt): its format, path and size."""

    kind: str
    path: str
    folder: bool
    size: int
    lenient: bool = False


def _job(kind: str, unit: Source | Path) -> _Job:
    size = len(unit.data) if isinstance(unit, Source) else _folder_size(unit)
    return _Job(kind, str(unit) if isinstance(unit, Path) else unit.name, isinstance(unit, Path), size)


PARALLEL_BYTES = 32 * 2**20  # below this, starting processes costs more than it saves


def _run_jobs(jobs: list[_Job], workers: int | None) -> list[Session]:
    """The jobs' sessions, in order: in worker processes where there are enough bytes to repay them."""
    import os

    if workers is None:
        big = len(jobs) >= 2 and sum(j.size for j in jobs) >= PARALLEL_BYTES
        workers = min(os.cpu_count() or 1, len(jobs)) if big else 1
    results: list[tuple[Session | None, tuple[Any, ...] | None]]
    if workers > 1 and _fork_available():
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_quiet)
        try:
            results = list(pool.map(_read_job, jobs, chunksize=max(1, len(jobs) // (4 * workers))))
        finally:  # on Ctrl-C too: the workers ignore it, and what they have not started is dropped
            pool.shutdown(cancel_futures=True)
    else:
        results = [_read_job(job) for job in jobs]
    sessions = []
    for session, error in results:
        if error is not None:
            message, source, line, field_, hint = error
            raise InputError(message, source=source, line=line, field=field_, hint=hint)
        assert session is not None
        sessions.append(session)
    return sessions


def _read_job(job: _Job) -> tuple[Session | None, tuple[Any, ...] | None]:
    """One log read (in a worker process, maybe): its session, or the error that stopped it, as plain data."""
    try:
        unit: Source | Path = Path(job.path) if job.folder else open_source(job.path)
        return _transcript(entry(job.kind).load(), unit, Estimate(), False, job.lenient), None
    except InputError as exc:
        return None, (exc.message, exc.source, exc.line, exc.field, exc.hint)


def _quiet() -> None:
    """A worker leaves Ctrl-C to the main process, which stops the run and says so once."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _fork_available() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _folder_size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())


class _Readers:
    """The registry's readers, each loaded once when first needed."""

    def __init__(self) -> None:
        self._loaded: dict[str, Reader] = {}

    def get(self, name: str) -> Reader:
        if name not in self._loaded:
            try:
                self._loaded[name] = entry(name).load()
            except KeyError:
                raise InputError(f"unknown input format {name!r}", field="input_format") from None
        return self._loaded[name]

    def all(self) -> Iterator[Reader]:
        for e in READERS:
            yield self.get(e.name)


def _transcript(
    reader: Reader,
    unit: Source | Path,
    counter: TokenCounter,
    prompts: bool,
    lenient: bool,
    parts: list[Part] | None = None,
) -> Session:
    """The session of one unit (or of the `parts` its reader joins, named after the first)."""
    from kcost.transcripts.prompts import to_session

    notes: list[str] = []
    leniency = Leniency(lenient)
    if parts is not None:
        calls = reader.read_parts(parts, notes, prompts=prompts, leniency=leniency)
    else:
        calls = reader.read(unit, notes, prompts=prompts, leniency=leniency)
    name = reader.session_name(unit)
    source = str(unit) if isinstance(unit, Path) else unit.name
    session = to_session(calls, counter=counter, source=source, name=name, notes=notes, prompts=prompts,
                         comparable=reader.comparable)  # fmt: skip
    note = leniency.note()
    if note is not None:
        from dataclasses import replace

        session = replace(session, build_notes=(*session.build_notes, note))
    return session


def _units(path: str, fmt: str, found: Found, readers: _Readers) -> Iterator[tuple[str, Source | Path]]:
    """(format, source or session folder) for each session under `path`."""
    if path == "-":
        source = open_source("-")
        yield _classify(source, fmt, readers), source
        return
    p = Path(path)
    if p.is_dir():
        yield from _walk(p, fmt, found, readers)
        return
    if p.exists():
        for reader in _folder_readers(fmt, readers):
            folder = reader.folder_of(p)
            if folder is not None:
                yield reader.name, folder
                return
    source = open_source(path)
    yield _classify(source, fmt, readers), source


def _folder_readers(fmt: str, readers: _Readers) -> list[Reader]:
    """The readers that may claim folders: the one named, or all of them."""
    if fmt == "auto":
        return list(readers.all())
    if fmt in TURN_FORMATS:
        return []
    return [readers.get(fmt)]


def _walk(root: Path, fmt: str, found: Found, readers: _Readers) -> Iterator[tuple[str, Source | Path]]:
    claimed: set[Path] = set()
    folders = []
    for folder in sorted([root, *(d for d in root.rglob("*") if d.is_dir())]):
        if os.access(folder, os.R_OK | os.X_OK):
            folders.append(folder)
        else:  # said, as a broken link is: what it holds cannot be billed
            found.skipped.append(f"{folder}: cannot read this folder (permission denied)")
    folder_readers = [
        r for r in _folder_readers(fmt, readers) if type(r).is_session_folder is not Reader.is_session_folder
    ]
    if folder_readers:
        for folder in folders:
            for reader in folder_readers:
                if reader.is_session_folder(folder):
                    claimed.update(f for f in folder.iterdir() if f.is_file())
                    yield reader.name, folder
                    break
        if fmt != "auto" and fmt not in TURN_FORMATS:
            named = readers.get(fmt)
            if type(named).is_session_folder is not Reader.is_session_folder:
                return  # a folder format: its files are read through their folders
    entries = sorted(f for f in root.rglob("*") if f.suffix in _SUFFIXES and f not in claimed)
    for file in entries:
        if not file.is_file():
            if not file.is_dir():  # a dangling or looping link, a FIFO, a socket: said, never passed over quietly
                found.skipped.append(f"{file}: not a regular file (a broken link, a FIFO or a device)")
            continue
        try:
            source = open_source(str(file))
            kind = _classify(source, fmt, readers)
            if kind == "yaml" and fmt == "auto" and not _turn_spec(source):
                raise InputError("a YAML file that is no turn spec", source=source.name)
        except InputError as exc:
            found.skipped.append(str(exc))
            continue
        yield kind, source


def _turn_spec(source: Source) -> bool:
    """In a folder walk: does this YAML file look like a turn spec (a list, or a mapping with `turns`)?"""
    from kcost.document import load_yaml

    data, _ = load_yaml(source.text, source.name)
    return isinstance(data, list) or (isinstance(data, dict) and "turns" in data)


_TURN_KEYS = {"new", "output", "keep", "edit_at", "repeat"}


def _classify(source: Source, fmt: str, readers: _Readers) -> str:
    """The format of one file: by suffix for YAML, else by its first record."""
    if fmt != "auto":
        return fmt
    if source.suffix in (".yaml", ".yml"):
        return "yaml"
    first = _first_record(source)
    if isinstance(first, list):
        return source.sniff()
    if isinstance(first, dict):
        if "turns" in first or "session" in first or first.keys() & _TURN_KEYS:
            return source.sniff()
        for reader in readers.all():
            try:
                if reader.detect(first):
                    return reader.name
            except InputError as exc:
                raise exc.located(source=source.name) from None
    raise InputError("not a format kcost reads", source=source.name, hint="see kcost bill --help, --input-format")


def _first_record(source: Source) -> Any:
    """The first line's JSON value (JSON Lines), else the whole document's; `[]` for what is not JSON."""
    if source.lead() not in (b"{", b"["):
        return []  # not JSON: a YAML turn spec
    number, first = source.first_line()
    try:
        return orjson.loads(first)
    except orjson.JSONDecodeError as at_first:
        try:
            return orjson.loads(source.data)
        except orjson.JSONDecodeError as whole:
            # JSON Lines (a first line that looks whole): name that line; else the document's own error
            after = source.data.index(first) + len(first)
            one_per_line = first.rstrip().endswith(b"}") or source.data[after : after + 4096].lstrip().startswith(b"{")
            if one_per_line:
                raise InputError(f"not valid JSON: {at_first.msg}", source=source.name, line=number) from None
            raise InputError(f"not valid JSON: {whole.msg}", source=source.name, line=whole.lineno) from None
