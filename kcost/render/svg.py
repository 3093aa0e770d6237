"""Charts as hand-written SVG: axes with ticks, a grid, a legend, and a text alternative (`<title>`, `<desc>`)
in every chart. No plotting library: the charts are few and simple, the report must be one file that opens
anywhere, and kcost's cold start stays small. Colours are CSS variables, so the page's light and dark schemes
(and print) restyle them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from html import escape

from kcost.render import display

W, H = 760, 300  # the view box; charts scale to the page's width
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 36, 44
PALETTE = [f"var(--c{i})" for i in range(8)]
LINES = [PALETTE[i] for i in (0, 2, 3, 5, 6, 4, 1, 7)]  # for lines: neighbours that differ
HITS, OUTPUT, WRITES = PALETTE[5], PALETTE[0], PALETTE[6]
CAUSES = {"new-input": PALETTE[1], "cold": PALETTE[7], "prefix-changed": PALETTE[2], "output-not-cached": PALETTE[4],
          "expired": PALETTE[3], "no-checkpoint": PALETTE[6], "block-granularity": "var(--c8)",
          "last-token": PALETTE[7], "below-minimum": PALETTE[3], "caching-off": PALETTE[4],
          "reported": PALETTE[2]}  # fmt: skip


def cause_color(cause: str) -> str:
    """One colour per miss reason, the same in every chart."""
    return CAUSES.get(cause, PALETTE[7])


@dataclass(frozen=True)
class Part:
    name: str
    values: Sequence[float]
    color: str


def _frame(title: str, desc: str, body: list[str], height: int = H,
           legend: Sequence[tuple[str, str]] = ()) -> str:  # fmt: skip
    """The chart: its text alternative, its legend (wrapped into rows), its body moved below the legend."""
    rows: list[list[tuple[str, str, float]]] = [[]]
    x = float(LEFT)
    for name, color in legend:
        width = 22 + 7 * len(name)
        if rows[-1] and x + width > W - RIGHT:
            rows.append([])
            x = float(LEFT)
        rows[-1].append((name, color, x))
        x += width
    extra = 16 * (len(rows) - 1)
    items = []
    for r, row in enumerate(rows):
        y = 18 + 16 * r
        for name, color, x in row:
            items.append(f'<rect x="{x:.0f}" y="{y - 9}" width="10" height="10" fill="{color}"/>'
                         f'<text class="legend" x="{x + 14:.0f}" y="{y}">{escape(name)}</text>')  # fmt: skip
    total = height + extra
    return (
        f'<svg class="chart" viewBox="0 0 {W} {total}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title><desc>{escape(desc)}</desc>'
        + "".join(items)
        + f'<g transform="translate(0,{extra})">'
        + "".join(body)
        + "</g></svg>"
    )


STANDALONE_STYLE = (
    "<style>svg{--bg:#fff;--fg:#1d2330;--muted:#5b6472;--line:#d9dee7;--accent:#0b7a4b;--bad:#c0362c;"
    "--c0:#3b6fd4;--c1:#5d8fe8;--c2:#d4773b;--c3:#b54fb0;--c4:#c0362c;--c5:#2d9c8f;--c6:#8b6f2d;--c7:#6b6b6b;--c8:#7a8f2d;"
    "background:var(--bg);font-family:sans-serif}text{fill:var(--fg);font-size:11px}.tick{fill:var(--muted)}"
    ".strong{font-weight:700}.label{fill:var(--muted);font-size:12px}.legend{font-size:12px}"
    ".grid{stroke:var(--line)}.axis{stroke:var(--muted)}.line{fill:none;stroke:var(--fg);stroke-width:1.5}"
    ".series{fill:none;stroke-width:2}.limit{stroke:var(--bad);stroke-dasharray:6 4}</style>"
)


def standalone(chart: str) -> str:
    """A chart as a file of its own: its style inside it, a white background, its size."""
    head, _, rest = chart.partition(">")
    height = head.split('viewBox="0 0 ', 1)[1].split('"', 1)[0].split()[1]
    return (f'{head} width="{W}" height="{height}">{STANDALONE_STYLE}'
            f'<rect width="100%" height="100%" fill="#fff"/>{rest}')  # fmt: skip


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least `top`."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(int(math.ceil(top / step)) + 1)]


def _fmt(value: float, unit: str, total: bool = False) -> str:
    """A figure on a chart (a bar's value, a point's), as the tables beside it write it (`kcost.render.display`);
    `total`: money as a total."""
    if unit == "$":
        return display.money(Decimal(repr(value)), total=total)
    if unit == "%":
        return f"{value:.1f}%"
    if unit == "s":
        return f"{value:g} s"
    return display.tokens(value, places=2) if value >= 1000 else f"{value:g}"


def _tick(value: float, unit: str) -> str:
    """A tick's label: dollars at the precision of the step (`$0.20`, `$0.025`), percent whole, tokens in K and M."""
    if unit == "$":
        return display.axis_money(value)
    if unit == "%":
        return f"{value:.0f}%"
    return _fmt(value, unit)


def _y_axis(ticks: list[float], unit: str, plot_h: int, label: str) -> list[str]:
    out = []
    top = ticks[-1] or 1
    for t in ticks:
        y = TOP + plot_h - t / top * plot_h
        out.append(
            f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_tick(t, unit)}</text>'
        )
    out.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + plot_h}"/>')
    out.append(
        f'<text class="label" transform="translate(12,{TOP + plot_h / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(label)}</text>'
    )
    return out


def stacked_bars(
    title: str,
    desc: str,
    labels: Sequence[str],
    parts: Sequence[Part],
    *,
    unit: str = "$",
    line: Sequence[float] | None = None,
    line_name: str = "cumulative",
    y_label: str = "",
    x_label: str = "",
    limit: float | None = None,
    limit_name: str = "limit",
) -> str:
    """Bars stacked by part, one per label; an optional line on its own right-hand scale (a cumulative cost),
    and an optional horizontal limit (a budget)."""
    n = max(1, len(labels))
    plot_w, plot_h = W - LEFT - RIGHT - (48 if line else 0), H - TOP - BOTTOM
    totals = [sum(p.values[i] for p in parts) for i in range(len(labels))]
    ticks = nice_ticks(max([*totals, limit or 0, 0.0]))
    top = ticks[-1] or 1
    body = _y_axis(ticks, unit, plot_h, y_label)
    slot = plot_w / n
    bar = max(1.0, slot * 0.8)
    for i in range(len(labels)):
        base = 0.0
        x = LEFT + i * slot + (slot - bar) / 2
        for p in parts:
            v = p.values[i]
            if v <= 0:
                continue
            h = v / top * plot_h
            y = TOP + plot_h - (base + v) / top * plot_h
            body.append(
                f'<rect class="bar" x="{x:.2f}" y="{y:.2f}" width="{bar:.2f}" height="{h:.2f}" '
                f'fill="{p.color}"><title>{escape(labels[i])}: {escape(p.name)} {_fmt(v, unit)}</title>'
                "</rect>"
            )
            base += v
    step = max(1, math.ceil(n / 12))
    for i in range(0, len(labels), step):
        x = LEFT + i * slot + slot / 2
        body.append(
            f'<text class="tick" x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{escape(labels[i])}</text>'
        )
    body.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{TOP + plot_h}" y2="{TOP + plot_h}"/>')
    body.append(
        f'<text class="label" x="{LEFT + plot_w / 2}" y="{H - 6}" text-anchor="middle">{escape(x_label)}</text>'
    )
    legend = [(p.name, p.color) for p in parts]
    if limit is not None:
        y = TOP + plot_h - limit / top * plot_h
        body.append(
            f'<line class="limit" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{LEFT + plot_w}" y="{y - 4:.1f}" text-anchor="end">'
            f"{escape(limit_name)} {_fmt(limit, unit)}</text>"
        )
        legend.append((limit_name, "var(--bad)"))
    if line:
        rticks = nice_ticks(max(line))
        rtop = rticks[-1] or 1
        points = " ".join(
            f"{LEFT + i * slot + slot / 2:.1f},{TOP + plot_h - v / rtop * plot_h:.1f}" for i, v in enumerate(line)
        )
        body.append(f'<polyline class="line" points="{points}"/>')
        for t in rticks:
            y = TOP + plot_h - t / rtop * plot_h
            body.append(f'<text class="tick" x="{LEFT + plot_w + 6}" y="{y + 4:.1f}">{_tick(t, unit)}</text>')
        legend.append((line_name, "var(--fg)"))
    return _frame(title, desc, body, legend=legend)


def hbars(
    title: str,
    desc: str,
    items: Sequence[tuple[str, float]],
    *,
    unit: str = "$",
    marks: Sequence[str] = (),
    total: bool = False,
) -> str:
    """One horizontal bar per item, largest first as given; `marks`: items drawn in the accent colour; `total`:
    the values are totals (written at cents, as the tables write a total)."""
    row = 26
    height = TOP + row * max(1, len(items)) + 24
    label_w = min(260, 8 + 7 * max([len(n) for n, _ in items] or [4]))
    plot_w = W - label_w - RIGHT - 80
    top = max([v for _, v in items] or [0]) or 1
    body = []
    for i, (name, value) in enumerate(items):
        y = TOP + i * row
        width = max(1.0, value / top * plot_w) if value > 0 else 0
        color = "var(--accent)" if name in marks else PALETTE[1]
        body.append(
            f'<text class="tick" x="{label_w - 6}" y="{y + 16}" text-anchor="end">{escape(name)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y + 4}" width="{width:.1f}" height="{row - 8}" '
            f'fill="{color}"><title>{escape(name)}: {_fmt(value, unit, total)}</title></rect>'
            f'<text class="tick" x="{label_w + width + 6:.1f}" y="{y + 16}">{_fmt(value, unit, total)}</text>'
        )
    body.append(f'<line class="axis" x1="{label_w}" x2="{label_w}" y1="{TOP}" y2="{TOP + row * len(items)}"/>')
    return _frame(title, desc, body, height)


def lines(
    title: str,
    desc: str,
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    log_x: bool = False,
    x_label: str = "",
    y_label: str = "",
    unit: str = "%",
    x_names: dict[float, str] | None = None,
) -> str:
    """Lines through points (x, y); `log_x`: a logarithmic x axis with a tick per decade; `x_names`: labels
    for some x values (the unlimited capacity, drawn at the right edge)."""
    plot_w, plot_h = W - LEFT - RIGHT - 20, H - TOP - BOTTOM
    xs = [x for _, pts in series for x, _ in pts] or [1.0]
    ys = [y for _, pts in series for _, y in pts] or [0.0]
    lo, hi = (min(xs), max(xs))

    def fx(x: float) -> float:
        if log_x:
            a, b = math.log10(max(lo, 1e-9)), math.log10(max(hi, 1e-9))
            return LEFT + (math.log10(max(x, 1e-9)) - a) / ((b - a) or 1) * plot_w
        return LEFT + (x - lo) / ((hi - lo) or 1) * plot_w

    ticks = nice_ticks(max(ys))
    top = ticks[-1] or 1
    body = _y_axis(ticks, unit, plot_h, y_label)
    body.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{TOP + plot_h}" y2="{TOP + plot_h}"/>')
    marks = sorted(x_names or {})
    points = sorted({x for x in xs if x not in marks})
    if log_x and len(points) > 8:  # many points: a tick a decade
        points = [10.0**d for d in range(math.floor(math.log10(max(lo, 1e-9))), math.ceil(math.log10(hi)) + 1)]
    for value in points:
        x = fx(value)
        if LEFT - 1 <= x <= LEFT + plot_w + 1:
            body.append(
                f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + plot_h}"/>'
                f'<text class="tick" x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
                f"{_tokens(value)}</text>"
            )
    for m in marks:  # named values: a grid line and the name (bold where it is no number: "unlimited")
        name = (x_names or {})[m]
        strong = " strong" if not name[:1].isdigit() else ""
        body.append(
            f'<line class="grid" x1="{fx(m):.1f}" x2="{fx(m):.1f}" y1="{TOP}" y2="{TOP + plot_h}"/>'
            f'<text class="tick{strong}" x="{fx(m):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
            f"{escape(name)}</text>"
        )
    body.append(
        f'<text class="label" x="{LEFT + plot_w / 2}" y="{H - 6}" text-anchor="middle">{escape(x_label)}</text>'
    )
    legend = []
    for k, (name, pts) in enumerate(series):
        color = LINES[k % len(LINES)]
        path = " ".join(f"{fx(x):.1f},{TOP + plot_h - y / top * plot_h:.1f}" for x, y in pts)
        body.append(f'<polyline class="series" points="{path}" stroke="{color}"/>')
        for x, y in pts:
            body.append(
                f'<circle cx="{fx(x):.1f}" cy="{TOP + plot_h - y / top * plot_h:.1f}" r="3.5" fill="{color}">'
                f"<title>{escape(name)}: {_fmt(y, unit)}</title></circle>"
            )
        legend.append((name, color))
    return _frame(title, desc, body, legend=legend)


def timeline(
    title: str, desc: str, points: Sequence[tuple[int, int, int, str]], causes: Sequence[str], turns: int
) -> str:
    """Misses as marks: x the turn, y the token position where the missed run starts, the size its tokens, the
    colour its cause."""
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    top_tok = max([at + n for _, at, n, _ in points] or [1])
    ticks = nice_ticks(top_tok)
    top = ticks[-1] or 1
    body = _y_axis(ticks, "", plot_h, "token position")
    body.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{TOP + plot_h}" y2="{TOP + plot_h}"/>')
    colors = {c: cause_color(c) for c in causes}
    slot = plot_w / max(1, turns)
    for turn, at, n, cause in points:
        x = LEFT + (turn - 0.5) * slot
        y0, y1 = TOP + plot_h - at / top * plot_h, TOP + plot_h - (at + n) / top * plot_h
        body.append(
            f'<rect class="mark" x="{x - max(2.0, slot * 0.3):.1f}" y="{y1:.1f}" '
            f'width="{max(4.0, slot * 0.6):.1f}" height="{max(2.0, y0 - y1):.1f}" fill="{colors[cause]}">'
            f"<title>turn {turn}: {escape(cause)}, {display.count(n)} tokens from {display.count(at)}</title>"
            "</rect>"
        )
    step = max(1, math.ceil(turns / 12))
    for t in range(1, turns + 1, step):
        body.append(
            f'<text class="tick" x="{LEFT + (t - 0.5) * slot:.1f}" y="{TOP + plot_h + 16}" '
            f'text-anchor="middle">{t}</text>'
        )
    body.append(f'<text class="label" x="{LEFT + plot_w / 2}" y="{H - 6}" text-anchor="middle">turn</text>')
    return _frame(title, desc, body, legend=[(c, colors[c]) for c in causes])


def _tokens(n: float) -> str:
    """A token axis's label: `500`, `250K`, `1.25M`."""
    return display.tokens(n, places=2)
