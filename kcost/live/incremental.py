"""The incremental reader: a growing log read once, then only the bytes appended since the last look.

A `Tail` holds what was read of one log: where the read stopped (the end of its last whole line), the file's
fingerprint (device, inode, size, modification time) with a checksum of every byte read, and its reader's state.
A later look reads from that offset on; a file that shrank, was replaced or rewritten anywhere before the offset
(the checksum of the bytes read differs: an edit in place 40 KB before the end too) is read again from the
start. The checksum is CRC-32 over the bytes read, checked at a look that finds the file changed: about 0.45 ms
a megabyte of log, the one cost of a look that grows with what was read before (a look at an unchanged log reads
nothing). A line still being written (no newline yet) waits for the next look.

A format with a resumable reader (`RESUMABLE`: a module beside the format's reader, which knows its state) is
fed only what was appended, and may ask to be read again from the start. Every other format is read whole
whenever it changed (correct, not incremental). Either way the session is built and billed as `kcost bill`
builds and bills it; the state between looks is kept by `statusline`, in the user's cache folder.
"""

from __future__ import annotations

import os
import stat
import time
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kcost.errors import InputError
from kcost.inputs.files import RACY_NS, crc32_of
from kcost.model.frozen import frozen
from kcost.readers.source import BLOCK, Source

if TYPE_CHECKING:
    from kcost.api.settings import Settings
    from kcost.model.session import Session

_BOM = b"\xef\xbb\xbf"
# resumable readers, tried in order on a log's first record: "module:Class" with `recognise(source)`,
# `Class(path, data, prompts)`, `feed(chunk, lines) -> bool`, `session(prompts, counter)`
RESUMABLE = ("kcost.readers.agents.claude_code_live:Resume", "kcost.readers.agents.kimi_code_live:Resume")


@frozen
class Fingerprint:
    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int = 0


def fingerprint(path: str) -> Fingerprint:
    """The file's identity and size now; `InputError` where it is missing or not a regular file."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read it: {exc.strerror or exc}", source=path) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError("not a regular file", source=path)
    return Fingerprint(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _resumable(source: Source) -> Any:
    from importlib import import_module

    for target in RESUMABLE:
        module, _, name = target.partition(":")
        cls = getattr(import_module(module), name)
        if cls.recognise(source):
            return cls
    return None


@dataclass
class Tail:
    """What was read of one log, to go on from."""

    path: str
    prompts: bool
    resumable: bool | None = None  # None: not known yet
    offset: int = 0  # the end of the last whole line read
    lines: int = 0  # whole lines read
    seen: Fingerprint | None = None
    read_crc: int = 0  # CRC-32 of the bytes before `offset`: what tells an appended file from a rewritten one
    reader: Any = None  # a resumable reader's state
    rebuilds: int = 0  # times the log was read again from the start
    seen_at: int = 0  # when `seen` was taken (ns): a file changed within `RACY_NS` before may change unseen
    session: Session | None = None  # as last built

    def advance(self, settings: Settings) -> bool:
        """Read what was appended since the last look; whether anything changed."""
        now, at = fingerprint(self.path), time.time_ns()
        # unchanged: where the file changed within a tick of the clock before it was seen, its times cannot tell an
        # edit since, and the checksum of the bytes read says so
        racy = self.seen is not None and self.seen_at - max(self.seen.mtime_ns, self.seen.ctime_ns) < RACY_NS
        if now == self.seen and (not racy or self._crc(0, self.offset) == self.read_crc):
            self.seen_at = at if racy else self.seen_at
            return False
        if not self._appended(now):
            self._reset()
        self.seen, self.seen_at = now, at
        try:
            if self.resumable is not False:
                self._read_on(now.size)
            if self.resumable is False:
                self.session = _whole(self.path, settings)
                self.read_crc = self._crc(self.offset, now.size, self.read_crc)
                self.offset = now.size
        except InputError:
            self._reset()  # half read: the next look starts over
            self.seen = None
            raise
        return True

    def restart(self, settings: Settings) -> None:
        """Read the log again from the start, whatever was read of it."""
        self._reset()
        self.seen = None
        self.advance(settings)

    def _appended(self, now: Fingerprint) -> bool:
        """Whether the file is the one read, grown or as it was (else it is read again from the start)."""
        before = self.seen
        if before is None or (now.device, now.inode) != (before.device, before.inode) or now.size < self.offset:
            return False
        return self.offset == 0 or self._crc(0, self.offset) == self.read_crc

    def _crc(self, start: int, end: int, crc: int = 0) -> int:
        """CRC-32 of the log's bytes `start .. end`, going on from `crc` (-1: shorter than it was)."""
        return crc32_of(self.path, start, end, crc)

    def _reset(self) -> None:
        if self.seen is not None:
            self.rebuilds += 1
        self.offset = self.lines = 0
        self.reader, self.session, self.read_crc, self.resumable = None, None, 0, None

    def _read_on(self, size: int, block: int = BLOCK) -> None:
        """Read the whole lines between `offset` and `size`, `block` bytes at a time (a line longer than that whole):
        what is held at once is a block and the longest line, not the log. A file cut short meanwhile ends the read
        where it ends."""
        with open(self.path, "rb") as f:
            while self.offset < size:
                f.seek(self.offset)
                left = size - self.offset
                pieces = [f.read(min(block, left))]
                got = len(pieces[0])
                while pieces[-1] and b"\n" not in pieces[-1] and got < left:  # a line longer than a block
                    pieces.append(f.read(min(block, left - got)))
                    got += len(pieces[-1])
                chunk = b"".join(pieces)
                if not chunk or not self._take(chunk, size):
                    return

    def _take(self, chunk: bytes, size: int) -> bool:
        """Read the whole lines of `chunk`, the bytes at `offset`; whether to read on."""
        end = chunk.rfind(b"\n") + 1  # whole lines only: the last may still be being written
        if end == 0 and self.offset == 0 and len(chunk) >= size:
            end = len(chunk)  # a first look at a log of one line with no newline: read as it is
        if end == 0:
            return False
        whole = chunk[:end]
        crc = zlib.crc32(whole, self.read_crc)
        if self.reader is None:
            whole = whole.removeprefix(_BOM)
            source = Source(self.path, whole, os.path.splitext(self.path)[1].lower())
            if not source.lead():
                raise InputError("is empty", source=self.path)
            cls = _resumable(source)
            self.resumable = cls is not None
            if cls is None:
                return False
            self.reader = cls(self.path, whole, self.prompts)
        elif not self.reader.feed(whole, self.lines):
            # what the reader took of the first block (its kind of log) does not hold for the rest: it reads the
            # log again, given all of it at once
            self._reset()
            self._read_on(size, block=max(size, 1))
            return False
        self.offset += end
        self.lines += whole.count(b"\n")
        self.read_crc = crc
        self.session = None
        return True

    def built(self, settings: Settings) -> Session:
        """The session as `kcost bill` reads it from the log as it stands."""
        if self.session is None and self.resumable is False:
            self.session = _whole(self.path, settings)  # the state of a look under other settings
        if self.session is None:
            if self.reader is None:
                raise InputError("is empty", source=self.path)
            from kcost.prompts.tokenizer import load_counter

            session = self.reader.session(settings.prompts, load_counter(settings.tokenizer))
            if not session.records:
                raise InputError("no model calls in it yet", source=self.path)
            self.session = session.printable()
        return self.session


def _whole(path: str, settings: Settings) -> Session:
    from kcost import api

    return api.sessions([path], settings)[0]
