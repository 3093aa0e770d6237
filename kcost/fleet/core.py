"""The compiled replay core (`_core.c`) behind one typed entry: a `CoreOptions` in, plain tallies out.

The core reads the options by their names and calls nothing of kcost's but the router's public methods (where a
fleet has several clusters) and the progress callback. It gives the Python engine's tallies, or declines (None)
on a trace it would not replay exactly, and where it was not built; the caller then runs the Python engine, its
oracle in the tests, which hold the two to byte-identical reports.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kcost.cache.model import Kind
from kcost.fleet.cluster import check_trace_model, seen_memory
from kcost.fleet.pool import EntryKind, pages_for
from kcost.fleet.prefill import EXACT_TIMES, Percentiles
from kcost.fleet.replay import ClusterTally, Router, Run, curves
from kcost.fleet.requests import MAX_LINE_BYTES
from kcost.fleet.routing import AFFINITY_BLOCKS
from kcost.model.bounds import MAX_TOKENS
from kcost.model.k3 import HASH_BLOCK

_KINDS = {Kind.K3: 0, Kind.SHARED: 1, Kind.IDEAL: 2, Kind.NONE: 3}
CURVE_MAX = 32  # the capacities of one stack pass in the core (a bit each)
CHUNK_BYTES = 1 << 22  # how much of the trace the core reads at a time


@dataclass(frozen=True, slots=True)
class CoreRun:
    """One run (a cache model over a fleet) as the core takes it: every figure a plain number, None as -1."""

    kind: int  # _KINDS
    block: int
    every: int | None  # None or 0: no checkpoints kept every few blocks
    ttl: float | None
    capacity_pages: int | None  # None: unlimited
    kv_pages: int
    checkpoint_pages: int
    seen_limit: int | None
    seen_window: float | None
    clusters: int
    failures: tuple[tuple[int, float, float], ...]  # (cluster, start, end)
    successor: bool  # a failed cluster's sessions go to its successor on the ring (else: consistent hashing)
    times: bool  # time to first token tallied
    prefill_rate: float | None
    long_from: int | None
    long_share: float | None
    lead: int  # the run whose stack pass serves this one (a curve's), -1: its own


@dataclass(frozen=True, slots=True)
class CoreOptions:
    """Everything one call of the core takes, by name."""

    path: str
    runs: tuple[CoreRun, ...]
    only: tuple[int, ...] | None  # the clusters to simulate (None: all)
    router: Router | None  # where a session goes (`primary`, `fallback`), with several clusters
    progress: Callable[[int], None] | None  # told the bytes read so far
    threads: int
    exact_times: int = EXACT_TIMES
    log_gamma: float = Percentiles.LOG_GAMMA
    hash_block: int = HASH_BLOCK
    affinity_blocks: int = AFFINITY_BLOCKS
    max_tokens: int = MAX_TOKENS
    max_line_bytes: int = MAX_LINE_BYTES
    chunk: int = CHUNK_BYTES


def replay_compiled(
    path: str, runs: Sequence[Run], only: set[int] | None, progress: Callable[[int], None] | None
) -> list[list[ClusterTally]] | None:
    """Every run's tally per cluster, or None where the core declines the trace (or was not built)."""
    try:
        # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
        from kcost.fleet import _core
    except ImportError:
        return None
    for run in runs:  # the checks the Python engine makes
        check_trace_model(run.model)
    clusters = runs[0].spec.clusters
    router = Router(clusters) if clusters > 1 else None
    threads = _threads()

    def core(runs: Sequence[Run], leads: Sequence[int], progress: Callable[[int], None] | None) -> Any:
        encoded = tuple(_encode(run, lead) for run, lead in zip(runs, leads, strict=True))
        chosen = tuple(sorted(only)) if only is not None else None
        return _core.replay(CoreOptions(path, encoded, chosen, router, progress, threads))

    leads = [-1] * len(runs)
    for part in passes(runs, clusters, threads):
        # a `k3` run alone too, a curve of one: there its seen memory is a suffix of the one list, where the pool
        # replay keeps a second table (0.7-0.8x the pool replay on 1M generated requests); the other models keep
        # the pool replay, as fast or faster for them
        if len(part) > 1 or runs[part[0]].model.kind is Kind.K3:
            for i in part:
                leads[i] = part[0]
    got = core(runs, leads, progress)
    if got is None:
        return None
    redo = [i for i, tallies in enumerate(got) if tallies is None]  # runs a curve could not keep: on their own
    if redo:
        again = core([runs[i] for i in redo], [-1] * len(redo), None)
        if again is None:  # pragma: no cover - the same trace, read again
            return None
        for i, tallies in zip(redo, again, strict=True):
            got[i] = tallies
    return [[_tally(t) for t in tallies] for tallies in got]


def passes(runs: Sequence[Run], clusters: int, threads: int) -> list[list[int]]:
    """The stack passes: each curve in one (32 capacities at most), or, where the core would leave threads idle (one
    cluster, fewer passes than threads), a curve split by capacity into passes enough to serve them all at once:
    the smaller capacities together, the larger apart (a pass costs what its largest capacity holds, and the
    capacities past the first add little)."""
    groups = [group[at : at + CURVE_MAX] for group in curves(runs) for at in range(0, len(group), CURVE_MAX)]
    spare = threads - len(groups) if clusters == 1 else 0
    while spare > 0 and any(len(group) > 1 for group in groups):
        group = max(groups, key=len)  # the longest split in two: the smaller capacities in the larger part
        ordered = sorted(group, key=lambda i: _size(runs[i]))
        cut = (len(group) + 1) // 2
        groups[groups.index(group)] = sorted(ordered[:cut])
        groups.append(sorted(ordered[cut:]))
        spare -= 1
    return sorted(groups)


def _size(run: Run) -> float:
    pages = run.spec.capacity_pages
    return float("inf") if pages is None else pages


def _threads() -> int:
    """Threads for the runs of a one-cluster replay: the processors this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _encode(run: Run, lead: int) -> CoreRun:
    model, spec = run.model, run.spec
    limit, window = seen_memory(model, spec.capacity_pages)
    return CoreRun(
        kind=_KINDS[model.kind],
        block=model.block,
        every=model.every,
        ttl=model.ttl,
        capacity_pages=spec.capacity_pages,
        kv_pages=pages_for(EntryKind.KV),
        checkpoint_pages=pages_for(EntryKind.CHECKPOINT, checkpoint_bytes=spec.checkpoint_bytes),
        seen_limit=limit,
        seen_window=window,
        clusters=spec.clusters,
        failures=tuple((f.cluster, f.start, f.end) for f in spec.failures),
        successor=spec.secondary == "successor",
        times=run.times,
        prefill_rate=spec.prefill_rate,
        long_from=spec.long_from,
        long_share=spec.long_share if spec.long_share else None,
        lead=lead,
    )


def _tally(raw: tuple[Any, ...]) -> ClusterTally:
    requests, inputs, hit, output, evictions, recovery_requests, recovery_misses, *times = raw
    tally = ClusterTally(requests, inputs, hit, output, evictions, recovery_requests, recovery_misses)
    if times[0] is not None:
        tally.ttft = {"short": _times(times[0]), "long": _times(times[1])}
    if times[2] is not None:
        tally.ttft_budgeted = {"short": _times(times[2]), "long": _times(times[3])}
    return tally


def _times(raw: tuple[int, list[float] | None, int, dict[int, int]]) -> Percentiles:
    out = Percentiles()
    out.count, exact, out.zeros, out.buckets = raw
    out.exact = array("d", exact) if exact is not None else None
    return out
