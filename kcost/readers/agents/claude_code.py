"""Claude Code project logs (`~/.claude/projects/<project>/<session id>.jsonl`): what the session would cost on K3.

Every line has a `uuid` and a `parentUuid`; the prompt of a response is the conversation on its chain of
parents (so `/compact`, which starts a new chain, and `/btw` side questions, which branch off it, are followed
as Claude Code sends them). Claude Code writes one line per content block of a response, each repeating the
response's usage: lines are grouped by `(message.id, requestId)` and the largest usage kept (ccusage's rule);
with no request id (a gateway's, or Kimi's endpoint's), a user line between two assistant lines starts a new
response. Sidechain lines that replay a response already seen are dropped; `<synthetic>` messages (errors Claude
Code writes itself) were never requests. Every log of a run is read as a part of it: the logs whose lines name
one `sessionId` are one session (a resumed session's files, the `subagents/` files of side questions and
sub-agents), and a response logged in several (a resumed file's copy of its parent, a side question's replay
of its parent's responses, a copy of the log elsewhere) is billed once, as ccusage counts it. The system prompt
and tools are not logged: each call says so (`unlogged`), and calibration sizes them from the logged usage; a
sub-agent's calls name their own.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from kcost.errors import STRICT, InputError, Leniency
from kcost.model.calls import Call, Message, ToolCall, Usage, content_text, timestamp
from kcost.model.frozen import frozen
from kcost.pricing.providers import wire
from kcost.readers.agents.qwen_code import looks_like as qwen_code
from kcost.readers.jsonl import compact_json, field
from kcost.readers.registry import Part, Reader
from kcost.readers.source import Source
from kcost.readers.usage import parse_usage
from kcost.results.common import Routine

_TYPES = {"user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation"}


def looks_like(record: Any) -> bool:
    if not isinstance(record, Mapping):
        return False

    if qwen_code(record):
        return False
    kind = record.get("type")
    if isinstance(kind, str) and kind in _TYPES and (record.keys() & {"uuid", "sessionId", "messageId", "leafUuid"}):
        return True
    message = record.get("message")
    return isinstance(message, Mapping) and "role" in message and ("requestId" in record or "sessionId" in record)


class _Chain:
    """The conversation along the current chain of parents, flat, with where each line's messages start."""

    def __init__(self) -> None:
        self.uuids: list[str] = []
        self.at: dict[str, int] = {}  # uuid -> index in `uuids`
        self.starts: list[int] = []  # index in `flat` where each line's messages start
        self.flat: list[Message] = []
        self.parent: dict[str, str | None] = {}  # every line seen: uuid -> parent
        self.own: dict[str, tuple[Message, ...]] = {}  # every line seen: uuid -> its messages

    def move_to(self, parent: str | None) -> None:
        """Make `parent` the end of the chain (the line a new line follows)."""
        if parent is None:
            self._cut(0)
        elif self.uuids and parent == self.uuids[-1]:
            return
        elif parent in self.at:
            self._cut(self.at[parent] + 1)
        else:  # a jump to another branch: back to where it leaves the chain, then along it
            line: str | None = parent
            path: list[str] = []
            while line is not None and line not in self.at and line in self.parent and len(path) <= len(self.parent):
                path.append(line)
                line = self.parent[line]
            self._cut(self.at[line] + 1 if line is not None and line in self.at else 0)
            for uuid in reversed(path):
                self.push(uuid, self.parent[uuid], self.own[uuid])

    def adopt(self, other: _Chain, uuid: str) -> None:
        """Start this chain from another's, up to its line `uuid` (a side question, a fork, branching off the
        conversation it was asked in)."""
        path: list[str] = []
        line: str | None = uuid
        while line is not None and line in other.parent and len(path) <= len(other.parent):
            path.append(line)
            line = other.parent[line]
        self._cut(0)
        for held in reversed(path):
            self.push(held, other.parent[held], other.own[held])

    def _cut(self, n: int) -> None:
        for uuid in self.uuids[n:]:
            del self.at[uuid]
        if n < len(self.uuids):
            del self.flat[self.starts[n] :]
        del self.uuids[n:], self.starts[n:]

    def push(self, uuid: str, parent: str | None, messages: tuple[Message, ...]) -> None:
        if uuid in self.at:  # a line logged twice: it stands where it stands now, once
            self._cut(self.at[uuid])
        self.parent[uuid] = parent
        self.own[uuid] = messages
        self.at[uuid] = len(self.uuids)
        self.uuids.append(uuid)
        self.starts.append(len(self.flat))
        self.flat.extend(messages)


@dataclass(slots=True)
class _Response:
    """The response being assembled from its lines (one per content block)."""

    key: tuple[str, str]
    messages: tuple[Message, ...] | None
    output: Message
    reported: Usage | None
    line: int
    time: float | None
    model: str | None
    unlogged: str
    at: int  # where its message sits in the chain's messages
    raw: Any = None  # the usage as logged on its first line
    sidechain: bool = False  # logged on a sidechain (a sub-agent's, or a side question's)
    uuid: str = ""  # its first line's
    lines: int = 1  # the log lines it was written in
    signature: tuple[object, ...] | None = None  # its input-side usage, where no request id tells it apart
    copy: bool = False  # read from the parent's progress lines: a partial copy of a sub-agent's own log
    closed: bool = False  # every block of it read
    compacted: bool = False  # its conversation was compacted since its response before (a `compact_boundary`)

    def call(self) -> Call:
        return Call(messages=self.messages, output=self.output, reported=self.reported, line=self.line,
                    time=self.time, model=self.model, id=self.key[0], unlogged=self.unlogged,
                    compacted=self.compacted)  # fmt: skip


class ClaudeCode(Reader):
    name = "claude-code"
    one_call = "a response: the lines of one `message.id` (and `requestId`), however tool results fall between them"
    usage_read = (
        "`message.usage`: `input_tokens` (after the last breakpoint) `+ cache_creation_input_tokens + "
        "cache_read_input_tokens`, `output_tokens` on its last line; each conversation (main, each `agentId`,"
        " side questions) on its own `parentUuid` chain"
    )
    source_read = "Claude Code's npm package (`cli.js`, 1.0.30 to 2.1.112), ccusage's `data-loader.ts`"
    comparable = False  # Anthropic's cache, with its own breakpoints: its hits say nothing of K3's (a call served
    # by a Kimi model, through Kimi's Anthropic-compatible endpoint, is compared all the same: billing's rule)

    def detect(self, first: Any) -> bool:
        return looks_like(first)

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> Source | Path | Part:
        """Every log is a part of the run's Claude Code logs: its session may span several files (a resumed
        session, sub-agents' and side questions' files, a copy in the other home), and a response logged in
        several is billed once (`join`)."""
        assert isinstance(unit, Source)
        alone = _looks_alone(unit)
        return Part(unit, scan(unit, keep=not prompts or alone, prompts=prompts and alone, alone=alone))

    def join(self, parts: list[Part]) -> list[list[Part]]:
        """The sessions the run's logs make (those whose lines name one `sessionId`, in the order found; the
        file named after it first), each part told which of its responses another copy bills."""
        return sessions_of(parts)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        return read_calls(unit, notes, prompts=prompts, leniency=leniency)

    def read_parts(
        self, parts: list[Part], notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        return read_session(parts, notes, prompts=prompts, leniency=leniency)

    def links(self, parsed: Any) -> frozenset[str] | None:
        """A log joins others by the session its lines name and shares a response by its message id (`join`)."""
        assert isinstance(parsed, Scan)
        named = () if parsed.session is None else ("s" + parsed.session,)
        return frozenset((*named, *("m" + head.mid for head in parsed.heads)))

    def reads_again(self, parts: list[Part]) -> bool:
        return not _from_kept(parts)

    def alone(self, part: Part) -> bool:
        """A log named after the session its lines name, with no folder of sub-agents' logs beside it, whose scan
        kept its calls."""
        found = part.parsed
        return isinstance(found, Scan) and found.alone and found.calls is not None

    def spent(self, parsed: Any) -> Any:
        """A scan less the calls it kept: its session and responses, for the run's join."""
        assert isinstance(parsed, Scan)
        return Scan(parsed.session, parsed.heads, parsed.drop)

    def project(self, unit: Source | Path) -> str | None:
        """The working directory every message line records (`cwd`); where no line records one, the project folder
        the log lies in (`projects/<the working directory, each / a ->/`), which is Claude Code's name for it."""
        if not isinstance(unit, Source):
            return None
        cwd = unit.first_string("cwd")
        folder = Path(unit.path).parent
        if cwd is None and folder.parent.name == "projects" and folder.name.startswith("-"):
            return folder.name
        return cwd


class Head(NamedTuple):
    """A response as the run's de-duplication sees it: its first line, its identity and its logged size."""

    line: int
    mid: str
    request: str  # "" where none is logged
    sidechain: bool
    total: int  # prompt + output tokens, as logged
    uuid: str  # its first line's
    copy: bool = False  # a parent's progress-line copy of a sub-agent's call: any other copy is billed first


@frozen
class Scan:
    """What `claim` read of a log: the session its lines name, its responses, and (once the run is joined) the
    first lines of those another copy bills. Kept (`scan(keep=True)`) where prompts are not rebuilt and the log
    read whole with nothing forgiven: its calls, the lines each response was written in, and what the read passed
    over; a session of this one log is then read from them (`read_session`), not parsed a second time."""

    session: str | None
    heads: tuple[Head, ...]
    drop: frozenset[int] = frozenset()
    calls: tuple[Call, ...] | None = None
    lines: tuple[int, ...] = ()  # per head
    passed: tuple[int, int, int] = (0, 0, 0)  # the read's counts: skipped, sidechain and synthetic lines
    prompted: bool = False  # its calls' prompts rebuilt
    alone: bool = False  # the log looks like a session of its own (`_looks_alone`)


def _looks_alone(src: Source) -> bool:
    """Whether a log looks like a session of its own: named after the session its lines name, with no folder of
    its sub-agents' logs beside it (`<session>/subagents/`). A guess: the run's join decides."""
    path = Path(src.name)
    return src.first_string("sessionId") == path.stem and not (path.parent / path.stem / "subagents").is_dir()


def scan(src: Source, *, keep: bool = False, prompts: bool = False, alone: bool = False) -> Scan:
    """The log's session and responses, read as the bill reads them (`prompts`: rebuilding them). A log that cannot
    be read whole gives what precedes the bad line: the read that bills it says what is wrong."""
    heads, calls, lines, passed = _scanned(src, prompts and prompts_known(src))
    session = src.first_string("sessionId")
    if not keep or calls is None:
        return Scan(session, heads, alone=alone)
    return Scan(session, heads, calls=calls, lines=lines, passed=passed, prompted=prompts, alone=alone)


Scanned = tuple[tuple[Head, ...], tuple[Call, ...] | None, tuple[int, ...], tuple[int, int, int]]


def _scanned(src: Source, prompts: bool) -> Scanned:
    """What `_Log.read` makes of the log, read leniently: its responses' heads, calls (None where a line is bad:
    what precedes it is read) and lines, and the counts of what it passed over."""
    leniency = Leniency(lenient=True)
    log = _Log(src.name, prompts, leniency)
    calls: tuple[Call, ...] | None
    try:
        calls = tuple(log.read(src))
    except InputError:
        calls = None
    c = log.counts
    kept = None if leniency.skipped else calls
    return tuple(log.heads), kept, tuple(log.lines), (c.skipped, c.sidechains, c.synthetic)


def sessions_of(parts: list[Part]) -> list[list[Part]]:
    """The run's Claude Code logs as sessions: those that name one `sessionId` are one session (a resumed one
    spans several files; a `subagents/` file names its parent's), the file named after it first; a log naming
    none is a session of its own. Each response is billed in one part only, as ccusage keeps it (its
    `push_deduped_entry`, rust/crates/ccusage/src/adapter/claude/mod.rs): lines sharing `message.id` and
    `requestId` are one response, and so is a sidechain line sharing a `message.id` with any other (a `/btw`
    side question's replay of its parent's responses); the main chain's copy is kept over a sidechain's, else
    the largest, else the first found."""
    scans = [p.parsed for p in parts]
    assert all(isinstance(s, Scan) for s in scans)
    drops = _duplicates(scans)
    groups: dict[str, list[Part]] = {}
    for index, (part, found) in enumerate(zip(parts, scans, strict=True)):
        key = found.session if found.session is not None else f"\0{index}"
        groups.setdefault(key, []).append(Part(part.source, replace(found, drop=frozenset(drops[index]))))
    out = []
    for key, group in groups.items():
        named = [p for p in group if p.source.stem == key]
        out.append(named[:1] + [p for p in group if p not in named[:1]])
    return out


def _duplicates(scans: list[Scan]) -> list[set[int]]:
    """For each log, the first lines of its responses that a copy elsewhere in the run bills instead."""
    shared = _shared_ids(scans)
    billed: list[tuple[int, Head]] = []  # each response billed: (log, its copy billed)
    kept: dict[tuple[str, str], int] = {}  # every identity seen -> the response it is (in `billed`)
    by_id: dict[str, list[int]] = {}  # message id -> the responses billed under it
    drops: list[set[int]] = [set() for _ in scans]
    counted = Counter(head.mid for found in scans for head in found.heads)
    for index, found in enumerate(scans):
        for head in found.heads:
            if counted[head.mid] == 1:  # no other response of the run shares its message id: it is no copy
                continue
            # a message id that several responses of one log share (a gateway's) says nothing: their lines'
            # own ids do (a copied log keeps them)
            identity = (head.mid, head.request) if head.mid not in shared else (head.mid, "\0" + head.uuid)
            match = kept.get(identity)
            if match is None and head.mid not in shared and (under := by_id.get(head.mid)):
                match = next((n for n in under if head.sidechain or billed[n][1].sidechain), None)
            if match is None:
                kept[identity] = len(billed)
                by_id.setdefault(head.mid, []).append(len(billed))
                billed.append((index, head))
                continue
            kept[identity] = match  # a later copy under this identity is this response too
            other, copy = billed[match]
            if _better(head, copy):
                drops[other].add(copy.line)
                billed[match] = (index, head)
            else:
                drops[index].add(head.line)
    return drops


def _shared_ids(scans: list[Scan]) -> set[str]:
    """The message ids under which a log holds several responses with no request id (a gateway's)."""
    shared: set[str] = set()
    for found in scans:
        seen: set[str] = set()
        for head in found.heads:
            if not head.request:
                if head.mid in seen:
                    shared.add(head.mid)
                seen.add(head.mid)
    return shared


def _better(candidate: Head, kept: Head) -> bool:
    """Whether `candidate` is billed rather than the copy `kept` (ccusage's `should_replace_deduped_entry`, and a
    progress line's partial copy after any other)."""
    if candidate.copy != kept.copy:
        return kept.copy
    if candidate.sidechain != kept.sidechain:
        return kept.sidechain
    return candidate.total > kept.total


def read_session(
    parts: list[Part], notes: list[str], *, prompts: bool = True, leniency: Leniency = STRICT
) -> Iterator[Call]:
    """The calls of a session logged in several files, in the order they were made (each file's in its own
    order), each file's chain its own; the sub-agents named across them. Where no prompt is rebuilt and every
    log's scan kept its calls, they are taken from there (`_kept_calls`), not parsed again."""
    counts = _Counts()
    if _from_kept(parts, prompts):
        streams = [_timed(_kept_calls(part, counts)) for part in parts]
    else:
        agents = _Agents()
        streams = []
        for part in parts:
            assert isinstance(part.parsed, Scan)
            src = part.source
            log = _Log(src.name, prompts and prompts_known(src), leniency, drop=part.parsed.drop, agents=agents,
                       counts=counts)  # fmt: skip
            streams.append(_timed(log.read(src)))
    if len(streams) == 1:
        yield from (call for _, call in streams[0])
    else:
        yield from (call for _, call in heapq.merge(*streams, key=lambda timed: timed[0]))
    if len(parts) > 1:
        notes.append(f"read from {len(parts)} files of one session")
    notes.extend(counts.notes())


def _kept(part: Part) -> Scan | None:
    found = part.parsed
    return found if isinstance(found, Scan) and found.calls is not None else None


def _from_kept(parts: list[Part], prompts: bool | None = None) -> bool:
    """Whether the session of these parts is read from what their scans kept (no file parsed again): every scan
    kept its calls, read as asked (`prompts`: rebuilding them; None: as they were read). Calls whose prompts were
    rebuilt are read from one log alone: the logs of one session share the names of its sub-agents, which a read
    of them together gives (`_Agents`)."""
    kept = [_kept(part) for part in parts]
    if any(k is None or (prompts is not None and k.prompted != prompts) for k in kept):
        return False
    return len(parts) == 1 or not any(k is not None and k.prompted for k in kept)


def _kept_calls(part: Part, counts: _Counts) -> Iterator[Call]:
    """A log's calls from what its scan kept: those of the responses no other copy bills, and into `counts` what
    a read of it under those drops passes over. A read of one log is a function of its bytes and drops (a
    dropped response is read for the chain all the same, as the scan read it); what the files of one session
    share in it (the sub-agents' names, `unlogged`) names the prefix a rebuilt prompt leaves out, and no bill of
    reported usage reads it."""
    found = _kept(part)
    assert found is not None and found.calls is not None
    drop = found.drop
    skipped, sidechains, synthetic = found.passed
    counts.skipped += skipped
    counts.sidechains += sidechains
    counts.synthetic += synthetic
    counts.repeated += sum(n for head, n in zip(found.heads, found.lines, strict=True) if head.line in drop)
    return (call for call in found.calls if call.line not in drop)


def _timed(calls: Iterator[Call]) -> Iterator[tuple[float, Call]]:
    """Each call with when it was made: one the log gives no time comes with the call before it."""
    last = float("-inf")
    for call in calls:
        last = call.time if call.time is not None else last
        yield last, call


_MAIN = "system prompt and tools"


class _Agents:
    """Which agent a line belongs to: the main one, or a sub-agent (a sidechain: by its `agentId`, else by the
    chain it hangs from), each with a system prompt and tools of its own."""

    def __init__(self) -> None:
        self.of: dict[str, str] = {}
        self.count = 0

    def name(self, record: Mapping[str, Any], uuid: str, parent: str | None) -> str:
        if record.get("isSidechain") is not True:
            return _MAIN
        found = record.get("agentId")
        if isinstance(found, str) and found:
            name = f"sub-agent {found}'s system prompt and tools"
        elif parent is not None and parent in self.of:
            name = self.of[parent]
        else:
            self.count += 1
            name = f"sub-agent {self.count}'s system prompt and tools"
        self.of[uuid] = name
        return name


def read_calls(
    src: Source,
    notes: list[str],
    *,
    prompts: bool = True,
    leniency: Leniency = STRICT,
    drop: frozenset[int] = frozenset(),
) -> Iterator[Call]:
    """The session's calls, one per response; `notes` gets what was skipped. `drop`: the first lines of the
    responses billed in another file of the run (or elsewhere in this one), read for the chain but not billed."""
    log = _Log(src.name, prompts and prompts_known(src), leniency, drop=drop)
    yield from log.read(src)
    notes.extend(log.counts.notes())


class _Counts:
    """What the reads of one session passed over, counted for its notes."""

    def __init__(self) -> None:
        self.skipped = self.sidechains = self.synthetic = self.repeated = 0

    def notes(self) -> list[str]:
        out: list[str] = []
        if self.skipped:
            out.append(Routine(f"{self.skipped} non-message line(s) skipped"))
        if self.sidechains:
            out.append(f"{self.sidechains} sidechain replay line(s) dropped")
        if self.repeated:
            out.append(f"{self.repeated} line(s) repeating a response billed once already dropped (the same "
                       "message.id and requestId, or a sidechain's replay of it)")  # fmt: skip
        if self.synthetic:
            out.append(Routine(f"{self.synthetic} <synthetic> message(s) (written by Claude Code, never sent) skipped"))
        return out


class _Log:
    """A log read line by line: each conversation's chain (the main one, each sub-agent's), the responses being
    assembled, and what was skipped.

    One response is one call, however its lines fall (`assistant`): Claude Code writes a line per content block,
    each repeating the response's `message.id`, `requestId` and usage, and runs a block's tool while the response
    still streams, so its result (and other conversations' lines) can sit between the blocks. A response is its
    conversation's open one while a line names its `message.id` and `requestId`; where no request id is logged
    (a tool that saved the log stripped it, or a gateway sends one message id for every response), while the line
    also repeats the response's input-side usage, which every block of one response repeats and no other response
    shares. Its output is the largest any block logs (the last block carries the final count). Calls are given in
    the order their responses started."""

    def __init__(
        self,
        source: str,
        prompts: bool,
        leniency: Leniency,
        *,
        drop: frozenset[int] = frozenset(),
        agents: _Agents | None = None,
        counts: _Counts | None = None,
    ) -> None:
        self.source, self.prompts, self.leniency, self.drop = source, prompts, leniency, drop
        self.chain = _Chain()  # the main conversation's
        self.chains: dict[str, _Chain] = {}  # each sub-agent's
        self.agents = agents or _Agents()
        self.counts = counts or _Counts()
        self.main_ids: set[str] = set()
        self.done: set[tuple[object, ...]] = set()  # the responses closed, by their identity
        self.open: dict[str, _Response] = {}  # each conversation's response being assembled
        self.compacted: set[str] = set()  # the conversations compacted since their last response
        self.queue: deque[_Response] = deque()  # the responses not yet given, in the order they started
        self.heads: list[Head] = []  # every response given, for the run's de-duplication
        self.lines: list[int] = []  # the log lines each of them was written in

    def read(self, src: Source) -> Iterator[Call]:
        """Every line of `src`, in order: the calls of the responses it holds (those in `drop` read, not billed)."""
        source, counts, prompts, agents = self.source, self.counts, self.prompts, self.agents
        for line, record in src.records():
            if type(record) is not dict:  # parsed JSON: a dict is the only mapping it makes
                raise InputError("expected a JSON object", source=source, line=line)
            raw = record.get("message")
            message: Mapping[str, Any] = raw if type(raw) is dict else {}
            role = message.get("role")
            sidechain = record.get("isSidechain") is True
            if role == "assistant":
                yield from self.assistant(record, message, line, sidechain)
            elif role == "user":
                if prompts or sidechain:  # a main-chain line names no agent of its own
                    uuid, parent = self._place(record, line)
                    conversation = agents.name(record, uuid, parent)
                    if prompts:
                        self._sit(conversation, uuid, parent, tuple(_user(message.get("content"))))
            elif record.get("type") == "progress" and _progress(record) is not None:
                yield from self.progress(record, line)
                if prompts and "uuid" in record:  # the copy's line sits on its own log's chain, as any progress line
                    uuid, parent = self._place(record, line)
                    self._sit(agents.name(record, uuid, parent), uuid, parent, ())
            else:
                counts.skipped += 1
                if prompts and "uuid" in record:  # progress and system lines sit on the chain too
                    uuid, parent = self._place(record, line)
                    conversation = agents.name(record, uuid, parent)
                    self._sit(conversation, uuid, parent, ())
                    if record.get("subtype") == "compact_boundary":  # the chain starts again from its summary
                        self.compacted.add(conversation)
        yield from self._finish()

    def _finish(self) -> Iterator[Call]:
        """The end of the read: every response still open is done."""
        for response in list(self.open.values()):
            self._close(response)
        self.open.clear()
        yield from self._given()

    def _close(self, response: _Response) -> None:
        """A response done: its identity remembered (a late block of it is passed over)."""
        response.closed = True
        self.done.add(_identity(response.key, response.signature))

    def _given(self) -> Iterator[Call]:
        """The responses done whose every earlier one is done too, in the order they started: billed, unless
        another copy of them is."""
        queue = self.queue
        while queue and queue[0].closed:
            done = queue.popleft()
            reported = done.reported
            total = reported.prompt + reported.output if reported is not None else 0
            self.heads.append(Head(done.line, done.key[0], done.key[1], done.sidechain, total, done.uuid, done.copy))
            self.lines.append(done.lines)
            if done.line in self.drop:
                self.counts.repeated += done.lines
            else:
                yield done.call()

    def _place(self, record: Mapping[str, Any], line: int) -> tuple[str, str | None]:
        """A line's own id (`line-N` where it has none) and its parent's (the line before, in a log without the
        chain's fields)."""
        uuid = record.get("uuid")
        if not isinstance(uuid, str):
            uuid = f"line-{line}"
        parent = record.get("parentUuid")
        if not isinstance(parent, str):
            parent = None
            if "parentUuid" not in record and self.chain.uuids:
                parent = self.chain.uuids[-1]  # logs without the chain fields: one line after another
        return uuid, parent

    def _chain_of(self, conversation: str) -> _Chain:
        if conversation == _MAIN:
            return self.chain
        chain = self.chains.get(conversation)
        if chain is None:
            chain = self.chains[conversation] = _Chain()
        return chain

    def _sit(self, conversation: str, uuid: str, parent: str | None, messages: tuple[Message, ...]) -> None:
        """Put a line on its conversation's chain after its parent (where prompts are rebuilt)."""
        if self.prompts:
            chain = self._chain_of(conversation)
            self._move(chain, parent)
            chain.push(uuid, parent, messages)

    def _move(self, chain: _Chain, parent: str | None) -> None:
        """Make `parent` the end of `chain`: a line of another conversation (where a side question or a fork
        branches off) starts the chain as that conversation stood there."""
        if parent is not None and parent not in chain.parent:
            holder = next((c for c in (self.chain, *self.chains.values()) if c is not chain and parent in c.parent),
                          None)  # fmt: skip
            if holder is not None:
                chain.adopt(holder, parent)
                return
        chain.move_to(parent)

    def assistant(self, record: Mapping[str, Any], message: Mapping[str, Any], line: int, sidechain: bool,
                  copy: str | None = None) -> Iterator[Call]:  # fmt: skip
        """One line of a response: a block of its conversation's open response, or the start of its next one
        (which closes the open one); replays, `<synthetic>` messages and late blocks are passed. `copy`: the
        sub-agent whose progress line holds it (its conversation; no place on a chain of the log's own)."""
        mid = message.get("id")
        if type(mid) is not str:
            mid = str(field(message, "id", str, source=self.source, line=line, where="message"))
        if copy is not None:
            conversation, uuid, parent = copy, "", None
        elif sidechain or self.prompts:
            uuid, parent = self._place(record, line)
            conversation = self.agents.name(record, uuid, parent)
        else:
            found = record.get("uuid")
            conversation, uuid, parent = _MAIN, found if isinstance(found, str) else f"line-{line}", None
        if sidechain and copy is None and mid in self.main_ids:
            self.counts.sidechains += 1
            return
        if message.get("model") == "<synthetic>":
            self.counts.synthetic += 1
            if copy is None:
                self._sit(conversation, uuid, parent, ())
            return
        if not sidechain and copy is None:
            self.main_ids.add(mid)
        request = record.get("requestId")
        key = (mid, request if isinstance(request, str) else "")
        raw_usage = message.get("usage")
        signature = None if key[1] else _signature(raw_usage)
        pending = self.open.get(conversation)
        if pending is not None and pending.key == key and (key[1] or pending.signature == signature):
            usage = None if raw_usage is None or raw_usage == pending.raw else self._usage(raw_usage, line)
            self._block(pending, usage, message, conversation, uuid, parent)
            return
        if _identity(key, signature) in self.done:
            return  # a late block of a response already done
        if pending is not None:
            self._close(pending)
        usage = self._usage(raw_usage, line) if raw_usage is not None else None
        self._open(record, message, key, usage, raw_usage, line, conversation, uuid, parent, signature, copy)
        yield from self._given()

    def progress(self, record: Mapping[str, Any], line: int) -> Iterator[Call]:
        """A sub-agent's call or tool result as the parent's progress line copies it (`agent_progress`, Claude Code
        2.1.8 to 2.1.84): billed where the sub-agent's own log is absent (the run's join prefers that log's copy),
        its prompt rebuilt from what the copies hold (its task, its tool calls and their results; not its text
        replies, which are not copied)."""
        data = _progress(record)
        assert data is not None
        agent, held = data
        inner: Mapping[str, Any] = held.get("message") if type(held.get("message")) is dict else {}  # type: ignore[assignment]
        conversation = f"sub-agent {agent}'s system prompt and tools"
        chain = self._chain_of(conversation)
        task = record.get("data", {}).get("prompt")
        if self.prompts and not chain.uuids and inner.get("role") != "user" and isinstance(task, str) and task:
            # the task, where no copy of the sub-agent's first message (which holds it) comes first
            chain.push(f"task-{line}", None, (Message(role="user", content=task),))
        if inner.get("role") == "assistant":
            merged = {**record, **held, "isSidechain": True}
            yield from self.assistant(merged, inner, line, True, copy=conversation)
        elif self.prompts and inner.get("role") == "user":
            last = chain.uuids[-1] if chain.uuids else None
            chain.push(f"progress-{line}", last, tuple(_user(inner.get("content"))))

    def _usage(self, raw: Any, line: int) -> Usage | None:
        try:
            return parse_usage(raw, wire.ANTHROPIC.scheme, where="message.usage", leniency=self.leniency)
        except InputError as exc:
            raise exc.located(source=self.source, line=line) from None

    def _block(self, pending: _Response, usage: Usage | None, message: Mapping[str, Any], conversation: str,
               uuid: str, parent: str | None) -> None:  # fmt: skip
        """Another block of the response being assembled: the largest usage is kept, the content joined."""
        pending.lines += 1
        if usage is not None and (pending.reported is None or (usage.prompt, usage.output) >
                                  (pending.reported.prompt, pending.reported.output)):  # fmt: skip
            pending.reported = usage
        if self.prompts:
            chain = self._chain_of(conversation)
            reply = _merge(pending.output, message.get("content"))
            if uuid:
                self._move(chain, parent)
            if pending.at < len(chain.flat) and chain.flat[pending.at] is pending.output:
                chain.flat[pending.at] = reply  # one assistant message for all the response's blocks
            pending.output = reply
            if uuid:
                chain.push(uuid, parent, ())

    def _open(self, record: Mapping[str, Any], message: Mapping[str, Any], key: tuple[str, str],
              usage: Usage | None, raw_usage: Any, line: int, conversation: str, uuid: str, parent: str | None,
              signature: tuple[object, ...] | None, copy: str | None) -> None:  # fmt: skip
        """The first line of a response: it becomes its conversation's open one, its prompt the conversation up
        to its parent."""
        prompts = self.prompts
        chain = self._chain_of(conversation) if prompts else None
        model = message.get("model")
        reply = _merge(_NO_REPLY, message.get("content")) if prompts else _NO_REPLY
        if chain is not None and uuid:
            self._move(chain, parent)
        try:
            time = timestamp(record.get("timestamp"), field="timestamp", leniency=self.leniency)
        except InputError as exc:
            raise exc.located(source=self.source, line=line) from None
        response = _Response(key=key, messages=tuple(chain.flat) if chain is not None else None, output=reply,
                             reported=usage, line=line, time=time,
                             model=model if isinstance(model, str) and model else None, unlogged=conversation,
                             at=len(chain.flat) if chain is not None else 0, raw=raw_usage,
                             sidechain=record.get("isSidechain") is True, uuid=uuid or f"line-{line}",
                             signature=signature, copy=copy is not None,
                             compacted=conversation in self.compacted)  # fmt: skip
        self.compacted.discard(conversation)
        self.open[conversation] = response
        self.queue.append(response)
        if chain is not None:
            if uuid:
                chain.push(uuid, parent, (reply,))
            else:  # a copy: its conversation's messages one after another
                chain.push(f"copy-{line}", chain.uuids[-1] if chain.uuids else None, (reply,))


def _identity(key: tuple[str, str], signature: tuple[object, ...] | None) -> tuple[object, ...]:
    return (*key, signature)


def _signature(raw: Any) -> tuple[object, ...] | None:
    """A usage record's input-side counts (what every block of one response repeats), where it is one."""
    if type(raw) is not dict:
        return None
    return (raw.get("input_tokens"), raw.get("cache_creation_input_tokens"), raw.get("cache_read_input_tokens"))


def _progress(record: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """A progress line's copy of a sub-agent's message: its agent and the message's line, where it holds one."""
    data = record.get("data")
    if type(data) is not dict or data.get("type") != "agent_progress":
        return None
    agent, held = data.get("agentId"), data.get("message")
    if not isinstance(agent, str) or not agent or type(held) is not dict:
        return None
    return agent, held


_NO_REPLY = Message(role="assistant")  # a response's reply before its blocks are read, or where none is kept


def prompts_known(src: Source) -> bool:
    """Whether the log holds message text at all (usage-only logs from some tools do not)."""
    return src.contains(b'"content"')


def _merge(message: Message | None, content: Any) -> Message:
    m = message or Message(role="assistant")
    text, reasoning, calls = m.content, m.reasoning or "", list(m.tool_calls)
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] if content else []
    for block in blocks:
        if type(block) is not dict:  # parsed JSON: a dict is the only mapping it makes
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text += block["text"]
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            reasoning += block["thinking"]
        elif kind == "tool_use":
            args = compact_json(block.get("input", {}))
            calls.append(ToolCall(str(block.get("id", "")), str(block.get("name", "")), args))
    return Message(role="assistant", content=text, reasoning=reasoning or None, tool_calls=tuple(calls))


def _user(content: Any) -> list[Message]:
    if not isinstance(content, list):
        return [Message(role="user", content=content if isinstance(content, str) else "")]
    out: list[Message] = []
    text = []
    for block in content:
        if type(block) is dict and block.get("type") == "tool_result":
            result = block.get("content")
            call_id = block.get("tool_use_id")
            out.append(Message(role="tool", content=content_text(result if isinstance(result, (str, list)) else None),
                               tool_call_id=call_id if isinstance(call_id, str) else None))  # fmt: skip
        else:
            text.append(block)
    if text:
        out.append(Message(role="user", content=content_text(text)))
    return out
