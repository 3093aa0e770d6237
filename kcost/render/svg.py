"""Charts as hand-written SVG: axes with ticks, a grid, a legend, and a text alternative (`<title>`, `<desc>`)
in every chart. No plotting library: the charts are few and simple, the report must be one file that opens
anywhere, and kcost's cold start stays small. Colours are CSS variables, so the page's light and dark schemes
(and print) restyle them.

Labels never overlap and never reach past the picture's edge, however many there are: each label's width is
measured (`text_width`, with a wide face's metrics, so a narrower one only leaves more room); a label longer than
its room keeps its start and its last words around an ellipsis, and its full text in a `<title>` tooltip; the
labels of an x axis are set upright when they fit their slots (names in two lines), else on end, and past that
only every k-th; the margin left of a y axis or of horizontal bars widens to its labels (within a cap); a legend
wraps into rows; a negative bar (a saving) points left of the zero line.

Ticks are written as the tables beside them write their figures (percent, money, tokens with the same K, M, B
and T), with as many decimals as their step needs and no more, so no two ticks of an axis read the same; money
from a thousand dollars up is written short (`$25K`, `$2.5M`). A bar whose value is 0, or too small to see,
is still drawn: a stub at the axis, its value in its tooltip. An axis's labels carry its name (`data-axis`: `x`,
`y`, and `y2` on a right-hand scale), so a check can read each axis apart.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import partial
from html import escape

from kcost.model.frozen import frozen
from kcost.render import display

W, H = 760, 300  # the view box; charts scale to the page's width
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 36, 44
PALETTE = [f"var(--c{i})" for i in range(8)]
LINES = [PALETTE[i] for i in (0, 2, 3, 5, 6, 4, 1, 7)]  # for lines: neighbours that differ
HITS, OUTPUT, WRITES = PALETTE[5], PALETTE[0], PALETTE[6]
LIMIT = "limit"  # a legend's colour that is the limit's dashed line
TICK, LABEL = 11, 12  # font sizes (px) of ticks and of axis labels and legends, as the page's style sets them
GAP = 4  # the least room between two labels
LINE = 14  # the room a line of tick text takes across (a label on end, side by side with the next)
ON_END = 120  # the longest a label on end may be
LABELS_AT_MOST = 280  # the widest the labels left of horizontal bars may make their margin
# Advance widths of " " to "~" in hundredths of an em, of DejaVu Sans (the default sans-serif where Chromium runs
# headless, and wider than the usual faces elsewhere: a label measured with it fits in a narrower face too).
_EM = (32, 40, 46, 84, 64, 95, 78, 28, 39, 39, 50, 84, 32, 36, 32, 34, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 34, 34,
       84, 84, 84, 53, 100, 68, 69, 70, 77, 63, 58, 78, 75, 30, 30, 66, 56, 86, 75, 79, 60, 79, 69, 63, 61, 73, 68, 99,
       69, 61, 69, 39, 34, 39, 84, 50, 50, 61, 63, 55, 63, 62, 35, 63, 63, 28, 28, 58, 28, 97, 63, 61, 63, 63, 41, 52,
       39, 63, 59, 82, 59, 59, 52, 64, 34, 64, 84)  # fmt: skip
ELLIPSIS = "\u2026"
TAIL = 0.45  # the most of a shortened label's room its last words take
SLACK = 0.01  # px: a width within this of its room fits it
STUB = 2.0  # px: the least height a bar is drawn at (a 0 is a stub at the axis)
CAUSES = {"new-input": PALETTE[1], "cold": PALETTE[7], "prefix-changed": PALETTE[2], "output-not-cached": PALETTE[4],
          "expired": PALETTE[3], "no-checkpoint": PALETTE[6], "block-granularity": "var(--c8)",
          "last-token": PALETTE[7], "below-minimum": PALETTE[3], "caching-off": PALETTE[4],
          "reported": PALETTE[2], "model-switch": PALETTE[0]}  # fmt: skip


def cause_color(cause: str) -> str:
    """One colour per miss reason, the same in every chart."""
    return CAUSES.get(cause, PALETTE[7])


def text_width(text: str, size: float = TICK, *, bold: bool = False) -> float:
    """The width (px) `text` takes at `size`: measured per character, a little generously (kerning only narrows
    it); a character past ASCII as wide as a wide letter, a CJK one a full em."""
    em = 0
    for c in text:
        o = ord(c)
        if 32 <= o < 127:
            em += _EM[o - 32]
        else:
            em += 100 if c == ELLIPSIS or unicodedata.east_asian_width(c) in "WF" else 80
    return em / 100 * size * (1.1 if bold else 1.0) * 1.02


def fit(text: str, room: float, size: float = TICK, *, bold: bool = False) -> str:
    """`text`, or, when it is wider than `room`, its start and its end around an ellipsis: the end of a name is
    often what tells it from its neighbours (`run 17`), so its last words are kept whole where they take at most
    `TAIL` of the room. Empty when not even the ellipsis fits."""

    def width(t: str) -> float:
        return text_width(t, size, bold=bold)

    room += SLACK  # a room worked out from a label's own width fits it, whatever the float's last bit says
    if width(text) <= room:
        return text
    if width(ELLIPSIS) > room:
        return ""
    starts = [i for i in range(1, len(text)) if text[i - 1] == " " and text[i] != " "]
    tail = next((" " + text[i:] for i in starts if width(" " + text[i:]) <= TAIL * room), "")
    if not tail:  # no last words short enough: as many characters of the end as of the start
        keep = _most(lambda n: width(text[: (n + 1) // 2] + ELLIPSIS + text[len(text) - n // 2 :]) <= room, len(text))
        return text[: (keep + 1) // 2].rstrip() + ELLIPSIS + text[len(text) - keep // 2 :].lstrip()
    head = _most(lambda n: width(text[:n].rstrip() + ELLIPSIS + tail) <= room, len(text) - len(tail))
    return text[:head].rstrip() + ELLIPSIS + tail


def _most(fits: Callable[[int], bool], top: int) -> int:
    """The largest n in 0..top for which `fits(n)` holds (it holds for 0, and once it fails it fails on)."""
    lo, hi = 0, top
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _words_fit(words: list[str], room: float, size: float, k: int) -> bool:
    return k <= 1 or text_width(" ".join(words[:k]), size) <= room


def wrap(text: str, room: float, lines: int = 2, size: float = TICK) -> list[str]:
    """`text` in at most `lines` lines of `room`, broken between words; the last line fitted (`fit`)."""
    out: list[str] = []
    rest = text
    while rest and len(out) < lines - 1:
        words = rest.split(" ")
        n = _most(partial(_words_fit, words, room, size), len(words))
        if text_width(words[0], size) > room or n == len(words):
            break  # a word too long for a line, or the rest on one line: the last line takes it
        out.append(" ".join(words[:n]))
        rest = " ".join(words[n:])
    return [*out, fit(rest, room, size)] if rest else out


def label(text: str, room: float, place: str, *, cls: str = "tick", size: float = TICK, bold: bool = False) -> str:
    """A `<text>` at `place` (its position and anchor attributes) of `text` fitted into `room`, the full text in
    its tooltip when it had to be shortened; nothing when `text` is empty."""
    shown = fit(text, room, size, bold=bold)
    if not shown:
        return ""
    tip = f"<title>{escape(text)}</title>" if shown != text else ""
    return f'<text class="{cls}" {place}>{escape(shown)}{tip}</text>'


@frozen
class Part:
    name: str
    values: Sequence[float]
    color: str


def _frame(title: str, desc: str, body: list[str], height: float = H,
           legend: Sequence[tuple[str, str]] = ()) -> str:  # fmt: skip
    """The chart: its text alternative, its legend (wrapped into rows, a name too long for a row shortened; a
    swatch of its colour, or of the limit's dashed line for `LIMIT`), its body moved below the legend."""
    rows: list[list[tuple[str, str, float]]] = [[]]
    x = float(LEFT)
    room = float(W - RIGHT - LEFT - 14)  # a name's room: a row of its own, after its swatch
    for name, color in legend:
        width = 14 + min(room, text_width(name, LABEL)) + 14
        if rows[-1] and x + width - 14 > W - RIGHT:
            rows.append([])
            x = float(LEFT)
        rows[-1].append((name, color, x))
        x += width
    extra = 16 * (len(rows) - 1)
    items = []
    for r, row in enumerate(rows):
        y = 18 + 16 * r
        for name, color, x in row:
            swatch = (
                f'<line class="limit" x1="{x:.0f}" x2="{x + 10:.0f}" y1="{y - 4}" y2="{y - 4}"/>'
                if color == LIMIT
                else f'<rect x="{x:.0f}" y="{y - 9}" width="10" height="10" fill="{color}"/>'
            )
            items.append(swatch + label(name, room, f'x="{x + 14:.0f}" y="{y}"', cls="legend", size=LABEL))
    total = height + extra
    return (
        f'<svg class="chart" viewBox="0 0 {W} {total:.0f}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title><desc>{escape(desc)}</desc>'
        + "".join(items)
        + f'<g transform="translate(0,{extra})">'
        + "".join(body)
        + "</g></svg>"
    )


STANDALONE_STYLE = (
    "<style>svg{--bg:#fff;--fg:#1d2330;--muted:#5b6472;--line:#d9dee7;--accent:#0b7a4b;--bad:#c0362c;--good:#0b7a4b;"
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
    return short(value) if value >= 1000 else f"{value:g}"


SUFFIXES = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"))


def short(n: float, places: int = 2) -> str:
    """A large number in short form, as the tables write tokens: `950`, `4.1K`, `1.25M`, `972.66B`, `12.5T`
    (at most `places` decimals, trailing zeros dropped)."""
    for size, suffix in SUFFIXES:
        if abs(n) >= size:
            return f"{n / size:.{places}f}".rstrip("0").rstrip(".") + suffix
    return f"{n:.{places}f}".rstrip("0").rstrip(".") if n != int(n) else str(int(n))


def _places(value: float, most: int = 6) -> int:
    """The fewest decimals that write `value` (a round tick, or a float's noise about one) exactly."""
    for places in range(most + 1):
        if abs(round(value, places) - value) <= 1e-9 * max(1.0, abs(value)):
            return places
    return most


def _scaled(value: float) -> tuple[float, str]:
    """`value` in the unit of its short form, and the suffix: (2.5, "M") for 2,500,000."""
    size, suffix = next(((size, suffix) for size, suffix in SUFFIXES if abs(value) >= size), (1, ""))
    return value / size, suffix


def tick_labels(ticks: Sequence[float], unit: str) -> list[str]:
    """The labels of an axis's ticks (round numbers from `nice_ticks`), each as the tables beside the chart write
    its unit, and no two alike: percent at the decimals of the step (`0.5%, 1.0%, 1.5%`); dollars at the
    precision of the step (`$0.20`, `$0.025`), short from a thousand dollars (`$250K`, `$1.5M`); tokens and
    counts short (`2.5K`, `12.5T`), at the decimals each needs; seconds plain (`0.5 s`)."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    if unit == "%":
        places = _places(step)
        return [f"{t:.{places}f}%" for t in ticks]
    if unit == "s":
        places = _places(step)
        return [f"{t:.{places}f} s" for t in ticks]
    if unit == "$" and max(abs(t) for t in ticks) < 1000:
        return [display.axis_money(t) for t in ticks]
    out = []
    for t in ticks:
        value, suffix = _scaled(t)
        text = f"{abs(value):,.{_places(value, 3)}f}{suffix}"
        out.append(("-" if t < 0 else "") + ("$" if unit == "$" else "") + text)
    return out


def _left(ticks: list[float], unit: str, label: str) -> float:
    """The left margin: room for the widest tick label, and for the axis label on end beside them."""
    widest = max(text_width(t) for t in tick_labels(ticks, unit))
    return max(float(LEFT), math.ceil(widest + 6 + (24 if label else 6)))


def _y_axis(ticks: list[float], unit: str, plot_h: int, label_text: str, left: float) -> list[str]:
    out = []
    top = ticks[-1] or 1
    for t, text in zip(ticks, tick_labels(ticks, unit), strict=True):
        y = TOP + plot_h - t / top * plot_h
        out.append(
            f'<line class="grid" x1="{left:.0f}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" data-axis="y" x="{left - 6:.0f}" y="{y + 4:.1f}" '
            f'text-anchor="end">{text}</text>'
        )
    out.append(f'<line class="axis" x1="{left:.0f}" x2="{left:.0f}" y1="{TOP}" y2="{TOP + plot_h}"/>')
    out.append(label(label_text, plot_h, f'transform="translate(12,{TOP + plot_h / 2}) rotate(-90)" '
                     'text-anchor="middle"', cls="label", size=LABEL))  # fmt: skip
    return out


_NUMBERED = re.compile(r"\d[\d,]*(-\d[\d,]*)?")  # turns, and runs of turns: `7`, `1-9`


def _x_labels(labels: Sequence[str], centres: Sequence[float], slot: float, y0: float) -> tuple[list[str], float]:
    """The labels under an x axis at `y0`, one per slot centred at `centres`, and the depth they take below it.
    Upright when each fits its slot, or (names in wide slots) in two lines of it, the second shortened where it
    must be; numbers that do not fit are thinned to every k-th (they count on: the reader fills in the rest);
    names in narrow slots are set on end, shortened to `ON_END`, and thinned to every k-th only where even a line
    of text is wider than a slot."""
    if not labels:
        return [], 20
    widest = max(text_width(t) for t in labels)
    room, step, upright = slot - GAP, 1, True
    if widest > room:
        if all(_NUMBERED.fullmatch(t) for t in labels):
            step, room = math.ceil((widest + GAP) / slot), widest
        elif room < 64:  # too narrow for a word: on end
            upright = False
            step = math.ceil(LINE / slot)
    out = []
    depth = 20.0
    for i in range(0, len(labels), step):
        x, text = centres[i], labels[i]
        if upright:
            lines = wrap(text, room) if text_width(text) > room else [text]
            half = max(text_width(t) for t in lines) / 2 if lines else 0
            x = min(max(x, half + 2), W - half - 2)  # within the picture
            tip = f"<title>{escape(text)}</title>" if " ".join(lines) != text else ""
            for k, line in enumerate(lines):
                out.append(f'<text class="tick" data-axis="x" x="{x:.1f}" y="{y0 + 18 + 13 * k:.1f}" '
                           f'text-anchor="middle">{escape(line)}{tip}</text>')  # fmt: skip
            depth = max(depth, 7 + 13 * len(lines))
        else:
            depth = max(depth, 8 + text_width(fit(text, ON_END)))
            out.append(label(text, ON_END, f'data-axis="x" transform="translate({x:.1f},{y0 + 6:.1f}) '
                             'rotate(-90)" dy="0.32em" text-anchor="end"'))  # fmt: skip
    return out, depth


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
    stubs: Sequence[str] | None = None,
) -> str:
    """Bars stacked by part, one per label; an optional line on its own right-hand scale (a cumulative cost),
    and an optional horizontal limit (a budget), named in the legend (`limit_name`, its value too where the
    reader needs it), never over the bars. A bar of 0, or too low to see, is a stub at the axis in the colour
    `stubs` gives it (else its first part's)."""
    n = max(1, len(labels))
    plot_h = H - TOP - BOTTOM
    totals = [sum(p.values[i] for p in parts) for i in range(len(labels))]
    ticks = nice_ticks(max([*totals, limit or 0, 0.0]))
    top = ticks[-1] or 1
    left = _left(ticks, unit, y_label)
    rticks = nice_ticks(max(line)) if line else []
    rtexts = tick_labels(rticks, unit) if rticks else []
    right = max([text_width(t) + 10 for t in rtexts] or [0])
    plot_w = W - left - RIGHT - right
    body = _y_axis(ticks, unit, plot_h, y_label, left)
    slot = plot_w / n
    bar = max(1.0, slot * 0.8)
    for i in range(len(labels)):
        base = 0.0
        x = left + i * slot + (slot - bar) / 2
        drawn = [(p, p.values[i]) for p in parts if p.values[i] > 0]
        if totals[i] / top * plot_h < STUB:  # nothing to see: a stub at the axis, its value in its tooltip
            color = stubs[i] if stubs else drawn[0][0].color if drawn else parts[0].color if parts else PALETTE[0]
            tip = ", ".join(f"{escape(p.name)} {_fmt(v, unit)}" for p, v in drawn) or _fmt(0.0, unit)
            body.append(
                f'<rect class="bar stub" x="{x:.2f}" y="{TOP + plot_h - STUB:.2f}" width="{bar:.2f}" '
                f'height="{STUB:.0f}" fill="{color}"><title>{escape(labels[i])}: {tip}</title></rect>'
            )
            continue
        for p, v in drawn:
            h = v / top * plot_h
            y = TOP + plot_h - (base + v) / top * plot_h
            body.append(
                f'<rect class="bar" x="{x:.2f}" y="{y:.2f}" width="{bar:.2f}" height="{h:.2f}" '
                f'fill="{p.color}"><title>{escape(labels[i])}: {escape(p.name)} {_fmt(v, unit)}</title>'
                "</rect>"
            )
            base += v
    ticks_x, depth = _x_labels(labels, [left + i * slot + slot / 2 for i in range(len(labels))], slot, TOP + plot_h)
    body += ticks_x
    height = TOP + plot_h + depth + 24
    body.append(f'<line class="axis" x1="{left:.0f}" x2="{left + plot_w:.1f}" y1="{TOP + plot_h}" '
                f'y2="{TOP + plot_h}"/>')  # fmt: skip
    body.append(label(x_label, plot_w, f'x="{left + plot_w / 2:.1f}" y="{height - 6:.1f}" text-anchor="middle"',
                      cls="label", size=LABEL))  # fmt: skip
    legend = [(p.name, p.color) for p in parts]
    if limit is not None:
        y = TOP + plot_h - limit / top * plot_h
        body.append(f'<line class="limit" x1="{left:.0f}" x2="{left + plot_w:.1f}" y1="{y:.1f}" y2="{y:.1f}">'
                    f"<title>{escape(limit_name)}</title></line>")  # fmt: skip
        legend.append((limit_name, LIMIT))
    if line:
        rtop = rticks[-1] or 1
        points = " ".join(
            f"{left + i * slot + slot / 2:.1f},{TOP + plot_h - v / rtop * plot_h:.1f}" for i, v in enumerate(line)
        )
        body.append(f'<polyline class="line" points="{points}"/>')
        for t, text in zip(rticks, rtexts, strict=True):
            y = TOP + plot_h - t / rtop * plot_h
            body.append(f'<text class="tick" data-axis="y2" x="{left + plot_w + 6:.1f}" y="{y + 4:.1f}">{text}</text>')
        legend.append((line_name, "var(--fg)"))
    return _frame(title, desc, body, height, legend=legend)


def hbars(
    title: str,
    desc: str,
    items: Sequence[tuple[str, float]],
    *,
    unit: str = "$",
    marks: Sequence[str] = (),
    total: bool = False,
) -> str:
    """One horizontal bar per item, in the order given; `marks`: items drawn in the accent colour; `total`: the
    values are totals (written at cents, as the tables write a total). A negative value (a saving) is a bar to the
    left of the zero line, a positive one to its right, each with its value at its end; the names at the left,
    their margin as wide as the widest (within `LABELS_AT_MOST`)."""
    row = 26
    height = TOP + row * max(1, len(items)) + 24
    label_w = max(40.0, min(LABELS_AT_MOST, max([text_width(n) for n, _ in items] or [0]) + 12))
    signed = any(v < 0 for _, v in items)

    def value_text(v: float) -> str:
        return ("-" if v < 0 else "+" if v > 0 else "") + _fmt(abs(v), unit, total) if signed else _fmt(v, unit, total)

    texts = [value_text(v) for _, v in items]
    below = max([text_width(t) + 8 for t, (_, v) in zip(texts, items, strict=True) if v < 0] or [0])
    above = max([text_width(t) + 8 for t, (_, v) in zip(texts, items, strict=True) if v >= 0] or [0])
    least, most = min([v for _, v in items if v < 0] or [0]), max([v for _, v in items if v > 0] or [0])
    plot_w = W - RIGHT - label_w - below - above
    scale = plot_w / ((most - least) or 1)
    zero = label_w + below - least * scale
    body = []
    for i, ((name, value), text) in enumerate(zip(items, texts, strict=True)):
        y = TOP + i * row
        width = max(1.0, abs(value) * scale) if value else 0.0
        x = zero - width if value < 0 else zero
        color = "var(--accent)" if name in marks else PALETTE[1]
        end = (f'x="{x - 6:.1f}" y="{y + 16}" text-anchor="end"' if value < 0 else
               f'x="{zero + width + 6:.1f}" y="{y + 16}"')  # fmt: skip
        body.append(
            label(name, label_w - 12, f'x="{label_w - 6:.0f}" y="{y + 16}" text-anchor="end"')
            + f'<rect class="bar{" minus" if value < 0 else ""}" x="{x:.1f}" y="{y + 4}" width="{width:.1f}" '
            f'height="{row - 8}" fill="{color}"><title>{escape(name)}: {text}</title></rect>'
            f'<text class="tick" {end}>{text}</text>'
        )
    body.append(f'<line class="axis zero" x1="{zero:.1f}" x2="{zero:.1f}" y1="{TOP}" y2="{TOP + row * len(items)}"/>')
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
    for some x values (the unlimited capacity, drawn at the right edge). An x label that would overlap one
    already set, or read as one already set, is left out (the named ones are set first). A series of one point
    is no line: its point is drawn, and its value stated in the legend."""
    xs = [x for _, pts in series for x, _ in pts] or [1.0]
    ys = [y for _, pts in series for _, y in pts] or [0.0]
    lo, hi = (min(xs), max(xs))
    ticks = nice_ticks(max(ys))
    top = ticks[-1] or 1
    left = _left(ticks, unit, y_label)
    # room at the right for half the widest name (a name marks the largest value: "unlimited")
    pad = max([20.0, *(text_width(n, bold=True) / 2 + 2 - RIGHT for n in (x_names or {}).values())])
    plot_w, plot_h = W - left - RIGHT - pad, H - TOP - BOTTOM

    def fx(x: float) -> float:
        if log_x:
            a, b = math.log10(max(lo, 1e-9)), math.log10(max(hi, 1e-9))
            return left + (math.log10(max(x, 1e-9)) - a) / ((b - a) or 1) * plot_w
        return left + (x - lo) / ((hi - lo) or 1) * plot_w

    body = _y_axis(ticks, unit, plot_h, y_label, left)
    body.append(f'<line class="axis" x1="{left:.0f}" x2="{left + plot_w:.1f}" y1="{TOP + plot_h}" '
                f'y2="{TOP + plot_h}"/>')  # fmt: skip
    marks = sorted(x_names or {})
    points = sorted({x for x in xs if x not in marks})
    if log_x and len(points) > 8:  # many points: a tick a decade
        points = [10.0**d for d in range(math.floor(math.log10(max(lo, 1e-9))), math.ceil(math.log10(hi)) + 1)]
    taken: list[tuple[float, float]] = []
    written: set[str] = set()

    def x_tick(value: float, text: str, strong: bool) -> None:
        x = fx(value)
        body.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + plot_h}"/>')
        half = text_width(text, bold=strong) / 2
        x = min(max(x, half + 2), W - half - 2)
        if text in written or any(x - half < b + GAP and a < x + half + GAP for a, b in taken):
            return  # it would overlap a label already set, or read as one: its grid line says where it is
        taken.append((x - half, x + half))
        written.add(text)
        body.append(f'<text class="tick{" strong" if strong else ""}" data-axis="x" x="{x:.1f}" '
                    f'y="{TOP + plot_h + 18}" text-anchor="middle">{escape(text)}</text>')  # fmt: skip

    for m in marks:  # named values: a grid line and the name (bold where it is no number: "unlimited")
        name = (x_names or {})[m]
        x_tick(m, name, not name[:1].isdigit())
    for value in points:
        if left - 1 <= fx(value) <= left + plot_w + 1:
            x_tick(value, _tokens(value), False)
    body.append(label(x_label, plot_w, f'x="{left + plot_w / 2:.1f}" y="{H - 6}" text-anchor="middle"',
                      cls="label", size=LABEL))  # fmt: skip
    legend = []
    for k, (name, pts) in enumerate(series):
        color = LINES[k % len(LINES)]
        if len(pts) > 1:
            path = " ".join(f"{fx(x):.1f},{TOP + plot_h - y / top * plot_h:.1f}" for x, y in pts)
            body.append(f'<polyline class="series" points="{path}" stroke="{color}"/>')
        elif pts:  # one point: no curve, its value stated
            name = f"{name}: {_fmt(pts[0][1], unit)}"
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
    plot_h = H - TOP - BOTTOM
    top_tok = max([at + n for _, at, n, _ in points] or [1])
    ticks = nice_ticks(top_tok)
    top = ticks[-1] or 1
    left = _left(ticks, "", "token position")
    plot_w = W - left - RIGHT
    body = _y_axis(ticks, "", plot_h, "token position", left)
    body.append(f'<line class="axis" x1="{left:.0f}" x2="{left + plot_w:.1f}" y1="{TOP + plot_h}" '
                f'y2="{TOP + plot_h}"/>')  # fmt: skip
    colors = {c: cause_color(c) for c in causes}
    slot = plot_w / max(1, turns)
    for turn, at, n, cause in points:
        x = left + (turn - 0.5) * slot
        y0, y1 = TOP + plot_h - at / top * plot_h, TOP + plot_h - (at + n) / top * plot_h
        body.append(
            f'<rect class="mark" x="{x - max(2.0, slot * 0.3):.1f}" y="{y1:.1f}" '
            f'width="{max(4.0, slot * 0.6):.1f}" height="{max(2.0, y0 - y1):.1f}" fill="{colors[cause]}">'
            f"<title>turn {turn}: {escape(cause)}, {display.count(n)} tokens from {display.count(at)}</title>"
            "</rect>"
        )
    numbers = [str(t) for t in range(1, turns + 1)]
    body += _x_labels(numbers, [left + (t - 0.5) * slot for t in range(1, turns + 1)], slot, TOP + plot_h)[0]
    body.append(f'<text class="label" x="{left + plot_w / 2:.1f}" y="{H - 6}" text-anchor="middle">turn</text>')
    return _frame(title, desc, body, legend=[(c, colors[c]) for c in causes])


def _tokens(n: float) -> str:
    """A token axis's label: `500`, `250K`, `1.25M`, `12.5T`."""
    return short(n)
