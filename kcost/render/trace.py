"""`kcost trace` on a terminal and as an HTML page, and the hit-rate-vs-capacity curve as an SVG picture."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from kcost.render import svg
from kcost.render.display import count, money, percent, plural
from kcost.render.fit import Column, fitted
from kcost.render.html import figures, page, shown_path, table, usd, usd_figure
from kcost.render.terminal import console as make_console
from kcost.results.trace import TOKENS_PER_PAGE, TraceReport

if TYPE_CHECKING:
    from kcost.render.registry import View


def trace_table(report: TraceReport, view: View) -> str:
    width = view.width
    console, out = make_console(width, view.color)
    first = report.curve[0]
    console.print(Text(f"{report.trace} · {plural(first.requests, 'request')} · {plural(report.clusters, 'cluster')}",
                       style="bold"))  # fmt: skip
    columns = [Column("cache model", number=False), Column("capacity", short="cap"), Column("hit rate", short="hit%"),
               Column("hit tokens", short="hits"), Column("evictions", drop=1, short="evict"), Column("cost"),
               Column("without caching", drop=2, short="uncached")]  # fmt: skip
    rows = [[p.cache, p.capacity, percent(p.hit_rate), count(p.hit_tokens), count(p.evictions),
             money(p.cost, total=True), money(p.uncached_cost, total=True)] for p in report.curve]  # fmt: skip
    console.print(fitted(columns, rows, width))
    if report.failure:
        f = report.failure
        console.print()
        console.print(Text(f"failure {', '.join(f.failures)}", style="bold"))
        console.print(f"cost {money(f.cost_with_failure, total=True)} against "
                      f"{money(f.cost_without_failure, total=True)}: {money(f.extra_cost)} more")  # fmt: skip
        for how, s in f.recovery.items():
            console.print(f"recovery load, {how} secondaries: {plural(int(s['clusters']), 'cluster')}, "
                          f"max {count(int(s['max_misses']))} / mean {count(int(s['mean_misses']))} misses "
                          f"(max/mean {s['max_over_mean']})")  # fmt: skip
    t = report.traffic
    console.print()
    console.print(Text(f"time to first token (prefill {count(round(t.prefill_tokens_per_second))} tokens/s a "
                       f"cluster; long from {count(t.long_from_tokens)} tokens)", style="bold"))  # fmt: skip
    columns = [Column("class", number=False)]
    columns += [Column(n) for n in ("requests", "p50", "p99", "p50 budgeted", "p99 budgeted")]
    rows = []
    for cls, row in t.without_budget.items():
        budget = t.with_budget[cls] if t.with_budget else None
        shown = [f"{budget.p50_seconds:.3f}s", f"{budget.p99_seconds:.3f}s"] if budget else ["-", "-"]
        rows.append([cls, count(row.requests), f"{row.p50_seconds:.3f}s", f"{row.p99_seconds:.3f}s", *shown])
    console.print(fitted(columns, rows, width))
    if t.long_share is not None:
        console.print(f"budget: the long class gets at most {percent(t.long_share, 0)} of a cluster's prefill "
                      "while short requests wait")  # fmt: skip
    return out.getvalue()


def capacity_curve(report: TraceReport) -> str:
    """Hit rate against capacity per cluster, one line per cache model, on a log axis with the unlimited point
    labelled at the right: the chart of `--plot` and of the HTML report."""
    finite = [p.capacity_pages for p in report.curve if p.capacity_pages]
    unlimited = (max(finite) * 4.0 if finite else 1.0) * TOKENS_PER_PAGE
    series: dict[str, list[tuple[float, float]]] = {}
    names = {}
    for p in report.curve:
        x = p.capacity_pages * float(TOKENS_PER_PAGE) if p.capacity_pages else unlimited
        series.setdefault(p.cache, []).append((x, p.hit_rate * 100))
        names[x] = p.capacity if p.capacity_pages else "unlimited"
    name = report.trace.replace("\\", "/").rsplit("/", 1)[-1]
    return svg.lines(f"Hit rate by capacity: {name}", "Hit rate of each cache model at each capacity per cluster "
                     "(KV tokens, log scale; the unlimited point at the right).", [(k, sorted(v)) for k, v in
                     series.items()], log_x=len(finite) > 0, x_label="capacity (KV tokens per cluster)",
                     y_label="hit rate", unit="%", x_names=names)  # fmt: skip


def curve_svg(report: TraceReport) -> str:
    """`--plot FILE.svg`: the capacity curve as a picture of its own (its colours inline, light)."""
    return svg.standalone(capacity_curve(report)) + "\n"


def trace_html(report: TraceReport, view: View) -> str:
    """The capacity curve as a chart (at one capacity, its hit rates stated) and a table, the cost of a failure,
    and time to first token by class."""
    # the page's pieces only when a page is asked for: the other formats import no HTML or chart code
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    from html import escape

    body = [
        figures(
            [
                ("requests", count(report.curve[0].requests), None),
                ("clusters", count(report.clusters), None),
                usd_figure("cost at the first capacity", report.curve[0].cost, "session-total"),
                ("engine", report.engine, None),
            ]
        )
    ]
    body.append("<h2>Hit rate by cache capacity</h2>")
    if len({p.capacity for p in report.curve}) > 1:
        body.append(capacity_curve(report))
    else:  # one capacity: a value, not a curve
        p0 = report.curve[0]
        rates = ", ".join(f"{escape(p.cache)} {percent(p.hit_rate)}" for p in report.curve)
        body.append(f"<p>hit rate at {'unlimited capacity' if not p0.capacity_pages else escape(p0.capacity)}: "
                    f'{rates} <span class="note">(a curve takes two capacities or more: '
                    "<code>--capacity 1M,10M,inf</code>)</span></p>")  # fmt: skip
    body.append(
        table(
            ["cache", "capacity", "requests", "hit rate", "evictions", "cost", "uncached"],
            [
                [
                    (p.cache, None),
                    (p.capacity, p.capacity_pages or 1e18),
                    (count(p.requests), p.requests),
                    (percent(p.hit_rate), p.hit_rate),
                    (count(p.evictions), p.evictions),
                    usd(p.cost, total=True),
                    usd(p.uncached_cost, total=True),
                ]
                for p in report.curve
            ],
            text_columns=(0, 1),
        )
    )
    if report.failure is not None:
        f = report.failure
        body.append(f"<h2>Failure: {escape(', '.join(f.failures))}</h2>")
        body.append(
            figures(
                [
                    usd_figure("extra cost", f.extra_cost, total=False),
                    usd_figure("without", f.cost_without_failure),
                    usd_figure("with", f.cost_with_failure),
                ]
            )
        )
        body.append(
            svg.hbars(
                "Recovery load spread (max / mean; 1 is even)",
                "How the failed cluster's recovery "
                "misses spread over the clusters that stayed up, by placement of the secondary.",
                [(k, float(v["max_over_mean"])) for k, v in f.recovery.items()],
                unit="",
            )
        )
    t = report.traffic
    times = [(f"{cls} p50", c.p50_seconds) for cls, c in t.without_budget.items()]
    times += [(f"{cls} p99", c.p99_seconds) for cls, c in t.without_budget.items()]
    if t.with_budget:
        times += [(f"{cls} p99, budget", c.p99_seconds) for cls, c in t.with_budget.items()]
    body.append("<h2>Time to first token</h2>")
    body.append(
        svg.hbars(
            "Time to first token per class",
            f"p50 and p99 per traffic class at {t.prefill_tokens_per_second:g} prefill tokens a second.",
            times,
            unit="s",
        )
    )
    return page("kcost trace", f"{report.generator} · {shown_path(report.trace)}", body)
