"""Kimi Code's reader, resumable: a wire read once, then fed only the records appended since (`kcost.live`).

The replay's state (the context's messages, the tools snapshots, the request awaiting its reply) is kept between
feeds; the request still awaiting its reply at the end of a feed stays open, where a whole read would close it,
since a later feed may bring its reply, its usage, or a retry that replaces it. A wire that starts writing
`llm.request` records after requests were built from its steps (an older agent upgraded mid-session) is read
again from the start, as `kcost bill` reads it.
"""

from __future__ import annotations

from kcost.errors import STRICT, InputError
from kcost.model.calls import Call
from kcost.model.session import Session
from kcost.prompts.tokenizer import TokenCounter
from kcost.readers.agents.kimi_code import KimiCode, _Wire
from kcost.readers.jsonl import first_string
from kcost.readers.source import Source


class Resume:
    """One Kimi Code wire, read so far."""

    @staticmethod
    def recognise(source: Source) -> bool:
        try:
            return KimiCode().detect(source.first_record)
        except InputError:
            return False

    def __init__(self, path: str, data: bytes, prompts: bool) -> None:
        """The first read: the wire so far, each request a call once its reply is in."""
        self.path = path
        self.wire = _Wire(Source(path, data, ".jsonl"), [], STRICT)
        self.closed: list[Call] = list(self.wire.read_on(data))
        self.wire.src = Source(path, b"", ".jsonl")  # the bytes read are not kept: only the replay's state
        self.project = first_string(data, "cwd")

    def feed(self, chunk: bytes, lines: int) -> bool:
        """Records appended after the `lines` read: read on (False: the wire must be read again from the start)."""
        if not self.wire.uses_requests and b'"llm.request"' in chunk:
            if self.closed or self.wire.pending is not None:
                return False  # requests were built from steps: the wire is read again as a whole read reads it
            self.wire.uses_requests = True  # no request yet: as if the first look had seen it
        self.closed.extend(self.wire.read_on(chunk, lines))
        if self.project is None:
            self.project = first_string(chunk, "cwd")
        return True

    def open_calls(self) -> list[Call]:
        """The request still awaiting its reply, as a whole read at this point would close it (none: none is)."""
        pending = self.wire.pending
        return [pending.call()] if pending is not None else []

    def calls(self) -> list[Call]:
        """Every call so far: those closed (a caller that takes them may empty `closed`), and the open one."""
        return [*self.closed, *self.open_calls()]

    def session(self, prompts: bool, counter: TokenCounter) -> Session:
        """The session, built as a whole read builds it (its parts counted by `counter`)."""
        # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
        from kcost.prompts.build import to_session

        reader = KimiCode()
        return to_session(iter(self.calls()), counter=counter, source=self.path,
                          name=reader.session_name(Source(self.path, b"")), notes=self.wire.closing_notes(),
                          prompts=prompts, comparable=reader.comparable, agent=reader.name,
                          project=self.project)  # fmt: skip
