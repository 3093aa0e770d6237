"""One session's requests through one cache model: hit and miss tokens per request, and why the rest missed.

A prompt is a list of spans, each a run of tokens with an identity (`Span(seg, start, length)`: tokens
`start .. start+length` of the token run `seg`). Identical prefixes are identical span lists, so a prefix's
identity is a chain: every span is interned once as `(parent, seg, start, length)`, which is what a chained
hash of its blocks would be, computed once per distinct span instead of once per request. A request says what
it keeps of the previous prompt and what it appends (`Request.keep`, `Request.append`), so the work per
request grows with what is new in it, not with the length of the prompt it re-sends.

The rules are `docs/design/cache-model.md` sections 2 and 3 of the project's design notes:

- tokens [0, B) hit, where B is a multiple of the block size, every block before B is cached on this chain,
  a KDA checkpoint retained at B is alive, and B <= L - 1 (one prompt token is always computed);
- a request retains checkpoints at the last block endpoint at or before the start of its newest turn and at
  or before its end (capped as above), plus every `every` blocks of what it computed; with `mtp`, the two at its
  turn boundaries (and the one after a cached output) one block lower;
- a provider's checkpointed rule may keep none at the turn's start (OpenAI's GPT-5.6 breakpoint, at the end of
  the newest message alone) and one where the prompt left a cached prefix no checkpoint ended (DeepSeek V4's
  common-prefix units);
- `ideal` hits the whole shared prefix (capped at L - 1); `none` hits nothing;
- every request refreshes the live entries on its chain; an entry unused for `ttl` seconds is gone, and a
  later request that passes over its position does not bring it back.

Liveness is kept lazily: the entries on the current prompt all share the time of the last request, and an
entry's own time is written only when the prompt moves off it. One path is kept: a log that interleaves
conversations moves it back to their common prefix at every switch, which costs the length of the
conversation it switches to.

Checkpoints are found the same way: stored by the span they fall in, so a request looks only at the checkpoints
of the spans it appends, and the ones kept every `every` blocks are runs (a first and a last position), so a
prompt of 10^9 tokens computed once keeps one run, not two million checkpoints. No work grows with the tokens a
request re-sends (`bench/bench_bounds.py` measures sessions at the bounds of `kcost/model/bounds.py`).

A prefix cache belongs to one model: a request served by another model finds nothing this one cached, and a
request switching back finds this one's cache as it was left (subject to its TTL). `simulate` keeps one
`Simulator` per model a session's calls name, and what the current prompt shares with each one's last prompt,
carried from request to request span by span; a request made relative to the previous call is made relative to
its own model's last prompt from that, so a switch costs what the model's cache lacks, not the prompt's length.
What a switch costs is what one cache for the whole session would have hit (`Reason.MODEL_SWITCH`).

"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import replace

from kcost.cache.model import CacheModel, Kind
from kcost.cache.rules import hit_cap, kept_points, kept_run
from kcost.model.requests import MissPart, Outcome, Reason, Request, Span

_ROOT = -1
_NEVER = float("-inf")
_END = float("inf")  # past every position, for bisecting runs by their first position


def simulate(
    requests: Iterable[Request],
    model: CacheModel,
    caches: Iterable[Hashable | None] | None = None,
    steady: Iterable[Hashable | None] | None = None,
) -> Iterator[Outcome]:
    """The outcome of every billed request, in order.

    `caches`: the cache each request runs in, one key per request (the model its call was served by: a prefix
    cache belongs to one model); None for a request, the same as the one before it (the first named, before
    any). Without keys, or with one, every request runs in one cache. `steady`: the cache each would run in had
    the session not switched models (`Session.steady_keys`: its main conversation kept on one model), which a
    switch's misses are told against (`Reason.MODEL_SWITCH`); without it, one cache for the whole session; the
    same as `caches`, no miss is a switch's.
    """
    keys = _resolved(caches) if caches is not None else []
    if len(set(keys)) <= 1:
        sim = Simulator(model)
        for request in requests:
            outcome = sim.run(request)
            if request.billed:
                yield outcome
        return
    base = _resolved(steady) if steady is not None else None
    yield from _switching(list(requests), keys, base, model)


def _resolved(caches: Iterable[Hashable | None]) -> list[Hashable]:
    keys = list(caches)
    named = next((k for k in keys if k is not None), None)
    out: list[Hashable] = []
    for key in keys:
        named = key if key is not None else named
        out.append(named)
    return out


def _switching(
    requests: list[Request], keys: list[Hashable], steady: list[Hashable] | None, model: CacheModel
) -> Iterator[Outcome]:
    """Requests that switch between caches (`_Caches`), each one's misses told against the same request's where
    the session had not switched (`steady`; None: in one cache for the whole session): what that would have hit
    is the switch's (`Reason.MODEL_SWITCH`, `_blamed`), the tokens keeping one model saves (where the
    checkpoints each way retains do not make it miss more; there, the model's own cache's reasons stand)."""
    if len(keys) != len(requests) or (steady is not None and len(steady) != len(requests)):
        raise ValueError(f"{len(keys)} cache keys for {len(requests)} requests")
    caches = _Caches(model)
    if steady == keys:  # nothing switched: nothing to tell the misses against
        for request, key in zip(requests, keys, strict=True):
            outcome = caches.run(request, key)
            if request.billed:
                yield outcome
        return
    one = _Caches(model)
    base = steady if steady is not None else [None] * len(requests)
    for request, key, kept in zip(requests, keys, base, strict=True):
        outcome = _blamed(caches.run(request, key), one.run(request, kept))
        if request.billed:
            yield outcome


class _Caches:
    """One cache per key, each seeing only its own requests, each request made relative to that cache's last
    prompt.

    What the current prompt shares with each cache's last prompt (`agree`) is carried from request to request:
    a request keeping `keep` tokens of the prompt before leaves a cache's agreement as it was when that was
    shorter, else compares only what it appends, so the work per request grows with what it appends and, on a
    switch, with what the cache it goes to lacks; never with the prompt's length."""

    def __init__(self, model: CacheModel) -> None:
        self.model = model
        self.sims: dict[Hashable, Simulator] = {}
        self.agree: dict[Hashable, int] = {}
        self.last: Hashable = None
        self.started = False

    def run(self, request: Request, key: Hashable) -> Outcome:
        sims, agree, last = self.sims, self.agree, self.last
        for k, other in sims.items():
            if agree[k] >= request.keep:
                agree[k] = request.keep + other.agreeing(request.keep, request.append)
        if key not in sims:
            sims[key], agree[key] = Simulator(self.model), 0
        sim = sims[key]
        moved = request
        if self.started and last != key:  # a switch: the request, made relative to this cache's last prompt
            moved = replace(request, keep=agree[key], append=_after(sims[last], request, agree[key]))
        outcome = sim.run(moved)
        agree[key], self.last, self.started = sim.prompt_length, key, True
        return outcome


def _after(previous: Simulator, req: Request, pos: int) -> tuple[Span, ...]:
    """The tokens of `req`'s prompt from `pos` on: of the previous prompt (on `previous`), `pos .. req.keep`,
    then what `req` appends."""
    if pos >= req.keep:
        return tuple(_dropped(req.append, pos - req.keep))
    return (*previous.path_spans(pos, req.keep), *req.append)


def _dropped(spans: Iterable[Span], tokens: int) -> Iterator[Span]:
    """`spans` less their first `tokens` tokens."""
    for span in spans:
        cut = min(tokens, span.length)
        tokens -= cut
        if span.length > cut:
            yield Span(span.seg, span.start + cut, span.length - cut)


def _blamed(outcome: Outcome, alone: Outcome) -> Outcome:
    """The outcome of a request in its model's cache, its misses told against `alone`, the same request's in one
    cache for the whole session: what that one would have hit is the switch's, and the rest misses for the
    reasons it would have missed there (a block's end, an output not cached, new input), which no switch changes."""
    if alone.hit <= outcome.hit:
        return outcome
    switch = MissPart(Reason.MODEL_SWITCH, alone.hit - outcome.hit, outcome.hit)
    return outcome._replace(misses=(switch, *alone.misses))


def _blocks(model: CacheModel) -> tuple[int, int]:
    """The block a simulator of `model` places checkpoints on (0: none, hits end anywhere or nowhere) and the
    tokens between the checkpoints it keeps `every` blocks (0: none)."""
    block = model.block if model.checkpointed else 0
    return block, model.every * block if block and model.every else 0


class Simulator:
    """The cache as one session sees it: the current prompt as a chain of spans, and what is cached."""

    def __init__(self, model: CacheModel) -> None:
        self.model = model
        self._block, self._step = _blocks(model)
        self._anywhere = model.anywhere
        # Interned spans: (parent, seg, start, length) is one node, found among the nodes that start the same run
        # at the same place after the same parent (its siblings: shorter or longer cuts of one span, which the
        # ideal model can hit partially) by its length. One node is held as itself, not in a map: most spans
        # have no sibling, and a live view's state keeps this map between calls. A node's length and stored
        # time by id.
        self._siblings: dict[tuple[int, int, int], int | dict[int, int]] = {}  # node, or length -> node
        self._node_len: list[int] = []
        self._node_time: list[float] = []
        # KDA checkpoints by the identity of the prefix they end: (parent, seg, start, offset) -> time, and the
        # positions of the live ones on the current path, sorted (their stored times are stale while there).
        self._ckpt: dict[tuple[int, int, int, int], float] = {}
        self._ckpt_on_path: list[int] = []
        # The offsets of the stored checkpoints by the span they fall in, (parent, seg, start) -> sorted offsets:
        # a path finds the checkpoints in its new spans without visiting every block boundary of them.
        self._ckpt_in: dict[tuple[int, int, int], list[int]] = {}
        # The checkpoints kept every `step` tokens (`every`), as runs: (first, last) on the current path holds a
        # checkpoint at every multiple of `step` from first to last (sorted, disjoint); stored ones by the span
        # they fall in, (parent, seg, start) -> [(first, last, time)] as offsets in it. A 10^9-token prompt
        # computed once keeps one run, not one checkpoint per block.
        self._runs: list[tuple[int, int]] = []
        self._runs_in: dict[tuple[int, int, int], list[tuple[int, int, float]]] = {}
        # The current prompt (plus its output, when outputs are cached).
        self._path: list[int] = []
        self._spans: list[Span] = []
        self._starts: list[int] = []
        self._len = 0
        self._prompt_len = 0
        self._time: float | None = None  # of the last request: every entry on the path was used then
        self._fresh = 0  # the path's nodes from here on were pushed since (not used by the last request)

    # ---- one request -------------------------------------------------------------------------------

    def run(self, req: Request) -> Outcome:
        now = req.time
        ttl = self.model.ttl
        first = self._time is None
        if req.keep > self._prompt_len:
            raise ValueError(f"keep={req.keep} is longer than the previous prompt ({self._prompt_len})")
        if req.keep < 0:
            raise ValueError(f"keep={req.keep} is negative")
        prev_live = not first and (ttl is None or now - self._time <= ttl)  # type: ignore[operator]
        if not first and not prev_live:  # every entry was last used by the previous request at the latest
            self._ckpt.clear()
            self._ckpt_in.clear()
            self._ckpt_on_path.clear()
            self._runs.clear()
            self._runs_in.clear()

        self._truncate(req.keep)
        self._fresh = len(self._path)
        for span in req.append:
            self._push(span)
        self._adopt_checkpoints(req.keep, now, ttl)
        length = self._prompt_len = self._len
        if length < 1:
            raise ValueError("a request needs at least one prompt token")
        output = req.output_tokens if req.output_tokens is not None else sum(s.length for s in req.output)
        kind = self.model.kind
        if kind is Kind.NONE:
            self._finish(now, req, hit=0)
            return Outcome(length, 0, output, (MissPart(Reason.CACHING_OFF, length, 0),))

        shared, stale = self._shared(req.keep, prev_live, now, ttl)
        if ttl is not None and shared < length and not first and (stale or not prev_live):
            shared_any = self._shared(req.keep, True, now, None)[0]
        else:  # nothing it passed was stored and expired: what any lifetime would share is the same
            shared_any = shared
        block = self._block
        cap = length - 1 if self._anywhere else hit_cap(length, block)
        limit = min(shared, cap)
        found = limit // self.model.step * self.model.step if self._anywhere else self._deepest_checkpoint(limit)
        hit = found if found >= self.model.min_tokens else 0  # a provider caches nothing shorter
        misses = self._why(req, hit, shared, shared_any, cap, first, found)
        self._finish(now, req, hit, limit)
        return Outcome(length, hit, output, misses)

    # ---- the path ------------------------------------------------------------------------------------

    @property
    def prompt_length(self) -> int:
        """The last request's prompt length (0 before any)."""
        return self._prompt_len

    def path_spans(self, lo: int, hi: int) -> list[Span]:
        """Tokens `lo .. hi` of the path (the last prompt, then its output where outputs are cached), as spans."""
        out: list[Span] = []
        j = max(0, bisect_right(self._starts, lo) - 1)
        while j < len(self._spans) and self._starts[j] < hi:
            span, start = self._spans[j], self._starts[j]
            a, b = max(lo, start), min(hi, start + span.length)
            if a < b:
                out.append(Span(span.seg, span.start + a - start, b - a))
            j += 1
        return out

    def agreeing(self, pos: int, spans: Iterable[Span]) -> int:
        """How many leading tokens of `spans` are the last prompt's from token `pos` on, compared span by span."""
        end, n = self._prompt_len, 0
        j = bisect_right(self._starts, pos) - 1
        if j < 0 or pos >= end:
            return 0
        at = pos - self._starts[j]  # the offset of token `pos` in span j
        for span in spans:
            seg, start, left = span.seg, span.start, span.length
            while left > 0:
                if j == len(self._spans) or self._starts[j] + at >= end:
                    return n
                mine = self._spans[j]
                if (mine.seg, mine.start + at) != (seg, start):
                    return n
                take = min(left, mine.length - at, end - self._starts[j] - at)
                n, start, left, at = n + take, start + take, left - take, at + take
                if at == mine.length:
                    j, at = j + 1, 0
        return n

    def _push(self, span: Span) -> None:
        if span.length <= 0:
            return
        spans = self._spans
        if spans and spans[-1].seg == span.seg and spans[-1].start + spans[-1].length == span.start:
            last = spans.pop()
            joined = self._path.pop()
            if len(self._path) < self._fresh:  # it leaves the path, used by the last request like all it kept
                self._node_time[joined] = self._time if self._time is not None else _NEVER
                self._fresh = len(self._path)
            self._len = self._starts.pop()
            span = Span(span.seg, last.start, last.length + span.length)
        self._path.append(self._node(span))
        self._spans.append(span)
        self._starts.append(self._len)
        self._len += span.length

    def _node(self, span: Span) -> int:
        """The node of `span` after the path's end: the one interned, else a new one."""
        lengths, length = self._node_len, span.length
        start = (self._path[-1] if self._path else _ROOT, span.seg, span.start)
        others = self._siblings.get(start)
        if isinstance(others, int):
            if lengths[others] == length:
                return others
        elif others is not None:
            found = others.get(length)
            if found is not None:
                return found
        node = len(lengths)
        lengths.append(length)
        self._node_time.append(_NEVER)
        if others is None:
            self._siblings[start] = node
        elif isinstance(others, int):
            self._siblings[start] = {lengths[others]: others, length: node}
        else:
            others[length] = node
        return node

    def _truncate(self, keep: int) -> None:
        """Cut the path to `keep` tokens; what leaves it keeps the time of the last request."""
        if keep >= self._len:
            return
        t = self._time if self._time is not None else _NEVER
        leaving = bisect_right(self._ckpt_on_path, keep)
        for b in self._ckpt_on_path[leaving:]:
            self._ckpt[self._ckpt_key(b)] = t
        del self._ckpt_on_path[leaving:]
        self._leave_runs(keep, t)
        j = bisect_right(self._starts, keep) - 1  # the span holding token `keep`
        if j >= 0 and self._starts[j] == keep:
            j -= 1
            remnant = None
        else:
            remnant = self._spans[j]
        cut = j if remnant is not None else j + 1
        for node in self._path[cut:]:
            self._node_time[node] = t
        del self._path[cut:], self._spans[cut:], self._starts[cut:]
        self._len = self._starts[-1] + self._spans[-1].length if self._spans else 0
        if remnant is not None:
            self._push(Span(remnant.seg, remnant.start, keep - self._len))

    def _adopt_checkpoints(self, start: int, now: float, ttl: float | None) -> None:
        """Checkpoints already stored for the path's blocks after `start`: alive ones join it, expired ones go.
        Only the spans past `start` are looked at, and in them only the stored checkpoints."""
        if not self._block or not (self._ckpt or self._runs_in):
            return
        first = max(0, bisect_right(self._starts, start) - 1)  # the span holding token `start`, or the first
        for j in range(first, len(self._path)):
            span = self._spans[j]
            base = (self._path[j - 1] if j > 0 else _ROOT, span.seg, span.start)
            if self._runs_in:
                self._adopt_runs(base, self._starts[j], self._starts[j] + span.length, start, now, ttl)
            offsets = self._ckpt_in.get(base)
            if not offsets:
                continue
            origin = self._starts[j]
            lo = bisect_right(offsets, start - origin)
            hi = bisect_right(offsets, span.length)
            gone = []
            for offset in offsets[lo:hi]:
                key = (*base, offset)
                if self._live(self._ckpt[key], now, ttl):
                    self._ckpt_on_path.append(origin + offset)
                else:
                    del self._ckpt[key]
                    gone.append(offset)
            if gone:
                dead = set(gone)
                offsets[lo:hi] = [o for o in offsets[lo:hi] if o not in dead]

    def _retain(self, pos: int, now: float) -> None:
        key = self._ckpt_key(pos)
        if key not in self._ckpt:
            insort(self._ckpt_in.setdefault(key[:3], []), key[3])
        self._ckpt[key] = now
        i = bisect_left(self._ckpt_on_path, pos)
        if i == len(self._ckpt_on_path) or self._ckpt_on_path[i] != pos:
            self._ckpt_on_path.insert(i, pos)

    def _adopt_runs(self, base: tuple[int, int, int], origin: int, end: int, start: int, now: float,
                    ttl: float | None) -> None:  # fmt: skip
        """The stored runs of the span `base` (tokens `origin .. end` of the path) past `start`: alive ones join
        the path and leave the store; expired ones go."""
        stored = self._runs_in.get(base)
        if not stored:
            return
        step = self._step
        lo, hi = (start // step + 1) * step, end // step * step  # the checkpoint positions this request adopts
        kept: list[tuple[int, int, float]] = []
        for first, last, t in stored:
            a, b = max(origin + first, lo), min(origin + last, hi)
            if a > b:
                kept.append((first, last, t))  # not on this part of the path
            elif self._live(t, now, ttl):
                self._add_run(a, b)
                if origin + first < a:
                    kept.append((first, a - step - origin, t))
                if origin + last > b:
                    kept.append((b + step - origin, last, t))
        if kept:
            self._runs_in[base] = kept
        else:
            del self._runs_in[base]

    def _add_run(self, first: int, last: int) -> None:
        """Checkpoints at every multiple of `step` from `first` to `last` join the path's runs."""
        runs, step = self._runs, self._step
        i = bisect_left(runs, (first, first))
        if i and runs[i - 1][1] + step >= first:  # touches the run before it
            i -= 1
            first = runs[i][0]
        j = i
        while j < len(runs) and runs[j][0] <= last + step:
            last = max(last, runs[j][1])
            j += 1
        runs[i:j] = [(first, last)]

    def _leave_runs(self, keep: int, t: float) -> None:
        """The path's runs past `keep` leave it for the store, with the time `t` of the last request; called before
        the path is cut, while its spans still say where each checkpoint falls."""
        runs, step = self._runs, self._step
        while runs and runs[-1][1] > keep:
            first, last = runs.pop()
            after = (keep // step + 1) * step
            self._store_run(max(first, after), last, t)
            if first < after:
                runs.append((first, after - step))
                break

    def _store_run(self, first: int, last: int, t: float) -> None:
        """Store the run `first .. last` of the current path, split at its spans (a checkpoint at a span's end
        belongs to that span, as in `_ckpt_key`)."""
        step = self._step
        j = bisect_left(self._starts, first) - 1
        while j < len(self._spans) and self._starts[j] < last:
            origin = self._starts[j]
            end = origin + self._spans[j].length
            lo, hi = max(first, (origin // step + 1) * step), min(last, end // step * step)
            if lo <= hi:
                span = self._spans[j]
                base = (self._path[j - 1] if j > 0 else _ROOT, span.seg, span.start)
                self._runs_in.setdefault(base, []).append((lo - origin, hi - origin, t))
            j += 1

    def _ckpt_key(self, pos: int) -> tuple[int, int, int, int]:
        """The identity of the prefix [0, pos) of the current path, pos > 0."""
        j = bisect_left(self._starts, pos) - 1
        span = self._spans[j]
        parent = self._path[j - 1] if j > 0 else _ROOT
        return (parent, span.seg, span.start, pos - self._starts[j])

    def _live(self, t: float, now: float, ttl: float | None) -> bool:
        return t != _NEVER and (ttl is None or now - t <= ttl)

    # ---- lookups ------------------------------------------------------------------------------------

    def _shared(self, keep: int, prev_live: bool, now: float, ttl: float | None) -> tuple[int, bool]:
        """Tokens at the front of the current prompt that are cached and alive, to the token, and whether the walk
        met an entry stored but expired (where none was, a walk under any lifetime from `keep` ends the same)."""
        pos = keep if prev_live else 0
        starts, path, times, lengths = self._starts, self._path, self._node_time, self._node_len
        j = bisect_right(starts, pos) - 1
        if j >= 0 and starts[j] + self._spans[j].length <= pos:
            j += 1  # the span at `pos` lies wholly in the kept part
        while j < len(path):
            node = path[j]
            start = starts[j]
            t = times[node]
            if t != _NEVER and (ttl is None or now - t <= ttl):  # `_live`
                end = start + lengths[node]
                if end > pos:
                    pos = end
                j += 1
                continue
            stale = t != _NEVER
            span = self._spans[j]
            parent = path[j - 1] if j > 0 else _ROOT
            covered = 0
            others = self._siblings.get((parent, span.seg, span.start))
            for other in () if others is None else (others,) if isinstance(others, int) else others.values():
                if self._live(times[other], now, ttl):
                    covered = max(covered, lengths[other])
                elif times[other] != _NEVER:
                    stale = True
            return max(pos, start + min(covered, span.length)), stale
        return max(pos, self._len), False

    def _deepest_checkpoint(self, limit: int) -> int:
        """The largest position <= limit with a live KDA checkpoint on this chain (0 if none)."""
        i = bisect_right(self._ckpt_on_path, limit)
        deepest = self._ckpt_on_path[i - 1] if i else 0
        i = bisect_right(self._runs, (limit, _END))
        if i:  # the run starting at or before `limit` (one starting there too: its first is `limit`)
            first, last = self._runs[i - 1]
            deepest = max(deepest, min(last, limit // self._step * self._step))
        return deepest

    # ---- after the request ----------------------------------------------------------------------------

    def _finish(self, now: float, req: Request, hit: int, common: int = 0) -> None:
        """The request served: what it used is fresh, and it keeps its checkpoints (`common`: how much of its
        prompt was cached, which a rule keeping junctions keeps one at)."""
        self._time = now
        self._fresh = len(self._path)  # the whole prompt was used now; an output pushed after it was not
        block = self._block
        if not block:
            if self.model.output and self._anywhere:
                for span in req.output:
                    self._push(span)
            return
        length = self._prompt_len
        cap = hit_cap(length, block)
        rule, lower = self.model.kind.rule, block if self.model.mtp else 0
        # with MTP the drafter's dropped block leaves the tokens to recompute: the end is not capped a token short
        top = length // block * block if lower else cap
        start = req.turn_start // block * block if rule is None or rule.turn_start else top
        for b in kept_points(start, top, hit):
            if b > lower:
                self._retain(b - lower, now)
        junction = common // block * block
        if rule is not None and rule.junctions and junction > hit:
            self._retain(junction, now)
        run = kept_run(cap, hit, self._step) if self._step else None
        if run is not None:
            self._add_run(*run)
        if self.model.output:  # decoding ends with a checkpoint after the output, even an empty one
            for span in req.output:
                self._push(span)
            self._adopt_checkpoints(length, now, self.model.ttl)
            end = self._len // block * block
            if end > cap and end > lower:
                self._retain(end - lower, now)

    # ---- why ----------------------------------------------------------------------------------------

    def _why(
        self, req: Request, hit: int, shared: int, shared_any: int, cap: int, first: bool, found: int
    ) -> tuple[MissPart, ...]:
        length = self._prompt_len
        cached_end = min(shared, length)
        expired_end = max(cached_end, min(shared_any, length))
        rest = expired_end
        turn = max(rest, min(req.turn_start, length))
        out_start = None if req.resent_output is None else max(rest, min(req.resent_output[0], turn))
        # What ends the cached prefix before the newest turn (an entry expired, or the prompt changed there: not the
        # previous output, which no cache kept) also costs what it leaves of the cached prefix unusable: the part
        # of a block, or the blocks past the last checkpoint, before it. Keep the prefix alive, or unchanged, and
        # those hit too.
        blame: Reason | None = None
        if expired_end > cached_end:
            blame = Reason.EXPIRED
        elif not first and cached_end < turn and (out_start is None or out_start > rest or self.model.output):
            blame = Reason.PREFIX_CHANGED
        parts: list[tuple[Reason, int, int]] = [(blame or Reason.BELOW_MINIMUM, hit, found)]  # empty unless < min
        hit = found
        if self._anywhere:
            limit = min(cached_end, cap)
            parts.append((blame or Reason.BLOCK_GRANULARITY, hit, limit))  # a rule's step: hits in whole steps
            parts.append((Reason.LAST_TOKEN, max(hit, limit), cached_end))
        else:
            block_end = cached_end // self._block * self._block
            usable = min(block_end, cap)
            parts.append((blame or Reason.NO_CHECKPOINT, hit, usable))
            parts.append((Reason.LAST_TOKEN, max(hit, usable), block_end))
            parts.append((blame or Reason.BLOCK_GRANULARITY, max(hit, block_end), cached_end))
        parts.append((Reason.EXPIRED, cached_end, expired_end))
        carried = Reason.COLD if first else Reason.PREFIX_CHANGED
        if req.resent_output is not None and out_start is not None:
            o0, o1 = out_start, max(rest, min(req.resent_output[1], turn))
            out_reason = Reason.PREFIX_CHANGED if self.model.output else Reason.OUTPUT_NOT_CACHED
            if first:
                out_reason = Reason.COLD
            parts += [(carried, rest, o0), (out_reason, o0, o1), (carried, o1, turn)]
        else:
            parts.append((carried, rest, turn))
        parts.append((Reason.NEW_INPUT, turn, length))

        merged: list[MissPart] = []  # the parts, each joined with the next of its reason that runs on from it
        last: Reason | None = None
        tokens = at = 0
        for reason, lo, hi in parts:
            if hi <= lo:
                continue
            if reason is last and at + tokens == lo:
                tokens += hi - lo
                continue
            if last is not None:
                merged.append(MissPart(last, tokens, at))
            last, tokens, at = reason, hi - lo, lo
        if last is not None:
            merged.append(MissPart(last, tokens, at))
        return tuple(merged)

