"""Claude Code's reader, resumable: a log read once, then fed only the lines appended since (`kcost.live`).

The reader's own state (the chain of messages, the response being assembled, what was counted) is kept between
feeds; the response open at the end of a feed stays open, where a whole read would close it, since a later feed
may hold more of its blocks. Which copy of a response is billed is decided over the whole log (`sessions_of`'s
de-duplication): a later line that would move the bill to a copy of a response already billed makes `feed`
answer False, and the caller reads the log again from the start, as `kcost bill` reads it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from kcost.errors import STRICT, InputError
from kcost.model.calls import Call
from kcost.model.session import Session
from kcost.prompts.tokenizer import TokenCounter
from kcost.readers.agents.claude_code import ClaudeCode, Head, Scan, _duplicates, _Log, looks_like, prompts_known, scan
from kcost.readers.jsonl import first_string
from kcost.readers.source import Source


class _Fed(_Log):
    """The reader over chunks of whole lines: a chunk's end closes nothing."""

    def _finish(self) -> Iterator[Call]:
        yield from self._given()  # the responses open stay open: a later feed may hold more of their blocks

    def __getstate__(self) -> dict[str, Any]:
        # kept as plain tuples, and loaded as they are (a state loads them several times as fast): a look reads
        # only the few that share a message id with a response it read (`_touched`), and makes those heads again
        state = self.__dict__.copy()
        state["heads"] = [h if type(h) is tuple else tuple(h) for h in self.heads]
        return state

    def waiting(self) -> list[tuple[Head, Call]]:
        """The responses not given yet (those still open, and those done after one still open), in the order
        they started: each as the run's de-duplication sees it, and as a call."""
        out = []
        for r in self.queue:
            total = r.reported.prompt + r.reported.output if r.reported is not None else 0
            out.append((Head(r.line, r.key[0], r.key[1], r.sidechain, total, r.uuid, r.copy), r.call()))
        return out


KEEP = 4096  # the lines whose chain entries a state keeps at hand; the older ones wait in a file of their own


class StateGone(InputError):
    """The part of a reader's state kept in a file of its own is gone or broken: the log is read again."""


class _Tiered(dict[str, Any]):
    """One of the chain's maps over every line seen (`_Chain.own`, its messages; `_Chain.parent`, its parent),
    the older entries kept apart in a file (`spill`): they are read only where a line follows one off the current
    chain (a jump to another branch), so a state between looks need not hold an entry for every line of the log.
    `len` counts the entries at hand and those apart (a line's entry in both counted twice: the chain takes it as
    a bound only)."""

    def __init__(self, recent: dict[str, Any] | None = None, cold: str | None = None, apart: int = 0) -> None:
        super().__init__(recent or {})
        self.cold = cold  # the file holding the older ones
        self.apart = apart  # how many it holds
        self.loaded: dict[str, Any] | None = None

    def __missing__(self, uuid: str) -> Any:
        return self._older()[uuid]

    def __contains__(self, uuid: object) -> bool:
        return dict.__contains__(self, uuid) or (self.apart > 0 and uuid in self._older())

    def __len__(self) -> int:
        return dict.__len__(self) + self.apart

    def _older(self) -> dict[str, Any]:
        if self.loaded is None:
            # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
            import pickle

            if self.cold is None:
                self.loaded = {}
            else:
                from kcost.inputs.files import read_bytes

                try:  # a regular file only, read with a bound: a FIFO or a device put in its place is no state
                    self.loaded = pickle.loads(read_bytes(self.cold, "state file"))
                except (InputError, pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
                    raise StateGone("the state kept of it is gone: it is read again", source=self.cold) from exc
        assert self.loaded is not None
        return self.loaded

    def spill(self, path: str, keep: int) -> str | None:
        """Where more than `keep` are held here, write them all to `path` (with those already apart) and hold none;
        returns the file they were in before (None: none, or nothing was written)."""
        if dict.__len__(self) <= keep:
            return None
        # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
        import pickle

        every = {**self._older(), **self}
        temp = f"{path}.{os.getpid()}"
        try:
            with open(temp, "wb") as f:
                pickle.dump(every, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temp, path)
        except BaseException:  # nothing half written is left: the entries stay at hand
            if os.path.exists(temp):
                os.unlink(temp)
            raise
        before, self.cold, self.loaded, self.apart = self.cold, path, every, len(every)
        self.clear()
        return before if before != path else None

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Tiered, (dict(self), self.cold, self.apart))


class Resume:
    """One Claude Code log, read so far."""

    @staticmethod
    def recognise(source: Source) -> bool:
        try:
            return looks_like(source.first_record)
        except InputError:
            return False

    def __init__(self, path: str, data: bytes, prompts: bool) -> None:
        """The first read: the log so far, each response billed where `kcost bill` bills it."""
        source = Source(path, data, ".jsonl")
        self.path = path
        self.log = _Fed(
            path, prompts and prompts_known(source), STRICT, drop=frozenset(_drops(list(scan(source).heads)))
        )
        self.log.chain.own, self.log.chain.parent = _Tiered(), _Tiered()
        self.closed = list(self.log.read(source))
        self.project = first_string(data, "cwd")
        self.wants_prompts = prompts

    def feed(self, chunk: bytes, lines: int) -> bool:
        """Lines appended after the `lines` read: read on (False: the log must be read again from the start)."""
        log = self.log
        if not log.prompts and self.wants_prompts and b'"content"' in chunk:
            return False  # the log now holds messages: a whole read rebuilds prompts
        before = len(log.heads)
        new = list(log.read(Source(self.path, chunk, ".jsonl", after=lines)))
        fresh = [*log.heads[before:], *(head for head, _ in log.waiting())]
        drops = _drops(log.heads[:before], fresh)
        if drops - {h.line for h in fresh} - log.drop:  # (the responses read before and those since: apart)
            return False  # a later copy bills a response already billed
        log.drop = frozenset(log.drop | drops)
        self.closed.extend(c for c in new if c.line not in drops)
        if self.project is None:
            self.project = first_string(chunk, "cwd")
        return True

    def calls(self) -> list[Call]:
        """Every call so far: those given (as `closed` holds them: a caller that takes them may empty it), and the
        responses not given yet (unless a copy elsewhere bills them)."""
        return [*self.closed, *self.open_calls()]

    def open_calls(self) -> list[Call]:
        """The responses not given yet, as calls (those a copy elsewhere bills left out); a later feed may add
        to them."""
        waiting = self.log.waiting()
        if not waiting:
            return []
        drops = _drops(self.log.heads, [head for head, _ in waiting])
        return [call for head, call in waiting if head.line not in drops]

    def spill(self, path: str, keep: int | None = None) -> list[str]:
        """Keep the chain's entries of the lines read (but those of the last `keep`, `KEEP` unless given) in the
        files at `path` (messages) and beside it (parents), read only where the log jumps to another branch (see
        `_Tiered`); returns the files no longer used."""
        keep = KEEP if keep is None else keep
        chain, gone = self.log.chain, []
        for tiered, where in ((chain.own, path), (chain.parent, f"{path}-parents")):
            if isinstance(tiered, _Tiered):
                before = tiered.spill(where, keep)
                gone += [before] if before is not None else []
        return gone

    def session(self, prompts: bool, counter: TokenCounter) -> Session:
        """The session, built as a whole read builds it (its parts counted by `counter`)."""
        # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
        from kcost.prompts.build import to_session

        reader = ClaudeCode()
        return to_session(iter(self.calls()), counter=counter, source=self.path, name=Source(self.path, b"").stem,
                          notes=self.log.counts.notes(), prompts=prompts, comparable=reader.comparable,
                          agent=reader.name, project=self.project)  # fmt: skip


def _drops(heads: list[Head], fresh: list[Head] | None = None) -> set[int]:
    """The first lines of the log's responses (`heads`, then `fresh`) that another copy in it bills instead; given
    `fresh` (the responses read since the drops of `heads` alone were settled), those of the responses that share
    a message id with one of them: de-duplication weighs only responses of one message id against each other
    (`claude_code._duplicates`), so the others' stand, and a look costs the responses it touches, not the log's."""
    if fresh is None:
        return _duplicates([Scan(None, tuple(heads))])[0]
    return _duplicates([Scan(None, (*_touched(heads, fresh), *fresh))])[0]


def _touched(heads: list[Head], fresh: list[Head]) -> list[Head]:
    """The responses of `heads` that share a message id with one of `fresh` (those a state kept are plain tuples:
    made heads again)."""
    ids = {h.mid for h in fresh}
    return [Head._make(h) for h in heads if h[1] in ids]
