"""Fixes for the causes `kcost explain` names, each priced by simulating the session again as it would be with the
fix applied: the saving is the difference of the two bills, under the same cache model and prices.

A fix rewrites the simulator's requests (`Request`: what a call keeps of the previous prompt, what it appends), so
one mechanism serves every reader. The rewritten session is built call by call beside the original one: each
prompt is held as spans (`_Prompt`), and a map from the original prompt's positions to the rewritten one's
(`_Map`) carries every later call's `keep` over, so a call the fix does not touch keeps what it kept before, in
the rewritten prompt. A call the fix does touch carries the previous (rewritten) prompt whole, then what it sent
back of the previous output, then its newest turn: its prompt changed nowhere before the newest turn.

- `stable-prefix`: the system prompt, tool list or effort that changed is kept byte-identical; what changes on
  every call goes in the newest message (the few tokens that move there are new input either way);
- `pass-reasoning`: the previous output is sent back whole, reasoning included, on every call;
- `append`: an edited or reordered message is sent as a new message after the conversation;
- `compaction`: a compaction that rewrote the session's stable head (the first call's carried prefix: the system
  prompt and tools) keeps it byte-identical instead, the compacted prompt as long as it was;
- `idle`: gaps longer than the cache lives and at most an hour are closed, by keep-alive calls sent just before
  the TTL lapses (each one billed: the whole prompt as a hit, one new token and one output token) or by 1-hour
  cache writes (billed at the 1-hour write rate), whichever costs less; keep-alive calls only where the TTL is
  at least `KEEP_ALIVE_LEAST_TTL` (a shorter one, 0 included, no call can be relied on to keep alive);
- `one-model`: every call on the model the session used most (its cache and its prices).

The work grows with the spans and calls of the session, never with its tokens: keep-alive calls are at most
`MAX_KEEP_ALIVES` a gap, whatever the TTL.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from kcost.cache.model import HOUR_WRITES, CacheModel, Kind
from kcost.model.causes import Cause
from kcost.model.frozen import frozen
from kcost.model.requests import Request, Span
from kcost.model.session import CallRecord, Session, one_model

KEEP_ALIVE_LEAD = 0.9  # a keep-alive call goes out when 90% of the TTL has passed since the previous call
# The shortest TTL keep-alive calls are planned for: a keep-alive call is a request, its round trip and its
# prompt's prefill due within the TTL's last tenth; below a minute that is no plan to rely on (and a TTL of 0
# cannot be kept at all). So a gap (at most an hour) holds at most `MAX_KEEP_ALIVES` of them.
KEEP_ALIVE_LEAST_TTL = 60.0
MAX_KEEP_ALIVES = int(HOUR_WRITES // (KEEP_ALIVE_LEAST_TTL * KEEP_ALIVE_LEAD))


@frozen(slots=True)
class Fix:
    """A change a user can make, the causes it removes, and what to change, in words."""

    name: str
    causes: frozenset[Cause]
    change: str


FIXES: tuple[Fix, ...] = (
    Fix(
        "stable-prefix",
        frozenset(
            {Cause.SYSTEM_PROMPT_CHANGED, Cause.TOOL_LIST_CHANGED, Cause.UNLOGGED_PREFIX_CHANGED, Cause.EFFORT_CHANGED}
        ),
        "keep the system prompt, tools and effort byte-identical; move what changes (dates, state) into the "
        "newest message",
    ),  # fmt: skip
    Fix(
        "pass-reasoning",
        frozenset({Cause.REASONING_DROPPED}),
        "pass every assistant message back whole, reasoning_content included (K3 requires it)",
    ),  # fmt: skip
    Fix(
        "append",
        frozenset({Cause.MESSAGE_EDITED, Cause.PROMPT_CHANGED}),
        "append corrections as new messages instead of editing or reordering earlier ones",
    ),  # fmt: skip
    Fix(
        "compaction",
        frozenset({Cause.CUT_SHORT}),
        "compact behind the system prompt and tools, so the compacted prompt starts with the cached prefix",
    ),
    Fix("idle", frozenset({Cause.EXPIRED}), "resume within the cache's lifetime"),
    Fix(
        "one-model",
        frozenset({Cause.MODEL_SWITCH}),
        "keep one model for the whole session: switching models mid-session may cause instability (K3's guidance), "
        "and each model's cache is its own",
    ),  # fmt: skip
)
BY_NAME = {f.name: f for f in FIXES}
FIXABLE: frozenset[Cause] = frozenset().union(*(f.causes for f in FIXES))


@frozen(slots=True)
class Plan:
    """What to simulate again: the session rewritten, under which cache model, and the calls it touched."""

    session: Session
    cache: CacheModel
    turns: tuple[int, ...]  # the original calls the fixes change (1-based)


def idle_ways(session: Session, cache: CacheModel) -> list[str]:
    """The ways the `idle` fix can go for this session: keep-alive calls (where the TTL is at least
    `KEEP_ALIVE_LEAST_TTL`), 1-hour writes (none where the cache already lives an hour or caches nothing)."""
    if cache.kind is Kind.NONE or cache.ttl is None or cache.hour_writes or not _gaps(session, cache):
        return []
    if not keeps_alive(cache):
        return ["1-hour writes"]
    return ["keep-alive", "1-hour writes"]


def keeps_alive(cache: CacheModel) -> bool:
    """Whether keep-alive calls can keep this cache's entries alive: it forgets them, after at least
    `KEEP_ALIVE_LEAST_TTL` seconds."""
    return cache.ttl is not None and cache.ttl >= KEEP_ALIVE_LEAST_TTL


def plan(session: Session, cache: CacheModel, names: Iterable[str], idle: str = "keep-alive") -> Plan:
    """The session with the fixes `names` applied (`idle`: which way the idle gaps are closed, one of
    `idle_ways`: keep-alive calls for a TTL `keeps_alive` refuses are a `ValueError`)."""
    wanted = {BY_NAME[n] for n in names}
    causes = frozenset().union(*(f.causes for f in wanted))
    model = session.main_model if BY_NAME["one-model"] in wanted else None
    pings = BY_NAME["idle"] in wanted and idle == "keep-alive"
    if pings and not keeps_alive(cache):
        raise ValueError(f"no keep-alive calls for a TTL of {cache.ttl} s: {KEEP_ALIVE_LEAST_TTL:g} s at least")
    out_cache = replace(cache, ttl=HOUR_WRITES) if BY_NAME["idle"] in wanted and idle != "keep-alive" else cache
    if not pings and model is None and causes <= {Cause.EXPIRED}:
        # the gaps closed by 1-hour writes alone: the session as it was sent, under 1-hour writes
        return Plan(session, out_cache, tuple(i for i, _ in _gaps(session, cache)))
    records, touched = _rewrite(session, causes, cache.ttl if pings else None)
    rewritten = replace(session, records=tuple(records))
    if model is not None:  # the main conversation's calls in one model's cache, each priced as it was
        rewritten = one_model(rewritten, model)
        switched = [i for i, r in enumerate(session.records, 1)
                    if r.conversation is None and r.model not in (None, model)]  # fmt: skip
        touched = sorted({*touched, *switched})
    if BY_NAME["idle"] in wanted:
        touched = sorted({*touched, *(i for i, _ in _gaps(session, cache))})
    return Plan(rewritten, out_cache, tuple(touched))


def applicable(session: Session, cache: CacheModel, causes: Iterable[Cause]) -> list[Fix]:
    """The fixes that can change this session's bill: one for a cause its misses carry, or its prompts' changes
    (a compaction that cuts into the system prompt misses as "no checkpoint", not as a cut)."""
    found = set(causes) | {r.change.cause for r in session.records if r.change is not None}
    out = [f for f in FIXES if f.causes & found]
    if BY_NAME["idle"] in out and not idle_ways(session, cache):
        out.remove(BY_NAME["idle"])
    return out


# ---- the rewrite ------------------------------------------------------------------------------------


def _gaps(session: Session, cache: CacheModel) -> list[tuple[int, float]]:
    """(call, seconds idle before it) for every gap longer than the TTL and at most an hour."""
    if cache.ttl is None:
        return []
    out = []
    previous = None
    for i, record in enumerate(session.records, 1):
        t = record.request.time if record.request is not None else None
        if t is not None and previous is not None and cache.ttl < t - previous <= HOUR_WRITES:
            out.append((i, t - previous))
        previous = t if t is not None else previous
    return out


def _touches(record: CallRecord, request: Request, previous: int, causes: frozenset[Cause]) -> bool:
    """Whether a fix for `causes` rewrites this call: its prompt changed before the newest turn, for one of them."""
    if record.change is not None:
        return record.change.cause in causes
    return Cause.PROMPT_CHANGED in causes and request.keep < previous  # a change no comparison named


class _Conversation:
    """One conversation of a rewrite: its latest prompt as sent and as rewritten, where each position of the one
    sits in the other, its latest output and its head (its first call's carried prefix)."""

    def __init__(self) -> None:
        self.original, self.rewritten, self.where = _Prompt(), _Prompt(), _Map()
        self.previous_output: tuple[Span, ...] = ()
        self.head: int | None = None


def _rewrite(session: Session, causes: frozenset[Cause], ping_ttl: float | None) -> tuple[list[CallRecord], list[int]]:
    """The records with every call whose prompt changed for one of `causes` carried unchanged, and keep-alive
    calls in the idle gaps where `ping_ttl` is given; and the calls rewritten.

    Each conversation (the main one, each sub-agent's: `CallRecord.conversation`) is rewritten against its own
    previous prompt: another conversation's calls in between change nothing of it. A call that follows another
    conversation's is sent whole (it keeps nothing of that prompt; the cache finds what it holds of it)."""
    if not session.requests:
        return list(session.records), []
    fresh = itertools.count(-2, -1)  # token runs of the rewrite's own: below every reader's
    sent = _Prompt()  # the latest prompt as sent, whichever conversation sent it
    conversations: dict[str | None, _Conversation] = {}
    last: _Conversation | None = None
    records: list[CallRecord] = []
    touched: list[int] = []
    last_time = 0.0  # when the call before was made (`last`'s)
    previous: CallRecord | None = None  # the record before, whose conversation a keep-alive call keeps
    steps: Iterator[tuple[int, CallRecord | None, Request]] = itertools.chain(
        ((0, None, r) for r in session.warmup),
        ((i, rec, rec.request) for i, rec in enumerate(session.records, 1) if rec.request is not None),
    )
    for number, record, req in steps:
        if last is not None and ping_ttl is not None and ping_ttl < req.time - last_time <= HOUR_WRITES:
            records += _keep_alive(last.rewritten, last_time, req.time, ping_ttl, fresh, previous or record)
        sent.cut(req.keep)
        sent.extend(req.append)
        own = record.conversation if record is not None else None
        c = conversations.setdefault(own, _Conversation())
        if c is not last:  # the call, made relative to its own conversation's previous prompt
            keep = _common(c.original, sent)
            req = replace(req, keep=keep, append=tuple(sent.slice(keep, sent.length)))
        new = _step(c, number, record, req, causes, fresh, touched)
        if c is not last and last is not None:  # sent whole after another conversation's prompt
            new = replace(new, keep=0, append=tuple(c.rewritten.slice(0, c.rewritten.length)))
        last, last_time, previous = c, req.time, record or previous
        if record is not None:
            records.append(replace(record, request=new))
    return records, touched


def _step(c: _Conversation, number: int, record: CallRecord | None, req: Request, causes: frozenset[Cause],
          fresh: Iterator[int], touched: list[int]) -> Request:  # fmt: skip
    """One call of conversation `c` (`req` relative to its previous prompt), rewritten: relative to its previous
    rewritten prompt."""
    original, rewritten, where = c.original, c.rewritten, c.where
    before = original.length
    head = c.head or 0
    changed = record is not None and req.keep < before and _touches(record, req, before, causes)
    if record is not None and record.change is not None and record.change.cause is Cause.CUT_SHORT:
        changed = changed and req.keep < head  # a compaction behind the head is already reusable
    original.cut(req.keep)
    original.extend(req.append)
    if changed:
        new = _rewritten_call(req, original, rewritten, where, c.previous_output, before, causes, head)
        touched.append(number)
    elif req.keep < before:
        new = _diverged_call(req, original, rewritten, where, before, fresh)
    else:
        new = _carried_call(req, original, rewritten, where)
    if c.head is None and number:
        c.head = new.turn_start  # its first call's carried prefix: the system prompt and tools
    c.previous_output = req.output
    return new


def _common(a: _Prompt, b: _Prompt) -> int:
    """How many tokens `a` and `b` share from the first."""
    i = j = oa = ob = shared = 0
    while i < len(a.spans) and j < len(b.spans):
        x, y = a.spans[i], b.spans[j]
        if x.seg != y.seg or x.start + oa != y.start + ob:
            break
        n = min(x.length - oa, y.length - ob)
        shared, oa, ob = shared + n, oa + n, ob + n
        if oa == x.length:
            i, oa = i + 1, 0
        if ob == y.length:
            j, ob = j + 1, 0
    return shared


def _carried_call(req: Request, original: _Prompt, rewritten: _Prompt, where: _Map) -> Request:
    """A call no fix touches: it keeps, of the rewritten prompt, what it kept of the original one."""
    keep = where.at(req.keep)
    rewritten.cut(keep)
    rewritten.extend(req.append)
    where.cut(req.keep)
    where.add(req.keep, keep, original.length - req.keep)
    resent = None
    if req.resent_output is not None:
        resent = (where.at(req.resent_output[0]), where.at(req.resent_output[1]))
    return replace(req, keep=keep, turn_start=where.at(min(req.turn_start, original.length)), resent_output=resent)


def _diverged_call(req: Request, original: _Prompt, rewritten: _Prompt, where: _Map, before: int,
                   fresh: Iterator[int]) -> Request:  # fmt: skip
    """A call no fix touches whose prompt changed before its newest turn: it keeps what it kept, and sends again
    what it carried over as long as the rewritten conversation is (reasoning passed back makes it longer), new
    to the cache as it was; then its newest turn. Past the change nothing of it can hit, so the tokens' identity
    there is the call's own either way."""
    keep = where.at(req.keep)
    turn_start = min(req.turn_start, original.length)
    carried = where.at(before) + turn_start - before if turn_start >= before else where.at(turn_start)
    carried = max(carried, keep)
    resent = [Span(next(fresh), 0, carried - keep)] if carried > keep else []
    newest = original.slice(turn_start, original.length)
    rewritten.cut(keep)
    rewritten.extend(resent)
    rewritten.extend(newest)
    where.cut(req.keep)
    where.add(req.keep, keep, min(turn_start - req.keep, carried - keep))
    where.add(turn_start, carried, original.length - turn_start)
    return replace(req, keep=keep, append=(*resent, *newest), turn_start=carried, resent_output=None)


def _rewritten_call(req: Request, original: _Prompt, rewritten: _Prompt, where: _Map, previous_output: tuple[Span, ...],
                    before: int, causes: frozenset[Cause], head: int) -> Request:  # fmt: skip
    """A call a fix touches: the previous rewritten prompt whole, the previous output as it was sent back (whole,
    with `pass-reasoning`), then the newest turn as the call sent it."""
    keep = rewritten.length
    turn_start = min(req.turn_start, original.length)
    if Cause.REASONING_DROPPED in causes:
        sent = list(previous_output)
    else:
        sent = list(_tail(previous_output, max(0, turn_start - before)))
    newest = original.slice(turn_start, original.length)
    if Cause.CUT_SHORT in causes and req.keep < head:  # the compacted prompt starts with the head, as long
        keep = min(head, rewritten.length, original.length)
        sent, newest = [], original.slice(keep, original.length)
        turn_start = keep
    rewritten.cut(keep)
    start = keep + _length(sent)
    rewritten.extend(sent)
    rewritten.extend(newest)
    mapped = where.at(req.keep)
    where.cut(req.keep)
    where.add(req.keep, mapped, min(turn_start - req.keep, max(0, start - mapped)))
    where.add(turn_start, start, original.length - turn_start)
    resent = (keep, keep + _length(sent)) if sent else None
    return replace(req, keep=keep, append=(*sent, *newest), turn_start=start, resent_output=resent)


def _keep_alive(prompt: _Prompt, since: float, until: float, ttl: float, fresh: Iterator[int],
                record: CallRecord | None) -> Iterator[CallRecord]:  # fmt: skip
    """Keep-alive calls from `since` to `until`, one when `KEEP_ALIVE_LEAD` of the TTL has passed: each sends the
    whole prompt and one new token, and generates one token. At most `MAX_KEEP_ALIVES` (`plan` sends none for a
    TTL shorter than `KEEP_ALIVE_LEAST_TTL`, so a gap of at most an hour needs no more)."""
    step = ttl * KEEP_ALIVE_LEAD
    base = prompt.length
    t = since + step
    for _ in range(MAX_KEEP_ALIVES if step > 0 and base else 0):
        if t >= until:
            break
        req = Request(t, base, (Span(next(fresh), 0, 1),), turn_start=base, output=(Span(next(fresh), 0, 1),))
        yield CallRecord(request=req, label="keep-alive", time=None, model=record.model if record else None,
                         conversation=record.conversation if record else None)  # fmt: skip
        t += step  # the next call keeps at most `base` tokens: the keep-alive's own token is not carried


def _tail(spans: Sequence[Span], tokens: int) -> Iterator[Span]:
    """The last `tokens` tokens of `spans` (what a harness sends back of an output without its reasoning), at
    most all of them."""
    skip = max(0, _length(spans) - tokens)
    for span in spans:
        if skip >= span.length:
            skip -= span.length
            continue
        yield Span(span.seg, span.start + skip, span.length - skip)
        skip = 0


def _length(spans: Iterable[Span]) -> int:
    return sum(s.length for s in spans)


class _Prompt:
    """A prompt as spans with their starts, cut and extended in place."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.starts: list[int] = []
        self.length = 0

    def cut(self, keep: int) -> None:
        if keep >= self.length:
            return
        j = bisect_right(self.starts, keep) - 1
        if j >= 0 and self.starts[j] < keep:
            span = self.spans[j]
            self.spans[j] = Span(span.seg, span.start, keep - self.starts[j])
            j += 1
        del self.spans[max(j, 0) :], self.starts[max(j, 0) :]
        self.length = keep

    def extend(self, spans: Iterable[Span]) -> None:
        for span in spans:
            if span.length > 0:
                self.spans.append(span)
                self.starts.append(self.length)
                self.length += span.length

    def slice(self, lo: int, hi: int) -> list[Span]:
        out = []
        j = max(0, bisect_right(self.starts, lo) - 1)
        while j < len(self.spans) and self.starts[j] < hi:
            a, span = self.starts[j], self.spans[j]
            start, end = max(lo, a), min(hi, a + span.length)
            if end > start:
                out.append(Span(span.seg, span.start + start - a, end - start))
            j += 1
        return out


class _Map:
    """Where each position of the original prompt sits in the rewritten one: pieces (original start, rewritten
    start, length) in order; a position in no piece maps to the end of the piece before it."""

    def __init__(self) -> None:
        self.origins: list[int] = []
        self.targets: list[int] = []
        self.lengths: list[int] = []

    def at(self, position: int) -> int:
        j = bisect_right(self.origins, position) - 1
        if j < 0:
            return position if not self.origins else 0
        return self.targets[j] + min(position - self.origins[j], self.lengths[j])

    def cut(self, keep: int) -> None:
        j = bisect_right(self.origins, keep) - 1
        if j >= 0:
            self.lengths[j] = min(self.lengths[j], keep - self.origins[j])
        n = j + 1 if j >= 0 else 0
        if n and self.lengths[n - 1] == 0 and self.origins[n - 1] == keep:
            n -= 1
        del self.origins[n:], self.targets[n:], self.lengths[n:]

    def add(self, origin: int, target: int, length: int) -> None:
        if length > 0:
            self.origins.append(origin)
            self.targets.append(target)
            self.lengths.append(length)
