"""Finding sessions: each path's format, from its name and first record, and the session every unit makes.

A file's format is the first of `registry.DETECTION` (the turn-spec notations, then the logs of `READERS`) whose
reader recognises it. A folder is walked: folders a reader claims as sessions first, then every file of a suffix
some reader names. Each unit is offered to its reader (`Reader.claim`) before it is read: one may be a session
already (a turn spec), files a format joins into one session are read together once every unit is found, after
the sessions read alone. Claims and reads both run apart from this process where the logs are large enough
(worker processes, or a Dask cluster's workers: `Spread`), each giving what this process would have; a session
joined from several files is read as one job. An agent's log folder (`Walk`) offers only the files named as the
agent names its logs.
Each session is marked with its reader's name and the project its log records. Nothing here names a reader or a
format.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from kcost.errors import InputError, Leniency
from kcost.inputs.files import noted
from kcost.model.frozen import frozen
from kcost.model.session import Session
from kcost.prompts.tokenizer import Estimate, KimiTokenizer, TokenCounter, load_counter
from kcost.readers.registry import DETECTION, Part, Reader, entry
from kcost.readers.source import Source, open_source, peek_source


@dataclass
class Found:
    """What a read produced: the sessions, and the files passed over (with why)."""

    sessions: list[Session] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # logs that could not be read, each with why
    foreign: list[str] = field(default_factory=list)  # files a folder walk found of no format kcost reads
    told: list[str] = field(default_factory=list)  # what to say of the homes read, once the run may go on


@frozen
class Spread:
    """Where a read's jobs (the logs read apart from this process) run, and what each does with its session
    there. `workers`: processes on this machine (None: one per core, once the logs are large enough to repay
    starting them). `remote`: a map that runs a function over the jobs elsewhere (a Dask cluster), in their order,
    instead. `finish`: run on each job's session where it was read, before it is sent back (it may replace the
    session); `keep`: told, in this process, each session and what `finish` made of it. Both must be picklable
    (module-level functions, or partials of them) to run elsewhere."""

    workers: int | None = None
    remote: Callable[[Callable[[Any], Any], list[Any]], list[Any]] | None = None
    finish: Callable[[Session], tuple[Session, Any]] | None = None
    keep: Callable[[Session, Any], None] | None = None


class Held:
    """A unit the ledger holds as it was read before (unchanged since): not read, its sessions taken from the
    ledger (`kcost.ledger.reading`). `name`: the path as this run names it."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


Unit = tuple[str, "Source | Path | Held"]  # (format, what the run found)
Made = tuple[list[tuple[Session, tuple[str, ...]]], dict[str, "frozenset[str] | None"]]  # sessions, their units;
# the links of each unit its reader joins with others (`Reader.links`)


class Keeper(Protocol):
    """What a read asks of the ledger (`kcost.ledger.reading.Kept`): whether a unit found is held unchanged (its
    format, else None), and the run's sessions once every unit is found, given a way to read units."""

    def held(self, path: Path, fmt: str) -> str | None: ...

    def resolve(self, units: list[Unit], read: Callable[[list[tuple[str, Source | Path]]], Made],
                roots: list[str]) -> list[Session]: ...


@frozen
class Walk:
    """A folder walked for the files named as `files` (a pattern of file names) only, as an agent's log folder is:
    the agent's other files there are none of its sessions."""

    path: str
    files: str = "*"


def read_all(
    paths: Sequence[str | Walk],
    fmt: str = "auto",
    *,
    counter: TokenCounter | None = None,
    prompts: bool = True,
    workers: int | None = None,
    lenient: bool = False,
    required: bool = True,
    spread: Spread | None = None,
    kept: Keeper | None = None,
) -> Found:
    """Every session in `paths`. Logs are read as jobs, apart from this process where that repays it, as `spread`
    says (`workers`: processes that read them at once, None: as many as there are cores once the logs are large
    enough); what a job reads is the session this process would read. `required`: finding no session is an
    error. `kept`: the ledger, which holds the sessions of units unchanged since it read them; it is asked for
    them, and hands back which units to read."""
    spread = spread or Spread(workers=workers)
    readers = _Readers()
    found = Found()
    units: list[Unit] = []
    stopped: InputError | None = None
    try:
        for path in paths:
            units.extend(_units(path, fmt, found, readers, kept))
    except InputError as exc:  # said once the units found before it are claimed: as if each were taken as found
        stopped = exc

    def read(chosen: list[tuple[str, Source | Path]]) -> Made:
        run = _Run(counter or Estimate(), prompts, lenient, readers)
        for (kind, unit), claimed in zip(chosen, _claims(chosen, run, spread), strict=True):
            run.take(kind, unit, claimed, spread.finish)
        if stopped is not None:
            raise stopped
        return run.sessions(spread), run.links

    if kept is None or stopped is not None:
        found.sessions = [s for s, _ in read([(k, u) for k, u in units if not isinstance(u, Held)])[0]]
    else:
        roots = [p.path if isinstance(p, Walk) else p for p in paths]
        found.sessions = kept.resolve(units, read, roots)
    empty = [s for s in found.sessions if not s.records]  # no model call in it
    found.skipped += [f"{s.source}: no model calls in it" for s in empty]
    found.sessions = [s for s in found.sessions if s not in empty]
    if not found.sessions and required:
        where = ", ".join(p.path if isinstance(p, Walk) else p for p in paths)
        raise InputError("no sessions found", source=where, hint="give a session file or folder")
    return found


class _Run:
    """The units of one read, in the order found: each read here as it comes, or kept as a job to read apart
    (maybe in parallel), or as a part of a session its reader joins from several files."""

    def __init__(self, counter: TokenCounter, prompts: bool, lenient: bool, readers: _Readers) -> None:
        self.counter, self.prompts, self.lenient = counter, prompts, lenient
        # a job rebuilds prompts with the counter this process would use: one it can load again (by its path)
        self.tokenizer = counter.path if isinstance(counter, KimiTokenizer) else None
        self.apart = not prompts or type(counter) is Estimate or isinstance(counter, KimiTokenizer)
        self.readers = readers
        self.slots: list[Session | _Job | Part] = []  # in the order of the units (a part: where its session goes)
        self.origins: list[tuple[str, ...]] = []  # for each slot, the units it was read from
        self.links: dict[str, frozenset[str] | None] = {}  # each part's keys (`Reader.links`), by its unit
        self.parts: dict[str, list[Part]] = {}  # by reader: files it joins into sessions
        self.early: dict[int, tuple[Any, Early]] = {}  # by a part's source: its session read alone, as claimed

    def take(self, kind: str, unit: Source | Path, made: _Claim | None = None,
             finish: Callable[[Session], tuple[Session, Any]] | None = None) -> None:  # fmt: skip
        """Offer one unit to its reader (or take what it claimed apart, `made`), and keep what becomes of it in
        its place; a part that looks like a session of its own is read as one now (`finish`ed)."""
        reader = self.readers.get(kind)
        early: Early | None = None
        if made is not None:
            claimed, early = _claimed(unit, made)
        else:
            claimed = reader.claim(unit, prompts=self.prompts)
            if isinstance(claimed, Part) and reader.alone(claimed):
                claimed, early = _alone(reader, claimed, self.counter, self.prompts, self.lenient, finish)
        if early is not None:
            assert isinstance(claimed, Part)
            self.early[id(claimed.source)] = (claimed.parsed, early)
        origin = (unit.name if isinstance(unit, Source) else str(unit),)
        if isinstance(claimed, Part):
            self.links[origin[0]] = reader.links(claimed.parsed)
        self.origins.extend([origin] * (len(claimed) if isinstance(claimed, list) else 1))
        if isinstance(claimed, list):  # a store of several sessions (a database): each its reader's own, read here
            for one in claimed:
                self.slots.append(_transcript(reader, one, self.counter, self.prompts, self.lenient))
        elif isinstance(claimed, Session):  # read already
            self.slots.append(claimed)
        elif isinstance(claimed, Part):
            self.parts.setdefault(kind, []).append(claimed)
            self.slots.append(claimed)
        elif claimed is unit and self.apart and (isinstance(unit, Path) or unit.name != "-"):
            self.slots.append(_job(kind, unit, self.lenient, self.prompts, self.tokenizer))
            if isinstance(unit, Source):
                unit.release()  # the job reads the file again where it runs: this process need not hold it too
        else:  # from stdin, already parsed by its reader, or counted by a counter no job can load: read here
            self.slots.append(_transcript(reader, claimed, self.counter, self.prompts, self.lenient))

    def sessions(self, spread: Spread) -> list[tuple[Session, tuple[str, ...]]]:
        """Every session, in the order of the units (the jobs read now): one joined from parts where the first of
        its parts was found; each with the units it was read from."""
        at = {id(slot.source): n for n, slot in enumerate(self.slots) if isinstance(slot, Part)}
        slots: list[Session | _Job | Part | None] = [s if not isinstance(s, Part) else None for s in self.slots]
        origins = list(self.origins)
        for kind, parts in self.parts.items():
            reader = self.readers.get(kind)
            for group in reader.join(parts):
                first = min(at.get(id(p.source), len(slots)) for p in group)
                if first == len(slots) or slots[first] is not None:  # none of the run's own parts: at the end
                    slots.append(None)
                    origins.append(())
                    first = len(slots) - 1
                slots[first] = self._early(group, spread) or self._joined(kind, group)
                origins[first] = tuple(p.source.name for p in group)
        self.early.clear()
        done = iter(_run_jobs([s for s in slots if isinstance(s, _Job)], spread))
        return [(s if isinstance(s, Session) else next(done), o) for s, o in zip(slots, origins, strict=True)
                if s is not None]  # fmt: skip

    def _early(self, group: list[Part], spread: Spread) -> Session | None:
        """The session of a part read alone where it was claimed, where the join made that part a session of its
        own as it was claimed."""
        early = self.early.get(id(group[0].source)) if len(group) == 1 else None
        if early is None or early[0] != group[0].parsed:
            return None
        session, made = early[1]
        if spread.keep is not None:
            spread.keep(session, made)
        return session

    def _joined(self, kind: str, group: list[Part]) -> Session | _Job:
        """The session `group` makes: read here (from stdin, counted by a counter no job can load, or read from
        what its reader kept of the parts), else kept as a job (its parts' files read again where it runs:
        sending their bytes costs more than reading them)."""
        reader = self.readers.get(kind)
        if not self.apart or any(p.source.name == "-" for p in group) or not reader.reads_again(group):
            return _transcript(reader, group[0].source, self.counter, self.prompts, self.lenient, group)
        size = sum(p.source.size for p in group)
        parts = tuple((p.source.name, p.parsed) for p in group)
        return _Job(kind, group[0].source.name, False, size, self.lenient, parts, self.prompts, self.tokenizer)


@frozen
class _Job:
    """A log to read apart from this process: its format, path and size, whether prompts are rebuilt (with the
    tokenizer at `tokenizer`, None: the estimate) and whether a bad record is skipped (`--lenient`) there as they
    are in this process; for a session its reader joins from several files, each file's path and what its reader
    parsed of it (`Part`), so a session spanning files (a resumed one, its sub-agents') is one job."""

    kind: str
    path: str
    folder: bool
    size: int
    lenient: bool
    parts: tuple[tuple[str, Any], ...] | None = None
    prompts: bool = False
    tokenizer: str | None = None


def _job(kind: str, unit: Source | Path, lenient: bool, prompts: bool, tokenizer: str | None) -> _Job:
    size = unit.size if isinstance(unit, Source) else _folder_size(unit)
    path = str(unit) if isinstance(unit, Path) else unit.name
    return _Job(kind, path, isinstance(unit, Path), size, lenient, None, prompts, tokenizer)


_Claim = tuple[str, Any]  # what a reader claimed of a file, apart: ("unit" | "part" | "other" | "error", what)
Early = tuple[Session, Any]  # a part's session read alone where it was claimed, and what `finish` made of it


def _claims(units: list[tuple[str, Source | Path]], run: _Run, spread: Spread) -> list[_Claim | None]:
    """What each file's reader claims of it, made apart from this process where there are enough bytes to repay
    it (None: claimed here, as it is taken): a claim is a pure function of its file (a Claude Code log's scan of
    its responses, which the run's join needs of every file before a session is read), and so is the session of
    a part read alone (where the counter can be loaded apart: `_Run.apart`). Folders, stdin and small runs are
    claimed here."""
    apart = [n for n, (_, unit) in enumerate(units) if isinstance(unit, Source) and unit.name != "-"]
    files = [units[n][1] for n in apart]
    jobs = [(units[n][0], units[n][1].name, run.prompts, run.lenient, run.tokenizer, run.apart) for n in apart]
    sizes = [f.size for f in files if isinstance(f, Source)]
    least = PARALLEL_BYTES_PROMPTS if run.prompts else PARALLEL_BYTES
    if run.prompts and run.apart and sum(sizes) >= least:
        import kcost.prompts.build  # noqa: F401  (once, here: every forked worker starts with it)
    made = _spread(partial(_claim_job, finish=spread.finish), jobs, sizes, spread, least)
    out: list[_Claim | None] = [None] * len(units)
    if made is not None:
        for n, claim in zip(apart, made, strict=True):
            out[n] = claim
    return out


_WHERE = threading.local()  # the folder of the run that sent the job being done in this thread (a Dask task)


def at(path: str) -> str:
    """Where a path the run named is read in this thread: as named, or (in a task a Dask client sent) in the
    client's working folder, so a relative path means on a worker what it meant where the run started."""
    folder = getattr(_WHERE, "folder", None)
    return os.path.join(folder, path) if folder and path != "-" else path


def _sent(work: Callable[[Any], Any], folder: str, job: Any) -> Any:
    """`work` on `job` in a Dask worker: its relative paths read in the client's `folder`; a worker that cannot see
    that folder says so."""
    if not os.path.isdir(folder):
        import socket

        raise InputError(f"a Dask worker ({socket.gethostname()}) cannot see the run's folder {folder}",
                         hint="the workers must see the run's files at the same paths")  # fmt: skip
    _WHERE.folder = folder
    try:
        return work(job)
    finally:
        _WHERE.folder = None


def _claim_job(job: tuple[str, str, bool, bool, str | None, bool],
               finish: Callable[[Session], tuple[Session, Any]] | None = None) -> _Claim:  # fmt: skip
    """One file's claim (in a worker process, maybe), as plain data: what its reader parsed of a part (and the
    session of a part read alone, finished, where `early`), not the file's bytes again."""
    kind, path, prompts, lenient, tokenizer, early = job
    try:
        source = open_source(at(path), name=path)
        reader = entry(kind).load()
        claimed = reader.claim(source, prompts=prompts)
    except InputError as exc:
        return "error", (exc.message, exc.source, exc.line, exc.field, exc.hint)
    if claimed is source:
        return "unit", None
    if isinstance(claimed, Part) and claimed.source is source:
        if not reader.alone(claimed):
            return "part", (claimed.parsed, None)
        if not early:  # its counter is the run's own: read there, the join's part of the claim all it is sent
            return "part", (reader.spent(claimed.parsed), None)
        counter = load_counter(at(tokenizer) if tokenizer else None) if prompts else Estimate()
        part, read = _alone(reader, claimed, counter, prompts, lenient, finish)
        return "part", (part.parsed, read)
    return "other", claimed


def _claimed(unit: Source | Path, made: _Claim) -> tuple[Any, Early | None]:
    """What a reader claimed of a unit apart, here: the unit, its part (and the session of a part read alone), or
    what else it claimed; an error raised as it was met."""
    what, value = made
    if what == "error":
        message, source, line, field_, hint = value
        raise InputError(message, source=source, line=line, field=field_, hint=hint)
    if what == "unit":
        return unit, None
    if what == "part":
        assert isinstance(unit, Source)
        parsed, early = value
        return Part(unit, parsed), early
    return value, None


def _alone(reader: Reader, part: Part, counter: TokenCounter, prompts: bool, lenient: bool,
           finish: Callable[[Session], tuple[Session, Any]] | None) -> tuple[Part, Early | None]:  # fmt: skip
    """A part that looks like a session of its own, read as one from what its reader kept (and `finish`ed): the
    part spent, and that session; where it cannot be read (what it kept is read again with its session's other
    parts, and says why there), the part as claimed."""
    try:
        session = _transcript(reader, part.source, counter, prompts, lenient, [part])
    except InputError:
        return part, None
    made = None
    if finish is not None:
        session, made = finish(session)
    return Part(part.source, reader.spent(part.parsed)), (session, made)


# Below these many bytes of logs, starting processes costs more than it saves (on two cores, where it evens out for
# generated Claude Code logs: about 10 MB read for the usage alone, 4-8 MB with prompts rebuilt and simulated).
PARALLEL_BYTES = 12 * 2**20
PARALLEL_BYTES_PROMPTS = 8 * 2**20

Result = tuple[Session | None, Any, tuple[Any, ...] | None]  # a job's session, what `finish` made, or its error


def _run_jobs(jobs: list[_Job], spread: Spread) -> list[Session]:
    """The jobs' sessions, in order: on the remote map where there is one, else in worker processes where there
    are enough bytes to repay them (the largest started first, so that one long session does not end the run
    alone), else here."""
    work = partial(_read_job, finish=spread.finish)
    least = PARALLEL_BYTES
    if any(j.prompts for j in jobs):
        import kcost.prompts.build  # noqa: F401  (once, here: every forked worker starts with it)

        least = PARALLEL_BYTES_PROMPTS
    made = _spread(work, jobs, [j.size for j in jobs], spread, least)
    results: list[Result] = made if made is not None else [work(job) for job in jobs]
    sessions = []
    for session, made, error in results:
        if error is not None:
            message, source, line, field_, hint = error
            raise InputError(message, source=source, line=line, field=field_, hint=hint)
        assert session is not None
        if spread.keep is not None:
            spread.keep(session, made)
        sessions.append(session)
    return sessions


def _spread(work: Callable[[Any], Any], jobs: list[Any], sizes: list[int], spread: Spread, least: int
            ) -> list[Any] | None:  # fmt: skip
    """`work` over `jobs`, in order: on the remote map where there is one, else in worker processes where there
    are `least` bytes or more to repay them (the largest started first, so that one long session does not end the
    run alone); None: to be done here."""
    if spread.remote is not None:  # relative paths read in this folder, wherever a task runs
        return spread.remote(partial(_sent, work, os.getcwd()), jobs) if jobs else []
    workers = spread.workers
    if workers is None:
        big = len(jobs) >= 2 and sum(sizes) >= least
        workers = min(os.cpu_count() or 1, len(jobs)) if big else 1
    if workers <= 1:
        return None
    # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
    from kcost.readers import forked

    if not forked.available():
        return None

    order = sorted(range(len(jobs)), key=lambda n: -sizes[n])
    # What this process holds (every file's bytes, its claims) is the workers' too, forked: frozen, their
    # collector never walks it, so its pages stay shared instead of being copied into each worker
    gc.freeze()
    try:  # one job at a time: jobs of a megabyte or more each, whose sizes differ a hundredfold
        done = forked.forked_map(work, [jobs[n] for n in order], workers)
    finally:  # on Ctrl-C too: the workers ignore it, and are stopped
        gc.unfreeze()
    results: list[Any] = [None] * len(jobs)
    for n, result in zip(order, done, strict=True):
        results[n] = result
    return results


def _read_job(job: _Job, finish: Callable[[Session], tuple[Session, Any]] | None = None) -> Result:
    """One log read (in a worker process, maybe): its session and what `finish` made of it, or the error that
    stopped it, as plain data."""
    try:
        reader = entry(job.kind).load()
        counter = load_counter(at(job.tokenizer) if job.tokenizer else None) if job.prompts else Estimate()
        if job.parts is not None:
            parts = [Part(open_source(at(path), name=path), parsed) for path, parsed in job.parts]
            session = _transcript(reader, parts[0].source, counter, job.prompts, job.lenient, parts)
        else:
            unit: Source | Path = Path(at(job.path)) if job.folder else open_source(at(job.path), name=job.path)
            session = _transcript(reader, unit, counter, job.prompts, job.lenient, shown=job.path)
        made = None
        if finish is not None:
            session, made = finish(session)
        return session, made, None
    except InputError as exc:
        return None, None, (exc.message, exc.source, exc.line, exc.field, exc.hint)


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
        """Every reader, in the order detection tries them."""
        for e in DETECTION:
            yield self.get(e.name)

    def suffixes(self) -> set[str]:
        """The suffixes of the files a folder walk offers to detection: those some reader names."""
        return {suffix for reader in self.all() for suffix in reader.suffixes}


def _transcript(
    reader: Reader,
    unit: Source | Path,
    counter: TokenCounter,
    prompts: bool,
    lenient: bool,
    parts: list[Part] | None = None,
    shown: str | None = None,
) -> Session:
    """The session of one unit (or of the `parts` its reader joins, named after the first); `shown`: the path the
    run named it by, where it is read at another (`at`)."""
    # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
    from kcost.prompts.build import to_session

    notes: list[str] = []
    leniency = Leniency(lenient)
    if parts is not None:
        calls = reader.read_parts(parts, notes, prompts=prompts, leniency=leniency)
    else:
        calls = reader.read(unit, notes, prompts=prompts, leniency=leniency)
    name = reader.session_name(unit)
    source = shown or (str(unit) if isinstance(unit, Path) else unit.name)
    project = reader.project(unit)
    session = to_session(calls, counter=counter, source=source, name=name, notes=notes, prompts=prompts,
                         comparable=reader.comparable, agent=reader.name, project=project)  # fmt: skip
    for read in [unit, *(p.source for p in parts or ())]:  # its bytes are in the session now
        if isinstance(read, Source):
            read.release()
    note = leniency.note()
    if note is not None:
        session = replace(session, build_notes=(*session.build_notes, note))
    return session


def _units(path: str | Walk, fmt: str, found: Found, readers: _Readers, kept: Keeper | None = None) -> Iterator[Unit]:
    """(format, source or session folder, or what the ledger holds of either) for each session under `path`."""
    if isinstance(path, Walk):
        if Path(path.path).is_dir():
            yield from _walk(Path(path.path), fmt, found, readers, path.files, kept)
        return
    if path == "-":
        source = open_source("-")
        yield _classify(source, fmt, readers), source
        return
    p = Path(path)
    if p.is_dir():
        yield from _walk(p, fmt, found, readers, kept=kept)
        return
    if p.exists():
        for reader in _folder_readers(fmt, readers, p.name):
            folder = reader.folder_of(p)
            if folder is not None:
                yield reader.name, _held(kept, folder, reader.name) or folder
                return
        if kept is not None and (kind := kept.held(p, fmt)) is not None:
            noted(p)
            yield kind, Held(path)
            return
    source = peek_source(path)
    yield _classify(source, fmt, readers), source


def _folder_readers(fmt: str, readers: _Readers, name: str | None = None) -> list[Reader]:
    """The readers that may claim folders: the one named, or all that read folders (only those are loaded);
    given a file's `name`, those whose folders hold files so named."""
    if fmt == "auto":
        return [readers.get(e.name) for e in DETECTION
                if e.folders and (name is None or any(fnmatchcase(name, p) for p in e.folders))]  # fmt: skip
    return [readers.get(fmt)]


def reads_folders(reader: Reader) -> bool:
    """Whether a reader's format keeps a session in a folder of files."""
    return type(reader).is_session_folder is not Reader.is_session_folder


def _held(kept: Keeper | None, folder: Path, kind: str) -> Held | None:
    """A session folder as the ledger holds it, where it holds it unchanged as read by `kind`'s reader."""
    return Held(str(folder)) if kept is not None and kept.held(folder, kind) == kind else None


def _walk(
    root: Path, fmt: str, found: Found, readers: _Readers, files: str = "*", kept: Keeper | None = None
) -> Iterator[Unit]:
    """Every session under `root`: the folders a reader claims as sessions, then every file named as `files` that
    no claimed folder holds (none, when the format asked for is one read through its folders)."""
    folders = _readable_folders(root, found)
    claimed: set[Path] = set()
    folder_readers = [r for r in _folder_readers(fmt, readers) if reads_folders(r)]
    if folder_readers:
        yield from _session_folders(folders, folder_readers, claimed, kept)
        if fmt != "auto" and reads_folders(readers.get(fmt)):
            return  # a folder format: its files are read through their folders
    yield from _files(root, fmt, found, readers, claimed, files, kept)


def _readable_folders(root: Path, found: Found) -> list[Path]:
    """`root` and every folder under it, in order, but those that cannot be read (listed as skipped)."""
    folders = []
    for folder in sorted([root, *(d for d in root.rglob("*") if d.is_dir())]):
        if os.access(folder, os.R_OK | os.X_OK):
            folders.append(folder)
        else:  # said, as a broken link is: what it holds cannot be billed
            found.skipped.append(f"{folder}: cannot read this folder (permission denied)")
    return folders


def _session_folders(
    folders: list[Path], folder_readers: list[Reader], claimed: set[Path], kept: Keeper | None = None
) -> Iterator[tuple[str, Path | Held]]:
    """The folders the first of `folder_readers` to claim each takes as a session; their files join `claimed`."""
    for folder in folders:
        for reader in folder_readers:
            if reader.is_session_folder(folder):
                files = [f for f in folder.iterdir() if f.is_file()]
                for file in files:  # read, or could be: no output may replace one
                    noted(file)
                claimed.update(files)
                yield reader.name, _held(kept, folder, reader.name) or folder
                break


def _files(
    root: Path, fmt: str, found: Found, readers: _Readers, claimed: set[Path], files: str = "*",
    kept: Keeper | None = None,
) -> Iterator[tuple[str, Source | Held]]:
    """Every file under `root` of a suffix some reader names, named as `files` and in no claimed folder, with its
    format; those of no format (or, detected, that fail their reader's `vet`) are listed as foreign, those that
    cannot be read as skipped, with why."""
    suffixes = readers.suffixes()
    named = [f for f in root.rglob("*") if f.suffix in suffixes and f not in claimed and fnmatchcase(f.name, files)]
    for file in sorted(named):  # each noted where it is looked at (`peek_source`): no output may replace it
        if not file.is_file():
            if not file.is_dir():  # a dangling or looping link, a FIFO, a socket: said, never passed over quietly
                found.skipped.append(f"{file}: not a regular file (a broken link, a FIFO or a device)")
            continue
        if kept is not None and (held := kept.held(file, fmt)) is not None:  # unchanged since the ledger read it
            noted(file)
            yield held, Held(str(file))
            continue
        try:
            source = peek_source(str(file))
            kind = _classify(source, fmt, readers)
        except NoFormat:
            found.foreign.append(str(file))
            continue
        except InputError as exc:
            found.skipped.append(str(exc))
            continue
        if fmt == "auto":  # found by detection, not named: its reader may still pass it over, as of no format
            try:
                readers.get(kind).vet(source)
            except InputError:
                found.foreign.append(str(file))
                continue
        source.release()  # read again where it is read: a walk holds no log's bytes, only what it found
        yield kind, source


def _classify(source: Source, fmt: str, readers: _Readers) -> str:
    """The format of one file: the one asked for, else the first (in the order of detection) whose reader
    recognises it."""
    if fmt != "auto":
        return fmt
    for reader in readers.all():
        try:
            if reader.recognise(source):
                return reader.name
        except InputError as exc:
            if source.name != "-" and source.suffix and source.suffix not in readers.suffixes():
                break  # a file named for no format kcost reads (pyproject.toml): not a broken session but none
            raise exc.located(source=source.name) from None
    raise NoFormat("no session: not a format kcost reads", source=source.name,
                   hint="turn specs (.yaml, .json, .jsonl) or an agent's log; see --input-format")  # fmt: skip


class NoFormat(InputError):
    """A file of no format kcost reads (given alone, an error; found in a folder, passed over)."""
