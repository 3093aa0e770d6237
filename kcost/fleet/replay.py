"""A trace replayed through a fleet, once for many runs: each run is a cache model and a fleet (capacity,
failures, placement), and every request read is served by every run before the next is read. Clusters are
independent once sessions are pinned, so a worker may simulate only some clusters (`only`) over the same
stream; merged in cluster order, the results are identical to one process.

This is the pure-Python engine: the oracle the compiled core (`kcost.fleet.core`) is tested against, and the
fallback where that core was not built.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kcost.cache.model import CacheModel
from kcost.fleet.cluster import ClusterCache
from kcost.fleet.pool import EntryKind, pages_for
from kcost.fleet.prefill import Percentiles, Prefill, by_class
from kcost.fleet.spec import FleetSpec

if TYPE_CHECKING:
    from kcost.fleet.requests import TraceRequest

ROUTES_KEPT = 65_536  # sessions whose placement is remembered (an LRU): routing is hashed once per session


@dataclass(frozen=True)
class Run:
    """One replay: a cache model over a fleet; `times`: keep its time to first token (a report needs one run's)."""

    model: CacheModel
    spec: FleetSpec
    times: bool = False


@dataclass
class ClusterTally:
    requests: int = 0
    input: int = 0
    hit: int = 0
    output: int = 0
    evictions: int = 0
    recovery_requests: int = 0  # requests redirected here from a failed cluster
    recovery_misses: int = 0
    ttft: dict[str, Percentiles] = field(default_factory=by_class)
    ttft_budgeted: dict[str, Percentiles] = field(default_factory=by_class)


class Router:
    """Where a session goes: its primary, or with clusters down, its first fallback that is up. Hashed once per
    session (the most recent `ROUTES_KEPT`), not once per request."""

    def __init__(self, clusters: int) -> None:
        from kcost.fleet.routing import Ring

        ring = Ring(clusters)
        self.primary: Callable[[str], int] = functools.lru_cache(ROUTES_KEPT)(lambda key: ring.route(key)[0])

        @functools.lru_cache(ROUTES_KEPT)
        def fallback(key: str, how: str, down: frozenset[int]) -> int:
            primary, others = ring.route(key, how)
            return next((c for c in others if c not in down), primary)

        self.fallback = fallback


class _Fleet:
    """One run's state: every cluster's cache, tally and prefill queues."""

    def __init__(self, run: Run, only: set[int] | None) -> None:
        spec = self.spec = run.spec
        ckpt_pages = pages_for(EntryKind.CHECKPOINT, checkpoint_bytes=spec.checkpoint_bytes)
        self.caches = [ClusterCache(run.model, spec.capacity_pages, ckpt_pages) for _ in range(spec.clusters)]
        self.tallies = [ClusterTally() for _ in range(spec.clusters)]
        self.times = run.times
        self.queues = [Prefill(spec.prefill_rate, None) for _ in range(spec.clusters)] if run.times else []
        self.budgeted = [Prefill(spec.prefill_rate, spec.long_share) for _ in range(spec.clusters)]
        if not (run.times and spec.long_share):
            self.budgeted = []
        self.pending = list(spec.failures)  # failures whose start has not come yet
        self.only = only

    def serve(self, req: TraceRequest, key: str | None, router: Router | None) -> None:
        spec = self.spec
        if self.pending:
            for failure in [f for f in self.pending if req.time >= f.start]:
                self.pending.remove(failure)
                self.caches[failure.cluster].pool.clear()  # the failed cluster's cache is lost
        cluster, redirected = 0, False
        if router is not None and key is not None:
            cluster = router.primary(key)
            if spec.failures:
                down = frozenset(f.cluster for f in spec.failures if f.start <= req.time < f.end)
                if cluster in down:
                    cluster, redirected = router.fallback(key, spec.secondary, down), True
        if self.only is not None and cluster not in self.only:
            return
        hit = self.caches[cluster].serve(req)
        t = self.tallies[cluster]
        t.requests += 1
        t.input += req.input
        t.hit += hit
        t.output += req.output
        if redirected:
            t.recovery_requests += 1
            t.recovery_misses += req.input - hit
        if self.times:
            cls = "long" if req.input >= spec.long_from else "short"
            self.queues[cluster].arrive(req.time, req.input - hit, cls)
            if self.budgeted:
                self.budgeted[cluster].arrive(req.time, req.input - hit, cls)

    def finish(self) -> list[ClusterTally]:
        for c, t in enumerate(self.tallies):
            t.evictions = self.caches[c].pool.evictions
            if self.times:
                t.ttft = self.queues[c].finish()
            if self.budgeted:
                t.ttft_budgeted = self.budgeted[c].finish()
        return self.tallies


def simulate(
    requests: Iterable[TraceRequest], runs: Sequence[Run], only: set[int] | None = None
) -> list[list[ClusterTally]]:
    """Every run's tally per cluster (those in `only`, if given), from one pass over `requests`."""
    clusters = {run.spec.clusters for run in runs}
    if len(clusters) != 1:
        raise ValueError("the runs of one replay share one fleet size")
    router = Router(clusters.pop()) if runs[0].spec.clusters > 1 else None
    from kcost.fleet.routing import session_key

    fleets = [_Fleet(run, only) for run in runs]
    for req in requests:
        key = session_key(req) if router is not None else None
        for fleet in fleets:
            fleet.serve(req, key, router)
    return [fleet.finish() for fleet in fleets]
