"""Turn specs: token counts per turn, in YAML, JSON or JSONL, turned into the simulator's requests.

A turn spec carries no text, so each run of tokens gets a synthetic identity: the prefix is run 0, and every
turn's new tokens, edited tokens and output are runs of their own. Identical prefixes are then identical runs
and hash identically; anything new hashes differently. The format is described in the README ("Turn specs")
and by `kcost schema turns`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson
from pydantic import ValidationError

from kcost.cache.simulator import Request, Span
from kcost.causes import Cause, Change
from kcost.document import Lines, load_json, load_yaml
from kcost.errors import InputError, format_loc, pydantic_error
from kcost.readers.source import Source
from kcost.session import CallRecord, Session
from kcost.turn_specs import PreviousOutput, SessionSpec, Turn


def read_turnspec(source: Source, fmt: str) -> Session:
    """Parse and validate a turn spec, then build its requests; every problem is an `InputError`."""
    data, lines = _load(source, fmt)
    if isinstance(data, list):  # a bare list of turns
        data = {"turns": data}
        lines = {("turns", *key): line for key, line in lines.items()}
    if not isinstance(data, dict):
        raise InputError("expected a turn spec: a mapping with `turns`, or a list of turns", source=source.name)
    try:
        spec = SessionSpec.model_validate(data)
    except ValidationError as exc:
        raise pydantic_error(exc, source.name, lines) from None
    return build(spec, source=source.name, name=spec.name or source.stem, lines=lines)


def build(spec: SessionSpec, *, source: str, name: str, lines: Lines | None = None) -> Session:
    """The requests a turn spec describes, with the rules in the README's "Turn specs" section."""
    lines = lines or {}
    state = _State()
    prefix = spec.prefix
    warmup: tuple[Request, ...] = ()
    if prefix and prefix.tokens:
        state.prefix = prefix.tokens
        if prefix.warm:
            warmup = (Request(0.0, 0, (Span(0, 0, prefix.tokens),), turn_start=0, billed=False),)
            state.prev_len = prefix.tokens
        else:
            state.head = (Span(0, 0, prefix.tokens),)
    for index, turn, number in _expanded(spec.turns):
        try:
            state.add(turn, number)
        except InputError as exc:
            where = ("turns", index)
            line = lines.get((*where, exc.field)) or lines.get(where)
            exc.field = format_loc((*where, exc.field or ""))
            raise exc.located(source=source, line=line) from None
    return Session(
        source=source,
        name=name,
        model=spec.model,
        records=tuple(state.records),
        warmup=warmup,
        warm_prefix=prefix.tokens if prefix and prefix.warm else 0,
        model_line=lines.get(("model",)),
        agent="turn spec",  # written by hand, by no agent
    )


class _State:
    """The previous prompt as the next turn sees it: its length, where its reasoning sits, its output."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []
        self.time = 0.0
        self.prev_len = 0  # tokens in the previous request's prompt
        self.head: tuple[Span, ...] = ()  # a cold prefix: carried over, but not yet sent
        self.reasoning: list[tuple[int, int]] = []  # (start, end) of reasoning in the previous prompt
        self.last: Turn | None = None
        self.next_seg = 1  # run 0 is the prefix
        self.prefix = 0  # the prefix's length: an edit before it changes the system prompt

    def _fresh(self) -> int:
        self.next_seg += 1
        return self.next_seg - 1

    def add(self, turn: Turn, number: int) -> None:
        """The request of turn `number`: what it keeps of the previous prompt, what it sends again and anew."""
        self.time += turn.idle
        base = self.prev_len
        sent, reasoning = self._sent_back(turn)
        carried_spans = self.head + sent
        carried = base + _length(carried_spans)
        cut, unchanged = _cut(turn, number, carried)
        reasoning = [(a, min(b, cut)) for a, b in reasoning if a < cut]
        removed = 0
        if turn.strip_reasoning and reasoning:
            unchanged = min(unchanged, reasoning[0][0])
            removed = sum(b - a for a, b in reasoning)
            reasoning = []

        keep = min(base, unchanged)
        append = list(_clip(carried_spans, unchanged - keep)) if unchanged > keep else []
        resent = None
        if sent and unchanged > base:  # a previous output exists only after a first request: no head then
            resent = (base, min(unchanged, base + _length(sent)))
        turn_start = cut - removed
        for tokens in (turn_start - unchanged, turn.new):
            if tokens:
                append.append(Span(self._fresh(), 0, tokens))
        length = keep + _length(append)
        if length < 1:
            raise InputError(f"the prompt of turn {number} is empty: it needs at least one input token", field="new")
        output = (Span(self.next_seg, 0, turn.output),) if turn.output else ()
        self._fresh()  # the output run's id, used or not, so it is always the one before the next turn's
        request = Request(self.time, keep, tuple(append), turn_start, output, resent)
        change = self._change(turn, unchanged, cut, carried, removed)
        self.records.append(CallRecord(request=request, label=turn.label, change=change))
        self.prev_len, self.head, self.last, self.reasoning = length, (), turn, reasoning

    def _change(self, turn: Turn, unchanged: int, cut: int, carried: int, removed: int) -> Change | None:
        """How the turn changed what it carried over, named as a log's comparison would name it (the first change
        in the prompt wins): an edit inside the spec's prefix changes the system prompt, after it a message;
        reasoning stripped; the conversation cut."""
        edited = turn.edit_at is not None and turn.edit_at == unchanged < cut
        if edited and unchanged < self.prefix:
            return Change(Cause.SYSTEM_PROMPT_CHANGED, "the prefix (system prompt) edited")
        if edited:
            return Change(Cause.MESSAGE_EDITED, "an earlier message edited")
        if removed:
            return Change(Cause.REASONING_DROPPED, "reasoning of earlier turns removed")
        if cut < carried:
            return Change(Cause.CUT_SHORT, f"kept {cut:,} of the {carried:,} tokens carried over")
        return None

    def _sent_back(self, turn: Turn) -> tuple[tuple[Span, ...], list[tuple[int, int]]]:
        """The previous turn's output as this turn sends it back (whole, its content alone, or not at all), and
        where reasoning then sits in the prompt carried over."""
        last, base = self.last, self.prev_len
        sent: tuple[Span, ...] = ()
        reasoning = list(self.reasoning)
        if last is not None and last.output:
            out_seg = self.next_seg - 1  # the previous turn's output run
            if turn.previous_output is PreviousOutput.FULL:
                sent = (Span(out_seg, 0, last.output),)
                if last.reasoning:
                    reasoning.append((base, base + last.reasoning))
            elif turn.previous_output is PreviousOutput.CONTENT:
                sent = (Span(out_seg, last.reasoning, last.output - last.reasoning),)
        return sent, reasoning


def _cut(turn: Turn, number: int, carried: int) -> tuple[int, int]:
    """(where the prompt carried over is cut, where it is first edited): `keep` and `edit_at`, checked against
    the `carried` tokens."""
    cut = carried
    if turn.keep is not None:
        if turn.keep > carried:
            raise InputError(f"keeps {turn.keep} tokens but turn {number} carries over {carried}", field="keep")
        cut = turn.keep
    unchanged = cut
    if turn.edit_at is not None:
        if turn.edit_at > cut:
            raise InputError(f"edits at token {turn.edit_at} but turn {number} carries {cut}", field="edit_at")
        unchanged = turn.edit_at
    return cut, unchanged


def _expanded(turns: list[Turn]) -> Iterator[tuple[int, Turn, int]]:
    """(index in the file, the turn, its 1-based number in the session)."""
    number = 0
    for index, turn in enumerate(turns):
        for _ in range(turn.repeat):
            number += 1
            yield index, turn, number


def _length(spans: tuple[Span, ...] | list[Span]) -> int:
    return sum(s.length for s in spans)


def _clip(spans: tuple[Span, ...], tokens: int) -> Iterator[Span]:
    for span in spans:
        if tokens <= 0:
            return
        take = min(span.length, tokens)
        yield Span(span.seg, span.start, take)
        tokens -= take


# ---- loading, with the line of every field ------------------------------------------------------------


def _load(source: Source, fmt: str) -> tuple[Any, Lines]:
    if fmt == "auto":
        fmt = source.sniff()
    if fmt == "jsonl":
        return _load_jsonl(source)
    if fmt == "json":
        return load_json(source.text, source.name)
    return load_yaml(source.text, source.name)


class _Duplicate(Exception):
    pass


def _no_duplicates(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in items:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def _load_jsonl(source: Source) -> tuple[Any, Lines]:
    turns: list[Any] = []
    lines: Lines = {}
    header: dict[str, Any] = {}
    for number, raw in enumerate(source.text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            orjson.loads(raw)  # the one JSON check: no lone surrogates, no non-finite numbers, bounded nesting
            record = json.loads(raw, object_pairs_hook=_no_duplicates)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", source=source.name, line=number) from None
        except _Duplicate as exc:
            raise InputError("duplicate key", source=source.name, line=number, field=str(exc)) from None
        except (ValueError, RecursionError) as exc:
            raise InputError(
                f"cannot read this record: {type(exc).__name__}", source=source.name, line=number
            ) from None
        if isinstance(record, dict) and "session" in record and (turns or header):
            raise InputError("the session header must be the first line", source=source.name, line=number,
                             field="session")  # fmt: skip
        if isinstance(record, dict) and "session" in record:
            if set(record) != {"session"} or not isinstance(record["session"], dict):
                raise InputError(
                    'a header line holds only {"session": {...}}',
                    source=source.name,
                    line=number,
                    field="session",
                )
            header = record["session"]
            if "turns" in header:
                raise InputError("turns go on lines of their own", source=source.name, line=number, field="turns")
            for key in header:
                lines[(key,)] = number
            continue
        lines[("turns", len(turns))] = number
        turns.append(record)
    return {**header, "turns": turns}, lines
