"""The incremental reader: a growing log read once, then only the bytes appended since the last look.

A `Tail` holds what was read of one log: where the read stopped (the end of its last whole line), the file's
fingerprint (device, inode, size, modification time, and a hash of the last bytes read) and the calls found so
far. A later look reads from that offset on; a file that shrank, was replaced or rewritten (the hash of the
bytes before the offset differs) is read again from the start. A line still being written (no newline yet)
waits for the next look.

A Claude Code log resumes where it stopped: its reader's own state (the chain of messages, the response being
assembled) is kept with the calls, and the response still open at the end stays open until a later line closes
it. A response that a later copy in the log would bill instead (Claude Code's de-duplication, decided over the
whole file) is caught: the log is then read again from the start, as `kcost bill` reads it. Every other format
is read whole whenever it changed (correct, not incremental). Either way the session is built and billed as
`kcost bill` builds and bills it; the state between looks is kept by `statusline`, in the user's cache folder.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kcost.errors import STRICT, InputError
from kcost.readers.claude_code import Head, Scan, _duplicates, _Log, prompts_known, scan
from kcost.readers.jsonl import first_string
from kcost.readers.source import Source

if TYPE_CHECKING:
    from kcost.calls import Call
    from kcost.session import Session
    from kcost.settings import Settings

TAIL_BYTES = 4096  # the bytes before the offset whose hash tells an appended file from a rewritten one
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Fingerprint:
    device: int
    inode: int
    size: int
    mtime_ns: int


def fingerprint(path: str) -> Fingerprint:
    """The file's identity and size now; `InputError` where it is missing or not a regular file."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read it: {exc.strerror or exc}", source=path) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError("not a regular file", source=path)
    return Fingerprint(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class _Resumable(_Log):
    """Claude Code's reader, fed one chunk of whole lines at a time: the response open at a chunk's end stays
    open (a later chunk may hold more of its blocks), where a whole read would close it."""

    inside = False

    def assistant(self, *args: Any) -> Iterator[Call]:
        self.inside = True
        try:
            yield from super().assistant(*args)
        finally:
            self.inside = False

    def _close(self) -> Iterator[Call]:
        if self.inside:  # the next response starts: this one is done
            yield from super()._close()

    def open_head(self) -> Head | None:
        """The response still open, as the de-duplication sees it."""
        p = self.pending
        if p is None:
            return None
        total = p.reported.prompt + p.reported.output if p.reported is not None else 0
        return Head(p.line, p.key[0], p.key[1], p.sidechain, total, p.uuid)


@dataclass
class Tail:
    """What was read of one log, to go on from."""

    path: str
    prompts: bool
    fmt: str = ""  # the reader's name
    offset: int = 0  # the end of the last whole line read
    lines: int = 0  # whole lines read
    seen: Fingerprint | None = None
    tail_hash: str = ""
    calls: list[Call] = field(default_factory=list)  # the calls closed so far (a resumable format's)
    log: _Resumable | None = None
    project: str | None = None
    session_id: str | None = None
    rebuilds: int = 0  # times the log was read again from the start
    session: Session | None = None  # as last built

    def advance(self, settings: Settings) -> bool:
        """Read what was appended since the last look; whether anything changed."""
        now = fingerprint(self.path)
        if self.seen is not None and now == self.seen:
            return False
        if not self._appended(now):
            self._reset()
        self.seen = now
        try:
            if self.fmt in ("", "claude-code"):
                self._read_claude_code(now.size)
            if self.fmt != "claude-code":
                self._read_whole(settings)
        except InputError:
            self._reset()  # half read: the next look starts over
            self.seen = None
            raise
        return True

    def _appended(self, now: Fingerprint) -> bool:
        """Whether the file is the one read, grown or as it was (else it is read again from the start)."""
        before = self.seen
        if before is None or self.offset == 0:
            return before is not None and self.offset == 0 and (now.device, now.inode) == (before.device, before.inode)
        if (now.device, now.inode) != (before.device, before.inode) or now.size < self.offset:
            return False
        return self._hash_before(self.offset) == self.tail_hash

    def _hash_before(self, end: int) -> str:
        start = max(0, end - TAIL_BYTES)
        with open(self.path, "rb") as f:
            f.seek(start)
            return hashlib.sha256(f.read(end - start)).hexdigest()

    def _reset(self) -> None:
        if self.seen is not None:
            self.rebuilds += 1
        self.offset = self.lines = 0
        self.calls, self.log, self.session, self.tail_hash = [], None, None, ""
        self.project = self.session_id = None
        self.fmt = ""  # detected anew: a rewritten file may be another format

    # -- Claude Code: resumed

    def _read_claude_code(self, size: int) -> None:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read(size - self.offset)
        end = chunk.rfind(b"\n") + 1  # whole lines only: the last may still be being written
        if end == 0 and self.fmt == "":
            end = len(chunk)  # a first look at a file of one line with no newline: detected as it is
        whole = chunk[:end]
        if self.offset == 0:
            whole = whole.removeprefix(_BOM)
            if self.fmt == "" and not self._is_claude_code(whole):
                self.fmt = "other"
                return
            self.fmt = "claude-code"
            self._start(whole)
        elif whole and self.log is not None:
            if not self.log.prompts and self.prompts and b'"content"' in whole:
                self._restart(size)  # the log now holds messages: a whole read rebuilds prompts
                return
            self._feed(whole)
        self.offset += end
        self.lines += whole.count(b"\n")
        self.tail_hash = self._hash_before(self.offset)
        if self.project is None:
            self.project = first_string(whole, "cwd")
        if self.session_id is None:
            self.session_id = first_string(whole, "sessionId")
        self.session = None

    def _is_claude_code(self, data: bytes) -> bool:
        from kcost.readers.claude_code import looks_like

        source = Source(self.path, data, os.path.splitext(self.path)[1].lower())
        if not source.lead():
            raise InputError("is empty", source=self.path)
        try:
            return looks_like(source.first_record)
        except InputError:
            return False

    def _start(self, data: bytes) -> None:
        """The first read: the whole file so far, each response billed where `kcost bill` bills it."""
        source = Source(self.path, data, ".jsonl")
        drop = _drops(list(scan(source).heads))
        self.log = _Resumable(self.path, self.prompts and prompts_known(source), STRICT, drop=frozenset(drop))
        self.calls = list(self.log.read(source))

    def _restart(self, size: int) -> None:
        self._reset()
        self._read_claude_code(size)

    def _feed(self, chunk: bytes) -> None:
        """Lines appended: read on from where the last look stopped, line numbers counted on."""
        log = self.log
        assert log is not None
        padded = Source(self.path, b"\n" * self.lines + chunk, ".jsonl")
        closed_before = len(log.heads)
        new = list(log.read(padded))
        heads = [*log.heads]
        open_head = log.open_head()
        drops = _drops(heads + ([open_head] if open_head is not None else []))
        billed = {h.line for h in log.heads[:closed_before] if h.line not in log.drop}
        if drops & billed:  # a later copy bills a response already counted: as a whole read would have it
            self._restart(fingerprint(self.path).size)
            return
        log.drop = frozenset(log.drop | drops)
        self.calls.extend(c for c in new if c.line not in drops)

    def claude_calls(self) -> list[Call]:
        """Every call so far: those closed, and the response still open (unless a copy elsewhere bills it)."""
        log = self.log
        if log is None:
            return []
        out = list(self.calls)
        head = log.open_head()
        if head is not None and log.pending is not None:
            drops = _drops([*log.heads, head])
            if head.line not in drops:
                out.append(log.pending.call())
        return out

    # -- every other format: read whole

    def _read_whole(self, settings: Settings) -> None:
        from kcost import api

        self.session = api.sessions([self.path], settings)[0]
        self.offset = self.seen.size if self.seen else 0
        self.tail_hash = self._hash_before(self.offset) if self.offset else ""

    def built(self, settings: Settings) -> Session:
        """The session as `kcost bill` reads it from the log as it stands."""
        if self.session is not None:
            return self.session
        from kcost.readers.claude_code import ClaudeCode
        from kcost.transcripts.prompts import to_session
        from kcost.transcripts.tokenizer import Estimate

        reader = ClaudeCode()
        if self.log is None:
            raise InputError("is empty", source=self.path)
        notes = [*self.log.counts.notes()]
        calls = self.claude_calls()
        name = Source(self.path, b"").stem
        session = to_session(iter(calls), counter=Estimate(), source=self.path, name=name, notes=notes,
                             prompts=settings.prompts, comparable=reader.comparable, agent=reader.name,
                             project=self.project)  # fmt: skip
        if not session.records:
            raise InputError("no model calls in it yet", source=self.path)
        self.session = session.printable()
        return self.session


def _drops(heads: list[Head]) -> set[int]:
    """The first lines of the log's responses that another copy in it bills instead."""
    return _duplicates([Scan(None, tuple(heads))])[0]
