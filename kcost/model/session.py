"""A session as readers hand it on to billing: one record per billed call, and what the reader had to say.

Each `CallRecord` holds everything known of one billed request: the simulator's request (None where the log
holds no prompt to rebuild), its label, the usage the log reports, how its prompt changed, when it was made
and the model the log names. The per-call views (`requests`, `labels`, ...) are read from the records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import fields, replace
from operator import attrgetter
from typing import Any

from kcost.errors import printable
from kcost.model.calls import Usage
from kcost.model.causes import Change
from kcost.model.frozen import frozen
from kcost.model.requests import Request, Span


@frozen(slots=True)
class CallRecord:
    """One billed request."""

    request: Request | None = None  # for the simulator; None: the log holds no prompt (billed as reported)
    label: str | None = None  # a turn spec's label for the turn
    reported: Usage | None = None  # what the log says the request cost, where it says
    change: Change | None = None  # how its prompt differs from the previous one, where a comparison found it
    time: float | None = None  # when it was made (Unix seconds), where logged
    model: str | None = None  # the model the log names
    conversation: str | None = None  # whose prompt it is where not the main conversation's (a sub-agent's)
    line: int | None = None  # where in its log the call was read (the record's line), where the reader says


@frozen
class Session:
    """What a reader hands on: the billed calls, and what the bill shows about them."""

    source: str
    name: str
    model: str | None
    records: tuple[CallRecord, ...]  # one per billed request, in order
    warmup: tuple[Request, ...] = ()  # requests before the billed ones, not billed (a warm prefix)
    warm_prefix: int = 0  # tokens cached before the first billed request
    model_line: int | None = None  # where the session names its model, for a price-lookup error
    token_counts: str = "turn spec"  # where the token counts come from
    read_notes: tuple[str, ...] = ()  # what the reader skipped or could not check
    build_notes: tuple[str, ...] = ()  # what building the session guessed, sized or left out
    comparable: bool = True  # reported cache hits can be set beside simulated ones (a Kimi provider's, not another's)
    sized: tuple[int, int] = (0, 0)  # calls sized from their logged usage, calls sized by estimate
    unbilled_models: tuple[str, ...] = ()  # models named by log records that are not billed (usage alone)
    agent: str = ""  # whose log it is: the reader's format name (claude-code, codex, kimi-cli, ...), or turn spec
    project: str | None = None  # the project the log records (a working directory), where it records one
    kept_on: str | None = None  # the model the main conversation is kept on (the one-model fix), where it is
    machine: str | None = None  # the machine that read it, where another did (a ledger's import); None: this one
    gone: bool = False  # its log is gone: billed as the ledger kept it (`kcost.ledger`)

    def __post_init__(self) -> None:
        rebuilt = sum(r.request is not None for r in self.records)
        if rebuilt not in (0, len(self.records)):
            raise ValueError("either every call of a session has a request for the simulator, or none has")

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled with its records as plain rows (`plain_rows`): a session read in a worker crosses back to the run's
        process whole, and a row pickles in about a quarter of the time its record's objects take. A class
        derived from this one (a turn spec's, whose records are read as they are iterated) pickles as it would."""
        if self.__class__ is not Session or self.records.__class__ is not tuple:
            return super().__reduce_ex__(protocol)
        given = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "records"}
        return _session, (given, plain_rows(self.records))

    @property
    def requests(self) -> tuple[Request, ...]:
        """The simulator's requests: the warm-up, then one per billed call (none where no prompt was rebuilt)."""
        return (*self.warmup, *(r.request for r in self.records if r.request is not None))

    @property
    def labels(self) -> tuple[str | None, ...]:
        return tuple(r.label for r in self.records)

    @property
    def reported(self) -> tuple[Usage | None, ...]:
        return tuple(r.reported for r in self.records)

    @property
    def changes(self) -> tuple[Change | None, ...]:
        return tuple(r.change for r in self.records)

    @property
    def times(self) -> tuple[float | None, ...]:
        return tuple(r.time for r in self.records)

    @property
    def call_models(self) -> tuple[str | None, ...]:
        return tuple(r.model for r in self.records)

    @property
    def cache_keys(self) -> tuple[str | None, ...]:
        """The cache each of `requests` runs in (`kcost.cache.simulate`'s `caches`): the model its call's log
        names (a call of the main conversation, the one it is kept on, where it is), None where it names none
        (the same as the call before; the warm-up's, the first call's)."""
        return self._keys(self.kept_on)

    @property
    def steady_keys(self) -> tuple[str | None, ...]:
        """The cache each of `requests` would run in had the main conversation stayed on one model (its
        `main_model`): what a model switch is told against (`kcost.cache.simulate`'s `steady`). Side calls and
        sub-agents on models of their own stay there: another conversation on another model is no switch."""
        return self._keys(self.kept_on or self.main_model)

    def _keys(self, main: str | None) -> tuple[str | None, ...]:
        warm = (None,) * len(self.warmup)
        if main is None:
            return (*warm, *(r.model for r in self.records if r.request is not None))
        return (*warm, *(r.model if r.conversation is not None or r.model is None else main
                         for r in self.records if r.request is not None))  # fmt: skip

    @property
    def main_model(self) -> str | None:
        """The model most of the main conversation's calls name (the first of those named as often)."""
        counts = Counter(r.model for r in self.records if r.model and r.conversation is None)
        return counts.most_common(1)[0][0] if counts else None

    @property
    def notes(self) -> tuple[str, ...]:
        """Everything the reader and the session's building had to say, in that order."""
        return (*self.read_notes, *self.build_notes)

    @property
    def logged_models(self) -> tuple[str, ...]:
        """The models the log names for billed calls, in order of first use."""
        return tuple(dict.fromkeys(r.model for r in self.records if r.model))

    @property
    def named_models(self) -> tuple[str, ...]:
        """Every model the log names, billed or not, in order of first use."""
        return tuple(dict.fromkeys((*self.logged_models, *self.unbilled_models)))

    @property
    def span(self) -> tuple[float | None, float | None]:
        """The first and last logged time (held by records that know it: a ledger's, `kcost.ledger.codec`)."""
        known: tuple[float | None, float | None] | None = getattr(self.records, "span", None)
        if known is not None:
            return known
        when = [r.time for r in self.records if r.time is not None]
        return (min(when), max(when)) if when else (None, None)

    def printable(self) -> Session:
        """The session with every text a log gave it (its name, models, labels, notes, project) safe to show on a
        terminal (`kcost.errors.printable`); itself where none needs it. Applied once, where sessions enter a run."""
        named = getattr(self.records, "texts", None)  # records that tell their models and labels without being made
        texts = {self.name, self.model or "", self.project or "", *self.read_notes, *self.build_notes,
                 *self.unbilled_models,
                 *(named() if named is not None else (t for r in self.records for t in (r.model or "", r.label or "")))}
        if all(printable(t) == t for t in texts):  # each text once: a session's calls name few models
            return self

        def note(n: str) -> str:
            return n.__class__(printable(n))  # a routine note stays one

        records = tuple(replace(r, model=r.model and printable(r.model), label=r.label and printable(r.label))
                        for r in self.records)  # fmt: skip
        return replace(self, name=printable(self.name), model=self.model and printable(self.model),
                       project=self.project and printable(self.project),
                       read_notes=tuple(map(note, self.read_notes)), build_notes=tuple(map(note, self.build_notes)),
                       unbilled_models=tuple(map(printable, self.unbilled_models)), records=records)  # fmt: skip


def one_model(session: Session, model: str | None = None) -> Session:
    """The session as if its main conversation had stayed on one model (`model`, else its `main_model`): every
    call of it runs in that model's cache; each call is still priced as it was (the fix is the cache's), and
    sub-agents' and side calls on models of their own stay on them. Itself where the main conversation's calls
    are all on it already, or where no model is given or logged."""
    named = model if model is not None else session.main_model
    main = [r.model for r in session.records if r.conversation is None and r.model is not None]
    if named is None or session.kept_on == named or (session.kept_on is None and all(m == named for m in main)):
        return session
    return replace(session, kept_on=named)


# A record as a row: its fields' values in order, its request's and usage's as rows of their own (a request's
# spans each a row), each read by the dataclass's own fields, so that a field added to any of them travels too.
# Only these exact classes are laid out so (each as a list or a tuple, which no such field holds); anything else
# is pickled as it is.
_CLASSES = (CallRecord, Request, Usage, Span)
_NAMES = tuple(tuple(f.name for f in fields(cls)) for cls in _CLASSES)  # each class's fields, in order
_RECORD, _REQUEST, _USAGE, _SPAN = (attrgetter(*names) for names in _NAMES)
_AT_REQUEST, _AT_REPORTED = _NAMES[0].index("request"), _NAMES[0].index("reported")
_SPANS = tuple(n for n, name in enumerate(_NAMES[1]) if name in ("append", "output"))


def plain_rows(records: Iterable[CallRecord]) -> list[Any]:
    """Each record as the values of its fields in order, a request's, a span's and a usage's too, as tuples and
    lists (a change stays a `Change`): what a session pickles as, and the ledger writes as JSON."""
    out: list[Any] = []
    for record in records:
        if record.__class__ is not CallRecord:
            out.append(record)
            continue
        row = list(_RECORD(record))
        request, usage = row[_AT_REQUEST], row[_AT_REPORTED]
        if request.__class__ is Request:
            row[_AT_REQUEST] = plain_request(request)
        if usage.__class__ is Usage:
            row[_AT_REPORTED] = _USAGE(usage)
        out.append(row)
    return out


def plain_request(request: Request) -> list[Any]:
    """A request as the values of its fields in order, its spans' too (`plain_rows`)."""
    values = list(_REQUEST(request))
    for n in _SPANS:
        values[n] = tuple(_SPAN(span) if span.__class__ is Span else span for span in values[n])
    return values


def _made(cls: Any, values: list[Any]) -> Any:
    """An instance of a slotted `@frozen` class from its fields' values, as unpickling sets them."""
    made = object.__new__(cls)
    cls.__setstate__(made, values)
    return made


def _session(given: dict[str, Any], rows: list[Any]) -> Session:
    """A session unpickled (`Session.__reduce_ex__`): its records made from their rows."""
    return Session(**given, records=_from_rows(rows))


def _from_rows(rows: list[Any]) -> tuple[CallRecord, ...]:
    """A session's records made from their rows (`plain_rows`), each as unpickling makes its object."""
    records = []
    for row in rows:
        if row.__class__ is not list:
            records.append(row)
            continue
        request, usage = row[_AT_REQUEST], row[_AT_REPORTED]
        if request.__class__ is list:
            for n in _SPANS:
                request[n] = tuple(_made(Span, list(span)) if span.__class__ is tuple else span for span in request[n])
            row[_AT_REQUEST] = _made(Request, request)
        if usage.__class__ is tuple:
            row[_AT_REPORTED] = _made(Usage, list(usage))
        records.append(_made(CallRecord, row))
    return tuple(records)

