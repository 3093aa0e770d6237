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
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kcost.cache.model import CacheModel
from kcost.fleet.cluster import ClusterCache
from kcost.fleet.curve import CurveCache
from kcost.fleet.pool import EntryKind, pages_for
from kcost.fleet.prefill import Percentiles, Prefill, by_class
from kcost.fleet.routing import Ring, session_key
from kcost.fleet.spec import FleetSpec
from kcost.model.frozen import frozen

if TYPE_CHECKING:
    from kcost.fleet.requests import TraceRequest

ROUTES_KEPT = 65_536  # sessions whose placement is remembered (an LRU): routing is hashed once per session


@frozen
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
        ring = Ring(clusters)
        self.primary: Callable[[str], int] = functools.lru_cache(ROUTES_KEPT)(lambda key: ring.route(key)[0])

        @functools.lru_cache(ROUTES_KEPT)
        def fallback(key: str, how: str, down: frozenset[int]) -> int:
            primary, others = ring.route(key, how)
            return next((c for c in others if c not in down), primary)

        self.fallback = fallback


class _Fleet:
    """One run's state: every cluster's cache, tally and prefill queues."""

    def __init__(self, run: Run, only: set[int] | None, caches: bool = True) -> None:
        spec = self.spec = run.spec
        ckpt_pages = pages_for(EntryKind.CHECKPOINT, checkpoint_bytes=spec.checkpoint_bytes)
        count = spec.clusters if caches else 0  # none: a `_Curve` serves this run
        self.caches = [ClusterCache(run.model, spec.capacity_pages, ckpt_pages) for _ in range(count)]
        self.tallies = [ClusterTally() for _ in range(spec.clusters)]
        self.times = run.times
        self.queues = [Prefill(spec.prefill_rate, None) for _ in range(spec.clusters)] if run.times else []
        self.budgeted = [Prefill(spec.prefill_rate, spec.long_share) for _ in range(spec.clusters)]
        if not (run.times and spec.long_share):
            self.budgeted = []
        self.pending = list(spec.failures)  # failures whose start has not come yet
        self.only = only

    def serve(self, req: TraceRequest, key: str | None, router: Router | None) -> None:
        self.fail(req.time)
        cluster, redirected = self.route(req, key, router)
        if self.only is not None and cluster not in self.only:
            return
        self.record(cluster, redirected, req, self.caches[cluster].serve(req))

    def fail(self, now: float) -> None:
        """The failures begun by `now` applied: each failed cluster's cache is lost."""
        if self.pending:
            for failure in [f for f in self.pending if now >= f.start]:
                self.pending.remove(failure)
                self.clear(failure.cluster)

    def clear(self, cluster: int) -> None:
        self.caches[cluster].pool.clear()

    def route(self, req: TraceRequest, key: str | None, router: Router | None) -> tuple[int, bool]:
        """The cluster serving `req`, and whether its own was down."""
        spec = self.spec
        cluster, redirected = 0, False
        if router is not None and key is not None:
            cluster = router.primary(key)
            if spec.failures:
                down = frozenset(f.cluster for f in spec.failures if f.start <= req.time < f.end)
                if cluster in down:
                    cluster, redirected = router.fallback(key, spec.secondary, down), True
        return cluster, redirected

    def record(self, cluster: int, redirected: bool, req: TraceRequest, hit: int) -> None:
        spec = self.spec
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

    def finish(self, evictions: bool = True) -> list[ClusterTally]:
        for c, t in enumerate(self.tallies):
            if evictions:
                t.evictions = self.caches[c].pool.evictions
            if self.times:
                t.ttft = self.queues[c].finish()
            if self.budgeted:
                t.ttft_budgeted = self.budgeted[c].finish()
        return self.tallies


class _Curve:
    """The runs of one curve (one model over one fleet, capacities apart) from one `CurveCache` a cluster: the
    routing and the failures are every run's, the hits each capacity's."""

    def __init__(self, runs: Sequence[Run], fleets: Sequence[_Fleet], only: set[int] | None) -> None:
        spec = runs[0].spec
        ckpt_pages = pages_for(EntryKind.CHECKPOINT, checkpoint_bytes=spec.checkpoint_bytes)
        capacities = [run.spec.capacity_pages for run in runs]
        self.caches = [CurveCache(runs[0].model, capacities, ckpt_pages) for _ in range(spec.clusters)]
        self.fleets = list(fleets)
        self.only = only

    def serve(self, req: TraceRequest, key: str | None, router: Router | None) -> None:
        lead = self.fleets[0]
        if lead.pending:
            for failure in [f for f in lead.pending if req.time >= f.start]:
                for fleet in self.fleets:
                    fleet.pending.remove(failure)
                self.caches[failure.cluster].clear()
        cluster, redirected = lead.route(req, key, router)
        if self.only is not None and cluster not in self.only:
            return
        for fleet, hit in zip(self.fleets, self.caches[cluster].serve(req), strict=True):
            fleet.record(cluster, redirected, req, hit)

    def dropped(self) -> set[int]:
        """The runs (by place in the curve) some cluster could not keep on the shared list."""
        return set().union(*(cache.dropped for cache in self.caches))

    def finish(self) -> list[list[ClusterTally]]:
        out = []
        for k, fleet in enumerate(self.fleets):
            tallies = fleet.finish(evictions=False)
            for c, t in enumerate(tallies):
                t.evictions = self.caches[c].evictions[k]
            out.append(tallies)
        return out


def curves(runs: Sequence[Run]) -> list[list[int]]:
    """The runs by curve: those of one model over one fleet but their capacity, in order (a run alone is its own)."""
    groups: dict[tuple[CacheModel, FleetSpec], list[int]] = {}
    for i, run in enumerate(runs):
        groups.setdefault((run.model, replace(run.spec, capacity_pages=None)), []).append(i)
    return list(groups.values())


def simulate(
    requests: Iterable[TraceRequest],
    runs: Sequence[Run],
    only: set[int] | None = None,
    again: Callable[[], Iterable[TraceRequest]] | None = None,
) -> list[list[ClusterTally]]:
    """Every run's tally per cluster (those in `only`, if given), from one pass over `requests`. Given `again` (the
    same requests read anew), the capacities of one curve share one stack pass (`kcost.fleet.curve`), and a run
    the pass could not keep is replayed on its own over `again()`."""
    clusters = {run.spec.clusters for run in runs}
    if len(clusters) != 1:
        raise ValueError("the runs of one replay share one fleet size")
    router = Router(clusters.pop()) if runs[0].spec.clusters > 1 else None

    groups = curves(runs) if again is not None else [[i] for i in range(len(runs))]
    servers: list[_Fleet | _Curve] = []
    for group in groups:
        if len(group) == 1:
            servers.append(_Fleet(runs[group[0]], only))
        else:
            fleets = [_Fleet(runs[i], only, caches=False) for i in group]
            servers.append(_Curve([runs[i] for i in group], fleets, only))
    for req in requests:
        key = session_key(req) if router is not None else None
        for server in servers:
            server.serve(req, key, router)
    out: list[list[ClusterTally]] = [[] for _ in runs]
    redo: list[int] = []
    for group, server in zip(groups, servers, strict=True):
        if isinstance(server, _Curve):
            redo += [group[k] for k in sorted(server.dropped())]
            for i, tallies in zip(group, server.finish(), strict=True):
                out[i] = tallies
        else:
            out[group[0]] = server.finish()
    if redo:
        assert again is not None
        for i, tallies in zip(redo, simulate(again(), [runs[i] for i in redo], only), strict=True):
            out[i] = tallies
    return out
