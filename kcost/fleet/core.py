"""The compiled replay core (`_core.c`), from Python: runs as tuples in, tallies out.

The core gives the Python engine's tallies, or declines (None) on a trace it would not replay exactly; the caller
then runs the Python engine. The tests hold the two to byte-identical reports.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from typing import Any

from kcost.bounds import MAX_TOKENS
from kcost.cache.model import Kind
from kcost.fleet.cluster import check_trace_model, seen_memory
from kcost.fleet.pool import EntryKind, pages_for
from kcost.fleet.prefill import EXACT_TIMES, Percentiles
from kcost.fleet.replay import ClusterTally, Router, Run, curves
from kcost.fleet.requests import MAX_LINE_BYTES
from kcost.fleet.routing import AFFINITY_BLOCKS
from kcost.k3 import HASH_BLOCK

_KINDS = {Kind.K3: 0, Kind.SHARED: 1, Kind.IDEAL: 2, Kind.NONE: 3}
CURVE_MAX = 32  # the capacities of one stack pass in the core (a bit each)


def replay_compiled(
    path: str, runs: Sequence[Run], only: set[int] | None, progress: Callable[[int], None] | None
) -> list[list[ClusterTally]] | None:
    """Every run's tally per cluster, or None where the core declines the trace (or was not built)."""
    try:
        from kcost.fleet import _core
    except ImportError:
        return None
    for run in runs:  # the checks the Python engine makes
        check_trace_model(run.model)
    clusters = runs[0].spec.clusters
    router = Router(clusters) if clusters > 1 else None
    primary = router.primary if router else None
    threads = _threads()

    def fallback(key: str, how: str, down: list[int]) -> int:
        assert router is not None
        return router.fallback(key, how, frozenset(down))

    def core(runs: Sequence[Run], leads: Sequence[int], progress: Callable[[int], None] | None) -> Any:
        return _core.replay(path, tuple(_encode(run, lead) for run, lead in zip(runs, leads, strict=True)),
                            tuple(sorted(only)) if only is not None else None, primary, fallback, progress,
                            EXACT_TIMES, Percentiles.LOG_GAMMA, HASH_BLOCK, AFFINITY_BLOCKS, MAX_TOKENS,
                            MAX_LINE_BYTES, threads)  # fmt: skip

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
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _encode(run: Run, lead: int) -> tuple[Any, ...]:
    model, spec = run.model, run.spec
    limit, window = seen_memory(model, spec.capacity_pages)
    return (
        _KINDS[model.kind],
        model.block,
        model.every,
        model.ttl,
        spec.capacity_pages,
        pages_for(EntryKind.KV),
        pages_for(EntryKind.CHECKPOINT, checkpoint_bytes=spec.checkpoint_bytes),
        limit,
        window,
        spec.clusters,
        tuple((f.cluster, f.start, f.end) for f in spec.failures),
        spec.secondary == "successor",
        run.times,
        spec.prefill_rate,
        spec.long_from,
        spec.long_share if spec.long_share else None,
        lead,
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
