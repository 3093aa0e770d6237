"""`kcost trace` on a terminal, and the hit-rate-vs-capacity curve as an SVG picture."""

from __future__ import annotations

from html import escape

from rich.text import Text

from kcost.render.fit import Column, fitted
from kcost.render.terminal import console as make_console
from kcost.render.text import pct, tokens, usd
from kcost.results.trace import TraceReport


def trace_table(report: TraceReport, *, width: int, color: bool) -> str:
    console, out = make_console(width, color)
    first = report.curve[0]
    console.print(Text(f"{report.trace} · {first.requests:,} requests · {report.clusters} cluster(s)", style="bold"))
    columns = [Column("cache model", number=False), Column("capacity"), Column("hit rate"), Column("hit tokens"),
               Column("evictions", drop=1), Column("cost"), Column("without caching", drop=2)]  # fmt: skip
    rows = [[p.cache, p.capacity, pct(p.hit_rate), tokens(p.hit_tokens), tokens(p.evictions), usd(p.cost),
             usd(p.uncached_cost)] for p in report.curve]  # fmt: skip
    console.print(fitted(columns, rows, width))
    if report.failure:
        f = report.failure
        console.print()
        console.print(Text(f"failure {', '.join(f.failures)}", style="bold"))
        console.print(f"cost {usd(f.cost_with_failure)} against {usd(f.cost_without_failure)}: "
                      f"{usd(f.extra_cost, 4)} more")  # fmt: skip
        for how, s in f.recovery.items():
            console.print(f"recovery load, {how} secondaries: {s['clusters']} cluster(s), "
                          f"max {tokens(int(s['max_misses']))} / mean {tokens(int(s['mean_misses']))} misses "
                          f"(max/mean {s['max_over_mean']})")  # fmt: skip
    t = report.traffic
    console.print()
    console.print(Text(f"time to first token (prefill {t.prefill_tokens_per_second:,.0f} tokens/s a cluster; "
                       f"long from {t.long_from_tokens:,} tokens)", style="bold"))  # fmt: skip
    columns = [Column("class", number=False)]
    columns += [Column(n) for n in ("requests", "p50", "p99", "p50 budgeted", "p99 budgeted")]
    rows = []
    for cls, row in t.without_budget.items():
        budget = t.with_budget[cls] if t.with_budget else None
        shown = [f"{budget.p50_seconds:.3f}s", f"{budget.p99_seconds:.3f}s"] if budget else ["-", "-"]
        rows.append([cls, tokens(row.requests), f"{row.p50_seconds:.3f}s", f"{row.p99_seconds:.3f}s", *shown])
    console.print(fitted(columns, rows, width))
    if t.long_share is not None:
        console.print(f"budget: the long class gets at most {t.long_share:.0%} of a cluster's prefill while short "
                      "requests wait")  # fmt: skip
    return out.getvalue()


def curve_svg(report: TraceReport) -> str:
    """Hit rate against capacity, one line per cache model; `inf` drawn at the right edge."""
    w, h, left, bottom, top, right = 780, 400, 60, 50, 30, 250
    points = report.curve
    finite = sorted({p.capacity_pages for p in points if p.capacity_pages is not None})
    xs = finite + ([None] if any(p.capacity_pages is None for p in points) else [])
    slots = {pages: i for i, pages in enumerate(xs)}
    step = (w - left - right) / max(1, len(xs) - 1)

    def x(pages: int | None) -> float:
        return left + slots[pages] * step

    def y(rate: float) -> float:
        return top + (1 - rate) * (h - top - bottom)

    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{left}" y="18" font-family="sans-serif" font-size="14">hit rate vs cache capacity: '
        f"{escape(report.trace)}</text>",
        f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<text x="{left - 8}" y="{y(tick) + 4:.1f}" font-family="sans-serif" font-size="11" '
                     f'text-anchor="end">{tick:.0%}</text>')  # fmt: skip
    labels = {p.capacity_pages: p.capacity for p in points}
    for pages in xs:
        parts.append(f'<text x="{x(pages):.1f}" y="{h - bottom + 18}" font-family="sans-serif" font-size="11" '
                     f'text-anchor="middle">{escape(labels[pages])}</text>')  # fmt: skip
    for n, cache in enumerate(dict.fromkeys(p.cache for p in points)):
        line = sorted((p for p in points if p.cache == cache), key=lambda p: slots[p.capacity_pages])
        color = colors[n % len(colors)]
        coords = " ".join(f"{x(p.capacity_pages):.1f},{y(p.hit_rate):.1f}" for p in line)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{coords}"/>')
        for p in line:
            parts.append(f'<circle cx="{x(p.capacity_pages):.1f}" cy="{y(p.hit_rate):.1f}" r="3" fill="{color}"/>')
        parts.append(f'<text x="{w - right + 10}" y="{top + 16 * n + 10}" font-family="sans-serif" font-size="11" '
                     f'fill="{color}">{escape(cache)}</text>')  # fmt: skip
    parts.append(f'<text x="{(left + w - right) / 2:.0f}" y="{h - 10}" font-family="sans-serif" font-size="12" '
                 'text-anchor="middle">capacity</text>')  # fmt: skip
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
