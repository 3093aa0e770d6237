"""The incremental reader: a growing log read once, then only the bytes appended since the last look.

A `Tail` holds what was read of one log: where the read stopped (the end of its last whole line), the file's
fingerprint (device, inode, size, modification time, and a hash of the last bytes read) and its reader's state.
A later look reads from that offset on; a file that shrank, was replaced or rewritten (the hash of the bytes
before the offset differs) is read again from the start. A line still being written (no newline yet) waits for
the next look.

A format with a resumable reader (`RESUMABLE`: a module beside the format's reader, which knows its state) is
fed only what was appended, and may ask to be read again from the start. Every other format is read whole
whenever it changed (correct, not incremental). Either way the session is built and billed as `kcost bill`
builds and bills it; the state between looks is kept by `statusline`, in the user's cache folder.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kcost.errors import InputError
from kcost.inputs.files import blake2b
from kcost.model.frozen import frozen
from kcost.readers.source import Source

if TYPE_CHECKING:
    from kcost.api.settings import Settings
    from kcost.model.session import Session

TAIL_BYTES = 4096  # the bytes before the offset whose hash tells an appended file from a rewritten one
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


def fingerprint(path: str) -> Fingerprint:
    """The file's identity and size now; `InputError` where it is missing or not a regular file."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read it: {exc.strerror or exc}", source=path) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError("not a regular file", source=path)
    return Fingerprint(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


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
    tail_hash: str = ""
    reader: Any = None  # a resumable reader's state
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
            if self.resumable is not False:
                self._read_on(now.size)
            if self.resumable is False:
                self.session = _whole(self.path, settings)
                self.offset = now.size
                self.tail_hash = self._hash_before(self.offset)
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
        return self.offset == 0 or self._hash_before(self.offset) == self.tail_hash

    def _hash_before(self, end: int) -> str:
        start = max(0, end - TAIL_BYTES)
        with open(self.path, "rb") as f:
            f.seek(start)
            return blake2b(f.read(end - start), digest_size=32).hexdigest()

    def _reset(self) -> None:
        if self.seen is not None:
            self.rebuilds += 1
        self.offset = self.lines = 0
        self.reader, self.session, self.tail_hash, self.resumable = None, None, "", None

    def _read_on(self, size: int) -> None:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read(size - self.offset)
        end = chunk.rfind(b"\n") + 1  # whole lines only: the last may still be being written
        if end == 0 and self.offset == 0:
            end = len(chunk)  # a first look at a log of one line with no newline: read as it is
        whole = chunk[:end]
        if self.reader is None:
            whole = whole.removeprefix(_BOM)
            source = Source(self.path, whole, os.path.splitext(self.path)[1].lower())
            if not source.lead():
                raise InputError("is empty", source=self.path)
            cls = _resumable(source)
            self.resumable = cls is not None
            if cls is None:
                return
            self.reader = cls(self.path, whole, self.prompts)
        elif whole and not self.reader.feed(whole, self.lines):
            self._reset()
            self._read_on(size)
            return
        self.offset += end
        self.lines += whole.count(b"\n")
        self.tail_hash = self._hash_before(self.offset)
        self.session = None

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
