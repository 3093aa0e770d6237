"""`kcost trace`: a request trace through the fleet under each cache model and capacity, priced, with the cost
of a failure and the time to first token per traffic class. Builds the report; renders nothing."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from decimal import Decimal
from functools import partial

from kcost.billing import cache_info, price_info
from kcost.cache.model import HASH_BLOCK, CacheModel
from kcost.cache.pool import PAGE_BYTES
from kcost.cache.trace import TraceRequest
from kcost.errors import InputError
from kcost.fleet import ClusterTally, Failure, FleetSpec, Percentiles, simulate
from kcost.readers.trace import read_trace
from kcost.results.prices import ModelPrice, PriceTable
from kcost.results.trace import ClassTimes, CurvePoint, FailureReport, TraceReport, TrafficReport

_CAPACITY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def parse_capacity(text: str) -> tuple[str, int | None]:
    """(label, pages): `inf`; tokens of MLA KV (`10M`, `3000000`); bytes (`80GiB`, `500GB`)."""
    raw = text.strip()
    if raw.lower() in ("inf", "unlimited", "none"):
        return "inf", None
    match = _CAPACITY.match(raw)
    if not match:
        raise InputError(f"not a capacity: {text!r}", hint="10M (tokens), 80GiB, 500GB, inf")
    number, unit, byte = float(match.group(1)), match.group(2).upper(), match.group(3)
    if byte:  # bytes: KiB, MiB, GiB, TiB are powers of 1024; KB, MB, GB, TB of 1000
        binary = byte.lower() == "ib" and unit
        factor = 1024 ** ("KMGT".index(unit) + 1) if binary else _SCALE[unit]
        pages = int(number * factor // PAGE_BYTES)
    else:
        pages = int(number * _SCALE[unit] // HASH_BLOCK)
    if pages < 1:
        raise InputError(f"holds less than one {HASH_BLOCK}-token block: {text!r}")
    return raw, pages


def parse_failure_text(text: str) -> Failure:
    """`3@600-1200` (seconds) or `3@10m-20m`: cluster 3 down from the first time to the second."""
    from kcost.cache.model import parse_duration

    match = re.match(r"^\s*(\d{1,6})\s*@\s*([^-]+)-(.+)$", text)
    if not match:
        raise InputError(f"not a failure: {text!r}", hint="CLUSTER@START-END, e.g. 3@600-1200")
    start, end = (parse_duration(match.group(i).strip()) for i in (2, 3))
    if start is None or end is None or end <= start:
        raise InputError(f"needs a start before its end: {text!r}")
    return Failure(int(match.group(1)), start, end)


def check_failure(failure: Failure, clusters: int) -> Failure:
    """A failure of one of `clusters` clusters, with another to fail over to."""
    if clusters < 2:
        raise InputError("a failure needs another cluster to fail over to", hint="give 16 clusters, say")
    if failure.cluster >= clusters:
        raise InputError(f"cluster {failure.cluster} of {clusters} (they count from 0)")
    return failure


def parse_failure(text: str, clusters: int) -> Failure:
    return check_failure(parse_failure_text(text), clusters)


def parse_class_budget(text: str) -> float:
    """`long=30%` or `long=0.3`: the long class's share of prefill while short requests wait."""
    name, _, value = text.partition("=")
    raw = value.strip().removesuffix("%")
    if name.strip() != "long" or not raw.replace(".", "", 1).isdecimal():
        raise InputError(f"not a class budget: {text!r}", hint="long=30% or long=0.3")
    share = float(raw) / 100 if value.strip().endswith("%") else float(raw)  # 30% or a fraction, 0.3
    if not 0 < share <= 1:
        raise InputError(f"must be above 0 and at most 100% (got {text})")
    return share


def run(
    path: str,
    models: Sequence[CacheModel],
    capacities: Sequence[tuple[str, int | None]],
    spec: FleetSpec,
    prices: PriceTable,
    workers: int = 1,
    progress: Callable[[Iterable[TraceRequest]], Iterable[TraceRequest]] | None = None,
    name: str | None = None,
) -> TraceReport:
    price = prices.lookup(None)
    curve: list[CurvePoint] = []
    first: list[ClusterTally] | None = None
    for model in models:
        for label, pages in capacities:
            run_spec = FleetSpec(**{**spec.__dict__, "capacity_pages": pages})
            tallies = _simulate(path, model, run_spec, workers, progress if not curve else None)
            first = first or tallies
            curve.append(_point(model, label, pages, tallies, price))
    assert first is not None
    failure = None
    if spec.failures:
        base = FleetSpec(**{**spec.__dict__, "capacity_pages": capacities[0][1]})
        calm = _simulate(path, models[0], FleetSpec(**{**base.__dict__, "failures": ()}), workers)
        naive = _simulate(path, models[0], FleetSpec(**{**base.__dict__, "secondary": "successor"}), workers)
        failed = {f.cluster for f in spec.failures}
        failure = FailureReport(
            failures=[f"{f.cluster}@{f.start:g}-{f.end:g}" for f in spec.failures],
            cost_without_failure=_cost(calm, price),
            cost_with_failure=_cost(first, price),
            extra_cost=_cost(first, price) - _cost(calm, price),
            recovery={"consistent": _spread(first, failed), "successor": _spread(naive, failed)},
        )
    return TraceReport(
        trace=name or path,
        prices=price_info(prices),
        caches=[cache_info(m) for m in models],
        clusters=spec.clusters,
        curve=curve,
        failure=failure,
        traffic=TrafficReport(
            prefill_tokens_per_second=spec.prefill_rate,
            long_from_tokens=spec.long_from,
            long_share=spec.long_share,
            without_budget=_times(first, "ttft"),
            with_budget=_times(first, "ttft_budgeted") if spec.long_share is not None else None,
        ),
    )


def _simulate(
    path: str,
    model: CacheModel,
    spec: FleetSpec,
    workers: int,
    progress: Callable[..., Iterable[TraceRequest]] | None = None,
) -> list[ClusterTally]:
    if workers <= 1 or spec.clusters <= 1:
        stream = (lambda: progress(read_trace(path))) if progress else partial(read_trace, path)
        return simulate(stream, model, spec)
    groups = [set(range(w, spec.clusters, workers)) for w in range(min(workers, spec.clusters))]
    with ProcessPoolExecutor(max_workers=len(groups)) as pool:
        parts = list(pool.map(_worker, [(path, model, spec, g) for g in groups]))
    merged = [ClusterTally() for _ in range(spec.clusters)]
    for group, tallies in zip(groups, parts, strict=True):
        for c in group:
            merged[c] = tallies[c]
    return merged


def _worker(args: tuple[str, CacheModel, FleetSpec, set[int]]) -> list[ClusterTally]:
    path, model, spec, only = args
    return simulate(partial(read_trace, path), model, spec, only)


def _point(
    model: CacheModel, label: str, pages: int | None, tallies: list[ClusterTally], price: ModelPrice
) -> CurvePoint:
    inputs = sum(t.input for t in tallies)
    hits = sum(t.hit for t in tallies)
    outputs = sum(t.output for t in tallies)
    return CurvePoint(
        cache=model.label,
        capacity=label,
        capacity_pages=pages,
        requests=sum(t.requests for t in tallies),
        input_tokens=inputs,
        hit_tokens=hits,
        hit_rate=round(hits / inputs, 6) if inputs else 0.0,
        output_tokens=outputs,
        evictions=sum(t.evictions for t in tallies),
        cost=_cost(tallies, price),
        uncached_cost=price.miss_cost(inputs) + price.output_cost(outputs),
    )


def _cost(tallies: list[ClusterTally], price: ModelPrice) -> Decimal:
    hits = sum(t.hit for t in tallies)
    misses = sum(t.input - t.hit for t in tallies)
    outputs = sum(t.output for t in tallies)
    return price.hit_cost(hits) + price.miss_cost(misses) + price.output_cost(outputs)


def _spread(tallies: list[ClusterTally], failed: set[int]) -> dict[str, float | int]:
    """How the recovery misses spread over the clusters that stayed up (an even spread: max/mean near 1)."""
    loads = [t.recovery_misses for c, t in enumerate(tallies) if c not in failed]
    mean = sum(loads) / len(loads) if loads else 0.0
    return {"clusters": sum(1 for load in loads if load), "max_misses": max(loads, default=0),
            "mean_misses": round(mean, 3), "max_over_mean": round(max(loads) / mean, 3) if mean else 0.0}  # fmt: skip


def _times(tallies: list[ClusterTally], which: str) -> dict[str, ClassTimes]:
    out = {}
    for cls in ("short", "long"):
        times = Percentiles.merged(getattr(t, which)[cls] for t in tallies)
        out[cls] = ClassTimes(requests=times.count, p50_seconds=round(times.percentile(0.5), 3),
                              p99_seconds=round(times.percentile(0.99), 3))  # fmt: skip
    return out
