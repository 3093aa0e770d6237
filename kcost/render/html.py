"""`--format html`: one self-contained page per report (inline CSS and SVG, a few lines of vanilla JavaScript to
sort tables; no network, no framework) that opens from disk or as a CI artifact.

Every figure is the exact text the JSON holds (money as exact decimals); every chart has a text alternative and
a table beside it; the page follows the reader's light or dark scheme and prints cleanly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from functools import partial
from html import escape
from typing import TYPE_CHECKING

from kcost.render import svg
from kcost.render.trace import capacity_curve
from kcost.results.bill import BillReport, SessionBill, TurnBill
from kcost.results.check import TOTAL, CheckOutcome, DiffReport, Result, SessionDiff
from kcost.results.common import money_text
from kcost.results.compare import CompareReport
from kcost.results.explain import Explanation
from kcost.results.trace import TraceReport

if TYPE_CHECKING:
    from kcost.render.registry import View

BARS = 240  # at most this many bars in a cost-per-turn chart
MARKS = 2000  # at most this many misses on a timeline

CSS = """
:root { --bg:#fff; --fg:#1d2330; --muted:#5b6472; --line:#d9dee7; --panel:#f6f8fb; --accent:#0b7a4b;
  --bad:#c0362c; --good:#0b7a4b; --c0:#3b6fd4; --c1:#5d8fe8; --c2:#d4773b; --c3:#b54fb0; --c4:#c0362c;
  --c5:#2d9c8f; --c6:#8b6f2d; --c7:#6b6b6b; --c8:#7a8f2d; color-scheme: light dark; }
@media (prefers-color-scheme: dark) { :root { --bg:#12151c; --fg:#e6e9ef; --muted:#9aa3b2; --line:#2c3340;
  --panel:#1a1f29; --accent:#3fcf8e; --bad:#ff6b5e; --good:#3fcf8e; --c0:#6f9cff; --c1:#8fb3ff; --c2:#ffa05e;
  --c3:#e08ade; --c4:#ff6b5e; --c5:#4fd1c0; --c6:#d8b45a; --c7:#a0a0a0; --c8:#b8d15a; } }
body { background:var(--bg); color:var(--fg); font:15px/1.5 system-ui, sans-serif; margin:0 auto; max-width:1100px;
  padding:24px; }
h1 { font-size:1.5em; margin:0 0 4px; } h2 { font-size:1.2em; margin:28px 0 6px; border-bottom:1px solid var(--line); }
h3 { font-size:1.05em; margin:18px 0 6px; }
.meta, .note { color:var(--muted); font-size:.9em; }
.figures { display:flex; flex-wrap:wrap; gap:10px; margin:10px 0; }
.figure { background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:8px 12px; min-width:120px; }
.figure b { display:block; font-size:1.2em; font-variant-numeric:tabular-nums; }
.fail { color:var(--bad); font-weight:600; } .pass { color:var(--good); }
table { border-collapse:collapse; width:100%; font-size:.88em; font-variant-numeric:tabular-nums; margin:8px 0; }
th, td { border-bottom:1px solid var(--line); padding:3px 8px; text-align:right; }
th:first-child, td:first-child, td.text, th.text { text-align:left; }
th { cursor:pointer; user-select:none; background:var(--panel); position:sticky; top:0; }
th[aria-sort="ascending"]::after { content:" \\25B2"; } th[aria-sort="descending"]::after { content:" \\25BC"; }
.chart { width:100%; height:auto; display:block; margin:8px 0; }
.chart text { fill:var(--fg); font-size:11px; } .chart .tick { fill:var(--muted); } .chart .strong { font-weight:700; }
.chart .label { fill:var(--muted); font-size:12px; } .chart .legend { font-size:12px; }
.chart .grid { stroke:var(--line); stroke-width:1; } .chart .axis { stroke:var(--muted); stroke-width:1; }
.chart .line { fill:none; stroke:var(--fg); stroke-width:1.5; } .chart .series { fill:none; stroke-width:2; }
.chart .limit { stroke:var(--bad); stroke-width:1.5; stroke-dasharray:6 4; }
.side { display:grid; grid-template-columns:repeat(auto-fit, minmax(320px, 1fr)); gap:16px; }
details summary { cursor:pointer; color:var(--muted); }
@media print { body { max-width:none; padding:0; } th { position:static; } details { display:block; }
  .chart, table { break-inside:avoid; } }
"""

JS = """
document.querySelectorAll('table.sortable th').forEach(function (th, col) {
  th.addEventListener('click', function () {
    var table = th.closest('table'), body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var up = th.getAttribute('aria-sort') !== 'ascending';
    table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
    rows.sort(function (a, b) {
      var x = a.cells[col].dataset.v, y = b.cells[col].dataset.v;
      var d = (x !== undefined && y !== undefined) ? parseFloat(x) - parseFloat(y)
        : a.cells[col].textContent.localeCompare(b.cells[col].textContent);
      return up ? d : -d;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""


def page(title: str, subtitle: str, body: Iterable[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f'<h1>{escape(title)}</h1><p class="meta">{escape(subtitle)}</p>'
        + "".join(body)
        + f"<script>{JS}</script></body></html>\n"
    )


def usd(value: Decimal) -> str:
    """Money exactly as the JSON holds it, with a dollar sign."""
    text = money_text(value)
    return f"-${text[1:]}" if text.startswith("-") else f"${text}"


def figures(items: Sequence[tuple[str, str, str | None]]) -> str:
    """Headline figures: (label, text, data attribute name)."""
    cells = []
    for label, text, attr in items:
        data = f' data-{attr}="{escape(text)}"' if attr else ""
        cells.append(f'<div class="figure">{escape(label)}<b{data}>{escape(text)}</b></div>')
    return f'<div class="figures">{"".join(cells)}</div>'


def table(
    head: Sequence[str],
    rows: Iterable[Sequence[tuple[str, float | None]]],
    *,
    caption: str = "",
    text_columns: Sequence[int] = (0,),
) -> str:
    """A sortable table; each cell (text, sort value or None to sort as text)."""
    th = "".join(
        f'<th scope="col" class="{"text" if i in text_columns else ""}">{escape(h)}</th>' for i, h in enumerate(head)
    )
    body = []
    for row in rows:
        tds = []
        for i, (text, value) in enumerate(row):
            v = f' data-v="{value}"' if value is not None else ""
            cls = ' class="text"' if i in text_columns else ""
            tds.append(f"<td{cls}{v}>{escape(text)}</td>")
        body.append(f"<tr>{''.join(tds)}</tr>")
    cap = f'<caption class="note">{escape(caption)}</caption>' if caption else ""
    return f'<table class="sortable">{cap}<thead><tr>{th}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def pct(rate: float) -> str:
    return f"{rate * 100:.1f}%"


# ---- bill -----------------------------------------------------------------------------------------------------


def bill_html(report: BillReport, view: View, title: str = "kcost bill") -> str:
    prices = report.prices
    subtitle = f"{report.generator} · prices: {prices.name} ({prices.effective}), {prices.currency} per {prices.per}"
    body: list[str] = []
    if len(report.runs) > 1:  # several cache models: side by side
        body.append("<h2>Cache models side by side</h2>")
        body.append(
            svg.hbars(
                "Total cost by cache model",
                "What all sessions cost under each cache model.",
                [(r.cache.label, float(r.total.total)) for r in report.runs],
            )
        )
        body.append(
            table(
                ["cache model", "total", "hit rate", "input", "output"],
                [
                    [
                        (r.cache.label, None),
                        (usd(r.total.total), float(r.total.total)),
                        (pct(r.total.hit_rate), r.total.hit_rate),
                        (usd(r.total.input_cost), float(r.total.input_cost)),
                        (usd(r.total.output_cost), float(r.total.output_cost)),
                    ]
                    for r in report.runs
                ],
            )
        )
        # each session under each model, a column a model
        labels = [r.cache.label for r in report.runs]
        body.append(
            table(
                ["session", *labels],
                [
                    [(bills[0].name, None), *((usd(b.summary.total), float(b.summary.total)) for b in bills)]
                    for bills in zip(*(r.sessions for r in report.runs), strict=True)
                ],
                caption="each session's total under each cache model",
            )
        )
    for run in report.runs:
        body.append(f"<h2>Cache model <code>{escape(run.cache.label)}</code></h2>")
        body.append(
            f'<p class="note">checkpoints: {escape(run.cache.checkpoints)}'
            + (f" · source: {escape(run.cache.source)}" if run.cache.source else "")
            + "</p>"
        )
        if len(run.sessions) > 1:
            body.append(
                figures(
                    [
                        ("sessions", str(len(run.sessions)), None),
                        ("total", usd(run.total.total), "run-total"),
                        ("hit rate", pct(run.total.hit_rate), None),
                    ]
                )
            )
            body.append(
                svg.hbars(
                    "Cost by session",
                    "Each session's total under this cache model.",
                    [(b.name, float(b.summary.total)) for b in run.sessions],
                )
            )
        for b in run.sessions:
            body += _session(b)
    return page(title, subtitle, body)


def _cause_cost(cause: str, turn: TurnBill) -> Decimal:
    return sum((m.cost for m in turn.misses if m.reason == cause), Decimal(0))


def _session(b: SessionBill) -> list[str]:
    s = b.summary
    out = [
        f"<h3>{escape(b.name)} · {escape(b.model)}</h3>",
        f'<p class="note">{escape(b.source)} · token counts: {escape(b.token_counts)}</p>',
    ]
    out.append(
        figures(
            [
                ("total", usd(s.total), "session-total"),
                ("turns", str(s.turns), None),
                ("hit rate", pct(s.hit_rate), None),
                ("input", usd(s.input_cost), None),
                ("output", usd(s.output_cost), None),
                ("without caching", usd(s.uncached_total), None),
                ("saved", usd(s.saved), None),
            ]
        )
    )
    causes = list(s.miss_by_reason)
    # a bar a turn, or, past BARS turns, a bar for each run of turns (their costs summed): the chart stays legible
    # and the file small on a session of any length
    size = -(-len(b.turns) // BARS)
    groups = [b.turns[k : k + size] for k in range(0, len(b.turns), size)]
    labels = [str(g[0].turn) if len(g) == 1 else f"{g[0].turn}-{g[-1].turn}" for g in groups]

    def summed(cost: Callable[[TurnBill], Decimal]) -> list[float]:
        return [float(sum((cost(t) for t in g), Decimal(0))) for g in groups]

    parts = [svg.Part("cache hits", summed(lambda t: t.hit_cost), svg.HITS)]
    for cause in causes:
        parts.append(svg.Part(f"misses: {cause}", summed(partial(_cause_cost, cause)), svg.cause_color(cause)))
    if s.write_premium:
        parts.append(svg.Part("cache writes", summed(lambda t: t.write_premium), svg.WRITES))
    parts.append(svg.Part("output", summed(lambda t: t.output_cost), svg.OUTPUT))
    per = "turn" if size == 1 else f"{size} turns"
    out.append(
        svg.stacked_bars(
            f"Cost per {per}: {b.name}",
            f"{s.turns} turns costing {usd(s.total)} in all; each bar splits the cost of a {per} into cache hits, "
            "misses by cause and output; the line is the cumulative cost.",
            labels,
            parts,
            line=[float(g[-1].cumulative) for g in groups],
            y_label=f"cost per {per}",
            x_label="turn",
        )
    )
    points = [(t.turn, m.at, m.tokens, m.reason) for t in b.turns for m in t.misses if m.reason != "new-input"]
    if len(points) > MARKS:  # the largest misses: the rest would be marks a pixel wide
        points = sorted(sorted(points, key=lambda p: -p[2])[:MARKS])
    if points:
        shown = list(dict.fromkeys(p[3] for p in points))
        out.append(
            svg.timeline(
                f"Misses by cause: {b.name}",
                f"Where in each prompt the avoidable misses start, by cause: {', '.join(shown)}.",
                points,
                shown,
                len(b.turns),
            )
        )
    out.append("<details><summary>every turn (click a column to sort)</summary>")
    out.append(
        table(
            ["turn", "input", "hits", "misses", "output", "hit rate", "cost", "cumulative", "why"],
            [
                [
                    (str(t.turn) + (f" {t.label}" if t.label else ""), t.turn),
                    (f"{t.input_tokens:,}", t.input_tokens),
                    (f"{t.hit_tokens:,}", t.hit_tokens),
                    (f"{t.miss_tokens:,}", t.miss_tokens),
                    (f"{t.output_tokens:,}", t.output_tokens),
                    (pct(t.hit_rate), t.hit_rate),
                    (usd(t.total), float(t.total)),
                    (usd(t.cumulative), float(t.cumulative)),
                    (t.reason, None),
                ]
                for t in b.turns
            ],
            text_columns=(8,),
        )
    )
    out.append("</details>")
    if b.notes:
        out.append('<ul class="note">' + "".join(f"<li>{escape(n)}</li>" for n in b.notes) + "</ul>")
    return out


# ---- explain, check, diff, compare, trace -------------------------------------------------------------------


def explain_html(items: Sequence[Explanation], view: View) -> str:
    body: list[str] = []
    for e in items:
        body.append(f"<h2>{escape(e.session)} · <code>{escape(e.cache)}</code></h2>")
        body.append(
            figures(
                [
                    ("total", usd(e.total), "session-total"),
                    ("new input", usd(e.new_input_cost), None),
                    ("avoidable", usd(e.avoidable), None),
                ]
            )
        )
        if e.hour_writes is not None:
            h = e.hour_writes
            body.append(
                f'<p class="note">with 1-hour cache writes this session would cost {usd(h.total)} '
                f"({usd(h.difference)} against this bill; {h.idle_gaps} idle gaps between the TTL and an "
                "hour)</p>"
            )
        if not e.ranked:
            body.append("<p>no avoidable misses: every uncached token was new input</p>")
            continue
        body.append(
            svg.hbars(
                f"Causes by cost: {e.session}",
                "What each avoidable cause of misses cost, largest first.",
                [(r.cause, float(r.cost)) for r in e.ranked],
            )
        )
        body.append(
            table(
                ["cause", "turns", "tokens", "cost", "fix"],
                [
                    [
                        (r.cause, None),
                        (str(r.turns), r.turns),
                        (f"{r.tokens:,}", r.tokens),
                        (usd(r.cost), float(r.cost)),
                        (r.fix, None),
                    ]
                    for r in e.ranked
                ],
                text_columns=(0, 4),
            )
        )
    return page("kcost explain", "why each session's misses cost money, with fixes", body)


def check_html(outcome: CheckOutcome, view: View) -> str:
    report, changes = outcome.report, outcome.diff
    verdict = "passed" if report.passed else f"failed: {report.failures} budget(s) exceeded"
    body = [f'<p class="{"pass" if report.passed else "fail"}">{escape(verdict)}</p>']
    body.append(
        figures([("total", usd(report.total.total), "session-total"), ("hit rate", pct(report.total.hit_rate), None)])
    )
    by_budget: dict[str, list[Result]] = {}
    for r in report.results:
        by_budget.setdefault(r.budget, []).append(r)
    for budget, results in by_budget.items():  # failures first, as the report orders them
        rows = [r for r in results if r.session != TOTAL] or results
        body.append(
            svg.stacked_bars(
                f"{budget} against its limit",
                f"Each session's {budget} and the limit {rows[0].limit}.",
                [r.session for r in rows],
                [svg.Part(budget, [float(r.value) for r in rows], svg.PALETTE[0])],
                limit=float(rows[0].limit),
                limit_name="limit",
                unit="$" if "usd" in budget else "",
                y_label=budget,
            )
        )
    body.append(
        table(
            ["session", "budget", "value", "limit", "verdict", "message"],
            [
                [
                    (r.session, None),
                    (r.budget, None),
                    (str(r.value), float(r.value)),
                    (str(r.limit), float(r.limit)),
                    ("pass" if r.passed else "FAIL", None),
                    (r.message, None),
                ]
                for r in report.results
            ],
            text_columns=(0, 1, 4, 5),
        )
    )
    if changes is not None:
        body.append(_diff_body(changes))
    return page("kcost check", f"{report.generator} · cache {report.cache.label}", body)


def diff_html(changes: DiffReport, view: View) -> str:
    shown = changes.changed_only() if view.only_changed else changes
    return page("kcost diff", "two bills side by side: what changed first", [_diff_body(shown)])


def _diff_body(changes: DiffReport) -> str:
    t = changes.total
    out = [
        f"<h2>{escape(changes.before)} → {escape(changes.after)}</h2>",
        figures(
            [
                ("before", usd(t.before.total) if t.before else "-", None),
                ("after", usd(t.after.total) if t.after else "-", "session-total"),
                ("change", usd(t.change) if t.change is not None else "-", None),
            ]
        ),
    ]

    def delta(s: SessionDiff) -> Decimal:
        return (s.after.total if s.after else Decimal(0)) - (s.before.total if s.before else Decimal(0))

    moved = [s for s in changes.sessions if delta(s)]
    out.append(
        svg.hbars(
            "Change by session",
            "How much each session's cost moved (new sessions count in full, removed ones as savings), largest "
            "first; increases in the accent colour.",
            [(f"{s.session} ({s.status})", float(abs(delta(s)))) for s in moved] or [("no change", 0.0)],
            marks=[f"{s.session} ({s.status})" for s in moved if delta(s) > 0],
        )
    )
    out.append(
        table(
            ["session", "status", "before", "after", "change", "change %"],
            [
                [
                    (s.session, None),
                    (s.status, None),
                    (usd(s.before.total) if s.before else "-", float(s.before.total) if s.before else None),
                    (usd(s.after.total) if s.after else "-", float(s.after.total) if s.after else None),
                    (usd(s.change) if s.change is not None else "-", float(s.change or 0)),
                    (f"{s.change_pct}%" if s.change_pct is not None else "-", float(s.change_pct or 0)),
                ]
                for s in changes.sessions
            ],
            text_columns=(0, 1),
        )
    )
    return "".join(out)


def compare_html(report: CompareReport, view: View) -> str:
    body = [f'<p class="note">{escape(report.note)}</p>']
    for s in report.sessions:
        body.append(f"<h2>{escape(s.session)} · {s.turns} turns · cheapest: {escape(s.cheapest)}</h2>")
        body.append(
            svg.hbars(
                f"Cost by model: {s.session}",
                "The session's cost on each model under its provider's cache rule; the cheapest in the accent colour.",
                [(r.model, float(r.cost)) for r in s.rows],
                marks=[s.cheapest],
            )
        )
        body.append(
            table(
                ["model", "provider's cache rule", "hits", "cost", "per turn", "dominant", "counts"],
                [
                    [
                        (r.model, None),
                        (r.cache, None),
                        (pct(r.hit_rate), r.hit_rate),
                        (usd(r.cost), float(r.cost)),
                        (usd(r.cost_per_turn), float(r.cost_per_turn)),
                        (r.dominant, None),
                        (r.counts, None),
                    ]
                    for r in s.rows
                ],
                text_columns=(0, 1, 5, 6),
            )
        )
    return page("kcost compare", f"{report.generator} · prices: {report.prices.name}", body)


def trace_html(report: TraceReport, view: View) -> str:
    body = [
        figures(
            [
                ("requests", f"{report.curve[0].requests:,}", None),
                ("clusters", str(report.clusters), None),
                ("cost at the first capacity", usd(report.curve[0].cost), "session-total"),
                ("engine", report.engine, None),
            ]
        )
    ]
    body.append("<h2>Hit rate by cache capacity</h2>")
    body.append(capacity_curve(report))
    body.append(
        table(
            ["cache", "capacity", "requests", "hit rate", "evictions", "cost", "uncached"],
            [
                [
                    (p.cache, None),
                    (p.capacity, p.capacity_pages or 1e18),
                    (f"{p.requests:,}", p.requests),
                    (pct(p.hit_rate), p.hit_rate),
                    (f"{p.evictions:,}", p.evictions),
                    (usd(p.cost), float(p.cost)),
                    (usd(p.uncached_cost), float(p.uncached_cost)),
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
                    ("extra cost", usd(f.extra_cost), None),
                    ("without", usd(f.cost_without_failure), None),
                    ("with", usd(f.cost_with_failure), None),
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
    return page("kcost trace", f"{report.generator} · {report.trace}", body)
