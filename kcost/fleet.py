"""A fleet serving a request trace: clusters with their own caches, cache affinity with failover, and
per-class prefill budgets (`notes/cache-model.md` sections 4 and 5).

- **Affinity.** Each session (a trace without session ids: each chain of shared prefixes, keyed by its
  first `AFFINITY_BLOCKS` blocks) is pinned by consistent hashing, a ring with virtual nodes, to a primary
  cluster and a distinct secondary: the next other cluster clockwise from the primary's virtual node, so the
  secondaries of one cluster's sessions spread over the ring. The naive baseline takes the ring successor.
- **Failure.** A cluster down from T1 to T2 loses its cache; its sessions go to their secondaries, which
  re-prefill from scratch, and come back after T2.
- **Traffic classes.** Each cluster prefills at `prefill_rate` tokens a second (cache hits are free); requests
  wait first come, first served. With a budget, the long class (inputs of `long_from` tokens or more) gets at
  most its share of the rate while short requests wait, and all of it otherwise. Time to first token = the
  wait + the prefill of the request's misses.
- **Parallel runs.** Clusters are independent once sessions are pinned, so workers each simulate some
  clusters over the same stream; the results are merged in cluster order, identical to one process.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from kcost.cache.model import HASH_BLOCK, CacheModel
from kcost.cache.trace import ClusterCache, TraceRequest

AFFINITY_BLOCKS = 4  # a trace's session key: its first 2,048 tokens (system prompt and opening turn)
VIRTUAL_NODES = 64
LONG_FROM = 2_048  # the lesson's short class: requests under about 2K tokens
PREFILL_RATE = 50_000.0  # tokens a second a cluster prefills: an assumption, settable
EXACT_TIMES = 65_536  # times to first token kept exactly, per class; past that, a sketch
SKETCH_ACCURACY = 0.001  # relative error of a sketched percentile


@dataclass(frozen=True)
class Failure:
    cluster: int
    start: float  # seconds
    end: float


@dataclass(frozen=True)
class FleetSpec:
    clusters: int = 1
    capacity_pages: int | None = None
    failures: tuple[Failure, ...] = ()
    secondary: str = "consistent"  # or "successor", the naive baseline
    prefill_rate: float = PREFILL_RATE
    long_from: int = LONG_FROM
    long_share: float | None = None  # the long class's budget, 0..1; None: no budget
    checkpoint_pages: int | None = None  # pages one KDA checkpoint takes (None: the K3 figure, 449 MB)


class Percentiles:
    """Times whose nearest-rank percentiles are wanted, in memory that does not grow with their number: kept
    exactly up to `EXACT_TIMES`, then in a log-bucket sketch (DDSketch, Masson, Rim and Lee, VLDB 2019) whose
    percentiles are within `SKETCH_ACCURACY` of the true value, relative. Bucket `i` holds the values in
    (gamma^(i-1), gamma^i], gamma = (1 + a) / (1 - a); its value is 2 gamma^i / (gamma + 1). A merge gives the
    same structure whatever the order of its parts."""

    GAMMA = (1 + SKETCH_ACCURACY) / (1 - SKETCH_ACCURACY)
    _LOG_GAMMA = math.log(GAMMA)

    __slots__ = ("buckets", "count", "exact", "zeros")

    def __init__(self) -> None:
        self.count = 0
        self.exact: array[float] | None = array("d")
        self.buckets: dict[int, int] = {}  # in use once `exact` is None
        self.zeros = 0  # values of 0 (or less) once sketched

    def add(self, value: float) -> None:
        self.count += 1
        if self.exact is not None:
            self.exact.append(value)
            if len(self.exact) > EXACT_TIMES:
                self._sketch()
        else:
            self._bucket(value)

    @classmethod
    def merged(cls, parts: Iterable[Percentiles]) -> Percentiles:
        out = cls()
        parts = list(parts)
        for part in parts:
            out.count += part.count
        if out.count <= EXACT_TIMES and all(p.exact is not None for p in parts):
            out.exact = array("d", sorted(x for p in parts for x in p.exact or ()))
            return out
        out.exact = None
        for part in parts:
            for value in part.exact or ():
                out._bucket(value)
            out.zeros += part.zeros
            for key, n in part.buckets.items():
                out.buckets[key] = out.buckets.get(key, 0) + n
        return out

    def percentile(self, q: float) -> float:
        """The nearest-rank percentile `q` (0 to 1); 0.0 for no values."""
        if not self.count:
            return 0.0
        rank = max(1, math.ceil(q * self.count))
        if self.exact is not None:
            return sorted(self.exact)[rank - 1]
        seen = self.zeros
        if rank <= seen:
            return 0.0
        for key in sorted(self.buckets):
            seen += self.buckets[key]
            if rank <= seen:
                return 2 * self.GAMMA**key / (self.GAMMA + 1)
        raise AssertionError("a rank past the count")  # pragma: no cover

    def _sketch(self) -> None:
        exact, self.exact = self.exact or (), None
        for value in exact:
            self._bucket(value)

    def _bucket(self, value: float) -> None:
        if value <= 0:
            self.zeros += 1
            return
        key = math.ceil(math.log(value) / self._LOG_GAMMA)
        self.buckets[key] = self.buckets.get(key, 0) + 1


def _by_class() -> dict[str, Percentiles]:
    return {"short": Percentiles(), "long": Percentiles()}


@dataclass
class ClusterTally:
    requests: int = 0
    input: int = 0
    hit: int = 0
    output: int = 0
    evictions: int = 0
    recovery_requests: int = 0  # requests redirected here from a failed cluster
    recovery_misses: int = 0
    ttft: dict[str, Percentiles] = field(default_factory=_by_class)
    ttft_budgeted: dict[str, Percentiles] = field(default_factory=_by_class)


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


class Ring:
    """Consistent hashing with virtual nodes: a primary and a distinct secondary for every key."""

    def __init__(self, clusters: int, vnodes: int = VIRTUAL_NODES) -> None:
        points = sorted((_hash(f"cluster-{c}/vnode-{v}"), c) for c in range(clusters) for v in range(vnodes))
        self.positions = [p for p, _ in points]
        self.owners = [c for _, c in points]
        self.clusters = clusters

    def place(self, key: str, how: str = "consistent") -> tuple[int, int]:
        """(primary, secondary) of a key."""
        primary, fallbacks = self.route(key, how)
        return primary, next(fallbacks, primary)

    def route(self, key: str, how: str = "consistent") -> tuple[int, Iterator[int]]:
        """The primary, and the other clusters in the order a session falls back to them: clockwise from the
        primary's virtual node (consistent), or the primary's successors (the naive ring)."""
        i = bisect.bisect(self.positions, _hash(key)) % len(self.positions)
        primary = self.owners[i]
        if how == "successor":
            return primary, ((primary + k) % self.clusters for k in range(1, self.clusters))

        def clockwise() -> Iterator[int]:
            seen = {primary}
            for k in range(1, len(self.owners)):
                owner = self.owners[(i + k) % len(self.owners)]
                if owner not in seen:
                    seen.add(owner)
                    yield owner

        return primary, clockwise()


def session_key(req: TraceRequest) -> str:
    """The session id, or for a trace without one the id of its `AFFINITY_BLOCKS`-th full block (or its last
    full block, or for a request shorter than one block its only, unshared one)."""
    if req.session is not None:
        return req.session
    full = req.input // HASH_BLOCK
    return str(req.blocks[max(0, min(full, AFFINITY_BLOCKS) - 1)])


class Prefill:
    """One cluster's prefill queue: FCFS within a class; with a budget, the long class gets at most its share
    of the rate while short requests wait. Completion times are computed as arrivals come (a fluid model)."""

    def __init__(self, rate: float, long_share: float | None) -> None:
        self.rate = rate
        self.share = long_share
        self.now = 0.0
        self.queues: dict[str, deque[list[float]]] = {"short": deque(), "long": deque()}  # [arrival, work left]
        self.done = _by_class()

    def arrive(self, time: float, tokens: int, cls: str) -> None:
        self._advance(time)
        self.queues[cls if self.share is not None else "short"].append([time, tokens / self.rate, cls])  # type: ignore[list-item]

    def finish(self) -> dict[str, Percentiles]:
        self._advance(float("inf"))
        return self.done

    def _rates(self) -> dict[str, float]:
        busy = [c for c, q in self.queues.items() if q]
        if len(busy) == 2 and self.share is not None:
            return {"long": self.share, "short": 1 - self.share}
        return {c: 1.0 for c in busy}

    def _advance(self, until: float) -> None:
        while True:
            rates = self._rates()
            if not rates:
                self.now = max(self.now, until) if until != float("inf") else self.now
                return
            # the next head to finish, in wall-clock seconds, at its share of the rate
            cls, left = min(((c, self.queues[c][0][1] / r) for c, r in rates.items() if r > 0), key=lambda x: x[1])
            if self.now + left > until:
                for c, r in rates.items():
                    self.queues[c][0][1] -= (until - self.now) * r
                self.now = until
                return
            for c, r in rates.items():
                self.queues[c][0][1] -= left * r
            self.now += left
            arrival, _, kind = self.queues[cls].popleft()
            self.done[str(kind)].add(self.now - float(arrival))


def simulate(
    requests: Callable[[], Iterable[TraceRequest]],
    model: CacheModel,
    spec: FleetSpec,
    only: set[int] | None = None,
) -> list[ClusterTally]:
    """Every cluster's tally (those in `only`, if given); `requests` makes a fresh stream of the trace."""
    ring = Ring(spec.clusters)
    caches = [ClusterCache(model, spec.capacity_pages, spec.checkpoint_pages) for _ in range(spec.clusters)]
    tallies = [ClusterTally() for _ in range(spec.clusters)]
    queues = [Prefill(spec.prefill_rate, None) for _ in range(spec.clusters)]
    budgeted = [Prefill(spec.prefill_rate, spec.long_share) for _ in range(spec.clusters)] if spec.long_share else []
    cleared: set[Failure] = set()
    for req in requests():
        for failure in spec.failures:
            if failure not in cleared and req.time >= failure.start:
                cleared.add(failure)  # the failed cluster's cache is lost
                caches[failure.cluster].pool.clear()
        down = {f.cluster for f in spec.failures if f.start <= req.time < f.end}
        cluster, redirected = ring.route(session_key(req), spec.secondary)[0], False
        if cluster in down:  # to the first fallback that is up
            fallbacks = ring.route(session_key(req), spec.secondary)[1]
            cluster, redirected = next((c for c in fallbacks if c not in down), cluster), True
        if only is not None and cluster not in only:
            continue
        hit = caches[cluster].serve(req)
        t = tallies[cluster]
        t.requests += 1
        t.input += req.input
        t.hit += hit
        t.output += req.output
        if redirected:
            t.recovery_requests += 1
            t.recovery_misses += req.input - hit
        cls = "long" if req.input >= spec.long_from else "short"
        queues[cluster].arrive(req.time, req.input - hit, cls)
        if budgeted:
            budgeted[cluster].arrive(req.time, req.input - hit, cls)
    for c, t in enumerate(tallies):
        t.evictions = caches[c].pool.evictions
        t.ttft = queues[c].finish()
        if budgeted:
            t.ttft_budgeted = budgeted[c].finish()
    return tallies
