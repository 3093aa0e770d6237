"""`kcost trace`: a request trace through the fleet under each cache model and capacity, priced, with the cost
of a failure and the time to first token per traffic class. Builds the report; renders nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal

from kcost.cache.model import CacheModel
from kcost.fleet.engines import Progress, default_engine, replay
from kcost.fleet.prefill import Percentiles
from kcost.fleet.replay import ClusterTally, Run
from kcost.fleet.spec import FleetSpec
from kcost.results.prices import ModelPrice, PriceTable
from kcost.results.trace import ClassTimes, CurvePoint, FailureReport, TraceReport, TrafficReport


def run(
    path: str,
    models: Sequence[CacheModel],
    capacities: Sequence[tuple[str, int | None]],
    spec: FleetSpec,
    prices: PriceTable,
    workers: int = 1,
    progress: Progress | None = None,
    name: str | None = None,
    scheduler: str | None = None,
    engine: str | None = None,
) -> TraceReport:
    """The report of a trace under each model and capacity (and, with failures, without them and with naive
    placement), from one read of the trace."""
    price = prices.lookup(None)
    points = [(model, label, pages) for model in models for label, pages in capacities]
    runs = [Run(model, replace(spec, capacity_pages=pages), times=not i) for i, (model, _, pages) in enumerate(points)]
    if spec.failures:
        base = replace(spec, capacity_pages=capacities[0][1])
        runs += [Run(models[0], replace(base, failures=())), Run(models[0], replace(base, secondary="successor"))]
    results, engine = replay(path, runs, workers=workers, scheduler=scheduler, progress=progress,
                             engine=engine or default_engine())  # fmt: skip
    first = results[0]
    curve = [_point(*point, tallies, price) for point, tallies in zip(points, results[: len(points)], strict=True)]
    failure = None
    if spec.failures:
        calm, naive = results[-2], results[-1]
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
        engine=engine,
        prices=prices.info(),
        caches=[m.info() for m in models],
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
