"""Turn specs: token counts per turn, in YAML, JSON or JSONL, turned into the simulator's requests.

A turn spec carries no text, so each run of tokens gets a synthetic identity: the prefix is run 0, and every
turn's new tokens, edited tokens and output are runs of their own. Identical prefixes are then identical runs
and hash identically; anything new hashes differently. The format is described in the README ("Turn specs")
and by `kcost schema turns`.

The format's one definition is the pydantic models of `kcost.readers.specs.models`: they give its JSON Schema and word
every error. A spec is checked here first by `validate`, a hand-written check of the common, valid input that keeps
pydantic off a cold run: anything it does not plainly accept (an unknown field, a type pydantic would coerce, a bound
crossed) goes to the models, which accept it as they always did or say what is wrong in their words
(`tests/readers/test_turnspec_check.py` holds the two to the same answers).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import orjson

from kcost.cache.model import parse_duration
from kcost.errors import InputError, format_loc, printable, pydantic_error
from kcost.inputs.documents import Lines, load_json, load_yaml
from kcost.model.bounds import MAX_TOKENS, MAX_TURNS
from kcost.model.causes import Cause, Change
from kcost.model.requests import Request, Span
from kcost.model.session import CallRecord, Session
from kcost.readers.source import Source

if TYPE_CHECKING:
    from kcost.readers.specs.models import SessionSpec


def read_turnspec(source: Source, fmt: str) -> Session:
    """Parse and validate a turn spec, then build its requests; every problem is an `InputError`."""
    data, lines = _load(source, fmt)
    if isinstance(data, list):  # a bare list of turns
        data = {"turns": data}
        lines = {("turns", *key): line for key, line in lines.items()}
    if not isinstance(data, dict):
        raise InputError("expected a turn spec: a mapping with `turns`, or a list of turns", source=source.name)
    spec = validate(data, source.name, lines)
    return build(spec, source=source.name, name=spec.name or source.stem, lines=lines)


# ---- validation: the common input checked by hand, anything else by the models ------------------------------


class TurnLike(Protocol):
    """A validated turn: a `kcost.readers.specs.models.Turn`, or a `SpecTurn` checked here."""

    @property
    def new(self) -> int: ...
    @property
    def output(self) -> int: ...
    @property
    def reasoning(self) -> int: ...
    @property
    def previous_output(self) -> str: ...
    @property
    def keep(self) -> int | None: ...
    @property
    def edit_at(self) -> int | None: ...
    @property
    def strip_reasoning(self) -> bool: ...
    @property
    def idle(self) -> float: ...
    @property
    def repeat(self) -> int: ...
    @property
    def label(self) -> str | None: ...


class PrefixLike(Protocol):
    @property
    def tokens(self) -> int: ...
    @property
    def warm(self) -> bool: ...


class SpecLike(Protocol):
    """A validated turn spec: a `kcost.readers.specs.models.SessionSpec`, or a `Spec` checked here."""

    @property
    def name(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def prefix(self) -> PrefixLike | None: ...
    @property
    def turns(self) -> Sequence[TurnLike]: ...


class SpecTurn:
    """A turn as `validate` accepts it: the fields and defaults of `kcost.readers.specs.models.Turn`."""

    __slots__ = ("new", "output", "reasoning", "previous_output", "keep", "edit_at", "strip_reasoning", "idle",
                 "repeat", "label")  # fmt: skip

    def __init__(self, new: int = 0, output: int = 0, reasoning: int = 0, previous_output: str = "full",
                 keep: int | None = None, edit_at: int | None = None, strip_reasoning: bool = False,
                 idle: float = 0, repeat: int = 1, label: str | None = None) -> None:  # fmt: skip
        self.new, self.output, self.reasoning, self.previous_output = new, output, reasoning, previous_output
        self.keep, self.edit_at, self.strip_reasoning, self.idle = keep, edit_at, strip_reasoning, idle
        self.repeat, self.label = repeat, label


class SpecPrefix:
    __slots__ = ("tokens", "warm")

    def __init__(self, tokens: int, warm: bool = False) -> None:
        self.tokens, self.warm = tokens, warm


class Spec:
    """A turn spec as `validate` accepts it: the fields of `kcost.readers.specs.models.SessionSpec`."""

    __slots__ = ("name", "model", "prefix", "turns")

    def __init__(self, name: str | None, model: str | None, prefix: SpecPrefix | None, turns: list[SpecTurn]) -> None:
        self.name, self.model, self.prefix, self.turns = name, model, prefix, turns


_SPEC_KEYS = frozenset(("version", "name", "model", "prefix", "turns"))
_PREFIX_KEYS = frozenset(("tokens", "warm"))
_TURN_KEYS = frozenset(SpecTurn.__slots__)
_TOKEN_KEYS = ("new", "output", "reasoning", "keep", "edit_at")
_PREVIOUS = frozenset(("full", "content", "none"))  # kcost.readers.specs.models.PreviousOutput's values


def validate(data: dict[str, Any], source: str = "", lines: Lines | None = None) -> SpecLike:
    """The turn spec `data` holds, validated as `kcost.readers.specs.models.SessionSpec` validates it; a problem is the
    models' `InputError`, at its line in `lines`."""
    spec = checked(data)
    if spec is not None:
        return spec
    # deferred: pydantic: loaded only where used (start-up; tests/test_cli.py)
    from pydantic import ValidationError

    # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
    from kcost.readers.specs.models import SessionSpec

    try:
        return SessionSpec.model_validate(data)
    except ValidationError as exc:
        raise pydantic_error(exc, source, lines) from None


def checked(data: dict[str, Any]) -> Spec | None:
    """`data` as a `Spec`, where it is plainly valid; None where the models must judge it (it may still be valid:
    a value they coerce, an idle time they parse)."""
    if not _SPEC_KEYS.issuperset(data):
        return None
    version = data.get("version", 1)
    name, model, prefix, turns = data.get("name"), data.get("model"), data.get("prefix"), data.get("turns")
    if version.__class__ is not int or version != 1 or not _text(name) or not _text(model):
        return None
    if turns.__class__ is not list or not turns:
        return None
    head = None
    if prefix is not None:
        if prefix.__class__ is not dict or not _PREFIX_KEYS.issuperset(prefix):
            return None
        tokens, warm = prefix.get("tokens"), prefix.get("warm", False)
        if not _tokens(tokens) or warm.__class__ is not bool:
            return None
        head = SpecPrefix(tokens, warm)
    out = []
    total = 0
    for raw in turns:
        turn = _turn(raw)
        if turn is None:
            return None
        total += turn.repeat
        out.append(turn)
    if total > MAX_TURNS:
        return None
    return Spec(name, model, head, out)


def _turn(raw: object) -> SpecTurn | None:
    if raw.__class__ is not dict:
        return None
    assert isinstance(raw, dict)
    if not _TURN_KEYS.issuperset(raw):
        return None
    get = raw.get
    for key in _TOKEN_KEYS:
        value = get(key)
        if value is not None and not _tokens(value):
            return None
    new, output, reasoning = get("new", 0), get("output", 0), get("reasoning", 0)
    keep, edit_at = get("keep"), get("edit_at")
    if (new is None or output is None or reasoning is None) or reasoning > output:
        return None
    previous, strip = get("previous_output", "full"), get("strip_reasoning", False)
    repeat, label = get("repeat", 1), get("label")
    if previous.__class__ is not str or previous not in _PREVIOUS or strip.__class__ is not bool:
        return None
    if repeat.__class__ is not int or not 1 <= repeat <= MAX_TURNS or not _text(label):
        return None
    idle = _idle(raw["idle"]) if "idle" in raw else 0  # the model's default, as it is: an int
    if idle is None:
        return None
    return SpecTurn(new, output, reasoning, previous, keep, edit_at, strip, idle, repeat, label)


def _tokens(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and value.__class__ is int and 0 <= value <= MAX_TOKENS


def _text(value: object) -> bool:
    return value is None or value.__class__ is str


def _idle(value: object) -> float | None:
    """Seconds idle, as the model's validator reads them (`parse_duration`); None where it must judge them."""
    if value.__class__ is int and value == 0:
        return 0.0
    if value.__class__ not in (int, float, str):
        return None

    try:
        return parse_duration(value)
    except InputError:
        return None


# ---- building ------------------------------------------------------------------------------------------------


def build(spec: SpecLike | SessionSpec, *, source: str, name: str, lines: Lines | None = None) -> Session:
    """The requests a turn spec describes, with the rules in the README's "Turn specs" section: built once here,
    where a turn that cannot be built is an error at its line, and again each time the session's records are
    read (`Records`)."""
    lines = lines if lines is not None else {}
    records = Records(spec.turns, spec.prefix)
    state = records.state()
    kept: list[CallRecord] | None = [] if len(records) <= KEEP_TURNS else None
    for index, turn, number in _expanded(spec.turns):
        try:
            record = state.add(turn, number)
            if kept is not None:
                kept.append(record)
        except InputError as exc:
            where = ("turns", index)
            line = lines.get((*where, exc.field)) or lines.get(where)
            exc.field = format_loc((*where, exc.field or ""))
            raise exc.located(source=source, line=line) from None
    if kept is not None:  # built once: the bill reads these
        records._kept = tuple(kept)
    prefix = spec.prefix
    return SpecSession(
        source=source,
        name=name,
        model=spec.model,
        records=records,  # type: ignore[arg-type]  # a sequence of records, built as it is read
        warmup=records.warmup,
        warm_prefix=prefix.tokens if prefix and prefix.warm else 0,
        model_line=lines.get(("model",)) if spec.model is not None else None,  # a JSON spec's lines take a parse
        agent="turn spec",  # written by hand, by no agent
    )


# A turn spec of at most these many turns keeps its records once built (a quote bills each of its two sessions under
# two or three cache models, and a bill reads them once they are checked); a longer one builds them again at each
# read, holding one at a time (a 100,000-turn spec: bench/bench_memory.py)
KEEP_TURNS = 20_000


class Records(Sequence[CallRecord]):
    """A turn spec's records, built from its turns each time they are read: a 100,000-turn spec is held as its
    turns (a few dozen bytes each), never as a tuple of calls, so a bill that reads them once (JSONL, CSV, a
    summary) holds one at a time. Read by position, or no longer than `KEEP_TURNS`, they are built once and
    kept."""

    def __init__(self, turns: Sequence[TurnLike], prefix: PrefixLike | None) -> None:
        self.turns, self.prefix = turns, prefix
        self.length = sum(t.repeat for t in turns)
        self.warmup: tuple[Request, ...] = ()
        if prefix and prefix.tokens and prefix.warm:
            self.warmup = (Request(0.0, 0, (Span(0, 0, prefix.tokens),), turn_start=0, billed=False),)
        self._kept: tuple[CallRecord, ...] | None = None

    def state(self) -> _State:
        """The state before the first turn."""
        state, prefix = _State(), self.prefix
        if prefix and prefix.tokens:
            state.prefix = prefix.tokens
            if prefix.warm:
                state.prev_len = prefix.tokens
            else:
                state.head = (Span(0, 0, prefix.tokens),)
        return state

    def __iter__(self) -> Iterator[CallRecord]:
        if self._kept is None and self.length <= KEEP_TURNS:
            self._keep()
        if self._kept is not None:
            yield from self._kept
            return
        yield from self._built()

    def _keep(self) -> tuple[CallRecord, ...]:
        """Every record, built once and kept."""
        self._kept = tuple(self._built())
        return self._kept

    def _built(self) -> Iterator[CallRecord]:
        state = self.state()
        for _, turn, number in _expanded(self.turns):
            yield state.add(turn, number)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: Any) -> Any:
        kept = self._kept if self._kept is not None else self._keep()
        return kept[index]

    def __reduce__(self) -> Any:  # sent to a worker as its turns, not its calls
        return (Records, (list(self.turns), self.prefix))


class SpecSession(Session):
    """A turn spec's session: its records are `Records`, read by iterating them; what a log says of each call
    (its usage, time and model) a turn spec never says, so those views are answered without building a call.
    Given other records (`dataclasses.replace`), it is a plain `Session`."""

    def __post_init__(self) -> None:
        if not isinstance(self.records, Records):
            Session.__post_init__(self)

    def _blank(self) -> bool:
        return isinstance(self.records, Records)

    @property
    def reported(self) -> tuple[None, ...]:
        return (None,) * len(self.records) if self._blank() else Session.reported.fget(self)  # type: ignore[attr-defined]

    @property
    def times(self) -> tuple[float | None, ...]:
        return (None,) * len(self.records) if self._blank() else Session.times.fget(self)  # type: ignore[attr-defined]

    @property
    def call_models(self) -> tuple[str | None, ...]:
        return (None,) * len(self.records) if self._blank() else Session.call_models.fget(self)  # type: ignore[attr-defined]

    @property
    def cache_keys(self) -> tuple[str | None, ...]:
        if self._blank():
            return (None,) * (len(self.warmup) + len(self.records))
        keys: tuple[str | None, ...] = Session.cache_keys.fget(self)  # type: ignore[attr-defined]
        return keys

    @property
    def logged_models(self) -> tuple[str, ...]:
        return () if self._blank() else Session.logged_models.fget(self)  # type: ignore[attr-defined]

    @property
    def span(self) -> tuple[float | None, float | None]:
        return (None, None) if self._blank() else Session.span.fget(self)  # type: ignore[attr-defined]

    def printable(self) -> Session:
        if self._blank() and all(
            printable(t) == t for t in (self.name, self.model or "", *self.read_notes, *self.build_notes)
        ):
            assert isinstance(self.records, Records)
            if all(t.label is None or printable(t.label) == t.label for t in self.records.turns):
                return self
        return Session.printable(self)


class _State:
    """The previous prompt as the next turn sees it: its length, where its reasoning sits, its output."""

    def __init__(self) -> None:
        self.time = 0.0
        self.prev_len = 0  # tokens in the previous request's prompt
        self.head: tuple[Span, ...] = ()  # a cold prefix: carried over, but not yet sent
        # (start, end) of reasoning in the previous prompt, in order and apart: a turn changes only its end
        self.reasoning: list[tuple[int, int]] = []
        self.last: TurnLike | None = None
        self.next_seg = 1  # run 0 is the prefix
        self.prefix = 0  # the prefix's length: an edit before it changes the system prompt

    def _fresh(self) -> int:
        self.next_seg += 1
        return self.next_seg - 1

    def add(self, turn: TurnLike, number: int) -> CallRecord:
        """The request of turn `number`: what it keeps of the previous prompt, what it sends again and anew."""
        self.time += turn.idle
        base = self.prev_len
        sent, reasoning = self._sent_back(turn)
        carried_spans = self.head + sent
        carried = base + _length(carried_spans)
        cut, unchanged = _cut(turn, number, carried)
        while reasoning and reasoning[-1][0] >= cut:  # what the cut leaves out (the last ones: they are in order)
            reasoning.pop()
        if reasoning and reasoning[-1][1] > cut:
            reasoning[-1] = (reasoning[-1][0], cut)
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
        self.prev_len, self.head, self.last, self.reasoning = length, (), turn, reasoning
        return CallRecord(request=request, label=turn.label, change=change)

    def _change(self, turn: TurnLike, unchanged: int, cut: int, carried: int, removed: int) -> Change | None:
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

    def _sent_back(self, turn: TurnLike) -> tuple[tuple[Span, ...], list[tuple[int, int]]]:
        """The previous turn's output as this turn sends it back (whole, its content alone, or not at all), and
        where reasoning then sits in the prompt carried over (the state's own list, added to: a turn that cannot be
        built ends the state's use)."""
        last, base = self.last, self.prev_len
        sent: tuple[Span, ...] = ()
        reasoning = self.reasoning
        if last is not None and last.output:
            out_seg = self.next_seg - 1  # the previous turn's output run
            if turn.previous_output == "full":
                sent = (Span(out_seg, 0, last.output),)
                if last.reasoning:
                    reasoning.append((base, base + last.reasoning))
            elif turn.previous_output == "content":
                sent = (Span(out_seg, last.reasoning, last.output - last.reasoning),)
        return sent, reasoning


def _cut(turn: TurnLike, number: int, carried: int) -> tuple[int, int]:
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


def _expanded(turns: Sequence[TurnLike]) -> Iterator[tuple[int, TurnLike, int]]:
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
    lines: dict[tuple[object, ...], int] = {}
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
